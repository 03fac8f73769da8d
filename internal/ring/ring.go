// Package ring joins Meridian's probers (and agents) into one gossip ring
// with hashicorp/memberlist and spreads their votes, summaries, second
// confirmation requests, cluster heartbeats and keyring changes.
//
// Votes travel as broadcasts when a prober's view changes; a newer vote from
// the same prober replaces an older one in the queue and in every store.
// Unchanged votes are kept fresh by a small per-prober summary sent every
// interval. Push/pull syncs exchange the full state, so a node that missed
// broadcasts converges. Nodes re-join the configured seeds every
// RejoinInterval, because memberlist never probes a node it declared dead
// again: that is how a healed partition reunites.
package ring

import (
	"bytes"
	"context"
	"crypto/ed25519"
	crand "crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log"
	"log/slog"
	"math/rand/v2"
	"net"
	"net/netip"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hashicorp/memberlist"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/meridian-gslb/meridian/internal/health"
	"github.com/meridian-gslb/meridian/internal/model"
	"github.com/meridian-gslb/meridian/internal/ringca"
	"github.com/meridian-gslb/meridian/internal/vote"
)

// Roles of ring members.
const (
	RoleProber   = "prober"
	RoleAgent    = "agent"
	RoleObserver = "observer" // follows decisions (the CoreDNS plugin); neither probes nor votes
)

// Config of one ring node.
type Config struct {
	NodeName          string        // unique (required)
	Region            string        // (required)
	Role              string        // prober (default) or agent
	Cluster           string        // an agent's cluster: the one its credential must name
	Bind              string        // IP:port for gossip, UDP and TCP (port 0 picks one)
	Advertise         string        // IP:port others use (default: bind)
	Seeds             []string      // host:port of nodes to join; a host may be a DNS name, resolved again at every attempt
	Resolver          *net.Resolver // resolves seed names (default: the system's)
	KeyFile           string        // keyring file (see LoadKeyring); "" = no encryption
	Label             string        // gossip label
	RequireEncryption bool          // refuse to start without KeyFile
	RejoinInterval    time.Duration // default 30s
	SummaryInterval   time.Duration // how often this prober says "my votes still hold" (default 5s)
	Memberlist        model.Memberlist
	Logger            *slog.Logger
	Metrics           *Metrics

	// Identity signs every message this node originates (zero: a fresh
	// random key, which no peer lists: fine for a ring of one or an observer).
	// With Credential, the credential's key is the identity.
	Identity Identity
	// Credential is this node's certificate from the ring CA (ring.credential,
	// ADR 0016): peers that trust the CA list the node as its scope says.
	// SetCredential replaces it when it is renewed on disk.
	Credential *ringca.Credential
	// Trust is the ring's CAs, trust domain and revocations (ring.ca,
	// ring.trust_domain, ring.revoked); nil: other nodes' credentials are
	// refused and only ring.peers count. SetTrust replaces it on a reload.
	Trust *ringca.Pool
	// Peers are the nodes whose messages are accepted (ring.peers); this
	// node always trusts itself. SetPeers replaces them on a reload.
	Peers []model.RingPeer
	// MaxClockSkew bounds how far in the future a received stamp may be (default 10s).
	MaxClockSkew time.Duration
	// KeyringState is where keyring changes persist when KeyFile cannot be
	// written (a Secret): see LoadKeyrings. "" = KeyFile only.
	KeyringState string
	// Known tells whether a vote's subject is in the desired state; votes
	// and confirmations about anything else are rejected (nil: all known).
	// Called from ring goroutines: it must be fast and must not block.
	Known func(vote.Subject) bool

	// Callbacks, called from ring goroutines; they must not block.
	OnConfirm   func(s vote.Subject, from string)        // a prober in another region asks us to confirm s
	OnHeartbeat func(cluster, from string, at time.Time) // an agent's heartbeat for cluster
	OnChange    func()                                   // new votes or membership
	// OnShared receives another node's shared (admin) state, from a
	// broadcast or a push/pull sync; SharedState gives ours for syncs.
	OnShared    func(data []byte)
	SharedState func() []byte
	// RTTs gives this prober's smoothed RTT per endpoint
	// (health.RTTs.Snapshot), gossiped as bounded summaries (rtt.go); nil:
	// none sent. Called from the ring's own goroutine once per round.
	RTTs func() map[vote.Subject]health.RTT
	// OnRTT is called after new RTT summaries were taken (received, or
	// this prober's own sent); it must not block.
	OnRTT func()

	// onReject sees every refusal, unthrottled (tests: the log is throttled).
	onReject func(kind string, rj *rejection)
	// sigBudgetOff verifies every envelope, as before the budget (tests: the comparison).
	sigBudgetOff bool
}

// Member is one live node of the ring.
type Member struct {
	Name   string `json:"name"`
	Region string `json:"region"`
	Role   string `json:"role"`
	Addr   string `json:"addr"`
	// Trusted is false for a node that is not in ring.peers or whose
	// metadata is not signed by its listed key: it counts for nothing.
	Trusted bool `json:"trusted"`
	// Site is the site the member belongs to: the name of its credential's
	// scope or ring.peers entry without a trailing * and separator ("east-*"
	// gives east). Empty for an untrusted member.
	Site string `json:"site,omitempty"`
	// CredentialExpires, CredentialSerial and KeyFingerprint describe the
	// credential a member is listed by (empty for a ring.peers entry).
	CredentialExpires time.Time `json:"credential_expires,omitzero"`
	CredentialSerial  string    `json:"credential_serial,omitempty"`
	KeyFingerprint    string    `json:"key_fingerprint,omitempty"`
	CredentialScope   string    `json:"credential_scope,omitempty"` // the credential's URI
	MaxNodes          int       `json:"max_nodes,omitempty"`        // of the scope or ring.peers entry listing it
	// DNSAddresses are the public DNS addresses the member announces for its
	// site (ring.dns_addresses), for the site's nameserver glue; only the
	// valid ones of a trusted member.
	DNSAddresses []netip.Addr `json:"dns_addresses,omitempty"`
}

// meta is what a node tells about itself in memberlist's node metadata,
// signed so that only the node itself can claim its region and role.
// Since the third version it names the node's incarnation (Inc, the first
// sequence number of the running process, as in its summaries) and when it
// was signed (At): a member counts only while its signed summaries of that
// very incarnation are fresh, so a departed node's metadata replayed under
// its old name admits nothing (ADR 0005, "Admission by liveness").
type meta struct {
	Region string   `json:"r"`
	Role   string   `json:"o"`
	Cred   []byte   `json:"c,omitempty"` // credID of the node's credential: the metadata counts with that certificate only
	DNS    []string `json:"d,omitempty"` // the public DNS addresses of the node's site (ring.dns_addresses): its nameserver's glue
	Inc    uint64   `json:"i,omitempty"` // the node's incarnation (v3; 0 in the metadata of older versions)
	At     int64    `json:"t,omitempty"` // when it was signed, Unix ms (v3)
	Sig    []byte   `json:"s,omitempty"`
}

