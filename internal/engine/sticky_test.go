package engine

import (
	"fmt"
	"maps"
	"math/rand/v2"
	"net/netip"
	"slices"
	"strings"
	"testing"

	"github.com/miekg/dns"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/meridian-gslb/meridian/internal/geo"
)

const stickyFixture = `
zones:
  - apex: s.test
    nameservers: [{name: ns1.s.test, ipv4: [192.0.2.53]}]
clusters:
  - {name: east, region: us-east, continent: NA, country: US}
  - {name: west, region: us-west, continent: NA, country: US}
  - {name: eu, region: eu-west, continent: EU, country: DE}
services:
  - name: w.s.test
    sticky: subnet
    endpoints:
      - {address: 192.0.2.1, cluster: east, weight: %d}
      - {address: 192.0.2.2, cluster: eu, weight: %d}
      - {address: "2001:db8::1", cluster: east, weight: 700}
      - {address: "2001:db8::2", cluster: eu, weight: 300}
  - name: three.s.test
    sticky: subnet
    max_answers: 2
    endpoints:
      - {address: 192.0.2.11, cluster: east, weight: 500}
      - {address: 192.0.2.12, cluster: west, weight: 300}
      - {address: 192.0.2.13, cluster: eu, weight: 200}
  - name: all.s.test
    sticky: subnet
    max_answers: 3
    endpoints:
      - {address: 192.0.2.11, cluster: east, weight: 500}
      - {address: 192.0.2.12, cluster: west, weight: 300}
      - {address: 192.0.2.13, cluster: eu, weight: 200}
  - name: rr.s.test
    sticky: subnet
    strategy: roundrobin
    endpoints:
      - {address: 192.0.2.21, cluster: east, weight: 900}
      - {address: 192.0.2.22, cluster: west}
      - {address: 192.0.2.23, cluster: eu}
  - name: fo.s.test
    sticky: subnet
    strategy: failover
    endpoints:
      - {address: 192.0.2.31, cluster: east, priority: 1, weight: 700}
      - {address: 192.0.2.32, cluster: west, priority: 1, weight: 300}
      - {address: 192.0.2.33, cluster: eu, priority: 2}
  - name: geo.s.test
    sticky: subnet
    strategy: geo
    geo:
      rules: [{continents: [EU], clusters: [eu]}]
      default: [east, west]
    endpoints:
      - {address: 192.0.2.41, cluster: east, weight: 700}
      - {address: 192.0.2.42, cluster: west, weight: 300}
      - {address: 192.0.2.43, cluster: eu}
      - {address: 192.0.2.44, cluster: eu}
  - name: dead.s.test
    sticky: subnet
    endpoints:
      - {address: 192.0.2.51, cluster: east, weight: 700}
      - {address: 192.0.2.52, cluster: west, weight: 300}
  - name: alias.s.test
    sticky: subnet
    endpoints:
      - {cname: a.example.org, cluster: east, weight: 700}
      - {cname: b.example.org, cluster: west, weight: 300}
  - name: inzone.s.test
    sticky: subnet
    endpoints:
      - {cname: w.s.test, cluster: east}
      - {cname: three.s.test, cluster: west}
  - name: one.s.test
    sticky: subnet
    endpoints:
      - {address: 192.0.2.61, cluster: east}
  - name: plain.s.test
    endpoints:
      - {address: 192.0.2.71, cluster: east, weight: 700}
      - {address: 192.0.2.72, cluster: west, weight: 300}
geo:
  networks:
    - {cidr: 10.3.0.0/16, region: eu-west, country: DE, continent: EU}
    - {cidr: 10.4.0.16/28, region: eu-west, country: DE, continent: EU}
`

