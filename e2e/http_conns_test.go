//go:build e2e

package e2e

import (
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// httpGetFrom sends GET path with Host host on a new connection from the
// loopback address src; it returns the status, the body and the time to
// the whole answer.
func httpGetFrom(t *testing.T, src, addr, host, path string) (int, string, time.Duration) {
	t.Helper()
	d := net.Dialer{Timeout: 5 * time.Second, LocalAddr: &net.TCPAddr{IP: net.ParseIP(src)}}
	cl := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{DialContext: d.DialContext, DisableKeepAlives: true}}
	req, err := http.NewRequest(http.MethodGet, "http://"+addr+path, nil)
	require.NoError(t, err)
	req.Host = host
	start := time.Now()
	resp, err := cl.Do(req)
	require.NoError(t, err, "GET %s from %s", path, src)
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return resp.StatusCode, string(body), time.Since(start)
}

// TestIdleHTTPConnectionsDoNotStarveTheProbes is the acceptance of issue
// 31 finding 5 against the real binary: 16 /24s hold 64 idle connections
// each on the main listener (its default 1 024) and 64 on the probe
// listener (its cap); /healthz and /readyz still answer 200 within 1 s on
// both, from an address of another /24 as the kubelet's would be. It also
// checks the Host allow-list: a DNS-rebinding Host gets 421.
func TestIdleHTTPConnectionsDoNotStarveTheProbes(t *testing.T) {
	var lim syscall.Rlimit
	require.NoError(t, syscall.Getrlimit(syscall.RLIMIT_NOFILE, &lim))
	if lim.Cur < 8192 {
		lim.Cur = min(lim.Max, 8192)
		require.NoError(t, syscall.Setrlimit(syscall.RLIMIT_NOFILE, &lim))
	}
	probePort := freePort(t)
	m := startMeridian(t, fmt.Sprintf(`
server:
  http: {probe_listen: "127.0.0.1:%d"}
zones:
  - apex: conns.test
    nameservers: [{name: ns1.conns.test, ipv4: [192.0.2.53]}]
clusters:
  - {name: east, region: us-east}
services:
  - name: app.conns.test
    endpoints:
      - {address: 192.0.2.1, cluster: east}
`, probePort))
	main := strings.TrimPrefix(m.http, "http://")
	probe := fmt.Sprintf("127.0.0.1:%d", probePort)

	var held []net.Conn
	defer func() {
		for _, c := range held {
			c.Close()
		}
	}()
	hold := func(addr string, src string, n int) {
		d := net.Dialer{Timeout: 5 * time.Second, LocalAddr: &net.TCPAddr{IP: net.ParseIP(src)}}
		for range n {
			c, err := d.Dial("tcp", addr)
			require.NoError(t, err)
			held = append(held, c)
		}
	}
	for i := range 16 {
		hold(main, fmt.Sprintf("127.0.%d.1", 10+i), 64)
	}
	hold(probe, "127.0.30.1", 64)
	require.Eventually(t, func() bool {
		met := m.metrics(t)
		mainConns, ok1 := metricValueOK(met, `meridian_http_connections{listener="main"}`)
		probeConns, ok2 := metricValueOK(met, `meridian_http_connections{listener="probe"}`)
		return ok1 && ok2 && mainConns >= 1024 && probeConns == 64
	}, 20*time.Second, 20*time.Millisecond, "the node holds 1 024 idle connections on 8080 and 64 on the probe listener")

	for _, tc := range []struct{ listener, addr string }{{"main", main}, {"probe", probe}} {
		for _, path := range []string{"/healthz", "/readyz"} {
			code, body, took := httpGetFrom(t, "127.0.200.1", tc.addr, tc.addr, path)
			assert.Equal(t, http.StatusOK, code, "%s %s: %s", tc.listener, path, body)
			assert.Less(t, took, time.Second, "%s %s answers within 1 s", tc.listener, path)
			t.Logf("FIGURE %s listener, 1 024 idle connections on main and 64 on probe held: GET %s answered %d in %s", tc.listener, path, code, took.Round(time.Microsecond))
		}
	}
	met := m.metrics(t)
	assert.GreaterOrEqual(t, metricValue(t, met, `meridian_http_connections_shed_total{listener="main",reason="total"}`), 1.0, "idle connections made room on main")
	assert.GreaterOrEqual(t, metricValue(t, met, `meridian_http_connections_shed_total{listener="probe",reason="total"}`), 1.0, "and on the probe listener")

	code, body, _ := httpGetFrom(t, "127.0.201.1", main, "attacker.example", "/v1/admin/overrides")
	assert.Equal(t, http.StatusMisdirectedRequest, code, "a DNS-rebinding Host cannot read the overrides")
	assert.Contains(t, body, "server.http.allowed_hosts")
	code, _, _ = httpGetFrom(t, "127.0.201.1", main, "localhost:8080", "/v1/admin/overrides")
	assert.Equal(t, http.StatusOK, code, "localhost is allowed")
	code, _, _ = httpGetFrom(t, "127.0.201.1", probe, probe, "/metrics")
	assert.Equal(t, http.StatusNotFound, code, "the probe listener serves the probes only")
}