// metaInput is what a node's metadata signature covers. Metadata with an
// incarnation is signed as the third version; older nodes' metadata (no
// incarnation) as the first (without credential and DNS addresses) or the
// second, and is still accepted during an upgrade (docs/security.md).
func metaInput(name string, md meta) []byte {
	if md.Inc != 0 {
		in := "meridian-ring-meta-v3\x00" + name + "\x00" + md.Region + "\x00" + md.Role + "\x00" + hex.EncodeToString(md.Cred) +
			"\x00" + strconv.FormatUint(md.Inc, 10) + "\x00" + strconv.FormatInt(md.At, 10) + "\x00" + strconv.Itoa(len(md.DNS))
		for _, d := range md.DNS {
			in += "\x00" + d
		}
		return []byte(in)
	}
	in := "meridian-ring-meta-v1\x00" + name + "\x00" + md.Region + "\x00" + md.Role
	if len(md.Cred) > 0 || len(md.DNS) > 0 {
		// Counted, so that no two address lists sign alike.
		in = "meridian-ring-meta-v2\x00" + name + "\x00" + md.Region + "\x00" + md.Role + "\x00" + hex.EncodeToString(md.Cred) + "\x00" + strconv.Itoa(len(md.DNS))
		for _, d := range md.DNS {
			in += "\x00" + d
		}
	}
	return []byte(in)
}

// Ring is a running ring node.
type Ring struct {
	localAddr string // the gossip address memberlist bound, set once in Start
	cfg       Config
	log       *slog.Logger
	m         *Metrics
	mlp       atomic.Pointer[memberlist.Memberlist] // set once Create returns; messages can arrive before
	ml        *memberlist.Memberlist                // == mlp.Load() after Start; only used outside callbacks
	q         *memberlist.TransmitLimitedQueue
	store     *store
	rtt       rttStore // RTT summaries of every prober, ours included
	meta      atomic.Pointer[[]byte]
	creds     *credStore              // other nodes' verified credentials
	own       atomic.Pointer[ownCred] // this node's credential, nil without one
	// dnsAddrs are the public DNS addresses of this node's site, in its metadata.
	dnsAddrs atomic.Pointer[[]string]
	metaMu   sync.Mutex // one metadata change (credential, DNS addresses) at a time
	// settled: this node has met the ring, or knows it is the first of it
	// (Settled); lonely counts the seed rounds that named no other node.
	settled atomic.Bool
	lonely  atomic.Int32

	seq       atomic.Uint64 // own vote sequence
	rttWake   chan struct{} // RTTChanged: run the next RTT round early
	inc       uint64        // first sequence of this incarnation
	hbSeq     atomic.Uint64
	mu        sync.Mutex
	hbSeen    map[string]uint64     // cluster|from -> newest heartbeat seq seen
	agentSeen map[string]uint64     // agent -> newest heartbeat seq that checked out (its liveness, see alive)
	confirms  map[string]confirmed  // confirmation requests handled in the last maxConfirmAge (de-duplication)
	mismatch  map[string]int        // consecutive summaries per prober that did not match our votes
	leaders   map[string]LeaderVote // newest writer vote per voter
	leadSeq   atomic.Uint64
	keyring   *memberlist.Keyring
	keyOpAt   map[string]time.Time     // when each applied key operation id was seen (bounded by maxKeyOpAge)
	idp       atomic.Pointer[Identity] // this node's signing key (the credential's: replaced when it is renewed)
	trust     atomic.Pointer[trust]
	metaOK    map[string]string          // node name -> metadata that verified with its listed key
	nodes     map[string]memberlist.Node // live nodes, copied in the event callbacks (memberlist's own Node values change under its lock)
	view      atomic.Pointer[view]       // the membership as counted, recomputed on membership and peer changes
	viewMu    sync.Mutex                 // serializes refreshView
	shared    map[string][32]byte        // origin -> hash of its last admin state that checked out (repeats are not checked again)
	logged    map[string]time.Time
	needSync  atomic.Bool // broadcasts were skipped: repair with a push/pull soon
	pending   atomic.Bool // votes or summaries were taken: call OnChange
	sent      atomic.Uint64
	recv      atomic.Uint64
	stop      chan struct{}
	wg        sync.WaitGroup
	stopped   atomic.Bool

	confirmsPruned time.Time // last sweep of confirms (under mu)

	budget   *sigBudget             // failed signature checks (budget.go)
	pulls    map[string]pending     // node -> our outstanding pull (under mu)
	answered map[string]time.Time   // node -> when we last answered its pull (under mu)
	lastHB   atomic.Pointer[[]byte] // an agent's last heartbeat envelope, for a pull
}

// ErrNoEncryption is returned by Start when RequireEncryption is set and no key is configured.
var ErrNoEncryption = errors.New("ring: gossip encryption is required (require_encryption / --require-encryption) but no key_file is set")

// newRing returns a node with its state and trust table, not yet on the
// network.
func newRing(cfg Config) (*Ring, error) {
	r := &Ring{cfg: cfg, log: cfg.Logger.With("node", cfg.NodeName), m: cfg.Metrics, store: newStore(), creds: newCredStore(),
		hbSeen: map[string]uint64{}, agentSeen: map[string]uint64{}, keyOpAt: map[string]time.Time{}, confirms: map[string]confirmed{}, mismatch: map[string]int{},
		leaders: map[string]LeaderVote{}, metaOK: map[string]string{}, nodes: map[string]memberlist.Node{}, shared: map[string][32]byte{}, logged: map[string]time.Time{}, stop: make(chan struct{}),
		rttWake: make(chan struct{}, 1), budget: newSigBudget(cfg.sigBudgetOff), pulls: map[string]pending{}, answered: map[string]time.Time{}}
	r.dnsAddrs.Store(new([]string))
	id := cfg.Identity
	if cfg.Credential != nil {
		id = Identity{key: cfg.Credential.Key}
		if err := r.setOwnCred(*cfg.Credential, cfg.Trust); err != nil {
			return nil, err
		}
	}
	if id.key == nil {
		id = NewIdentity()
	}
	r.idp.Store(&id)
	return r, r.SetTrust(cfg.Peers, cfg.Trust)
}

// id is this node's current signing key.
func (r *Ring) id() Identity { return *r.idp.Load() }

// setOwnCred checks c as every peer will (with pool) and makes it this
// node's credential: its envelope is sealed with c's key.
func (r *Ring) setOwnCred(c ringca.Credential, pool *ringca.Pool) error {
	if pool == nil {
		return errors.New("ring.credential needs ring.ca: the CA certificates every node checks credentials with")
	}
	where := r.cfg.Region
	if r.cfg.Role == RoleAgent {
		where = r.cfg.Cluster
	}
	v, err := c.Check(pool, r.cfg.NodeName, roleOf(r.cfg.Role), where, time.Now())
	if err != nil {
		return err
	}
	msg := seal(Identity{key: c.Key}, msgCred, r.cfg.NodeName, credMsg{Node: r.cfg.NodeName, Chain: c.Chain})
	r.own.Store(&ownCred{v: v, chain: c.Chain, msg: msg})
	r.m.CredentialExpiry.Set(float64(v.NotAfter.Unix()))
	return nil
}

// roleOf maps a ring role to a credential's.
func roleOf(role string) string {
	if role == RoleAgent {
		return ringca.RoleAgent
	}
	return ringca.RoleProber
}

// signMeta returns this node's signed metadata.
func (r *Ring) signMeta() []byte {
	md := meta{Region: r.cfg.Region, Role: r.cfg.Role, DNS: *r.dnsAddrs.Load(), Inc: r.inc, At: time.Now().UnixMilli()}
	if oc := r.own.Load(); oc != nil {
		md.Cred = credID(oc.v.Hash)
	}
	md.Sig = r.id().Sign(metaInput(r.cfg.NodeName, md))
	b, _ := json.Marshal(md)
	return b
}

