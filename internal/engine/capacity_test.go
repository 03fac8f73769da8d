package engine

import (
	"testing"

	"github.com/miekg/dns"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

const capacityFixture = `
zones:
  - apex: example.test
    nameservers: [{name: ns1.example.test, ipv4: [192.0.2.53]}]
clusters:
  - {name: east, region: us-east}
  - {name: west, region: us-west}
  - {name: eu, region: eu-west}
services:
  - name: cap.example.test
    capacity: {source: kubernetes, kubernetes: {service: shop/web}}
    endpoints:
      - {address: 192.0.2.1, cluster: east, weight: 50}
      - {address: 192.0.2.2, cluster: west, weight: 50}
      - {address: 192.0.2.3, cluster: eu, weight: 0}
  - name: fo.example.test
    strategy: failover
    failover: {order: [east, west]}
    capacity: {source: kubernetes, kubernetes: {service: shop/web}}
    endpoints:
      - {address: 192.0.2.21, cluster: east}
      - {address: 192.0.2.22, cluster: west}
  - name: plain.example.test
    endpoints:
      - {address: 192.0.2.31, cluster: east, weight: 50}
      - {address: 192.0.2.32, cluster: west, weight: 50}
`

// fakeCapacity is a Capacity with fixed percents by service|target.
type fakeCapacity map[string]int

func (f fakeCapacity) Endpoint(svc, target string) (CapacityState, bool) {
	p, ok := f[svc+"|"+target]
	return CapacityState{Percent: p, Source: "kubernetes", Why: "test"}, ok
}

func compileCapacity(t *testing.T, h Health, c Capacity) *Snapshot {
	t.Helper()
	s, err := Compile(desired(t, capacityFixture), Options{Health: h, Capacity: c})
	require.NoError(t, err)
	return s
}

func TestCapacityScalesTheDrawnWeights(t *testing.T) {
	const n = 60_000
	client := Client{Addr: resolver, Bits: 32}
	tests := []struct {
		name   string
		cap    fakeCapacity
		health Health
		qname  string
		want   map[string]float64 // percent of first answers
	}{
		{"without readings the configured weights are drawn", fakeCapacity{}, nil, "cap.example.test.",
			map[string]float64{"192.0.2.1": 50, "192.0.2.2": 50}},
		{"east at 20 % ready draws 50×0.2 against 50: one sixth", fakeCapacity{"cap.example.test.|192.0.2.1": 20, "cap.example.test.|192.0.2.2": 100}, nil, "cap.example.test.",
			map[string]float64{"192.0.2.1": 100.0 / 6, "192.0.2.2": 500.0 / 6}},
		{"a fraction outside 0..100 is clamped", fakeCapacity{"cap.example.test.|192.0.2.1": 250, "cap.example.test.|192.0.2.2": -5}, nil, "cap.example.test.",
			map[string]float64{"192.0.2.1": 100}},
		{"an endpoint at 0 % is a standby while another has ready capacity", fakeCapacity{"cap.example.test.|192.0.2.1": 0, "cap.example.test.|192.0.2.2": 40}, nil, "cap.example.test.",
			map[string]float64{"192.0.2.2": 100}},
		{"an endpoint at 0 % is answered when the one with capacity is down", fakeCapacity{"cap.example.test.|192.0.2.1": 0, "cap.example.test.|192.0.2.2": 40},
			fakeHealth{endpoints: map[string]State{"cap.example.test.|192.0.2.2": Down}}, "cap.example.test.",
			map[string]float64{"192.0.2.1": 50, "192.0.2.3": 50}},
		{"capacity never moves a failover service to its next group", fakeCapacity{"fo.example.test.|192.0.2.21": 0, "fo.example.test.|192.0.2.22": 100}, nil, "fo.example.test.",
			map[string]float64{"192.0.2.21": 100}},
		{"a service without capacity ignores readings", fakeCapacity{"plain.example.test.|192.0.2.31": 10}, nil, "plain.example.test.",
			map[string]float64{"192.0.2.31": 50, "192.0.2.32": 50}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s := compileCapacity(t, tc.health, tc.cap)
			got := shares(s, tc.qname, n, client)
			require.Len(t, got, len(tc.want), "%v", got)
			for addr, want := range tc.want {
				assert.InDelta(t, want, got[addr], 1.5, "share of %s: %v", addr, got)
			}
		})
	}
}

