package engine

import (
	"net/netip"
	"testing"

	"github.com/miekg/dns"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/meridian-gslb/meridian/internal/config"
	"github.com/meridian-gslb/meridian/internal/geo"
	"github.com/meridian-gslb/meridian/internal/model"
)

const fixture = `
zones:
  - apex: example.test
    ttl: 60
    soa: {minimum: 30, ttl: 3600}
    nameservers:
      - {name: ns1.example.test, ipv4: [192.0.2.53], ipv6: ["2001:db8::53"]}
      - {name: ns.other.test}
  - apex: sub.example.test
    nameservers: [{name: ns1.example.test}]
clusters:
  - {name: east, region: us-east, continent: NA, country: US}
  - {name: west, region: us-west, continent: NA, country: US}
  - {name: eu, region: eu-west, continent: EU, country: DE}
  - {name: ap, region: ap-south, continent: AS, country: IN}
services:
  - name: w.example.test
    endpoints:
      - {address: 192.0.2.1, cluster: east, weight: 700}
      - {address: 192.0.2.2, cluster: eu, weight: 300}
      - {address: 192.0.2.3, cluster: ap, weight: 0}
      - {address: "2001:db8::1", cluster: east}
  - name: three.example.test
    max_answers: 2
    endpoints:
      - {address: 192.0.2.11, cluster: east, weight: 500}
      - {address: 192.0.2.12, cluster: west, weight: 300}
      - {address: 192.0.2.13, cluster: eu, weight: 200}
  - name: fo.example.test
    strategy: failover
    failover: {order: [east, west]}
    endpoints:
      - {address: 192.0.2.21, cluster: east}
      - {address: 192.0.2.22, cluster: west}
  - name: prio.example.test
    strategy: failover
    endpoints:
      - {address: 192.0.2.31, cluster: east, priority: 2}
      - {address: 192.0.2.32, cluster: west, priority: 1}
      - {address: 192.0.2.33, cluster: eu, priority: 1}
  - name: geo.example.test
    strategy: geo
    geo:
      rules: [{countries: [FR], clusters: [eu]}]
      default: [east]
    endpoints:
      - {address: 192.0.2.41, cluster: east}
      - {address: 192.0.2.42, cluster: west}
      - {address: 192.0.2.43, cluster: eu}
      - {address: 192.0.2.44, cluster: ap}
  - name: rr.example.test
    strategy: roundrobin
    max_answers: 3
    endpoints:
      - {address: 192.0.2.51, cluster: east, weight: 0}
      - {address: 192.0.2.52, cluster: west}
      - {address: 192.0.2.53, cluster: eu}
  - name: alias.example.test
    endpoints:
      - {cname: w.example.test, cluster: east}
  - name: out.example.test
    endpoints:
      - {cname: www.example.org, cluster: east}
  - name: dangling.example.test
    endpoints:
      - {cname: nothere.example.test, cluster: east}
  - name: deep.a.b.example.test
    endpoints: [{address: 192.0.2.61, cluster: east}]
  - name: nod.example.test
    when_all_down: nodata
    endpoints: [{address: 192.0.2.71, cluster: east, state: down}]
  - name: open.example.test
    ttl: 300
    endpoints:
      - {address: 192.0.2.81, cluster: east}
      - {address: 192.0.2.82, cluster: west, weight: 300}
      - {address: 192.0.2.83, cluster: eu, drain: true}
  - name: example.test
    endpoints: [{address: 192.0.2.99, cluster: east}]
geo:
  networks:
    - {cidr: 10.1.0.0/16, region: us-east, country: US, continent: NA}
    - {cidr: 10.3.0.0/16, region: eu-west, country: DE, continent: EU}
    - {cidr: 10.5.0.0/16, country: FR, continent: EU}
    - {cidr: 10.6.0.0/16, country: JP, continent: AS}
    - {cidr: 10.7.0.0/16, country: BR, continent: SA}
    - {cidr: 10.8.0.0/16, country: US, continent: NA}
`

// probedDown is h (nil: everything unknown) with the targets in down
// ("service|target") decided down by their probes: the fixtures' services
// whose every endpoint is down fail open (an endpoint forced down with
// state: down never would).
type probedDown struct {
	h    Health
	down map[string]bool
}

func (p probedDown) Endpoint(svc, target string) State {
	if p.down[svc+"|"+target] {
		return Down
	}
	if p.h == nil {
		return Unknown
	}
	return p.h.Endpoint(svc, target)
}

