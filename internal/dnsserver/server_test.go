package dnsserver

import (
	"context"
	"fmt"
	"net"
	"net/netip"
	"slices"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/miekg/dns"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/meridian-gslb/meridian/internal/config"
	"github.com/meridian-gslb/meridian/internal/engine"
)

// checkLeaks verifies, after every other cleanup of t, that no goroutine
// outlived the test, naming the test that leaked (TestMain checks the whole
// binary, fuzz workers included, once at the end).
func checkLeaks(t testing.TB) {
	t.Cleanup(func() { goleak.VerifyNone(t.(*testing.T)) })
}

const testConfig = `
zones:
  - apex: example.test
    nameservers:
%s
clusters:
  - {name: east, region: us-east}
  - {name: west, region: us-west}
services:
  - name: app.example.test
    endpoints:
      - {address: 192.0.2.1, cluster: east, weight: 700}
      - {address: 192.0.2.2, cluster: west, weight: 300}
`

// nameservers returns n in-zone nameservers with v4 and v6 glue: enough to
// make the NS answer larger than 512 bytes.
func nameservers(n int) string {
	var b strings.Builder
	for i := range n {
		fmt.Fprintf(&b, "      - {name: nameserver-number-%02d.example.test, ipv4: [192.0.2.%d], ipv6: [\"2001:db8::%d\"]}\n", i, 100+i, 100+i)
	}
	return b.String()
}

func newStore(t testing.TB, nsCount int) *engine.Store {
	t.Helper()
	f, err := config.Parse("test.yaml", []byte(fmt.Sprintf(testConfig, nameservers(nsCount))))
	require.NoError(t, err)
	st := &engine.Store{}
	_, err = st.Publish(&f.Desired, engine.Options{})
	require.NoError(t, err)
	return st
}

func startServer(t testing.TB, src Source, m *Metrics) (*Server, string) {
	t.Helper()
	checkLeaks(t)
	// RRL on with the config's defaults (200/s per /24, 15s window), as in production.
	s := New(Config{Listen: []string{"127.0.0.1:0"}, UDPSockets: 2, Metrics: m, TCPIdleTimeout: 2 * time.Second,
		RRL: RRL{Enabled: true, Slip: 2}}, src)
	require.NoError(t, s.Start())
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		require.NoError(t, s.Shutdown(ctx))
	})
	return s, s.Addrs()[0].String()
}

func exchange(t testing.TB, net, addr string, m *dns.Msg) *dns.Msg {
	t.Helper()
	c := &dns.Client{Net: net, Timeout: 2 * time.Second}
	r, _, err := c.Exchange(m, addr)
	require.NoError(t, err)
	return r
}

func TestServerAnswersOverUDPAndTCP(t *testing.T) {
	_, addr := startServer(t, newStore(t, 1), nil)
	for _, proto := range []string{"udp", "tcp"} {
		t.Run(proto, func(t *testing.T) {
			m := new(dns.Msg)
			m.SetQuestion("app.example.test.", dns.TypeA)
			r := exchange(t, proto, addr, m)
			assert.Equal(t, dns.RcodeSuccess, r.Rcode)
			assert.True(t, r.Authoritative)
			require.Len(t, r.Answer, 1)
			assert.Contains(t, []string{"192.0.2.1", "192.0.2.2"}, r.Answer[0].(*dns.A).A.String())
		})
	}
}

func TestTCPConnectionCarriesManyQueries(t *testing.T) {
	_, addr := startServer(t, newStore(t, 1), nil)
	c := &dns.Client{Net: "tcp", Timeout: 2 * time.Second}
	conn, err := c.Dial(addr)
	require.NoError(t, err)
	defer conn.Close()
	for i := range 20 {
		m := new(dns.Msg)
		m.SetQuestion("app.example.test.", dns.TypeA)
		r, _, err := c.ExchangeWithConn(m, conn)
		require.NoError(t, err, "query %d", i)
		require.Len(t, r.Answer, 1)
	}
}

