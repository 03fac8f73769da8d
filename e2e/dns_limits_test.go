//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"net"
	"net/netip"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/miekg/dns"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"
)

// Per-client-prefix limits of the DNS server, against the real binary:
// the TCP connection cap counted per IPv6 /56 (a netns lab, where a whole
// /64 of source addresses can be ours), the ECS trust list, and the
// signing limit on denials in a signed zone.

// dialInNetns opens a TCP connection from src to dst inside the network
// namespace ns (a lab host's) from this process: the socket is created on
// an OS thread moved into ns, and a socket stays in the namespace it was
// created in. If the thread cannot move back it is left locked, so it
// ends with its goroutine and never runs other code.
func dialInNetns(ns string, src, dst netip.AddrPort) (net.Conn, error) {
	type result struct {
		c   net.Conn
		err error
	}
	ch := make(chan result, 1)
	go func() {
		runtime.LockOSThread()
		self, err := os.Open("/proc/thread-self/ns/net")
		if err != nil {
			runtime.UnlockOSThread()
			ch <- result{nil, err}
			return
		}
		defer self.Close()
		target, err := os.Open(filepath.Join("/run/netns", ns))
		if err != nil {
			runtime.UnlockOSThread()
			ch <- result{nil, err}
			return
		}
		defer target.Close()
		if err := unix.Setns(int(target.Fd()), unix.CLONE_NEWNET); err != nil {
			runtime.UnlockOSThread()
			ch <- result{nil, fmt.Errorf("setns %s: %w", ns, err)}
			return
		}
		d := net.Dialer{Timeout: 2 * time.Second, LocalAddr: net.TCPAddrFromAddrPort(src)}
		c, err := d.Dial("tcp", dst.String())
		if unix.Setns(int(self.Fd()), unix.CLONE_NEWNET) == nil {
			runtime.UnlockOSThread()
		}
		ch <- result{c, err}
	}()
	r := <-ch
	return r.c, r.err
}

// askOn sends one query for app.lim.test on an open TCP connection.
func askOn(c net.Conn) (*dns.Msg, error) {
	dc := &dns.Conn{Conn: c}
	q := new(dns.Msg)
	q.SetQuestion("app.lim.test.", dns.TypeA)
	c.SetDeadline(time.Now().Add(2 * time.Second))
	if err := dc.WriteMsg(q); err != nil {
		return nil, err
	}
	return dc.ReadMsg()
}

const tcpCapConfig = `
server:
  dns:
    max_tcp_per_client: 4
    rrl: {enabled: false}
zones:
  - apex: lim.test
    nameservers: [{name: ns1.lim.test, ipv4: [192.0.2.53]}]
clusters:
  - {name: east, region: us-east}
services:
  - name: app.lim.test
    endpoints: [{address: 192.0.2.1, cluster: east}]
`

