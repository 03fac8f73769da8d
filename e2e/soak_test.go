//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// soakDuration is MERIDIAN_SOAK as a duration ("1" = 10m); 0 = skip.
func soakDuration(t *testing.T) time.Duration {
	v := os.Getenv("MERIDIAN_SOAK")
	switch v {
	case "":
		t.Skip("soak test: set MERIDIAN_SOAK=1 (10 minutes) or a duration such as MERIDIAN_SOAK=3m; not in CI by default")
	case "1":
		return 10 * time.Minute
	}
	d, err := time.ParseDuration(v)
	require.NoError(t, err, "MERIDIAN_SOAK")
	return d
}

var metricLine = regexp.MustCompile(`(?m)^(go_goroutines|process_resident_memory_bytes) ([0-9.e+]+)$`)

func (g *gslb) procStats(t testing.TB, n *gnode) (goroutines, rss float64) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_, body, err := n.host.HTTPGet(t, ctx, fmt.Sprintf("http://%s:8080/metrics", n.host.IP))
	if err != nil {
		return 0, 0
	}
	for _, m := range metricLine.FindAllStringSubmatch(body, -1) {
		v, _ := strconv.ParseFloat(m[2], 64)
		if m[1] == "go_goroutines" {
			goroutines = v
		} else {
			rss = v
		}
	}
	return goroutines, rss
}

// TestSoak runs a steady query load for MERIDIAN_SOAK while, every minute,
// every node reloads its config, one endpoint dies for 20 s, and the ring is
// split in two for 20 s. An answer is wrong when it is not NOERROR, is empty,
// names an address that is not an endpoint, or names an endpoint whose
// backend has been dead for longer than the detection bound (interval 1 s ×
// fall 3 + confirmation + a decision tick ≤ 6 s; 8 s allowed). It also
// bounds goroutine and memory growth of every node.
func TestSoak(t *testing.T) {
	dur := soakDuration(t)
	g := newGSLB(t, "soak", gslbOptions{regions: []string{"r1", "r2", "r3", "r1"}, endpoints: 3})
	g.ready(t)
	const detection = 8 * time.Second

	var mu sync.Mutex
	deadSince := map[string]time.Time{} // endpoint -> when its backend was stopped
	valid := map[string]bool{}
	for _, a := range g.allAddrs() {
		valid[a] = true
	}
	var queries, wrong int
	var wrongSamples []string

	batch := filepath.Join(g.dir, "batch")
	var b strings.Builder
	for range 50 {
		b.WriteString("app.t.test A\n")
	}
	require.NoError(t, os.WriteFile(batch, []byte(b.String()), 0o644))

	start := time.Now()
	g0, r0 := map[string]float64{}, map[string]float64{}
	time.Sleep(5 * time.Second) // warm-up before the baseline
	for _, n := range g.nodes {
		g0[n.name], r0[n.name] = g.procStats(t, n)
	}

	ctx, cancel := context.WithTimeout(context.Background(), dur)
	defer cancel()
	var wg sync.WaitGroup
	wg.Add(1)
	go func() { // the query load: 50-query dig batches round-robin over the nodes
		defer wg.Done()
		for i := 0; ctx.Err() == nil; i++ {
			n := g.nodes[i%len(g.nodes)]
			qctx, qcancel := context.WithTimeout(context.Background(), 20*time.Second)
			at := time.Now()
			out, err := n.host.Exec(t, qctx, "dig", "@"+n.host.IP.String(), "+time=2", "+tries=2", "+noall", "+answer", "+comments", "-f", batch)
			qcancel()
			if err != nil {
				continue // the query tool itself failed (netns exec); not an answer
			}
			mu.Lock()
			for _, ans := range strings.Split(out, ";; ->>HEADER<<-")[1:] {
				queries++
				bad := ""
				if !strings.Contains(ans, "status: NOERROR") {
					bad = "rcode: " + strings.SplitN(ans, "\n", 2)[0]
				}
				var addrs []string
				for _, l := range strings.Split(ans, "\n") {
					if f := strings.Fields(l); len(f) == 5 && f[3] == "A" {
						addrs = append(addrs, f[4])
					}
				}
				if bad == "" && len(addrs) == 0 {
					bad = "empty answer"
				}
				for _, a := range addrs {
					if !valid[a] {
						bad = "not an endpoint: " + a
					} else if since, dead := deadSince[a]; dead && at.Sub(since) > detection {
						bad = fmt.Sprintf("%s answered %s after its backend died", a, at.Sub(since).Round(time.Second))
					}
				}
				if bad != "" {
					wrong++
					if len(wrongSamples) < 10 {
						wrongSamples = append(wrongSamples, n.name+": "+bad)
					}
				}
			}
			mu.Unlock()
		}
	}()

	cycles := 0
	for ctx.Err() == nil {
		cycles++
		// Reload every node (same content: a full load, compile and swap).
		for _, n := range g.nodes {
			_ = n.proc.Signal(syscall.SIGHUP)
		}
		// One endpoint dies for 20 s.
		victim := g.endpts[cycles%len(g.endpts)]
		g.stopBackend(t, victim)
		mu.Lock()
		deadSince[victim.String()] = time.Now()
		mu.Unlock()
		sleepCtx(ctx, 20*time.Second)
		mu.Lock()
		delete(deadSince, victim.String())
		mu.Unlock()
		g.startBackend(t, victim)
		// The ring splits in two for 20 s.
		g.lab.Partition(t, hostsOf(g.nodes[:2]), hostsOf(g.nodes[2:]))
		sleepCtx(ctx, 20*time.Second)
		g.lab.Heal(t)
		sleepCtx(ctx, 20*time.Second)
	}
	wg.Wait()
	time.Sleep(5 * time.Second) // let the last changes settle before measuring
	mu.Lock()
	defer mu.Unlock()
	t.Logf("FIGURE soak %s: %d cycles (reload + endpoint death + ring partition), %d queries, %d wrong", time.Since(start).Round(time.Second), cycles, queries, wrong)
	for _, s := range wrongSamples {
		t.Logf("wrong answer: %s", s)
	}
	assert.Zero(t, wrong)
	assert.Greater(t, queries, 1000)
	for _, n := range g.nodes {
		g1, r1 := g.procStats(t, n)
		t.Logf("FIGURE soak %s: goroutines %.0f → %.0f, RSS %.1f → %.1f MiB", n.name, g0[n.name], g1, r0[n.name]/(1<<20), r1/(1<<20))
		assert.LessOrEqual(t, g1, g0[n.name]*1.2+50, "%s goroutines grew", n.name)
		assert.LessOrEqual(t, r1, r0[n.name]+64<<20, "%s memory grew more than 64 MiB", n.name)
	}
}

func sleepCtx(ctx context.Context, d time.Duration) {
	select {
	case <-ctx.Done():
	case <-time.After(d):
	}
}
