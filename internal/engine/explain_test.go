package engine

import (
	"fmt"
	"math/rand/v2"
	"net"
	"net/netip"
	"strings"
	"testing"

	"github.com/miekg/dns"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/meridian-gslb/meridian/internal/config"
	"github.com/meridian-gslb/meridian/internal/geo"
)

const explainFixture = `
zones:
  - apex: x.test
    ttl: 60
    soa: {minimum: 30, ttl: 3600}
    nameservers: [{name: ns1.x.test, ipv4: [192.0.2.53]}]
clusters:
  - {name: east, region: us-east, continent: NA, country: US}
  - {name: west, region: us-west, continent: NA, country: US}
  - {name: eu, region: eu-west, continent: EU, country: DE}
  - {name: ap, region: ap-south, continent: AS, country: IN, drain: true}
services:
  - name: w.x.test
    endpoints:
      - {address: 192.0.2.1, cluster: east, weight: 700}
      - {address: 192.0.2.2, cluster: eu, weight: 300}
      - {address: 192.0.2.3, cluster: west, weight: 0}
      - {address: "2001:db8::1", cluster: east}
  - name: fo.x.test
    strategy: failover
    failover: {order: [east, west]}
    endpoints:
      - {address: 192.0.2.11, cluster: east}
      - {address: 192.0.2.12, cluster: west}
  - name: geo.x.test
    strategy: geo
    geo:
      rules: [{countries: [FR], clusters: [eu]}]
      default: [east]
    endpoints:
      - {address: 192.0.2.21, cluster: east}
      - {address: 192.0.2.22, cluster: west}
      - {address: 192.0.2.23, cluster: eu}
  - name: down.x.test
    endpoints:
      - {address: 192.0.2.31, cluster: east}
      - {address: 192.0.2.32, cluster: west}
  - name: drain.x.test
    endpoints:
      - {address: 192.0.2.41, cluster: east, drain: true}
      - {address: 192.0.2.42, cluster: west}
      - {address: 192.0.2.43, cluster: ap}
  - name: dead.x.test
    endpoints:
      - {address: 192.0.2.51, cluster: east}
      - {address: 192.0.2.52, cluster: west}
      - {address: 192.0.2.53, cluster: eu, drain: true}
  - name: rr.x.test
    strategy: roundrobin
    max_answers: 2
    endpoints:
      - {address: 192.0.2.61, cluster: east}
      - {address: 192.0.2.62, cluster: west}
      - {address: 192.0.2.63, cluster: eu}
  - name: nod.x.test
    when_all_down: nodata
    endpoints: [{address: 192.0.2.71, cluster: east, state: down}]
  - name: alias.x.test
    endpoints: [{cname: w.x.test, cluster: east}]
  - name: out.x.test
    endpoints: [{cname: www.example.org, cluster: east}]
  - name: dangling.x.test
    endpoints: [{cname: nothere.x.test, cluster: east}]
geo:
  networks:
    - {cidr: 10.1.0.0/16, region: us-east, country: US, continent: NA}
    - {cidr: 10.3.0.0/16, region: eu-west, country: DE, continent: EU}
    - {cidr: 10.5.0.0/16, country: FR, continent: EU}
`

// explainHealth is a Health with fixed states (key "service|target").
type explainHealth map[string]State

func (h explainHealth) Endpoint(svc, target string) State { return h[svc+"|"+target] }
func (h explainHealth) Cluster(name string) State         { return h["cluster|"+name] }

func explainSnapshot(t testing.TB, h Health, notes map[string]string) *Snapshot {
	t.Helper()
	f, err := config.Parse("explain.yaml", []byte(explainFixture))
	require.NoError(t, err)
	d := &f.Desired
	var nets []geo.Network
	for _, n := range d.Geo.Networks {
		nets = append(nets, geo.Network{Prefix: netip.MustParsePrefix(n.CIDR), Region: n.Region, Country: n.Country, Continent: n.Continent})
	}
	loc, err := geo.New(nets, "")
	require.NoError(t, err)
	s, err := Compile(d, Options{Health: probedDown{h, map[string]bool{"dead.x.test.|192.0.2.51": true, "dead.x.test.|192.0.2.52": true}}, Locator: loc, Notes: notes})
	require.NoError(t, err)
	return s
}

func ecsClientOf(cidr string) Client {
	p := netip.MustParsePrefix(cidr)
	return Client{Addr: p.Addr(), Bits: p.Bits(), HasECS: true}
}

func candidate(t *testing.T, e Explanation, target string) ExplainCandidate {
	t.Helper()
	for _, c := range e.Candidates {
		if c.Target == target {
			return c
		}
	}
	t.Fatalf("no candidate %s in %+v", target, e.Candidates)
	return ExplainCandidate{}
}

