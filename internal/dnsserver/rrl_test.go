package dnsserver

import (
	"context"
	"net"
	"net/netip"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/miekg/dns"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/meridian-gslb/meridian/internal/config"
)

// fakeClock is the limiter's time in tests: it only moves when told.
type fakeClock struct{ t time.Time }

func (c *fakeClock) advance(d time.Duration) { c.t = c.t.Add(d) }

func newTestLimiter(cfg RRL) (*limiter, *fakeClock) {
	clk := &fakeClock{t: time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)}
	if cfg.IPv4Prefix == 0 {
		cfg.IPv4Prefix = 24
	}
	if cfg.IPv6Prefix == 0 {
		cfg.IPv6Prefix = 56
	}
	return newLimiter(cfg, clk.t), clk
}

// testID is the response identity the limiter tests charge.
var testID = rrlIdentity(rrlByName, "app.example.test.")

// send asks the limiter about n responses to src spread evenly over d and
// returns how many were allowed.
func send(l *limiter, clk *fakeClock, src string, n int, d time.Duration) int {
	a := netip.MustParseAddr(src)
	ok := 0
	for range n {
		if l.allow(a, testID, clk.t) {
			ok++
		}
		clk.advance(d / time.Duration(n))
	}
	return ok
}

func TestLimiter(t *testing.T) {
	for _, tc := range []struct {
		name string
		cfg  RRL
		run  func(t *testing.T, l *limiter, clk *fakeClock)
	}{
		{"a quiet prefix may burst rate times window responses at once", RRL{ResponsesPerSec: 100, Window: 3},
			func(t *testing.T, l *limiter, clk *fakeClock) {
				assert.Equal(t, 300, send(l, clk, "192.0.2.1", 1000, 0))
			}},
		{"a flood is held to the rate once the burst is spent", RRL{ResponsesPerSec: 100, Window: 1},
			func(t *testing.T, l *limiter, clk *fakeClock) {
				got := send(l, clk, "192.0.2.1", 50_000, 10*time.Second) // 5000 q/s for 10 s
				assert.InDelta(t, 100+100*10, got, 2, "burst + rate × 10 s")
			}},
		{"traffic under the rate is never limited", RRL{ResponsesPerSec: 100, Window: 1},
			func(t *testing.T, l *limiter, clk *fakeClock) {
				assert.Equal(t, 900, send(l, clk, "192.0.2.1", 900, 10*time.Second))
			}},
		{"credit refills at the rate after a burst", RRL{ResponsesPerSec: 100, Window: 2},
			func(t *testing.T, l *limiter, clk *fakeClock) {
				require.Equal(t, 200, send(l, clk, "192.0.2.1", 400, 0))
				clk.advance(500 * time.Millisecond)
				assert.Equal(t, 50, send(l, clk, "192.0.2.1", 400, 0), "half a second earns 50")
				clk.advance(time.Hour)
				assert.Equal(t, 200, send(l, clk, "192.0.2.1", 400, 0), "credit is capped at the window")
			}},
		{"addresses in one IPv4 /24 share a bucket", RRL{ResponsesPerSec: 10, Window: 1},
			func(t *testing.T, l *limiter, clk *fakeClock) {
				assert.Equal(t, 10, send(l, clk, "198.51.100.1", 100, 0))
				assert.Equal(t, 0, send(l, clk, "198.51.100.254", 100, 0))
			}},
		{"addresses in different /24s have their own buckets", RRL{ResponsesPerSec: 10, Window: 1},
			func(t *testing.T, l *limiter, clk *fakeClock) {
				assert.Equal(t, 10, send(l, clk, "127.0.1.50", 100, 0))
				assert.Equal(t, 10, send(l, clk, "127.0.2.60", 100, 0))
			}},
		{"a /32 prefix separates neighbours", RRL{ResponsesPerSec: 10, Window: 1, IPv4Prefix: 32},
			func(t *testing.T, l *limiter, clk *fakeClock) {
				assert.Equal(t, 10, send(l, clk, "127.0.0.50", 100, 0))
				assert.Equal(t, 10, send(l, clk, "127.0.0.60", 100, 0))
			}},
		{"an IPv4-mapped IPv6 address counts as its IPv4 address", RRL{ResponsesPerSec: 10, Window: 1},
			func(t *testing.T, l *limiter, clk *fakeClock) {
				assert.Equal(t, 10, send(l, clk, "192.0.2.1", 100, 0))
				assert.Equal(t, 0, send(l, clk, "::ffff:192.0.2.9", 100, 0))
			}},
		{"addresses in one IPv6 /56 share a bucket and the next /56 does not", RRL{ResponsesPerSec: 10, Window: 1},
			func(t *testing.T, l *limiter, clk *fakeClock) {
				assert.Equal(t, 10, send(l, clk, "2001:db8:0:1::1", 100, 0))
				assert.Equal(t, 0, send(l, clk, "2001:db8:0:ff:ffff::2", 100, 0), "same /56")
				assert.Equal(t, 10, send(l, clk, "2001:db8:0:100::1", 100, 0), "next /56")
			}},
		{"a very high rate is still limited", RRL{ResponsesPerSec: 1_000_000, Window: 1},
			func(t *testing.T, l *limiter, clk *fakeClock) {
				assert.Equal(t, 1_000_000, send(l, clk, "192.0.2.1", 1_200_000, 0))
			}},
		{"a heavy hitter keeps its state while more prefixes than slots pass by", RRL{ResponsesPerSec: 10, Window: 60},
			func(t *testing.T, l *limiter, clk *fakeClock) {
				require.Equal(t, 600, send(l, clk, "203.0.113.1", 1000, 0))
				for i := range 3 * rrlSlots { // one query from each of 393216 other /24s
					l.allow(netip.AddrFrom4([4]byte{byte(11 + i>>16), byte(i >> 8), byte(i), 1}), testID, clk.t)
				}
				assert.Equal(t, 0, send(l, clk, "203.0.113.1", 100, 0), "still limited")
				assert.Len(t, l.slots, rrlSlots, "the table never grows")
			}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			l, clk := newTestLimiter(tc.cfg)
			tc.run(t, l, clk)
		})
	}
}

