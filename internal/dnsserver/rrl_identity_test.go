package dnsserver

import (
	"fmt"
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/miekg/dns"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/meridian-gslb/meridian/internal/config"
	"github.com/meridian-gslb/meridian/internal/dnssec"
	"github.com/meridian-gslb/meridian/internal/engine"
	"github.com/meridian-gslb/meridian/internal/geo"
)

// manyNamesStore serves n weighted services n0.many.test .. n<n-1>.many.test.
func manyNamesStore(t testing.TB, n int) *engine.Store {
	return manyNamesStoreSigned(t, n, false)
}

// manyNamesStoreSigned is manyNamesStore, with many.test signed by a fresh
// ECDSA P-256 key when signed is set.
func manyNamesStoreSigned(t testing.TB, n int, signed bool) *engine.Store {
	t.Helper()
	var b strings.Builder
	b.WriteString(`
zones:
  - apex: many.test
    nameservers: [{name: ns1.many.test, ipv4: [192.0.2.53]}]
clusters:
  - {name: east, region: us-east}
  - {name: west, region: us-west}
services:
`)
	for i := range n {
		fmt.Fprintf(&b, "  - {name: n%d.many.test, endpoints: [{address: 192.0.2.1, cluster: east, weight: 700}, {address: 192.0.2.2, cluster: west, weight: 300}]}\n", i)
	}
	f, err := config.Parse("many.yaml", []byte(b.String()))
	require.NoError(t, err)
	var opts engine.Options
	if signed {
		k, err := dnssec.Generate("many.test.", dns.ECDSAP256SHA256, 3600)
		require.NoError(t, err)
		sg, err := dnssec.NewSigner("many.test.", []*dnssec.Key{k}, dnssec.Options{})
		require.NoError(t, err)
		opts.Signers = map[string]engine.ZoneSigner{"many.test.": sg}
	}
	st := &engine.Store{}
	_, err = st.Publish(&f.Desired, opts)
	require.NoError(t, err)
	return st
}

// rrlTally is what a client got back from a run of queries, and the
// bytes of the queries sent and of the replies received. errors counts the
// answered replies whose rcode is neither NOERROR nor NXDOMAIN.
type rrlTally struct{ answered, slipped, dropped, errors, bytesIn, bytesOut int }

func (r rrlTally) total() int { return r.answered + r.slipped + r.dropped }

// query is one UDP query: its name, type and source, and whether it sets
// the DO bit (with an EDNS0 payload size of 1232).
type query struct {
	name  string
	qtype uint16
	src   netip.Addr
	do    bool
}

// run sends n queries through w's UDP path at rate per second of the fake
// clock (no sockets, no real time), the i-th being q(i), and tallies the
// responses: an answer is any full response, a slip a truncated empty one.
func run(t *testing.T, w *worker, clk *fakeClock, n, rate int, q func(i int) query) rrlTally {
	t.Helper()
	var r rrlTally
	m := new(dns.Msg)
	buf := make([]byte, 512)
	for i := range n {
		qi := q(i)
		m.SetQuestion(qi.name, qi.qtype)
		m.Extra = nil
		if qi.do {
			m.SetEdns0(1232, true)
		}
		m.Id = uint16(i)
		in, err := m.PackBuffer(buf)
		require.NoError(t, err)
		r.bytesIn += len(in)
		resp := w.serveUDP(in, qi.src, clk.t)
		clk.advance(time.Second / time.Duration(rate))
		if resp == nil {
			r.dropped++
			continue
		}
		r.bytesOut += len(resp)
		rm := new(dns.Msg)
		require.NoError(t, rm.Unpack(resp))
		if rm.Truncated && len(rm.Answer) == 0 && len(rm.Ns) == 0 {
			r.slipped++
		} else {
			r.answered++
			if rm.Rcode != dns.RcodeSuccess && rm.Rcode != dns.RcodeNameError {
				r.errors++
			}
		}
	}
	return r
}

