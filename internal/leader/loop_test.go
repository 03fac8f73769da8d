package leader_test

import (
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"log/slog"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/meridian-gslb/meridian/internal/leader"
	"github.com/meridian-gslb/meridian/internal/model"
	"github.com/meridian-gslb/meridian/internal/ring"
	"github.com/meridian-gslb/meridian/internal/ringca"
)

var fast = model.Memberlist{
	GossipInterval:   model.Duration(20 * time.Millisecond),
	ProbeInterval:    model.Duration(100 * time.Millisecond),
	ProbeTimeout:     model.Duration(50 * time.Millisecond),
	PushPullInterval: model.Duration(300 * time.Millisecond),
	SuspicionMult:    2,
	TCPTimeout:       model.Duration(time.Second),
}

type push struct {
	node       string
	start, end time.Time
}

// TestTwoWritersNeverPushConcurrently runs three real ring nodes with an
// elector and a pusher each; the writer is killed and later a new node
// takes its place. Every push is recorded; no two pushes of different
// nodes may overlap in time.
func TestTwoWritersNeverPushConcurrently(t *testing.T) {
	names := []string{"w1", "w2", "w3"}
	var mu sync.Mutex
	var pushes []push
	type node struct {
		r      *ring.Ring
		e      *leader.Elector
		cancel context.CancelFunc
		done   chan struct{}
	}
	nodes := map[string]*node{}
	seed := ""
	// Every node is listed in every node's ring.peers (writer votes are
	// signed and counted only from listed probers).
	ids := map[string]ring.Identity{}
	var peers []model.RingPeer
	for _, n := range names {
		ids[n] = ring.NewIdentity()
		peers = append(peers, model.RingPeer{Name: n, Role: model.PeerProber, Region: "r", PublicKey: model.FormatPeerKey(ids[n].Public())})
	}
	start := func(name string) {
		var seeds []string
		if seed != "" {
			seeds = []string{seed}
		}
		r, err := ring.Start(ring.Config{NodeName: name, Region: "r", Bind: "127.0.0.1:0", Seeds: seeds, Memberlist: fast,
			RejoinInterval: 300 * time.Millisecond, SummaryInterval: 100 * time.Millisecond, Logger: slog.New(slog.DiscardHandler),
			Identity: ids[name], Peers: peers})
		require.NoError(t, err)
		if seed == "" {
			seed = r.LocalAddr()
		}
		e := &leader.Elector{Transport: ring.Election{Ring: r}, Candidates: names, Tick: 100 * time.Millisecond,
			Lease: 1500 * time.Millisecond, Fresh: 700 * time.Millisecond, Logger: slog.New(slog.DiscardHandler)}
		ctx, cancel := context.WithCancel(context.Background())
		n := &node{r: r, e: e, cancel: cancel, done: make(chan struct{})}
		go e.Run(ctx)
		go func() { // the pusher: writes while it is the writer
			defer close(n.done)
			for ctx.Err() == nil {
				if e.Writer() {
					p := push{node: name, start: time.Now()}
					time.Sleep(15 * time.Millisecond) // a write call
					p.end = time.Now()
					mu.Lock()
					pushes = append(pushes, p)
					mu.Unlock()
				}
				time.Sleep(20 * time.Millisecond)
			}
		}()
		nodes[name] = n
	}
	stop := func(name string) {
		n := nodes[name]
		n.cancel()
		<-n.done
		_ = n.r.Shutdown()
	}
	for _, n := range names {
		start(n)
	}
	defer func() {
		for _, n := range nodes {
			n.cancel()
			<-n.done
			_ = n.r.Shutdown()
		}
	}()
	writerNow := func() string {
		for name, n := range nodes {
			if n.e.Writer() {
				return name
			}
		}
		return ""
	}
	require.Eventually(t, func() bool { return writerNow() == "w1" }, 10*time.Second, 20*time.Millisecond, "w1 (lowest) is elected")
	time.Sleep(time.Second)
	stop("w1")
	delete(nodes, "w1")
	require.Eventually(t, func() bool { return writerNow() == "w2" }, 10*time.Second, 20*time.Millisecond, "w2 takes over after the lease")
	time.Sleep(time.Second)
	start("w1") // w1 comes back: w2 keeps the votes it holds (sticky)
	// Watch for 2 s: w1 must never take over. w2 may miss a tick of its
	// lease on a loaded machine (once in CI under -race no node was the
	// writer at the one instant checked), so it need only be the writer
	// again soon after.
	for deadline := time.Now().Add(2 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		require.NotEqual(t, "w1", writerNow(), "a returning lower-named node does not take over from a live writer")
	}
	assert.Eventually(t, func() bool { return writerNow() == "w2" }, 5*time.Second, 20*time.Millisecond, "w2 stays the writer")

	mu.Lock()
	defer mu.Unlock()
	slices.SortFunc(pushes, func(a, b push) int { return a.start.Compare(b.start) })
	writers := map[string]int{}
	for i, p := range pushes {
		writers[p.node]++
		if i > 0 && pushes[i-1].node != p.node {
			require.False(t, p.start.Before(pushes[i-1].end), "pushes of %s and %s overlap", pushes[i-1].node, p.node)
			t.Logf("hand-over %s -> %s: gap %s", pushes[i-1].node, p.node, p.start.Sub(pushes[i-1].end).Round(time.Millisecond))
		}
	}
	t.Logf("pushes by node: %v", writers)
	assert.Positive(t, writers["w1"])
	assert.Positive(t, writers["w2"])
}

