//go:build e2e

package e2e

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/signal"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/meridian-gslb/meridian/internal/notify"
)

// netnsHelperHookSink answers 200 to every POST and prints one line per
// request: "hook <arrival unix ns> <path> <X-Meridian-Signature or -> <X-Meridian-Timestamp or -> <base64 body>".
func netnsHelperHookSink(addr string) error {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
	defer stop()
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return err
	}
	var mu sync.Mutex
	srv := &http.Server{ReadHeaderTimeout: 5 * time.Second, Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		at := time.Now()
		body, _ := io.ReadAll(io.LimitReader(r.Body, 1<<20))
		sig, ts := r.Header.Get(notify.SignatureHeader), r.Header.Get(notify.TimestampHeader)
		if sig == "" {
			sig = "-"
		}
		if ts == "" || strings.ContainsAny(ts, " \t") {
			ts = "-"
		}
		mu.Lock()
		fmt.Printf("hook %d %s %s %s %s\n", at.UnixNano(), r.URL.Path, sig, ts, base64.StdEncoding.EncodeToString(body))
		mu.Unlock()
	})}
	return netnsServe(ctx, ln, srv)
}

type hookCall struct {
	at   time.Time
	path string
	sig  string
	ts   string // X-Meridian-Timestamp
	body []byte
}

// verify checks a webhook call's signature and timestamp as a receiver
// does, at the time it arrived.
func (c hookCall) verify(key string) error {
	return notify.Verify([]byte(key), c.body, c.ts, c.sig, c.at)
}

func hookCalls(t *testing.T, p *Proc) []hookCall {
	t.Helper()
	var out []hookCall
	for _, l := range strings.Split(p.Output(), "\n") {
		f := strings.Fields(l)
		if len(f) != 6 || f[0] != "hook" {
			continue
		}
		ns, err := strconv.ParseInt(f[1], 10, 64)
		require.NoError(t, err)
		body, err := base64.StdEncoding.DecodeString(f[5])
		require.NoError(t, err)
		out = append(out, hookCall{at: time.Unix(0, ns), path: f[2], sig: f[3], ts: f[4], body: body})
	}
	return out
}

type pdEvent struct {
	RoutingKey  string `json:"routing_key"`
	EventAction string `json:"event_action"`
	DedupKey    string `json:"dedup_key"`
	Payload     *struct {
		Summary   string `json:"summary"`
		Source    string `json:"source"`
		Timestamp string `json:"timestamp"`
	} `json:"payload"`
}

