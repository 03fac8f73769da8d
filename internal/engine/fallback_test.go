package engine

import (
	"net/netip"
	"slices"
	"strings"
	"testing"

	"github.com/miekg/dns"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/meridian-gslb/meridian/internal/config"
	"github.com/meridian-gslb/meridian/internal/geo"
)

// fallbackSnapshot compiles the explain fixture with fallback_answer on for
// the services named.
func fallbackSnapshot(t *testing.T, h Health, on ...string) *Snapshot {
	t.Helper()
	f, err := config.Parse("explain.yaml", []byte(explainFixture))
	require.NoError(t, err)
	d := &f.Desired
	for i := range d.Services {
		if slices.Contains(on, d.Services[i].Name) {
			d.Services[i].FallbackAnswer = true
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
		on      []string
		service string
		client  Client
		want    map[string]float64 // reply -> percent
		ttls    []uint32
	}{
		{name: "off by default: one record per reply, drawn by weight", service: "w.x.test.",
			want: map[string]float64{"192.0.2.1": 70, "192.0.2.2": 30}, ttls: []uint32{60}},
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
			got, ttls := replies(t, fallbackSnapshot(t, tc.health, tc.on...), tc.service, client, n)
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
		{"with max_answers 2", "max_answers: 2", "services[0].fallback_answer: needs one record per reply (max_answers 1; it is 2)"},
		{"with sticky: subnet", "sticky: subnet", "services[0].fallback_answer: does not combine with sticky: subnet"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := config.Parse("f.yaml", []byte(`
zones: [{apex: x.test, nameservers: [{name: ns1.x.test, ipv4: [192.0.2.53]}]}]
clusters: [{name: east, region: r1}, {name: west, region: r2}]
services:
  - name: w.x.test
    fallback_answer: true
    `+tc.edit+`
    endpoints: [{address: 192.0.2.1, cluster: east}, {address: 192.0.2.2, cluster: west}]
`))
			require.Error(t, err)
			assert.Contains(t, err.Error(), tc.want)
		})
	}
}

func TestExplainSaysWhatTheFallbackIs(t *testing.T) {
	e := fallbackSnapshot(t, nil, "w.x.test.").Explain("w.x.test.", dns.TypeA, Client{Addr: netip.MustParseAddr("192.0.2.200"), Bits: 32}, false)
	assert.Contains(t, e.Notes, "fallback_answer: each reply also carries, second, one available address of another cluster than the first's, drawn by weight from the first group that has one: 192.0.2.1 (east), 192.0.2.2 (eu), 192.0.2.3 (west); a client whose first address refuses connections moves to it without asking DNS again")
}
