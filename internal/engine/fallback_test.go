package engine

import (
	"math/rand/v2"
	"net/netip"
	"slices"
	"strings"
	"testing"

	"github.com/miekg/dns"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/meridian-gslb/meridian/internal/config"
	"github.com/meridian-gslb/meridian/internal/geo"
	"github.com/meridian-gslb/meridian/internal/model"
)

// fallbackSnapshot compiles the explain fixture with fallback_answer on for
// the services named (the others at the default, auto).
func fallbackSnapshot(t *testing.T, h Health, on ...string) *Snapshot {
	t.Helper()
	return fallbackModeSnapshot(t, h, model.FallbackOn, on...)
}

// fallbackModeSnapshot compiles the explain fixture with fallback_answer
// set to mode for the services named.
func fallbackModeSnapshot(t *testing.T, h Health, mode string, names ...string) *Snapshot {
	t.Helper()
	f, err := config.Parse("explain.yaml", []byte(explainFixture))
	require.NoError(t, err)
	d := &f.Desired
	for i := range d.Services {
		if slices.Contains(names, d.Services[i].Name) {
			d.Services[i].FallbackAnswer = mode
		}
	}
	var nets []geo.Network
	for _, n := range d.Geo.Networks {
		nets = append(nets, geo.Network{Prefix: netip.MustParsePrefix(n.CIDR), Region: n.Region, Country: n.Country, Continent: n.Continent})
	}
	loc, err := geo.New(nets, "")
	require.NoError(t, err)
	if h == nil {
		h = NoHealth{}
	}
	s, err := Compile(d, Options{Health: h, Locator: loc})
	require.NoError(t, err)
	return s
}

// replies draws n replies and counts them by their records in order
// ("a,b"), with the TTLs seen.
func replies(t *testing.T, s *Snapshot, name string, client Client, n int) (map[string]int, map[uint32]bool) {
	t.Helper()
	out, ttls := map[string]int{}, map[uint32]bool{}
	for range n {
		var r Result
		s.Lookup(name, dns.TypeA, client, &r)
		var k []string
		for _, rr := range r.Answer {
			k = append(k, rr.(*dns.A).A.String())
			ttls[rr.Header().Ttl] = true
		}
		out[strings.Join(k, ",")]++
	}
	return out, ttls
}

func TestFallbackAnswers(t *testing.T) {
	const n = 60_000
	resolver := Client{Addr: netip.MustParseAddr("192.0.2.200"), Bits: 32}
	tests := []struct {
		name    string
		health  Health
		on, off []string
		service string
		client  Client
		want    map[string]float64 // reply -> percent
		ttls    []uint32
	}{
		{name: "by default a 70/30 service gets no fallback: behind a shuffling resolver it would move the shares", service: "w.x.test.",
			want: map[string]float64{"192.0.2.1": 70, "192.0.2.2": 30}, ttls: []uint32{60}},
		{name: "by default a service of two equal clusters gets its fallback: shuffled, the shares stay 50/50", service: "down.x.test.",
			want: map[string]float64{"192.0.2.31,192.0.2.32": 50, "192.0.2.32,192.0.2.31": 50}, ttls: []uint32{60}},
		{name: "by default a failover service gets none: the standby would take half the traffic", service: "fo.x.test.",
			want: map[string]float64{"192.0.2.11": 100}, ttls: []uint32{60}},
		{name: "off: one record per reply even when the clusters are equal", off: []string{"down.x.test."}, service: "down.x.test.",
			want: map[string]float64{"192.0.2.31": 50, "192.0.2.32": 50}, ttls: []uint32{60}},
		{name: "the pick first, by weight as without the option, then an address from another cluster", on: []string{"w.x.test."}, service: "w.x.test.",
			want: map[string]float64{"192.0.2.1,192.0.2.2": 70, "192.0.2.2,192.0.2.1": 30}, ttls: []uint32{60}},
		{name: "a down endpoint is never the fallback: a weight-0 standby of another cluster is", on: []string{"w.x.test."}, service: "w.x.test.",
			health: explainHealth{"w.x.test.|192.0.2.2": Down}, want: map[string]float64{"192.0.2.1,192.0.2.3": 100}, ttls: []uint32{60}},
		{name: "failover: the fallback is the next cluster of the order", on: []string{"fo.x.test."}, service: "fo.x.test.",
			want: map[string]float64{"192.0.2.11,192.0.2.12": 100}, ttls: []uint32{60}},
		{name: "geo: the fallback comes from the default clusters when the client's place has one", on: []string{"geo.x.test."}, service: "geo.x.test.",
			client: ecsClientOf("10.5.1.0/24"), want: map[string]float64{"192.0.2.23,192.0.2.21": 100}, ttls: []uint32{60}},
		{name: "nothing else available: one record", on: []string{"down.x.test."}, service: "down.x.test.",
			health: explainHealth{"down.x.test.|192.0.2.31": Down}, want: map[string]float64{"192.0.2.32": 100}, ttls: []uint32{60}},
		{name: "a fail-open answer carries no fallback", on: []string{"dead.x.test."}, service: "dead.x.test.",
			health: explainHealth{"dead.x.test.|192.0.2.51": Down, "dead.x.test.|192.0.2.52": Down},
			want:   map[string]float64{"192.0.2.51": 50, "192.0.2.52": 50}, ttls: []uint32{5}},
		{name: "the two records are one RRset: one endpoint in doubt gives both the doubt TTL", on: []string{"w.x.test."}, service: "w.x.test.",
			health: doubtHealth{doubt: map[string]bool{"w.x.test.|192.0.2.2": true}},
			want:   map[string]float64{"192.0.2.1,192.0.2.2": 70, "192.0.2.2,192.0.2.1": 30}, ttls: []uint32{5}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			client := tc.client
			if !client.Addr.IsValid() {
				client = resolver
			}
			snap := fallbackSnapshot(t, tc.health, tc.on...)
			if tc.off != nil {
				snap = fallbackModeSnapshot(t, tc.health, model.FallbackOff, tc.off...)
			}
			got, ttls := replies(t, snap, tc.service, client, n)
			for reply := range got {
				assert.Contains(t, tc.want, reply, "an unexpected reply")
			}
			for reply, share := range tc.want {
				assert.InDelta(t, share, 100*float64(got[reply])/n, 1, reply)
			}
			var ttl []uint32
			for k := range ttls {
				ttl = append(ttl, k)
			}
			assert.Equal(t, tc.ttls, ttl)
		})
	}
}

