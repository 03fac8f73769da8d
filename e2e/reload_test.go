//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/miekg/dns"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

const reloadConfig = `
# These loopback tests query far faster than the default RRL rate (200/s
# per /24), all from 127.0.0.1: raise the limit, keep RRL on.
server: {dns: {rrl: {responses_per_second: 1000000}}}
zones:
  - apex: reload.test
    nameservers: [{name: ns1.reload.test, ipv4: [192.0.2.53]}]
clusters:
  - {name: east, region: us-east}
  - {name: west, region: us-west}
services:
  - name: app.reload.test
    endpoints:
      - {address: 192.0.2.1, cluster: east, weight: 500}
      - {address: %s, cluster: west, weight: %s}
`

// writeAtomic replaces path the way editors and ConfigMap updates do.
func writeAtomic(t testing.TB, path, content string) {
	t.Helper()
	tmp := filepath.Join(filepath.Dir(path), ".tmp-"+filepath.Base(path))
	require.NoError(t, os.WriteFile(tmp, []byte(content), 0o644))
	require.NoError(t, os.Rename(tmp, path))
}

func metricValue(t testing.TB, metrics, series string) float64 {
	t.Helper()
	v, ok := metricValueOK(metrics, series)
	require.True(t, ok, "series %s not found", series)
	return v
}

// metricValueOK is metricValue for a condition polled until it holds (a
// series may not be there yet): ok is false when it is not.
func metricValueOK(metrics, series string) (float64, bool) {
	re := regexp.MustCompile(`(?m)^` + regexp.QuoteMeta(series) + ` ([0-9.e+]+)$`)
	m := re.FindStringSubmatch(metrics)
	if m == nil {
		return 0, false
	}
	v, err := strconv.ParseFloat(m[1], 64)
	return v, err == nil
}

func TestReloadsUnderLoadCostNoAnswers(t *testing.T) {
	variants := []struct {
		content string
		valid   bool
	}{
		{fmt.Sprintf(reloadConfig, "192.0.2.2", "500"), true},
		{fmt.Sprintf(reloadConfig, "192.0.2.3", "500"), true},
		{fmt.Sprintf(reloadConfig, "192.0.2.66", "5000"), false},                // weight out of range
		{fmt.Sprintf(reloadConfig, "192.0.2.66", "500") + "  - name: [", false}, // YAML syntax error
		{fmt.Sprintf(reloadConfig, "192.0.2.66", "500") + "bogus: 1\n", false},  // unknown field
	}
	m := startMeridian(t, variants[0].content)
	allowed := map[string]bool{"192.0.2.1": true, "192.0.2.2": true, "192.0.2.3": true}

	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	var total, failed, wrong atomic.Int64
	var wrongMu sync.Mutex
	var wrongSamples []string
	var wg sync.WaitGroup
	for range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c := &dns.Client{Net: "udp", Timeout: 2 * time.Second}
			q := new(dns.Msg)
			q.SetQuestion("app.reload.test.", dns.TypeA)
			for ctx.Err() == nil {
				r, _, err := c.Exchange(q, m.dns)
				total.Add(1)
				if err != nil {
					failed.Add(1)
					continue
				}
				// the pick, and a fallback address of the other cluster
				// where the weights are equal (fallback_answer auto)
				ok := r.Rcode == dns.RcodeSuccess && len(r.Answer) >= 1 && len(r.Answer) <= 2
				for _, rr := range r.Answer {
					a, isA := rr.(*dns.A)
					ok = ok && isA && allowed[a.A.String()]
				}
				if !ok {
					wrong.Add(1)
					wrongMu.Lock()
					if len(wrongSamples) < 5 {
						wrongSamples = append(wrongSamples, r.String())
					}
					wrongMu.Unlock()
				}
			}
		}()
	}

	const reloads = 50
	invalid := 0
	for i := range reloads {
		v := variants[i%len(variants)]
		if !v.valid {
			invalid++
		}
		writeAtomic(t, m.config, v.content)
		if i%5 == 4 {
			// Every fifth change also gets a SIGHUP (an extra reload of the same file).
			require.NoError(t, m.cmd.Process.Signal(syscall.SIGHUP))
		}
		time.Sleep(350 * time.Millisecond) // past the watcher's 200ms debounce
	}
	// End on a known valid config and check that it is what serves.
	writeAtomic(t, m.config, variants[1].content)
	time.Sleep(500 * time.Millisecond)
	cancel()
	wg.Wait()

	t.Logf("queries: %d, failed: %d, wrong: %d", total.Load(), failed.Load(), wrong.Load())
	assert.Greater(t, total.Load(), int64(1000), "the load kept running")
	assert.Zero(t, failed.Load(), "no query failed")
	assert.Zero(t, wrong.Load(), "no wrong answer: %v", wrongSamples)

	metrics := m.metrics(t)
	success := metricValue(t, metrics, `meridian_config_reloads_total{result="success"}`)
	failure := metricValue(t, metrics, `meridian_config_reloads_total{result="failure"}`)
	t.Logf("reloads: %v successful, %v failed", success, failure)
	assert.GreaterOrEqual(t, success+failure, float64(reloads))
	assert.GreaterOrEqual(t, failure, float64(invalid))
	assert.GreaterOrEqual(t, success, float64(reloads-invalid))

	seen := map[string]bool{}
	c := &dns.Client{Net: "udp", Timeout: 2 * time.Second}
	q := new(dns.Msg)
	q.SetQuestion("app.reload.test.", dns.TypeA)
	for range 200 {
		r, _, err := c.Exchange(q, m.dns)
		require.NoError(t, err)
		seen[r.Answer[0].(*dns.A).A.String()] = true
	}
	assert.Equal(t, map[string]bool{"192.0.2.1": true, "192.0.2.3": true}, seen, "the last valid config serves")
}
