package dnsserver

import (
	"fmt"
	"net"
	"net/netip"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/miekg/dns"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// raiseFileLimit lifts RLIMIT_NOFILE to its hard limit: the tests below
// hold over a thousand connections, two descriptors each on loopback.
func raiseFileLimit(t *testing.T, need uint64) {
	t.Helper()
	var lim syscall.Rlimit
	require.NoError(t, syscall.Getrlimit(syscall.RLIMIT_NOFILE, &lim))
	if lim.Cur >= need {
		return
	}
	if lim.Max < need {
		t.Skipf("RLIMIT_NOFILE hard limit %d is below the %d descriptors this test needs", lim.Max, need)
	}
	lim.Cur = lim.Max
	require.NoError(t, syscall.Setrlimit(syscall.RLIMIT_NOFILE, &lim))
}

// holdIdle dials n connections from src to addr and sends nothing on them.
func holdIdle(t *testing.T, src, addr string, n int) []net.Conn {
	t.Helper()
	d := &net.Dialer{Timeout: 2 * time.Second, LocalAddr: &net.TCPAddr{IP: net.ParseIP(src)}}
	var out []net.Conn
	for range n {
		c, err := d.Dial("tcp", addr)
		require.NoError(t, err)
		out = append(out, c)
	}
	return out
}

// TestIdleTCPConnectionsFromManyPrefixesDoNotLockOutANewClient is the
// acceptance of issue 31 finding 4 on real sockets: 32 /24s each hold
// their 32 connections, idle, which fills the listener's 1 024 slots; a
// new client from a 33rd /24 is still served (the oldest idle connection
// is closed to free a slot, RFC 7766 section 6.2.2).
func TestIdleTCPConnectionsFromManyPrefixesDoNotLockOutANewClient(t *testing.T) {
	raiseFileLimit(t, 4096)
	_, m, addr := startRRLServer(t, Config{TCPIdleTimeout: time.Minute})
	var held []net.Conn
	defer func() {
		for _, c := range held {
			c.Close()
		}
	}()
	for i := range 32 {
		held = append(held, holdIdle(t, fmt.Sprintf("127.0.%d.10", 10+i), addr, 32)...)
	}
	require.Eventually(t, func() bool { return testutil.ToFloat64(m.TCPConns) == 1024 }, 10*time.Second, 10*time.Millisecond,
		"the server holds all 1 024 idle connections")
	c, err := tcpFrom(t, "127.0.200.10", addr)
	require.NoError(t, err, "a new client is served while 1 024 idle connections are held")
	c.Close()
	assert.Equal(t, 1.0, testutil.ToFloat64(m.TCPEvicted.WithLabelValues(tcpReasonTotal)), "the oldest idle connection was closed to free a slot")
	assert.Zero(t, testutil.ToFloat64(m.TCPRejected))
	var b [1]byte
	held[0].SetReadDeadline(time.Now().Add(2 * time.Second))
	_, err = held[0].Read(b[:])
	assert.Error(t, err, "the first connection opened, the oldest idle, is the one closed")
}

// fakeListener hands the server one end of an in-memory pipe per Dial,
// with any remote address: a whole IPv6 /48 of clients without owning it.
type fakeListener struct {
	conns  chan net.Conn
	closed chan struct{}
	once   sync.Once
}

func newFakeListener() *fakeListener {
	return &fakeListener{conns: make(chan net.Conn), closed: make(chan struct{})}
}

type addrConn struct {
	net.Conn
	remote *net.TCPAddr
}

func (c addrConn) RemoteAddr() net.Addr { return c.remote }

func (l *fakeListener) Accept() (net.Conn, error) {
	select {
	case c := <-l.conns:
		return c, nil
	case <-l.closed:
		return nil, net.ErrClosed
	}
}

func (l *fakeListener) Close() error { l.once.Do(func() { close(l.closed) }); return nil }
func (l *fakeListener) Addr() net.Addr {
	return &net.TCPAddr{IP: net.IPv6loopback, Port: 53}
}

// dial returns the client end of a connection the server sees from src.
func (l *fakeListener) dial(src netip.Addr) net.Conn {
	client, server := net.Pipe()
	l.conns <- addrConn{Conn: server, remote: net.TCPAddrFromAddrPort(netip.AddrPortFrom(src, 40000))}
	return client
}

// askPipe sends one query on c and reads the answer.
func askPipe(c net.Conn) (*dns.Msg, error) {
	c.SetDeadline(time.Now().Add(2 * time.Second))
	dc := &dns.Conn{Conn: c}
	q := new(dns.Msg)
	q.SetQuestion("app.example.test.", dns.TypeA)
	if err := dc.WriteMsg(q); err != nil {
		return nil, err
	}
	return dc.ReadMsg()
}

// TestIdleTCPConnectionsFromOneIPv6SiteDoNotLockOutANewClient: 1 024 idle
// connections from one /48 (32 connections from each of 32 /56s, every
// one within the per-/56 cap) do not take the listener: a client from
// another network is served.
func TestIdleTCPConnectionsFromOneIPv6SiteDoNotLockOutANewClient(t *testing.T) {
	s, m, _ := startRRLServer(t, Config{TCPIdleTimeout: time.Minute})
	ln := newFakeListener()
	s.wg.Add(1)
	go s.acceptTCP(ln)
	defer ln.Close()
	var held []net.Conn
	defer func() {
		for _, c := range held {
			c.Close()
		}
	}()
	site := netip.MustParsePrefix("2001:db8:77::/48").Addr().As16()
	for sub := range 32 {
		for host := range 32 {
			a := site
			a[6] = byte(sub) // the /56 within the /48
			a[15] = byte(host + 1)
			held = append(held, ln.dial(netip.AddrFrom16(a)))
		}
	}
	// A dial returns once the accept loop took the connection, before it is
	// counted: wait for the last one (the gauge alone is at the cap already
	// while the last connections are still being counted and evicted).
	evicted := func() float64 { return testutil.ToFloat64(m.TCPEvicted.WithLabelValues(tcpReasonSite)) }
	require.Eventually(t, func() bool {
		return testutil.ToFloat64(m.TCPConns) == DefaultMaxTCPPerSite && evicted() >= 1024-DefaultMaxTCPPerSite
	}, 10*time.Second, 10*time.Millisecond, "the /48 holds max_tcp_per_site connections, the others evicted")
	assert.Equal(t, float64(1024-DefaultMaxTCPPerSite), evicted(),
		"each connection beyond the site's cap closed the site's oldest idle one")
	assert.Zero(t, testutil.ToFloat64(m.TCPClientRejected), "no /56 went over its own cap")
	r, err := askPipe(ln.dial(netip.MustParseAddr("2001:db8:99::1")))
	require.NoError(t, err, "a client of another /48 is served")
	assert.Equal(t, dns.RcodeSuccess, r.Rcode)
	assert.Zero(t, testutil.ToFloat64(m.TCPEvicted.WithLabelValues(tcpReasonTotal)), "the listener never filled")
}

// nopConn is a connection that is only counted.
type nopConn struct{ net.Conn }

func (nopConn) SetReadDeadline(time.Time) error { return nil }

func TestConnTableEvictsTheOldestIdleConnection(t *testing.T) {
	type step struct {
		from string
		busy bool // marked busy once admitted
	}
	lim := tcpLimits{perListener: 3, perClient: 2, perSite: 2, v4: 24, v6: 56, site: 48}
	for _, tc := range []struct {
		name  string
		steps []step
		want  []string // per step: "+" admitted, "+eN" admitted after evicting step N (reason), "-reason" refused
	}{
		{"a full listener closes its oldest idle connection for a new one",
			[]step{{"192.0.2.1", false}, {"198.51.100.1", false}, {"203.0.113.1", false}, {"10.0.0.1", false}},
			[]string{"+", "+", "+", "+e0total"}},
		{"a full listener skips busy connections and closes the oldest idle one",
			[]step{{"192.0.2.1", true}, {"198.51.100.1", false}, {"203.0.113.1", false}, {"10.0.0.1", false}},
			[]string{"+", "+", "+", "+e1total"}},
		{"a full listener whose connections are all busy refuses the new one",
			[]step{{"192.0.2.1", true}, {"198.51.100.1", true}, {"203.0.113.1", true}, {"10.0.0.1", false}},
			[]string{"+", "+", "+", "-total"}},
		{"a client prefix over its own cap is refused even with idle connections",
			[]step{{"192.0.2.1", false}, {"192.0.2.200", false}, {"192.0.2.7", false}},
			[]string{"+", "+", "-client"}},
		{"a full IPv6 site closes its own oldest idle connection, not another network's",
			[]step{{"2001:db8:1:100::1", false}, {"2001:db8:9::1", false}, {"2001:db8:1:200::1", false}, {"2001:db8:1:300::1", false}},
			[]string{"+", "+", "+", "+e0site"}},
		{"a full IPv6 site whose connections are busy refuses the new one",
			[]step{{"2001:db8:1:100::1", true}, {"2001:db8:1:200::1", true}, {"2001:db8:1:300::1", false}},
			[]string{"+", "+", "-site"}},
		{"IPv4-mapped clients count as IPv4, in no site",
			[]step{{"::ffff:192.0.2.1", false}, {"::ffff:198.51.100.1", false}, {"::ffff:203.0.113.1", false}},
			[]string{"+", "+", "+"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			table := newConnTable(lim, time.Second)
			ln := table.newListener()
			var admitted []*tcpConn
			index := func(v *tcpConn) int {
				for i, a := range admitted {
					if a == v {
						return i
					}
				}
				return -1
			}
			at := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
			var got []string
			for i, st := range tc.steps {
				c, evicted, reasons, refused := table.admit(ln, nopConn{}, netip.MustParseAddr(st.from), at.Add(time.Duration(i)*time.Second))
				admitted = append(admitted, c)
				switch {
				case refused != "":
					got = append(got, "-"+refused)
				default:
					out := "+"
					for j, v := range evicted {
						out += fmt.Sprintf("e%d%s", index(v), reasons[j])
						assert.False(t, table.busy(v), "an evicted connection cannot go busy")
					}
					got = append(got, out)
					if st.busy {
						require.True(t, table.busy(c))
					}
				}
			}
			assert.Equal(t, tc.want, got)
			for _, c := range admitted {
				if c != nil {
					table.release(c)
				}
			}
			assert.Zero(t, ln.n, "every connection released")
			assert.Empty(t, table.clients)
			assert.Empty(t, table.sites)
			assert.Empty(t, table.all)
		})
	}
}

func TestConnTablePressureIdleTimeout(t *testing.T) {
	table := newConnTable(tcpLimits{perListener: 4, perClient: 4, v4: 24, v6: 56, site: 48}, 2*time.Second)
	ln := table.newListener()
	at := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	deadlines := map[int]time.Time{}
	var conns []*tcpConn
	for i := range 3 {
		c, _, _, refused := table.admit(ln, deadlineConn{i: i, seen: deadlines}, netip.MustParseAddr(fmt.Sprintf("192.0.%d.1", i)), at)
		require.Empty(t, refused)
		conns = append(conns, c)
		if i < 2 {
			assert.Equal(t, 10*time.Second, table.idleTimeout(c, 10*time.Second), "at %d of 4 the normal idle timeout holds", i+1)
		}
	}
	assert.Equal(t, 2*time.Second, table.idleTimeout(conns[0], 10*time.Second), "above half of the listener the pressure timeout holds")
	assert.Equal(t, map[int]time.Time{0: at.Add(2 * time.Second), 1: at.Add(2 * time.Second), 2: at.Add(2 * time.Second)}, deadlines,
		"connections already idle are cut to the pressure timeout, counted from when they went idle")
	table.release(conns[2])
	assert.Equal(t, 10*time.Second, table.idleTimeout(conns[0], 10*time.Second), "back at half, the normal timeout again")
}

// deadlineConn records the read deadlines set on it.
type deadlineConn struct {
	net.Conn
	i    int
	seen map[int]time.Time
}

func (c deadlineConn) SetReadDeadline(d time.Time) error { c.seen[c.i] = d; return nil }