func TestFallbackAnswersNeedOneRecordPerReplyAndNoStickiness(t *testing.T) {
	for _, tc := range []struct {
		name, edit, want string
	}{
		{"on with max_answers 2", "fallback_answer: on\n    max_answers: 2", "services[0].fallback_answer: on needs one record per reply (max_answers 1; it is 2)"},
		{"on with sticky: subnet", "fallback_answer: on\n    sticky: subnet", "services[0].fallback_answer: on does not combine with sticky: subnet"},
		{"a boolean, as before the modes", "fallback_answer: true", `services[0].fallback_answer: "true" is not allowed (allowed: auto, on, off; it is no longer a boolean: true is on, false is off)`},
		{"on with CNAME endpoints", "fallback_answer: on\n    endpoints: [{cname: a.example.org, cluster: east}, {cname: b.example.org, cluster: west}]", "services[0].fallback_answer: on needs address endpoints: a CNAME answer is one record"},
		{"an unknown mode", "fallback_answer: always", `services[0].fallback_answer: "always" is not allowed (allowed: auto, on, off)`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			eps := "\n    endpoints: [{address: 192.0.2.1, cluster: east}, {address: 192.0.2.2, cluster: west}]"
			if strings.Contains(tc.edit, "endpoints:") {
				eps = ""
			}
			_, err := config.Parse("f.yaml", []byte(`
zones: [{apex: x.test, nameservers: [{name: ns1.x.test, ipv4: [192.0.2.53]}]}]
clusters: [{name: east, region: r1}, {name: west, region: r2}]
services:
  - name: w.x.test
    `+tc.edit+eps+"\n"))
			require.Error(t, err)
			assert.Contains(t, err.Error(), tc.want)
		})
	}
}

func TestAutoFallbackIsLeftOutWithSeveralRecordsOrStickiness(t *testing.T) {
	for _, edit := range []string{"max_answers: 2", "sticky: subnet"} {
		t.Run(edit, func(t *testing.T) {
			f, err := config.Parse("f.yaml", []byte(`
zones: [{apex: x.test, nameservers: [{name: ns1.x.test, ipv4: [192.0.2.53]}]}]
clusters: [{name: east, region: r1}, {name: west, region: r2}, {name: eu, region: r3}]
services:
  - name: w.x.test
    `+edit+`
    endpoints: [{address: 192.0.2.1, cluster: east}, {address: 192.0.2.2, cluster: west}, {address: 192.0.2.3, cluster: eu}]
`))
			require.NoError(t, err)
			s, err := Compile(&f.Desired, Options{Health: NoHealth{}})
			require.NoError(t, err)
			got, _ := replies(t, s, "w.x.test.", Client{Addr: netip.MustParseAddr("192.0.2.200"), Bits: 32}, 300)
			for reply := range got {
				if edit == "max_answers: 2" {
					assert.Len(t, strings.Split(reply, ","), 2, "max_answers 2 answers two records, no third")
				} else {
					assert.Len(t, strings.Split(reply, ","), 1, "a sticky answer carries no fallback")
				}
			}
		})
	}
}

