package ring

import (
	"log/slog"
	"testing"
	"time"

	"github.com/hashicorp/memberlist"

	"github.com/meridian-gslb/meridian/internal/model"
	"github.com/meridian-gslb/meridian/internal/vote"
)

// detached is a ring node without a network: what a peer's bytes meet
// first (handle, mergeState), with the same trust table as a real node.
func detached(tb testing.TB, p2, agent Identity) *Ring {
	r, err := newRing(Config{NodeName: "v", Region: "r1", Role: RoleProber, MaxClockSkew: 10 * time.Second, SummaryInterval: time.Second,
		OnShared: func([]byte) {}, OnHeartbeat: func(string, string, time.Time) {}, OnConfirm: func(vote.Subject, string) {},
		Known:  func(s vote.Subject) bool { return s.Target == "192.0.2.1" || s.Target == "c1" },
		Logger: slog.New(slog.DiscardHandler), Metrics: NewMetrics(nil)})
	if err != nil {
		tb.Fatal(err)
	}
	r.q = &memberlist.TransmitLimitedQueue{NumNodes: func() int { return 2 }, RetransmitMult: 2}
	err = r.SetPeers([]model.RingPeer{
		{Name: "p2", Role: model.PeerProber, Region: "r2", PublicKey: model.FormatPeerKey(p2.Public())},
		{Name: "agent-c1", Role: model.PeerAgent, Cluster: "c1", PublicKey: model.FormatPeerKey(agent.Public())},
	})
	if err != nil {
		tb.Fatal(err)
	}
	return r
}

// FuzzRingMessage feeds arbitrary bytes to a node as a gossip message and
// as a push/pull state: whatever arrives, handling must not panic (the
// fuzzer calls the handlers without the recover that guards them live).
func FuzzRingMessage(f *testing.F) {
	p2, agent := NewIdentity(), NewIdentity()
	now := time.Now()
	s := vote.EndpointSubject("app.example.test.", "192.0.2.1")
	v := wireVote{Service: s.Service, Target: s.Target, Prober: "p2", Region: "r2", Down: true, At: now.UnixMilli(), Seq: uint64(now.UnixNano())}
	for _, b := range [][]byte{
		seal(p2, msgVote, "p2", v),
		seal(p2, msgSummary, "p2", summary{Prober: "p2", Region: "r2", At: now.UnixMilli(), Count: 1, SeqSum: v.Seq, Inc: v.Seq}),
		seal(p2, msgConfirm, "p2", confirmReq{Service: s.Service, Target: s.Target, From: "p2", Region: "r2", At: now.UnixMilli()}),
		seal(agent, msgHeartbeat, "agent-c1", heartbeat{Cluster: "c1", From: "agent-c1", At: now.UnixMilli(), Seq: v.Seq}),
		seal(p2, msgLeader, "p2", leaderMsg{Voter: "p2", Candidate: "p2", Seq: v.Seq}),
		seal(p2, msgShared, "p2", sharedMsg{At: now.UnixMilli(), State: []byte(`{"entries":{}}`)}),
		seal(p2, msgKeyOp, "p2", keyOp{Op: KeyInstall, Key: make([]byte, 32), ID: "k", At: now.UnixMilli()}),
		seal(p2, msgRTT, "p2", rttMsg{Prober: "p2", Region: "r2", At: now.UnixMilli(), Entries: []rttEntry{{Service: s.Service, Target: s.Target, RTT: 1200, Samples: 3, At: now.UnixMilli()}}}),
		mustJSON(fullState{Votes: [][]byte{seal(p2, msgVote, "p2", v)}}),
		{}, {msgVote}, []byte(`{"v":[null],"s":["AQ=="],"a":"Bw=="}`),
	} {
		f.Add(b)
	}
	r := detached(f, p2, agent)
	f.Fuzz(func(t *testing.T, b []byte) {
		_ = r.handle(b, true)
		r.mergeState(b)
		for r.q.NumQueued() > 0 {
			r.q.GetBroadcasts(0, 1<<20)
		}
	})
}

// BenchmarkHandleVote: what a vote costs a receiver — a new one (its
// signature checked), a repeat (relays and syncs: no signature check), and
// a forgery in a listed prober's name (refused at the signature).
func BenchmarkHandleVote(b *testing.B) {
	p2, agent := NewIdentity(), NewIdentity()
	r := detached(b, p2, agent)
	s := vote.EndpointSubject("app.example.test.", "192.0.2.1")
	now := time.Now()
	msg := func(id Identity, seq uint64) []byte {
		return seal(id, msgVote, "p2", wireVote{Service: s.Service, Target: s.Target, Prober: "p2", Region: "r2", At: now.UnixMilli(), Seq: seq})
	}
	drain := func() {
		for r.q.NumQueued() > 0 {
			r.q.GetBroadcasts(0, 1<<20)
		}
	}
	b.Run("new", func(b *testing.B) {
		msgs := make([][]byte, b.N)
		base := uint64(now.UnixNano())
		for i := range msgs {
			msgs[i] = msg(p2, base+uint64(i)+1)
		}
		b.ResetTimer()
		for i := range b.N {
			if rj := r.handle(msgs[i], false); rj != nil {
				b.Fatal(rj)
			}
		}
	})
	b.Run("repeat", func(b *testing.B) {
		m := msg(p2, uint64(now.UnixNano()))
		for range b.N {
			_ = r.handle(m, false)
		}
	})
	b.Run("forged", func(b *testing.B) {
		m := msg(NewIdentity(), uint64(time.Now().Add(time.Second).UnixNano()))
		for range b.N {
			if rj := r.handle(m, false); rj == nil || rj.reason != ReasonSignature {
				b.Fatal(rj)
			}
		}
	})
	drain()
}
