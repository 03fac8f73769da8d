package ring

import (
	"encoding/json"
	"io"
	"log"
	"math"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hashicorp/memberlist"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/meridian-gslb/meridian/internal/model"
	"github.com/meridian-gslb/meridian/internal/vote"
)

// sendRaw delivers msg from node from to node to over memberlist's
// reliable (TCP) channel, exactly as a peer's user message arrives.
func sendRaw(t *testing.T, from, to *Ring, msg []byte) {
	t.Helper()
	// Under heavy load memberlist may briefly suspect a member and drop
	// it from the sender's list: wait for it to be known again.
	var node *memberlist.Node
	eventually(t, from.Name()+" knows "+to.Name(), func() bool {
		for _, n := range from.nodeList() {
			if n.Name == to.Name() {
				node = &n
				return true
			}
		}
		return false
	})
	require.NoError(t, from.ml.SendReliable(node, msg))
}

// rawEnvelope builds an envelope by hand: any origin, any signature.
func rawEnvelope(t byte, origin string, sig, payload []byte) []byte {
	b := []byte{t, envVersion, byte(len(origin))}
	b = append(b, origin...)
	b = append(b, sig...)
	return append(b, payload...)
}

func mustJSON(v any) []byte {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return b
}

// TestEveryForgedOrMalformedMessageIsRejectedAndCounted sends every message
// kind malformed, oversized, with far-future and max-value stamps and
// sequence numbers, in another node's name, from an unlisted node and from
// a listed agent, to a prober: nothing panics, none of it changes the
// votes, heartbeats, admin state or keyring the prober holds, each is
// counted under its reason, and the ring keeps working.
func TestEveryForgedOrMalformedMessageIsRejectedAndCounted(t *testing.T) {
	l := labFor(t)
	known := vote.EndpointSubject("app.example.test.", "192.0.2.1")
	var heartbeats, shared, confirms atomic.Int32
	vcfg := l.config("v", "r1", RoleProber, "")
	vcfg.SummaryInterval = 100 * time.Millisecond
	vcfg.Known = func(s vote.Subject) bool { return s == known || s == vote.ClusterSubject("c1") }
	vcfg.OnHeartbeat = func(string, string, time.Time) { heartbeats.Add(1) }
	vcfg.OnShared = func([]byte) { shared.Add(1) }
	vcfg.OnConfirm = func(vote.Subject, string) { confirms.Add(1) }
	victim := l.start(t, vcfg)

	pcfg := l.config("p2", "r2", RoleProber, "")
	pcfg.Seeds, pcfg.SummaryInterval = []string{victim.LocalAddr()}, 100*time.Millisecond
	p2 := l.start(t, pcfg)
	acfg := l.config("agent-c1", "", RoleAgent, "c1")
	acfg.Seeds = []string{victim.LocalAddr()}
	agent := l.start(t, acfg)
	ghost := NewIdentity() // has the gossip key (there is none here) but is not listed
	eventually(t, "three members", func() bool { return len(victim.AllMembers()) == 3 })
	eventually(t, "all three are listed and trusted", func() bool { return len(victim.Members()) == 3 })

	now := time.Now()
	futureMs := now.Add(time.Hour).UnixMilli()
	mkVote := func(prober, region string, at int64, seq uint64, s vote.Subject) wireVote {
		return wireVote{Service: s.Service, Target: s.Target, Prober: prober, Region: region, Down: true, At: at, Seq: seq}
	}
	okVote := mkVote("p2", "r2", now.UnixMilli(), uint64(now.UnixNano()), known)
	p2ID, agentID := l.ids["p2"], l.ids["agent-c1"]
	big := okVote
	big.Target = strings.Repeat("x", 20<<10)

	cases := []struct {
		name   string
		msg    []byte
		kind   string
		reason string
	}{
		{"a message shorter than an envelope is malformed", []byte{msgVote, envVersion}, "vote", ReasonMalformed},
		{"an unknown envelope version is malformed", append([]byte{msgVote, 9, 2, 'p', '2'}, make([]byte, 80)...), "vote", ReasonMalformed},
		{"a signed vote that is not JSON is malformed", seal(p2ID, msgVote, "p2", json.RawMessage(`"x"`)), "vote", ReasonMalformed},
		{"a vote larger than 16 KiB is oversized", seal(p2ID, msgVote, "p2", big), "vote", ReasonOversized},
		{"an unknown message type is refused", seal(p2ID, 99, "p2", okVote), "unknown", ReasonUnknownType},
		{"a vote from a node not in ring.peers is refused", seal(ghost, msgVote, "ghost", mkVote("ghost", "r2", now.UnixMilli(), 1, known)), "vote", ReasonUnknownOrigin},
		{"a vote in p2's name signed by another key is refused", seal(ghost, msgVote, "p2", okVote), "vote", ReasonSignature},
		{"a vote in the victim's own name from anyone else is refused", seal(ghost, msgVote, "v", mkVote("v", "r1", now.UnixMilli(), uint64(now.UnixNano()), known)), "vote", ReasonSignature},
		{"a vote with a random signature is refused", rawEnvelope(msgVote, "p2", make([]byte, 64), mustJSON(okVote)), "vote", ReasonSignature},
		{"p2 voting in v's name is impersonation", seal(p2ID, msgVote, "p2", mkVote("v", "r1", now.UnixMilli(), uint64(now.UnixNano()), known)), "vote", ReasonImpersonation},
		{"p2 voting for another region than its listed one is refused", seal(p2ID, msgVote, "p2", mkVote("p2", "r1", now.UnixMilli(), uint64(now.UnixNano()), known)), "vote", ReasonRegion},
		{"a vote observed an hour from now is refused", seal(p2ID, msgVote, "p2", mkVote("p2", "r2", futureMs, uint64(now.UnixNano()), known)), "vote", ReasonFuture},
		{"a vote with sequence MaxUint64 is refused", seal(p2ID, msgVote, "p2", mkVote("p2", "r2", now.UnixMilli(), math.MaxUint64, known)), "vote", ReasonFuture},
		{"a vote on a subject the config does not have is refused", seal(p2ID, msgVote, "p2", mkVote("p2", "r2", now.UnixMilli(), uint64(now.UnixNano()), vote.EndpointSubject("evil.example.test.", "192.0.2.66"))), "vote", ReasonUnknownTarget},
		{"an agent may not vote", seal(agentID, msgVote, "agent-c1", mkVote("agent-c1", "", now.UnixMilli(), 1, known)), "vote", ReasonRole},
		{"a summary in the future is refused", seal(p2ID, msgSummary, "p2", summary{Prober: "p2", Region: "r2", At: futureMs}), "summary", ReasonFuture},
		{"a summary from incarnation MaxUint64 is refused", seal(p2ID, msgSummary, "p2", summary{Prober: "p2", Region: "r2", At: now.UnixMilli(), Inc: math.MaxUint64}), "summary", ReasonFuture},
		{"a summary in v's name is impersonation", seal(p2ID, msgSummary, "p2", summary{Prober: "v", Region: "r1", At: now.UnixMilli()}), "summary", ReasonImpersonation},
		{"a summary with a negative count is invalid", seal(p2ID, msgSummary, "p2", summary{Prober: "p2", Region: "r2", At: now.UnixMilli(), Count: -1}), "summary", ReasonInvalid},
		{"a confirmation request from a minute ago is stale", seal(p2ID, msgConfirm, "p2", confirmReq{Service: known.Service, Target: known.Target, From: "p2", Region: "r2", At: now.Add(-2 * time.Minute).UnixMilli()}), "confirm", ReasonStale},
		{"a confirmation request in v's name is impersonation", seal(p2ID, msgConfirm, "p2", confirmReq{Service: known.Service, Target: known.Target, From: "v", Region: "r1", At: now.UnixMilli()}), "confirm", ReasonImpersonation},
		{"an agent may not ask for confirmation", seal(agentID, msgConfirm, "agent-c1", confirmReq{Service: known.Service, Target: known.Target, From: "agent-c1", At: now.UnixMilli()}), "confirm", ReasonRole},
		{"an agent's heartbeat for another cluster is refused", seal(agentID, msgHeartbeat, "agent-c1", heartbeat{Cluster: "c2", From: "agent-c1", At: now.UnixMilli(), Seq: uint64(now.UnixNano())}), "heartbeat", ReasonCluster},
		{"a heartbeat from the future is refused", seal(agentID, msgHeartbeat, "agent-c1", heartbeat{Cluster: "c1", From: "agent-c1", At: futureMs, Seq: uint64(now.UnixNano())}), "heartbeat", ReasonFuture},
		{"a heartbeat with sequence MaxUint64 is refused", seal(agentID, msgHeartbeat, "agent-c1", heartbeat{Cluster: "c1", From: "agent-c1", At: now.UnixMilli(), Seq: math.MaxUint64}), "heartbeat", ReasonFuture},
		{"a prober may not send a heartbeat", seal(p2ID, msgHeartbeat, "p2", heartbeat{Cluster: "c1", From: "p2", At: now.UnixMilli(), Seq: 1}), "heartbeat", ReasonRole},
		{"a writer vote with sequence MaxUint64 is refused", seal(p2ID, msgLeader, "p2", leaderMsg{Voter: "p2", Candidate: "p2", Seq: math.MaxUint64}), "leader", ReasonFuture},
		{"a writer vote in v's name is impersonation", seal(p2ID, msgLeader, "p2", leaderMsg{Voter: "v", Candidate: "p2", Seq: 1}), "leader", ReasonImpersonation},
		{"an agent may not send admin state", seal(agentID, msgShared, "agent-c1", sharedMsg{At: now.UnixMilli(), State: []byte(`{"entries":{}}`)}), "shared", ReasonRole},
		{"an admin state from an hour ago (a replay bringing back removed overrides) is stale", seal(p2ID, msgShared, "p2", sharedMsg{At: now.Add(-time.Hour).UnixMilli(), State: []byte(`{"entries":{}}`)}), "shared", ReasonStale},
		{"an admin state from the future is refused", seal(p2ID, msgShared, "p2", sharedMsg{At: futureMs, State: []byte(`{"entries":{}}`)}), "shared", ReasonFuture},
		{"a writer vote from ten minutes ago (a replay) is stale", seal(p2ID, msgLeader, "p2", leaderMsg{Voter: "p2", Candidate: "p2", Seq: uint64(now.Add(-10 * time.Minute).UnixNano())}), "leader", ReasonStale},
		{"an agent may not change keys", seal(agentID, msgKeyOp, "agent-c1", keyOp{Op: KeyUse, Key: make([]byte, 32), ID: "k1", At: now.UnixMilli()}), "keyop", ReasonRole},
		{"a key change from an hour ago (a replay) is stale", seal(p2ID, msgKeyOp, "p2", keyOp{Op: KeyUse, Key: make([]byte, 32), ID: "k2", At: now.Add(-time.Hour).UnixMilli()}), "keyop", ReasonStale},
		{"a key of 5 bytes is invalid", seal(p2ID, msgKeyOp, "p2", keyOp{Op: KeyInstall, Key: make([]byte, 5), ID: "k3", At: now.UnixMilli()}), "keyop", ReasonInvalid},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c := victim.m.Rejected.WithLabelValues(tc.kind, tc.reason)
			before := testutil.ToFloat64(c)
			sendRaw(t, p2, victim, tc.msg)
			eventually(t, "counted as "+tc.kind+"/"+tc.reason, func() bool { return testutil.ToFloat64(c) > before })
		})
	}

	t.Run("a state sync with forged entries keeps only what checks out", func(t *testing.T) {
		forged := seal(ghost, msgVote, "p2", okVote)
		st := fullState{Votes: [][]byte{forged, []byte("junk")}, Summaries: [][]byte{seal(p2ID, msgVote, "p2", okVote)}, Shared: seal(agentID, msgShared, "agent-c1", []byte(`{}`))}
		(*delegate)(victim).MergeRemoteState(mustJSON(st), false)
		assert.Positive(t, testutil.ToFloat64(victim.m.Rejected.WithLabelValues("vote", ReasonSignature)))
		assert.Positive(t, testutil.ToFloat64(victim.m.Rejected.WithLabelValues("summary", ReasonMalformed)), "a vote where a summary belongs")
		(*delegate)(victim).MergeRemoteState(make([]byte, maxState+1), false)
		assert.Equal(t, 1.0, testutil.ToFloat64(victim.m.Rejected.WithLabelValues("state", ReasonOversized)))
		(*delegate)(victim).MergeRemoteState([]byte("{"), false)
		assert.Equal(t, 1.0, testutil.ToFloat64(victim.m.Rejected.WithLabelValues("state", ReasonMalformed)))
	})

	for _, v := range victim.Votes() {
		assert.NotEqual(t, vote.Down, v.Status, "no forged down vote was taken: %+v", v)
	}
	assert.Zero(t, heartbeats.Load(), "no forged heartbeat was taken")
	assert.Zero(t, shared.Load(), "no forged admin state was passed on")
	assert.Zero(t, confirms.Load(), "no forged confirmation ran a probe")

	// The ring still works: p2's real vote and the agent's real heartbeat arrive.
	p2.Publish(known, vote.Down, time.Now())
	eventually(t, "p2's real vote arrives", func() bool { return hasVote(victim, "p2", known, vote.Down) })
	agent.SendHeartbeat("c1", time.Now())
	eventually(t, "the agent's real heartbeat arrives", func() bool { return heartbeats.Load() == 1 })
}

