package dnsserver

import (
	"fmt"
	"net/netip"
	"testing"
	"time"

	"github.com/miekg/dns"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// cycledType is the i-th query type of a flood that varies the type: every
// data type from 1 to 250 but OPT (41), which is not a question.
func cycledType(i int) uint16 {
	t := uint16(1 + i%249)
	if t >= dns.TypeOPT {
		t++
	}
	return t
}

// TestRRLCannotBeDodgedByVaryingTheQuery drives the UDP path of a server
// with a signed zone (RRL at 5/s, 1 s window, slip 2; no signing limit, so
// RRL alone is measured) with a fake clock: 5 000 queries at 1 000/s from
// one /24. Whatever a flood varies (the type, the name, the DO bit), what
// it gets back is bounded by the rate over time plus the burst, and is
// smaller than what it sent.
func TestRRLCannotBeDodgedByVaryingTheQuery(t *testing.T) {
	const (
		limit   = 5
		window  = 1
		rate    = 1000
		seconds = 5
		n       = rate * seconds
		allowed = limit*window + limit*seconds // the burst, then the rate
	)
	attacker := func(i int) netip.Addr { return netip.AddrFrom4([4]byte{198, 51, 100, byte(1 + i%200)}) }
	random := func(i int) string { return fmt.Sprintf("r%08x.many.test.", uint32(i)*2654435761) }

	// A flood's replies: data (answers and denials) at most the burst and
	// the rate of one bucket; errors (NOTIMP to the meta types TKEY and
	// TSIG among the cycled ones) are the prefix's error bucket, header
	// and question only.
	flood := func(t *testing.T, got rrlTally, m *Metrics) {
		t.Helper()
		assert.LessOrEqual(t, got.answered-got.errors, allowed+1, "data answered: at most rate × time + burst (%+v)", got)
		assert.LessOrEqual(t, got.errors, allowed+1, "errors answered: at most rate × time + burst (%+v)", got)
		assert.GreaterOrEqual(t, got.answered, limit*seconds, "the rate is still answered (%+v)", got)
		assert.InDelta(t, got.slipped, got.dropped, 1, "slip 2: every second limited response is truncated")
		assert.Less(t, got.bytesOut, got.bytesIn, "a flood gets back less than it sends")
	}
	for _, tc := range []struct {
		name  string
		query func(i int) query
		check func(t *testing.T, got rrlTally, m *Metrics)
	}{
		{"cycling the type with DO on one name gets at most rate × time + burst answers",
			func(i int) query { return query{"n7.many.test.", cycledType(i), attacker(i), true} },
			flood},
		{"cycling the type with DO at the apex (SOA, NS, DNSKEY and denials) is one budget too",
			func(i int) query { return query{"many.test.", cycledType(i), attacker(i), true} },
			flood},
		{"random names with DO (compact denials, NODATA on the wire) are limited as one class",
			func(i int) query { return query{random(i), dns.TypeA, attacker(i), true} },
			func(t *testing.T, got rrlTally, m *Metrics) {
				flood(t, got, m)
				assert.Equal(t, float64(got.slipped+got.dropped), testutil.ToFloat64(m.RRLLimited.WithLabelValues("nxdomain")),
					"a denial of a name that does not exist is counted as nxdomain")
			}},
		{"random names with and without DO (NODATA and NXDOMAIN) share the zone's budget",
			func(i int) query { return query{random(i), dns.TypeA, attacker(i), i%2 == 0} },
			flood},
		{"random names cycling the type with DO are one class",
			func(i int) query { return query{random(i), cycledType(i), attacker(i), true} },
			flood},
		{"a type cycled over every name of the zone gets each name's budget, no more",
			func(i int) query {
				return query{fmt.Sprintf("n%d.many.test.", i%10), cycledType(i / 10), attacker(i), true}
			},
			func(t *testing.T, got rrlTally, _ *Metrics) {
				assert.LessOrEqual(t, got.answered, 10*(allowed+1), "ten names: ten budgets (%+v)", got)
			}},
		{"a resolver asking A, AAAA and HTTPS with DO for 1 000 names at 1 000 queries/s gets at least 99.9% answered",
			func(i int) query {
				types := []uint16{dns.TypeA, dns.TypeAAAA, dns.TypeHTTPS}
				return query{fmt.Sprintf("n%d.many.test.", (i/3)%1000), types[i%3], attacker(i), true}
			},
			func(t *testing.T, got rrlTally, _ *Metrics) {
				assert.GreaterOrEqual(t, float64(got.answered)/float64(got.total()), 0.999, "%+v", got)
			}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m := NewMetrics(prometheus.NewRegistry())
			s := New(Config{Listen: []string{"127.0.0.1:0"}, Metrics: m,
				RRL: RRL{Enabled: true, ResponsesPerSec: limit, Window: window, Slip: 2}}, manyNamesStoreSigned(t, 1000, true))
			clk := &fakeClock{t: time.Now()}
			got := run(t, s.newWorker(), clk, n, rate, tc.query)
			require.Equal(t, n, got.total())
			t.Logf("%+v: amplification %.2f (bytes out / bytes in)", got, float64(got.bytesOut)/float64(got.bytesIn))
			tc.check(t, got, m)
		})
	}
}