func TestExplain(t *testing.T) {
	health := explainHealth{"down.x.test.|192.0.2.31": Down, "down.x.test.|192.0.2.32": Up}
	notes := map[string]string{
		NoteKey("drain.x.test.", "192.0.2.41"): "maintenance CHG-42",
		NoteKey("", "ap"):                      "ap is being rebuilt",
	}
	s := explainSnapshot(t, health, notes)
	tests := []struct {
		name   string
		qname  string
		qtype  uint16
		client Client
		check  func(t *testing.T, e Explanation)
	}{
		{"a weighted service keeps both weighted endpoints with shares 70 and 30", "w.x.test", dns.TypeA, Client{}, func(t *testing.T, e Explanation) {
			assert.Equal(t, "x.test.", e.Zone)
			assert.Equal(t, "NOERROR", e.Rcode)
			assert.Equal(t, "weighted", e.Strategy)
			assert.Equal(t, "none", e.Client.Source)
			a, b := candidate(t, e, "192.0.2.1"), candidate(t, e, "192.0.2.2")
			assert.True(t, a.Kept)
			assert.True(t, b.Kept)
			assert.InDelta(t, 70, a.Share, 0.01)
			assert.InDelta(t, 30, b.Share, 0.01)
			standby := candidate(t, e, "192.0.2.3")
			assert.False(t, standby.Kept)
			assert.Contains(t, standby.Why, "weight 0 standby")
			v6 := candidate(t, e, "2001:db8::1")
			assert.False(t, v6.Kept)
			assert.Contains(t, v6.Why, "AAAA endpoint")
			assert.Equal(t, []string{"w.x.test. 60 IN A 192.0.2.1", "w.x.test. 60 IN A 192.0.2.2"}, e.Answer)
			assert.Equal(t, 1, e.Picks)
			assert.False(t, e.FailOpen)
		}},
		{"a failover service keeps the primary and drops the secondary as a lower priority group", "fo.x.test", dns.TypeA, Client{}, func(t *testing.T, e Explanation) {
			assert.Equal(t, "failover", e.Strategy)
			p, s := candidate(t, e, "192.0.2.11"), candidate(t, e, "192.0.2.12")
			assert.True(t, p.Kept)
			assert.InDelta(t, 100, p.Share, 0.01)
			assert.False(t, s.Kept)
			assert.Contains(t, s.Why, "lower priority group")
			assert.Zero(t, s.Share)
		}},
		{"a geo client in a mapped network is located by the custom map and gets its bucket", "geo.x.test", dns.TypeA, ecsClientOf("10.5.1.0/24"), func(t *testing.T, e Explanation) {
			assert.Equal(t, "ecs", e.Client.Source)
			assert.True(t, e.Client.Located)
			assert.Equal(t, "custom map", e.Client.LocatedBy)
			assert.Equal(t, "FR", e.Client.Country)
			assert.True(t, e.Client.UsedForAnswer)
			assert.Equal(t, 16, e.Client.Scope)
			assert.Contains(t, e.Bucket, "rule for country FR")
			assert.True(t, candidate(t, e, "192.0.2.23").Kept)
			east := candidate(t, e, "192.0.2.21")
			assert.False(t, east.Kept)
			assert.Contains(t, east.Why, "not in the client's geo bucket")
		}},
		{"a geo client outside every network is not located and gets the default bucket", "geo.x.test", dns.TypeA, ecsClientOf("100.64.0.0/24"), func(t *testing.T, e Explanation) {
			assert.False(t, e.Client.Located)
			assert.Empty(t, e.Client.LocatedBy)
			assert.Contains(t, e.Bucket, "default bucket")
			assert.True(t, candidate(t, e, "192.0.2.21").Kept)
			assert.False(t, candidate(t, e, "192.0.2.23").Kept)
		}},
		{"a client source address is located when no subnet is given", "geo.x.test", dns.TypeA, Client{Addr: netip.MustParseAddr("10.3.9.9"), Bits: 32}, func(t *testing.T, e Explanation) {
			assert.Equal(t, "client", e.Client.Source)
			assert.Equal(t, "eu-west", e.Client.Region)
			assert.Contains(t, e.Bucket, "clusters in region eu-west")
			assert.True(t, candidate(t, e, "192.0.2.23").Kept)
		}},
		{"an endpoint down by decision is dropped", "down.x.test", dns.TypeA, Client{}, func(t *testing.T, e Explanation) {
			d := candidate(t, e, "192.0.2.31")
			assert.False(t, d.Kept)
			assert.Equal(t, "down", d.State)
			assert.Contains(t, d.Why, "down by decision")
			up := candidate(t, e, "192.0.2.32")
			assert.True(t, up.Kept)
			assert.Equal(t, "up", up.State)
			assert.InDelta(t, 100, up.Share, 0.01)
		}},
		{"a drained endpoint is dropped with its administrative note", "drain.x.test", dns.TypeA, Client{}, func(t *testing.T, e Explanation) {
			d := candidate(t, e, "192.0.2.41")
			assert.False(t, d.Kept)
			assert.True(t, d.Drained)
			assert.Equal(t, "maintenance CHG-42", d.Note)
			assert.Contains(t, d.Why, "drained")
			assert.Contains(t, d.Why, "maintenance CHG-42")
			c := candidate(t, e, "192.0.2.43")
			assert.False(t, c.Kept)
			assert.Contains(t, c.Why, "cluster ap is drained")
			assert.Contains(t, c.Note, "ap is being rebuilt")
			assert.True(t, candidate(t, e, "192.0.2.42").Kept)
		}},
		{"when every endpoint is down the answer fails open without the drained one", "dead.x.test", dns.TypeA, Client{}, func(t *testing.T, e Explanation) {
			assert.True(t, e.FailOpen)
			assert.True(t, candidate(t, e, "192.0.2.51").Kept)
			assert.True(t, candidate(t, e, "192.0.2.52").Kept)
			assert.Contains(t, candidate(t, e, "192.0.2.51").Why, "fail-open")
			dr := candidate(t, e, "192.0.2.53")
			assert.False(t, dr.Kept)
			assert.Contains(t, dr.Why, "fail-open never answers an endpoint that is drained or forced down")
			assert.Contains(t, strings.Join(e.Notes, "\n"), "every endpoint is down, drained or forced down: fail-open answers the endpoints that are not drained or forced down (an operator's \"not this one\" holds) as if healthy, with TTL 5")
			assert.Contains(t, e.Answer, "dead.x.test. 5 IN A 192.0.2.51")
		}},
		{"when every endpoint is down and when_all_down is nodata the answer is empty", "nod.x.test", dns.TypeA, Client{}, func(t *testing.T, e Explanation) {
			assert.Empty(t, e.Answer)
			assert.NotEmpty(t, e.Authority)
			c := candidate(t, e, "192.0.2.71")
			assert.False(t, c.Kept)
			assert.Contains(t, c.Why, "nodata")
		}},
		{"round robin keeps every endpoint with an equal share and picks two", "rr.x.test", dns.TypeA, Client{}, func(t *testing.T, e Explanation) {
			for _, c := range e.Candidates {
				assert.True(t, c.Kept)
				assert.InDelta(t, 33.3, c.Share, 0.1)
			}
			assert.Equal(t, 2, e.Picks)
		}},
		{"a name that does not exist is NXDOMAIN", "nope.x.test", dns.TypeA, Client{}, func(t *testing.T, e Explanation) {
			assert.Equal(t, "NXDOMAIN", e.Rcode)
			assert.Equal(t, "x.test.", e.Zone)
			assert.Empty(t, e.Candidates)
			assert.Len(t, e.Authority, 1)
		}},
		{"a name outside our zones is REFUSED", "www.example.org", dns.TypeA, Client{}, func(t *testing.T, e Explanation) {
			assert.Equal(t, "REFUSED", e.Rcode)
			assert.Empty(t, e.Zone)
		}},
		{"a CNAME service is followed into its target inside the zone", "alias.x.test", dns.TypeA, Client{}, func(t *testing.T, e Explanation) {
			assert.Equal(t, "alias.x.test.", e.Service)
			assert.True(t, candidate(t, e, "w.x.test.").Kept)
			assert.Equal(t, []string{"alias.x.test. 60 IN CNAME w.x.test."}, e.Answer)
			require.Len(t, e.Chain, 1)
			assert.Equal(t, "w.x.test.", e.Chain[0].Service)
			assert.True(t, candidate(t, e.Chain[0], "192.0.2.1").Kept)
		}},
		{"a CNAME to a dangling name in the zone explains the NXDOMAIN", "dangling.x.test", dns.TypeA, Client{}, func(t *testing.T, e Explanation) {
			require.Len(t, e.Chain, 1)
			assert.Equal(t, "NXDOMAIN", e.Chain[0].Rcode)
			assert.Contains(t, strings.Join(e.Notes, "\n"), "gives NXDOMAIN")
		}},
		{"a CNAME out of our zones is left to the resolver", "out.x.test", dns.TypeA, Client{}, func(t *testing.T, e Explanation) {
			assert.Empty(t, e.Chain)
			assert.Contains(t, strings.Join(e.Notes, "\n"), "outside our zones")
		}},
		{"a TXT query at a service name is NODATA", "w.x.test", dns.TypeTXT, Client{}, func(t *testing.T, e Explanation) {
			assert.Equal(t, "NOERROR", e.Rcode)
			assert.Empty(t, e.Answer)
			assert.Contains(t, strings.Join(e.Notes, "\n"), "NODATA")
		}},
		{"the apex SOA is answered as is", "X.TEST", dns.TypeSOA, Client{}, func(t *testing.T, e Explanation) {
			require.Len(t, e.Answer, 1)
			assert.Contains(t, e.Answer[0], "SOA")
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			tc.check(t, s.Explain(tc.qname, tc.qtype, tc.client, tc.client.HasECS))
		})
	}
}