func TestTCPCapCountsAnIPv6PrefixAsOneClient(t *testing.T) {
	lab := NewLab(t, "tcpcap")
	h := lab.AddHost("dns")
	ctx := context.Background()
	server := netip.MustParseAddrPort("[2001:db8:53::1]:53")
	// Six addresses of one /64 (so of one /56, the default client prefix)
	// and one of another /56.
	var same []netip.Addr
	for i := range 6 {
		same = append(same, netip.MustParseAddr(fmt.Sprintf("2001:db8:64:1::%x", 0x10+i)))
	}
	other := netip.MustParseAddr("2001:db8:65::10")
	for _, a := range append([]netip.Addr{server.Addr(), other}, same...) {
		_, err := h.Exec(t, ctx, "ip", "-6", "addr", "add", a.String()+"/128", "dev", "lo", "nodad")
		require.NoError(t, err)
	}
	cfg := filepath.Join(t.TempDir(), "meridian.yaml")
	require.NoError(t, os.WriteFile(cfg, []byte(tcpCapConfig), 0o644))
	p := h.Start(t, "meridian", meridianBin, "serve", "--config", cfg, "--dns-listen", server.String(), "--http-listen", "127.0.0.1:8080")
	p.WaitFor(t, "dns listening", 20*time.Second)
	kdig := func(src netip.Addr) (string, error) {
		return h.Exec(t, ctx, "kdig", "@"+server.Addr().String(), "-p", "53", "-b", src.String(), "+tcp", "+time=2", "+retry=0", "app.lim.test", "A")
	}
	require.Eventually(t, func() bool {
		out, err := kdig(other)
		return err == nil && status(out) == "NOERROR"
	}, 10*time.Second, 100*time.Millisecond, "meridian answers in the namespace")

	// max_tcp_per_client (4) connections from four addresses of the /64,
	// each served and kept open.
	var open []net.Conn
	defer func() {
		for _, c := range open {
			c.Close()
		}
	}()
	for _, a := range same[:4] {
		c, err := dialInNetns(h.NS, netip.AddrPortFrom(a, 0), server)
		require.NoError(t, err)
		open = append(open, c)
		r, err := askOn(c)
		require.NoError(t, err, "connection from %s is served", a)
		require.Len(t, r.Answer, 1)
	}

	// A fifth address of the same /64: closed at once, with our client and
	// with kdig.
	c, err := dialInNetns(h.NS, netip.AddrPortFrom(same[4], 0), server)
	require.NoError(t, err, "the kernel accepts the connection")
	_, err = askOn(c)
	c.Close()
	assert.Error(t, err, "meridian closes a fifth connection from the same /64 before answering")
	out, err := kdig(same[5])
	assert.False(t, err == nil && status(out) == "NOERROR", "kdig from a sixth address of the /64 gets no answer:\n%s", out)

	// Another /56 is served meanwhile.
	out, err = kdig(other)
	require.NoError(t, err, out)
	assert.Equal(t, "NOERROR", status(out))
	assert.Contains(t, out, "192.0.2.1")

	code, body, err := h.HTTPGet(t, ctx, "http://127.0.0.1:8080/metrics")
	require.NoError(t, err)
	require.Equal(t, 200, code)
	rejected := metricValue(t, body, "meridian_dns_tcp_connections_per_client_rejected_total")
	assert.Equal(t, 2.0, rejected, "the two connections beyond the cap were counted")
	assert.Zero(t, metricValue(t, body, "meridian_dns_tcp_connections_rejected_total"), "the global cap was not reached")
	t.Logf("FIGURE tcp cap: 4 connections from one IPv6 /64 served, 2 more from it refused (meridian_dns_tcp_connections_per_client_rejected_total %.0f), another /56 served", rejected)

	// Closing one connection frees a slot for the prefix.
	open[0].Close()
	open = open[1:]
	require.Eventually(t, func() bool {
		out, err := kdig(same[5])
		return err == nil && status(out) == "NOERROR"
	}, 5*time.Second, 100*time.Millisecond, "a slot of the /56 frees when one of its connections closes")
}

const ecsTrustConfig = `
server: {dns: {rrl: {enabled: false}}}
zones:
  - apex: ecs.test
    nameservers: [{name: ns1.ecs.test, ipv4: [192.0.2.53]}]
clusters:
  - {name: east, region: us-east}
  - {name: eu, region: eu-west}
geo:
  ecs_trusted: [127.0.2.0/24]
  networks:
    - {cidr: 10.3.0.0/16, region: eu-west}
services:
  - name: www.ecs.test
    strategy: geo
    geo: {default: [east]}
    endpoints:
      - {address: 203.0.113.1, cluster: east}
      - {address: 203.0.113.3, cluster: eu}
`

func TestECSIsIgnoredFromAnUntrustedSource(t *testing.T) {
	m := startMeridian(t, ecsTrustConfig)
	for _, tc := range []struct {
		name, tool, src, answer, scope string
	}{
		{"dig from a trusted resolver gets the subnet's answer and scope", "dig", "127.0.2.5", "203.0.113.3", "10.3.1.0/24/16"},
		{"dig from an untrusted source gets its own answer and scope 0", "dig", "127.0.1.5", "203.0.113.1", "10.3.1.0/24/0"},
		{"kdig from a trusted resolver gets the subnet's answer and scope", "kdig", "127.0.2.6", "203.0.113.3", "10.3.1.0/24/16"},
		{"kdig from an untrusted source gets its own answer and scope 0", "kdig", "127.0.1.6", "203.0.113.1", "10.3.1.0/24/0"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var out string
			if tc.tool == "dig" {
				out = m.dig(t, "-b", tc.src, "+subnet=10.3.1.0/24", "www.ecs.test", "A")
			} else {
				out = m.kdig(t, "-b", tc.src, "+subnet=10.3.1.0/24", "www.ecs.test", "A")
			}
			require.Equal(t, "NOERROR", status(out), out)
			assert.Contains(t, strings.Join(section(out, "ANSWER"), "\n")+answerLines(out), tc.answer, out)
			assert.Contains(t, out, "CLIENT-SUBNET: "+tc.scope, out)
		})
	}
	assert.Equal(t, 2.0, metricValue(t, m.metrics(t), "meridian_dns_ecs_ignored_total"), "the two untrusted queries")
}

// answerLines returns kdig's answer section (its header differs from dig's).
func answerLines(out string) string {
	_, after, ok := strings.Cut(out, ";; ANSWER SECTION:")
	if !ok {
		return ""
	}
	before, _, _ := strings.Cut(after, "\n\n")
	return before
}

