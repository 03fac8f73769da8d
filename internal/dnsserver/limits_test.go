package dnsserver

import (
	"context"
	"fmt"
	"net"
	"net/netip"
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
)

// tcpFrom dials addr over TCP from the loopback address src (any of
// 127/8 is ours on Linux) and checks that the connection is served.
func tcpFrom(t *testing.T, src, addr string) (*dns.Conn, error) {
	t.Helper()
	c := &dns.Client{Net: "tcp", Timeout: 2 * time.Second,
		Dialer: &net.Dialer{Timeout: 2 * time.Second, LocalAddr: &net.TCPAddr{IP: net.ParseIP(src)}}}
	conn, err := c.Dial(addr)
	if err != nil {
		return nil, err
	}
	q := new(dns.Msg)
	q.SetQuestion("app.example.test.", dns.TypeA)
	if _, _, err := c.ExchangeWithConn(q, conn); err != nil {
		conn.Close()
		return nil, err
	}
	return conn, nil
}

func TestTCPConnectionsAreCappedPerClientPrefix(t *testing.T) {
	for _, tc := range []struct {
		name     string
		v4       int
		full     []string // connections opened first, each served
		refused  string   // then refused: its prefix is full
		served   string   // then served: another prefix
		rejected float64
	}{
		{"addresses of one /24 share the cap and another /24 is served", 0,
			[]string{"127.0.1.10", "127.0.1.11", "127.0.1.12"}, "127.0.1.200", "127.0.2.10", 1},
		{"with a /32 prefix neighbours have their own caps", 32,
			[]string{"127.0.1.10", "127.0.1.10", "127.0.1.10"}, "127.0.1.10", "127.0.1.11", 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, m, addr := startRRLServer(t, Config{MaxTCPPerClient: 3, TCPClientIPv4Prefix: tc.v4})
			var open []*dns.Conn
			defer func() {
				for _, c := range open {
					c.Close()
				}
			}()
			for _, src := range tc.full {
				c, err := tcpFrom(t, src, addr)
				require.NoError(t, err, "connection from %s is served", src)
				open = append(open, c)
			}
			_, err := tcpFrom(t, tc.refused, addr)
			assert.Error(t, err, "a connection from %s is closed at once: its prefix is full", tc.refused)
			c, err := tcpFrom(t, tc.served, addr)
			require.NoError(t, err, "a connection from %s (another prefix) is served", tc.served)
			open = append(open, c)
			assert.Equal(t, tc.rejected, testutil.ToFloat64(m.TCPClientRejected))
			assert.Zero(t, testutil.ToFloat64(m.TCPRejected), "the global limit was not reached")
		})
	}
}

// newSignedStore publishes the test config with example.test signed by a
// fresh Ed25519 key.
func newSignedStore(t testing.TB) (*engine.Store, *dnssec.Signer) {
	t.Helper()
	f, err := config.Parse("test.yaml", []byte(fmt.Sprintf(testConfig, nameservers(1))))
	require.NoError(t, err)
	k, err := dnssec.Generate("example.test.", dns.ED25519, 3600)
	require.NoError(t, err)
	sg, err := dnssec.NewSigner("example.test.", []*dnssec.Key{k}, dnssec.Options{})
	require.NoError(t, err)
	st := &engine.Store{}
	_, err = st.Publish(&f.Desired, engine.Options{Signers: map[string]engine.ZoneSigner{"example.test.": sg}})
	require.NoError(t, err)
	return st, sg
}

// stopClocks makes the signing limit's time stand still, so that buckets
// do not refill during a test and counts are exact.
func stopClocks(s *Server) {
	at := time.Now()
	for _, g := range []engine.SignGate{s.signUDP, s.signTCP} {
		g.(*signGate).now = func() time.Time { return at }
	}
}

func doQuery(name string) *dns.Msg {
	q := new(dns.Msg)
	q.SetQuestion(name, dns.TypeA)
	q.SetEdns0(1232, true)
	return q
}

func exchangeFrom(t *testing.T, proto, src, addr string, q *dns.Msg) *dns.Msg {
	t.Helper()
	d := &net.Dialer{Timeout: 2 * time.Second}
	if proto == "udp" {
		d.LocalAddr = &net.UDPAddr{IP: net.ParseIP(src)}
	} else {
		d.LocalAddr = &net.TCPAddr{IP: net.ParseIP(src)}
	}
	c := &dns.Client{Net: proto, Timeout: 2 * time.Second, Dialer: d}
	r, _, err := c.Exchange(q, addr)
	require.NoError(t, err)
	return r
}