// SetCredential replaces this node's credential (renewed on disk, as
// cert-manager does): it is checked like at start, then signs every
// message, and is sent to every member with the re-signed metadata. On an
// error the previous credential stays.
func (r *Ring) SetCredential(c ringca.Credential) error {
	r.metaMu.Lock()
	defer r.metaMu.Unlock()
	old := r.own.Load()
	if old != nil && old.v.Hash == sha256.Sum256(c.Chain[0]) && r.id().key.Equal(c.Key) {
		return nil
	}
	if err := r.setOwnCred(c, r.trust.Load().pool); err != nil {
		return err
	}
	id := Identity{key: c.Key}
	r.idp.Store(&id)
	if err := r.SetTrust(r.trust.Load().peers, r.trust.Load().pool); err != nil {
		return err
	}
	m := r.signMeta()
	r.meta.Store(&m)
	if ml := r.mlp.Load(); ml != nil {
		r.sendCred(r.nodeList()...)
		if err := ml.UpdateNode(5 * time.Second); err != nil {
			r.log.Warn("ring: new metadata not announced yet; the next gossip carries it", "err", err)
		}
	}
	oc := r.own.Load()
	r.log.Info("ring: credential renewed", "scope", oc.v.Scope.URI(), "serial", oc.v.Serial, "expires", oc.v.NotAfter.UTC().Format(time.RFC3339))
	return nil
}

// Start creates the local node, joins the seeds (failures are logged and
// retried every RejoinInterval) and starts the background loops.
func Start(cfg Config) (*Ring, error) {
	cfg, err := withDefaults(cfg)
	if err != nil {
		return nil, err
	}
	r, err := newRing(cfg)
	if err != nil {
		return nil, err
	}
	r.beginIncarnation()
	mc, err := r.memberlistConfig()
	if err != nil {
		return nil, err
	}
	r.q = &memberlist.TransmitLimitedQueue{NumNodes: r.numMembers, RetransmitMult: mc.RetransmitMult}
	ml, err := memberlist.Create(mc)
	if err != nil {
		mc.Transport.Shutdown()
		return nil, fmt.Errorf("ring start: %w", err)
	}
	r.ml = ml
	r.mlp.Store(ml)
	n := ml.LocalNode() // read once, before any gossip: memberlist rewrites the node under its lock later
	r.localAddr = net.JoinHostPort(n.Addr.String(), strconv.Itoa(int(n.Port)))
	r.registerGossipBytes()
	r.updateMembers()
	r.joinSeeds()
	r.startLoops()
	return r, nil
}

// withDefaults fills in cfg's defaults and checks the node's name and
// region.
func withDefaults(cfg Config) (Config, error) {
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if cfg.Metrics == nil {
		cfg.Metrics = NewMetrics(nil)
	}
	if cfg.Role == "" {
		cfg.Role = RoleProber
	}
	if cfg.RejoinInterval <= 0 {
		cfg.RejoinInterval = model.DefaultRejoinInterval
	}
	if cfg.SummaryInterval <= 0 {
		cfg.SummaryInterval = model.DefaultInterval
	}
	if cfg.MaxClockSkew <= 0 {
		cfg.MaxClockSkew = model.DefaultMaxClockSkew
	}
	if cfg.NodeName == "" || cfg.Region == "" {
		return cfg, errors.New("ring: node name and region are required")
	}
	if len(cfg.NodeName) > model.MaxNodeName {
		return cfg, fmt.Errorf("ring: node name %q is longer than %d characters", cfg.NodeName, model.MaxNodeName)
	}
	return cfg, nil
}

// beginIncarnation names this run of the node: its incarnation, its signed
// metadata and the start of every message sequence.
func (r *Ring) beginIncarnation() {
	// Sequences follow the clock (see next) so that a restarted prober's
	// votes are newer than those of its previous incarnation everywhere,
	// and a receiver can refuse a sequence from the future.
	r.inc = uint64(time.Now().UnixNano())
	m := r.signMeta() // names the incarnation
	r.meta.Store(&m)
	r.seq.Store(r.inc)
	r.hbSeq.Store(r.inc)
	r.leadSeq.Store(r.inc)
}

// memberlistConfig builds the gossip configuration: this node's delegates,
// the configured knobs, the gossip keys and a bound transport.
func (r *Ring) memberlistConfig() (*memberlist.Config, error) {
	cfg := r.cfg
	mc := memberlist.DefaultWANConfig()
	mc.Name = cfg.NodeName
	mc.Delegate = (*delegate)(r)
	mc.Events = (*events)(r)
	mc.Label = cfg.Label
	mc.Logger = log.New(&slogWriter{log: r.log, quiet: &r.stopped}, "", 0)
	applyKnobs(mc, cfg.Memberlist)
	host, port, err := splitHostPort(cfg.Bind)
	if err != nil {
		return nil, fmt.Errorf("ring bind %q: %w", cfg.Bind, err)
	}
	mc.BindAddr, mc.BindPort = host, port
	if err := r.useKeys(mc); err != nil {
		return nil, err
	}
	if err := r.listen(mc, host, port); err != nil {
		return nil, err
	}
	return mc, nil
}

// useKeys turns on gossip encryption with the key file's keyring (or the
// newer rotated one in the state directory); without a key file it warns,
// or fails when encryption is required.
func (r *Ring) useKeys(mc *memberlist.Config) error {
	cfg := r.cfg
	if cfg.KeyFile == "" {
		if cfg.RequireEncryption {
			return ErrNoEncryption
		}
		r.log.Warn("!!! ring gossip is NOT encrypted: anyone who can reach the gossip port can read the votes and join the ring (messages are still signed: a node not in ring.peers changes nothing); set ring.key_file (and ring.require_encryption) — `meridian ring keygen` makes a key")
		r.m.Encrypted.Set(0)
		return nil
	}
	keys, from, err := LoadKeyrings(cfg.KeyFile, cfg.KeyringState)
	if err != nil {
		return err
	}
	if from != cfg.KeyFile {
		r.log.Info("ring: gossip keys from the rotated keyring in the state directory (newer than key_file)", "file", from, "key_file", cfg.KeyFile)
	}
	kr, err := memberlist.NewKeyring(keys, keys[0])
	if err != nil {
		return fmt.Errorf("gossip key file %s: %w", cfg.KeyFile, err)
	}
	mc.Keyring = kr
	r.keyring = kr
	mc.GossipVerifyIncoming, mc.GossipVerifyOutgoing = true, true
	r.m.Encrypted.Set(1)
	return nil
}

// listen binds the gossip transport (counting its bytes) and sets the
// address advertised to the other members.
func (r *Ring) listen(mc *memberlist.Config, host string, port int) error {
	cfg := r.cfg
	nt, err := memberlist.NewNetTransport(&memberlist.NetTransportConfig{BindAddrs: []string{host}, BindPort: port, Logger: mc.Logger})
	if err != nil {
		return fmt.Errorf("ring bind %s: %w", cfg.Bind, err)
	}
	mc.Transport = newCountingTransport(nt, &r.sent, &r.recv)
	if cfg.Advertise != "" && cfg.Advertise != cfg.Bind {
		ah, ap, err := splitHostPort(cfg.Advertise)
		if err != nil {
			mc.Transport.Shutdown()
			return fmt.Errorf("ring advertise %q: %w", cfg.Advertise, err)
		}
		mc.AdvertiseAddr, mc.AdvertisePort = ah, ap
	} else if port == 0 {
		mc.AdvertisePort = nt.GetAutoBindPort()
		mc.BindPort = mc.AdvertisePort
	}
	return nil
}