func TestTheStatusCarriesConfiguredAndEffectiveWeights(t *testing.T) {
	s := compileCapacity(t, nil, fakeCapacity{"cap.example.test.|192.0.2.1": 20})
	st := s.Services()
	require.Len(t, st, 3)
	east, west := st[0].Endpoints[0], st[0].Endpoints[1]
	assert.Equal(t, 50, east.Weight, "configured")
	require.NotNil(t, east.Capacity)
	assert.Equal(t, 20, east.Capacity.Percent)
	assert.InDelta(t, 10, east.EffectiveWeight(), 1e-9)
	assert.Equal(t, 1000, east.DrawWeight())
	require.NotNil(t, west.Capacity, "every endpoint of a capacity-aware service has a capacity")
	assert.Equal(t, "none", west.Capacity.Source)
	assert.Equal(t, 100, west.Capacity.Percent)
	assert.Equal(t, 5000, west.DrawWeight())
	plain := st[2].Endpoints[0]
	assert.Nil(t, plain.Capacity)
	assert.Equal(t, 50, plain.DrawWeight())
	assert.InDelta(t, 50, plain.EffectiveWeight(), 1e-9)
}

func TestExplainShowsConfiguredAndEffectiveWeights(t *testing.T) {
	s := compileCapacity(t, nil, fakeCapacity{"cap.example.test.|192.0.2.1": 20, "cap.example.test.|192.0.2.2": 100})
	e := s.Explain("cap.example.test.", dns.TypeA, Client{Addr: resolver, Bits: 32}, false)
	east, west, eu := e.Candidates[0], e.Candidates[1], e.Candidates[2]
	assert.Equal(t, 50, east.Weight)
	require.NotNil(t, east.EffectiveWeight)
	assert.InDelta(t, 10, *east.EffectiveWeight, 1e-9)
	assert.Equal(t, 20, east.Capacity.Percent)
	assert.InDelta(t, 16.7, east.Share, 0.05)
	assert.InDelta(t, 83.3, west.Share, 0.05)
	assert.Contains(t, east.Why, "effective weight 10 = weight 50 × ready 20 % (kubernetes: test)")
	assert.Contains(t, eu.Why, "weight 0 standby")
	assert.Contains(t, e.Notes, "capacity-aware weights (capacity.source kubernetes): each endpoint is drawn with its configured weight × its ready fraction, "+
		"changed at most once per 30s through the decision's brake; replica division keeps the configured weights")

	s = compileCapacity(t, nil, fakeCapacity{"cap.example.test.|192.0.2.1": 0, "cap.example.test.|192.0.2.2": 100})
	e = s.Explain("cap.example.test.", dns.TypeA, Client{Addr: resolver, Bits: 32}, false)
	assert.False(t, e.Candidates[0].Kept)
	assert.Contains(t, e.Candidates[0].Why, "ready 0 %: answered only when no endpoint of its group with ready capacity is available")

	plain := s.Explain("plain.example.test.", dns.TypeA, Client{Addr: resolver, Bits: 32}, false)
	assert.Nil(t, plain.Candidates[0].Capacity)
	assert.Nil(t, plain.Candidates[0].EffectiveWeight)
	assert.NotContains(t, plain.Candidates[0].Why, "effective")
}

func TestLookupOfACapacityAwareServiceAllocatesNothing(t *testing.T) {
	s := compileCapacity(t, nil, fakeCapacity{"cap.example.test.|192.0.2.1": 20})
	r := &Result{}
	client := Client{Addr: resolver, Bits: 32}
	allocs := testing.AllocsPerRun(1000, func() {
		r.Reset()
		s.Lookup("cap.example.test.", dns.TypeA, client, r)
	})
	assert.Zero(t, allocs)
}
