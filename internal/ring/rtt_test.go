package ring

import (
	"fmt"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/hashicorp/memberlist"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/meridian-gslb/meridian/internal/health"
	"github.com/meridian-gslb/meridian/internal/vote"
)

func TestQuantise(t *testing.T) {
	for _, tc := range []struct {
		name string
		in   time.Duration
		want int64
	}{
		{"below a microsecond counts as one", 10 * time.Nanosecond, 1},
		{"three digits are kept as they are", 999 * time.Microsecond, 999},
		{"beyond three digits the rest is rounded", 12345 * time.Microsecond, 12300},
		{"rounding goes half up", 12350 * time.Microsecond, 12400},
		{"a minute is capped at the largest RTT a receiver accepts", time.Minute + time.Second, 60_000_000},
	} {
		t.Run(tc.name, func(t *testing.T) { assert.Equal(t, tc.want, quantise(tc.in)) })
	}
}

// TestRTTSummaryValidation sends RTT summaries to a node without a
// network, as they arrive from a peer: each bad one is refused as a whole
// with its reason, counted, and changes nothing; a good one is kept with
// the sender's listed region.
func TestRTTSummaryValidation(t *testing.T) {
	p2, agent, ghost := NewIdentity(), NewIdentity(), NewIdentity()
	now := time.Now()
	ms := now.UnixMilli()
	ok := rttEntry{Service: "app.example.test.", Target: "192.0.2.1", RTT: 12300, Samples: 4, At: ms - 500}
	msg := func(prober, region string, at int64, es ...rttEntry) rttMsg {
		return rttMsg{Prober: prober, Region: region, At: at, Entries: es}
	}
	with := func(f func(e *rttEntry)) rttEntry { e := ok; f(&e); return e }
	many := make([]rttEntry, maxRTTEntries+1)
	for i := range many {
		many[i] = with(func(e *rttEntry) { e.Target = fmt.Sprintf("192.0.2.%d", i+1) })
	}
	for _, tc := range []struct {
		name   string
		msg    []byte
		reason string // "" = accepted
	}{
		{"a summary of a listed prober for its own region is kept", seal(p2, msgRTT, "p2", msg("p2", "r2", ms, ok)), ""},
		{"a summary for another region than the prober's listed one is refused (forged region)", seal(p2, msgRTT, "p2", msg("p2", "r1", ms, ok)), ReasonRegion},
		{"a summary in another prober's name is impersonation", seal(p2, msgRTT, "p2", msg("v", "r1", ms, ok)), ReasonImpersonation},
		{"a summary from a node not in ring.peers is refused", seal(ghost, msgRTT, "ghost", msg("ghost", "r2", ms, ok)), ReasonUnknownOrigin},
		{"a summary in p2's name signed by another key is refused", seal(ghost, msgRTT, "p2", msg("p2", "r2", ms, ok)), ReasonSignature},
		{"an agent may not send RTT summaries", seal(agent, msgRTT, "agent-c1", msg("agent-c1", "", ms, ok)), ReasonRole},
		{"a summary sent an hour from now is refused (future stamp)", seal(p2, msgRTT, "p2", msg("p2", "r2", now.Add(time.Hour).UnixMilli(), ok)), ReasonFuture},
		{"an entry sampled an hour from now is refused (future stamp)", seal(p2, msgRTT, "p2", msg("p2", "r2", ms, with(func(e *rttEntry) { e.At = now.Add(time.Hour).UnixMilli() }))), ReasonFuture},
		{"an entry sampled after its message was sent is invalid", seal(p2, msgRTT, "p2", msg("p2", "r2", ms-1000, ok)), ReasonInvalid},
		{"a summary from ten minutes ago is stale (a replay)", seal(p2, msgRTT, "p2", msg("p2", "r2", now.Add(-10*time.Minute).UnixMilli(), with(func(e *rttEntry) { e.At = now.Add(-11 * time.Minute).UnixMilli() }))), ReasonStale},
		{"an RTT of zero is out of range", seal(p2, msgRTT, "p2", msg("p2", "r2", ms, with(func(e *rttEntry) { e.RTT = 0 }))), ReasonInvalid},
		{"a negative RTT is out of range", seal(p2, msgRTT, "p2", msg("p2", "r2", ms, with(func(e *rttEntry) { e.RTT = -5 }))), ReasonInvalid},
		{"an RTT above 60 s is out of range", seal(p2, msgRTT, "p2", msg("p2", "r2", ms, with(func(e *rttEntry) { e.RTT = 60_000_001 }))), ReasonInvalid},
		{"an entry without samples is invalid", seal(p2, msgRTT, "p2", msg("p2", "r2", ms, with(func(e *rttEntry) { e.Samples = 0 }))), ReasonInvalid},
		{"an entry about a cluster is invalid", seal(p2, msgRTT, "p2", msg("p2", "r2", ms, with(func(e *rttEntry) { e.Service, e.Target = "", "c1" }))), ReasonInvalid},
		{"an entry with an empty target is invalid", seal(p2, msgRTT, "p2", msg("p2", "r2", ms, with(func(e *rttEntry) { e.Target = "" }))), ReasonInvalid},
		{"an endpoint listed twice is invalid", seal(p2, msgRTT, "p2", msg("p2", "r2", ms, ok, ok)), ReasonInvalid},
		{"a summary without entries is invalid", seal(p2, msgRTT, "p2", msg("p2", "r2", ms)), ReasonInvalid},
		{"a summary with more than 32 entries is invalid", seal(p2, msgRTT, "p2", msg("p2", "r2", ms, many...)), ReasonInvalid},
		{"a summary that is not JSON is malformed", seal(p2, msgRTT, "p2", "x"), ReasonMalformed},
		{"a summary with a good entry after a bad one is refused as a whole", seal(p2, msgRTT, "p2", msg("p2", "r2", ms, ok, with(func(e *rttEntry) { e.Target, e.RTT = "192.0.2.2", 0 }))), ReasonInvalid},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := detached(t, p2, agent)
			rj := r.handle(tc.msg, false)
			got := r.RTTs()
			if tc.reason == "" {
				require.Nil(t, rj)
				require.Len(t, got, 1)
				assert.Equal(t, RTTReport{Prober: "p2", Region: "r2", Subject: vote.EndpointSubject(ok.Service, ok.Target), RTT: 12300 * time.Microsecond, Samples: 4, At: time.UnixMilli(ok.At)}, got[0])
				return
			}
			require.NotNil(t, rj)
			assert.Equal(t, tc.reason, rj.reason, rj.detail)
			assert.Empty(t, got, "nothing of a refused summary is kept")
			(*delegate)(r).NotifyMsg(tc.msg)
			assert.Equal(t, 1.0, testutil.ToFloat64(r.m.Rejected.WithLabelValues("rtt", tc.reason)), "counted")
		})
	}
}