// registerGossipBytes registers the gossip byte counters, when the ring's
// metrics have a registry.
func (r *Ring) registerGossipBytes() {
	reg := r.m.registerer
	if reg == nil {
		return
	}
	sent := prometheus.NewCounterFunc(prometheus.CounterOpts{Name: "meridian_ring_gossip_bytes_total", Help: "Bytes of gossip (memberlist packets and streams, our messages included) by direction.", ConstLabels: prometheus.Labels{"direction": "sent"}}, func() float64 { return float64(r.sent.Load()) })
	recv := prometheus.NewCounterFunc(prometheus.CounterOpts{Name: "meridian_ring_gossip_bytes_total", Help: "Bytes of gossip (memberlist packets and streams, our messages included) by direction.", ConstLabels: prometheus.Labels{"direction": "received"}}, func() float64 { return float64(r.recv.Load()) })
	if err := errors.Join(reg.Register(sent), reg.Register(recv)); err != nil {
		r.log.Warn("ring: gossip byte metrics not registered", "err", err)
	}
}

// joinSeeds joins the configured seeds once (rejoinLoop retries), or
// settles as a ring of its own without any.
func (r *Ring) joinSeeds() {
	cfg := r.cfg
	if len(cfg.Seeds) == 0 {
		r.settle("no seeds: a ring of its own")
		return
	}
	if n, err := r.join(); err != nil {
		r.log.Warn("ring: could not join any seed yet; retrying", "seeds", cfg.Seeds, "every", cfg.RejoinInterval, "err", err)
	} else {
		r.log.Info("ring: joined", "contacted", n, "members", r.ml.NumMembers())
	}
}

// startLoops starts the background loops: rejoin, summaries, sync, and
// RTT measurement on a prober that reports RTTs.
func (r *Ring) startLoops() {
	r.wg.Add(3)
	go r.rejoinLoop()
	go r.summaryLoop()
	go r.syncLoop()
	if r.cfg.Role == RoleProber && r.cfg.RTTs != nil {
		r.wg.Add(1)
		go r.rttLoop()
	}
}

func splitHostPort(s string) (string, int, error) {
	h, p, err := net.SplitHostPort(s)
	if err != nil {
		return "", 0, err
	}
	port, err := strconv.Atoi(p)
	if err != nil {
		return "", 0, fmt.Errorf("port %q: %w", p, err)
	}
	return h, port, nil
}

func applyKnobs(c *memberlist.Config, k model.Memberlist) {
	if k.GossipInterval > 0 {
		c.GossipInterval = k.GossipInterval.D()
	}
	if k.GossipNodes > 0 {
		c.GossipNodes = k.GossipNodes
	}
	if k.ProbeInterval > 0 {
		c.ProbeInterval = k.ProbeInterval.D()
	}
	if k.ProbeTimeout > 0 {
		c.ProbeTimeout = k.ProbeTimeout.D()
	}
	if k.PushPullInterval > 0 {
		c.PushPullInterval = k.PushPullInterval.D()
	}
	if k.SuspicionMult > 0 {
		c.SuspicionMult = k.SuspicionMult
	}
	if k.TCPTimeout > 0 {
		c.TCPTimeout = k.TCPTimeout.D()
	}
}

// Shutdown leaves the ring (telling the others) and stops every goroutine.
func (r *Ring) Shutdown() error {
	if r.stopped.Swap(true) {
		return nil
	}
	close(r.stop)
	r.wg.Wait()
	err := r.ml.Leave(2 * time.Second)
	return errors.Join(err, r.ml.Shutdown())
}

func (r *Ring) numMembers() int {
	if ml := r.mlp.Load(); ml != nil {
		return ml.NumMembers()
	}
	return 1
}

// halt stops the node without telling the others (as a crash or a
// partition would look to them).
func (r *Ring) halt() error {
	if r.stopped.Swap(true) {
		return nil
	}
	close(r.stop)
	r.wg.Wait()
	return r.ml.Shutdown()
}

// LocalAddr is the gossip address other nodes reach this node at.
func (r *Ring) LocalAddr() string { return r.localAddr }

// Name is this node's name.
func (r *Ring) Name() string { return r.cfg.NodeName }

// Region is this node's region.
func (r *Ring) Region() string { return r.cfg.Region }

// Members returns the live trusted members, sorted by name: the only
// members that count for decisions, quorum and elections. A member is
// trusted when it is listed in ring.peers (or by its credential), its
// metadata (region, role) is signed by its listed key, for a prober it has
// sent a signed summary of the incarnation its metadata names lately (so a
// departed prober's replayed metadata does not bring it back), and for a
// member of a prefix entry it is one of that entry's max_nodes live
// members (see refreshView).
func (r *Ring) Members() []Member {
	all := r.AllMembers()
	return slices.DeleteFunc(all, func(m Member) bool { return !m.Trusted })
}

// AllMembers returns every live member, trusted or not, sorted by name.
func (r *Ring) AllMembers() []Member {
	v := r.view.Load()
	if v == nil {
		return nil
	}
	out := slices.Clone(v.members)
	now := time.Now()
	for i := range out {
		m := &out[i]
		if m.Trusted && m.Role == RoleProber && m.Name != r.cfg.NodeName {
			m.Trusted = r.alive(m.Name, m.Role, v.inc[m.Name], now)
		}
	}
	return out
}

// heartbeatWindow is how long an agent of a prefix entry counts as live
// after its last signed heartbeat (the agent's --interval defaults to
// model.DefaultHeartbeatPeriod).
const heartbeatWindow = 3 * model.DefaultHeartbeatPeriod

// alive reports whether a member has signed lately that it runs: a prober
// by a summary within 3 × SummaryInterval + MaxClockSkew, an agent by a
// heartbeat within heartbeatWindow + MaxClockSkew. With inc (the
// incarnation its metadata names; 0 for older metadata) the summary must
// be of that incarnation, and the heartbeat from it or later: a replay of
// the metadata of a node that has since restarted or left counts for
// nothing.
func (r *Ring) alive(name, role string, inc uint64, now time.Time) bool {
	switch role {
	case RoleProber:
		sm, ok := r.store.summaryOf(name)
		window := 3*r.cfg.SummaryInterval + r.cfg.MaxClockSkew
		return ok && now.Sub(time.UnixMilli(sm.At)) <= window && (inc == 0 || sm.Inc == inc)
	case RoleAgent:
		r.mu.Lock()
		seq, ok := r.agentSeen[name]
		r.mu.Unlock()
		return ok && now.Sub(time.Unix(0, int64(seq))) <= heartbeatWindow+r.cfg.MaxClockSkew && seq >= inc
	}
	return false
}

// view is the membership as the ring counts it.
type view struct {
	members  []Member          // every live member, sorted by name; Trusted before the summary check
	admitted map[string]bool   // names that a prefix entry covers and that are within its max_nodes
	waiting  map[string]bool   // members of a prefix entry whose metadata checks out, not admitted: their summaries and heartbeats are taken to see whether they are alive
	inc      map[string]uint64 // the incarnation each member's metadata names (0: older metadata)
}