func TestSlip(t *testing.T) {
	for _, tc := range []struct {
		name string
		slip int
		want string // actions on 6 limited queries: d = drop, s = slip
	}{
		{"slip 0 drops every limited response", 0, "dddddd"},
		{"slip 1 truncates every limited response", 1, "ssssss"},
		{"slip 2 truncates every second limited response", 2, "dsdsds"},
		{"slip 3 truncates every third limited response", 3, "ddsdds"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			l, clk := newTestLimiter(RRL{ResponsesPerSec: 1, Window: 1, Slip: tc.slip})
			src := netip.MustParseAddr("192.0.2.1")
			var slips uint32
			require.Equal(t, rrlSend, l.check(src, testID, 0, clk.t, &slips))
			got := ""
			for range 6 {
				switch l.check(src, testID, 0, clk.t, &slips) {
				case rrlDrop:
					got += "d"
				case rrlSlip:
					got += "s"
				default:
					got += "+"
				}
			}
			assert.Equal(t, tc.want, got)
		})
	}
}

func TestLimiterIsExactUnderConcurrency(t *testing.T) {
	l, clk := newTestLimiter(RRL{ResponsesPerSec: 1000, Window: 2})
	var allowed atomic.Int64
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			src := netip.AddrFrom4([4]byte{192, 0, 2, byte(g)})
			for range 1000 {
				if l.allow(src, testID, clk.t) {
					allowed.Add(1)
				}
			}
		}()
	}
	wg.Wait()
	assert.Equal(t, int64(2000), allowed.Load(), "8 goroutines of one /24 share exactly one burst")
}

