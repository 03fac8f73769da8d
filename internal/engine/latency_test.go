package engine

import (
	"net/netip"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/miekg/dns"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/meridian-gslb/meridian/internal/geo"
	"github.com/meridian-gslb/meridian/internal/latency"
)

const latencyFixture = `
zones:
  - apex: example.test
    nameservers: [{name: ns1.example.test, ipv4: [192.0.2.53]}]
clusters:
  - {name: east, region: us-east}
  - {name: west, region: us-west}
  - {name: eu, region: eu-west}
services:
  - name: lat.example.test
    strategy: latency
    latency:
      tolerance: 20%
      regions: [{region: eu-west, continents: [EU]}]
    health_check: {kind: tcp, port: 443}
    endpoints:
      - {address: 192.0.2.1, cluster: east}
      - {address: 192.0.2.4, cluster: east, weight: 300}
      - {address: 192.0.2.2, cluster: west}
      - {address: 192.0.2.3, cluster: eu}
      - {address: "2001:db8::1", cluster: west}
geo:
  networks:
    - {cidr: 10.1.0.0/16, region: us-east}
    - {cidr: 10.2.0.0/16, region: us-west}
    - {cidr: 10.3.0.0/16, country: DE, continent: EU}
    - {cidr: 10.9.0.0/16, region: ap-south, country: IN, continent: AS}
`

// rttTable is a latency view: region -> target -> RTT in ms.
func rttTable(now time.Time, table map[string]map[string]float64) *latency.View {
	var ms []latency.Measurement
	for region, row := range table {
		for target, v := range row {
			ms = append(ms, latency.Measurement{Prober: "p-" + region, Region: region, Key: latency.Key{Service: "lat.example.test.", Target: target},
				RTT: time.Duration(v * float64(time.Millisecond)), Samples: 3, At: now})
		}
	}
	return latency.Build(nil, ms, now, latency.DefaultParams(time.Second))
}

var latNow = time.Unix(1_800_000_000, 0)

// nearest: every region has one near site; us-east has two (.1 weight 100,
// .4 weight 300) within 20 % of each other.
func nearest() *latency.View {
	return rttTable(latNow, map[string]map[string]float64{
		"us-east": {"192.0.2.1": 5, "192.0.2.4": 5.5, "192.0.2.2": 60, "192.0.2.3": 90, "2001:db8::1": 60},
		"us-west": {"192.0.2.1": 60, "192.0.2.4": 61, "192.0.2.2": 4, "192.0.2.3": 140, "2001:db8::1": 4},
		"eu-west": {"192.0.2.1": 90, "192.0.2.4": 91, "192.0.2.2": 140, "192.0.2.3": 8, "2001:db8::1": 140},
	})
}

func compileLatency(t testing.TB, yaml string, lt LatencyTable, h Health) *Snapshot {
	t.Helper()
	d := desired(t, yaml)
	var nets []geo.Network
	for _, n := range d.Geo.Networks {
		nets = append(nets, geo.Network{Prefix: netip.MustParsePrefix(n.CIDR), Region: n.Region, Country: n.Country, Continent: n.Continent})
	}
	loc, err := geo.New(nets, "")
	require.NoError(t, err)
	s, err := Compile(d, Options{Health: h, Locator: loc, Latency: lt, Now: latNow})
	require.NoError(t, err)
	return s
}

func subnetClient(ip string) Client {
	return Client{Addr: netip.MustParseAddr(ip), Bits: 24, HasECS: true}
}

// answered returns the first answers of n lookups from client, as shares in percent.
func answered(s *Snapshot, client Client, n int) map[string]float64 {
	return shares(s, "lat.example.test.", n, client)
}

func keys(m map[string]float64) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