// stickySnapshot compiles the sticky fixture with w.s.test's IPv4 weights
// a and b. Every call parses and compiles afresh, like another node would.
func stickySnapshot(t testing.TB, a, b int, h Health) *Snapshot {
	t.Helper()
	d := desired(t, fmt.Sprintf(stickyFixture, a, b))
	var nets []geo.Network
	for _, n := range d.Geo.Networks {
		nets = append(nets, geo.Network{Prefix: netip.MustParsePrefix(n.CIDR), Region: n.Region, Country: n.Country, Continent: n.Continent})
	}
	loc, err := geo.New(nets, "")
	require.NoError(t, err)
	s, err := Compile(d, Options{Health: probedDown{h, map[string]bool{"dead.s.test.|192.0.2.51": true, "dead.s.test.|192.0.2.52": true}}, Locator: loc})
	require.NoError(t, err)
	return s
}

// subnets returns n distinct random client networks of a family (fixed seed),
// as ECS clients: /24 for IPv4, /56 for IPv6.
func subnets(n int, v6 bool) []Client {
	rng := rand.New(rand.NewPCG(16, 24))
	seen := map[netip.Addr]bool{}
	out := make([]Client, 0, n)
	for len(out) < n {
		var c Client
		if v6 {
			var b [16]byte
			b[0], b[1] = 0x20, 0x01
			for i := 2; i < 7; i++ {
				b[i] = byte(rng.IntN(256))
			}
			c = Client{Addr: netip.AddrFrom16(b), Bits: 56, HasECS: true}
		} else {
			c = Client{Addr: netip.AddrFrom4([4]byte{byte(1 + rng.IntN(223)), byte(rng.IntN(256)), byte(rng.IntN(256)), 0}), Bits: 24, HasECS: true}
		}
		if !seen[c.Addr] {
			seen[c.Addr] = true
			out = append(out, c)
		}
	}
	return out
}

// answerOf is the answer (every record, in order) a client gets.
func answerOf(s *Snapshot, name string, qtype uint16, c Client) string {
	r := &Result{}
	s.Lookup(name, qtype, c, r)
	return strings.Join(addrs(r.Answer), " ")
}

// firstShares is the percentage of clients whose first record is each target.
func firstShares(s *Snapshot, name string, qtype uint16, clients []Client) map[string]float64 {
	counts := map[string]int{}
	r := &Result{}
	for _, c := range clients {
		r.Reset()
		s.Lookup(name, qtype, c, r)
		counts[addrs(r.Answer[:1])[0]]++
	}
	out := map[string]float64{}
	for k, n := range counts {
		out[k] = 100 * float64(n) / float64(len(clients))
	}
	return out
}

func TestStickySharesAcrossSubnetsFollowWeights(t *testing.T) {
	s := stickySnapshot(t, 700, 300, nil)
	v4, v6 := subnets(10_000, false), subnets(10_000, true)
	tests := []struct {
		name    string
		qname   string
		qtype   uint16
		clients []Client
		want    map[string]float64 // percent of first records
	}{
		{"10 000 IPv4 subnets at 70/30 split 70/30", "w.s.test.", dns.TypeA, v4, map[string]float64{"192.0.2.1": 70, "192.0.2.2": 30}},
		{"10 000 IPv6 /56 networks at 70/30 split 70/30", "w.s.test.", dns.TypeAAAA, v6, map[string]float64{"2001:db8::1": 70, "2001:db8::2": 30}},
		{"the first of two answers follows 50/30/20", "three.s.test.", dns.TypeA, v4, map[string]float64{"192.0.2.11": 50, "192.0.2.12": 30, "192.0.2.13": 20}},
		{"round robin gives equal shares whatever the weights", "rr.s.test.", dns.TypeA, v4, map[string]float64{"192.0.2.21": 33.33, "192.0.2.22": 33.33, "192.0.2.23": 33.33}},
		{"failover splits 70/30 inside the active group", "fo.s.test.", dns.TypeA, v4, map[string]float64{"192.0.2.31": 70, "192.0.2.32": 30}},
		{"geo splits 70/30 inside the default bucket", "geo.s.test.", dns.TypeA, v4, map[string]float64{"192.0.2.41": 70, "192.0.2.42": 30}},
		{"a fail-open pool splits 70/30 too", "dead.s.test.", dns.TypeA, v4, map[string]float64{"192.0.2.51": 70, "192.0.2.52": 30}},
		{"a CNAME service splits 70/30", "alias.s.test.", dns.TypeCNAME, v4, map[string]float64{"CNAME a.example.org.": 70, "CNAME b.example.org.": 30}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := firstShares(s, tc.qname, tc.qtype, tc.clients)
			require.Len(t, got, len(tc.want), "%v", got)
			for target, want := range tc.want {
				assert.InDelta(t, want, got[target], 1.5, "share of %s: %v", target, got)
			}
			t.Logf("%s over %d networks: %v", tc.qname, len(tc.clients), got)
		})
	}
}