func TestLargeAnswerIsTruncatedOverUDPAndCompleteOverTCP(t *testing.T) {
	metrics := NewMetrics(prometheus.NewRegistry())
	_, addr := startServer(t, newStore(t, 40), metrics)
	m := new(dns.Msg)
	m.SetQuestion("example.test.", dns.TypeNS)

	udp := exchange(t, "udp", addr, m)
	assert.True(t, udp.Truncated, "NS with glue for 40 servers exceeds 512 bytes")
	udp.Compress = true
	packed, err := udp.Pack()
	require.NoError(t, err)
	assert.LessOrEqual(t, len(packed), 512)

	tcp := exchange(t, "tcp", addr, m)
	assert.False(t, tcp.Truncated)
	assert.Len(t, tcp.Answer, 40)
	assert.Len(t, tcp.Extra, 80)

	m.SetEdns0(4096, false)
	big := exchange(t, "udp", addr, m)
	assert.True(t, big.Truncated, "our own 1232-byte limit still applies")
	assert.Equal(t, 2.0, testutil.ToFloat64(metrics.Truncated))
}

func TestQueryCaseIsEchoedInQuestionAndAnswer(t *testing.T) {
	_, addr := startServer(t, newStore(t, 1), nil)
	m := new(dns.Msg)
	m.SetQuestion("ApP.eXaMpLe.TeSt.", dns.TypeA)
	r := exchange(t, "udp", addr, m)
	require.Len(t, r.Answer, 1)
	assert.Equal(t, "ApP.eXaMpLe.TeSt.", r.Question[0].Name)
	assert.Equal(t, "ApP.eXaMpLe.TeSt.", r.Answer[0].Header().Name)
}

func rawUDP(t *testing.T, addr string, pkt []byte) []byte {
	t.Helper()
	c, err := net.Dial("udp", addr)
	require.NoError(t, err)
	defer c.Close()
	_, err = c.Write(pkt)
	require.NoError(t, err)
	require.NoError(t, c.SetReadDeadline(time.Now().Add(500*time.Millisecond)))
	buf := make([]byte, 4096)
	n, err := c.Read(buf)
	if err != nil {
		return nil
	}
	return buf[:n]
}

func TestMalformedQueriesGetFormErrAndResponsesAreIgnored(t *testing.T) {
	metrics := NewMetrics(prometheus.NewRegistry())
	_, addr := startServer(t, newStore(t, 1), metrics)
	m := new(dns.Msg)
	m.SetQuestion("app.example.test.", dns.TypeA)
	good, err := m.Pack()
	require.NoError(t, err)

	truncated := append([]byte{}, good[:len(good)-3]...)
	resp := rawUDP(t, addr, truncated)
	require.Len(t, resp, 12, "header-only FORMERR")
	assert.Equal(t, good[:2], resp[:2], "same ID")
	assert.Equal(t, byte(dns.RcodeFormatError), resp[3]&0xF)
	assert.NotZero(t, resp[2]&0x80, "QR set")

	asResponse := append([]byte{}, good...)
	asResponse[2] |= 0x80
	assert.Nil(t, rawUDP(t, addr, asResponse), "a packet with QR set is never answered")
	assert.Nil(t, rawUDP(t, addr, []byte{1, 2, 3}), "a packet shorter than a header is dropped")
	assert.Equal(t, 1.0, testutil.ToFloat64(metrics.Malformed))

	// The server still answers afterwards.
	r := exchange(t, "udp", addr, m)
	assert.Len(t, r.Answer, 1)
}

// panicky panics on the first n loads.
type panicky struct {
	n     atomic.Int32
	inner Source
}

func (p *panicky) Load() *engine.Snapshot {
	if p.n.Add(-1) >= 0 {
		panic("injected")
	}
	return p.inner.Load()
}

func TestPanicAnswersServfailAndServerLivesOn(t *testing.T) {
	metrics := NewMetrics(prometheus.NewRegistry())
	src := &panicky{inner: newStore(t, 1)}
	src.n.Store(1)
	_, addr := startServer(t, src, metrics)
	m := new(dns.Msg)
	m.SetQuestion("app.example.test.", dns.TypeA)
	r := exchange(t, "udp", addr, m)
	assert.Equal(t, dns.RcodeServerFailure, r.Rcode)
	assert.Equal(t, 1.0, testutil.ToFloat64(metrics.Panics))
	r = exchange(t, "udp", addr, m)
	assert.Equal(t, dns.RcodeSuccess, r.Rcode)
	assert.Len(t, r.Answer, 1)
}