func TestRTTSummaryEntriesOnUnknownEndpointsAreSkippedAndCounted(t *testing.T) {
	p2, agent := NewIdentity(), NewIdentity()
	r := detached(t, p2, agent)
	ms := time.Now().UnixMilli()
	known := rttEntry{Service: "app.example.test.", Target: "192.0.2.1", RTT: 100, Samples: 1, At: ms}
	unknown := rttEntry{Service: "evil.example.test.", Target: "192.0.2.66", RTT: 100, Samples: 1, At: ms}
	require.Nil(t, r.handle(seal(p2, msgRTT, "p2", rttMsg{Prober: "p2", Region: "r2", At: ms, Entries: []rttEntry{unknown, known}}), false))
	got := r.RTTs()
	require.Len(t, got, 1)
	assert.Equal(t, "192.0.2.1", got[0].Subject.Target)
	assert.Equal(t, 1.0, testutil.ToFloat64(r.m.RTTEntries.WithLabelValues("unknown-subject")))
	assert.Equal(t, 1.0, testutil.ToFloat64(r.m.RTTEntries.WithLabelValues("received")))
}

func TestAnOlderRTTSummaryNeverReplacesANewerOne(t *testing.T) {
	p2, agent := NewIdentity(), NewIdentity()
	r := detached(t, p2, agent)
	ms := time.Now().UnixMilli()
	e := rttEntry{Service: "app.example.test.", Target: "192.0.2.1", RTT: 100, Samples: 1, At: ms - 2000}
	newer := rttMsg{Prober: "p2", Region: "r2", At: ms, Entries: []rttEntry{e}}
	older := newer
	older.At = ms - 1000
	older.Entries = []rttEntry{{Service: e.Service, Target: e.Target, RTT: 999, Samples: 1, At: ms - 2000}}
	require.Nil(t, r.handle(seal(p2, msgRTT, "p2", newer), false))
	require.Nil(t, r.handle(seal(p2, msgRTT, "p2", older), false))
	assert.Equal(t, 100*time.Microsecond, r.RTTs()[0].RTT)
}

