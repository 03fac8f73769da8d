package model

import "time"

// Health check kinds.
const (
	CheckHTTP  = "http"
	CheckHTTPS = "https"
	CheckTCP   = "tcp"
	CheckDNS   = "dns"
	CheckNone  = "none"
)

// CheckKinds lists the allowed check kinds.
var CheckKinds = []string{CheckHTTP, CheckHTTPS, CheckTCP, CheckDNS, CheckNone}

// Defaults of probing, the ring, the decision and heartbeats.
const (
	DefaultInterval        = 5 * time.Second
	DefaultTimeout         = 3 * time.Second
	DefaultFall            = 3
	DefaultRise            = 2
	DefaultHTTPPath        = "/"
	DefaultExpectStatus    = "200-399"
	DefaultRingBind        = "127.0.0.1:7946"
	DefaultRejoinInterval  = 30 * time.Second
	DefaultFreshVotes      = 3 // a vote is fresh for FreshVotes × interval
	DefaultMinRegions      = 2
	DefaultHoldDown        = 30 * time.Second
	DefaultHoldDownMax     = 300 * time.Second
	DefaultHoldDownMin     = 5 * time.Second        // the ladder's base: a repeated failure within the flap window waits 2 × it
	DefaultFirstHoldDown   = 3 * time.Second        // hold-down after a first failure following a quiet flap window
	DefaultFlapWindow      = 60 * time.Second       // a failure within this long of the last recovery is a repeated flap
	DefaultReprobeInterval = 250 * time.Millisecond // fast re-probe cadence while a run of results heads for fall or rise
	DefaultBrake           = 0.5
	DefaultHeartbeatPeriod = 10 * time.Second
	DefaultHeartbeatGrace  = 40 * time.Second
	DefaultMaxClockSkew    = 10 * time.Second
)

// Health holds the probing defaults every service check starts from.
type Health struct {
	Interval Duration `yaml:"interval"` // between probes of one endpoint, ±10% jitter (default 5s)
	Timeout  Duration `yaml:"timeout"`  // per probe (default 3s)
	Fall     int      `yaml:"fall"`     // consecutive failures to go locally down (default 3)
	Rise     int      `yaml:"rise"`     // consecutive successes to come back (default 2)
	// ReprobeInterval is the fast cadence: after a result that starts a run
	// toward a new status (a failure while not down, a success while down),
	// and while a probe is unanswered for longer than this, the endpoint is
	// probed again this often until fall or rise is reached or the run
	// breaks (default 500ms, at most the interval; 50ms..interval).
	ReprobeInterval Duration `yaml:"reprobe_interval"`
}

// Check is a service's health check. Fields left empty come from the
// top-level health section and the kind's defaults.
type Check struct {
	Kind               string   `yaml:"kind"`                 // http, https, tcp, dns or none (default: none)
	Port               int      `yaml:"port"`                 // default: 80 http, 443 https, 53 dns; required for tcp
	Method             string   `yaml:"method"`               // HTTP method (default GET)
	Path               string   `yaml:"path"`                 // HTTP path (default /)
	Host               string   `yaml:"host"`                 // HTTP Host header (default: the service name)
	SNI                string   `yaml:"sni"`                  // TLS server name (default: host)
	ExpectStatus       []string `yaml:"expect_status"`        // codes or ranges, e.g. [200, 301-302] (default 200-399)
	BodyContains       string   `yaml:"body_contains"`        // substring the body must contain (first 64 KiB)
	CAFile             string   `yaml:"ca_file"`              // PEM CA bundle to verify HTTPS against instead of the system roots
	InsecureSkipVerify bool     `yaml:"insecure_skip_verify"` // do not verify the certificate (default false)
	QueryName          string   `yaml:"query_name"`           // DNS check: name to ask (default: the service name)
	QueryType          string   `yaml:"query_type"`           // DNS check: type (default A)
	ExpectRcode        string   `yaml:"expect_rcode"`         // DNS check: expected rcode (default NOERROR)
	Interval           Duration `yaml:"interval"`             // overrides health.interval
	Timeout            Duration `yaml:"timeout"`              // overrides health.timeout
	Fall               int      `yaml:"fall"`                 // overrides health.fall
	Rise               int      `yaml:"rise"`                 // overrides health.rise
	ReprobeInterval    Duration `yaml:"reprobe_interval"`     // overrides health.reprobe_interval (default: it, at most interval)
}

