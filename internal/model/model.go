// Package model holds Meridian's desired state: zones, clusters and global
// services with their endpoints and strategy parameters. It is pure data plus
// validation and defaulting; it does no I/O and imports nothing of ours.
//
// The YAML tags are the configuration file's field names (see the config
// reference in docs/configuration.md); internal/config decodes files into these types.
package model

// Strategies a global service can use.
const (
	StrategyWeighted   = "weighted"
	StrategyFailover   = "failover"
	StrategyGeo        = "geo"
	StrategyRoundRobin = "roundrobin"
)

// Strategies lists every allowed strategy, in documentation order.
var Strategies = []string{StrategyWeighted, StrategyFailover, StrategyGeo, StrategyRoundRobin, StrategyLatency}

// What a service answers when every endpoint is down.
const (
	WhenAllDownFailOpen = "fail-open"
	WhenAllDownNoData   = "nodata"
)

// Sticky modes of a service: how a client's answer is drawn from a pool.
const (
	// StickyOff draws every answer afresh by weight (the default).
	StickyOff = "off"
	// StickySubnet gives every client network (/24 IPv4, /56 IPv6, the
	// EDNS Client Subnet when present) the same answer while health and
	// weights are unchanged: weighted rendezvous hashing on that network.
	StickySubnet = "subnet"
)

// StickyModes lists every allowed sticky mode, in documentation order.
var StickyModes = []string{StickyOff, StickySubnet}

// Fallback modes of a service (services[].fallback_answer, ADR 0020):
// whether a reply of one record also carries a second address clients can
// fall back on.
const (
	// FallbackAuto adds the fallback where a resolver that shuffles the
	// two records leaves every endpoint's share as it is (equal weights
	// across clusters, for example), and never otherwise (the default).
	FallbackAuto = "auto"
	// FallbackOn always adds it (the shares of clients behind shuffling
	// resolvers may move toward equal).
	FallbackOn = "on"
	// FallbackOff never adds it: one address per reply.
	FallbackOff = "off"
)

// FallbackModes lists every allowed fallback mode, in documentation order.
var FallbackModes = []string{FallbackAuto, FallbackOn, FallbackOff}

// Administrative states of an endpoint or cluster set in the config.
const (
	StateUp   = "up"
	StateDown = "down"
)

// Continents are the two-letter continent codes used by MaxMind databases.
var Continents = []string{"AF", "AN", "AS", "EU", "NA", "OC", "SA"}

// Limits and defaults shared by validation and defaulting.
const (
	MaxWeight          = 1000
	DefaultWeight      = 100
	DefaultTTL         = 30
	DefaultMaxAnswers  = 1
	MaxMaxAnswers      = 16
	DefaultFailOpenTTL = 5
	DefaultDoubtTTL    = 5      // TTL of answers carrying an endpoint in doubt
	MaxTTL             = 604800 // one week
	DefaultSOATTL      = 3600
	DefaultNSTTL       = 3600
	DefaultRefresh     = 3600
	DefaultRetry       = 600
	DefaultExpire      = 1209600
	DefaultNegativeTTL = 30
)

// Desired is the whole desired state of one Meridian installation.
type Desired struct {
	Zones      []Zone      `yaml:"zones"`
	Clusters   []Cluster   `yaml:"clusters"`
	Services   []Service   `yaml:"services"`
	Geo        Geo         `yaml:"geo"`
	Health     Health      `yaml:"health"`     // probing defaults
	Ring       Ring        `yaml:"ring"`       // prober gossip ring
	Decision   Decision    `yaml:"decision"`   // failover decision tuning
	Providers  Providers   `yaml:"providers"`  // Route53 / Cloudflare push
	Kubernetes Kubernetes  `yaml:"kubernetes"` // Kubernetes member clusters and annotated objects
	Shift      ShiftConfig `yaml:"shift"`      // progressive shifts: guard Prometheus, tick
	Catalog    *Catalog    `yaml:"catalog"`    // a catalog zone (RFC 9432) of the zones with transfers, for secondaries (nil: none)
	// TenantTargets limits the addresses that tenant-written sources
	// (DNSEndpoints, ExternalDNS webhook records) may give (tenant.go).
	TenantTargets TenantTargets `yaml:"tenant_targets"`
}