func TestStickyGeoBucketsStayInsideTheirClusters(t *testing.T) {
	s := stickySnapshot(t, 700, 300, nil)
	got := map[string]int{}
	for i := range 256 {
		got[answerOf(s, "geo.s.test.", dns.TypeA, ecsClientOf(fmt.Sprintf("10.3.%d.0/24", i)))]++
	}
	assert.Equal(t, []string{"192.0.2.43", "192.0.2.44"}, slices.Sorted(maps.Keys(got)),
		"European networks get the eu cluster's endpoints only, each some of them: %v", got)
}

func TestStickyAnswersDoNotChangeWhileNothingChanges(t *testing.T) {
	a, b := stickySnapshot(t, 700, 300, nil), stickySnapshot(t, 700, 300, nil)
	names := []struct {
		qname string
		qtype uint16
	}{
		{"w.s.test.", dns.TypeA}, {"w.s.test.", dns.TypeAAAA}, {"three.s.test.", dns.TypeA}, {"all.s.test.", dns.TypeA},
		{"rr.s.test.", dns.TypeA}, {"fo.s.test.", dns.TypeA}, {"geo.s.test.", dns.TypeA}, {"dead.s.test.", dns.TypeA}, {"alias.s.test.", dns.TypeCNAME},
	}
	tests := []struct {
		name  string
		check func(t *testing.T, q string, qtype uint16, c Client) (same bool)
	}{
		{"the same network gets the same answer on every lookup", func(t *testing.T, q string, qtype uint16, c Client) bool {
			first := answerOf(a, q, qtype, c)
			for range 5 {
				if answerOf(a, q, qtype, c) != first {
					return false
				}
			}
			return true
		}},
		{"two independently compiled snapshots (two nodes) give a network the same answer", func(t *testing.T, q string, qtype uint16, c Client) bool {
			return answerOf(a, q, qtype, c) == answerOf(b, q, qtype, c)
		}},
		{"every address of a network gets the network's answer", func(t *testing.T, q string, qtype uint16, c Client) bool {
			var addr netip.Addr
			if c.Addr.Is4() {
				b := c.Addr.As4()
				b[3] = 200
				addr = netip.AddrFrom4(b)
			} else {
				b := c.Addr.As16()
				b[7], b[15] = 0x99, 0xc8 // host bits of a /56
				addr = netip.AddrFrom16(b)
			}
			return answerOf(a, q, qtype, c) == answerOf(a, q, qtype, Client{Addr: addr, Bits: addr.BitLen()})
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			same, total := 0, 0
			for _, n := range names {
				for _, c := range subnets(2000, n.qtype == dns.TypeAAAA) {
					total++
					if tc.check(t, n.qname, n.qtype, c) {
						same++
					}
				}
			}
			assert.Equal(t, total, same, "%d of %d lookups kept their answer", same, total)
			t.Logf("%d/%d (%.1f%%) kept their answer", same, total, 100*float64(same)/float64(total))
		})
	}
}

// moved counts the clients whose first record differs between two snapshots,
// by (before → after) target.
func moved(before, after *Snapshot, name string, clients []Client) (int, map[string]int) {
	n, how := 0, map[string]int{}
	for _, c := range clients {
		x, y := answerOf(before, name, dns.TypeA, c), answerOf(after, name, dns.TypeA, c)
		if x != y {
			n++
			how[x+" → "+y]++
		}
	}
	return n, how
}