// TestRRLCountsPerResponseIdentity drives the UDP path of a server (200/s,
// 15 s window, slip 2: the config's defaults) with a fake clock, 2 000
// queries per second for 10 s from addresses of one /24.
func TestRRLCountsPerResponseIdentity(t *testing.T) {
	const (
		rate    = 2000
		seconds = 10
		n       = rate * seconds
		limit   = 200
		window  = 15
	)
	// What a limited identity gets in the run: the saved-up burst, then the rate.
	const allowed = limit*window + limit*seconds
	client := func(i int) netip.Addr { return netip.AddrFrom4([4]byte{198, 51, 100, byte(1 + i%200)}) }
	exempt, err := geo.NewPrefixSet([]netip.Prefix{netip.MustParsePrefix("203.0.113.0/24")})
	require.NoError(t, err)

	for _, tc := range []struct {
		name  string
		query func(i int) query
		check func(t *testing.T, got rrlTally, m *Metrics)
	}{
		{"a client sending 2000 queries/s over 1000 names from one /24 gets at least 99.9% answered",
			func(i int) query { return query{fmt.Sprintf("n%d.many.test.", i%1000), dns.TypeA, client(i), false} },
			func(t *testing.T, got rrlTally, _ *Metrics) {
				assert.GreaterOrEqual(t, float64(got.answered)/float64(got.total()), 0.999, "%+v", got)
			}},
		{"the same rate for one name is limited to the burst plus the rate, half of the rest slipped",
			func(i int) query { return query{"n7.many.test.", dns.TypeA, client(i), false} },
			func(t *testing.T, got rrlTally, m *Metrics) {
				assert.InDelta(t, allowed, got.answered, 2, "%+v", got)
				assert.InDelta(t, got.slipped, got.dropped, 1, "slip 2: every second limited response is truncated")
				assert.Equal(t, float64(got.slipped+got.dropped), testutil.ToFloat64(m.RRLLimited.WithLabelValues("answer")))
			}},
		{"the names' case does not make new buckets",
			func(i int) query {
				return query{map[bool]string{true: "N7.Many.TEST.", false: "n7.many.test."}[i%2 == 0], dns.TypeA, client(i), false}
			},
			func(t *testing.T, got rrlTally, _ *Metrics) {
				assert.InDelta(t, allowed, got.answered, 2, "%+v", got)
			}},
		{"a random-name NXDOMAIN flood is limited as one class",
			func(i int) query {
				return query{fmt.Sprintf("r%08x.many.test.", uint32(i)*2654435761), dns.TypeA, client(i), false}
			},
			func(t *testing.T, got rrlTally, m *Metrics) {
				assert.InDelta(t, allowed, got.answered, 2, "%+v", got)
				assert.Equal(t, float64(got.slipped+got.dropped), testutil.ToFloat64(m.RRLLimited.WithLabelValues("nxdomain")))
			}},
		{"NXDOMAINs of random types are one class too",
			func(i int) query {
				types := []uint16{dns.TypeA, dns.TypeAAAA, dns.TypeMX, dns.TypeTXT, dns.TypeSRV, dns.TypeCAA, dns.TypeNS, dns.TypeHTTPS}
				return query{fmt.Sprintf("r%d.many.test.", i), types[i%len(types)], client(i), false}
			},
			func(t *testing.T, got rrlTally, _ *Metrics) {
				assert.InDelta(t, allowed, got.answered, 2, "%+v", got)
			}},
		{"refused queries for random names outside our zones share one error bucket",
			func(i int) query { return query{fmt.Sprintf("r%d.elsewhere.test.", i), dns.TypeA, client(i), false} },
			func(t *testing.T, got rrlTally, m *Metrics) {
				assert.InDelta(t, allowed, got.answered, 2, "%+v", got)
				assert.Equal(t, float64(got.slipped+got.dropped), testutil.ToFloat64(m.RRLLimited.WithLabelValues("error")))
			}},
		{"nodata answers of names that exist are counted per name",
			func(i int) query { return query{fmt.Sprintf("n%d.many.test.", i%1000), dns.TypeMX, client(i), false} },
			func(t *testing.T, got rrlTally, _ *Metrics) {
				assert.Equal(t, n, got.answered, "%+v", got)
			}},
		{"an exempt prefix is never limited",
			func(i int) query {
				return query{"n7.many.test.", dns.TypeA, netip.AddrFrom4([4]byte{203, 0, 113, byte(i)}), false}
			},
			func(t *testing.T, got rrlTally, m *Metrics) {
				assert.Equal(t, n, got.answered, "%+v", got)
				assert.Equal(t, float64(n), testutil.ToFloat64(m.RRLExempt))
				assert.Zero(t, testutil.ToFloat64(m.RRLDropped))
			}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m := NewMetrics(prometheus.NewRegistry())
			s := New(Config{Listen: []string{"127.0.0.1:0"}, Metrics: m,
				RRL: RRL{Enabled: true, ResponsesPerSec: limit, Window: window, Slip: 2, Exempt: exempt}}, manyNamesStore(t, 1000))
			clk := &fakeClock{t: time.Now()}
			got := run(t, s.newWorker(), clk, n, rate, tc.query)
			require.Equal(t, n, got.total())
			t.Logf("%+v", got)
			tc.check(t, got, m)
		})
	}
}