// denied reports whether r is a signed compact denial (NOERROR, NSEC and
// its RRSIG in authority).
func denied(r *dns.Msg) bool {
	var nsec, sig bool
	for _, rr := range r.Ns {
		switch x := rr.(type) {
		case *dns.NSEC:
			nsec = true
		case *dns.RRSIG:
			sig = sig || x.TypeCovered == dns.TypeNSEC
		}
	}
	return r.Rcode == dns.RcodeSuccess && !r.Truncated && nsec && sig
}

func TestSignLimitPerPrefixAndTransport(t *testing.T) {
	checkLeaks(t)
	st, sg := newSignedStore(t)
	m := NewMetrics(prometheus.NewRegistry())
	s := New(Config{Listen: []string{"127.0.0.1:0"}, UDPSockets: 1, Metrics: m,
		SignLimit: SignLimit{Enabled: true, SignaturesPerSec: 1, Window: 5}}, st)
	stopClocks(s)
	require.NoError(t, s.Start())
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		require.NoError(t, s.Shutdown(ctx))
	})
	addr := s.Addrs()[0].String()
	const flooder, other = "127.0.1.10", "127.0.2.10"

	t.Run("a prefix gets its burst of fresh denials over UDP, then empty truncated replies", func(t *testing.T) {
		for i := range 8 {
			r := exchangeFrom(t, "udp", "127.0.1."+fmt.Sprint(10+i), addr, doQuery(fmt.Sprintf("u%d.example.test.", i)))
			if i < 5 {
				assert.True(t, denied(r), "query %d is a signed denial", i)
				continue
			}
			assert.True(t, r.Truncated, "query %d is truncated", i)
			assert.Empty(t, r.Answer)
			assert.Empty(t, r.Ns)
			assert.Equal(t, dns.RcodeSuccess, r.Rcode)
		}
		assert.Equal(t, 3.0, testutil.ToFloat64(m.SignLimited.WithLabelValues("udp")))
	})
	t.Run("denials already signed are still answered beyond the limit", func(t *testing.T) {
		r := exchangeFrom(t, "udp", flooder, addr, doQuery("u0.example.test."))
		assert.True(t, denied(r))
	})
	t.Run("a positive answer signed before is answered beyond the limit", func(t *testing.T) {
		// Another prefix pays for the signatures of both possible draws (70/30).
		seen := map[string]bool{}
		for i := 0; i < 100 && len(seen) < 2; i++ {
			warm := exchangeFrom(t, "udp", other, addr, doQuery("app.example.test."))
			require.Len(t, warm.Answer, 2)
			seen[warm.Answer[0].(*dns.A).A.String()] = true
		}
		require.Len(t, seen, 2, "both answers were drawn and signed")
		r := exchangeFrom(t, "udp", flooder, addr, doQuery("app.example.test."))
		assert.Equal(t, dns.RcodeSuccess, r.Rcode)
		assert.False(t, r.Truncated)
		assert.Len(t, r.Answer, 2, "the A record and its RRSIG")
	})
	t.Run("TCP has its own bucket: the retry of a truncated query is answered", func(t *testing.T) {
		r := exchangeFrom(t, "tcp", flooder, addr, doQuery("u5.example.test."))
		assert.True(t, denied(r))
	})
	t.Run("beyond the TCP bucket a denial is SERVFAIL with no records", func(t *testing.T) {
		for i := range 4 {
			r := exchangeFrom(t, "tcp", flooder, addr, doQuery(fmt.Sprintf("t%d.example.test.", i)))
			require.True(t, denied(r), "query %d is within the burst", i)
		}
		r := exchangeFrom(t, "tcp", flooder, addr, doQuery("t4.example.test."))
		assert.Equal(t, dns.RcodeServerFailure, r.Rcode)
		assert.Empty(t, r.Answer)
		assert.Empty(t, r.Ns)
		require.NotNil(t, r.IsEdns0())
		assert.True(t, r.IsEdns0().Do())
		assert.Equal(t, 1.0, testutil.ToFloat64(m.SignLimited.WithLabelValues("tcp")))
	})
	t.Run("another prefix is served meanwhile", func(t *testing.T) {
		for _, proto := range []string{"udp", "tcp"} {
			r := exchangeFrom(t, proto, other, addr, doQuery("other-"+proto+".example.test."))
			assert.True(t, denied(r), proto)
		}
	})
	t.Run("queries without DO are never limited", func(t *testing.T) {
		q := new(dns.Msg)
		q.SetQuestion("plain.example.test.", dns.TypeA)
		r := exchangeFrom(t, "udp", flooder, addr, q)
		assert.Equal(t, dns.RcodeNameError, r.Rcode)
	})
	_, misses := sg.Stats()
	// 5 UDP + 1 + 4 TCP + 2 other NSECs, the zone's SOA (in every denial,
	// signed once) and the two A sets (both draws): no other signature was made.
	assert.Equal(t, uint64(5+1+4+2+1+2), misses, "every refused denial cost no signature")
}

