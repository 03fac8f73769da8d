//go:build e2e

package e2e

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/miekg/dns"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// failOpenConfig: one service of three endpoints whose health checks all
// fail (nothing listens on the checked port), and an admin token.
const failOpenConfig = `
server:
  dns: {rrl: {responses_per_second: 1000000}}
  admin: {token_file: "%[1]s", state_file: "%[2]s"}
zones:
  - apex: fo.test
    nameservers: [{name: ns1.fo.test, ipv4: [127.0.0.1]}]
health: {interval: 1s, timeout: 500ms, fall: 3, rise: 2}
ring: {enabled: true, node_name: solo, region: r1, bind: "127.0.0.1:%[3]d"}
clusters:
  - {name: east, region: r1}
  - {name: west, region: r2}
  - {name: eu, region: r3}
services:
  - name: app.fo.test
    health_check: {kind: http, port: %[4]d, path: /healthz}
    endpoints:
      - {address: 127.0.0.161, cluster: east}
      - {address: 127.0.0.162, cluster: west}
      - {address: 127.0.0.163, cluster: eu}
`

// answersOver sends n A queries for name to server and counts the
// addresses the answers carry, and the replies that were NODATA (NOERROR,
// no answer, the SOA in the authority section).
func answersOver(t *testing.T, server, name string, n int) (seen map[string]int, nodata int) {
	t.Helper()
	cl := &dns.Client{Net: "udp", Timeout: time.Second}
	conn, err := cl.Dial(server)
	require.NoError(t, err)
	defer conn.Close()
	seen = map[string]int{}
	for range n {
		q := new(dns.Msg)
		q.SetQuestion(name, dns.TypeA)
		r, _, err := cl.ExchangeWithConn(q, conn)
		require.NoError(t, err)
		require.Equal(t, dns.RcodeSuccess, r.Rcode)
		if len(r.Answer) == 0 && len(r.Ns) == 1 && r.Ns[0].Header().Rrtype == dns.TypeSOA {
			nodata++
		}
		for _, rr := range r.Answer {
			if a, ok := rr.(*dns.A); ok {
				seen[a.A.String()]++
			}
		}
	}
	return seen, nodata
}

// TestFailOpenNeverAnswersWhatAnOperatorTookOut: every endpoint down by
// its probes fails open with all three; an endpoint forced down is then
// never answered; with it forced down and the other two drained nothing
// may be answered, and 1 000 queries get NODATA (docs/configuration.md,
// when_all_down).
func TestFailOpenNeverAnswersWhatAnOperatorTookOut(t *testing.T) {
	dir := t.TempDir()
	tokens, tokenFile := adminTokenFiles(t, dir)
	m := startMeridian(t, fmt.Sprintf(failOpenConfig, tokens, filepath.Join(dir, "admin.json"), freePort(t), freePort(t)))
	const name = "app.fo.test."
	admin := func(args ...string) {
		t.Helper()
		out, err := cli(t, m, append(args, "--reason", "e2e", "--force", "--token-file", tokenFile)...)
		require.NoError(t, err, out)
	}

	var out string
	require.Eventually(t, func() bool {
		out = m.dig(t, "app.fo.test", "A")
		return strings.Contains(out, digFailOpenEDE)
	}, 20*time.Second, 300*time.Millisecond, "every endpoint down by its probes fails open; last:\n%s\n%s", out, m.log())
	seen, _ := answersOver(t, m.dns, name, 300)
	assert.Len(t, seen, 3, "fail-open answers all three endpoints down by their probes: %v", seen)

	admin("force", "down", "endpoint", "app.fo.test", "127.0.0.161")
	require.Eventually(t, func() bool {
		seen, _ = answersOver(t, m.dns, name, 50)
		return seen["127.0.0.161"] == 0
	}, 5*time.Second, 100*time.Millisecond)
	seen, _ = answersOver(t, m.dns, name, 1000)
	assert.Zero(t, seen["127.0.0.161"], "fail-open never answers the forced-down endpoint (1 000 queries)")
	assert.Positive(t, seen["127.0.0.162"])
	assert.Positive(t, seen["127.0.0.163"])

	admin("drain", "endpoint", "app.fo.test", "127.0.0.162")
	admin("drain", "endpoint", "app.fo.test", "127.0.0.163")
	var nodata int
	require.Eventually(t, func() bool {
		seen, nodata = answersOver(t, m.dns, name, 50)
		return nodata == 50
	}, 5*time.Second, 100*time.Millisecond, "last %v", seen)
	seen, nodata = answersOver(t, m.dns, name, 1000)
	assert.Empty(t, seen, "no answer carries the forced-down or the drained endpoints (1 000 queries)")
	assert.Equal(t, 1000, nodata, "every reply is the documented NODATA")
	t.Logf("FIGURE fail-open: 1 forced down + 2 drained: %d of 1000 replies NODATA, %d addresses answered", nodata, len(seen))

	out = m.dig(t, "app.fo.test", "A")
	assert.Equal(t, "NOERROR", status(out))
	assert.Empty(t, section(out, "ANSWER"))
	ex, err := cli(t, m, "explain", "app.fo.test")
	require.NoError(t, err, ex)
	assert.Contains(t, ex, "fail-open never answers a drained or forced-down one", ex)
	assert.False(t, strings.Contains(ex, "EDE:      0"), "no fail-open EDE on a NODATA")
}