// TestOneWriterAmongProbersListedByCredentials runs a ring whose nodes list
// each other by their credentials only (no ring.peers, no
// providers.writers): the candidates come from a Roster fed with the
// probers the ring lists, and exactly one node writes, also after the
// writer leaves.
func TestOneWriterAmongProbersListedByCredentials(t *testing.T) {
	ca, err := ringca.NewAuthority("gslb.example.test", time.Hour, time.Now())
	require.NoError(t, err)
	pool, err := ringca.NewPool("gslb.example.test", [][]byte{ringca.EncodeCert(ca.Cert.Raw)}, nil)
	require.NoError(t, err)
	issue := func(region, name string, max int) *ringca.Credential {
		pub, key, err := ed25519.GenerateKey(rand.Reader)
		require.NoError(t, err)
		der, err := ca.Issue(ringca.Scope{TrustDomain: "gslb.example.test", Role: ringca.RoleProber, Region: region, Name: name, MaxNodes: max}, pub, 30*time.Minute, time.Now())
		require.NoError(t, err)
		k, err := ringca.EncodeKey(key)
		require.NoError(t, err)
		c, err := ringca.ParseCredential(ringca.EncodeCert(der), k)
		require.NoError(t, err)
		return &c
	}
	east, west := issue("us-east", "east-*", 2), issue("eu-west", "west-*", 1)
	type node struct {
		r      *ring.Ring
		e      *leader.Elector
		cancel context.CancelFunc
	}
	var nodes []*node
	seed := ""
	for _, n := range []struct {
		name, region string
		cred         *ringca.Credential
	}{{"east-0", "us-east", east}, {"east-1", "us-east", east}, {"west-0", "eu-west", west}} {
		var seeds []string
		if seed != "" {
			seeds = []string{seed}
		}
		r, err := ring.Start(ring.Config{NodeName: n.name, Region: n.region, Bind: "127.0.0.1:0", Seeds: seeds, Memberlist: fast,
			RejoinInterval: 300 * time.Millisecond, SummaryInterval: 100 * time.Millisecond, Logger: slog.New(slog.DiscardHandler),
			Credential: n.cred, Trust: pool})
		require.NoError(t, err)
		if seed == "" {
			seed = r.LocalAddr()
		}
		var mu sync.Mutex
		var ro leader.Roster
		self := n.name
		cands := func() []string {
			var live []leader.Member
			for _, m := range r.Members() {
				if !m.CredentialExpires.IsZero() {
					live = append(live, leader.Member{Name: m.Name, Expires: m.CredentialExpires, Serial: m.CredentialSerial, Key: m.KeyFingerprint})
				}
			}
			mu.Lock()
			defer mu.Unlock()
			ro.Observe(time.Now(), live)
			ro.Prune(time.Now(), r.Revoked)
			return append(ro.Names(), self)
		}
		e := &leader.Elector{Transport: ring.Election{Ring: r}, CandidatesFunc: cands, Tick: 100 * time.Millisecond,
			Lease: 1500 * time.Millisecond, Fresh: 700 * time.Millisecond, Logger: slog.New(slog.DiscardHandler)}
		ctx, cancel := context.WithCancel(context.Background())
		go e.Run(ctx)
		nodes = append(nodes, &node{r: r, e: e, cancel: cancel})
	}
	defer func() {
		for _, n := range nodes {
			n.cancel()
			_ = n.r.Shutdown()
		}
	}()
	writers := func() []string {
		var out []string
		for _, n := range nodes {
			if n.e.Writer() {
				out = append(out, n.r.Name())
			}
		}
		return out
	}
	require.Eventually(t, func() bool { return slices.Equal(writers(), []string{"east-0"}) }, 10*time.Second, 20*time.Millisecond, "east-0 (lowest) is the one writer")
	for range 20 {
		assert.LessOrEqual(t, len(writers()), 1, "never two writers")
		time.Sleep(50 * time.Millisecond)
	}
	nodes[0].cancel()
	require.NoError(t, nodes[0].r.Shutdown())
	require.Eventually(t, func() bool { return slices.Equal(writers(), []string{"east-1"}) }, 15*time.Second, 20*time.Millisecond,
		"east-1 takes over: east-0 stays a candidate (out of sight, remembered), and 2 of 3 is a majority")
}