func TestSignLimitDefaultsAndSummary(t *testing.T) {
	s := New(Config{Listen: []string{"127.0.0.1:0"}}, newStore(t, 1))
	assert.Nil(t, s.signUDP, "off in the library unless enabled")
	assert.Equal(t, "off", s.signLimitSummary())
	assert.Equal(t, "32 per /24 (IPv4) /56 (IPv6), 128 per IPv6 /48", s.tcpPerClientSummary())
	s = New(Config{Listen: []string{"127.0.0.1:0"}, SignLimit: SignLimit{Enabled: true}, TCPClientIPv6Prefix: 64}, newStore(t, 1))
	assert.NotNil(t, s.signUDP)
	assert.NotNil(t, s.signTCP)
	assert.Equal(t, "100 replies needing fresh signatures/s per /24 (IPv4) /56 (IPv6) and transport, window 10s", s.signLimitSummary())
	assert.Equal(t, "32 per /24 (IPv4) /64 (IPv6), 128 per IPv6 /48", s.tcpPerClientSummary())
}

func TestSignGateBuckets(t *testing.T) {
	at := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		name string
		cfg  SignLimit
		srcs []string // asked in order, once each
		want string   // + allowed, - refused
	}{
		{"a prefix gets rate times window signatures at once", SignLimit{SignaturesPerSec: 2, Window: 2},
			[]string{"192.0.2.1", "192.0.2.1", "192.0.2.1", "192.0.2.1", "192.0.2.1"}, "++++-"},
		{"addresses of one IPv6 /56 share a bucket", SignLimit{SignaturesPerSec: 1, Window: 2},
			[]string{"2001:db8:0:1::1", "2001:db8:0:ff::2", "2001:db8:0:ff:1::3"}, "++-"},
		{"addresses of one IPv6 /64 share a bucket with a /64 prefix", SignLimit{SignaturesPerSec: 1, Window: 1, IPv6Prefix: 64},
			[]string{"2001:db8:0:1::1", "2001:db8:0:1:ffff::1", "2001:db8:0:2::1"}, "+-+"},
		{"addresses of different /24s have their own buckets", SignLimit{SignaturesPerSec: 1, Window: 1},
			[]string{"192.0.2.1", "192.0.2.2", "198.51.100.1"}, "+-+"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			udp, _ := newSignGates(tc.cfg.withDefaults(), at)
			udp.(*signGate).now = func() time.Time { return at }
			got := ""
			for _, src := range tc.srcs {
				if udp.AllowSign(netip.MustParseAddr(src)) {
					got += "+"
				} else {
					got += "-"
				}
			}
			assert.Equal(t, tc.want, got)
		})
	}
}

func TestUDPAndTCPSignBucketsAreApart(t *testing.T) {
	at := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
	udp, tcp := newSignGates(SignLimit{SignaturesPerSec: 1, Window: 1}.withDefaults(), at)
	for _, g := range []engine.SignGate{udp, tcp} {
		g.(*signGate).now = func() time.Time { return at }
	}
	src := netip.MustParseAddr("192.0.2.1")
	require.True(t, udp.AllowSign(src))
	require.False(t, udp.AllowSign(src), "the UDP bucket is spent")
	assert.True(t, tcp.AllowSign(src), "spoofed UDP cannot spend the TCP bucket")
}

