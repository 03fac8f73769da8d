//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"net"
	"net/netip"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestIdleTCPFromOneIPv6SiteLeavesRoomForNewClients: 1 024 idle TCP
// connections from real sockets of one IPv6 /48 (32 from each of 32 /56s,
// each /56 within its own cap) do not lock the DNS server: a client of
// another /48 and a new /56 of the same /48 are both served (RFC 7766:
// the oldest idle connection makes room), and the evictions are counted.
func TestIdleTCPFromOneIPv6SiteLeavesRoomForNewClients(t *testing.T) {
	var lim syscall.Rlimit
	require.NoError(t, syscall.Getrlimit(syscall.RLIMIT_NOFILE, &lim))
	if lim.Cur < 4096 && lim.Max >= 4096 {
		lim.Cur = 4096
		require.NoError(t, syscall.Setrlimit(syscall.RLIMIT_NOFILE, &lim))
	}
	lab := NewLab(t, "tcpsite")
	h := lab.AddHost("dns")
	ctx := context.Background()
	server := netip.MustParseAddrPort("[2001:db8:53::1]:53")
	subnet := func(sub, host int) netip.Addr { // host `host` of /56 number `sub` in 2001:db8:48::/48
		return netip.MustParseAddr(fmt.Sprintf("2001:db8:48:%x00::%x", sub, host+0x10))
	}
	var sources []netip.Addr
	for sub := range 32 {
		sources = append(sources, subnet(sub, 0))
	}
	newSite := subnet(0x40, 0)                      // a /56 of the same /48 that holds nothing yet
	other := netip.MustParseAddr("2001:db8:49::10") // another /48
	for _, a := range append([]netip.Addr{server.Addr(), newSite, other}, sources...) {
		_, err := h.Exec(t, ctx, "ip", "-6", "addr", "add", a.String()+"/128", "dev", "lo", "nodad")
		require.NoError(t, err)
	}
	cfg := filepath.Join(t.TempDir(), "meridian.yaml")
	// The defaults of the TCP caps (1 024 per listener, 32 per /56, 128 per
	// /48); idle timeouts long enough that only eviction frees a slot.
	cfgText := `
server:
  dns:
    tcp_idle_timeout: 1m
    tcp_pressure_idle_timeout: 1m
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
	require.NoError(t, os.WriteFile(cfg, []byte(cfgText), 0o644))
	p := h.Start(t, "meridian", meridianBin, "serve", "--config", cfg, "--dns-listen", server.String(), "--http-listen", "127.0.0.1:8080")
	p.WaitFor(t, "dns listening", 20*time.Second)

	var held []net.Conn
	defer func() {
		for _, c := range held {
			c.Close()
		}
	}()
	start := time.Now()
	for _, src := range sources {
		for range 32 {
			c, err := dialInNetns(h.NS, netip.AddrPortFrom(src, 0), server)
			require.NoError(t, err, "the kernel accepts a connection from %s", src)
			held = append(held, c)
		}
	}
	t.Logf("1 024 connections from 2001:db8:48::/48 opened in %s", time.Since(start).Round(time.Millisecond))

	for _, src := range []netip.Addr{other, newSite} {
		c, err := dialInNetns(h.NS, netip.AddrPortFrom(src, 0), server)
		require.NoError(t, err)
		t0 := time.Now()
		r, err := askOn(c)
		c.Close()
		require.NoError(t, err, "a new client from %s is served while the /48 holds its idle connections", src)
		require.Len(t, r.Answer, 1)
		t.Logf("FIGURE tcp site: a new client from %s answered in %s with 1 024 idle connections from one /48 opened", src, time.Since(t0).Round(time.Microsecond))
	}

	code, body, err := h.HTTPGet(t, ctx, "http://127.0.0.1:8080/metrics")
	require.NoError(t, err)
	require.Equal(t, 200, code)
	evicted := metricValue(t, body, `meridian_dns_tcp_connections_evicted_total{reason="site"}`)
	assert.GreaterOrEqual(t, evicted, float64(1024-128), "each connection beyond max_tcp_per_site closed the /48's oldest idle one")
	assert.Zero(t, metricValue(t, body, "meridian_dns_tcp_connections_per_client_rejected_total"), "no /56 went over its own cap")
	assert.Zero(t, metricValue(t, body, "meridian_dns_tcp_connections_rejected_total"), "nobody was refused")
	t.Logf("FIGURE tcp site: evicted for the /48's cap %.0f", evicted)
}