func (p probedDown) Cluster(name string) State {
	if p.h == nil {
		return Unknown
	}
	return p.h.Cluster(name)
}

// fixtureDown are the endpoints of fixture its tests see down by their probes.
var fixtureDown = map[string]bool{"open.example.test.|192.0.2.81": true, "open.example.test.|192.0.2.82": true}

// fakeHealth is a Health with fixed states.
type fakeHealth struct {
	endpoints map[string]State // service|target
	clusters  map[string]State
}

func (f fakeHealth) Endpoint(svc, target string) State { return f.endpoints[svc+"|"+target] }
func (f fakeHealth) Cluster(name string) State         { return f.clusters[name] }

func desired(t testing.TB, yaml string) *model.Desired {
	t.Helper()
	f, err := config.Parse("fixture.yaml", []byte(yaml))
	require.NoError(t, err)
	return &f.Desired
}

// locator locates clients by d's geo.networks.
func locator(t testing.TB, d *model.Desired) *geo.Locator {
	t.Helper()
	var nets []geo.Network
	for _, n := range d.Geo.Networks {
		nets = append(nets, geo.Network{Prefix: netip.MustParsePrefix(n.CIDR), Region: n.Region, Country: n.Country, Continent: n.Continent})
	}
	loc, err := geo.New(nets, "")
	require.NoError(t, err)
	return loc
}

func compile(t testing.TB, h Health) *Snapshot {
	t.Helper()
	d := desired(t, fixture)
	s, err := Compile(d, Options{Health: probedDown{h, fixtureDown}, Locator: locator(t, d)})
	require.NoError(t, err)
	return s
}

var resolver = netip.MustParseAddr("198.51.100.7")

func lookup(s *Snapshot, name string, qtype uint16, client Client) *Result {
	r := &Result{}
	if !client.Addr.IsValid() {
		client = Client{Addr: resolver, Bits: 32}
	}
	s.Lookup(name, qtype, client, r)
	return r
}

func addrs(rrs []dns.RR) []string {
	var out []string
	for _, rr := range rrs {
		switch v := rr.(type) {
		case *dns.A:
			out = append(out, v.A.String())
		case *dns.AAAA:
			out = append(out, v.AAAA.String())
		case *dns.CNAME:
			out = append(out, "CNAME "+v.Target)
		default:
			out = append(out, dns.TypeToString[rr.Header().Rrtype])
		}
	}
	return out
}

// shares counts the first answer of n lookups.
func shares(s *Snapshot, name string, n int, client Client) map[string]float64 {
	counts := map[string]int{}
	r := &Result{}
	for range n {
		r.Reset()
		s.Lookup(name, dns.TypeA, client, r)
		counts[addrs(r.Answer[:1])[0]]++
	}
	out := map[string]float64{}
	for k, c := range counts {
		out[k] = 100 * float64(c) / float64(n)
	}
	return out
}

func TestWeightedSharesFollowWeights(t *testing.T) {
	s := compile(t, nil)
	const n = 100_000
	tests := []struct {
		name  string
		qname string
		want  map[string]float64 // percent
	}{
		{"a 70/30 split with a weight-0 standby gives 70/30", "w.example.test.", map[string]float64{"192.0.2.1": 70, "192.0.2.2": 30}},
		{"a 50/30/20 split gives 50/30/20 for the first record", "three.example.test.", map[string]float64{"192.0.2.11": 50, "192.0.2.12": 30, "192.0.2.13": 20}},
		{"round robin gives equal shares and ignores weights", "rr.example.test.", map[string]float64{"192.0.2.51": 33.33, "192.0.2.52": 33.33, "192.0.2.53": 33.33}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := shares(s, tc.qname, n, Client{Addr: resolver, Bits: 32})
			require.Len(t, got, len(tc.want), "%v", got)
			for addr, want := range tc.want {
				assert.InDelta(t, want, got[addr], 1.5, "share of %s: %v", addr, got)
			}
		})
	}
}

