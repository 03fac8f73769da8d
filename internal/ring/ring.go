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
	crand "crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log"
	"log/slog"
	"math/rand/v2"
	"net"
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
	Bind              string        // IP:port for gossip, UDP and TCP (port 0 picks one)
	Advertise         string        // IP:port others use (default: bind)
	Seeds             []string      // host:port of nodes to join
	KeyFile           string        // keyring file (see LoadKeyring); "" = no encryption
	Label             string        // gossip label
	RequireEncryption bool          // refuse to start without KeyFile
	RejoinInterval    time.Duration // default 30s
	SummaryInterval   time.Duration // how often this prober says "my votes still hold" (default 5s)
	Memberlist        model.Memberlist
	Logger            *slog.Logger
	Metrics           *Metrics

	// Callbacks, called from ring goroutines; they must not block.
	OnConfirm   func(s health.Subject, from string)      // a prober in another region asks us to confirm s
	OnHeartbeat func(cluster, from string, at time.Time) // an agent's heartbeat for cluster
	OnChange    func()                                   // new votes or membership
	// OnShared receives another node's shared (admin) state, from a
	// broadcast or a push/pull sync; SharedState gives ours for syncs.
	OnShared    func(data []byte)
	SharedState func() []byte
}

// Member is one live node of the ring.
type Member struct {
	Name   string `json:"name"`
	Region string `json:"region"`
	Role   string `json:"role"`
	Addr   string `json:"addr"`
}

type meta struct {
	Region string `json:"r"`
	Role   string `json:"o"`
}

// Ring is a running ring node.
type Ring struct {
	cfg   Config
	log   *slog.Logger
	m     *Metrics
	mlp   atomic.Pointer[memberlist.Memberlist] // set once Create returns; messages can arrive before
	ml    *memberlist.Memberlist                // == mlp.Load() after Start; only used outside callbacks
	q     *memberlist.TransmitLimitedQueue
	store *store
	meta  []byte

	seq      atomic.Uint64 // own vote sequence
	inc      uint64        // first sequence of this incarnation
	hbSeq    atomic.Uint64
	mu       sync.Mutex
	hbSeen   map[string]uint64     // cluster|from -> newest heartbeat seq seen
	keyOps   map[string]bool       // applied key operation ids
	confirms map[string]time.Time  // confirmation requests seen recently (de-duplication)
	mismatch map[string]int        // consecutive summaries per prober that did not match our votes
	leaders  map[string]LeaderVote // newest writer vote per voter
	leadSeq  atomic.Uint64
	keyring  *memberlist.Keyring
	needSync atomic.Bool // broadcasts were skipped: repair with a push/pull soon
	sent     atomic.Uint64
	recv     atomic.Uint64
	stop     chan struct{}
	wg       sync.WaitGroup
	stopped  atomic.Bool
}

// ErrNoEncryption is returned by Start when RequireEncryption is set and no key is configured.
var ErrNoEncryption = errors.New("ring: gossip encryption is required (require_encryption / --require-encryption) but no key_file is set")