// refreshView recomputes the membership after a member joined, left or
// changed, the peers changed, a waiting member proved it is alive, and
// every SummaryInterval. A member of a prefix entry counts against the
// entry's max_nodes only while it is alive (a fresh signed summary or
// heartbeat of its incarnation): of those, the first max_nodes by name
// (the same choice on every node) are admitted, the others are not
// trusted. A member that is not alive takes no place, so metadata replayed
// by someone without the key (a ghost of a departed replica) admits
// nothing and keeps no live replica out.
func (r *Ring) refreshView() {
	r.viewMu.Lock() // one at a time, so an older view never replaces a newer one
	defer r.viewMu.Unlock()
	t := r.trust.Load()
	now := time.Now()
	var out []Member
	incs := map[string]uint64{}
	for _, n := range r.nodeList() {
		m := Member{Name: n.Name, Addr: net.JoinHostPort(n.Addr.String(), strconv.Itoa(int(n.Port)))}
		var md meta
		if len(n.Meta) <= memberlist.MetaMaxSize && json.Unmarshal(n.Meta, &md) == nil {
			m.Region, m.Role = md.Region, md.Role
			var p peer
			p, m.Trusted = r.trustedMeta(t, n.Name, string(n.Meta), md, now)
			if m.Trusted {
				m.Site = p.site
				m.CredentialExpires, m.CredentialSerial, m.KeyFingerprint, m.CredentialScope, m.MaxNodes = p.expires, p.serial, p.fpr, p.scope, p.MaxNodes
				m.DNSAddresses = dnsAddrs(md.DNS)
				incs[n.Name] = md.Inc
			}
		}
		out = append(out, m)
	}
	slices.SortFunc(out, func(a, b Member) int { return cmpString(a.Name, b.Name) })
	if !r.settled.Load() {
		for _, m := range out {
			if m.Trusted && m.Name != r.cfg.NodeName {
				r.settle("met " + m.Name)
				break
			}
		}
	}
	admitted, waiting := map[string]bool{}, map[string]bool{}
	counted := map[string]int{}
	for i := range out {
		if !out[i].Trusted || out[i].Name == r.cfg.NodeName {
			continue
		}
		p, _ := t.lookup(out[i].Name)
		if !p.IsPrefix() {
			continue
		}
		if !r.alive(out[i].Name, out[i].Role, incs[out[i].Name], now) || counted[p.Name] >= p.MaxNodes {
			// Silent (a ghost, a departed node), or beyond what the entry
			// covers (an invented name, a surge): it counts for nothing
			// until it is alive and a place is free.
			out[i].Trusted = false
			waiting[out[i].Name] = true
			continue
		}
		counted[p.Name]++
		admitted[out[i].Name] = true
	}
	r.view.Store(&view{members: out, admitted: admitted, waiting: waiting, inc: incs})
}

// trustedMeta checks a member's metadata against its listing (cached per
// exact metadata, so a member costs one signature check while it stays).
// A node listed by its credential counts only with the metadata that names
// that credential.
func (r *Ring) trustedMeta(t *trust, name, raw string, md meta, now time.Time) (peer, bool) {
	p, ok := t.lookup(name)
	if !ok || p.Role != md.Role || (p.Role == model.PeerProber && p.Region != md.Region) {
		return p, false
	}
	c := clock{now: now, skew: r.cfg.MaxClockSkew}
	if c.futureSeq(md.Inc) || c.futureMs(md.At) {
		return p, false // an incarnation that has not begun yet could never be matched by a summary
	}
	if p.cred != nil && !bytes.Equal(p.cred, md.Cred) {
		return p, false
	}
	if name == r.cfg.NodeName {
		return p, true
	}
	r.mu.Lock()
	cached := r.metaOK[name] == raw
	r.mu.Unlock()
	if cached {
		return p, true
	}
	if !ed25519.Verify(p.key, metaInput(name, md), md.Sig) {
		return p, false
	}
	r.mu.Lock()
	if len(r.metaOK) > 4096 {
		clear(r.metaOK)
	}
	r.metaOK[name] = raw
	r.mu.Unlock()
	return p, true
}

// SetPeers replaces the trusted nodes (ring.peers after a reload), keeping
// the ring CAs. Votes and summaries of probers no longer trusted are dropped.
func (r *Ring) SetPeers(peers []model.RingPeer) error {
	var pool *ringca.Pool
	if t := r.trust.Load(); t != nil {
		pool = t.pool
	}
	return r.SetTrust(peers, pool)
}

// SetTrust replaces the trusted nodes and the ring CAs (ring.peers,
// ring.ca, ring.trust_domain and ring.revoked after a reload). Credentials
// held are checked again (a revoked one goes at once); votes and summaries
// of probers no longer trusted are dropped.
func (r *Ring) SetTrust(peers []model.RingPeer, pool *ringca.Pool) error {
	id := r.id()
	self := peer{RingPeer: model.RingPeer{Name: r.cfg.NodeName, Role: r.cfg.Role, Region: r.cfg.Region, Cluster: r.cfg.Cluster, PublicKey: model.FormatPeerKey(id.Public())}, key: id.Public()}
	if oc := r.own.Load(); oc != nil {
		self.site = oc.v.Scope.Site()
		self.cred = credID(oc.v.Hash)
		self.expires, self.serial, self.fpr, self.scope = oc.v.NotAfter, oc.v.Serial, oc.v.Fingerprint, oc.v.Scope.URI()
		self.MaxNodes = oc.v.Scope.MaxNodes
		self.Admin = oc.v.Scope.Admin
		if pool == nil {
			return errors.New("ring.credential needs ring.ca: the CA certificates every node checks credentials with")
		}
		if _, err := pool.Verify(oc.chain, time.Now(), 0); err != nil {
			r.log.Error("ring: this node's own credential is refused by the new ring.ca / ring.revoked: its peers will refuse it too; renew it", "err", err)
		}
	} else {
		self.site = siteOf(r.cfg.NodeName)
	}
	if p, ok := model.LookupPeer(peers, self.Name); ok && p.Admin {
		self.Admin = true // a pinned entry for this node gives it the capability as it gives it to its peers
	}
	t, err := newTrust(self, peers, pool, r.creds)
	if err != nil {
		return err
	}
	r.trust.Store(t)
	r.creds.clearBad() // a refusal may not hold under the new CAs or revocations
	r.checkCreds(time.Now())
	r.mu.Lock()
	clear(r.metaOK)
	for k := range r.hbSeen {
		_, from, _ := strings.Cut(k, "|")
		if p, ok := t.lookup(from); !ok || p.Role != model.PeerAgent {
			delete(r.hbSeen, k)
		}
	}
	for from := range r.agentSeen {
		if p, ok := t.lookup(from); !ok || p.Role != model.PeerAgent {
			delete(r.agentSeen, from)
		}
	}
	for voter := range r.leaders {
		if p, ok := t.lookup(voter); !ok || p.Role != model.PeerProber {
			delete(r.leaders, voter)
		}
	}
	r.mu.Unlock()
	notProber := func(name string) bool {
		p, ok := t.lookup(name)
		return !ok || p.Role != model.PeerProber
	}
	r.store.dropProbers(notProber)
	r.rtt.drop(notProber, nil, 0)
	r.refreshView()
	return nil
}

// Revoked reports whether a credential serial or key fingerprint is in
// ring.revoked now.
func (r *Ring) Revoked(serial, key string) bool {
	pool := r.trust.Load().pool
	return pool != nil && (pool.Revoked(serial) || pool.Revoked(key))
}

// Credential is this node's credential's scope URI and serial, or "".
func (r *Ring) Credential() string {
	oc := r.own.Load()
	if oc == nil {
		return ""
	}
	return oc.v.Scope.URI() + " " + oc.v.Serial
}

// PublicKey is this node's identity in the form ring.peers lists it.
func (r *Ring) PublicKey() string { return model.FormatPeerKey(r.id().Public()) }

// Votes returns every known vote (ours included), with ObservedAt moved
// forward by each prober's latest summary, sorted by subject and prober.
func (r *Ring) Votes() []vote.Vote { return r.store.effective() }