func TestAnswerSelection(t *testing.T) {
	down := func(pairs ...string) fakeHealth {
		h := fakeHealth{endpoints: map[string]State{}, clusters: map[string]State{}}
		for _, p := range pairs {
			if p[0] == '@' {
				h.clusters[p[1:]] = Down
			} else {
				h.endpoints[p] = Down
			}
		}
		return h
	}
	eu := Client{Addr: netip.MustParseAddr("10.3.0.0"), Bits: 24, HasECS: true}
	fr := Client{Addr: netip.MustParseAddr("10.5.1.0"), Bits: 24, HasECS: true}
	us := Client{Addr: netip.MustParseAddr("10.1.2.3"), Bits: 32}
	jp := Client{Addr: netip.MustParseAddr("10.6.0.1"), Bits: 32}
	usNoRegion := Client{Addr: netip.MustParseAddr("10.8.0.1"), Bits: 32}
	br := Client{Addr: netip.MustParseAddr("10.7.0.1"), Bits: 32}
	unknown := Client{Addr: netip.MustParseAddr("172.16.0.1"), Bits: 32}
	tests := []struct {
		name     string
		health   Health
		qname    string
		qtype    uint16
		client   Client
		oneOf    []string // every answer record must be in this set
		count    int      // number of answer records
		failOpen bool
		rcode    int
	}{
		{"a weight-0 endpoint stays out while a weighted one is up", nil, "w.example.test.", dns.TypeA, Client{}, []string{"192.0.2.1", "192.0.2.2"}, 1, false, 0},
		{"a weight-0 endpoint answers when every weighted one is down", down("w.example.test.|192.0.2.1", "@eu"), "w.example.test.", dns.TypeA, Client{}, []string{"192.0.2.3"}, 1, false, 0},
		{"a down cluster takes its endpoints out", down("@east"), "w.example.test.", dns.TypeA, Client{}, []string{"192.0.2.2"}, 1, false, 0},
		{"AAAA comes from the IPv6 endpoints only", nil, "w.example.test.", dns.TypeAAAA, Client{}, []string{"2001:db8::1"}, 1, false, 0},
		{"max answers gives that many distinct records", nil, "three.example.test.", dns.TypeA, Client{}, []string{"192.0.2.11", "192.0.2.12", "192.0.2.13"}, 2, false, 0},
		{"failover answers from the first cluster in the order", nil, "fo.example.test.", dns.TypeA, Client{}, []string{"192.0.2.21"}, 1, false, 0},
		{"failover moves to the next cluster when the first is down", down("fo.example.test.|192.0.2.21"), "fo.example.test.", dns.TypeA, Client{}, []string{"192.0.2.22"}, 1, false, 0},
		{"failover by priority answers from the lowest priority", nil, "prio.example.test.", dns.TypeA, Client{}, []string{"192.0.2.32", "192.0.2.33"}, 2, false, 0}, // equal clusters: the pick and its fallback
		{"failover by priority moves on when the whole level is down", down("@west", "@eu"), "prio.example.test.", dns.TypeA, Client{}, []string{"192.0.2.31"}, 1, false, 0},
		{"failover with everything down fails open to the primary", down("@east", "@west"), "fo.example.test.", dns.TypeA, Client{}, []string{"192.0.2.21"}, 1, true, 0},
		{"geo sends a client to the cluster of its region", nil, "geo.example.test.", dns.TypeA, eu, []string{"192.0.2.43"}, 1, false, 0},
		{"geo applies a country rule before cluster tags", nil, "geo.example.test.", dns.TypeA, fr, []string{"192.0.2.43"}, 1, false, 0},
		{"geo picks the cluster of the client's region before its country", nil, "geo.example.test.", dns.TypeA, us, []string{"192.0.2.41"}, 1, false, 0},
		{"geo picks clusters of the client's country when it has no region", nil, "geo.example.test.", dns.TypeA, usNoRegion, []string{"192.0.2.41", "192.0.2.42"}, 2, false, 0}, // equal clusters: the pick and its fallback
		{"geo falls back to the continent", nil, "geo.example.test.", dns.TypeA, jp, []string{"192.0.2.44"}, 1, false, 0},
		{"geo sends an unplaced continent to the default", nil, "geo.example.test.", dns.TypeA, br, []string{"192.0.2.41"}, 1, false, 0},
		{"geo sends an unknown client to the default", nil, "geo.example.test.", dns.TypeA, unknown, []string{"192.0.2.41"}, 1, false, 0},
		{"geo moves to the default when the local cluster is down", down("@eu"), "geo.example.test.", dns.TypeA, eu, []string{"192.0.2.41"}, 1, false, 0},
		{"geo moves to any cluster when local and default are down", down("@eu", "@east"), "geo.example.test.", dns.TypeA, eu, []string{"192.0.2.42", "192.0.2.44"}, 2, false, 0}, // equal clusters: the pick and its fallback
		{"when every endpoint is down the answer fails open without drained ones", nil, "open.example.test.", dns.TypeA, Client{}, []string{"192.0.2.81", "192.0.2.82"}, 1, true, 0},
		{"when every endpoint is down nodata answers empty", nil, "nod.example.test.", dns.TypeA, Client{}, nil, 0, false, 0},
		{"a CNAME service returns the CNAME and the in-zone target's records", nil, "alias.example.test.", dns.TypeA, Client{}, []string{"CNAME w.example.test.", "192.0.2.1", "192.0.2.2"}, 2, false, 0},
		{"a CNAME query returns the CNAME alone", nil, "alias.example.test.", dns.TypeCNAME, Client{}, []string{"CNAME w.example.test."}, 1, false, 0},
		{"a CNAME to an outside name is not chased", nil, "out.example.test.", dns.TypeA, Client{}, []string{"CNAME www.example.org."}, 1, false, 0},
		{"a CNAME to a missing in-zone name gives NXDOMAIN with the CNAME", nil, "dangling.example.test.", dns.TypeA, Client{}, []string{"CNAME nothere.example.test."}, 1, false, dns.RcodeNameError},
		{"a service at the apex answers A", nil, "example.test.", dns.TypeA, Client{}, []string{"192.0.2.99"}, 1, false, 0},
		{"a nameserver host answers with its glue address", nil, "ns1.example.test.", dns.TypeAAAA, Client{}, []string{"2001:db8::53"}, 1, false, 0},
		{"names match whatever their case", nil, "W.Example.TEST.", dns.TypeA, Client{}, []string{"192.0.2.1", "192.0.2.2"}, 1, false, 0},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s := compile(t, tc.health)
			for range 50 {
				r := lookup(s, tc.qname, tc.qtype, tc.client)
				require.Equal(t, tc.rcode, r.Rcode)
				got := addrs(r.Answer)
				require.Len(t, got, tc.count, "%v", got)
				for _, a := range got {
					assert.Contains(t, tc.oneOf, a)
				}
				assert.Equal(t, tc.failOpen, r.FailOpen)
				if tc.count > 1 {
					seen := map[string]bool{}
					for _, a := range got {
						assert.False(t, seen[a], "duplicate %s in %v", a, got)
						seen[a] = true
					}
				}
			}
		})
	}
}