func TestQueriesAreCounted(t *testing.T) {
	metrics := NewMetrics(prometheus.NewRegistry())
	_, addr := startServer(t, newStore(t, 1), metrics)
	for _, q := range []struct {
		name  string
		qtype uint16
	}{{"app.example.test.", dns.TypeA}, {"app.example.test.", dns.TypeA}, {"nope.example.test.", dns.TypeA}, {"example.org.", dns.TypeA}} {
		m := new(dns.Msg)
		m.SetQuestion(q.name, q.qtype)
		exchange(t, "udp", addr, m)
	}
	assert.Equal(t, 2.0, testutil.ToFloat64(metrics.Queries.WithLabelValues("example.test.", "A", "NOERROR", "weighted")))
	assert.Equal(t, 1.0, testutil.ToFloat64(metrics.Queries.WithLabelValues("example.test.", "A", "NXDOMAIN", "none")))
	assert.Equal(t, 1.0, testutil.ToFloat64(metrics.Queries.WithLabelValues("none", "A", "REFUSED", "none")))
}

func TestServerWithoutSnapshotAnswersServfail(t *testing.T) {
	_, addr := startServer(t, &engine.Store{}, nil)
	m := new(dns.Msg)
	m.SetQuestion("app.example.test.", dns.TypeA)
	r := exchange(t, "udp", addr, m)
	assert.Equal(t, dns.RcodeServerFailure, r.Rcode)
}

func TestStartFailsCleanlyOnABusyPort(t *testing.T) {
	ln, err := net.ListenPacket("udp", "127.0.0.1:0")
	require.NoError(t, err)
	defer ln.Close()
	s := New(Config{Listen: []string{ln.LocalAddr().String()}, UDPSockets: 1}, newStore(t, 1))
	err = s.Start()
	require.Error(t, err)
	assert.Contains(t, err.Error(), ln.LocalAddr().String())
}

func TestShutdownClosesIdleTCPConnections(t *testing.T) {
	checkLeaks(t)
	s := New(Config{Listen: []string{"127.0.0.1:0"}, UDPSockets: 1, TCPIdleTimeout: time.Minute}, newStore(t, 1))
	require.NoError(t, s.Start())
	c, err := net.Dial("tcp", s.Addrs()[0].String())
	require.NoError(t, err)
	defer c.Close()
	time.Sleep(50 * time.Millisecond)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	require.NoError(t, s.Shutdown(ctx))
}

func TestRestoreQuestionCaseLeavesOddPacketsAlone(t *testing.T) {
	req := []byte{0, 1, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 1, 'A', 0, 0, 1, 0, 1}
	resp := []byte{0, 1, 0x84, 0, 0, 1, 0, 0, 0, 0, 0, 0, 1, 'b', 0, 0, 1, 0, 1}
	restoreQuestionCase(resp, req)
	assert.Equal(t, byte('b'), resp[13], "different names are not touched")
	resp[13] = 'a'
	restoreQuestionCase(resp, req)
	assert.Equal(t, byte('A'), resp[13])
	restoreQuestionCase(resp[:13], req) // short response: no panic
}

var _ = netip.Addr{}

func TestAnotherSocketCanJoinTheServersPortOnlyWhenItRunsSeveralUDPSockets(t *testing.T) {
	cases := []struct {
		name       string
		udpSockets int
		udpJoins   bool
	}{
		{"one UDP socket keeps the port to itself", 1, false},
		{"several UDP sockets share the port through SO_REUSEPORT, so a same-user socket can join", 2, true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			s := New(Config{Listen: []string{"127.0.0.1:0"}, UDPSockets: tc.udpSockets}, newStore(t, 1))
			require.NoError(t, s.Start())
			t.Cleanup(func() { _ = s.Shutdown(context.Background()) })
			addr := s.Addrs()[0].String()
			lc := net.ListenConfig{Control: reusePort} // as dig's and kdig's own sockets do
			u, err := lc.ListenPacket(context.Background(), "udp", addr)
			if err == nil {
				u.Close()
			}
			assert.Equal(t, tc.udpJoins, err == nil, "a SO_REUSEPORT UDP socket binding %s: %v", addr, err)
			l, err := lc.Listen(context.Background(), "tcp", addr)
			if err == nil {
				l.Close()
			}
			assert.Error(t, err, "a SO_REUSEPORT TCP listener must not share %s", addr)
		})
	}
}