func TestAPanicInACallbackIsRecoveredAndCounted(t *testing.T) {
	l := labFor(t)
	vcfg := l.config("v", "r1", RoleProber, "")
	vcfg.OnShared = func([]byte) { panic("boom") }
	victim := l.start(t, vcfg)
	pcfg := l.config("p2", "r2", RoleProber, "")
	pcfg.Seeds = []string{victim.LocalAddr()}
	p2 := l.start(t, pcfg)
	eventually(t, "joined", func() bool { return len(victim.Members()) == 2 })
	p2.BroadcastShared([]byte(`{"entries":{}}`))
	eventually(t, "the panic is counted", func() bool {
		return testutil.ToFloat64(victim.m.Rejected.WithLabelValues("message", ReasonPanic)) >= 1
	})
	s := vote.EndpointSubject("app.example.test.", "192.0.2.1")
	p2.Publish(s, vote.Up, time.Now())
	eventually(t, "and the node goes on", func() bool { return hasVote(victim, "p2", s, vote.Up) })
}

func TestAMemberNotInPeersOrWithoutItsKeyCountsForNothing(t *testing.T) {
	l := labFor(t)
	a := startNode(t, "a", "r1", nil, "", nil)
	// An intruder with the (here absent) gossip key joins under a listed
	// name's neighbour and under an unlisted name: it is a member, not a peer.
	rogue, err := Start(Config{NodeName: "rogue", Region: "r2", Role: RoleProber, Bind: "127.0.0.1:0", Seeds: []string{a.LocalAddr()},
		Label: "test", Memberlist: fast, Logger: l.config("a", "r1", RoleProber, "").Logger})
	require.NoError(t, err)
	t.Cleanup(func() { _ = rogue.Shutdown() })
	eventually(t, "the rogue is a member", func() bool { return len(a.AllMembers()) == 2 })
	assert.Len(t, a.Members(), 1, "only a itself is trusted")
	for _, m := range a.AllMembers() {
		assert.Equal(t, m.Name == "a", m.Trusted, m.Name)
	}
	// A listed name whose metadata is not signed by the listed key.
	require.NoError(t, a.SetPeers(append(l.list(), model.RingPeer{Name: "rogue", Role: model.PeerProber, Region: "r2", PublicKey: model.FormatPeerKey(NewIdentity().Public())})))
	assert.Len(t, a.Members(), 1, "listed, but its metadata is not signed by the listed key")
	rogue.Publish(vote.EndpointSubject("app.example.test.", "192.0.2.1"), vote.Down, time.Now())
	time.Sleep(300 * time.Millisecond)
	assert.Empty(t, a.Votes(), "its vote is refused")
	assert.Positive(t, testutil.ToFloat64(a.m.Rejected.WithLabelValues("vote", ReasonSignature)))
}

