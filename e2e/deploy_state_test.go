//go:build e2e

package e2e

import (
	"crypto/sha256"
	"encoding/hex"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestDeployKeyRotationAndRestart runs the deploy's state story in the
// netns lab, with the gossip key supplied as kustomize supplies it: a
// read-only file (the Secret), and a writable state directory (the
// emptyDir). A drain is set, the key is rotated ring-wide (install, use,
// remove) while the Secret still holds the old key; then a node restarts
// with its state directory (a container restart): it rejoins with the
// rotated key and the drain is in force at once. Then a node restarts
// without its state (a new pod) after the Secret was updated as
// deploy/README.md says: it rejoins and gets the drain back from the ring.
func TestDeployKeyRotationAndRestart(t *testing.T) {
	g := newGSLB(t, "deploy", gslbOptions{regions: []string{"r1", "r2"}, endpoints: 2, secretKey: true})
	g.ready(t)
	p1, p2 := g.nodes[0], g.nodes[1]
	drained := g.endpts[1].String() // c2's endpoint
	out, err := g.cli(t, p1, "drain", "cluster", "c2", "--reason", "e2e: before the restart")
	require.NoError(t, err, out)
	g.waitAll(t, "c2 drained everywhere", 20*time.Second, func(n *gnode) bool {
		got, _ := g.answers(t, n)
		return len(got) == 1 && !contains(got, drained)
	})

	oldKey, err := os.ReadFile(g.keyFile)
	require.NoError(t, err)
	newKey := strings.TrimSpace(run(t, meridianBin, "ring", "keygen"))
	fp := func(k string) string { // as `meridian ring keys list` shows a key
		sum := sha256.Sum256([]byte(strings.TrimSpace(k)))
		return "sha256:" + hex.EncodeToString(sum[:6])
	}
	// Each step once every node has the one before, as an operator does
	// with `meridian ring keys list` (docs/security.md): removing the old
	// key before a node has the new one cuts that node off.
	for _, step := range []struct {
		args []string
		done func(list string) bool
	}{
		{[]string{"install", newKey}, func(l string) bool { return strings.Contains(l, fp(newKey)) }},
		{[]string{"use", newKey}, func(l string) bool { return strings.Contains(l, "primary: "+fp(newKey)) }},
		{[]string{"remove", strings.TrimSpace(string(oldKey))}, func(string) bool { return true }},
	} {
		out, err := g.cli(t, p1, append([]string{"ring", "keys"}, step.args...)...)
		require.NoError(t, err, "ring keys %s: %s", step.args[0], out)
		g.waitAll(t, "every node after ring keys "+step.args[0], 20*time.Second, func(n *gnode) bool {
			out, err := g.cli(t, n, "ring", "keys", "list")
			return err == nil && step.done(out)
		})
	}
	g.waitAll(t, "every node encrypts with the new key", 20*time.Second, func(n *gnode) bool {
		out, err := g.cli(t, n, "ring", "keys", "list")
		return err == nil && strings.Contains(out, "primary: "+fp(newKey)) && !strings.Contains(out, fp(string(oldKey)))
	})
	after, err := os.ReadFile(g.keyFile)
	require.NoError(t, err)
	assert.Equal(t, string(oldKey), string(after), "the Secret (read-only) still holds the old key")
	state := filepath.Join(g.stateDir(p2), "ring-keyring")
	b, err := os.ReadFile(state)
	require.NoError(t, err, "the rotated keyring is kept in the state directory")
	assert.Contains(t, string(b), newKey)

	restart := func(n *gnode) time.Duration {
		require.NoError(t, n.proc.Signal(syscall.SIGTERM))
		select {
		case <-n.proc.Exited():
		case <-time.After(15 * time.Second):
			t.Fatalf("%s did not stop", n.name)
		}
		start := time.Now()
		g.start(t, n)
		g.waitAll(t, n.name+" rejoined", 60*time.Second, func(m *gnode) bool {
			rep, err := g.health(t, m)
			return err == nil && len(rep.Probers) == 2
		})
		return time.Since(start)
	}

	// 1. A container restart: the state directory is kept.
	took := restart(p2)
	got, _ := g.answers(t, p2)
	assert.Equal(t, []string{g.endpts[0].String()}, got, "the drain is in force on p2 right after its restart")
	assert.Contains(t, p2.proc.Output(), "gossip keys from the rotated keyring in the state directory")
	t.Logf("FIGURE deploy: after a ring-wide key rotation with a read-only key file, a restarted node rejoined in %s with the drain in force", took.Round(100*time.Millisecond))

	// 2. A new pod: no state directory; the operator updated the Secret
	// (deploy/README.md: after `use NEW`, put NEW into the Secret).
	require.NoError(t, p2.proc.Signal(syscall.SIGTERM))
	<-p2.proc.Exited()
	require.NoError(t, os.RemoveAll(g.stateDir(p2)))
	dir := filepath.Dir(g.keyFile)
	require.NoError(t, exec.Command("mount", "-o", "remount,bind,rw", dir).Run())
	require.NoError(t, os.WriteFile(g.keyFile, []byte(newKey+"\n"), 0o600))
	require.NoError(t, exec.Command("mount", "-o", "remount,bind,ro", dir).Run())
	start := time.Now()
	g.start(t, p2)
	g.waitAll(t, "the new p2 rejoined", 60*time.Second, func(m *gnode) bool {
		rep, err := g.health(t, m)
		return err == nil && len(rep.Probers) == 2
	})
	g.waitAll(t, "the drain is in force on the new p2 (from the ring)", 30*time.Second, func(n *gnode) bool {
		got, _ := g.answers(t, n)
		return len(got) == 1 && !contains(got, drained)
	})
	t.Logf("FIGURE deploy: a node without its state (new pod) and the updated Secret rejoined and had the drain back from the ring %s after its start", time.Since(start).Round(100*time.Millisecond))
	out, err = g.cli(t, p2, "overrides")
	require.NoError(t, err, out)
	assert.Contains(t, out, "e2e: before the restart")
}