// Start creates the local node, joins the seeds (failures are logged and
// retried every RejoinInterval) and starts the background loops.
func Start(cfg Config) (*Ring, error) {
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
	if cfg.NodeName == "" || cfg.Region == "" {
		return nil, errors.New("ring: node name and region are required")
	}
	r := &Ring{cfg: cfg, log: cfg.Logger.With("node", cfg.NodeName), m: cfg.Metrics, store: newStore(),
		hbSeen: map[string]uint64{}, keyOps: map[string]bool{}, confirms: map[string]time.Time{}, mismatch: map[string]int{}, leaders: map[string]LeaderVote{}, stop: make(chan struct{})}
	r.meta, _ = json.Marshal(meta{Region: cfg.Region, Role: cfg.Role})
	// Sequences start from the clock so that a restarted prober's votes are
	// newer than those of its previous incarnation everywhere.
	r.inc = uint64(time.Now().UnixNano())
	r.seq.Store(r.inc)
	r.hbSeq.Store(r.inc)
	r.leadSeq.Store(r.inc)

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
	if cfg.KeyFile != "" {
		keys, err := LoadKeyring(cfg.KeyFile)
		if err != nil {
			return nil, err
		}
		kr, err := memberlist.NewKeyring(keys, keys[0])
		if err != nil {
			return nil, fmt.Errorf("gossip key file %s: %w", cfg.KeyFile, err)
		}
		mc.Keyring = kr
		r.keyring = kr
		mc.GossipVerifyIncoming, mc.GossipVerifyOutgoing = true, true
		r.m.Encrypted.Set(1)
	} else {
		if cfg.RequireEncryption {
			return nil, ErrNoEncryption
		}
		r.log.Warn("!!! ring gossip is NOT encrypted: anyone who can reach the gossip port can read votes and inject them; set ring.key_file (and ring.require_encryption) — `meridian ring keygen` makes a key")
		r.m.Encrypted.Set(0)
	}
	nt, err := memberlist.NewNetTransport(&memberlist.NetTransportConfig{BindAddrs: []string{host}, BindPort: port, Logger: mc.Logger})
	if err != nil {
		return nil, fmt.Errorf("ring bind %s: %w", cfg.Bind, err)
	}
	mc.Transport = newCountingTransport(nt, &r.sent, &r.recv)
	if cfg.Advertise != "" && cfg.Advertise != cfg.Bind {
		ah, ap, err := splitHostPort(cfg.Advertise)
		if err != nil {
			mc.Transport.Shutdown()
			return nil, fmt.Errorf("ring advertise %q: %w", cfg.Advertise, err)
		}
		mc.AdvertiseAddr, mc.AdvertisePort = ah, ap
	} else if port == 0 {
		mc.AdvertisePort = nt.GetAutoBindPort()
		mc.BindPort = mc.AdvertisePort
	}
	r.q = &memberlist.TransmitLimitedQueue{NumNodes: r.numMembers, RetransmitMult: mc.RetransmitMult}
	ml, err := memberlist.Create(mc)
	if err != nil {
		mc.Transport.Shutdown()
		return nil, fmt.Errorf("ring start: %w", err)
	}
	r.ml = ml
	r.mlp.Store(ml)
	if reg := r.m.registerer; reg != nil {
		sent := prometheus.NewCounterFunc(prometheus.CounterOpts{Name: "meridian_ring_gossip_bytes_total", Help: "Bytes of gossip (memberlist packets and streams, our messages included) by direction.", ConstLabels: prometheus.Labels{"direction": "sent"}}, func() float64 { return float64(r.sent.Load()) })
		recv := prometheus.NewCounterFunc(prometheus.CounterOpts{Name: "meridian_ring_gossip_bytes_total", Help: "Bytes of gossip (memberlist packets and streams, our messages included) by direction.", ConstLabels: prometheus.Labels{"direction": "received"}}, func() float64 { return float64(r.recv.Load()) })
		if err := errors.Join(reg.Register(sent), reg.Register(recv)); err != nil {
			r.log.Warn("ring: gossip byte metrics not registered", "err", err)
		}
	}
	r.updateMembers()
	if len(cfg.Seeds) > 0 {
		if n, err := r.join(); err != nil {
			r.log.Warn("ring: could not join any seed yet; retrying", "seeds", cfg.Seeds, "every", cfg.RejoinInterval, "err", err)
		} else {
			r.log.Info("ring: joined", "contacted", n, "members", ml.NumMembers())
		}
	}
	r.wg.Add(3)
	go r.rejoinLoop()
	go r.summaryLoop()
	go r.syncLoop()
	return r, nil
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
func (r *Ring) LocalAddr() string {
	n := r.ml.LocalNode()
	return net.JoinHostPort(n.Addr.String(), strconv.Itoa(int(n.Port)))
}

// Name is this node's name.
func (r *Ring) Name() string { return r.cfg.NodeName }

// Region is this node's region.
func (r *Ring) Region() string { return r.cfg.Region }

// Members returns the live members, sorted by name.
func (r *Ring) Members() []Member {
	var out []Member
	for _, n := range r.ml.Members() {
		var m meta
		_ = json.Unmarshal(n.Meta, &m)
		out = append(out, Member{Name: n.Name, Region: m.Region, Role: m.Role, Addr: net.JoinHostPort(n.Addr.String(), strconv.Itoa(int(n.Port)))})
	}
	slices.SortFunc(out, func(a, b Member) int { return cmpString(a.Name, b.Name) })
	return out
}

// Votes returns every known vote (ours included), with ObservedAt moved
// forward by each prober's latest summary, sorted by subject and prober.
func (r *Ring) Votes() []health.Vote { return r.store.effective() }

// Publish records this node's vote on s and broadcasts it. Call it when the
// local status changes (or first becomes known); unchanged statuses are kept
// fresh by the periodic summary.
func (r *Ring) Publish(s health.Subject, st health.Status, at time.Time) health.Vote {
	v := health.Vote{Subject: s, Prober: r.cfg.NodeName, Region: r.cfg.Region, Status: st, ObservedAt: at, Seq: r.seq.Add(1)}
	r.store.put(v)
	if r.q.NumQueued() < maxQueued {
		r.broadcast(msgVote, "v/"+v.Prober+"/"+s.Service+"/"+s.Target, toWire(v))
	} else {
		r.needSync.Store(true) // a burst: push/pull carries it
	}
	r.changed()
	return v
}

// Confirm asks probers in other regions to probe s at once.
func (r *Ring) Confirm(s health.Subject) {
	r.broadcast(msgConfirm, "c/"+r.cfg.NodeName+"/"+s.Service+"/"+s.Target, confirmReq{Service: s.Service, Target: s.Target, From: r.cfg.NodeName, Region: r.cfg.Region})
}

// SendHeartbeat broadcasts a heartbeat for cluster (used by `meridian agent`).
func (r *Ring) SendHeartbeat(cluster string, at time.Time) {
	hb := heartbeat{Cluster: cluster, From: r.cfg.NodeName, At: at.UnixMilli(), Seq: r.hbSeq.Add(1)}
	r.mu.Lock()
	r.hbSeen[cluster+"|"+hb.From] = hb.Seq
	r.mu.Unlock()
	r.broadcast(msgHeartbeat, "h/"+cluster+"/"+hb.From, hb)
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
	lm := leaderMsg{Voter: r.cfg.NodeName, Candidate: candidate, Seq: r.leadSeq.Add(1)}
	r.mu.Lock()
	r.leaders[lm.Voter] = LeaderVote{Voter: lm.Voter, Candidate: candidate, Received: time.Now(), seq: lm.Seq}
	r.mu.Unlock()
	msg := encode(msgLeader, lm)
	for _, n := range r.ml.Members() {
		if n.Name == r.cfg.NodeName {
			continue
		}
		if err := r.ml.SendBestEffort(n, msg); err != nil {
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
func (r *Ring) Prune(keep func(health.Subject) bool, maxAge time.Duration) int {
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
func (r *Ring) BroadcastShared(data []byte) { r.broadcast(msgShared, "a/"+r.cfg.NodeName, data) }

func (r *Ring) broadcast(t byte, name string, v any) {
	r.q.QueueBroadcast(&bcast{name: name, msg: encode(t, v)})
	r.m.Messages.WithLabelValues(msgNames[t], "sent").Inc()
}

func (r *Ring) join() (int, error) {
	self := r.LocalAddr()
	var seeds []string
	for _, s := range r.cfg.Seeds {
		if s != self && s != r.cfg.Bind {
			seeds = append(seeds, s)
		}
	}
	if len(seeds) == 0 {
		return 0, nil
	}
	return r.ml.Join(seeds)
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
		live := map[string]bool{}
		for _, m := range r.Members() {
			live[m.Addr] = true
		}
		missing := false
		for _, s := range r.cfg.Seeds {
			if !live[s] && s != r.LocalAddr() {
				missing = true
			}
		}
		if !missing {
			continue
		}
		r.m.Rejoins.Inc()
		if n, err := r.join(); err != nil {
			r.log.Debug("ring: rejoin", "err", err)
		} else if n > 0 {
			r.log.Info("ring: rejoined seeds", "contacted", n, "members", r.ml.NumMembers())
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
		for _, m := range r.Members() {
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
	for {
		select {
		case <-r.stop:
			return
		case now := <-t.C:
			r.updateMembers()
			if r.cfg.Role != RoleProber {
				continue
			}
			n, sum := r.store.digest(r.cfg.NodeName)
			sm := summary{Prober: r.cfg.NodeName, Region: r.cfg.Region, At: now.UnixMilli(), Count: n, SeqSum: sum, Inc: r.inc}
			r.store.putSummary(sm)
			r.broadcast(msgSummary, "s/"+sm.Prober, sm)
		}
	}
}

func (r *Ring) updateMembers() {
	counts := map[string]int{RoleProber: 0, RoleAgent: 0}
	for _, m := range r.Members() {
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

func (d *delegate) NodeMeta(limit int) []byte { return d.meta }

// NotifyMsg handles a message from another node. It copies what it keeps
// and never blocks (memberlist calls it from its packet loop).
func (d *delegate) NotifyMsg(b []byte) {
	r := (*Ring)(d)
	if len(b) == 0 {
		return
	}
	t := b[0]
	r.m.Messages.WithLabelValues(msgNames[t], "received").Inc()
	switch t {
	case msgVote:
		var w wireVote
		if decode(b, &w) != nil {
			return
		}
		if r.store.put(w.vote()) {
			r.m.Votes.Inc()
			// Relaying others' votes makes delivery robust in larger rings;
			// under a burst the originator's own retransmissions and push/pull
			// suffice, and relays would only crowd the queue.
			if r.q.NumQueued() < maxRelayQueued {
				r.q.QueueBroadcast(&bcast{name: "v/" + w.Prober + "/" + w.Service + "/" + w.Target, msg: slices.Clone(b)})
			}
			r.changed()
		}
	case msgSummary:
		var sm summary
		if decode(b, &sm) != nil || sm.Prober == r.cfg.NodeName {
			return
		}
		if r.store.putSummary(sm) {
			r.q.QueueBroadcast(&bcast{name: "s/" + sm.Prober, msg: slices.Clone(b)})
			r.checkDigest(sm)
			r.changed()
		}
	case msgConfirm:
		var c confirmReq
		if decode(b, &c) != nil || c.From == r.cfg.NodeName {
			return
		}
		name := "c/" + c.From + "/" + c.Service + "/" + c.Target
		now := time.Now()
		r.mu.Lock()
		last, seen := r.confirms[name]
		fresh := seen && now.Sub(last) < r.cfg.SummaryInterval
		if !fresh {
			r.confirms[name] = now
		}
		for k, at := range r.confirms {
			if now.Sub(at) > r.cfg.SummaryInterval {
				delete(r.confirms, k)
			}
		}
		r.mu.Unlock()
		if fresh {
			return // a repeat of a request we already handled
		}
		r.q.QueueBroadcast(&bcast{name: name, msg: slices.Clone(b)})
		if c.Region != r.cfg.Region && r.cfg.Role == RoleProber && r.cfg.OnConfirm != nil {
			r.cfg.OnConfirm(health.Subject{Service: c.Service, Target: c.Target}, c.From)
		}
	case msgHeartbeat:
		var hb heartbeat
		if decode(b, &hb) != nil {
			return
		}
		key := hb.Cluster + "|" + hb.From
		r.mu.Lock()
		newer := hb.Seq > r.hbSeen[key]
		if newer {
			r.hbSeen[key] = hb.Seq
		}
		r.mu.Unlock()
		if !newer {
			return
		}
		r.q.QueueBroadcast(&bcast{name: "h/" + hb.Cluster + "/" + hb.From, msg: slices.Clone(b)})
		if r.cfg.OnHeartbeat != nil {
			r.cfg.OnHeartbeat(hb.Cluster, hb.From, time.UnixMilli(hb.At))
		}
	case msgLeader:
		var lm leaderMsg
		if decode(b, &lm) != nil || lm.Voter == r.cfg.NodeName {
			return
		}
		r.mu.Lock()
		if old, ok := r.leaders[lm.Voter]; !ok || lm.Seq > old.seq {
			r.leaders[lm.Voter] = LeaderVote{Voter: lm.Voter, Candidate: lm.Candidate, Received: time.Now(), seq: lm.Seq}
		}
		r.mu.Unlock()
	case msgShared:
		var data []byte
		if decode(b, &data) != nil || r.cfg.OnShared == nil {
			return
		}
		r.cfg.OnShared(data)
	case msgKeyOp:
		var op keyOp
		if decode(b, &op) != nil {
			return
		}
		if err := r.applyKeyOp(op, false); err != nil {
			r.log.Error("ring: keyring change from the ring failed", "op", op.Op, "err", err)
		}
	}
}

func (d *delegate) GetBroadcasts(overhead, limit int) [][]byte {
	return d.q.GetBroadcasts(overhead, limit)
}

func (d *delegate) LocalState(join bool) []byte {
	r := (*Ring)(d)
	r.m.Messages.WithLabelValues("state", "sent").Inc()
	st := r.store.full()
	if r.cfg.SharedState != nil {
		st.Shared = r.cfg.SharedState()
	}
	b, _ := json.Marshal(st)
	return b
}

func (d *delegate) MergeRemoteState(buf []byte, join bool) {
	r := (*Ring)(d)
	r.m.Messages.WithLabelValues("state", "received").Inc()
	var st fullState
	if err := json.Unmarshal(buf, &st); err != nil {
		r.log.Warn("ring: bad remote state", "err", err)
		return
	}
	if len(st.Shared) > 0 && r.cfg.OnShared != nil {
		r.cfg.OnShared(st.Shared)
	}
	changed := false
	for _, w := range st.Votes {
		if w.Prober == r.cfg.NodeName {
			continue // we are the authority on our own votes
		}
		if r.store.put(w.vote()) {
			r.m.Votes.Inc()
			changed = true
		}
	}
	for _, sm := range st.Summaries {
		if sm.Prober != r.cfg.NodeName && r.store.putSummary(sm) {
			changed = true
		}
	}
	if changed {
		r.changed()
	}
}

// events implements memberlist.EventDelegate.
type events Ring

// Event callbacks run under memberlist's node lock: they must not call back
// into memberlist (Members would deadlock), only log and signal.

func (e *events) NotifyJoin(n *memberlist.Node) {
	r := (*Ring)(e)
	r.log.Info("ring: member joined", "member", n.Name, "addr", n.Address())
	r.changed()
}

func (e *events) NotifyLeave(n *memberlist.Node) {
	r := (*Ring)(e)
	r.log.Warn("ring: member left or failed", "member", n.Name, "addr", n.Address())
	r.changed()
}

func (e *events) NotifyUpdate(*memberlist.Node) {}

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
	w.log.Log(nil, level, line)
	return len(p), nil
}

var _ io.Writer = (*slogWriter)(nil)

// newOpID returns a random id for a key operation.
func newOpID() string {
	b := make([]byte, 8)
	_, _ = crand.Read(b)
	return hex.EncodeToString(b)
}