func TestFailOpenUsesTheFailOpenTTL(t *testing.T) {
	s := compile(t, nil)
	r := lookup(s, "open.example.test.", dns.TypeA, Client{})
	require.Len(t, r.Answer, 1)
	assert.True(t, r.FailOpen)
	assert.Equal(t, uint32(model.DefaultFailOpenTTL), r.Answer[0].Header().Ttl)
	r = lookup(s, "w.example.test.", dns.TypeA, Client{})
	assert.Equal(t, uint32(60), r.Answer[0].Header().Ttl, "zone ttl is the default")
}

func TestNegativeAnswers(t *testing.T) {
	s := compile(t, nil)
	tests := []struct {
		name  string
		qname string
		qtype uint16
		rcode int
		soa   bool
		zone  string
	}{
		{"a missing name is NXDOMAIN with the SOA", "nope.example.test.", dns.TypeA, dns.RcodeNameError, true, "example.test."},
		{"a name below a service is NXDOMAIN", "x.w.example.test.", dns.TypeA, dns.RcodeNameError, true, "example.test."},
		{"an existing name with another type is NODATA", "w.example.test.", dns.TypeMX, dns.RcodeSuccess, true, "example.test."},
		{"an empty non-terminal is NODATA", "b.example.test.", dns.TypeA, dns.RcodeSuccess, true, "example.test."},
		{"a deeper empty non-terminal is NODATA", "a.b.example.test.", dns.TypeA, dns.RcodeSuccess, true, "example.test."},
		{"a name in a more specific zone is answered from it", "x.sub.example.test.", dns.TypeA, dns.RcodeNameError, true, "sub.example.test."},
		{"a name outside every zone is REFUSED", "example.org.", dns.TypeA, dns.RcodeRefused, false, ""},
		{"the root is REFUSED", ".", dns.TypeNS, dns.RcodeRefused, false, ""},
		{"a name with an escaped dot is not split there", "w\\.example.test.", dns.TypeA, dns.RcodeRefused, false, ""},
		{"an escaped dot inside a label of our zone is NXDOMAIN", "a\\.b.example.test.", dns.TypeA, dns.RcodeNameError, true, "example.test."},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r := lookup(s, tc.qname, tc.qtype, Client{})
			assert.Equal(t, tc.rcode, r.Rcode)
			assert.Empty(t, r.Answer)
			assert.Equal(t, tc.zone, r.Zone)
			if tc.soa {
				require.Len(t, r.Ns, 1)
				soa := r.Ns[0].(*dns.SOA)
				assert.Equal(t, tc.zone, soa.Hdr.Name)
				assert.Equal(t, min(soa.Hdr.Ttl, soa.Minttl), soa.Hdr.Ttl)
			} else {
				assert.Empty(t, r.Ns)
			}
		})
	}
	r := lookup(s, "nope.example.test.", dns.TypeA, Client{})
	assert.Equal(t, uint32(30), r.Ns[0].Header().Ttl, "negative TTL = min(SOA TTL 3600, minimum 30)")
}