// Zone is an authoritative zone Meridian answers for.
type Zone struct {
	Apex        string       `yaml:"apex"`        // zone name, e.g. demo.meridian.test (required)
	TTL         int          `yaml:"ttl"`         // default TTL of the zone's services (default 30)
	NSTTL       int          `yaml:"ns_ttl"`      // TTL of the apex NS records and glue (default 3600)
	SOA         SOA          `yaml:"soa"`         // start of authority fields
	Nameservers []Nameserver `yaml:"nameservers"` // NS records at the apex (at least one)
	Transfer    *Transfer    `yaml:"transfer"`    // zone transfers to secondaries (AXFR/IXFR, TSIG, NOTIFY)
	DNSSEC      *DNSSEC      `yaml:"dnssec"`      // online signing
	Ring        *ZoneRing    `yaml:"ring"`        // names the ring serves in this zone (its nodes' gossip addresses, its sites' nameservers)
	Delegation  *Delegation  `yaml:"delegation"`  // write the zone's delegation (NS, glue, DS) into its parent zone
	// Hosts are A/AAAA records Meridian adds at run time (the ring's names,
	// internal/sites); never read from the config.
	Hosts []Host `yaml:"-"`
}

// Host is a name of a zone with fixed addresses, answered as they are
// (no health, no weights) with the zone's TTL.
type Host struct {
	Name string
	IPv4 []string
	IPv6 []string
}

// ZoneRing is what a zone serves from the ring's live members (ADR 0018):
// a new site finds the others by the zone's name alone, and the zone's
// delegation follows the sites' live DNS addresses.
type ZoneRing struct {
	// Names serves ring.<apex> (the gossip addresses of every live trusted
	// node) and <site>.ring.<apex> (those of one site): seeds for new sites
	// and nodes (default false).
	Names bool `yaml:"names"`
	// Nameservers adds ns-<site>.<apex> to the zone's NS set, with glue, for
	// every live site that announces its DNS addresses
	// (ring.dns_addresses or ring.dns_addresses_from); then the static
	// nameservers list may be empty (default false).
	Nameservers bool `yaml:"nameservers"`
}

// SOA holds the start-of-authority fields of a zone.
type SOA struct {
	MName   string `yaml:"mname"`   // primary server (default: the first nameserver)
	RName   string `yaml:"rname"`   // mailbox of the person responsible (default hostmaster.<apex>)
	Serial  uint32 `yaml:"serial"`  // zone serial (default 0 = automatic: Unix time of the load)
	Refresh int    `yaml:"refresh"` // seconds (default 3600)
	Retry   int    `yaml:"retry"`   // seconds (default 600)
	Expire  int    `yaml:"expire"`  // seconds (default 1209600)
	Minimum int    `yaml:"minimum"` // negative-caching TTL in seconds (default 30)
	TTL     int    `yaml:"ttl"`     // TTL of the SOA record itself (default 3600)
}

// Nameserver is one NS name of a zone, with glue when it lies inside the zone.
type Nameserver struct {
	Name string   `yaml:"name"` // host name of the server (required)
	IPv4 []string `yaml:"ipv4"` // glue A addresses (required for in-zone names unless ipv6 is set)
	IPv6 []string `yaml:"ipv6"` // glue AAAA addresses
	Node string   `yaml:"node"` // ring node serving it: delegation leaves it out while that node is not a live member
}

// Cluster is a site that hosts endpoints: a Kubernetes cluster, a region or a data centre.
type Cluster struct {
	Name      string     `yaml:"name"`      // unique name (required)
	Region    string     `yaml:"region"`    // region name, matched against geo networks and rules (required)
	Continent string     `yaml:"continent"` // optional continent code: AF AN AS EU NA OC SA
	Country   string     `yaml:"country"`   // optional ISO 3166-1 alpha-2 country code, e.g. DE
	State     string     `yaml:"state"`     // up (default) or down: down takes every endpoint of the cluster down
	Drain     bool       `yaml:"drain"`     // true takes the cluster out of answers (default false)
	Heartbeat *Heartbeat `yaml:"heartbeat"` // optional liveness of the whole cluster
	// Labels are matched by propagation cluster selectors; meridian.io/cost
	// is the cluster's relative cost (a number, lower is better).
	Labels map[string]string `yaml:"labels"`
	// Kubernetes makes the cluster a Kubernetes member: Meridian watches its
	// annotated Services and Ingresses and, with a heartbeat, polls its /readyz.
	Kubernetes *KubeMember `yaml:"kubernetes"`
	// CloudRegion is the cluster's AWS region code (e.g. us-east-1) for
	// Route 53 latency records (default: region, when that is an AWS region code).
	CloudRegion string `yaml:"cloud_region"`
}

