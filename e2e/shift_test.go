//go:build e2e

package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/meridian-gslb/meridian/internal/notify"
)

// A scripted progressive shift of app.t.test to c2 on a two-node netns
// lab: 1 → 5 → 25 %, then c2's backend dies at 25 % and the shift is back
// at 5 % within one step interval, on every node's status page timeline
// and, once (from the ring's writer, the one node that steps shifts), at a
// signed webhook; after the backend returns, a resume runs it on to 100 %.
func TestShiftRollsBackOnATargetFailure(t *testing.T) {
	const every = 6 * time.Second
	regions := []string{"r1", "r2"}
	// The rollback is notified to a signed webhook on the eps host (host N+1).
	sink := fmt.Sprintf("%s:9000", labHostAddr(len(regions)+1, 1))
	key := "e2e-shift-hmac"
	secret := filepath.Join(t.TempDir(), "hook.key")
	require.NoError(t, os.WriteFile(secret, []byte(key+"\n"), 0o600))
	extra := fmt.Sprintf("shift: {tick: 250ms}\nnotifications:\n  receivers:\n    - {name: hook, kind: webhook, url: \"http://%s/hook\", secret_file: %s, events: [shift, rollback]}\n", sink, secret)
	g := newGSLB(t, "shift", gslbOptions{regions: regions, endpoints: 2, extra: extra})
	sinkProc := g.eps.startHelper(t, "hooksink", "hooksink", sink)
	sinkProc.WaitFor(t, "ready", 10*time.Second)
	g.ready(t)
	n := g.nodes[0]
	target := g.endpts[1] // c2
	percent := func(node *gnode) string {
		out, err := g.cli(t, node, "shift", "status", "app.t.test")
		if err != nil {
			return "error: " + out
		}
		for _, l := range strings.Split(out, "\n") {
			if f, ok := strings.CutPrefix(strings.TrimSpace(l), "now:"); ok {
				return strings.TrimSpace(f)
			}
		}
		return out
	}
	out, err := g.cli(t, n, "shift", "app.t.test", "--to", "c2", "--steps", "1,5,25,50,100", "--every", every.String(), "--reason", "e2e shift")
	require.NoError(t, err, out)
	start := time.Now()
	g.waitAll(t, "the shift at 25% on every node", 4*every, func(m *gnode) bool { return strings.HasPrefix(percent(m), "25% (advancing)") })
	t.Logf("FIGURE shift 1→25%%: %s (2 steps of %s)", time.Since(start).Round(10*time.Millisecond), every)

	stopped := time.Now()
	g.stopBackend(t, target)
	took := g.waitAll(t, "rolled back to 5% on every node", every, func(m *gnode) bool { return strings.HasPrefix(percent(m), "5% (paused)") })
	t.Logf("FIGURE shift rollback 25%%→5%%: %s after the backend stopped (bound: one step, %s)", took.Round(10*time.Millisecond), every)
	assert.Less(t, took, every)
	// The writer takes the rollback and puts it on its timeline; the
	// others see the new progress from the ring and put it on theirs at
	// their next shift tick (which may come just after `shift status`
	// already shows 5 %).
	rollbacks := func(m *gnode) int {
		rep, err := g.health(t, m)
		require.NoError(t, err)
		n := 0
		for _, c := range rep.Changes {
			if c.Subject == "shift app.t.test to c2" && c.From == "25%" && c.To == "5%" {
				n++
				assert.Contains(t, c.Reason, target.String())
			}
		}
		return n
	}
	g.waitAll(t, "the rollback on every node's timeline", 5*time.Second, func(m *gnode) bool { return rollbacks(m) > 0 })
	for _, m := range g.nodes {
		assert.Equal(t, 1, rollbacks(m), "node %s has the rollback on its timeline once: the writer took it, the others saw its new progress", m.name)
	}
	// ... and reaches the webhook, signed.
	var rollback *hookCall
	require.Eventually(t, func() bool {
		for _, c := range hookCalls(t, sinkProc) {
			var ev notify.Event
			if c.path == "/hook" && json.Unmarshal(c.body, &ev) == nil && ev.Kind == notify.EventRollback {
				rollback = &c
				return true
			}
		}
		return false
	}, every, 100*time.Millisecond, "the rollback reaches the webhook")
	require.NoError(t, rollback.verify(key), "webhook signature %q of timestamp %s verifies", rollback.sig, rollback.ts)
	writer := g.writerNode(t, g.nodes)
	time.Sleep(time.Second)
	var senders []string
	for _, c := range hookCalls(t, sinkProc) {
		var ev notify.Event
		if c.path == "/hook" && json.Unmarshal(c.body, &ev) == nil && ev.Kind == notify.EventRollback {
			senders = append(senders, ev.Node)
		}
	}
	assert.Equal(t, []string{writer.name}, senders, "one rollback, stepped and sent by the ring's writer")
	t.Logf("FIGURE shift rollback notification at the webhook %s after the backend stopped: %s", sink, rollback.at.Sub(stopped).Round(time.Millisecond))

	g.startBackend(t, target)
	g.waitAll(t, "c2 back in the answers", 60*time.Second, func(m *gnode) bool {
		got, _ := g.answers(t, m)
		return contains(got, target.String())
	})
	// Paused at 5 % with c2 healthy: what clients get is the rolled-back
	// share, not the 50 % of the config (the first record of 1 000 replies
	// through dig, on every node).
	for _, m := range g.nodes {
		share := firstShare(t, m, target.String(), 1000)
		assert.InDelta(t, 5, share, 3, "node %s: c2's share of the answers after the rollback", m.name)
		t.Logf("FIGURE shift rollback: c2 first in %.1f%% of 1000 dig replies on %s (rolled back to 5%%)", share, m.name)
	}
	out, err = g.cli(t, n, "shift", "resume", "app.t.test")
	require.NoError(t, err, out)
	g.waitAll(t, "the shift complete at 100%", 6*every, func(m *gnode) bool { return strings.HasPrefix(percent(m), "100% (complete)") })
	out, err = g.cli(t, n, "shift", "abort", "app.t.test")
	require.NoError(t, err, out)
	require.Contains(t, out, "aborted the shift of app.t.test to c2 at 100%")
}

// firstShare is the percent of n replies from node m (one dig process) whose
// first A record of app.t.test is addr; every reply carries both endpoints
// (max_answers 16), the first drawn by share.
func firstShare(t *testing.T, m *gnode, addr string, n int) float64 {
	t.Helper()
	args := []string{"@" + m.host.IP.String(), "+time=1", "+tries=2", "+noall", "+answer"}
	for range n {
		args = append(args, "app.t.test", "A")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	out, err := m.host.Exec(t, ctx, "dig", args...)
	require.NoError(t, err)
	lines := strings.Split(strings.TrimSpace(out), "\n")
	require.Len(t, lines, 2*n, "two records per reply")
	hit := 0
	for i := 0; i < len(lines); i += 2 {
		if f := strings.Fields(lines[i]); len(f) == 5 && f[4] == addr {
			hit++
		}
	}
	return 100 * float64(hit) / float64(n)
}