func TestStickyWeightChangesMoveTheMinimumOfNetworks(t *testing.T) {
	clients := subnets(10_000, false)
	base := stickySnapshot(t, 700, 300, nil)
	tests := []struct {
		name    string
		a, b    int
		min     float64 // percent that must move (the change of share)
		max     float64 // percent that may move
		onlyHow string  // the one direction networks may move in
	}{
		{"70/30 to 60/40 moves about 10% of networks, all from the lowered endpoint", 600, 400, 8.5, 11, "192.0.2.1 → 192.0.2.2"},
		{"lowering 70 to 60 against 30 moves about 3.3% of networks, all from the lowered endpoint", 600, 300, 2, 4.5, "192.0.2.1 → 192.0.2.2"},
		{"raising 30 to 40 against 70 moves about 6.4% of networks, all to the raised endpoint", 700, 400, 5, 8, "192.0.2.1 → 192.0.2.2"},
		{"unchanged weights move nothing", 700, 300, 0, 0, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			n, how := moved(base, stickySnapshot(t, tc.a, tc.b, nil), "w.s.test.", clients)
			pct := 100 * float64(n) / float64(len(clients))
			assert.GreaterOrEqual(t, pct, tc.min, "%v", how)
			assert.LessOrEqual(t, pct, tc.max, "%v", how)
			if tc.onlyHow != "" {
				assert.Equal(t, map[string]int{tc.onlyHow: n}, how)
			}
			t.Logf("70/30 → %d/%d: %d of %d networks moved (%.2f%%)", tc.a/10, tc.b/10, n, len(clients), pct)
		})
	}
}

func TestStickyHealthChangesMoveOnlyTheNetworksOfTheEndpoint(t *testing.T) {
	clients := subnets(10_000, false)
	up := stickySnapshot(t, 700, 300, nil)
	tests := []struct {
		name   string
		qname  string
		down   string
		health Health
	}{
		{"one of three endpoints down moves only the networks that had it (max_answers 1 of a failover group)", "fo.s.test.", "192.0.2.32",
			fakeHealth{endpoints: map[string]State{"fo.s.test.|192.0.2.32": Down}}},
		{"one of three endpoints down moves only the networks that had it among their two records", "three.s.test.", "192.0.2.12",
			fakeHealth{endpoints: map[string]State{"three.s.test.|192.0.2.12": Down}}},
		{"a cluster going down moves only the networks of its endpoint", "three.s.test.", "192.0.2.11",
			fakeHealth{clusters: map[string]State{"east": Down}}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			down := stickySnapshot(t, 700, 300, tc.health)
			had, kept, movedAway := 0, 0, 0
			for _, c := range clients {
				before, after := answerOf(up, tc.qname, dns.TypeA, c), answerOf(down, tc.qname, dns.TypeA, c)
				require.NotContains(t, after, tc.down)
				if !strings.Contains(before, tc.down) {
					require.Equal(t, before, after, "a network without %s keeps its answer", tc.down)
					kept++
					continue
				}
				had++
				if before != after {
					movedAway++
				}
			}
			assert.Equal(t, had, movedAway)
			t.Logf("%s: %d of %d networks had %s and moved (%.1f%%), %d kept their answer",
				tc.qname, had, len(clients), tc.down, 100*float64(had)/float64(len(clients)), kept)
			back := stickySnapshot(t, 700, 300, nil)
			n, _ := moved(up, back, tc.qname, clients)
			assert.Zero(t, n, "when the endpoint returns every network gets its old answer back")
		})
	}
}