func TestAPanicWhileCheckingAnRTTSummaryIsRecoveredAndCounted(t *testing.T) {
	p2, agent := NewIdentity(), NewIdentity()
	r := detached(t, p2, agent)
	r.cfg.Known = func(vote.Subject) bool { panic("boom") }
	ms := time.Now().UnixMilli()
	m := rttMsg{Prober: "p2", Region: "r2", At: ms, Entries: []rttEntry{{Service: "app.example.test.", Target: "192.0.2.1", RTT: 100, Samples: 1, At: ms}}}
	(*delegate)(r).NotifyMsg(seal(p2, msgRTT, "p2", m))
	assert.Equal(t, 1.0, testutil.ToFloat64(r.m.Rejected.WithLabelValues("message", ReasonPanic)))
	assert.Empty(t, r.RTTs())
}

// sender is a prober without a network whose RTT source the test sets.
type sender struct {
	*Ring
	mu   sync.Mutex
	rtts map[vote.Subject]health.RTT
	sent map[vote.Subject]rttSent
}

func newSender(t *testing.T) *sender {
	s := &sender{rtts: map[vote.Subject]health.RTT{}, sent: map[vote.Subject]rttSent{}}
	r, err := newRing(Config{NodeName: "v", Region: "r1", Role: RoleProber, MaxClockSkew: 10 * time.Second, SummaryInterval: time.Second,
		Logger: slog.New(slog.DiscardHandler), Metrics: NewMetrics(nil), RTTs: func() map[vote.Subject]health.RTT {
			s.mu.Lock()
			defer s.mu.Unlock()
			out := map[vote.Subject]health.RTT{}
			for k, v := range s.rtts {
				out[k] = v
			}
			return out
		}})
	require.NoError(t, err)
	r.q = &memberlist.TransmitLimitedQueue{NumNodes: func() int { return 2 }, RetransmitMult: 2}
	s.Ring = r
	return s
}

func (s *sender) set(target string, rtt time.Duration, at time.Time) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.rtts[vote.EndpointSubject("app.example.test.", target)] = health.RTT{RTT: rtt, Samples: 3, At: at}
}

// drain returns the queued messages (taking them off the queue).
func (s *sender) drain(t *testing.T) []rttMsg {
	var out []rttMsg
	seen := map[string]bool{}
	var all [][]byte
	for s.q.NumQueued() > 0 {
		all = append(all, s.q.GetBroadcasts(0, 1<<24)...)
	}
	for _, b := range all {
		if seen[string(b)] {
			continue // a retransmission
		}
		seen[string(b)] = true
		require.LessOrEqual(t, len(b), maxGossipRTT, "every summary fits one gossip packet")
		e, err := openEnvelope(b)
		require.NoError(t, err)
		require.True(t, e.verify(s.id().Public()))
		var m rttMsg
		require.NoError(t, e.decodePayload(&m))
		require.LessOrEqual(t, len(m.Entries), maxRTTEntries)
		out = append(out, m)
	}
	return out
}

func entries(ms []rttMsg) int {
	n := 0
	for _, m := range ms {
		n += len(m.Entries)
	}
	return n
}

