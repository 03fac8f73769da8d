//go:build e2e

package e2e

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestCoreDNSFollowsOverridesSetOnServeNodes: two serve nodes and one
// coredns-meridian in one ring. A drain, a force-down and a weight override
// set through the CLI on a serve node change the plugin's answers as they
// change the serve nodes' (the same pipeline); the time from the CLI's
// return to the plugin's new answers is a figure.
func TestCoreDNSFollowsOverridesSetOnServeNodes(t *testing.T) {
	dir := t.TempDir()
	tokens, tokenFile := adminTokenFiles(t, dir)
	g1, g2, gObs := freePort(t), freePort(t), freePort(t)
	tr := newTestRing(t, dir, "n1@r1", "n2@r2")
	m1 := startMeridian(t, fmt.Sprintf(adminConfig, tokens, filepath.Join(dir, "n1.json"), "n1", "r1", g1, g2, freePort(t), tr.Ring("n1")))
	m2 := startMeridian(t, fmt.Sprintf(adminConfig, tokens, filepath.Join(dir, "n2.json"), "n2", "r2", g2, g1, freePort(t), tr.Ring("n2")))
	c := startCoreDNS(t, `
gslb.example.com:%[1]d {
    meridian {
        config %[2]s
        ring
    }
}
`, fmt.Sprintf(adminConfig, tokens, filepath.Join(dir, "obs.json"), "obs", "r1", gObs, g1, freePort(t), "peers: "+tr.Peers()))

	share := func(server, addr string) float64 {
		s, err := shareAt(server, "app.gslb.example.com.", addr, 100)
		require.NoError(t, err)
		return s
	}
	all := []string{m1.dns, m2.dns, c.addr}
	require.Eventually(t, func() bool {
		for _, s := range all {
			if share(s, "127.0.0.122") < 20 || share(s, "127.0.0.121") < 20 {
				return false
			}
		}
		return strings.Contains(m1.log(), "member=obs") || strings.Contains(m2.log(), "member=obs") || strings.Contains(c.log(), "member joined")
	}, 15*time.Second, 100*time.Millisecond, "everyone answers both, the observer joined")

	// change runs one CLI change on n1, then waits for want on the plugin
	// and on n2 and reports how long the plugin took.
	change := func(t *testing.T, what string, want func(server string) bool, args ...string) {
		t.Helper()
		out, err := cli(t, m1, append(args, "--token-file", tokenFile)...)
		require.NoError(t, err, out)
		start := time.Now()
		require.Eventually(t, func() bool { return want(c.addr) }, 5*time.Second, 10*time.Millisecond, "the plugin follows %s:\n%s", what, c.log())
		took := time.Since(start)
		require.Eventually(t, func() bool { return want(m2.dns) }, 5*time.Second, 10*time.Millisecond, "n2 follows %s", what)
		t.Logf("FIGURE coredns-meridian followed a %s set on a serve node in %s", what, took.Round(time.Millisecond))
		assert.Less(t, took, time.Second, "the plugin follows within 1 s")
	}
	only121 := func(server string) bool { return share(server, "127.0.0.121") == 100 }
	both := func(server string) bool {
		return share(server, "127.0.0.122") > 20 && share(server, "127.0.0.121") > 20
	}

	t.Run("a drain", func(t *testing.T) {
		change(t, "drain", only121, "drain", "endpoint", "app.gslb.example.com", "127.0.0.122", "--reason", "e2e drain")
		change(t, "undrain", both, "undrain", "endpoint", "app.gslb.example.com", "127.0.0.122")
	})
	t.Run("a force-down", func(t *testing.T) {
		change(t, "force-down", only121, "force", "down", "cluster", "west", "--reason", "e2e force")
		change(t, "unforce", both, "unforce", "cluster", "west")
	})
	t.Run("a weight override", func(t *testing.T) {
		change(t, "weight 0", only121, "weight", "app.gslb.example.com", "127.0.0.122", "0", "--reason", "e2e weight")
		change(t, "unweight", both, "unweight", "app.gslb.example.com", "127.0.0.122")
	})
	t.Run("an override set for a while ends in the plugin when it ends on the serve nodes", func(t *testing.T) {
		out, err := cli(t, m1, "drain", "endpoint", "app.gslb.example.com", "127.0.0.122", "--reason", "short", "--for", "2s", "--token-file", tokenFile)
		require.NoError(t, err, out)
		require.Eventually(t, func() bool { return only121(c.addr) }, 5*time.Second, 10*time.Millisecond, "the drain reaches the plugin")
		require.Eventually(t, func() bool { return both(c.addr) && both(m1.dns) }, 10*time.Second, 50*time.Millisecond, "the drain ends everywhere:\n%s", c.log())
	})
	t.Run("a restarted plugin gets the overrides in force from the ring", func(t *testing.T) {
		out, err := cli(t, m1, "drain", "cluster", "west", "--reason", "before the restart", "--token-file", tokenFile)
		require.NoError(t, err, out)
		require.Eventually(t, func() bool { return only121(c.addr) }, 5*time.Second, 10*time.Millisecond)
		c2 := startCoreDNS(t, `
gslb.example.com:%[1]d {
    meridian {
        config %[2]s
        ring
    }
}
`, fmt.Sprintf(adminConfig, tokens, filepath.Join(dir, "obs2.json"), "obs2", "r1", freePort(t), g2, freePort(t), "peers: "+tr.Peers()))
		require.Eventually(t, func() bool { return only121(c2.addr) }, 10*time.Second, 50*time.Millisecond, "the new plugin learns the drain by push/pull:\n%s", c2.log())
	})
}
