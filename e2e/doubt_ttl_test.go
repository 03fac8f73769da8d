//go:build e2e

package e2e

import (
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

const doubtConfig = `
zones:
  - apex: doubt.example.test
    ttl: 30
    nameservers: [{name: ns1.doubt.example.test, ipv4: [127.0.0.1]}]
# A slow re-probe (1s) stretches the failure run before the down vote to
# about 2 s, so that dig sees it; a short flap window lets the test see the
# doubt after a recovery end.
health: {interval: 1s, timeout: 500ms, fall: 3, rise: 2, reprobe_interval: 1s}
ring: {enabled: true, node_name: solo, region: r1, bind: "127.0.0.1:%[1]d"}
decision: {flap_window: 6s}
clusters:
  - {name: east, region: r1}
  - {name: west, region: r2}
services:
  - name: app.doubt.example.test
    health_check: {kind: http, port: %[2]d, path: /healthz}
    endpoints:
      - {address: 127.0.0.95, cluster: east}
      - {address: 127.0.0.96, cluster: west}
`

// toggled is a backend that answers 200, or 500 while failing.
type toggled struct{ failing atomic.Bool }

func startToggled(t *testing.T, addr string) *toggled {
	b := &toggled{}
	ln, err := net.Listen("tcp", addr)
	require.NoError(t, err)
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		if b.failing.Load() {
			http.Error(w, "failing", http.StatusInternalServerError)
			return
		}
		w.Write([]byte("ok"))
	})}
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close() })
	return b
}

// answerTTLs is dig's answer: address -> TTL.
func answerTTLs(t *testing.T, m *instance, name string) map[string]int {
	t.Helper()
	out := map[string]int{}
	for _, l := range strings.Split(strings.TrimSpace(m.dig(t, "+noall", "+answer", name, "A")), "\n") {
		f := strings.Fields(l)
		if len(f) == 5 && f[3] == "A" {
			ttl, err := strconv.Atoi(f[1])
			require.NoError(t, err, l)
			out[f[4]] = ttl
		}
	}
	return out
}