func TestRRLClassOfAResponse(t *testing.T) {
	src := netip.MustParseAddr("192.0.2.9")
	for _, tc := range []struct {
		name      string
		signed    bool
		qname     string
		qtype     uint16
		do        bool
		class     rrlClass
		bucket    rrlBucket
		keyedName string
	}{
		{"an answer is keyed on its name alone", false, "N1.many.test.", dns.TypeA, false, rrlAnswer, rrlByName, "N1.many.test."},
		{"an empty answer is nodata keyed on its name alone, like the name's answers", false, "n1.many.test.", dns.TypeTXT, false, rrlNoData, rrlByName, "n1.many.test."},
		{"a signed nodata of a name that exists is keyed on the name", true, "n1.many.test.", dns.TypeTXT, true, rrlNoData, rrlByName, "n1.many.test."},
		{"an NXDOMAIN is keyed on its zone alone", false, "nope.many.test.", dns.TypeAAAA, false, rrlNXDomain, rrlByZone, "many.test."},
		{"a compact denial (NODATA for a name that does not exist) is keyed on its zone like an NXDOMAIN", true, "nope.many.test.", dns.TypeAAAA, true, rrlNXDomain, rrlByZone, "many.test."},
		{"a signed zone without DO answers NXDOMAIN, keyed on its zone", true, "nope.many.test.", dns.TypeA, false, rrlNXDomain, rrlByZone, "many.test."},
		{"a REFUSED is an error keyed on nothing else", false, "other.test.", dns.TypeA, false, rrlError, rrlByError, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := New(Config{Listen: []string{"127.0.0.1:0"}, RRL: RRL{Enabled: true}}, manyNamesStoreSigned(t, 3, tc.signed))
			w := s.newWorker()
			m := new(dns.Msg)
			m.SetQuestion(tc.qname, tc.qtype)
			if tc.do {
				m.SetEdns0(1232, true)
			}
			in, err := m.Pack()
			require.NoError(t, err)
			require.NotNil(t, w.serve(in, src, false))
			assert.Equal(t, tc.class, w.rrlClass)
			assert.Equal(t, tc.bucket, w.rrlBucket)
			assert.Equal(t, tc.keyedName, w.rrlName)
		})
	}
	t.Run("a query that cannot be parsed is an error", func(t *testing.T) {
		w := New(Config{Listen: []string{"127.0.0.1:0"}, RRL: RRL{Enabled: true}}, manyNamesStore(t, 3)).newWorker()
		require.NotNil(t, w.serve([]byte{0, 1, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 3, 'a'}, src, false))
		assert.Equal(t, rrlError, w.rrlClass)
		assert.Equal(t, rrlByError, w.rrlBucket)
		assert.Empty(t, w.rrlName)
	})
}