const signLimitConfig = `
server:
  dns:
    rrl: {enabled: false}
    sign_limit: %s
zones:
  - apex: sl.test
    soa: {minimum: 20}
    nameservers: [{name: ns1.sl.test, ipv4: [127.0.0.1]}]
    dnssec: {key_files: [%s]}
clusters:
  - {name: east, region: us-east}
services:
  - name: app.sl.test
    endpoints: [{address: 192.0.2.1, cluster: east}]
`

// denialKind classifies the reply to a DO query for a name that does not
// exist: "signed" (a compact denial with the NSEC's RRSIG: a fresh
// signature), "tc" (empty and truncated), "servfail", or "other".
func denialKind(r *dns.Msg) string {
	switch {
	case r.Truncated && len(r.Answer)+len(r.Ns) == 0:
		return "tc"
	case r.Rcode == dns.RcodeServerFailure:
		return "servfail"
	case r.Rcode == dns.RcodeSuccess:
		for _, rr := range r.Ns {
			if s, ok := rr.(*dns.RRSIG); ok && s.TypeCovered == dns.TypeNSEC {
				return "signed"
			}
		}
	}
	return "other"
}

var randomName atomic.Uint64

// newDenialQuery asks, with DO, for a name never asked before.
func newDenialQuery() *dns.Msg {
	q := new(dns.Msg)
	q.SetQuestion(fmt.Sprintf("r%d-%d.sl.test.", time.Now().UnixNano()%1e6, randomName.Add(1)), dns.TypeA)
	q.SetEdns0(1232, true)
	return q
}

// denials sends n queries for new names from src over proto, one at a
// time, and counts the kinds of reply.
func denials(t *testing.T, proto, src, server string, n int) map[string]int {
	t.Helper()
	d := &net.Dialer{Timeout: 2 * time.Second}
	if proto == "udp" {
		d.LocalAddr = &net.UDPAddr{IP: net.ParseIP(src)}
	} else {
		d.LocalAddr = &net.TCPAddr{IP: net.ParseIP(src)}
	}
	c := &dns.Client{Net: proto, Timeout: 2 * time.Second, Dialer: d}
	conn, err := c.Dial(server)
	require.NoError(t, err)
	defer conn.Close()
	kinds := map[string]int{}
	for range n {
		r, _, err := c.ExchangeWithConn(newDenialQuery(), conn)
		require.NoError(t, err)
		kinds[denialKind(r)]++
	}
	return kinds
}

func TestSignLimitHoldsAPrefixAndSparesOthers(t *testing.T) {
	key := keygen(t, t.TempDir(), "sl.test", "ecdsap256")
	// One fresh signature per second per prefix and transport, with 10
	// seconds of credit: a burst of 10, then (nearly) nothing during the
	// test.
	m := startMeridian(t, fmt.Sprintf(signLimitConfig, "{signatures_per_second: 1, window: 10}", key))

	udp := denials(t, "udp", "127.0.1.20", m.dns, 30)
	t.Logf("30 new names over UDP from 127.0.1.20: %v", udp)
	assert.InDelta(t, 10, udp["signed"], 1, "the burst of 10 is signed")
	assert.Equal(t, 30-udp["signed"], udp["tc"], "the rest get an empty truncated reply")

	t.Run("dig retries a truncated reply over TCP, which has its own bucket", func(t *testing.T) {
		out := m.dig(t, "-b", "127.0.1.21", "+dnssec", "fresh-by-dig.sl.test", "A")
		assert.Contains(t, out, "Truncated, retrying in TCP mode")
		assert.Equal(t, "NOERROR", status(out))
		assert.Contains(t, strings.Join(section(out, "AUTHORITY"), "\n"), "NSEC")
	})

	tcp := denials(t, "tcp", "127.0.1.22", m.dns, 30)
	t.Logf("30 new names over TCP from 127.0.1.22: %v", tcp)
	assert.InDelta(t, 9, tcp["signed"], 1, "the rest of the TCP burst (dig took one)")
	assert.Equal(t, 30-tcp["signed"], tcp["servfail"], "beyond the TCP bucket: SERVFAIL")

	t.Run("beyond both buckets kdig over TCP gets SERVFAIL", func(t *testing.T) {
		out := m.kdig(t, "-b", "127.0.1.23", "+tcp", "+dnssec", "fresh-by-kdig.sl.test", "A")
		assert.Equal(t, "SERVFAIL", status(out), out)
	})
	t.Run("denials already signed are still answered", func(t *testing.T) {
		out := m.kdig(t, "-b", "127.0.1.23", "+tcp", "+dnssec", "fresh-by-dig.sl.test", "A")
		assert.Equal(t, "NOERROR", status(out), out)
	})
	t.Run("a positive answer that needs a fresh signature is limited like a denial", func(t *testing.T) {
		out := m.kdig(t, "-b", "127.0.1.24", "+tcp", "+dnssec", "app.sl.test", "A")
		assert.Equal(t, "SERVFAIL", status(out), out)
	})
	t.Run("a positive answer signed before is answered to a limited prefix", func(t *testing.T) {
		warm := m.dig(t, "-b", "127.0.3.20", "+dnssec", "app.sl.test", "A") // another prefix pays for it
		require.Equal(t, "NOERROR", status(warm))
		out := m.dig(t, "-b", "127.0.1.24", "+dnssec", "app.sl.test", "A")
		assert.Equal(t, "NOERROR", status(out))
		assert.Contains(t, rrTypes(section(out, "ANSWER")), "RRSIG")
	})
	t.Run("another prefix is served meanwhile, by dig and kdig", func(t *testing.T) {
		out := m.dig(t, "-b", "127.0.2.20", "+dnssec", "other-by-dig.sl.test", "A")
		assert.Equal(t, "NOERROR", status(out))
		assert.NotContains(t, out, "Truncated")
		assert.Contains(t, strings.Join(section(out, "AUTHORITY"), "\n"), "NSEC")
		out = m.kdig(t, "-b", "127.0.2.21", "+dnssec", "other-by-kdig.sl.test", "A")
		assert.Equal(t, "NOERROR", status(out), out)
	})

	metrics := m.metrics(t)
	udpLimited := metricValue(t, metrics, `meridian_dnssec_sign_limited_total{proto="udp"}`)
	tcpLimited := metricValue(t, metrics, `meridian_dnssec_sign_limited_total{proto="tcp"}`)
	assert.GreaterOrEqual(t, udpLimited, float64(udp["tc"]+1), "the flood's and dig's truncated replies")
	assert.GreaterOrEqual(t, tcpLimited, float64(tcp["servfail"]+1), "the flood's and kdig's SERVFAILs")
	t.Logf("metrics: meridian_dnssec_sign_limited_total udp %.0f, tcp %.0f", udpLimited, tcpLimited)
}