// TestAnswersInDoubtCarryTheShortTTL: with dig, a stable answer carries
// the zone's TTL (30), an answer carrying an endpoint whose failed probe is
// being re-checked carries doubt_ttl (5), the survivor's answers doubt_ttl
// while the endpoint is out but may come back (down less than the flap
// window), then the zone's TTL; during the hold-down before its return
// doubt_ttl again, and after a recovery the endpoint is answered with
// doubt_ttl until the flap window has passed.
func TestAnswersInDoubtCarryTheShortTTL(t *testing.T) {
	port := freePort(t)
	victim, other := "127.0.0.95", "127.0.0.96"
	vb := startToggled(t, fmt.Sprintf("%s:%d", victim, port))
	startToggled(t, fmt.Sprintf("%s:%d", other, port))
	m := startMeridian(t, fmt.Sprintf(doubtConfig, freePort(t), port))
	const name = "app.doubt.example.test"

	// poll digs until ok says stop, at most within; it returns what every
	// answer carried: address -> the TTLs seen.
	poll := func(what string, within time.Duration, ok func(map[string]int) bool) map[string]map[int]int {
		t.Helper()
		seen := map[string]map[int]int{}
		deadline := time.Now().Add(within)
		for {
			a := answerTTLs(t, m, name)
			for addr, ttl := range a {
				if seen[addr] == nil {
					seen[addr] = map[int]int{}
				}
				seen[addr][ttl]++
			}
			if ok(a) {
				return seen
			}
			if time.Now().After(deadline) {
				t.Fatalf("%s: not within %s; answers seen (address: TTL: count) %v\nmeridian log:\n%s", what, within, seen, m.log())
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	bothUp := 0
	poll("both endpoints answered", 15*time.Second, func(a map[string]int) bool {
		if _, ok := a[victim]; ok {
			bothUp |= 1
		}
		if _, ok := a[other]; ok {
			bothUp |= 2
		}
		return bothUp == 3
	})
	n := 0
	stable := poll("40 stable answers", 10*time.Second, func(map[string]int) bool { n++; return n == 40 })
	for addr, ttls := range stable {
		require.Equal(t, []int{30}, ttlKeys(ttls), "%s: a stable answer carries the zone's TTL: %v", addr, stable)
	}

	vb.failing.Store(true)
	gone := 0
	during := poll(victim+" out of the answers", 20*time.Second, func(a map[string]int) bool {
		if _, ok := a[victim]; ok {
			gone = 0
		} else {
			gone++
		}
		return gone >= 20
	})
	require.Contains(t, during[victim], 5, "while its failed probe is re-checked, answers carrying it have doubt_ttl: %v", during)
	t.Logf("FIGURE doubt TTL: while %s's failed probe was re-checked, dig answers carrying it: %v (TTL: count); the survivor's: %v", victim, during[victim], during[other])

	// Out, but it may come back soon (down less than the flap window): the
	// answers it is missing from carry doubt_ttl, so that resolvers see its
	// return soon; once it has been down for the flap window, the zone's TTL.
	outAt := time.Now()
	returning, _ := healthMarks(t, m)
	require.Equal(t, map[string]bool{victim: true, other: false}, returning, "GET /v1/health marks it returning")
	require.Contains(t, m.metrics(t), "meridian_endpoints_returning 1")
	n = 0
	awaiting := poll("10 answers of the survivor", 10*time.Second, func(map[string]int) bool { n++; return n == 10 })
	require.Contains(t, awaiting[other], 5, "while %s may come back soon, the survivor's answers have doubt_ttl: %v", victim, awaiting)
	settledOut := poll(victim+" out for the flap window: the survivor at the zone's TTL", 20*time.Second, func(a map[string]int) bool { return a[other] == 30 })
	t.Logf("FIGURE doubt TTL: while %s was out and might come back, the survivor's answers: %v (TTL: count); the zone's TTL again %s after it left (flap_window 6s)",
		victim, settledOut[other], time.Since(outAt).Round(100*time.Millisecond))
	n = 0
	after := poll("40 answers of the survivor", 10*time.Second, func(map[string]int) bool { n++; return n == 40 })
	require.Equal(t, []int{30}, ttlKeys(after[other]), "out for longer than the flap window, the victim is not awaited: the zone's TTL: %v", after)
	require.Contains(t, m.metrics(t), "meridian_endpoints_returning 0")

	vb.failing.Store(false)
	back := poll(victim+" back in the answers", 20*time.Second, func(a map[string]int) bool { _, ok := a[victim]; return ok })
	require.Equal(t, []int{5}, ttlKeys(back[victim]), "just recovered (a failure within the flap window): doubt_ttl: %v", back)
	require.Contains(t, back[other], 5, "during its hold-down before the return, the survivor's answers have doubt_ttl: %v", back)
	_, doubted := healthMarks(t, m)
	require.Equal(t, map[string]bool{victim: true, other: false}, doubted, "GET /v1/health marks it in_doubt")
	require.Contains(t, m.metrics(t), "meridian_endpoints_in_doubt 1")

	recovered := time.Now()
	settled := poll(victim+" settled: the zone's TTL again", 20*time.Second, func(a map[string]int) bool { return a[victim] == 30 })
	t.Logf("FIGURE doubt TTL: after the recovery %s was answered with TTL %v, the zone's TTL again %s later (flap_window 6s)",
		victim, ttlKeys(settled[victim]), time.Since(recovered).Round(100*time.Millisecond))
}

// ttlKeys is the sorted keys of a TTL count.
func ttlKeys(m map[int]int) []int {
	var out []int
	for k := range m {
		out = append(out, k)
	}
	for i := 1; i < len(out); i++ {
		for j := i; j > 0 && out[j] < out[j-1]; j-- {
			out[j], out[j-1] = out[j-1], out[j]
		}
	}
	return out
}

// healthMarks is GET /v1/health's returning and in_doubt per endpoint.
func healthMarks(t *testing.T, m *instance) (returning, inDoubt map[string]bool) {
	t.Helper()
	var rep struct {
		Endpoints []struct {
			Target    string `json:"target"`
			InDoubt   bool   `json:"in_doubt"`
			Returning bool   `json:"returning"`
		} `json:"endpoints"`
	}
	resp, err := http.Get(m.http + "/v1/health")
	require.NoError(t, err)
	defer resp.Body.Close()
	require.NoError(t, json.NewDecoder(resp.Body).Decode(&rep))
	returning, inDoubt = map[string]bool{}, map[string]bool{}
	for _, e := range rep.Endpoints {
		returning[e.Target], inDoubt[e.Target] = e.Returning, e.InDoubt
	}
	return returning, inDoubt
}
