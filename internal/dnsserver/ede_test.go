package dnsserver

import (
	"context"
	"encoding/binary"
	"fmt"
	"net/netip"
	"testing"
	"time"

	"github.com/miekg/dns"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/meridian-gslb/meridian/internal/engine"
	"github.com/meridian-gslb/meridian/internal/xfr"
)

// edesOf unpacks wire and returns it with the EDE options of its OPT.
func edesOf(t *testing.T, wire []byte) (*dns.Msg, []*dns.EDNS0_EDE) {
	t.Helper()
	m := new(dns.Msg)
	require.NoError(t, m.Unpack(wire))
	var out []*dns.EDNS0_EDE
	if opt := m.IsEdns0(); opt != nil {
		for _, o := range opt.Option {
			if e, ok := o.(*dns.EDNS0_EDE); ok {
				out = append(out, e)
			}
		}
	}
	return m, out
}

func wireQuery(t *testing.T, name string, qtype uint16, edit ...func(*dns.Msg)) []byte {
	t.Helper()
	q := new(dns.Msg)
	q.SetQuestion(name, qtype)
	for _, e := range edit {
		e(q)
	}
	b, err := q.Pack()
	require.NoError(t, err)
	return b
}

func TestAppendEDE(t *testing.T) {
	refused := func() []byte {
		m := new(dns.Msg)
		m.SetRcode(new(dns.Msg).SetQuestion("example.test.", dns.TypeAXFR), dns.RcodeRefused)
		b, _ := m.Pack()
		return b
	}
	for _, tc := range []struct {
		name  string
		resp  []byte
		do    bool
		added bool
	}{
		{"a reply without additional records gets an OPT with the EDE", refused(), false, true},
		{"the DO bit is echoed in the OPT", refused(), true, true},
		{"a reply that has additional records (an OPT or a TSIG) is left alone", func() []byte {
			m := new(dns.Msg)
			m.SetQuestion("example.test.", dns.TypeA)
			m.SetEdns0(1232, false)
			b, _ := m.Pack()
			return b
		}(), false, false},
		{"a reply shorter than a header is left alone", []byte{1, 2, 3}, false, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			in := append([]byte(nil), tc.resp...)
			out := appendEDE(append(make([]byte, 0, 512), tc.resp...), 1232, tc.do, engine.EDETransferRefused)
			if !tc.added {
				assert.Equal(t, in, out)
				return
			}
			m, edes := edesOf(t, out)
			require.Len(t, edes, 1)
			assert.Equal(t, uint16(dns.ExtendedErrorCodeProhibited), edes[0].InfoCode)
			assert.Equal(t, engine.EDETransferRefused.Text(), edes[0].ExtraText)
			assert.Equal(t, tc.do, m.IsEdns0().Do())
			assert.Equal(t, uint16(1232), m.IsEdns0().UDPSize())
			assert.Equal(t, dns.RcodeRefused, m.Rcode, "the rcode is kept (no extended bits)")
		})
	}
}

func TestRRLSlipCarriesRateLimitedEDE(t *testing.T) {
	m := NewMetrics(prometheus.NewRegistry())
	s := New(Config{Listen: []string{"127.0.0.1:0"}, Metrics: m, RRL: RRL{Enabled: true, ResponsesPerSec: 1, Window: 1, Slip: 1}}, newStore(t, 1))
	w := s.newWorker()
	src := netip.MustParseAddr("192.0.2.200")
	now := time.Now()
	for _, tc := range []struct {
		name string
		edns bool
	}{
		{"a slip to a query with EDNS carries 0 Other: rate limited", true},
		{"a slip to a query without EDNS stays bare (no OPT)", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var edit []func(*dns.Msg)
			if tc.edns {
				edit = append(edit, func(q *dns.Msg) { q.SetEdns0(1232, false) })
			}
			q := wireQuery(t, "app.example.test.", dns.TypeA, edit...)
			var resp []byte
			for range 5 { // the burst of 1, then slips
				resp = w.serveUDP(q, src, now)
			}
			r, edes := edesOf(t, resp)
			require.True(t, r.Truncated)
			assert.Empty(t, r.Answer)
			if !tc.edns {
				assert.Nil(t, r.IsEdns0())
				return
			}
			require.Len(t, edes, 1)
			assert.Equal(t, engine.EDERateLimited.Code(), edes[0].InfoCode)
			assert.Equal(t, "rate limited", edes[0].ExtraText)
			assert.LessOrEqual(t, len(resp), len(q)+6+len(engine.EDERateLimited.Text()), "at most the EDE larger than the query")
		})
	}
	assert.Equal(t, 4.0, testutil.ToFloat64(m.EDE.WithLabelValues("0", "rate_limited")), "slips with an EDE are counted")
}

func TestSignLimitedUDPReplyCarriesNotReady(t *testing.T) {
	st, _ := newSignedStore(t)
	m := NewMetrics(prometheus.NewRegistry())
	s := New(Config{Listen: []string{"127.0.0.1:0"}, Metrics: m, SignLimit: SignLimit{Enabled: true, SignaturesPerSec: 1, Window: 1}}, st)
	stopClocks(s)
	w := s.newWorker()
	src := netip.MustParseAddr("192.0.2.200")
	var resp []byte
	for i := range 3 {
		resp = w.serveUDP(wireQuery(t, fmt.Sprintf("new%d.example.test.", i), dns.TypeA, func(q *dns.Msg) { q.SetEdns0(1232, true) }), src, time.Now())
	}
	r, edes := edesOf(t, resp)
	require.True(t, r.Truncated)
	require.Len(t, edes, 1)
	assert.Equal(t, uint16(dns.ExtendedErrorCodeNotReady), edes[0].InfoCode)
	assert.True(t, r.IsEdns0().Do(), "DO echoed")
	assert.Equal(t, 2.0, testutil.ToFloat64(m.EDE.WithLabelValues("14", "sign_limited")))
}