func TestExplainSaysWhatTheFallbackIs(t *testing.T) {
	e := fallbackSnapshot(t, nil, "w.x.test.").Explain("w.x.test.", dns.TypeA, Client{Addr: netip.MustParseAddr("192.0.2.200"), Bits: 32}, false)
	assert.Contains(t, e.Notes, "fallback_answer on: each reply also carries, second, one available address of another cluster than the first's, drawn by weight from the first group that has one: 192.0.2.1 (east), 192.0.2.2 (eu), 192.0.2.3 (west); a client whose first address refuses connections moves to it without asking DNS again")
}

// TestAutoFallbackKeepsTheSharesBehindAShufflingResolver draws replies of
// services at the default (auto), shuffles each as a rotating resolver does
// and counts the first addresses: where a fallback was added they keep the
// weights' shares; where it was left out, turning it on would have moved
// them.
func TestAutoFallbackKeepsTheSharesBehindAShufflingResolver(t *testing.T) {
	const n = 60_000
	tests := []struct {
		name      string
		endpoints string
		want      map[string]float64 // first address -> percent
		fallback  bool               // auto adds the fallback
	}{
		{name: "two equal clusters keep 50/50 and get a fallback",
			endpoints: `[{address: 192.0.2.1, cluster: east}, {address: 192.0.2.2, cluster: west}]`,
			want:      map[string]float64{"192.0.2.1": 50, "192.0.2.2": 50}, fallback: true},
		{name: "three equal clusters keep a third each and get a fallback",
			endpoints: `[{address: 192.0.2.1, cluster: east}, {address: 192.0.2.2, cluster: west}, {address: 192.0.2.3, cluster: eu}]`,
			want:      map[string]float64{"192.0.2.1": 100.0 / 3, "192.0.2.2": 100.0 / 3, "192.0.2.3": 100.0 / 3}, fallback: true},
		{name: "clusters of equal weight split over different endpoint counts keep their shares and get a fallback",
			endpoints: `[{address: 192.0.2.1, cluster: east, weight: 50}, {address: 192.0.2.2, cluster: east, weight: 50}, {address: 192.0.2.3, cluster: west, weight: 100}]`,
			want:      map[string]float64{"192.0.2.1": 25, "192.0.2.2": 25, "192.0.2.3": 50}, fallback: true},
		{name: "equal CNAME targets never get a second: a CNAME answer is one record",
			endpoints: `[{cname: a.example.org, cluster: east}, {cname: b.example.org, cluster: west}]`,
			want:      map[string]float64{"a.example.org.": 50, "b.example.org.": 50}},
		{name: "one cluster of two equal endpoints falls back within the cluster",
			endpoints: `[{address: 192.0.2.1, cluster: east}, {address: 192.0.2.2, cluster: east}]`,
			want:      map[string]float64{"192.0.2.1": 50, "192.0.2.2": 50}, fallback: true},
		{name: "a 70/30 service keeps 70/30 because it gets no fallback",
			endpoints: `[{address: 192.0.2.1, cluster: east, weight: 70}, {address: 192.0.2.2, cluster: west, weight: 30}]`,
			want:      map[string]float64{"192.0.2.1": 70, "192.0.2.2": 30}},
		{name: "clusters of equal weight with unequal endpoints keep their shares and get a fallback",
			endpoints: `[{address: 192.0.2.1, cluster: east, weight: 80}, {address: 192.0.2.2, cluster: east, weight: 20}, {address: 192.0.2.3, cluster: west, weight: 100}]`,
			want:      map[string]float64{"192.0.2.1": 40, "192.0.2.2": 10, "192.0.2.3": 50}, fallback: true},
		{name: "three clusters at 50/25/25 keep their shares because they get no fallback",
			endpoints: `[{address: 192.0.2.1, cluster: east, weight: 50}, {address: 192.0.2.2, cluster: west, weight: 25}, {address: 192.0.2.3, cluster: eu, weight: 25}]`,
			want:      map[string]float64{"192.0.2.1": 50, "192.0.2.2": 25, "192.0.2.3": 25}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f, err := config.Parse("f.yaml", []byte(`
zones: [{apex: x.test, nameservers: [{name: ns1.x.test, ipv4: [192.0.2.53]}]}]
clusters: [{name: east, region: r1}, {name: west, region: r2}, {name: eu, region: r3}]
services:
  - name: w.x.test
    endpoints: `+tc.endpoints+`
`))
			require.NoError(t, err)
			s, err := Compile(&f.Desired, Options{Health: NoHealth{}})
			require.NoError(t, err)
			first, twos := map[string]int{}, 0
			for range n {
				var r Result
				s.Lookup("w.x.test.", dns.TypeA, Client{Addr: netip.MustParseAddr("192.0.2.200"), Bits: 32}, &r)
				rrs := slices.Clone(r.Answer)
				if len(rrs) == 2 {
					twos++
				}
				rand.Shuffle(len(rrs), func(i, j int) { rrs[i], rrs[j] = rrs[j], rrs[i] })
				first[rrTargetString(rrs[0])]++
			}
			if tc.fallback {
				assert.Equal(t, n, twos, "every reply carries a fallback")
			} else {
				assert.Zero(t, twos, "no reply carries a fallback")
			}
			for addr, share := range tc.want {
				assert.InDelta(t, share, 100*float64(first[addr])/n, 1, addr)
			}
		})
	}
}