func TestExplainFailOpenWhenEveryEndpointIsDownByDecision(t *testing.T) {
	s := explainSnapshot(t, explainHealth{"down.x.test.|192.0.2.31": Down, "down.x.test.|192.0.2.32": Down}, nil)
	e := s.Explain("down.x.test.", dns.TypeA, Client{}, false)
	assert.True(t, e.FailOpen)
	assert.Contains(t, e.Notes, "every endpoint is down: fail-open answers the endpoints as if healthy, with TTL 5")
	for _, c := range e.Candidates {
		assert.True(t, c.Kept, c.Target)
		assert.Equal(t, "down", c.State)
		assert.InDelta(t, 50, c.Share, 0.01)
	}
	assert.Equal(t, []string{"down.x.test. 5 IN A 192.0.2.31", "down.x.test. 5 IN A 192.0.2.32"}, e.Answer)
}

// keptAndAnswers collects the kept targets and possible records of an
// explanation and its chain.
func keptAndAnswers(e Explanation, kept, answers map[string]bool) {
	for _, c := range e.Candidates {
		if c.Kept {
			kept[strings.ToLower(c.Target)] = true
		}
	}
	for _, a := range e.Answer {
		answers[a] = true
	}
	for _, n := range e.Chain {
		keptAndAnswers(n, kept, answers)
	}
}