// forcedSignatures floods new names with DO over conns TCP connections
// from 127.0.1.30.. (one /24) for d and returns the signed denials (one
// fresh signature each) per second and the kinds of reply.
func forcedSignatures(t *testing.T, server string, conns int, d time.Duration) (float64, map[string]int) {
	t.Helper()
	var mu sync.Mutex
	kinds := map[string]int{}
	var wg sync.WaitGroup
	start := time.Now()
	deadline := start.Add(d)
	for i := range conns {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c := &dns.Client{Net: "tcp", Timeout: 2 * time.Second,
				Dialer: &net.Dialer{Timeout: 2 * time.Second, LocalAddr: &net.TCPAddr{IP: net.IPv4(127, 0, 1, byte(30+i))}}}
			conn, err := c.Dial(server)
			if !assert.NoError(t, err) {
				return
			}
			defer conn.Close()
			local := map[string]int{}
			for time.Now().Before(deadline) {
				r, _, err := c.ExchangeWithConn(newDenialQuery(), conn)
				if !assert.NoError(t, err) {
					break
				}
				local[denialKind(r)]++
			}
			mu.Lock()
			for k, v := range local {
				kinds[k] += v
			}
			mu.Unlock()
		}()
	}
	wg.Wait()
	return float64(kinds["signed"]) / time.Since(start).Seconds(), kinds
}

func TestSignLimitCutsTheSignaturesOnePrefixCanForce(t *testing.T) {
	key := keygen(t, t.TempDir(), "sl.test", "ecdsap256")
	const (
		conns   = 4
		measure = 3 * time.Second
	)
	off := startMeridian(t, fmt.Sprintf(signLimitConfig, "{enabled: false}", key))
	before, kindsOff := forcedSignatures(t, off.dns, conns, measure)
	off.stop(t)

	// The default rate (100/s) with a window of 1 s, so that the 3 s
	// measure shows the sustained rate rather than the burst (default
	// window: 10 s, a burst of 1000).
	on := startMeridian(t, fmt.Sprintf(signLimitConfig, "{window: 1}", key))
	_, _ = forcedSignatures(t, on.dns, conns, 1500*time.Millisecond) // spend the burst
	after, kindsOn := forcedSignatures(t, on.dns, conns, measure)

	t.Logf("FIGURE sign limit: one /24 over %d TCP connections forces %.0f fresh denial signatures/s without the limit (%v), %.0f/s with signatures_per_second 100 (%v): %.0f× fewer",
		conns, before, kindsOff, after, kindsOn, before/after)
	assert.LessOrEqual(t, after, 100*1.2, "held to the rate")
	assert.Greater(t, after, 100*0.5, "and given it")
	assert.Greater(t, before, 5*after, "the limit cuts the signing work a prefix can force")
	assert.Zero(t, kindsOn["other"]+kindsOff["other"], "every reply is a signed denial or SERVFAIL")
}
