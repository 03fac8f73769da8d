//go:build e2e

package e2e

import (
	"crypto/rand"
	"encoding/base64"
	"fmt"
	"net"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/miekg/dns"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// edeConfig: a zone transferable only with TSIG, a service whose every
// endpoint fails its health check (nothing listens on the checked port),
// and an RRL of 5 responses/s per /24 that truncates (slip 1) every
// limited reply.
const edeConfig = `
server:
  dns:
    rrl: {responses_per_second: 5, window: 1, slip: 1}
zones:
  - apex: ede.test
    nameservers: [{name: ns1.ede.test, ipv4: [127.0.0.1]}]
    transfer:
      allow: [127.0.0.1]
      tsig_key_file: %[1]s
health: {interval: 1s, timeout: 500ms, fall: 3, rise: 2}
ring: {enabled: true, node_name: solo, region: r1, bind: "127.0.0.1:%[2]d"}
clusters:
  - {name: east, region: r1}
  - {name: west, region: r2}
services:
  - name: app.ede.test
    endpoints: [{address: 192.0.2.1, cluster: east}]
  - name: open.ede.test
    health_check: {kind: http, port: %[3]d, path: /healthz}
    endpoints:
      - {address: 127.0.0.151, cluster: east}
      - {address: 127.0.0.152, cluster: west}
`

// The EDE lines dig prints in its OPT pseudosection.
const (
	digFailOpenEDE = "; EDE: 0 (Other): (meridian: fail-open, every endpoint is down)"
	digRefusedEDE  = "; EDE: 18 (Prohibited): (meridian: zone transfer not allowed)"
	digRRLEDE      = "; EDE: 0 (Other): (rate limited)"
	digOutsideEDE  = "; EDE: 20 (Not Authoritative): (meridian: not authoritative for this name)"
)

// TestDigShowsExtendedDNSErrors: dig shows the EDE code and text on a
// fail-open answer (every endpoint down by its probes), a REFUSED AXFR
// (no TSIG) and an RRL truncation; `meridian explain` shows the fail-open
// one, and the metric counts them.
func TestDigShowsExtendedDNSErrors(t *testing.T) {
	dir := t.TempDir()
	raw := make([]byte, 32)
	rand.Read(raw)
	keyFile := filepath.Join(dir, "xfr.key")
	require.NoError(t, os.WriteFile(keyFile, []byte("hmac-sha256:xfr-key:"+base64.StdEncoding.EncodeToString(raw)+"\n"), 0o600))
	start := time.Now()
	m := startMeridian(t, fmt.Sprintf(edeConfig, keyFile, freePort(t), freePort(t)))

	t.Run("a fail-open answer carries 0 Other with its reason", func(t *testing.T) {
		var out string
		require.Eventually(t, func() bool {
			out = m.dig(t, "open.ede.test", "A")
			return strings.Contains(out, digFailOpenEDE)
		}, 20*time.Second, 300*time.Millisecond, "dig never showed the fail-open EDE; last:\n%s\n%s", out, m.log())
		t.Logf("FIGURE ede: fail-open EDE shown %s after start (3 failed probes at 1 s)", time.Since(start).Round(100*time.Millisecond))
		assert.Equal(t, "NOERROR", status(out))
		got := answerAddrs(section(out, "ANSWER"))
		require.NotEmpty(t, got, "fail-open answers with the endpoints that are down")
		assert.Subset(t, []string{"127.0.0.151", "127.0.0.152"}, got)
		assert.NotContains(t, m.dig(t, "+noedns", "open.ede.test", "A"), "EDE:", "no EDNS, no EDE")
	})

	t.Run("meridian explain shows the EDE of the fail-open answer", func(t *testing.T) {
		out := run(t, meridianBin, "explain", "--http", strings.TrimPrefix(m.http, "http://"), "open.ede.test")
		assert.Contains(t, out, "EDE:      0 (Other): meridian: fail-open, every endpoint is down")
	})

	t.Run("a refused AXFR carries 18 Prohibited", func(t *testing.T) {
		out := m.dig(t, "+comments", "ede.test", "AXFR") // dig prints a transfer's header only with +comments
		assert.Contains(t, out, "status: REFUSED")
		assert.Contains(t, out, digRefusedEDE)
	})

	t.Run("a name outside our zones is REFUSED with 20 Not Authoritative", func(t *testing.T) {
		out := m.dig(t, "www.example.org", "A")
		assert.Equal(t, "REFUSED", status(out))
		assert.Contains(t, out, digOutsideEDE)
	})

	t.Run("an RRL truncation carries 0 Other: rate limited", func(t *testing.T) {
		out := rrlSlippedDig(t, m)
		assert.Contains(t, flags(out), "tc")
		assert.Contains(t, out, digRRLEDE)
	})

	metrics := m.metrics(t)
	for _, series := range []string{
		`meridian_dns_extended_errors_total{code="0",reason="fail_open"}`,
		`meridian_dns_extended_errors_total{code="18",reason="transfer_refused"} 1`,
		`meridian_dns_extended_errors_total{code="20",reason="not_authoritative"} 1`,
		`meridian_dns_extended_errors_total{code="0",reason="rate_limited"}`,
	} {
		assert.Contains(t, metrics, series)
	}
}

// rrlSlippedDig floods app.ede.test from 127.0.3.10 past the RRL burst
// and asks dig from the same /24 (dig does not retry over TCP: +ignore),
// until dig gets a truncated reply (at most 5 rounds).
func rrlSlippedDig(t *testing.T, m *instance) string {
	t.Helper()
	server := net.UDPAddrFromAddrPort(netip.MustParseAddrPort(m.dns))
	fc := udpFrom(t, "127.0.3.10")
	q := new(dns.Msg)
	q.SetQuestion("app.ede.test.", dns.TypeA)
	q.SetEdns0(1232, false)
	var out string
	for round := range 5 {
		for i := range 50 {
			q.Id = uint16(round*100 + i)
			b, err := q.Pack()
			require.NoError(t, err)
			_, err = fc.WriteToUDP(b, server)
			require.NoError(t, err)
		}
		out = m.dig(t, "-b", "127.0.3.11", "+ignore", "app.ede.test", "A")
		if strings.Contains(out, digRRLEDE) {
			return out
		}
	}
	t.Fatalf("dig never got a slipped reply; last:\n%s", out)
	return out
}

// answerAddrs are the addresses of A records in dig's answer lines.
func answerAddrs(lines []string) []string {
	var out []string
	for _, l := range lines {
		if f := strings.Fields(l); len(f) == 5 && f[3] == "A" {
			out = append(out, f[4])
		}
	}
	return out
}