// Ring configures the gossip ring of probers (hashicorp/memberlist).
type Ring struct {
	Enabled           bool       `yaml:"enabled"`            // probe endpoints and join the ring (default false)
	NodeName          string     `yaml:"node_name"`          // unique node name (default: host name)
	Region            string     `yaml:"region"`             // region of this prober (required when enabled)
	Bind              string     `yaml:"bind"`               // gossip address, UDP and TCP (default 127.0.0.1:7946)
	Advertise         string     `yaml:"advertise"`          // address other nodes use (default: bind)
	Seeds             []string   `yaml:"seeds"`              // host:port of nodes to join
	KeyFile           string     `yaml:"key_file"`           // gossip encryption keyring (one base64 key per line, first = primary)
	Label             string     `yaml:"label"`              // gossip label: rings with different labels never mix
	RequireEncryption bool       `yaml:"require_encryption"` // refuse to start without key_file
	RejoinInterval    Duration   `yaml:"rejoin_interval"`    // re-join the seeds this often (default 30s)
	Memberlist        Memberlist `yaml:"memberlist"`         // protocol knobs (default: memberlist's WAN defaults)
	// IdentityFile is this node's Ed25519 private key (PKCS#8 PEM) that
	// signs every message it originates (default: ring-identity.pem in the
	// state directory, created on first start; `meridian ring identity`
	// prints its public key).
	IdentityFile string `yaml:"identity_file"`
	// Peers lists the nodes whose messages are accepted, with their public
	// keys and roles; a node always trusts itself. Required with seeds: a
	// node that has the gossip key but is not listed cannot change anything.
	Peers        []RingPeer `yaml:"peers"`
	MaxClockSkew Duration   `yaml:"max_clock_skew"` // stamps further in the future than this are rejected (default 10s; 1s..5m)
	// TrustDomain is the ring's name in its credentials' URIs,
	// spiffe://<trust_domain>/... (default: the first zone's apex, without
	// the final dot). A credential of another ring is refused.
	TrustDomain string `yaml:"trust_domain"`
	// CA lists PEM files of the ring CA's certificates (one or more per
	// file): a node whose credential one of them signed is listed as its
	// credential says, no ring.peers entry needed. Two CAs during a CA
	// rotation. Files are read again when they change (ADR 0016).
	CA []string `yaml:"ca"`
	// Credential is this node's certificate from the ring CA and its key
	// (cert-manager's tls.crt and tls.key); read again when renewed on disk.
	Credential RingCredential `yaml:"credential"`
	// Revoked lists credentials refused although their CA signed them:
	// "serial:HEX" or "sha256:HEX" (a key fingerprint), as `meridian ring ca
	// issue` prints them. Applied on reload, without a restart.
	Revoked []string `yaml:"revoked"`
	// AdvertiseFrom takes the advertised gossip address from a Kubernetes
	// Service's external address (its LoadBalancer ingress, at start and on
	// every change) instead of ring.advertise: the address other sites reach
	// this node at through NAT. Its port is the Service's gossip port.
	AdvertiseFrom *ServiceRef `yaml:"advertise_from"`
	// DNSAddresses are this site's public DNS addresses (its DNS Service's
	// external IPs), announced over the ring so that every node serves
	// ns-<site>.<apex> with that glue (zones[].ring.nameservers) and the
	// delegation carries them.
	DNSAddresses []string `yaml:"dns_addresses"`
	// DNSAddressesFrom reads DNSAddresses from a Kubernetes Service's
	// external addresses, at start and on every change.
	DNSAddressesFrom *ServiceRef `yaml:"dns_addresses_from"`
}

// ServiceRef names a Kubernetes Service whose external address Meridian
// reads (status.loadBalancer.ingress; with type NodePort, the node's
// address and the node port are not read: use advertise).
type ServiceRef struct {
	// Service is the Service's name; {hostname} is replaced by the host
	// (pod) name, for a Service per pod: "{hostname}-gossip".
	Service string `yaml:"service"`
	// Namespace of the Service (default: the pod's namespace, from the
	// service account's namespace file, else $POD_NAMESPACE).
	Namespace string `yaml:"namespace"`
	// Kubeconfig reaches the API server from outside a cluster (default: the
	// pod's service account, in-cluster).
	Kubeconfig string `yaml:"kubeconfig"`
}

// RingCredential is a node's ring credential on disk.
type RingCredential struct {
	CertFile string `yaml:"cert_file"` // PEM certificate chain, the leaf first (cert-manager's tls.crt)
	KeyFile  string `yaml:"key_file"`  // PKCS#8 PEM Ed25519 key (tls.key); default: in cert_file
}

// Roles a ring peer may be listed with.
const (
	PeerProber = "prober" // votes, summaries, confirmations, writer votes, admin state, key changes
	PeerAgent  = "agent"  // the heartbeat of its one cluster, nothing else
)