func TestLatencyAnswersTheNearestSitesOfTheClientsRegion(t *testing.T) {
	s := compileLatency(t, latencyFixture, nearest(), nil)
	for _, tc := range []struct {
		name   string
		client Client
		want   []string
	}{
		{"a client geo.networks places in us-east gets the sites within 20% of us-east's best", subnetClient("10.1.7.0"), []string{"192.0.2.1", "192.0.2.4"}},
		{"a client placed in us-west gets us-west's nearest site", subnetClient("10.2.7.0"), []string{"192.0.2.2"}},
		{"a client in Europe is mapped to eu-west by a latency.regions entry", subnetClient("10.3.7.0"), []string{"192.0.2.3"}},
		{"a client in a region without probers gets the median over the regions", subnetClient("10.9.7.0"), []string{"192.0.2.1", "192.0.2.2", "192.0.2.4"}},
		{"a client placed nowhere gets the median over the regions", Client{Addr: resolver, Bits: 32}, []string{"192.0.2.1", "192.0.2.2", "192.0.2.4"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			assert.Equal(t, tc.want, keys(answered(s, tc.client, 2000)))
		})
	}
	t.Run("inside the set the answers are drawn by weight", func(t *testing.T) {
		got := answered(s, subnetClient("10.1.7.0"), 20000)
		assert.InDelta(t, 25, got["192.0.2.1"], 1.5)
		assert.InDelta(t, 75, got["192.0.2.4"], 1.5)
	})
	t.Run("AAAA ranks the IPv6 endpoints among themselves", func(t *testing.T) {
		r := lookup(s, "lat.example.test.", dns.TypeAAAA, subnetClient("10.1.7.0"))
		assert.Equal(t, []string{"2001:db8::1"}, addrs(r.Answer))
	})
	t.Run("the ECS scope is the matched network", func(t *testing.T) {
		r := lookup(s, "lat.example.test.", dns.TypeA, subnetClient("10.2.7.0"))
		assert.Equal(t, 16, r.Scope)
		assert.Equal(t, "latency", r.Strategy)
	})
}

func TestLatencyCompilesOnePoolPerRegion(t *testing.T) {
	s := compileLatency(t, latencyFixture, nearest(), nil)
	svc := s.services[0]
	require.NotNil(t, svc.lat)
	assert.Equal(t, []string{"", "eu-west", "us-east", "us-west"}, svc.lat.regions, "bucket 0 is the median, then one per region with RTTs")
	assert.Len(t, svc.v4, 4)
	assert.Len(t, svc.v6, 4)
	assert.Equal(t, map[string]int{"EU": 1}, svc.lat.continent)
}

func TestLatencySelectionFollowsHealthAndMeasurements(t *testing.T) {
	east := subnetClient("10.1.7.0")
	for _, tc := range []struct {
		name  string
		yaml  string
		table *latency.View
		h     Health
		want  []string
	}{
		{"when the nearest sites are down the region gets its next nearest",
			latencyFixture, nearest(), fakeHealth{endpoints: map[string]State{"lat.example.test.|192.0.2.1": Down, "lat.example.test.|192.0.2.4": Down}},
			[]string{"192.0.2.2"}},
		{"a drained nearest cluster is ranked out the same way",
			strings.ReplaceAll(latencyFixture, "{name: east, region: us-east}", "{name: east, region: us-east, drain: true}"), nearest(), nil,
			[]string{"192.0.2.2"}},
		{"with no RTTs at all the service answers by weight",
			latencyFixture, nil, nil, []string{"192.0.2.1", "192.0.2.2", "192.0.2.3", "192.0.2.4"}},
		{"an endpoint measured from other regions but not this one is out",
			latencyFixture, rttTable(latNow, map[string]map[string]float64{
				"us-east": {"192.0.2.1": 50, "192.0.2.4": 50},
				"us-west": {"192.0.2.2": 1, "192.0.2.3": 1}}), nil,
			[]string{"192.0.2.1", "192.0.2.4"}},
		{"an endpoint no region has measured yet answers until it is",
			latencyFixture, rttTable(latNow, map[string]map[string]float64{
				"us-east": {"192.0.2.1": 5, "192.0.2.4": 500, "192.0.2.2": 500}}), nil,
			[]string{"192.0.2.1", "192.0.2.3"}},
		{"when every endpoint is down the answer fails open",
			latencyFixture, nearest(), fakeHealth{clusters: map[string]State{"east": Down, "west": Down, "eu": Down}},
			[]string{"192.0.2.1", "192.0.2.2", "192.0.2.3", "192.0.2.4"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var lt LatencyTable
			if tc.table != nil {
				lt = tc.table
			}
			s := compileLatency(t, tc.yaml, lt, tc.h)
			assert.Equal(t, tc.want, keys(answered(s, east, 4000)))
		})
	}
}

