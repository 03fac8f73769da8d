package engine

import (
	"testing"

	"github.com/miekg/dns"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// sharesOf flattens one group's families: target -> share, and the
// families that answer nothing or fail open.
func sharesOf(g ClientGroup) (shares map[string]float64, noData, failOpen []string) {
	shares = map[string]float64{}
	for _, f := range g.Families {
		if len(f.Shares) == 0 {
			noData = append(noData, f.Family)
		}
		if f.FailOpen {
			failOpen = append(failOpen, f.Family)
		}
		for _, s := range f.Shares {
			shares[s.Target] = s.Share
		}
	}
	return shares, noData, failOpen
}

func TestServiceSharesArePerClientGroupAndFamily(t *testing.T) {
	s := explainSnapshot(t, nil, nil)
	type group struct {
		label    string
		shares   map[string]float64
		noData   []string
		failOpen []string
	}
	tests := []struct {
		name    string
		service string
		want    []group
	}{
		{name: "a weighted service has one group; A and AAAA are shared apart, each to 100", service: "w.x.test.",
			want: []group{{label: "every client", shares: map[string]float64{"192.0.2.1": 70, "192.0.2.2": 30, "2001:db8::1": 100}}}},
		{name: "a geo service has a group per bucket, the clients we cannot locate getting the default", service: "geo.x.test.",
			want: []group{
				{label: "clients we cannot locate (and any location without a rule); clients in region us-east", shares: map[string]float64{"192.0.2.21": 100}},
				{label: "clients in region eu-west; countries FR, DE; continent EU", shares: map[string]float64{"192.0.2.23": 100}},
				{label: "clients in country US; continent NA", shares: map[string]float64{"192.0.2.21": 50, "192.0.2.22": 50}},
				{label: "clients in region us-west", shares: map[string]float64{"192.0.2.22": 100}},
			}},
		{name: "every endpoint probed down fails open over the endpoints not drained", service: "dead.x.test.",
			want: []group{{label: "every client", shares: map[string]float64{"192.0.2.51": 50, "192.0.2.52": 50}, failOpen: []string{FamilyA}}}},
		{name: "when_all_down nodata answers nothing", service: "nod.x.test.",
			want: []group{{label: "every client", shares: map[string]float64{}, noData: []string{FamilyA}}}},
		{name: "a CNAME service shares its CNAME family", service: "alias.x.test.",
			want: []group{{label: "every client", shares: map[string]float64{"w.x.test.": 100}}}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			cs, ok := s.ServiceShares(tc.service)
			require.True(t, ok)
			var got []group
			for _, g := range cs.Groups {
				shares, noData, failOpen := sharesOf(g)
				got = append(got, group{label: g.Label(), shares: shares, noData: noData, failOpen: failOpen})
			}
			assert.ElementsMatch(t, tc.want, got)
		})
	}
	_, ok := s.ServiceShares("nothere.x.test.")
	assert.False(t, ok, "no such service")
}

// TestServiceSharesAreTheSharesDrawn: for clients of each group, 60 000
// lookups through the engine draw the group's shares within 1 point.
func TestServiceSharesAreTheSharesDrawn(t *testing.T) {
	const n = 60_000 // at least the 20 000 the issue asks; 1 point is then over 4 standard deviations of a 70% share, so the check does not flake
	s := explainSnapshot(t, nil, nil)
	for _, tc := range []struct {
		name, service string
		client        Client
		group         func(ClientGroup) bool
	}{
		{"a weighted service", "w.x.test.", Client{Addr: resolver, Bits: 32}, func(ClientGroup) bool { return true }},
		{"a geo service for a client we cannot locate", "geo.x.test.", Client{Addr: resolver, Bits: 32}, func(g ClientGroup) bool { return g.Unlocated }},
		{"a geo service for a client in FR", "geo.x.test.", ecsClientOf("10.5.1.0/24"), func(g ClientGroup) bool { return len(g.Countries) > 0 && g.Countries[0] == "FR" }},
		{"a geo service for a client in us-east (the default's region)", "geo.x.test.", ecsClientOf("10.1.1.0/24"), func(g ClientGroup) bool { return g.Unlocated }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cs, ok := s.ServiceShares(tc.service)
			require.True(t, ok)
			var want map[string]float64
			for _, g := range cs.Groups {
				if tc.group(g) {
					want, _, _ = sharesOf(g)
					break
				}
			}
			require.NotNil(t, want, "a group for the client: %+v", cs.Groups)
			hits := map[string]int{}
			for range n {
				var r Result
				s.Lookup(tc.service, dns.TypeA, tc.client, &r)
				require.NotEmpty(t, r.Answer)
				hits[r.Answer[0].(*dns.A).A.String()]++
			}
			for target, share := range want {
				if share == 0 || !isV4(target) {
					continue
				}
				assert.InDelta(t, share, 100*float64(hits[target])/n, 1, target)
			}
			for target := range hits {
				assert.Contains(t, want, target, "drawn but not in the group's shares")
			}
		})
	}
}

func isV4(s string) bool {
	for _, c := range s {
		if c == ':' {
			return false
		}
	}
	return true
}