func TestFailOpenAnswerIsCountedByCode(t *testing.T) {
	m := NewMetrics(prometheus.NewRegistry())
	s := New(Config{Listen: []string{"127.0.0.1:0"}, Metrics: m}, fastStore(t))
	w := s.newWorker()
	src := netip.MustParseAddr("192.0.2.200")
	resp := w.serveUDP(wireQuery(t, "open.fast.test.", dns.TypeA, func(q *dns.Msg) { q.SetEdns0(1232, false) }), src, time.Now())
	_, edes := edesOf(t, resp)
	require.Len(t, edes, 1)
	assert.Equal(t, engine.EDEFailOpen.Text(), edes[0].ExtraText)
	w.serve(wireQuery(t, "www.example.org.", dns.TypeA, func(q *dns.Msg) { q.SetEdns0(1232, false) }), src, true)
	w.serve(wireQuery(t, "open.fast.test.", dns.TypeA), src, true) // no EDNS: no EDE
	assert.Equal(t, 1.0, testutil.ToFloat64(m.EDE.WithLabelValues("0", "fail_open")))
	assert.Equal(t, 1.0, testutil.ToFloat64(m.EDE.WithLabelValues("20", "not_authoritative")))
}

func TestServeFailOpenWithEDNSDoesNotAllocate(t *testing.T) {
	s := New(Config{Listen: []string{"127.0.0.1:0"}, RRL: RRL{Enabled: true, ResponsesPerSec: 1_000_000}}, fastStore(t))
	w := s.newWorker()
	pkt := wireQuery(t, "open.fast.test.", dns.TypeA, func(q *dns.Msg) { q.SetEdns0(1232, false) })
	src := netip.MustParseAddr("127.0.0.1")
	now := time.Now()
	serve := func() {
		if resp := w.serveUDP(pkt, src, now); binary.BigEndian.Uint16(resp[10:]) != 1 {
			t.Fatalf("want the OPT record, got % x", resp)
		}
	}
	serve()
	assert.Zero(t, testing.AllocsPerRun(300, serve))
}

// refusingTransfers is the real internal/xfr server configured to refuse
// every transfer of example.test (no address is allowed).
func refusingTransfers(t *testing.T, st *engine.Store) *xfr.Server {
	x := xfr.New(st, xfr.Options{})
	t.Cleanup(x.Close)
	x.Configure([]xfr.Zone{{Apex: "example.test.", Allow: []netip.Prefix{netip.MustParsePrefix("192.0.2.0/24")},
		Key: xfr.Key{Name: "k.", Secret: "c2VjcmV0c2VjcmV0c2VjcmV0", Algorithm: dns.HmacSHA256}}})
	return x
}

func TestRefusedTransfersCarryProhibited(t *testing.T) {
	checkLeaks(t)
	st := newStore(t, 1)
	m := NewMetrics(prometheus.NewRegistry())
	s := New(Config{Listen: []string{"127.0.0.1:0"}, UDPSockets: 1, Metrics: m, TCPIdleTimeout: 2 * time.Second,
		Transfers: refusingTransfers(t, st)}, st)
	require.NoError(t, s.Start())
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		require.NoError(t, s.Shutdown(ctx))
	})
	addr := s.Addrs()[0].String()
	for _, tc := range []struct {
		name  string
		proto string
		qtype uint16
		edns  bool
	}{
		{"a refused AXFR over TCP with EDNS carries 18 Prohibited", "tcp", dns.TypeAXFR, true},
		{"a refused IXFR over TCP with EDNS carries 18 Prohibited", "tcp", dns.TypeIXFR, true},
		{"a refused AXFR over UDP with EDNS carries 18 Prohibited", "udp", dns.TypeAXFR, true},
		{"a refused AXFR over TCP without EDNS has no OPT", "tcp", dns.TypeAXFR, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			q := new(dns.Msg)
			q.SetQuestion("example.test.", tc.qtype)
			if tc.qtype == dns.TypeIXFR {
				q.Ns = []dns.RR{&dns.SOA{Hdr: dns.RR_Header{Name: "example.test.", Rrtype: dns.TypeSOA, Class: dns.ClassINET}, Ns: "a.", Mbox: "b.", Serial: 1}}
			}
			if tc.edns {
				q.SetEdns0(1232, false)
			}
			r := exchange(t, tc.proto, addr, q)
			assert.Equal(t, dns.RcodeRefused, r.Rcode)
			wire, err := r.Pack()
			require.NoError(t, err)
			_, edes := edesOf(t, wire)
			if !tc.edns {
				assert.Nil(t, r.IsEdns0())
				return
			}
			require.Len(t, edes, 1)
			assert.Equal(t, uint16(dns.ExtendedErrorCodeProhibited), edes[0].InfoCode)
			assert.Equal(t, engine.EDETransferRefused.Text(), edes[0].ExtraText)
		})
	}
	// The counter is raised once the reply is on its way: the client may
	// read the last reply first.
	assert.Eventually(t, func() bool { return testutil.ToFloat64(m.EDE.WithLabelValues("18", "transfer_refused")) == 3 }, 5*time.Second, 10*time.Millisecond,
		"three refused transfers with EDNS counted: %v", testutil.ToFloat64(m.EDE.WithLabelValues("18", "transfer_refused")))
	q := new(dns.Msg)
	q.SetQuestion("app.example.test.", dns.TypeA)
	assert.Len(t, exchange(t, "tcp", addr, q).Answer, 1, "the connection's other queries are answered as before")
}