// Publish records this node's vote on s and broadcasts it. Call it when the
// local status changes (or first becomes known); unchanged statuses are kept
// fresh by the periodic summary.
func (r *Ring) Publish(s vote.Subject, st vote.Status, at time.Time) vote.Vote {
	v := vote.Vote{Subject: s, Prober: r.cfg.NodeName, Region: r.cfg.Region, Status: st, ObservedAt: at, Seq: next(&r.seq)}
	raw := seal(r.id(), msgVote, r.cfg.NodeName, toWire(v))
	r.store.put(v, raw)
	if r.q.NumQueued() < maxQueued {
		r.sendNow(raw)
		r.queue(msgVote, "v/"+v.Prober+"/"+s.Service+"/"+s.Target, raw)
	} else {
		r.needSync.Store(true) // a burst: push/pull carries it
	}
	r.changed()
	return v
}

// Confirm asks probers in other regions to probe s at once. The request
// goes straight to every live member as well as by gossip.
func (r *Ring) Confirm(s vote.Subject) {
	msg := seal(r.id(), msgConfirm, r.cfg.NodeName, confirmReq{Service: s.Service, Target: s.Target, From: r.cfg.NodeName, Region: r.cfg.Region, At: time.Now().UnixMilli()})
	r.sendNow(msg)
	r.queue(msgConfirm, "c/"+r.cfg.NodeName+"/"+s.Service+"/"+s.Target, msg)
}

// sendNow sends msg at once, best effort (one UDP packet), to every other
// live member, so that a vote change or a confirmation request does not
// wait for the next gossip round (memberlist's WAN gossip interval is
// 500ms, one hop each way). The gossip queue still carries msg: a lost
// packet costs nothing but that head start. Skipped while the queue is
// backed up (a burst of changes goes by gossip and push/pull, as before),
// so it adds at most one packet per member per queued message.
func (r *Ring) sendNow(msg []byte) {
	ml := r.mlp.Load()
	if ml == nil || r.stopped.Load() || r.q.NumQueued() >= maxRelayQueued {
		return
	}
	for _, n := range r.nodeList() {
		if n.Name == r.cfg.NodeName {
			continue
		}
		if err := ml.SendBestEffort(&n, msg); err != nil {
			r.log.Debug("ring: direct send failed; gossip carries it", "to", n.Name, "err", err)
		}
	}
}

// SendHeartbeat broadcasts a heartbeat for cluster (used by `meridian agent`).
func (r *Ring) SendHeartbeat(cluster string, at time.Time) {
	hb := heartbeat{Cluster: cluster, From: r.cfg.NodeName, At: at.UnixMilli(), Seq: next(&r.hbSeq)}
	r.mu.Lock()
	r.hbSeen[cluster+"|"+hb.From] = hb.Seq
	r.mu.Unlock()
	msg := seal(r.id(), msgHeartbeat, r.cfg.NodeName, hb)
	r.lastHB.Store(&msg)
	r.queue(msgHeartbeat, "h/"+cluster+"/"+hb.From, msg)
}

// LeaderVote is the newest provider-writer vote received from a voter.
type LeaderVote struct {
	Voter, Candidate string
	Received         time.Time // on this node's clock
	seq              uint64
}

// SendLeaderVote records this node's writer vote and sends it directly to
// every live member (best effort, never relayed, so that its receipt time
// is close to its sending time). Call it every second or so.
func (r *Ring) SendLeaderVote(candidate string) {
	lm := leaderMsg{Voter: r.cfg.NodeName, Candidate: candidate, Seq: next(&r.leadSeq)}
	r.mu.Lock()
	r.leaders[lm.Voter] = LeaderVote{Voter: lm.Voter, Candidate: candidate, Received: time.Now(), seq: lm.Seq}
	r.mu.Unlock()
	msg := seal(r.id(), msgLeader, r.cfg.NodeName, lm)
	nodes := r.nodeList()
	for _, n := range nodes {
		if n.Name == r.cfg.NodeName {
			continue
		}
		if err := r.ml.SendBestEffort(&n, msg); err != nil {
			r.log.Debug("ring: leader vote", "to", n.Name, "err", err)
		}
		r.m.Messages.WithLabelValues("leader", "sent").Inc()
	}
}

// LeaderVotes returns the newest writer vote of every voter, ours included.
func (r *Ring) LeaderVotes() []LeaderVote {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := make([]LeaderVote, 0, len(r.leaders))
	for _, v := range r.leaders {
		out = append(out, v)
	}
	slices.SortFunc(out, func(a, b LeaderVote) int { return cmpString(a.Voter, b.Voter) })
	return out
}

// Prune forgets votes on subjects keep rejects and votes of probers silent
// for longer than maxAge.
func (r *Ring) Prune(keep func(vote.Subject) bool, maxAge time.Duration) int {
	r.rtt.drop(nil, keep, time.Now().Add(-maxAge).UnixMilli())
	return r.store.prune(keep, time.Now(), maxAge)
}

// GossipBytes returns the bytes sent and received by this node's gossip.
func (r *Ring) GossipBytes() (sent, received uint64) { return r.sent.Load(), r.recv.Load() }

func (r *Ring) changed() {
	if r.cfg.OnChange != nil {
		r.cfg.OnChange()
	}
}

// BroadcastShared spreads this node's shared (admin) state; a newer
// broadcast replaces an older one still queued.
//
// A state too large for one gossip packet (the overrides and their
// tombstones grow past it after a few changes) would never leave the
// gossip queue: memberlist only piggybacks what fits in a UDP packet. Such
// a state is sent directly over TCP to every live member instead.
func (r *Ring) BroadcastShared(data []byte) {
	if !r.trust.Load().self.Admin {
		return // its peers refuse it (ReasonCapability); what it holds is spread by those that may
	}
	msg := seal(r.id(), msgShared, r.cfg.NodeName, sharedMsg{At: time.Now().UnixMilli(), State: data})
	if len(msg) <= maxGossipShared {
		r.queue(msgShared, "a/"+r.cfg.NodeName, msg)
		return
	}
	if r.stopped.Load() {
		return
	}
	nodes := r.nodeList()
	r.wg.Add(1)
	go func() {
		defer r.wg.Done()
		for _, n := range nodes {
			if n.Name == r.cfg.NodeName {
				continue
			}
			if err := r.ml.SendReliable(&n, msg); err != nil {
				r.log.Warn("ring: admin state not sent; the next push/pull carries it", "to", n.Name, "bytes", len(msg), "err", err)
				continue
			}
			r.m.Messages.WithLabelValues(msgNames[msgShared], "sent").Inc()
		}
	}()
}

// maxGossipShared is the largest shared-state message put on the gossip
// queue: memberlist piggybacks broadcasts on UDP packets of
// UDPBufferSize (1400 bytes) less its own headers.
const maxGossipShared = 1024

// broadcast signs v as a message of type t from this node and queues it.
func (r *Ring) broadcast(t byte, name string, v any) {
	r.queue(t, name, seal(r.id(), t, r.cfg.NodeName, v))
}

func (r *Ring) queue(t byte, name string, msg []byte) {
	r.q.QueueBroadcast(&bcast{name: name, msg: msg})
	r.m.Messages.WithLabelValues(msgNames[t], "sent").Inc()
}

// next returns the next sequence number of c: one more than the last, and
// never behind the clock in Unix nanoseconds, so sequences survive restarts
// and a receiver can refuse one from the future (it could never be replaced).
func next(c *atomic.Uint64) uint64 {
	for {
		old := c.Load()
		n := max(old+1, uint64(time.Now().UnixNano()))
		if c.CompareAndSwap(old, n) {
			return n
		}
	}
}