// TestLimitsConfig checks the server.dns sign_limit and tcp_client_*
// settings of the config file, next to the limits they configure.
func TestLimitsConfig(t *testing.T) {
	const zone = `
zones:
  - apex: example.test
    nameservers: [{name: ns1.example.test, ipv4: [192.0.2.53]}]
`
	parse := func(server string) (*config.File, error) {
		return config.Parse("t.yaml", []byte("server:\n  dns:\n"+server+zone))
	}
	t.Run("the signing limit is on with documented defaults when the section is absent", func(t *testing.T) {
		f, err := parse("    listen: [\"127.0.0.1:5353\"]\n")
		require.NoError(t, err)
		sl := f.Server.DNS.SignLimit
		require.NotNil(t, sl.Enabled)
		assert.True(t, *sl.Enabled)
		assert.Equal(t, 100, sl.SignaturesPerSec)
		assert.Equal(t, 10, sl.Window)
		assert.Equal(t, 24, sl.IPv4Prefix)
		assert.Equal(t, 56, sl.IPv6Prefix)
		assert.Equal(t, 24, f.Server.DNS.TCPClientIPv4Prefix)
		assert.Equal(t, 56, f.Server.DNS.TCPClientIPv6Prefix)
		assert.Equal(t, 128, f.Server.DNS.MaxTCPPerSite)
		assert.Equal(t, 48, f.Server.DNS.TCPSiteIPv6Prefix)
		assert.Equal(t, 2*time.Second, f.Server.DNS.TCPPressureIdleTimeout)
	})
	t.Run("a short idle timeout caps the pressure timeout's default", func(t *testing.T) {
		f, err := parse("    tcp_idle_timeout: 1s\n")
		require.NoError(t, err)
		assert.Equal(t, time.Second, f.Server.DNS.TCPPressureIdleTimeout)
	})
	t.Run("enabled false is kept", func(t *testing.T) {
		f, err := parse("    sign_limit: {enabled: false}\n")
		require.NoError(t, err)
		assert.False(t, *f.Server.DNS.SignLimit.Enabled)
	})
	for _, tc := range []struct {
		name, server, want string
	}{
		{"a negative signing rate is rejected with its range", "    sign_limit: {signatures_per_second: -1}\n", "server.dns.sign_limit.signatures_per_second: -1 is out of range (allowed 1..100000"},
		{"a signing rate above 100000 is rejected", "    sign_limit: {signatures_per_second: 100001}\n", "server.dns.sign_limit.signatures_per_second: 100001 is out of range"},
		{"a signing window over an hour is rejected", "    sign_limit: {window: 3601}\n", "server.dns.sign_limit.window: 3601 is out of range (allowed 1..3600 seconds"},
		{"a signing IPv4 prefix longer than 32 is rejected", "    sign_limit: {ipv4_prefix: 33}\n", "server.dns.sign_limit.ipv4_prefix: 33 is out of range (allowed 8..32"},
		{"a signing IPv6 prefix longer than 64 is rejected", "    sign_limit: {ipv6_prefix: 128}\n", "server.dns.sign_limit.ipv6_prefix: 128 is out of range (allowed 16..64"},
		{"a TCP client IPv4 prefix shorter than 8 is rejected", "    tcp_client_ipv4_prefix: 4\n", "server.dns.tcp_client_ipv4_prefix: 4 is out of range (allowed 8..32"},
		{"a TCP client IPv6 prefix of 128 is rejected", "    tcp_client_ipv6_prefix: 128\n", "server.dns.tcp_client_ipv6_prefix: 128 is out of range (allowed 16..64"},
		{"a site IPv6 prefix longer than the client prefix is rejected", "    tcp_site_ipv6_prefix: 60\n", "server.dns.tcp_site_ipv6_prefix: /60 is longer than tcp_client_ipv6_prefix /56"},
		{"a site IPv6 prefix of 8 is rejected", "    tcp_site_ipv6_prefix: 8\n", "server.dns.tcp_site_ipv6_prefix: 8 is out of range (allowed 16..64"},
		{"a negative site cap is rejected", "    max_tcp_per_site: -1\n", "server.dns.max_tcp_per_site: -1 is out of range"},
		{"a pressure idle timeout above the idle timeout is rejected", "    tcp_pressure_idle_timeout: 30s\n", "server.dns.tcp_pressure_idle_timeout: 30s is longer than tcp_idle_timeout 10s"},
		{"an unknown sign_limit field lists the allowed ones", "    sign_limit: {rate: 5}\n", "allowed: enabled, signatures_per_second, window, ipv4_prefix, ipv6_prefix"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := parse(tc.server)
			require.Error(t, err)
			assert.Contains(t, err.Error(), tc.want)
			assert.Contains(t, err.Error(), "t.yaml:3:", "the error names the file and line")
		})
	}
}
