//go:build e2e

package e2e

import (
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

const adminConfig = `
# These loopback tests query far faster than the default RRL rate (200/s
# per /24), all from 127.0.0.1: raise the limit, keep RRL on.
server:
  dns: {rrl: {responses_per_second: 1000000}}
  admin: {token_file: "%[1]s", state_file: "%[2]s"}
  http: {read_only_listen: "127.0.0.1:%[7]d"}
zones:
  - apex: gslb.example.com
    nameservers: [{name: ns1.gslb.example.com, ipv4: [127.0.0.1]}]
ring: {enabled: true, node_name: %[3]s, region: %[4]s, bind: "127.0.0.1:%[5]d", seeds: ["127.0.0.1:%[6]d"], %[8]s}
clusters:
  - {name: east, region: r1}
  - {name: west, region: r2}
services:
  - name: app.gslb.example.com
    endpoints:
      - {address: 127.0.0.121, cluster: east, weight: 500}
      - {address: 127.0.0.122, cluster: west, weight: 500}
`

const adminToken = "e2e-admin-token-0123456789"

// adminTokenFiles writes, in dir, a server.admin.token_file that lets
// alice change state with adminToken, and the --token-file the CLI reads.
func adminTokenFiles(t *testing.T, dir string) (tokens, tokenFile string) {
	t.Helper()
	tokens = filepath.Join(dir, "tokens")
	require.NoError(t, os.WriteFile(tokens, []byte("alice "+adminToken+"\n"), 0o600))
	tokenFile = filepath.Join(dir, "token")
	require.NoError(t, os.WriteFile(tokenFile, []byte(adminToken+"\n"), 0o600))
	return tokens, tokenFile
}

// cli runs the meridian binary against m's HTTP API.
func cli(t *testing.T, m *instance, args ...string) (string, error) {
	t.Helper()
	cmd := exec.Command(meridianBin, append(args, "--http", strings.TrimPrefix(m.http, "http://"))...)
	out, err := cmd.CombinedOutput()
	return string(out), err
}

// TestAdminOverrides: drain, force and weight through the CLI with a
// token; persisted across a restart; seen by the other ring node; expiry.
func TestAdminOverrides(t *testing.T) {
	dir := t.TempDir()
	tokens, tokenFile := adminTokenFiles(t, dir)
	g1, g2 := freePort(t), freePort(t)
	state1, state2 := filepath.Join(dir, "n1.json"), filepath.Join(dir, "n2.json")
	ro := freePort(t)
	tr := newTestRing(t, dir, "n1@r1", "n2@r2")
	conf1 := fmt.Sprintf(adminConfig, tokens, state1, "n1", "r1", g1, g2, ro, tr.Ring("n1"))
	conf2 := fmt.Sprintf(adminConfig, tokens, state2, "n2", "r2", g2, g1, freePort(t), tr.Ring("n2"))
	m1 := startMeridian(t, conf1)
	m2 := startMeridian(t, conf2)
	share := func(m *instance, addr string) float64 {
		s, err := quickShare(m, "app.gslb.example.com.", addr, 100)
		require.NoError(t, err)
		return s
	}
	require.Eventually(t, func() bool { return share(m1, "127.0.0.122") > 20 && share(m2, "127.0.0.122") > 20 }, 10*time.Second, 100*time.Millisecond)

	t.Run("changes without a valid token are refused and change nothing", func(t *testing.T) {
		out, err := cli(t, m1, "drain", "cluster", "west", "--reason", "x")
		require.Error(t, err)
		assert.Contains(t, out, "no admin token")
		bad := filepath.Join(dir, "bad")
		require.NoError(t, os.WriteFile(bad, []byte("not-the-token-0123456789"), 0o600))
		out, err = cli(t, m1, "drain", "cluster", "west", "--reason", "x", "--token-file", bad)
		require.Error(t, err)
		assert.Contains(t, out, "invalid bearer token")
		out, err = cli(t, m1, "drain", "cluster", "mars", "--reason", "x", "--token-file", tokenFile)
		require.Error(t, err)
		assert.Contains(t, out, `cluster: "mars" is not a cluster (allowed: east, west)`)
		// The read-only listener serves reads and refuses changes even with the token.
		req, _ := http.NewRequest("POST", fmt.Sprintf("http://127.0.0.1:%d/v1/admin/overrides", ro),
			strings.NewReader(`{"kind":"drain","cluster":"west","reason":"x"}`))
		req.Header.Set("Authorization", "Bearer "+adminToken)
		resp, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		resp.Body.Close()
		assert.Equal(t, http.StatusMethodNotAllowed, resp.StatusCode)
		resp, err = http.Get(fmt.Sprintf("http://127.0.0.1:%d/v1/admin/overrides", ro))
		require.NoError(t, err)
		resp.Body.Close()
		assert.Equal(t, http.StatusOK, resp.StatusCode)
		out, err = cli(t, m1, "overrides")
		require.NoError(t, err, out)
		assert.NotContains(t, out, "drain")
	})

	t.Run("a drain leaves the answers of both ring nodes, is explained, and survives a restart", func(t *testing.T) {
		out, err := cli(t, m1, "drain", "cluster", "west", "--reason", "maintenance window", "--token-file", tokenFile)
		require.NoError(t, err, out)
		set := time.Now()
		assert.Contains(t, out, "drained by alice@n1: maintenance window")
		require.Eventually(t, func() bool { return share(m1, "127.0.0.122") == 0 }, 5*time.Second, 20*time.Millisecond)
		local := time.Since(set)
		require.Eventually(t, func() bool { return share(m2, "127.0.0.122") == 0 }, 10*time.Second, 20*time.Millisecond, "the other node learns the drain over the ring")
		t.Logf("FIGURE admin drain: out of the answers on the node that took it in %s, on the other ring node in %s",
			local.Round(10*time.Millisecond), time.Since(set).Round(10*time.Millisecond))
		exp, err := cli(t, m2, "explain", "app.gslb.example.com")
		require.NoError(t, err, exp)
		assert.Contains(t, exp, "drained by alice@n1: maintenance window", "explain on the other node shows who and why")
		list, err := cli(t, m2, "overrides")
		require.NoError(t, err)
		assert.Contains(t, list, "maintenance window")

		m2.stop(t)
		m2 = startMeridian(t, conf2)
		assert.Equal(t, 0.0, share(m2, "127.0.0.122"), "the drain is in force right after a restart (from the state file)")

		out, err = cli(t, m2, "undrain", "cluster", "west", "--token-file", tokenFile)
		require.NoError(t, err, out)
		require.Eventually(t, func() bool { return share(m1, "127.0.0.122") > 20 && share(m2, "127.0.0.122") > 20 }, 10*time.Second, 50*time.Millisecond)
	})

	t.Run("a weight override shifts the split and a forced down expires by itself", func(t *testing.T) {
		out, err := cli(t, m1, "weight", "app.gslb.example.com", "127.0.0.121", "0", "--reason", "drain slowly", "--token-file", tokenFile)
		require.NoError(t, err, out)
		require.Eventually(t, func() bool { return share(m1, "127.0.0.121") == 0 }, 5*time.Second, 20*time.Millisecond)
		out, err = cli(t, m1, "unweight", "app.gslb.example.com", "127.0.0.121", "--token-file", tokenFile)
		require.NoError(t, err, out)

		out, err = cli(t, m1, "force", "down", "endpoint", "app.gslb.example.com", "127.0.0.122", "--reason", "bad deploy", "--for", "2s", "--token-file", tokenFile)
		require.NoError(t, err, out)
		forced := time.Now()
		require.Eventually(t, func() bool { return share(m1, "127.0.0.122") == 0 }, 5*time.Second, 20*time.Millisecond)
		require.Eventually(t, func() bool { return share(m1, "127.0.0.122") > 20 }, 10*time.Second, 50*time.Millisecond, "the force expires")
		t.Logf("FIGURE admin force down --for 2s: back in the answers after %s", time.Since(forced).Round(10*time.Millisecond))
		assert.GreaterOrEqual(t, time.Since(forced), 2*time.Second)
	})
}