func TestApexRecords(t *testing.T) {
	s := compile(t, nil)
	r := lookup(s, "example.test.", dns.TypeNS, Client{})
	assert.ElementsMatch(t, []string{"NS", "NS"}, addrs(r.Answer))
	assert.ElementsMatch(t, []string{"192.0.2.53", "2001:db8::53"}, addrs(r.Extra), "glue for the in-zone nameserver only")
	r = lookup(s, "example.test.", dns.TypeSOA, Client{})
	require.Len(t, r.Answer, 1)
	assert.Equal(t, uint32(3600), r.Answer[0].Header().Ttl)
	r = lookup(s, "example.test.", dns.TypeANY, Client{})
	require.Len(t, r.Answer, 1)
	assert.Equal(t, "RFC8482", r.Answer[0].(*dns.HINFO).Cpu)
}

func TestGeoScopeIsTheMatchedNetwork(t *testing.T) {
	s := compile(t, nil)
	r := lookup(s, "geo.example.test.", dns.TypeA, Client{Addr: netip.MustParseAddr("10.3.7.0"), Bits: 24, HasECS: true})
	assert.Equal(t, 16, r.Scope)
	r = lookup(s, "geo.example.test.", dns.TypeA, Client{Addr: netip.MustParseAddr("172.16.7.0"), Bits: 24, HasECS: true})
	assert.Equal(t, 1, r.Scope, "an unplaced client gets the unplaced block around it: 128.0.0.0/1 holds no network")
	r = lookup(s, "geo.example.test.", dns.TypeA, Client{Addr: netip.MustParseAddr("10.17.7.0"), Bits: 24, HasECS: true})
	assert.Equal(t, 12, r.Scope, "10.16.0.0/12 holds no network")
	r = lookup(s, "w.example.test.", dns.TypeA, Client{Addr: netip.MustParseAddr("10.3.7.0"), Bits: 24, HasECS: true})
	assert.Equal(t, 0, r.Scope, "non-geo names have scope 0")
}

func TestLookupWeightedAAllocatesNothing(t *testing.T) {
	s := compile(t, nil)
	r := &Result{}
	client := Client{Addr: resolver, Bits: 32}
	allocs := testing.AllocsPerRun(1000, func() {
		r.Reset()
		s.Lookup("w.example.test.", dns.TypeA, client, r)
	})
	assert.Zero(t, allocs)
}

func TestLookupWithAFallbackAllocatesNothing(t *testing.T) {
	s := compile(t, nil)
	r := &Result{}
	client := Client{Addr: resolver, Bits: 32}
	s.Lookup("prio.example.test.", dns.TypeA, client, r)
	require.Len(t, r.Answer, 2, "two equal clusters: the pick and its fallback")
	allocs := testing.AllocsPerRun(1000, func() {
		r.Reset()
		s.Lookup("prio.example.test.", dns.TypeA, client, r)
	})
	assert.Zero(t, allocs)
}

func BenchmarkLookupFallbackA(b *testing.B) {
	s := compile(b, nil)
	r := &Result{}
	client := Client{Addr: resolver, Bits: 32}
	b.ReportAllocs()
	for b.Loop() {
		r.Reset()
		s.Lookup("prio.example.test.", dns.TypeA, client, r)
	}
}

func BenchmarkLookupWeightedA(b *testing.B) {
	s := compile(b, nil)
	r := &Result{}
	client := Client{Addr: resolver, Bits: 32}
	b.ReportAllocs()
	for b.Loop() {
		r.Reset()
		s.Lookup("w.example.test.", dns.TypeA, client, r)
	}
}

func BenchmarkLookupGeoA(b *testing.B) {
	s := compile(b, nil)
	r := &Result{}
	client := Client{Addr: netip.MustParseAddr("10.3.7.0"), Bits: 24, HasECS: true}
	b.ReportAllocs()
	for b.Loop() {
		r.Reset()
		s.Lookup("geo.example.test.", dns.TypeA, client, r)
	}
}