func TestLatencyExplainShowsTheRTTTable(t *testing.T) {
	s := compileLatency(t, latencyFixture, nearest(), nil)
	e := s.Explain("lat.example.test.", dns.TypeA, subnetClient("10.1.7.0"), true)
	require.NotNil(t, e.Latency)
	l := e.Latency
	assert.Equal(t, "us-east", l.Region)
	assert.Equal(t, "region", l.MatchedBy)
	assert.Equal(t, 20.0, l.TolerancePercent)
	assert.Equal(t, 5.0, l.BestMs)
	assert.Equal(t, 6.0, l.BoundMs)
	assert.Equal(t, []string{"eu-west", "us-east", "us-west"}, l.Regions)
	require.Len(t, l.RTTs, 4, "the A endpoints")
	byTarget := map[string]ExplainRTT{}
	for _, r := range l.RTTs {
		byTarget[r.Target] = r
	}
	assert.True(t, byTarget["192.0.2.4"].InTolerance)
	assert.Equal(t, 5.5, byTarget["192.0.2.4"].RTTMs)
	assert.False(t, byTarget["192.0.2.2"].InTolerance)
	assert.Equal(t, map[string]float64{"us-east": 60, "us-west": 4, "eu-west": 140}, byTarget["192.0.2.2"].ByRegionMs)
	assert.Contains(t, e.Bucket, "RTTs from region us-east (geo.networks places the client there)")
	assert.Contains(t, candidate(t, e, "192.0.2.1").Why, "the lowest RTT 5 ms from region us-east")
	assert.Contains(t, candidate(t, e, "192.0.2.4").Why, "RTT 5.5 ms from region us-east, within 20% of the best 5 ms (bound 6 ms)")
	assert.Equal(t, "RTT 60 ms from region us-east is beyond 20% of the best 5 ms (bound 6 ms)", candidate(t, e, "192.0.2.2").Why)
	assert.True(t, e.Client.UsedForAnswer)

	kept, answers := map[string]bool{}, map[string]bool{}
	keptAndAnswers(e, kept, answers)
	for a := range answered(s, subnetClient("10.1.7.0"), 2000) {
		assert.True(t, kept[a], "explain keeps what Lookup answers: %s", a)
	}
	assert.Len(t, kept, 2)

	eu := s.Explain("lat.example.test.", dns.TypeA, subnetClient("10.3.7.0"), true)
	assert.Equal(t, "continent", eu.Latency.MatchedBy)
	assert.Contains(t, eu.Bucket, "a latency.regions entry lists the client's continent")
	none := s.Explain("lat.example.test.", dns.TypeA, Client{}, false)
	assert.Equal(t, "median", none.Latency.MatchedBy)
	assert.Empty(t, none.Latency.Region)
	assert.Contains(t, none.Bucket, "the median RTT over eu-west, us-east, us-west")
}

func TestLatencyLookupAllocatesNothing(t *testing.T) {
	s := compileLatency(t, latencyFixture, nearest(), nil)
	r := &Result{}
	for _, client := range []Client{subnetClient("10.1.7.0"), subnetClient("10.3.7.0"), {Addr: resolver, Bits: 32}} {
		allocs := testing.AllocsPerRun(1000, func() {
			r.Reset()
			s.Lookup("lat.example.test.", dns.TypeA, client, r)
		})
		assert.Zero(t, allocs, "client %s", client.Addr)
	}
}

func BenchmarkLookupLatencyA(b *testing.B) {
	s := compileLatency(b, latencyFixture, nearest(), nil)
	r := &Result{}
	client := subnetClient("10.1.7.0")
	b.ReportAllocs()
	for b.Loop() {
		r.Reset()
		s.Lookup("lat.example.test.", dns.TypeA, client, r)
	}
}

func BenchmarkRespondLatencyA(b *testing.B) {
	s := compileLatency(b, latencyFixture, nearest(), nil)
	req := query("lat.example.test.", dns.TypeA, withECS("10.2.7.0/24", 0))
	rep := &Reply{}
	src := netip.MustParseAddr("198.51.100.7")
	b.ReportAllocs()
	for b.Loop() {
		s.Respond(req, src, 0, rep)
	}
}