func TestPeersListingThisNodeWithAnotherKeyIsAnError(t *testing.T) {
	l := labFor(t)
	cfg := l.config("a", "r1", RoleProber, "")
	cfg.Peers = []model.RingPeer{{Name: "a", Role: model.PeerProber, Region: "r1", PublicKey: model.FormatPeerKey(NewIdentity().Public())}}
	_, err := Start(cfg)
	assert.ErrorContains(t, err, "lists another public key than its identity")
	cfg.Peers = []model.RingPeer{{Name: "a", Role: model.PeerProber, Region: "r2", PublicKey: model.FormatPeerKey(l.ids["a"].Public())}}
	_, err = Start(cfg)
	assert.ErrorContains(t, err, "with region r2, but ring.region is r1")
}

func TestAPrefixEntryCoversAtMostMaxNodes(t *testing.T) {
	shared := NewIdentity() // the Secret a Deployment's replicas share
	peers := []model.RingPeer{{Name: "east-*", Role: model.PeerProber, Region: "r2", MaxNodes: 2, PublicKey: model.FormatPeerKey(shared.Public())}}
	l := labFor(t)
	vcfg := l.config("v", "r1", RoleProber, "")
	vcfg.Peers, vcfg.SummaryInterval = peers, 100*time.Millisecond
	victim, err := Start(vcfg)
	require.NoError(t, err)
	t.Cleanup(func() { _ = victim.Shutdown() })
	var replicas []*Ring
	for _, name := range []string{"east-a", "east-b", "east-c"} { // east-c: a name invented by a compromised replica
		c := l.config(name, "r2", RoleProber, "")
		c.Identity, c.Peers, c.Seeds, c.SummaryInterval = shared, peers, []string{victim.LocalAddr()}, 100*time.Millisecond
		r, err := Start(c)
		require.NoError(t, err)
		t.Cleanup(func() { _ = r.Shutdown() })
		replicas = append(replicas, r)
	}
	eventually(t, "all four are members", func() bool { return len(victim.AllMembers()) == 4 })
	eventually(t, "two replicas count, the third does not", func() bool {
		var names []string
		for _, m := range victim.Members() {
			names = append(names, m.Name)
		}
		return slices.Equal(names, []string{"east-a", "east-b", "v"})
	})
	s := vote.EndpointSubject("app.example.test.", "192.0.2.1")
	replicas[2].Publish(s, vote.Down, time.Now())
	eventually(t, "the third replica's vote is refused", func() bool {
		return testutil.ToFloat64(victim.m.Rejected.WithLabelValues("vote", ReasonUnadmitted)) >= 1
	})
	assert.False(t, hasVote(victim, "east-c", s, vote.Down))
	replicas[0].Publish(s, vote.Down, time.Now())
	eventually(t, "an admitted replica's vote is taken", func() bool { return hasVote(victim, "east-a", s, vote.Down) })
}

