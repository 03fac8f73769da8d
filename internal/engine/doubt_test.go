package engine

import (
	"net/netip"
	"testing"

	"github.com/miekg/dns"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/meridian-gslb/meridian/internal/config"
	"github.com/meridian-gslb/meridian/internal/geo"
)

// doubtHealth is explainHealth with some endpoints in doubt ("service|target").
type doubtHealth struct {
	explainHealth
	doubt map[string]bool
}

func (h doubtHealth) Doubt(svc, target string) bool { return h.doubt[svc+"|"+target] }

func doubtSnapshot(t *testing.T, h doubtHealth) *Snapshot {
	t.Helper()
	f, err := config.Parse("explain.yaml", []byte(explainFixture))
	require.NoError(t, err)
	loc, err := geo.New(nil, "")
	require.NoError(t, err)
	s, err := Compile(&f.Desired, Options{Health: h, Locator: loc})
	require.NoError(t, err)
	return s
}

// ttls draws n answers and returns the TTL each target came with (every
// record of every reply).
func ttls(t *testing.T, s *Snapshot, name string, n int) map[string]map[uint32]bool {
	t.Helper()
	out := map[string]map[uint32]bool{}
	for range n {
		var r Result
		s.Lookup(name, dns.TypeA, Client{Addr: netip.MustParseAddr("192.0.2.200"), Bits: 32}, &r)
		require.NotEmpty(t, r.Answer)
		for _, rr := range r.Answer {
			a := rr.(*dns.A).A.String()
			if out[a] == nil {
				out[a] = map[uint32]bool{}
			}
			out[a][rr.Header().Ttl] = true
		}
	}
	return out
}

func TestAnswersCarryingAnEndpointInDoubtGetTheDoubtTTL(t *testing.T) {
	const w, rr, dead = "w.x.test.", "rr.x.test.", "dead.x.test."
	tests := []struct {
		name    string
		health  doubtHealth
		service string
		want    map[string]map[uint32]bool
	}{
		{name: "a stable answer carries the zone's TTL", service: w,
			want: map[string]map[uint32]bool{"192.0.2.1": {60: true}, "192.0.2.2": {60: true}}},
		{name: "a one-record answer carries doubt_ttl when its record is in doubt, the others keep the zone's TTL", service: w,
			health: doubtHealth{doubt: map[string]bool{w + "|192.0.2.1": true}},
			want:   map[string]map[uint32]bool{"192.0.2.1": {5: true}, "192.0.2.2": {60: true}}},
		{name: "a reply of several records is one RRset: every record carries doubt_ttl when one is in doubt", service: rr,
			health: doubtHealth{doubt: map[string]bool{rr + "|192.0.2.61": true}},
			want:   map[string]map[uint32]bool{"192.0.2.61": {5: true}, "192.0.2.62": {5: true}, "192.0.2.63": {5: true}}},
		{name: "an endpoint out for good leaves the answers it is missing from at the zone's TTL", service: w,
			health: doubtHealth{explainHealth: explainHealth{w + "|192.0.2.1": Down}},
			want:   map[string]map[uint32]bool{"192.0.2.2": {60: true}}},
		{name: "a down endpoint that may come back soon gives the answers it is missing from doubt_ttl", service: w,
			health: doubtHealth{explainHealth: explainHealth{w + "|192.0.2.1": Down}, doubt: map[string]bool{w + "|192.0.2.1": true}},
			want:   map[string]map[uint32]bool{"192.0.2.2": {5: true}}},
		{name: "an endpoint whose cluster failed over is not awaited: its own return would not bring it back", service: w,
			health: doubtHealth{explainHealth: explainHealth{w + "|192.0.2.1": Down, "cluster|east": Down}, doubt: map[string]bool{w + "|192.0.2.1": true}},
			want:   map[string]map[uint32]bool{"192.0.2.2": {60: true}}},
		{name: "a drained endpoint is not awaited: an operator took it out", service: "drain.x.test.",
			health: doubtHealth{explainHealth: explainHealth{"drain.x.test.|192.0.2.41": Down}, doubt: map[string]bool{"drain.x.test.|192.0.2.41": true}},
			want:   map[string]map[uint32]bool{"192.0.2.42": {60: true}}},
		{name: "failover: the primary coming back soon gives the secondary's answers doubt_ttl", service: "fo.x.test.",
			health: doubtHealth{explainHealth: explainHealth{"fo.x.test.|192.0.2.11": Down}, doubt: map[string]bool{"fo.x.test.|192.0.2.11": true}},
			want:   map[string]map[uint32]bool{"192.0.2.12": {5: true}}},
		{name: "a weight-0 standby coming back soon changes nothing while a weighted endpoint answers", service: w,
			health: doubtHealth{explainHealth: explainHealth{w + "|192.0.2.3": Down}, doubt: map[string]bool{w + "|192.0.2.3": true}},
			want:   map[string]map[uint32]bool{"192.0.2.1": {60: true}, "192.0.2.2": {60: true}}},
		{name: "failover: a backup coming back soon changes nothing in the primary's answers", service: "fo.x.test.",
			health: doubtHealth{explainHealth: explainHealth{"fo.x.test.|192.0.2.12": Down}, doubt: map[string]bool{"fo.x.test.|192.0.2.12": true}},
			want:   map[string]map[uint32]bool{"192.0.2.11": {60: true}}},
		{name: "a fail-open answer keeps fail_open_ttl", service: dead,
			health: doubtHealth{explainHealth: explainHealth{dead + "|192.0.2.51": Down, dead + "|192.0.2.52": Down}, doubt: map[string]bool{dead + "|192.0.2.51": true}},
			want:   map[string]map[uint32]bool{"192.0.2.51": {5: true}, "192.0.2.52": {5: true}}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			assert.Equal(t, tc.want, ttls(t, doubtSnapshot(t, tc.health), tc.service, 2000))
		})
	}
}