func TestSlipReply(t *testing.T) {
	for _, tc := range []struct {
		name string
		pkt  func() []byte
		ok   bool
	}{
		{"a plain query gets its question back with TC set", func() []byte {
			m := new(dns.Msg)
			m.SetQuestion("App.Example.Test.", dns.TypeAAAA)
			b, _ := m.Pack()
			return b
		}, true},
		{"a query with EDNS gets no OPT record back", func() []byte {
			m := new(dns.Msg)
			m.SetQuestion("app.example.test.", dns.TypeA)
			m.SetEdns0(1232, true)
			b, _ := m.Pack()
			return b
		}, true},
		{"a query without a question is dropped", func() []byte {
			m := new(dns.Msg)
			m.Id = 7
			b, _ := m.Pack()
			return b
		}, false},
		{"a question cut short is dropped", func() []byte {
			m := new(dns.Msg)
			m.SetQuestion("app.example.test.", dns.TypeA)
			b, _ := m.Pack()
			return b[:len(b)-2]
		}, false},
		{"a question name longer than 255 bytes is dropped", func() []byte {
			b := []byte{0, 1, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0}
			for range 5 {
				b = append(b, 63)
				b = append(b, make([]byte, 63)...)
			}
			return append(b, 0, 0, 1, 0, 1)
		}, false},
		{"a compressed question name is dropped", func() []byte {
			return []byte{0, 1, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0xC0, 12, 0, 1, 0, 1}
		}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			in := tc.pkt()
			out := slipReply(make([]byte, 512), in)
			if !tc.ok {
				assert.Nil(t, out)
				return
			}
			q := new(dns.Msg)
			require.NoError(t, q.Unpack(in))
			r := new(dns.Msg)
			require.NoError(t, r.Unpack(out))
			assert.True(t, r.Response)
			assert.True(t, r.Truncated)
			assert.Equal(t, q.Id, r.Id)
			assert.Equal(t, q.RecursionDesired, r.RecursionDesired)
			assert.Equal(t, dns.RcodeSuccess, r.Rcode)
			assert.Equal(t, q.Question, r.Question)
			assert.Empty(t, r.Answer)
			assert.Empty(t, r.Ns)
			assert.Empty(t, r.Extra)
		})
	}
}

func startRRLServer(t *testing.T, cfg Config) (*Server, *Metrics, string) {
	t.Helper()
	checkLeaks(t)
	m := NewMetrics(prometheus.NewRegistry())
	cfg.Listen = []string{"127.0.0.1:0"}
	cfg.Metrics = m
	cfg.UDPSockets = 2
	cfg.TCPIdleTimeout = 2 * time.Second
	s := New(cfg, newStore(t, 1))
	require.NoError(t, s.Start())
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		require.NoError(t, s.Shutdown(ctx))
	})
	return s, m, s.Addrs()[0].String()
}

func TestServerLimitsAFloodAndSlipsTruncatedReplies(t *testing.T) {
	_, m, addr := startRRLServer(t, Config{RRL: RRL{Enabled: true, ResponsesPerSec: 5, Window: 1, Slip: 2}})
	c, err := net.Dial("udp", addr)
	require.NoError(t, err)
	defer c.Close()
	const n = 100
	q := new(dns.Msg)
	q.SetQuestion("app.example.test.", dns.TypeA)
	for i := range n {
		q.Id = uint16(i)
		b, _ := q.Pack()
		_, err := c.Write(b)
		require.NoError(t, err)
	}
	answered, slipped := 0, 0
	buf := make([]byte, 4096)
	for {
		require.NoError(t, c.SetReadDeadline(time.Now().Add(300*time.Millisecond)))
		k, err := c.Read(buf)
		if err != nil {
			break
		}
		r := new(dns.Msg)
		require.NoError(t, r.Unpack(buf[:k]))
		if r.Truncated {
			slipped++
			assert.Empty(t, r.Answer)
			assert.Equal(t, q.Question, r.Question)
		} else {
			answered++
			assert.Len(t, r.Answer, 1)
		}
	}
	t.Logf("%d queries in a burst: %d answered, %d slipped", n, answered, slipped)
	assert.InDelta(t, 5, answered, 1, "the burst of rate × window, plus what refilled meanwhile")
	dropped := testutil.ToFloat64(m.RRLDropped)
	assert.Equal(t, float64(slipped), testutil.ToFloat64(m.RRLSlipped))
	assert.Equal(t, float64(n-answered), dropped+float64(slipped), "every limited query was dropped or slipped")
	assert.InDelta(t, dropped, float64(slipped), 2, "slip 2: every second limited response is truncated")

	tcp := exchange(t, "tcp", addr, q) // the way a real client retries: TCP is not limited
	assert.Len(t, tcp.Answer, 1)
}