// KubeMember is how Meridian reaches a member cluster's kube-apiserver.
type KubeMember struct {
	Kubeconfig string `yaml:"kubeconfig"` // kubeconfig file (this or in_cluster)
	Context    string `yaml:"context"`    // context in the kubeconfig (default: its current context)
	InCluster  bool   `yaml:"in_cluster"` // the pod's service account: the cluster Meridian runs in
}

// Kubernetes configures the Kubernetes sources of desired state.
type Kubernetes struct {
	Namespaces      []string       `yaml:"namespaces"`       // watched namespaces (default: all)
	MemberSecrets   *MemberSecrets `yaml:"member_secrets"`   // register members from Secrets
	StatusWriteback *bool          `yaml:"status_writeback"` // Events on annotated objects: problems, conflicts, served or not (default true)
	Resync          Duration       `yaml:"resync"`           // informer resync period (default 10m)
	ConnectTimeout  Duration       `yaml:"connect_timeout"`  // timeout of the readiness probe (preflight, heartbeat) and of dialing and the TLS handshake of every connection; watches and LISTs have no overall timeout (default 5s)
	RetryInterval   Duration       `yaml:"retry_interval"`   // retry of a NotReady member (default 10s)
	Propagation     *Propagation   `yaml:"propagation"`      // place workloads from a hub into members

	// StatusAnnotation also patches the meridian.io/status annotation onto
	// each annotated object; it needs patch on Services and Ingresses
	// (deploy/kustomize/components/status-annotation) (default false).
	StatusAnnotation *bool `yaml:"status_annotation"`
	// Claims say which namespaces may serve which names (default: none,
	// UnclaimedNames decides every name). See internal/kube/claims.
	Claims []Claim `yaml:"claims"`
	// UnclaimedNames decides the names no claim covers: "oldest" (the
	// namespace whose object claimed the name first owns it) or "refuse"
	// (default oldest).
	UnclaimedNames string `yaml:"unclaimed_names"`
	// LeaderElection elects the one node that writes status and
	// propagates, with a coordination.k8s.io Lease in the hub cluster.
	LeaderElection LeaderElection `yaml:"leader_election"`
	// StatusQPS bounds the status writes (Events and meridian.io/status
	// patches) per member cluster, in requests per second; they run in
	// parallel within it (default 100, allowed 1..1000).
	StatusQPS int `yaml:"status_qps"`
	// StatusBurst is how many status writes may go at once above
	// StatusQPS before the rate applies (default 200, allowed 1..5000).
	StatusBurst int `yaml:"status_burst"`
	// ClaimReleaseAfter is how long the first claimant of a name no claim
	// covers keeps it after its last object stopped claiming it; nobody
	// else serves it meanwhile (default 1h, allowed 1m..720h).
	ClaimReleaseAfter Duration `yaml:"claim_release_after"`
	// MaxHostnamesPerObject caps the names one object's
	// meridian.io/hostname serves: the first this many in sorted order; the
	// rest are refused with an Event (default 100, allowed 1..10000).
	MaxHostnamesPerObject int `yaml:"max_hostnames_per_object"`
	// MaxHostnamesPerNamespace caps the distinct names the objects of one
	// namespace (in all member clusters) serve together; the names of its
	// oldest objects first (default 1000, allowed 1..100000).
	MaxHostnamesPerNamespace int `yaml:"max_hostnames_per_namespace"`
	// MCS turns the ServiceExports (Multi-Cluster Services API) of the
	// member clusters into global services <service>.<namespace>.<zone>
	// (default: off; see KubeMCS).
	MCS *KubeMCS `yaml:"mcs"`
}