func TestTheStatusSaysWhichEndpointIsInDoubt(t *testing.T) {
	s := doubtSnapshot(t, doubtHealth{doubt: map[string]bool{"w.x.test.|192.0.2.2": true}})
	st, ok := s.Service("w.x.test.")
	require.True(t, ok)
	got := map[string]bool{}
	for _, e := range st.Endpoints {
		got[e.Target] = e.Doubt
	}
	assert.Equal(t, map[string]bool{"192.0.2.1": false, "192.0.2.2": true, "192.0.2.3": false, "2001:db8::1": false}, got)
}

func TestExplainSaysWhichEndpointIsInDoubtAndTheTTL(t *testing.T) {
	s := doubtSnapshot(t, doubtHealth{doubt: map[string]bool{"w.x.test.|192.0.2.1": true}})
	e := s.Explain("w.x.test.", dns.TypeA, Client{Addr: netip.MustParseAddr("192.0.2.200"), Bits: 32}, false)
	assert.True(t, candidate(t, e, "192.0.2.1").InDoubt)
	assert.False(t, candidate(t, e, "192.0.2.2").InDoubt)
	assert.Contains(t, e.Notes, "in doubt (a failed probe being re-checked, down votes short of a decision, or a failure within the flap window): 192.0.2.1; replies carrying it have TTL 5 (doubt_ttl) instead of 60, so resolvers ask again soon")
	stable := doubtSnapshot(t, doubtHealth{}).Explain("w.x.test.", dns.TypeA, Client{Addr: netip.MustParseAddr("192.0.2.200"), Bits: 32}, false)
	for _, n := range stable.Notes {
		assert.NotContains(t, n, "in doubt", "a stable answer says nothing of doubt")
	}
}

func TestExplainSaysWhichEndpointMayComeBackAndTheTTL(t *testing.T) {
	s := doubtSnapshot(t, doubtHealth{explainHealth: explainHealth{"w.x.test.|192.0.2.1": Down}, doubt: map[string]bool{"w.x.test.|192.0.2.1": true}})
	e := s.Explain("w.x.test.", dns.TypeA, Client{Addr: netip.MustParseAddr("192.0.2.200"), Bits: 32}, false)
	assert.True(t, candidate(t, e, "192.0.2.1").Returning)
	assert.False(t, candidate(t, e, "192.0.2.1").InDoubt, "not answered: not in doubt")
	assert.False(t, candidate(t, e, "192.0.2.2").Returning)
	assert.Contains(t, e.Notes, "out but may come back soon (down less than decision.flap_window, or its hold-down ends within it): 192.0.2.1; every reply has TTL 5 (doubt_ttl) instead of 60, so resolvers see its return soon")
	settled := doubtSnapshot(t, doubtHealth{explainHealth: explainHealth{"w.x.test.|192.0.2.1": Down}}).Explain("w.x.test.", dns.TypeA, Client{Addr: netip.MustParseAddr("192.0.2.200"), Bits: 32}, false)
	for _, n := range settled.Notes {
		assert.NotContains(t, n, "come back soon", "an endpoint out for good is not awaited")
	}
}