// TestRRLSparesANormalClientBesideAFlood interleaves a flood cycling the
// type on one name (one /24) with a resolver in another /24 asking 2 000
// queries/s over 1 000 names, with DO, at RRL 5/s: the flood is held to
// the rate and the resolver keeps at least 99.9% of its answers.
func TestRRLSparesANormalClientBesideAFlood(t *testing.T) {
	const (
		limit   = 5
		seconds = 5
		rate    = 4000 // in all: 2 000/s from each client
		n       = rate * seconds
	)
	m := NewMetrics(prometheus.NewRegistry())
	s := New(Config{Listen: []string{"127.0.0.1:0"}, Metrics: m,
		RRL: RRL{Enabled: true, ResponsesPerSec: limit, Window: 1, Slip: 2}}, manyNamesStoreSigned(t, 1000, true))
	w := s.newWorker()
	clk := &fakeClock{t: time.Now()}
	attacker, resolver := netip.MustParseAddr("198.51.100.7"), netip.MustParseAddr("203.0.113.9")
	var flood, normal rrlTally
	for i := range n {
		tally := &flood
		q := query{"n7.many.test.", cycledType(i / 2), attacker, true}
		if i%2 == 1 {
			tally = &normal
			q = query{fmt.Sprintf("n%d.many.test.", (i/2)%1000), dns.TypeA, resolver, true}
		}
		got := run(t, w, clk, 1, rate, func(int) query { return q })
		tally.answered += got.answered - got.errors
		tally.slipped += got.slipped
		tally.dropped += got.dropped
	}
	t.Logf("flood %+v, resolver %+v", flood, normal)
	assert.LessOrEqual(t, flood.answered, limit*(seconds+1)+1, "the flood gets the burst and the rate (data; its errors have their own bucket)")
	assert.GreaterOrEqual(t, float64(normal.answered)/float64(normal.total()), 0.999, "%+v", normal)
}

// TestRRLChargesBytesAsWellAsResponses floods one bucket (1 000 queries/s
// for 4 s, fake clock) at RRL 100 responses/s with a 1 s window and a
// byte budget set against the size of the answer: the bucket sends at most
// bytes_per_second × (time + window) bytes of answers, and at most the
// rate × (time + window) answers.
func TestRRLChargesBytesAsWellAsResponses(t *testing.T) {
	const (
		limit   = 100
		rate    = 1000
		seconds = 4
		n       = rate * seconds
	)
	st := manyNamesStoreSigned(t, 3, true)
	size := func(name string, qtype uint16) int { // of the answer with DO, unlimited
		w := New(Config{Listen: []string{"127.0.0.1:0"}}, st).newWorker()
		got := run(t, w, &fakeClock{t: time.Now()}, 1, 1, func(int) query { return query{name, qtype, netip.MustParseAddr("192.0.2.1"), true} })
		require.Equal(t, 1, got.answered)
		return got.bytesOut
	}
	dnskey, a := size("many.test.", dns.TypeDNSKEY), size("n1.many.test.", dns.TypeA)
	t.Logf("answer sizes with DO: DNSKEY %d bytes, A %d bytes", dnskey, a)
	require.Greater(t, dnskey, a)

	for _, tc := range []struct {
		name   string
		qname  string
		qtype  uint16
		bytes  int // bytes_per_second
		answer int // its size
		want   int // answers expected
	}{
		{"answers under bytes_per_second / rate are counted by number alone", "n1.many.test.", dns.TypeA, limit * a * 2, a,
			limit * (seconds + 1)},
		{"answers four times larger than bytes_per_second / rate get a quarter of the rate", "many.test.", dns.TypeDNSKEY, limit * dnskey / 4, dnskey,
			limit / 4 * (seconds + 1)},
		{"an answer larger than a window's bytes is still sent once per window", "many.test.", dns.TypeDNSKEY, dnskey / 2, dnskey,
			seconds + 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := New(Config{Listen: []string{"127.0.0.1:0"},
				RRL: RRL{Enabled: true, ResponsesPerSec: limit, BytesPerSec: tc.bytes, Window: 1, Slip: 2}}, st)
			got := run(t, s.newWorker(), &fakeClock{t: time.Now()}, n, rate,
				func(i int) query {
					return query{tc.qname, tc.qtype, netip.AddrFrom4([4]byte{198, 51, 100, byte(i)}), true}
				})
			t.Logf("%+v: amplification %.2f", got, float64(got.bytesOut)/float64(got.bytesIn))
			assert.InDelta(t, tc.want, got.answered, 2, "%+v", got)
			if tc.answer <= tc.bytes {
				assert.LessOrEqual(t, got.answered*tc.answer, tc.bytes*(seconds+1)+tc.answer, "bytes of answers within the budget")
			}
		})
	}
}