func TestListenOnPortZeroTriesAnotherPortWhenTheUDPPortIsTakenForTCP(t *testing.T) {
	cases := []struct {
		name     string
		fixed    bool // listen on a given port, not port 0
		busy     int  // ports refused for TCP with EADDRINUSE before one is taken
		wantErr  bool
		attempts int
	}{
		{"port 0 moves on to another port", false, 2, false, 3},
		{"port 0 gives up after the last attempt", false, listenAttempts, true, listenAttempts},
		{"a fixed port is an error at once", true, 1, true, 1},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			ap := netip.MustParseAddrPort("127.0.0.1:0")
			if tc.fixed {
				ap = netip.AddrPortFrom(ap.Addr(), uint16(freeUDPPort(t)))
			}
			s := New(Config{Listen: []string{ap.String()}, UDPSockets: 2}, newStore(t, 1))
			// Go may call Control more than once for one Listen: count
			// the ports tried, each refused until tc.busy have been.
			var udpPorts []uint16
			tlc := net.ListenConfig{Control: func(_, address string, _ syscall.RawConn) error {
				p := netip.MustParseAddrPort(address).Port()
				if !slices.Contains(udpPorts, p) {
					udpPorts = append(udpPorts, p)
				}
				if slices.Index(udpPorts, p) < tc.busy {
					return syscall.EADDRINUSE
				}
				return nil
			}}
			ulc := net.ListenConfig{Control: reusePort}
			udp, ln, err := s.listen(context.Background(), ulc, tlc, ap)
			assert.Len(t, udpPorts, tc.attempts, "ports tried for TCP")
			if tc.wantErr {
				require.Error(t, err)
				assert.ErrorIs(t, err, syscall.EADDRINUSE)
				assert.Contains(t, err.Error(), "dns listen tcp 127.0.0.1:")
			} else {
				require.NoError(t, err)
				defer ln.Close()
				for _, uc := range udp {
					defer uc.Close()
					assert.Equal(t, ln.Addr().(*net.TCPAddr).Port, uc.LocalAddr().(*net.UDPAddr).Port, "UDP and TCP on one port")
				}
				assert.Len(t, udp, 2)
			}
			for _, p := range udpPorts[:tc.busy] {
				u, err := net.ListenUDP("udp", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1), Port: int(p)})
				require.NoError(t, err, "the UDP sockets of a failed attempt are closed (port %d)", p)
				u.Close()
			}
		})
	}
}

func freeUDPPort(t *testing.T) int {
	u, err := net.ListenUDP("udp", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	require.NoError(t, err)
	defer u.Close()
	return u.LocalAddr().(*net.UDPAddr).Port
}

// panickyTransfers is a Transfers whose AXFRs over TCP panic.
type panickyTransfers struct{}

func (panickyTransfers) Wants(req *dns.Msg) bool {
	return len(req.Question) == 1 && req.Question[0].Qtype == dns.TypeAXFR
}
func (panickyTransfers) Answer(*dns.Msg, []byte, netip.Addr, bool) []byte { return nil }
func (p panickyTransfers) ServeTCP(_ net.Conn, in []byte, _ netip.Addr) (bool, error) {
	req := new(dns.Msg)
	if req.Unpack(in) != nil || !p.Wants(req) {
		return false, nil
	}
	panic("injected in a transfer")
}

func TestPanicInATransferClosesTheConnectionAndIsCounted(t *testing.T) {
	checkLeaks(t)
	metrics := NewMetrics(prometheus.NewRegistry())
	s := New(Config{Listen: []string{"127.0.0.1:0"}, UDPSockets: 1, Metrics: metrics, TCPIdleTimeout: 2 * time.Second,
		Transfers: panickyTransfers{}}, newStore(t, 1))
	require.NoError(t, s.Start())
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		require.NoError(t, s.Shutdown(ctx))
	})
	addr := s.Addrs()[0].String()

	axfr := new(dns.Msg)
	axfr.SetAxfr("example.test.")
	_, _, err := (&dns.Client{Net: "tcp", Timeout: 2 * time.Second}).Exchange(axfr, addr)
	require.Error(t, err, "the connection is closed without an answer")
	assert.Equal(t, 1.0, testutil.ToFloat64(metrics.Panics))

	q := new(dns.Msg)
	q.SetQuestion("app.example.test.", dns.TypeA)
	r := exchange(t, "tcp", addr, q)
	assert.Len(t, r.Answer, 1, "the server lives on")
}