// RingPeer is a node whose signed messages this node accepts.
type RingPeer struct {
	// Name is the node's ring name, or a prefix ending in * for the
	// replicas of one Deployment sharing one key (e.g. "east-*").
	Name      string `yaml:"name"`
	Role      string `yaml:"role"`       // prober or agent (required)
	Region    string `yaml:"region"`     // the region it probes from (required for probers): it cannot claim another
	Cluster   string `yaml:"cluster"`    // agents: the one cluster whose heartbeat it may send (required for agents)
	PublicKey string `yaml:"public_key"` // "ed25519:" + base64 of the 32-byte public key (required)
	// MaxNodes bounds how many live nodes a prefix entry covers (required
	// with a name ending in *, 1..256; e.g. replicas + maxSurge): whoever
	// holds the shared key cannot invent more voters than the site has.
	MaxNodes int `yaml:"max_nodes"`
	// Admin is the capability to change traffic over the ring: overrides
	// (drain, force, weight, shift) set on this node through its API, or
	// removed or stepped by it, are accepted by its peers only with it
	// (probers only; default false: a plain prober or agent changes
	// nothing, ADR 0008).
	Admin bool `yaml:"admin"`
}

// Memberlist exposes memberlist's main protocol knobs; zero keeps the WAN default.
type Memberlist struct {
	GossipInterval   Duration `yaml:"gossip_interval"`    // WAN default 500ms
	GossipNodes      int      `yaml:"gossip_nodes"`       // WAN default 4
	ProbeInterval    Duration `yaml:"probe_interval"`     // WAN default 5s
	ProbeTimeout     Duration `yaml:"probe_timeout"`      // WAN default 3s
	PushPullInterval Duration `yaml:"push_pull_interval"` // WAN default 60s
	SuspicionMult    int      `yaml:"suspicion_mult"`     // WAN default 6
	TCPTimeout       Duration `yaml:"tcp_timeout"`        // WAN default 30s
}

// Decision tunes the failover decision.
type Decision struct {
	FreshVotes  int      `yaml:"fresh_votes"`   // a vote is fresh for this many intervals (default 3)
	MinRegions  int      `yaml:"min_regions"`   // regions a down verdict needs (default 2; 1 when the ring has one region)
	HoldDown    Duration `yaml:"hold_down"`     // hold-down ladder: doubles from hold_down_min up to this, then on up to hold_down_max (default 30s)
	HoldDownMax Duration `yaml:"hold_down_max"` // cap of the doubling (default 300s)
	Brake       float64  `yaml:"brake"`         // largest share of a service's healthy weight one decision may remove (default 0.5)
	Outliers    *bool    `yaml:"outliers"`      // ignore a prober that disagrees with the others on most endpoints (default true)

	// HoldDownMin is the base of the hold-down ladder: a repeated failure
	// within the flap window waits it doubled, each further one doubles
	// again up to hold_down, and from there up to hold_down_max (default
	// 5s, at most hold_down).
	HoldDownMin Duration `yaml:"hold_down_min"`
	// FirstHoldDown is the hold-down of a first failure after a quiet flap
	// window: a single failure comes back after rise and this (default 1s,
	// at most hold_down_min; equal to hold_down_min gives the former
	// ladder 5, 10, 20 … s).
	FirstHoldDown Duration `yaml:"first_hold_down"`
	// FlapWindow: a failure within this long of the endpoint's last
	// recovery is a repeated flap (the hold-down doubles); up this long
	// since the last recovery forgets the flaps (default 60s; 1s..24h).
	FlapWindow Duration `yaml:"flap_window"`
	// MinHealthy is the fewest healthy, answerable endpoints an operator's
	// drain or force-down may leave a service with before the admin API
	// refuses it without force (default 1; 0 turns the guard off; at most
	// 1000). A service's own min_healthy takes precedence.
	MinHealthy *int `yaml:"min_healthy"`
}

// Heartbeat configures how a cluster's liveness is known.
type Heartbeat struct {
	URL                string   `yaml:"url"`                  // readiness URL polled by every prober, e.g. https://api.c1:6443/readyz
	CAFile             string   `yaml:"ca_file"`              // PEM CA to verify the URL's certificate
	InsecureSkipVerify bool     `yaml:"insecure_skip_verify"` // do not verify (default false)
	Agent              bool     `yaml:"agent"`                // expect heartbeats from `meridian agent` on the ring
	Interval           Duration `yaml:"interval"`             // poll/send period (default 10s)
	Grace              Duration `yaml:"grace"`                // missing this long = unreachable (default 40s)
}