// LeaderElection configures the Kubernetes writer election: only the
// node holding the Lease writes status (Events, meridian.io/status) and
// runs propagation; every node keeps watching and answering.
type LeaderElection struct {
	Enabled        *bool    `yaml:"enabled"`         // default true when status_writeback or propagation is on
	Cluster        string   `yaml:"cluster"`         // member cluster holding the Lease (default: propagation.hub, else the first cluster with kubernetes, else the member_secrets hub)
	LeaseName      string   `yaml:"lease_name"`      // default meridian-writer
	LeaseNamespace string   `yaml:"lease_namespace"` // default $POD_NAMESPACE, else meridian
	LeaseDuration  Duration `yaml:"lease_duration"`  // a lost leader's Lease is taken over after this long (default 15s)
	RenewDeadline  Duration `yaml:"renew_deadline"`  // the leader stops writing when it could not renew for this long (default 10s)
	RetryPeriod    Duration `yaml:"retry_period"`    // renew and acquire attempts (default 2s)
}

// Propagation configures the workload propagation controller.
type Propagation struct {
	Hub        string       `yaml:"hub"`        // member cluster holding the templates (required)
	Namespaces []string     `yaml:"namespaces"` // hub namespaces with templates (default: all)
	Interval   Duration     `yaml:"interval"`   // reconcile period (default 10s)
	Toleration Duration     `yaml:"toleration"` // a failed cluster keeps its divided share this long (default 60s)
	Score      ScoreWeights `yaml:"score"`      // weights of the selector ranking
}

// ScoreWeights weigh the terms of the cluster ranking for selectors.
type ScoreWeights struct {
	CPU          *float64 `yaml:"cpu"`          // free CPU (default 1)
	Memory       *float64 `yaml:"memory"`       // free memory (default 1)
	GPU          *float64 `yaml:"gpu"`          // free GPUs (default 1)
	Availability *float64 `yaml:"availability"` // decided health (default 2)
	Cost         *float64 `yaml:"cost"`         // meridian.io/cost label, subtracted (default 1)
}

// MemberSecrets registers member clusters from Secrets labelled
// meridian.io/member=true in one namespace of a hub cluster.
type MemberSecrets struct {
	Namespace  string `yaml:"namespace"`  // namespace of the Secrets (required)
	Kubeconfig string `yaml:"kubeconfig"` // hub kubeconfig (default: in-cluster)
	Context    string `yaml:"context"`    // context in that kubeconfig
}

// StatusWritebackEnabled reports whether Events are written on annotated objects.
func (k *Kubernetes) StatusWritebackEnabled() bool {
	return k.StatusWriteback == nil || *k.StatusWriteback
}

// StatusAnnotationEnabled reports whether the meridian.io/status annotation is patched.
func (k *Kubernetes) StatusAnnotationEnabled() bool {
	return k.StatusWritebackEnabled() && k.StatusAnnotation != nil && *k.StatusAnnotation
}

// Service is a global service: one DNS name answered from endpoints in several clusters.
type Service struct {
	Name        string `yaml:"name"`          // fully qualified name inside a zone (required)
	Strategy    string `yaml:"strategy"`      // weighted (default), failover, geo, roundrobin or latency
	TTL         int    `yaml:"ttl"`           // answer TTL in seconds (default: the zone's ttl)
	MaxAnswers  int    `yaml:"max_answers"`   // records per answer, 1..16 (default 1)
	WhenAllDown string `yaml:"when_all_down"` // fail-open (default) or nodata
	FailOpenTTL int    `yaml:"fail_open_ttl"` // TTL of fail-open answers (default 5, at most ttl)
	// DoubtTTL is the TTL of answers that carry an endpoint in doubt (a
	// failed probe being re-checked, down votes short of a decision, a
	// failure within the flap window): resolvers ask again soon (default
	// 5, at most ttl).
	DoubtTTL int `yaml:"doubt_ttl"`
	// FallbackAnswer: whether each reply carries the weighted pick first
	// and one healthy address from another cluster second, for clients
	// that try the next address when a connection is refused: auto
	// (default: where shuffling resolvers cannot move the shares), on or
	// off (ADR 0020; on needs one record per reply and no sticky: subnet).
	FallbackAnswer string          `yaml:"fallback_answer"`
	Sticky         string          `yaml:"sticky"`       // off (default) or subnet: each client /24 (/56) keeps its answer
	Endpoints      []Endpoint      `yaml:"endpoints"`    // at least one
	HealthCheck    *Check          `yaml:"health_check"` // how probers check each endpoint (default: not probed)
	Failover       *FailoverPolicy `yaml:"failover"`     // only with strategy failover
	Geo            *GeoPolicy      `yaml:"geo"`          // only with strategy geo
	// Capacity scales the weights by each endpoint's ready fraction (opt-in;
	// default: off, the configured weights are drawn as they are).
	Capacity *Capacity      `yaml:"capacity"`
	Latency  *LatencyPolicy `yaml:"latency"` // only with strategy latency (default: tolerance 20%)
	// MinHealthy is this service's guard for operators' drains and
	// force-downs (default: decision.min_healthy; 0..1000, 0 = no guard;
	// above the service's endpoint count it counts as that count).
	MinHealthy *int `yaml:"min_healthy"`
	// MinHealthyFrom says where a Kubernetes-sourced service's MinHealthy
	// comes from (the annotation and object), for the guard's messages;
	// "" for a service of the config file. Not read from YAML.
	MinHealthyFrom string `yaml:"-"`
}