// join joins the seeds' addresses that are not live members yet. A seed
// may be a DNS name (ring.<zone>, which Meridian serves itself): it is
// resolved again at every attempt, so a site that came up later, or moved,
// is found. It returns how many nodes were contacted.
func (r *Ring) join() (int, error) {
	addrs, err := r.seedAddrs()
	if !r.settled.Load() {
		r.countSeedRound(addrs)
	}
	live := map[string]bool{r.LocalAddr(): true, r.cfg.Bind: true}
	for _, m := range r.AllMembers() {
		live[m.Addr] = true
	}
	var missing []string
	for _, a := range addrs {
		if !live[a] {
			missing = append(missing, a)
		}
	}
	if len(missing) == 0 {
		return 0, err
	}
	n, jerr := r.ml.Join(missing)
	if n > 0 {
		return n, nil
	}
	return n, errors.Join(err, jerr)
}

// settleRounds is how many seed rounds in a row must name no other node
// before a node that met nobody takes itself for the ring's first.
const settleRounds = 3

// Settled reports whether this node has met another trusted node, or has
// no seeds, or its seeds named no other node for settleRounds rounds (it
// is the first node of the ring). Until then it cannot tell a ring of its
// own from the minority side of a partition it restarted into, so it must
// not act for the ring (the writer election waits for it).
func (r *Ring) Settled() bool { return r.settled.Load() }

func (r *Ring) settle(why string) {
	if !r.settled.Swap(true) {
		r.log.Info("ring: settled: this node may act for the ring", "why", why)
	}
}

// countSeedRound counts a seed round that named no node but this one.
func (r *Ring) countSeedRound(addrs []string) {
	self := localHosts()
	if h, _, err := net.SplitHostPort(r.LocalAddr()); err == nil {
		self[h] = true
	}
	for _, a := range addrs {
		if h, _, err := net.SplitHostPort(a); err == nil && !self[h] {
			r.lonely.Store(0) // a seed names another node: join it first
			return
		}
	}
	if r.lonely.Add(1) >= settleRounds {
		r.settle(fmt.Sprintf("no seed named another node in %d rounds: this is the ring's first node", settleRounds))
	}
}

// localHosts are this host's interface addresses.
func localHosts() map[string]bool {
	out := map[string]bool{}
	addrs, _ := net.InterfaceAddrs()
	for _, a := range addrs {
		if p, err := netip.ParsePrefix(a.String()); err == nil {
			out[p.Addr().Unmap().String()] = true
		}
	}
	return out
}

// seedTimeout bounds the resolution of one seed name.
const seedTimeout = 5 * time.Second

// seedAddrs resolves the seeds to ip:port addresses; names that do not
// resolve (yet) are reported in the error, the others are returned.
func (r *Ring) seedAddrs() ([]string, error) {
	var out []string
	var errs []error
	for _, s := range r.cfg.Seeds {
		host, port, err := net.SplitHostPort(s)
		if err != nil {
			errs = append(errs, fmt.Errorf("seed %q: %w", s, err))
			continue
		}
		if _, err := netip.ParseAddr(host); err == nil {
			out = append(out, s)
			continue
		}
		ctx, cancel := context.WithTimeout(context.Background(), seedTimeout)
		ips, err := r.resolver().LookupNetIP(ctx, "ip", host)
		cancel()
		if err != nil {
			errs = append(errs, fmt.Errorf("seed %s: %w", s, err))
			continue
		}
		for _, ip := range ips {
			out = append(out, net.JoinHostPort(ip.Unmap().String(), port))
		}
	}
	slices.Sort(out)
	return slices.Compact(out), errors.Join(errs...)
}

// resolver resolves seed names (Config.Resolver, else the system's).
func (r *Ring) resolver() *net.Resolver {
	if r.cfg.Resolver != nil {
		return r.cfg.Resolver
	}
	return net.DefaultResolver
}

// rejoinLoop re-joins every seed that is not a live member.
func (r *Ring) rejoinLoop() {
	defer r.wg.Done()
	t := time.NewTicker(r.cfg.RejoinInterval)
	defer t.Stop()
	for {
		select {
		case <-r.stop:
			return
		case <-t.C:
		}
		n, err := r.join()
		if n > 0 || err != nil {
			r.m.Rejoins.Inc()
		}
		switch {
		case n > 0:
			r.log.Info("ring: joined seeds", "contacted", n, "members", r.ml.NumMembers())
		case err != nil:
			r.log.Debug("ring: rejoin", "err", err)
		}
	}
}

// checkDigest asks for a push/pull when a prober's summaries keep
// describing votes we do not hold (a vote broadcast was lost): until then
// all of that prober's votes go stale here.
func (r *Ring) checkDigest(sm summary) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.store.matches(sm) {
		delete(r.mismatch, sm.Prober)
		return
	}
	r.mismatch[sm.Prober]++
	if r.mismatch[sm.Prober] >= 2 { // one summary may overtake a vote in flight
		r.needSync.Store(true)
		delete(r.mismatch, sm.Prober)
	}
}

// maxQueued bounds the broadcast queue. Gossip carries a few kilobytes per
// second per node; a burst of votes beyond this (a node starting with a
// thousand endpoints, a large outage) goes over TCP push/pull instead, in
// one exchange per member.
const maxQueued = 512

// maxRelayQueued bounds the queue for votes relayed from other probers.
const maxRelayQueued = 64

// syncLoop repairs skipped or lost broadcasts with a push/pull exchange (a
// memberlist join with a live member), at most once a second.
func (r *Ring) syncLoop() {
	defer r.wg.Done()
	t := time.NewTicker(time.Second)
	defer t.Stop()
	for {
		select {
		case <-r.stop:
			return
		case <-t.C:
		}
		if !r.needSync.Swap(false) {
			continue
		}
		var peers []string
		self := r.LocalAddr()
		for _, m := range r.Members() { // sync with trusted members only
			if m.Addr != self {
				peers = append(peers, m.Addr)
			}
		}
		if len(peers) == 0 {
			continue
		}
		// One random peer per second: what it learns spreads further in its
		// own next exchange, like gossip.
		peers = []string{peers[rand.IntN(len(peers))]}
		r.m.Syncs.Inc()
		if _, err := r.ml.Join(peers); err != nil {
			r.log.Debug("ring: state sync", "peers", peers, "err", err)
			r.needSync.Store(true)
		}
	}
}

// summaryLoop tells the ring every SummaryInterval that our votes still hold.
func (r *Ring) summaryLoop() {
	defer r.wg.Done()
	t := time.NewTicker(r.cfg.SummaryInterval)
	defer t.Stop()
	r.summarize(time.Now()) // at once: a prober counts as live for others only with a recent summary
	for {
		select {
		case <-r.stop:
			return
		case now := <-t.C:
			r.refreshView() // members of prefix entries that fell silent free their places
			r.updateMembers()
			r.forget(now)
			r.summarize(now)
		}
	}
}

// summarize tells the ring that this prober's votes still hold as of now.
func (r *Ring) summarize(now time.Time) {
	if r.cfg.Role != RoleProber {
		return
	}
	n, sum := r.store.digest(r.cfg.NodeName)
	sm := summary{Prober: r.cfg.NodeName, Region: r.cfg.Region, At: now.UnixMilli(), Count: n, SeqSum: sum, Inc: r.inc}
	raw := seal(r.id(), msgSummary, r.cfg.NodeName, sm)
	r.store.putSummary(sm, raw)
	r.queue(msgSummary, "s/"+sm.Prober, raw)
}