func TestExplainSaysWhyAutoLeavesTheFallbackOut(t *testing.T) {
	e := fallbackModeSnapshot(t, nil, model.FallbackAuto).Explain("w.x.test.", dns.TypeA, Client{Addr: netip.MustParseAddr("192.0.2.200"), Bits: 32}, false)
	assert.Contains(t, e.Notes, "fallback_answer auto: no fallback address: behind a resolver that shuffles records, a second address would move 192.0.2.1's share of first addresses from 70% to 50% (set fallback_answer: on to add it anyway)")
	e = fallbackModeSnapshot(t, nil, model.FallbackAuto).Explain("down.x.test.", dns.TypeA, Client{Addr: netip.MustParseAddr("192.0.2.200"), Bits: 32}, false)
	assert.Contains(t, e.Notes, "fallback_answer auto: each reply also carries, second, one available address of another cluster than the first's, drawn by weight from the first group that has one: 192.0.2.31 (east), 192.0.2.32 (west); a client whose first address refuses connections moves to it without asking DNS again")
}

func TestAnUnsetFallbackModeIsAuto(t *testing.T) {
	s := fallbackModeSnapshot(t, nil, "", "w.x.test.", "down.x.test.")
	resolver := Client{Addr: netip.MustParseAddr("192.0.2.200"), Bits: 32}
	got, _ := replies(t, s, "w.x.test.", resolver, 2000)
	for reply := range got {
		assert.NotContains(t, reply, ",", "70/30 keeps one record per reply")
	}
	got, _ = replies(t, s, "down.x.test.", resolver, 2000)
	for reply := range got {
		assert.Contains(t, reply, ",", "two equal clusters get the fallback")
	}
}

func TestOnlyRepliesCarryingAnEndpointInDoubtGetTheDoubtTTL(t *testing.T) {
	f, err := config.Parse("f.yaml", []byte(`
zones: [{apex: x.test, ttl: 30, nameservers: [{name: ns1.x.test, ipv4: [192.0.2.53]}]}]
clusters: [{name: east, region: r1}, {name: west, region: r2}, {name: eu, region: r3}]
services:
  - name: w.x.test
    endpoints: [{address: 192.0.2.1, cluster: east}, {address: 192.0.2.2, cluster: west}, {address: 192.0.2.3, cluster: eu}]
`))
	require.NoError(t, err)
	s, err := Compile(&f.Desired, Options{Health: doubtHealth{doubt: map[string]bool{"w.x.test.|192.0.2.2": true}}})
	require.NoError(t, err)
	seen := map[bool]int{}
	for range 3000 {
		var r Result
		s.Lookup("w.x.test.", dns.TypeA, Client{Addr: netip.MustParseAddr("192.0.2.200"), Bits: 32}, &r)
		require.Len(t, r.Answer, 2, "three equal clusters: the pick and its fallback")
		carries := false
		for _, rr := range r.Answer {
			carries = carries || rr.(*dns.A).A.String() == "192.0.2.2"
		}
		for _, rr := range r.Answer {
			if carries {
				assert.EqualValues(t, 5, rr.Header().Ttl, "a reply carrying the endpoint in doubt: both records get doubt_ttl")
			} else {
				assert.EqualValues(t, 30, rr.Header().Ttl, "a reply without it keeps the zone's TTL")
			}
		}
		seen[carries]++
	}
	assert.NotZero(t, seen[true])
	assert.NotZero(t, seen[false])
}