// replayMeta is a memberlist delegate that announces captured metadata.
type replayMeta []byte

func (m replayMeta) NodeMeta(int) []byte           { return m }
func (replayMeta) NotifyMsg([]byte)                {}
func (replayMeta) GetBroadcasts(int, int) [][]byte { return nil }
func (replayMeta) LocalState(bool) []byte          { return nil }
func (replayMeta) MergeRemoteState([]byte, bool)   {}

func TestADepartedProbersReplayedMetadataDoesNotMakeItAMember(t *testing.T) {
	l := labFor(t)
	acfg := l.config("a", "r1", RoleProber, "")
	acfg.SummaryInterval, acfg.MaxClockSkew = 100*time.Millisecond, time.Second // a prober counts for 3 × 100ms + 1s after its last summary
	a := l.start(t, acfg)
	b := startNode(t, "b", "r2", []string{a.LocalAddr()}, "", nil)
	eventually(t, "b is a trusted member of a", func() bool { return len(a.Members()) == 2 })
	var captured []byte
	for _, n := range a.nodeList() {
		if n.Name == "b" {
			captured = slices.Clone(n.Meta)
		}
	}
	require.NotEmpty(t, captured)
	require.NoError(t, b.Shutdown())
	eventually(t, "b left", func() bool { return len(a.AllMembers()) == 1 })

	// An impostor takes b's name and announces b's signed metadata.
	c := memberlist.DefaultLANConfig()
	c.Name, c.BindAddr, c.BindPort, c.Label = "b", "127.0.0.1", 0, "test"
	c.Delegate = replayMeta(captured)
	c.Logger = log.New(io.Discard, "", 0)
	imp, err := memberlist.Create(c)
	require.NoError(t, err)
	t.Cleanup(func() { _ = imp.Shutdown() })
	_, err = imp.Join([]string{a.LocalAddr()})
	require.NoError(t, err)
	eventually(t, "the impostor is a member", func() bool { return len(a.AllMembers()) == 2 })
	time.Sleep(2 * time.Second) // past the window of b's last real summary
	for _, m := range a.AllMembers() {
		assert.Equal(t, m.Name == "a", m.Trusted, "%s: replayed metadata without fresh signed summaries counts for nothing", m.Name)
	}
}