// Endpoint is one answer candidate of a service.
type Endpoint struct {
	Address  string `yaml:"address"`  // IPv4 or IPv6 address (this or cname)
	CNAME    string `yaml:"cname"`    // canonical name target (this or address)
	Cluster  string `yaml:"cluster"`  // name of the cluster that hosts it (required)
	Weight   *int   `yaml:"weight"`   // 0..1000 (default 100); 0 = only when every weighted endpoint is down
	Priority *int   `yaml:"priority"` // failover group, lower first (failover without an order)
	State    string `yaml:"state"`    // up (default) or down
	Drain    bool   `yaml:"drain"`    // true takes the endpoint out of answers (default false)
}

// Target is what the endpoint answers with, and what its health, votes and
// overrides name: its CNAME target, else its address.
func (e Endpoint) Target() string {
	if e.CNAME != "" {
		return e.CNAME
	}
	return e.Address
}

// WeightOr is the endpoint's weight, DefaultWeight when unset (the
// normalized config always sets it).
func (e Endpoint) WeightOr() int {
	if e.Weight == nil {
		return DefaultWeight
	}
	return *e.Weight
}

// FailoverPolicy orders the clusters of a failover service.
type FailoverPolicy struct {
	Order []string `yaml:"order"` // cluster names, primary first
}

// GeoPolicy maps client locations to clusters.
type GeoPolicy struct {
	Rules   []GeoRule `yaml:"rules"`   // checked by region, then country, then continent
	Default []string  `yaml:"default"` // clusters for clients no rule or tag matches (default: all)
}

// GeoRule sends clients from any of the listed places to the listed clusters.
type GeoRule struct {
	Countries  []string `yaml:"countries"`  // ISO 3166-1 alpha-2 codes
	Regions    []string `yaml:"regions"`    // region names from geo.networks
	Continents []string `yaml:"continents"` // continent codes
	Clusters   []string `yaml:"clusters"`   // target clusters (required)
}

// Geo configures client location lookup.
type Geo struct {
	MMDB     string       `yaml:"mmdb"`     // optional MaxMind-format country or city database
	Networks []GeoNetwork `yaml:"networks"` // custom CIDR map, checked before the database
	// ECSTrusted lists the networks (CIDR) whose EDNS Client Subnet option
	// is honoured: the resolvers you know. A query with ECS from any other
	// source is answered by its source address and the reply's ECS scope
	// is 0. Absent (default): every source's ECS is honoured, as before;
	// an empty list ([]): nobody's.
	ECSTrusted []string `yaml:"ecs_trusted"`
}

// GeoNetwork places a client network.
type GeoNetwork struct {
	CIDR      string `yaml:"cidr"`      // e.g. 10.1.0.0/16 or 2001:db8::/32 (required)
	Region    string `yaml:"region"`    // region name
	Country   string `yaml:"country"`   // ISO 3166-1 alpha-2 code
	Continent string `yaml:"continent"` // continent code
}