func TestStickyMaxAnswersGivesDistinctRecordsInScoreOrder(t *testing.T) {
	s := stickySnapshot(t, 700, 300, nil)
	tests := []struct {
		name  string
		qname string
		want  int
	}{
		{"max_answers 2 of 3 gives two distinct records", "three.s.test.", 2},
		{"max_answers 3 of 3 gives every record, in the network's order", "all.s.test.", 3},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			orders := map[string]bool{}
			for _, c := range subnets(10_000, false) {
				got := strings.Fields(answerOf(s, tc.qname, dns.TypeA, c))
				require.Len(t, got, tc.want)
				assert.Len(t, slices.Compact(slices.Sorted(slices.Values(got))), tc.want, "distinct: %v", got)
				orders[strings.Join(got, " ")] = true
			}
			assert.Len(t, orders, 6, "every order of the records occurs across networks")
		})
	}
	// The two records of three.s.test share the first's distribution with
	// the random draw: the pair (a, b) appears w_a/W × w_b/(W−w_a).
	got := map[string]int{}
	clients := subnets(10_000, false)
	for _, c := range clients {
		got[answerOf(s, "three.s.test.", dns.TypeA, c)]++
	}
	want := map[string]float64{ // percent
		"192.0.2.11 192.0.2.12": 50 * 30.0 / 50, "192.0.2.11 192.0.2.13": 50 * 20.0 / 50,
		"192.0.2.12 192.0.2.11": 30 * 50.0 / 70, "192.0.2.12 192.0.2.13": 30 * 20.0 / 70,
		"192.0.2.13 192.0.2.11": 20 * 50.0 / 80, "192.0.2.13 192.0.2.12": 20 * 30.0 / 80,
	}
	for pair, p := range want {
		assert.InDelta(t, p, 100*float64(got[pair])/float64(len(clients)), 1.5, "pair %s: %v", pair, got)
	}
}

func TestStickyECSScope(t *testing.T) {
	s := stickySnapshot(t, 700, 300, nil)
	tests := []struct {
		name   string
		qname  string
		qtype  uint16
		client Client
		want   int
	}{
		{"an IPv4 subnet gets scope 24", "w.s.test.", dns.TypeA, ecsClientOf("203.0.113.0/24"), 24},
		{"a /16 subnet still gets scope 24: the answer depends on the /24", "w.s.test.", dns.TypeA, ecsClientOf("203.0.0.0/16"), 24},
		{"an IPv6 subnet gets scope 56", "w.s.test.", dns.TypeAAAA, ecsClientOf("2001:db8:1:200::/56"), 56},
		{"a geo network shorter than /24 is raised to 24", "geo.s.test.", dns.TypeA, ecsClientOf("10.3.7.0/24"), 24},
		{"a geo network longer than /24 keeps its scope", "geo.s.test.", dns.TypeA, ecsClientOf("10.4.0.16/32"), 28},
		{"a pool of one record does not depend on the subnet: scope 0", "one.s.test.", dns.TypeA, ecsClientOf("203.0.113.0/24"), 0},
		{"a service without sticky keeps scope 0", "plain.s.test.", dns.TypeA, ecsClientOf("203.0.113.0/24"), 0},
		{"a source address without ECS sets no scope", "w.s.test.", dns.TypeA, Client{Addr: netip.MustParseAddr("203.0.113.9"), Bits: 32}, 0},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r := &Result{}
			s.Lookup(tc.qname, tc.qtype, tc.client, r)
			require.NotEmpty(t, r.Answer)
			assert.Equal(t, tc.want, r.Scope)
		})
	}
	m, _ := respond(s, query("w.s.test.", dns.TypeA, withECS("203.0.113.0/24", 0)))
	require.NotNil(t, ecsOf(m))
	assert.Equal(t, uint8(24), ecsOf(m).SourceScope, "the reply carries scope 24")
}

func TestStickyExplainAgreesWithLookup(t *testing.T) {
	s := stickySnapshot(t, 700, 300, fakeHealth{endpoints: map[string]State{"three.s.test.|192.0.2.13": Down}})
	names := []string{"w.s.test.", "three.s.test.", "all.s.test.", "rr.s.test.", "fo.s.test.", "geo.s.test.", "dead.s.test.", "one.s.test."}
	rng := rand.New(rand.NewPCG(3, 4))
	clients := subnets(1000, false)
	for i, c := range clients {
		if i%2 == 1 {
			b := c.Addr.As4()
			b[3] = byte(rng.IntN(256))
			clients[i] = Client{Addr: netip.AddrFrom4(b), Bits: 32} // a source address, no ECS
		}
	}
	clients = append(clients, Client{}) // no address at all
	for _, name := range names {
		for _, c := range clients {
			r := &Result{}
			s.Lookup(name, dns.TypeA, c, r)
			e := s.Explain(name, dns.TypeA, c, c.HasECS)
			require.NotNil(t, e.Sticky, name)
			assert.Equal(t, presentAll(r.Answer), e.Sticky.Answer, "%s from %v", name, c)
			assert.Equal(t, r.Scope, e.Client.Scope, "%s from %v", name, c)
			var ranked []ExplainCandidate
			for _, ec := range e.Candidates {
				if ec.Rank > 0 {
					ranked = append(ranked, ec)
				}
			}
			slices.SortFunc(ranked, func(a, b ExplainCandidate) int { return a.Rank - b.Rank })
			for j, rr := range r.Answer {
				assert.True(t, rrTarget(rr, ranked[j].Target), "%s from %v: answer %d is rank %d", name, c, j, j+1)
				if j > 0 {
					assert.GreaterOrEqual(t, ranked[j-1].Score, ranked[j].Score)
				}
			}
		}
	}
}