func TestAnAdminStateLargerThanAGossipPacketStillArrives(t *testing.T) {
	l := labFor(t)
	var got atomic.Value
	vcfg := l.config("v", "r1", RoleProber, "")
	vcfg.OnShared = func(b []byte) { got.Store(string(b)) }
	victim := l.start(t, vcfg)
	pcfg := l.config("p2", "r2", RoleProber, "")
	pcfg.Seeds = []string{victim.LocalAddr()}
	p2 := l.start(t, pcfg)
	eventually(t, "joined", func() bool { return len(victim.Members()) == 2 })
	// A few dozen overrides and tombstones: several KiB, far beyond the
	// 1400-byte packets gossip piggybacks on.
	big := `{"entries":{"x":{"o":{"reason":"` + strings.Repeat("r", 8000) + `"}}}}`
	p2.BroadcastShared([]byte(big))
	eventually(t, "the large state arrives directly", func() bool { s, _ := got.Load().(string); return s == big })
}

func TestConfirmationRequestsAreDeduplicatedByStamp(t *testing.T) {
	p2, agent := NewIdentity(), NewIdentity()
	r := detached(t, p2, agent)
	var asked atomic.Int32
	r.cfg.OnConfirm = func(vote.Subject, string) { asked.Add(1) }
	s := vote.EndpointSubject("app.example.test.", "192.0.2.1")
	req := func(at time.Time) []byte {
		return seal(p2, msgConfirm, "p2", confirmReq{Service: s.Service, Target: s.Target, From: "p2", Region: "r2", At: at.UnixMilli()})
	}
	now := time.Now()
	first := req(now.Add(-3 * time.Second))
	cases := []struct {
		name string
		msg  []byte
		want int32
	}{
		{"a first request runs a confirmation", first, 1},
		{"a copy of it (a relay) does not", first, 1},
		{"an older request does not", req(now.Add(-4 * time.Second)), 1},
		{"a newer request a moment later (the endpoint recovering) does", req(now.Add(-1500 * time.Millisecond)), 2},
		{"a newer request less than a second after the one handled does not", req(now.Add(-1400 * time.Millisecond)), 2},
	}
	for i, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if i == 3 {
				r.mu.Lock() // the first request was handled a second and a half ago
				for k, c := range r.confirms {
					c.handled = c.handled.Add(-1500 * time.Millisecond)
					r.confirms[k] = c
				}
				r.mu.Unlock()
			}
			require.Nil(t, r.handle(tc.msg, false))
			assert.Equal(t, tc.want, asked.Load())
		})
	}
}