// forget bounds what departed nodes leave behind: votes of prefix-entry
// probers that are no longer admitted and silent for forgetAfter, writer
// votes and heartbeat sequences older than that.
func (r *Ring) forget(now time.Time) {
	t, v := r.trust.Load(), r.view.Load()
	r.store.forgetSilent(now, forgetAfter, func(name string) bool {
		p, ok := t.lookup(name)
		return ok && p.IsPrefix() && !v.admitted[name]
	})
	r.rtt.drop(nil, nil, now.Add(-forgetAfter).UnixMilli())
	r.checkCreds(now)
	oldest := uint64(now.Add(-forgetAfter).UnixNano())
	r.mu.Lock()
	defer r.mu.Unlock()
	for k, seq := range r.hbSeen {
		if seq < oldest {
			delete(r.hbSeen, k)
		}
	}
	for k, seq := range r.agentSeen {
		if seq < oldest {
			delete(r.agentSeen, k)
		}
	}
	for k, lv := range r.leaders {
		if now.Sub(lv.Received) > forgetAfter {
			delete(r.leaders, k)
		}
	}
}

// forgetAfter is how long a departed node's traces are kept.
const forgetAfter = 10 * time.Minute

func (r *Ring) updateMembers() {
	counts := map[string]int{RoleProber: 0, RoleAgent: 0, "untrusted": 0}
	for _, m := range r.AllMembers() {
		if !m.Trusted {
			counts["untrusted"]++
			continue
		}
		counts[m.Role]++
	}
	for role, n := range counts {
		r.m.Members.WithLabelValues(role).Set(float64(n))
	}
}

// bcast is a named broadcast: a newer one with the same name replaces it in the queue.
type bcast struct {
	name string
	msg  []byte
}

func (b *bcast) Invalidates(other memberlist.Broadcast) bool {
	o, ok := other.(*bcast)
	return ok && o.name == b.name
}
func (b *bcast) Message() []byte { return b.msg }
func (b *bcast) Finished()       {}
func (b *bcast) Name() string    { return b.name }

// delegate implements memberlist.Delegate.
type delegate Ring

func (d *delegate) NodeMeta(limit int) []byte { return *d.meta.Load() }

// events implements memberlist.EventDelegate.
type events Ring

// Event callbacks run under memberlist's node lock: they must not call back
// into memberlist (Members would deadlock), only log and signal.

func (e *events) NotifyJoin(n *memberlist.Node) {
	r := (*Ring)(e)
	defer r.recoverPanic("join")
	r.keepNode(n)
	if n.Name != r.cfg.NodeName {
		r.sendCred(*n) // copied: n is memberlist's, sent from another goroutine
	}
	r.log.Info("ring: member joined", "member", n.Name, "addr", n.Address())
	r.changed()
}

func (e *events) NotifyLeave(n *memberlist.Node) {
	r := (*Ring)(e)
	defer r.recoverPanic("leave")
	r.mu.Lock()
	delete(r.nodes, n.Name)
	r.mu.Unlock()
	r.creds.gone(n.Name)
	r.refreshView()
	r.log.Warn("ring: member left or failed", "member", n.Name, "addr", n.Address())
	r.changed()
}

func (e *events) NotifyUpdate(n *memberlist.Node) {
	r := (*Ring)(e)
	defer r.recoverPanic("update")
	r.keepNode(n)
	r.changed()
}

// nodeList returns copies of the live nodes.
func (r *Ring) nodeList() []memberlist.Node {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := make([]memberlist.Node, 0, len(r.nodes))
	for _, n := range r.nodes {
		out = append(out, n)
	}
	return out
}

// keepNode copies n (called under memberlist's node lock, so n is stable).
func (r *Ring) keepNode(n *memberlist.Node) {
	c := *n
	c.Meta = slices.Clone(n.Meta)
	c.Addr = slices.Clone(n.Addr)
	var md meta
	if len(c.Meta) <= memberlist.MetaMaxSize && json.Unmarshal(c.Meta, &md) == nil {
		r.creds.live(n.Name, md.Cred) // the credential that lists it: the one its metadata names
	} else {
		r.creds.live(n.Name, nil)
	}
	r.mu.Lock()
	r.nodes[n.Name] = c
	r.mu.Unlock()
	r.refreshView()
}

// slogWriter routes memberlist's log lines ("[DEBUG] memberlist: ...") to slog.
type slogWriter struct {
	log   *slog.Logger
	quiet *atomic.Bool // set while shutting down
}

func (w *slogWriter) Write(p []byte) (int, error) {
	line := strings.TrimSpace(string(p))
	level := slog.LevelInfo
	for prefix, l := range map[string]slog.Level{"[DEBUG]": slog.LevelDebug, "[INFO]": slog.LevelInfo, "[WARN]": slog.LevelWarn, "[ERR]": slog.LevelError} {
		if strings.HasPrefix(line, prefix) {
			level, line = l, strings.TrimSpace(strings.TrimPrefix(line, prefix))
			break
		}
	}
	// memberlist's own warnings are frequent during partitions; keep them at debug
	// unless they are errors, our callers log the state changes that matter.
	if level == slog.LevelWarn || w.quiet != nil && w.quiet.Load() {
		level = slog.LevelDebug // shutting down: closed-connection errors are expected
	}
	w.log.Log(context.Background(), level, line)
	return len(p), nil
}

var _ io.Writer = (*slogWriter)(nil)

// newOpID returns a random id for a key operation.
func newOpID() string {
	b := make([]byte, 8)
	_, _ = crand.Read(b)
	return hex.EncodeToString(b)
}

// maxDNSAddrs bounds the DNS addresses one node may announce.
const maxDNSAddrs = 8

// dnsAddrs keeps the announced DNS addresses that can be glue: unicast,
// not loopback, link-local or unspecified, at most maxDNSAddrs.
func dnsAddrs(in []string) []netip.Addr {
	var out []netip.Addr
	for _, s := range in {
		a, err := netip.ParseAddr(s)
		if err != nil || a.Zone() != "" || !a.IsGlobalUnicast() {
			continue
		}
		out = append(out, a.Unmap())
		if len(out) == maxDNSAddrs {
			break
		}
	}
	return out
}

// SetDNSAddresses announces the public DNS addresses of this node's site
// (its nameserver's glue) in its signed metadata: at once to every member.
func (r *Ring) SetDNSAddresses(addrs []netip.Addr) error {
	if len(addrs) > maxDNSAddrs {
		return fmt.Errorf("ring: %d DNS addresses (allowed: at most %d)", len(addrs), maxDNSAddrs)
	}
	r.metaMu.Lock()
	defer r.metaMu.Unlock()
	s := make([]string, len(addrs))
	for i, a := range addrs {
		s[i] = a.String()
	}
	slices.Sort(s)
	if slices.Equal(s, *r.dnsAddrs.Load()) {
		return nil
	}
	prev := r.dnsAddrs.Swap(&s)
	m := r.signMeta()
	if len(m) > memberlist.MetaMaxSize {
		r.dnsAddrs.Store(prev)
		return fmt.Errorf("ring: node metadata of %d bytes with %d DNS addresses (allowed: %d bytes)", len(m), len(addrs), memberlist.MetaMaxSize)
	}
	r.meta.Store(&m)
	r.refreshView()
	if ml := r.mlp.Load(); ml != nil {
		if err := ml.UpdateNode(5 * time.Second); err != nil {
			r.log.Warn("ring: new DNS addresses not announced yet; the next gossip carries them", "err", err)
		}
	}
	r.log.Info("ring: this site's DNS addresses announced", "dns_addresses", s)
	r.changed()
	return nil
}