func TestRTTSummariesAreBoundedInSizeAndRate(t *testing.T) {
	s := newSender(t)
	now := time.Now()
	for i := range 200 {
		s.set(fmt.Sprintf("192.0.2.%d", i), 20*time.Millisecond, now)
	}
	first := s.drain(t)
	require.Empty(t, first)

	n := s.sendRTTs(now, s.sent)
	msgs := s.drain(t)
	assert.LessOrEqual(t, len(msgs), maxRTTMessages, "at most 8 messages a round")
	assert.Equal(t, n, entries(msgs))
	assert.Less(t, n, 200, "200 endpoints do not all fit one round")
	total := n
	for round := 1; total < 200 && round < 10; round++ {
		total += s.sendRTTs(now.Add(time.Duration(round)*500*time.Millisecond), s.sent)
		s.drain(t)
	}
	assert.Equal(t, 200, total, "the rest follows in the next rounds")

	t.Run("nothing is sent again while nothing moved more than 10%", func(t *testing.T) {
		s.set("192.0.2.1", 21*time.Millisecond, now.Add(5*time.Second))
		assert.Zero(t, s.sendRTTs(now.Add(5*time.Second), s.sent))
	})
	t.Run("an entry that moved more than 10% is sent in the next round", func(t *testing.T) {
		s.set("192.0.2.1", 23*time.Millisecond, now.Add(5500*time.Millisecond))
		assert.Equal(t, 1, s.sendRTTs(now.Add(5500*time.Millisecond), s.sent))
		m := s.drain(t)
		require.Len(t, m, 1)
		assert.Equal(t, int64(23000), m[0].Entries[0].RTT)
		assert.Equal(t, "r1", m[0].Region)
	})
	t.Run("every entry is refreshed after six intervals", func(t *testing.T) {
		at := now.Add(11 * time.Second)
		for i := range 200 {
			s.set(fmt.Sprintf("192.0.2.%d", i), 20*time.Millisecond, at)
		}
		assert.Positive(t, s.sendRTTs(at, s.sent))
	})
	t.Run("an entry without a sample for six intervals is not sent (its probes fail)", func(t *testing.T) {
		s2 := newSender(t)
		s2.set("192.0.2.1", 20*time.Millisecond, now.Add(-7*time.Second))
		assert.Zero(t, s2.sendRTTs(now, s2.sent))
	})
	t.Run("the prober's own summaries are in its store", func(t *testing.T) {
		got := s.RTTs()
		require.NotEmpty(t, got)
		assert.Equal(t, "v", got[0].Prober)
		assert.Equal(t, "r1", got[0].Region)
	})
}

func TestRTTSummariesSpreadAndReachALateJoiner(t *testing.T) {
	l := labFor(t)
	s := vote.EndpointSubject("app.example.test.", "192.0.2.1")
	rtts := func() map[vote.Subject]health.RTT {
		return map[vote.Subject]health.RTT{s: {RTT: 7 * time.Millisecond, Samples: 2, At: time.Now()}}
	}
	t.Run("summaries spread by gossip", func(t *testing.T) {
		acfg := l.config("a", "r1", RoleProber, "")
		acfg.SummaryInterval, acfg.RTTs = 100*time.Millisecond, rtts
		a := l.start(t, acfg)
		bcfg := l.config("b", "r2", RoleProber, "")
		bcfg.Seeds = []string{a.LocalAddr()}
		b := l.start(t, bcfg)
		eventually(t, "b holds a's RTT with a's region", func() bool { return holds(b, "a", "r1", s, 7*time.Millisecond) })
	})
	t.Run("a node that joins later gets them from the push/pull state", func(t *testing.T) {
		ccfg := l.config("c", "r1", RoleProber, "")
		ccfg.SummaryInterval, ccfg.RTTs = time.Minute, rtts // no round of its own during the test
		c := l.start(t, ccfg)
		require.Equal(t, 1, c.sendRTTs(time.Now(), map[vote.Subject]rttSent{}))
		c.q.Reset() // the broadcast is spent: only the state carries it
		dcfg := l.config("d", "r2", RoleProber, "")
		dcfg.Seeds = []string{c.LocalAddr()}
		d := l.start(t, dcfg)
		eventually(t, "d holds c's RTT", func() bool { return holds(d, "c", "r1", s, 7*time.Millisecond) })
	})
}

func holds(r *Ring, prober, region string, s vote.Subject, rtt time.Duration) bool {
	for _, x := range r.RTTs() {
		if x.Prober == prober && x.Region == region && x.Subject == s && x.RTT == rtt {
			return true
		}
	}
	return false
}

func TestOnRTTIsCalledForNewSummariesOnly(t *testing.T) {
	p2, agent := NewIdentity(), NewIdentity()
	r := detached(t, p2, agent)
	calls := 0
	r.cfg.OnRTT = func() { calls++ }
	ms := time.Now().UnixMilli()
	m := seal(p2, msgRTT, "p2", rttMsg{Prober: "p2", Region: "r2", At: ms, Entries: []rttEntry{{Service: "app.example.test.", Target: "192.0.2.1", RTT: 100, Samples: 1, At: ms}}})
	require.Nil(t, r.handle(m, false))
	assert.Equal(t, 1, calls, "a new summary wakes the latency follower")
	require.Nil(t, r.handle(m, false))
	assert.Equal(t, 1, calls, "a repeat does not")
}

func TestRTTChangedNeverBlocks(t *testing.T) {
	s := newSender(t)
	for range 3 {
		s.RTTChanged()
	}
	assert.Len(t, s.rttWake, 1, "wakes coalesce")
}
