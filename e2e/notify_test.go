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
// PagerDuty-format receiver within 2 s of the decision, once: from the
// ring's elected writer, not from every node; a receiver that does not
// answer gets retries and holds nothing up; the recovery resolves the
// PagerDuty incident. Then the writer is killed together with a second
// backend: that failover, decided while no node writes, still reaches the
// receivers, from the new writer.
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
	writer := g.writerNode(t, g.nodes)
	t.Logf("FIGURE notify: ring writer %s", writer.name)
	require.Empty(t, hookCalls(t, sinkProc), "start-up verdicts are not notified")

	victim := g.endpts[0].String()
	killed := time.Now()
	g.stopBackend(t, g.endpts[0])
	var got failoverCalls
	require.Eventually(t, func() bool {
		got = failoversOf(t, sinkProc, key, victim)
		return len(got.hook) > 0 && len(got.slack) > 0 && len(got.pd) > 0
	}, 30*time.Second, 100*time.Millisecond, "the failover reaches the three receivers")
	time.Sleep(3 * time.Second) // every node decided within this; a copy from another would be here by now
	got = failoversOf(t, sinkProc, key, victim)
	for name, calls := range map[string][]sentCall{"webhook": got.hook, "slack": got.slack, "pagerduty": got.pd} {
		require.Len(t, calls, 1, "%s gets the failover once, not once per node: %+v", name, calls)
		c := calls[0]
		assert.Equal(t, writer.name, c.node, "%s: sent by the ring's writer", name)
		lat := c.at.Sub(got.decided)
		t.Logf("FIGURE notify: kill→decision %s, decision→%s %s (node %s)", got.decided.Sub(killed).Round(time.Millisecond), name, lat.Round(time.Millisecond), c.node)
		assert.LessOrEqual(t, lat, 2*time.Second, "%s within 2 s of the decision", name)
		assert.GreaterOrEqual(t, lat, time.Duration(0), "%s after the decision (one clock)", name)
	}

	// The blackholed receiver is retried, and it did not hold the others up.
	require.Eventually(t, func() bool {
		return g.metric(t, writer, "meridian_notify_retries_total", `receiver="blackhole"`) > 0 &&
			g.metric(t, writer, "meridian_notify_sent_total", `receiver="hook"`, `result="ok"`) > 0
	}, 8*time.Second, 200*time.Millisecond, "the blackholed receiver is retried")
	for _, n := range g.nodes {
		if n != writer {
			assert.Zero(t, g.metric(t, n, "meridian_notify_sent_total"), "node %s is not the writer and sent nothing", n.name)
		}
	}

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

	// The writer is lost together with a backend (a region going away): the
	// others decide the failover while nobody writes, keep it, and the new
	// writer sends it once elected.
	var rest []*gnode
	for _, n := range g.nodes {
		if n != writer {
			rest = append(rest, n)
		}
	}
	victim2 := g.endpts[1].String()
	lost := time.Now()
	writer.proc.Kill()
	g.stopBackend(t, g.endpts[1])
	var got2 failoverCalls
	require.Eventually(t, func() bool {
		got2 = failoversOf(t, sinkProc, key, victim2)
		return len(got2.hook) > 0 && len(got2.slack) > 0 && len(got2.pd) > 0
	}, 60*time.Second, 200*time.Millisecond, "the failover decided during the handover reaches the receivers")
	next := g.writerNode(t, rest)
	for name, calls := range map[string][]sentCall{"webhook": got2.hook, "slack": got2.slack, "pagerduty": got2.pd} {
		assert.Equal(t, next.name, calls[0].node, "%s: sent by the new writer", name)
		t.Logf("FIGURE notify handover: writer killed→decision %s, →%s %s (node %s)", got2.decided.Sub(lost).Round(time.Millisecond),
			name, calls[0].at.Sub(lost).Round(time.Millisecond), calls[0].node)
	}
}

// writerNode waits until exactly one of nodes reports meridian_ring_writer 1
// and returns it.
func (g *gslb) writerNode(t *testing.T, nodes []*gnode) *gnode {
	t.Helper()
	var w *gnode
	require.Eventually(t, func() bool {
		w = nil
		for _, n := range nodes {
			if g.metric(t, n, "meridian_ring_writer") == 1 {
				if w != nil {
					return false
				}
				w = n
			}
		}
		return w != nil
	}, 40*time.Second, 250*time.Millisecond, "one node is the ring's writer")
	return w
}

// sentCall is one receiver's copy of a failover: who sent it and when it
// arrived.
type sentCall struct {
	node string
	at   time.Time
}

type failoverCalls struct {
	hook, slack, pd []sentCall
	decided         time.Time // the decision time the webhook's event carries
}

// failoversOf reads the sink's calls that notify endpoint victim's
// failover, checking every webhook signature on the way.
func failoversOf(t *testing.T, sink *Proc, key, victim string) failoverCalls {
	t.Helper()
	var out failoverCalls
	for _, c := range hookCalls(t, sink) {
		switch {
		case c.path == "/hook":
			require.NoError(t, c.verify(key), "webhook signature %q of timestamp %s verifies", c.sig, c.ts)
			var e notify.Event
			require.NoError(t, json.Unmarshal(c.body, &e))
			if e.Kind == notify.EventFailover && e.Endpoint == victim {
				out.hook = append(out.hook, sentCall{node: e.Node, at: c.at})
				out.decided = e.At
			}
		case strings.HasPrefix(c.path, "/slack/"):
			require.Equal(t, "-", c.sig, "Slack bodies are not signed")
			require.Equal(t, "-", c.ts, "Slack bodies are not signed")
			var b map[string]string
			require.NoError(t, json.Unmarshal(c.body, &b))
			text := b["text"]
			if strings.Contains(text, "Meridian failover") && strings.Contains(text, victim) {
				_, node, _ := strings.Cut(text, " — node ")
				node, _, _ = strings.Cut(node, " ")
				out.slack = append(out.slack, sentCall{node: node, at: c.at})
			}
		case c.path == "/pd":
			var e pdEvent
			require.NoError(t, json.Unmarshal(c.body, &e))
			require.Equal(t, "e2e-routing-key", e.RoutingKey)
			if e.EventAction == "trigger" && e.Payload != nil && strings.Contains(e.Payload.Summary, victim) {
				out.pd = append(out.pd, sentCall{node: e.Payload.Source, at: c.at})
			}
		}
	}
	return out
}