func TestStickyExplanation(t *testing.T) {
	s := stickySnapshot(t, 700, 300, nil)
	tests := []struct {
		name   string
		qname  string
		client Client
		check  func(t *testing.T, e Explanation)
	}{
		{"an ECS subnet names its /24, the scope and the winner", "w.s.test.", ecsClientOf("203.0.113.0/24"), func(t *testing.T, e Explanation) {
			assert.Equal(t, "203.0.113.0/24", e.Sticky.Network)
			assert.Equal(t, 24, e.Client.Scope)
			notes := strings.Join(e.Notes, "\n")
			assert.Contains(t, notes, "sticky: subnet: the answer is keyed on the client's network 203.0.113.0/24 (of the ECS subnet)")
			assert.Contains(t, notes, "weighted rendezvous hashing")
			assert.Contains(t, notes, "ECS scope at least /24")
			require.Len(t, e.Sticky.Answer, 1)
			a, b := candidate(t, e, "192.0.2.1"), candidate(t, e, "192.0.2.2")
			assert.ElementsMatch(t, []int{1, 2}, []int{a.Rank, b.Rank})
			assert.Positive(t, a.Score)
			assert.Positive(t, b.Score)
			assert.InDelta(t, 70, a.Share, 0.01, "the share across networks is the weight share")
		}},
		{"a source address names its /24 and no scope", "w.s.test.", Client{Addr: netip.MustParseAddr("198.51.100.77"), Bits: 32}, func(t *testing.T, e Explanation) {
			assert.Equal(t, "198.51.100.0/24", e.Sticky.Network)
			assert.Equal(t, 0, e.Client.Scope)
			assert.Contains(t, strings.Join(e.Notes, "\n"), "(of the source address)")
		}},
		{"an IPv6 subnet names its /56", "w.s.test.", ecsClientOf("2001:db8:1:2300::/56"), func(t *testing.T, e Explanation) {
			assert.Equal(t, "2001:db8:1:2300::/56", e.Sticky.Network)
		}},
		{"no client address says how to ask for one", "w.s.test.", Client{}, func(t *testing.T, e Explanation) {
			assert.Empty(t, e.Sticky.Network)
			assert.Contains(t, strings.Join(e.Notes, "\n"), "give --subnet or --client")
		}},
		{"two of three records name both in order and rank the third last", "three.s.test.", ecsClientOf("203.0.113.0/24"), func(t *testing.T, e Explanation) {
			assert.Len(t, e.Sticky.Answer, 2)
			assert.Equal(t, 2, e.Picks)
			ranks := []int{}
			for _, c := range e.Candidates {
				ranks = append(ranks, c.Rank)
			}
			assert.ElementsMatch(t, []int{1, 2, 3}, ranks)
		}},
		{"a sticky CNAME follows only the target this network gets", "inzone.s.test.", ecsClientOf("203.0.113.0/24"), func(t *testing.T, e Explanation) {
			require.Len(t, e.Sticky.Answer, 1)
			require.Len(t, e.Chain, 1)
			assert.Contains(t, e.Sticky.Answer[0], e.Chain[0].Name)
			require.NotNil(t, e.Chain[0].Sticky, "the target is sticky too, keyed on the same network")
			assert.Equal(t, "203.0.113.0/24", e.Chain[0].Sticky.Network)
		}},
		{"a service without sticky has no sticky part", "plain.s.test.", ecsClientOf("203.0.113.0/24"), func(t *testing.T, e Explanation) {
			assert.Nil(t, e.Sticky)
			assert.Zero(t, candidate(t, e, "192.0.2.71").Rank)
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			tc.check(t, s.Explain(tc.qname, dns.TypeA, tc.client, tc.client.HasECS))
		})
	}
}