func TestTCPConnectionsPerClientAreLimited(t *testing.T) {
	_, m, addr := startRRLServer(t, Config{MaxTCPPerClient: 2})
	q := new(dns.Msg)
	q.SetQuestion("app.example.test.", dns.TypeA)
	c := &dns.Client{Net: "tcp", Timeout: 2 * time.Second}
	var open []*dns.Conn
	defer func() {
		for _, conn := range open {
			conn.Close()
		}
	}()
	for i := range 2 {
		conn, err := c.Dial(addr)
		require.NoError(t, err)
		open = append(open, conn)
		_, _, err = c.ExchangeWithConn(q, conn)
		require.NoError(t, err, "connection %d is served", i)
	}
	third, err := c.Dial(addr)
	require.NoError(t, err)
	_, _, err = c.ExchangeWithConn(q, third)
	third.Close()
	assert.Error(t, err, "the third connection from one address is closed at once")
	assert.Equal(t, 1.0, testutil.ToFloat64(m.TCPClientRejected))
	assert.Zero(t, testutil.ToFloat64(m.TCPRejected), "the global limit was not reached")

	open[0].Close()
	open = open[1:]
	require.Eventually(t, func() bool {
		conn, err := c.Dial(addr)
		if err != nil {
			return false
		}
		defer conn.Close()
		_, _, err = c.ExchangeWithConn(q, conn)
		return err == nil
	}, 2*time.Second, 20*time.Millisecond, "a slot frees when a connection closes")
}

func TestTCPReadsHaveADeadline(t *testing.T) {
	_, _, addr := startRRLServer(t, Config{})
	for _, tc := range []struct {
		name string
		send []byte
	}{
		{"an idle connection is closed", nil},
		{"a connection that sends half a length is closed", []byte{0}},
		{"a connection that announces 65535 bytes and sends 10 is closed", append([]byte{0xFF, 0xFF}, make([]byte, 10)...)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			c, err := net.Dial("tcp", addr)
			require.NoError(t, err)
			defer c.Close()
			_, err = c.Write(tc.send)
			require.NoError(t, err)
			start := time.Now()
			require.NoError(t, c.SetReadDeadline(time.Now().Add(5*time.Second)))
			_, err = c.Read(make([]byte, 1))
			assert.Error(t, err, "closed by the server")
			assert.Less(t, time.Since(start), 4*time.Second, "within the 2s idle timeout")
		})
	}
}

func TestRRLOffByDefaultInTheLibrary(t *testing.T) {
	s := New(Config{Listen: []string{"127.0.0.1:0"}}, newStore(t, 1))
	assert.Nil(t, s.rrl)
	assert.Equal(t, "off", s.rrlSummary())
	s = New(Config{Listen: []string{"127.0.0.1:0"}, RRL: RRL{Enabled: true}}, newStore(t, 1))
	assert.Equal(t, "200/s and 102400 bytes/s per /24 (IPv4) /56 (IPv6) and response identity, window 15s, slip 0", s.rrlSummary())
}

