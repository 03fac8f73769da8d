//go:build e2e

package e2e

import (
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/meridian-gslb/meridian/internal/srcdir"
)

// snapshotGeneration reads meridian_snapshot_generation from /metrics.
func snapshotGeneration(t *testing.T, m *instance) string {
	t.Helper()
	resp, err := http.Get(m.http + "/metrics")
	require.NoError(t, err)
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	g := regexp.MustCompile(`(?m)^meridian_snapshot_generation (\S+)$`).FindStringSubmatch(string(b))
	require.Len(t, g, 2, "meridian_snapshot_generation is exported")
	return g[1]
}

// TestSimulateAndMinHealthyOnTheDemo: `meridian simulate --fail
// cluster=us-east` on the demo (deploy/examples/demo.yaml, as `make run`
// serves it) prints app's shares with us-east gone while dig's answers and
// the overrides stay as they are; a drain that would leave a service
// below min_healthy is refused naming the rule, and accepted with --force.
func TestSimulateAndMinHealthyOnTheDemo(t *testing.T) {
	dir := t.TempDir()
	state := filepath.Join(dir, "state")
	demo, err := os.ReadFile(filepath.Join(srcdir.Root(), "deploy", "examples", "demo.yaml"))
	require.NoError(t, err)
	conf := strings.Replace(string(demo), "bind: 127.0.0.1:7946", fmt.Sprintf("bind: 127.0.0.1:%d", freePort(t)), 1)
	t.Setenv("XDG_STATE_HOME", state)
	m := startMeridian(t, conf, "--demo-backends")
	tokenFile := filepath.Join(state, "meridian", "demo-admin-token")
	require.Eventually(t, func() bool {
		out, _ := cli(t, m, "status")
		return strings.Count(out, " up ") >= 4
	}, 20*time.Second, 200*time.Millisecond, "the demo's backends are probed up")

	t.Run("simulate prints app's shares with us-east gone and changes nothing served", func(t *testing.T) {
		before := digShares(t, m, "app.demo.meridian.test", 200)
		gen := snapshotGeneration(t, m)
		start := time.Now()
		out, err := cli(t, m, "simulate", "--fail", "cluster=us-east")
		took := time.Since(start)
		require.NoError(t, err, out)
		t.Logf("meridian simulate --fail cluster=us-east (%s):\n%s", took.Round(time.Millisecond), out)
		assert.Contains(t, out, "simulated (nothing changed): --fail cluster=us-east")
		assert.Contains(t, out, "app.demo.meridian.test. (weighted)")
		assert.Contains(t, out, "  everywhere: eu-west 30%, us-east 70% -> eu-west 100%")
		assert.Regexp(t, `(?m)^  eu-west\s+30\.0%\s+100\.0%\s+-\s+30\.0%\s+3\.33x$`, out, "eu-west would take 3.33x its part of app's ready capacity")
		assert.Contains(t, out, "www.demo.meridian.test. (geo)", "the geo service is compared per place")
		assert.Contains(t, out, "  region us-east: us-east 100% -> ", "us-east clients are sent elsewhere")

		t.Logf("snapshot generation before %s, after %s (health decisions of the just-started demo may publish; the simulation does not)", gen, snapshotGeneration(t, m))
		after := digShares(t, m, "app.demo.meridian.test", 200)
		assert.ElementsMatch(t, keys(before), keys(after), "dig answers the same addresses after the simulation")
		assert.Contains(t, after, "127.0.0.11", "us-east still answers")
		t.Logf("FIGURE simulate: dig shares before %v, after %v; simulate took %s", before, after, took.Round(time.Millisecond))
		list, err := cli(t, m, "overrides")
		require.NoError(t, err)
		assert.NotContains(t, list, "simulated", "nothing was stored")
	})

	t.Run("a drain below min_healthy is refused naming the rule and accepted with --force", func(t *testing.T) {
		out, err := cli(t, m, "drain", "endpoint", "api.demo.meridian.test", "127.0.0.22", "--reason", "one of two", "--token-file", tokenFile)
		require.NoError(t, err, out)
		out, err = cli(t, m, "drain", "endpoint", "api.demo.meridian.test", "127.0.0.21", "--reason", "the last one", "--token-file", tokenFile)
		require.Error(t, err)
		t.Logf("refused: %s", out)
		assert.Contains(t, out, "refused by rule min_healthy: service api.demo.meridian.test would keep 0 healthy endpoint(s), below min_healthy 1 (now 1)")
		assert.Contains(t, digShares(t, m, "api.demo.meridian.test", 20), "127.0.0.21", "the refused drain changed nothing")

		out, err = cli(t, m, "drain", "endpoint", "api.demo.meridian.test", "127.0.0.21", "--reason", "the last one", "--force", "--token-file", tokenFile)
		require.NoError(t, err, out)
		assert.Contains(t, out, "[forced past min_healthy: service api.demo.meridian.test would keep 0 healthy endpoint(s)")
		resp, err := http.Get(m.http + "/v1/admin/overrides")
		require.NoError(t, err)
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		assert.Contains(t, string(b), `"forced": "min_healthy: service api.demo.meridian.test would keep 0`, "the override records it was forced")
		assert.Contains(t, m.log(), "forced=", "the log records it")
		list, err := cli(t, m, "overrides")
		require.NoError(t, err)
		assert.Contains(t, list, "drain (forced past min_healthy)", "meridian overrides shows it")
	})
}

func keys(m map[string]float64) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	return out
}