func TestStickyKeysAreFixed(t *testing.T) {
	// These values are the hash every node must compute (the CoreDNS plugin
	// and other versions of meridian included): changing the hash moves
	// every sticky network at once during a rolling upgrade. They were
	// computed apart from this code (FNV-1a 64 and fmix64 in Python):
	//   mix(fnv(bytes([4, 203, 0, 113]))), mix(fnv(bytes([6]) + first 7 bytes)), mix(fnv(b"192.0.2.1"))
	p, k := StickyNetwork(netip.MustParseAddr("203.0.113.77"))
	assert.Equal(t, "203.0.113.0/24", p.String())
	assert.Equal(t, uint64(0xc176753b53e60714), k)
	p, k = StickyNetwork(netip.MustParseAddr("::ffff:203.0.113.77"))
	assert.Equal(t, "203.0.113.0/24", p.String(), "an IPv4-mapped address is its IPv4 network")
	assert.Equal(t, uint64(0xc176753b53e60714), k)
	p, k = StickyNetwork(netip.MustParseAddr("2001:db8:aa:bbcc:1::1"))
	assert.Equal(t, "2001:db8:aa:bb00::/56", p.String())
	assert.Equal(t, uint64(0x82a6a3d2a0ea56e9), k)
	assert.Equal(t, uint64(0x8fc433616f773343), identityHash(&dns.A{A: netip.MustParseAddr("192.0.2.1").AsSlice()}))
	assert.Equal(t, identityHash(&dns.CNAME{Target: "A.Example.org."}), identityHash(&dns.CNAME{Target: "a.example.org."}))
}

func TestStickyLookupAllocatesNothing(t *testing.T) {
	s := stickySnapshot(t, 700, 300, nil)
	r := &Result{}
	for _, name := range []string{"w.s.test.", "three.s.test.", "geo.s.test."} {
		client := ecsClientOf("203.0.113.0/24")
		allocs := testing.AllocsPerRun(1000, func() {
			r.Reset()
			s.Lookup(name, dns.TypeA, client, r)
		})
		assert.Zero(t, allocs, name)
	}
}

func BenchmarkLookupStickyA(b *testing.B) {
	s := stickySnapshot(b, 700, 300, nil)
	r := &Result{}
	client := ecsClientOf("203.0.113.0/24")
	b.ReportAllocs()
	for b.Loop() {
		r.Reset()
		s.Lookup("w.s.test.", dns.TypeA, client, r)
	}
}

func BenchmarkLookupStickyTwoOfThreeA(b *testing.B) {
	s := stickySnapshot(b, 700, 300, nil)
	r := &Result{}
	client := ecsClientOf("203.0.113.0/24")
	b.ReportAllocs()
	for b.Loop() {
		r.Reset()
		s.Lookup("three.s.test.", dns.TypeA, client, r)
	}
}

func BenchmarkLookupStickyGeoA(b *testing.B) {
	s := stickySnapshot(b, 700, 300, nil)
	r := &Result{}
	client := ecsClientOf("10.3.7.0/24")
	b.ReportAllocs()
	for b.Loop() {
		r.Reset()
		s.Lookup("geo.s.test.", dns.TypeA, client, r)
	}
}

func BenchmarkRespondStickyA(b *testing.B) {
	s := stickySnapshot(b, 700, 300, nil)
	rep := &Reply{}
	req := query("w.s.test.", dns.TypeA, withECS("203.0.113.0/24", 0))
	src := netip.MustParseAddr("127.0.0.1")
	b.ReportAllocs()
	for b.Loop() {
		s.Respond(req, src, 0, rep)
	}
}