// TestRRLConfig checks the server.dns.rrl and max_tcp_per_client settings
// of the config file (here, next to the limiter they configure).
func TestRRLConfig(t *testing.T) {
	const zone = `
zones:
  - apex: example.test
    nameservers: [{name: ns1.example.test, ipv4: [192.0.2.53]}]
`
	parse := func(server string) (*config.File, error) {
		return config.Parse("t.yaml", []byte("server:\n  dns:\n"+server+zone))
	}
	t.Run("RRL is on with documented defaults when the section is absent", func(t *testing.T) {
		f, err := parse("    listen: [\"127.0.0.1:5353\"]\n")
		require.NoError(t, err)
		r := f.Server.DNS.RRL
		require.NotNil(t, r.Enabled)
		require.NotNil(t, r.Slip)
		assert.True(t, *r.Enabled)
		assert.Equal(t, 200, r.ResponsesPerSec)
		assert.Equal(t, 200*512, r.BytesPerSec)
		assert.Equal(t, 2, *r.Slip)
		assert.Equal(t, 24, r.IPv4Prefix)
		assert.Equal(t, 56, r.IPv6Prefix)
		assert.Equal(t, 15, r.Window)
		assert.Equal(t, 32, f.Server.DNS.MaxTCPPerClient)
	})
	t.Run("exempt networks are kept as written and none are exempt by default", func(t *testing.T) {
		f, err := parse("    rrl: {exempt: [192.0.2.0/24, \"2001:db8::/32\"]}\n")
		require.NoError(t, err)
		assert.Equal(t, []string{"192.0.2.0/24", "2001:db8::/32"}, f.Server.DNS.RRL.Exempt)
		f, err = parse("    listen: [\"127.0.0.1:5353\"]\n")
		require.NoError(t, err)
		assert.Empty(t, f.Server.DNS.RRL.Exempt)
	})
	t.Run("bytes_per_second follows responses_per_second unless set", func(t *testing.T) {
		f, err := parse("    rrl: {responses_per_second: 5}\n")
		require.NoError(t, err)
		assert.Equal(t, 5*512, f.Server.DNS.RRL.BytesPerSec)
		f, err = parse("    rrl: {responses_per_second: 5, bytes_per_second: 100000}\n")
		require.NoError(t, err)
		assert.Equal(t, 100000, f.Server.DNS.RRL.BytesPerSec)
	})
	t.Run("slip 0 and enabled false are kept, not defaulted", func(t *testing.T) {
		f, err := parse("    rrl: {enabled: false, slip: 0}\n")
		require.NoError(t, err)
		assert.False(t, *f.Server.DNS.RRL.Enabled)
		assert.Equal(t, 0, *f.Server.DNS.RRL.Slip)
	})
	for _, tc := range []struct {
		name, server, want string
	}{
		{"a negative rate is rejected with its range", "    rrl: {responses_per_second: -1}\n", "server.dns.rrl.responses_per_second: -1 is out of range (allowed 1..1000000"},
		{"a rate above a million is rejected", "    rrl: {responses_per_second: 2000000}\n", "server.dns.rrl.responses_per_second: 2000000 is out of range"},
		{"a byte budget under one 512-byte response per second is rejected", "    rrl: {bytes_per_second: 100}\n", "server.dns.rrl.bytes_per_second: 100 is out of range (allowed 512..1000000000"},
		{"a slip above 10 is rejected", "    rrl: {slip: 11}\n", "server.dns.rrl.slip: 11 is out of range (allowed 0..10"},
		{"an IPv4 prefix longer than 32 is rejected", "    rrl: {ipv4_prefix: 33}\n", "server.dns.rrl.ipv4_prefix: 33 is out of range (allowed 8..32"},
		{"an IPv6 prefix longer than 64 is rejected", "    rrl: {ipv6_prefix: 128}\n", "server.dns.rrl.ipv6_prefix: 128 is out of range (allowed 16..64"},
		{"a window over an hour is rejected", "    rrl: {window: 7200}\n", "server.dns.rrl.window: 7200 is out of range (allowed 1..3600 seconds"},
		{"a negative max_tcp_per_client is rejected", "    max_tcp_per_client: -3\n", "server.dns.max_tcp_per_client: -3 is out of range"},
		{"an exempt entry that is not a CIDR prefix is rejected with its index", "    rrl: {exempt: [192.0.2.0/24, resolver.example]}\n", `server.dns.rrl.exempt[1]: "resolver.example" is not a CIDR prefix`},
		{"an exempt network with host bits set is rejected", "    rrl: {exempt: [192.0.2.1/24]}\n", `server.dns.rrl.exempt[0]: "192.0.2.1/24" has host bits set (did you mean 192.0.2.0/24?)`},
		{"an exempt network listed twice is rejected", "    rrl: {exempt: [\"2001:db8::/32\", \"2001:db8::/32\"]}\n", "server.dns.rrl.exempt[1]: duplicate network 2001:db8::/32 (already server.dns.rrl.exempt[0])"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := parse(tc.server)
			require.Error(t, err)
			assert.Contains(t, err.Error(), tc.want)
		})
	}
}

// BenchmarkLimiter is the cost of one RRL decision, over many prefixes.
func BenchmarkLimiter(b *testing.B) {
	l, clk := newTestLimiter(RRL{ResponsesPerSec: 200, Window: 15})
	b.RunParallel(func(pb *testing.PB) {
		i := uint32(0)
		for pb.Next() {
			i++
			l.allow(netip.AddrFrom4([4]byte{10, byte(i >> 16), byte(i >> 8), 1}), testID, clk.t)
		}
	})
}