// A failover in the lab reaches a signed webhook, a Slack-format and a
// PagerDuty-format receiver within 2 s of the decision, from every node; a
// receiver that does not answer gets retries and holds nothing up; the
// recovery resolves the PagerDuty incident.
func TestNotifyFailoverReachesWebhookSlackAndPagerDuty(t *testing.T) {
	regions := []string{"r1", "r2", "r3"}
	// newGSLB adds the probers' hosts first, then eps: eps is host N+1.
	sink := fmt.Sprintf("%s:9000", labHostAddr(len(regions)+1, 1))
	dir := t.TempDir()
	write := func(name, content string) string {
		p := filepath.Join(dir, name)
		require.NoError(t, os.WriteFile(p, []byte(content), 0o600))
		return p
	}
	key := "e2e-hmac-key-42"
	secret := write("hook.key", key+"\n")
	slackURL := write("slack.url", "http://"+sink+"/slack/T000/B000/XXXX\n")
	routing := write("pd.key", "e2e-routing-key\n")
	extra := fmt.Sprintf(`notifications:
  receivers:
    - {name: hook, kind: webhook, url: "http://%[1]s/hook", secret_file: %[2]s}
    - {name: chat, kind: slack, url_file: %[3]s}
    - {name: pd, kind: pagerduty, url: "http://%[1]s/pd", routing_key_file: %[4]s}
    - {name: blackhole, kind: webhook, url: "http://10.77.250.1:9000/hook", timeout: 1s, max_attempts: 3}
`, sink, secret, slackURL, routing)
	g := newGSLB(t, "notify", gslbOptions{regions: regions, endpoints: 3, extra: extra})
	require.Equal(t, sink, g.eps.IP.String()+":9000", "the sink runs on the eps host")
	sinkProc := g.eps.startHelper(t, "hooksink", "hooksink", sink)
	sinkProc.WaitFor(t, "ready", 10*time.Second)
	g.ready(t)
	require.Empty(t, hookCalls(t, sinkProc), "start-up verdicts are not notified")

	victim := g.endpts[0].String()
	killed := time.Now()
	g.stopBackend(t, g.endpts[0])

	type got struct{ hook, slack, pd *hookCall }
	var per map[string]*got
	var decided map[string]time.Time
	collect := func() bool {
		per, decided = map[string]*got{}, map[string]time.Time{}
		for _, n := range g.nodes {
			per[n.name] = &got{}
		}
		for _, c := range hookCalls(t, sinkProc) {
			switch {
			case c.path == "/hook":
				require.NoError(t, c.verify(key), "webhook signature %q of timestamp %s verifies", c.sig, c.ts)
				var e notify.Event
				require.NoError(t, json.Unmarshal(c.body, &e))
				if e.Kind == notify.EventFailover && e.Endpoint == victim && per[e.Node] != nil && per[e.Node].hook == nil {
					per[e.Node].hook, decided[e.Node] = &c, e.At
				}
			case strings.HasPrefix(c.path, "/slack/"):
				require.Equal(t, "-", c.sig, "Slack bodies are not signed")
				require.Equal(t, "-", c.ts, "Slack bodies are not signed")
				var b map[string]string
				require.NoError(t, json.Unmarshal(c.body, &b))
				for name, p := range per {
					if p.slack == nil && strings.Contains(b["text"], "Meridian failover") && strings.Contains(b["text"], victim) && strings.Contains(b["text"], "node "+name+" ") {
						p.slack = &c
					}
				}
			case c.path == "/pd":
				var e pdEvent
				require.NoError(t, json.Unmarshal(c.body, &e))
				require.Equal(t, "e2e-routing-key", e.RoutingKey)
				if e.EventAction == "trigger" && e.Payload != nil && strings.Contains(e.Payload.Summary, victim) && per[e.Payload.Source] != nil && per[e.Payload.Source].pd == nil {
					per[e.Payload.Source].pd = &c
				}
			}
		}
		for _, p := range per {
			if p.hook == nil || p.slack == nil || p.pd == nil {
				return false
			}
		}
		return true
	}
	require.Eventually(t, collect, 30*time.Second, 100*time.Millisecond, "every node's failover reaches the three receivers")

	var hookLat, slackLat, pdLat []time.Duration
	for _, n := range g.nodes {
		p, at := per[n.name], decided[n.name]
		hookLat = append(hookLat, p.hook.at.Sub(at))
		slackLat = append(slackLat, p.slack.at.Sub(at))
		pdLat = append(pdLat, p.pd.at.Sub(at))
		t.Logf("FIGURE notify node %s: kill→decision %s, decision→webhook %s, →slack %s, →pagerduty %s", n.name,
			at.Sub(killed).Round(time.Millisecond), p.hook.at.Sub(at).Round(time.Millisecond),
			p.slack.at.Sub(at).Round(time.Millisecond), p.pd.at.Sub(at).Round(time.Millisecond))
	}
	for name, lat := range map[string][]time.Duration{"webhook": hookLat, "slack": slackLat, "pagerduty": pdLat} {
		worst := slices.Max(lat)
		t.Logf("FIGURE notify decision→%s worst over %d nodes: %s", name, len(lat), worst.Round(time.Millisecond))
		assert.LessOrEqual(t, worst, 2*time.Second, "%s within 2 s of the decision", name)
		assert.GreaterOrEqual(t, slices.Min(lat), time.Duration(0), "%s after the decision (one clock)", name)
	}

	// The blackholed receiver is retried, and it did not hold the others up.
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	require.Eventually(t, func() bool {
		_, body, err := g.nodes[0].host.HTTPGet(t, ctx, "http://"+g.nodes[0].host.IP.String()+":8080/metrics")
		return err == nil && strings.Contains(body, `meridian_notify_retries_total{receiver="blackhole"}`) &&
			strings.Contains(body, `meridian_notify_sent_total{receiver="hook",result="ok"}`)
	}, 8*time.Second, 200*time.Millisecond, "the blackholed receiver is retried")

	// The recovery resolves PagerDuty's incident with the trigger's dedup_key.
	g.startBackend(t, g.endpts[0])
	require.Eventually(t, func() bool {
		for _, c := range hookCalls(t, sinkProc) {
			var e pdEvent
			if c.path == "/pd" && json.Unmarshal(c.body, &e) == nil && e.EventAction == "resolve" && strings.Contains(e.DedupKey, victim) {
				return true
			}
		}
		return false
	}, 60*time.Second, 200*time.Millisecond, "the recovery resolves the incident")
}