func TestExplainAgreesWithRespond(t *testing.T) {
	health := explainHealth{"down.x.test.|192.0.2.31": Down, "cluster|west": Down}
	s := explainSnapshot(t, health, nil)
	names := []string{"w.x.test.", "fo.x.test.", "geo.x.test.", "down.x.test.", "drain.x.test.", "dead.x.test.", "rr.x.test.",
		"nod.x.test.", "alias.x.test.", "out.x.test.", "dangling.x.test.", "ns1.x.test.", "x.test.", "nope.x.test."}
	nets := []string{"10.1.0.0", "10.3.0.0", "10.5.0.0", "100.64.0.0", "198.51.100.0"}
	rng := rand.New(rand.NewPCG(1, 2))
	for i := range 2000 {
		name := names[rng.IntN(len(names))]
		qtype := []uint16{dns.TypeA, dns.TypeAAAA, dns.TypeCNAME}[rng.IntN(3)]
		base := netip.MustParseAddr(nets[rng.IntN(len(nets))]).As4()
		base[2], base[3] = byte(rng.IntN(256)), byte(rng.IntN(256))
		addr := netip.AddrFrom4(base)
		req := new(dns.Msg)
		req.SetQuestion(name, qtype)
		var client Client
		if rng.IntN(2) == 0 {
			pfx := netip.PrefixFrom(addr, 24).Masked()
			req.SetEdns0(1232, false)
			req.IsEdns0().Option = append(req.IsEdns0().Option, &dns.EDNS0_SUBNET{Code: dns.EDNS0SUBNET, Family: 1, SourceNetmask: 24, Address: net.IP(pfx.Addr().AsSlice())})
			client = Client{Addr: pfx.Addr(), Bits: 24, HasECS: true}
			addr = netip.MustParseAddr("127.0.0.1")
		} else {
			client = Client{Addr: addr, Bits: 32}
		}
		rep := &Reply{}
		s.Respond(req, addr, 0, rep)
		e := s.Explain(name, qtype, client, client.HasECS)
		assert.Equal(t, dns.RcodeToString[rep.Msg.Rcode], rcodeWithChain(e), "query %d %s %s", i, name, dns.TypeToString[qtype])
		kept, answers := map[string]bool{}, map[string]bool{}
		keptAndAnswers(e, kept, answers)
		for _, rr := range rep.Msg.Answer {
			msg := fmt.Sprintf("query %d %s %s from %s: %s", i, name, dns.TypeToString[qtype], client.Addr, rr)
			assert.True(t, answers[present(rr)], msg)
			switch r := rr.(type) {
			case *dns.A:
				if len(e.Candidates) > 0 || len(e.Chain) > 0 {
					assert.True(t, kept[r.A.String()], msg)
				}
			case *dns.CNAME:
				assert.True(t, kept[r.Target], msg)
			}
		}
	}
}

// rcodeWithChain is the rcode of a reply: a CNAME chain to a missing name
// gives NXDOMAIN (the fixture's CNAMEs have one target each).
func rcodeWithChain(e Explanation) string {
	for _, n := range e.Chain {
		if r := rcodeWithChain(n); r != "NOERROR" {
			return r
		}
	}
	return e.Rcode
}
