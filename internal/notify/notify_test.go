package notify

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// capture is a test receiver: it keeps every request's body and headers.
type capture struct {
	mu     sync.Mutex
	bodies [][]byte
	sigs   []string
	stamps []string // X-Meridian-Timestamp
	got    chan struct{}
	fail   atomic.Int32 // answer 503 to this many requests first
}

func newCapture(t *testing.T) (*capture, *httptest.Server) {
	c := &capture{got: make(chan struct{}, 100)}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		if c.fail.Add(-1) >= 0 {
			w.WriteHeader(http.StatusServiceUnavailable)
			return
		}
		c.mu.Lock()
		c.bodies = append(c.bodies, b)
		c.sigs = append(c.sigs, r.Header.Get(SignatureHeader))
		c.stamps = append(c.stamps, r.Header.Get(TimestampHeader))
		c.mu.Unlock()
		c.got <- struct{}{}
	}))
	t.Cleanup(srv.Close)
	return c, srv
}

func (c *capture) wait(t *testing.T, n int) {
	t.Helper()
	for range n {
		select {
		case <-c.got:
		case <-time.After(10 * time.Second):
			require.FailNow(t, "receiver got no request")
		}
	}
}

func secretFile(t *testing.T, content string) string {
	p := filepath.Join(t.TempDir(), "secret")
	require.NoError(t, os.WriteFile(p, []byte(content), 0o600))
	return p
}

func start(t *testing.T, rs ...Receiver) (*Notifier, *Metrics) {
	t.Helper()
	cfg := Config{Receivers: rs}
	require.Empty(t, cfg.Validate())
	cfg.ApplyDefaults()
	m := NewMetrics(prometheus.NewRegistry())
	n, err := New(cfg, "node-a", m, nil)
	require.NoError(t, err)
	t.Cleanup(n.Close)
	return n, m
}

var failoverEvent = Event{Kind: EventFailover, At: time.Date(2026, 12, 2, 1, 0, 0, 0, time.UTC), Service: "app", Endpoint: "10.0.0.1",
	From: "up", To: "down", Reason: "threshold", Severity: SeverityCritical, Action: ActionTrigger, DedupKey: "meridian:app 10.0.0.1", Summary: "endpoint 10.0.0.1 of app decided down"}

func TestWebhookBodyIsTheEventSignedWithTheSecret(t *testing.T) {
	c, srv := newCapture(t)
	n, m := start(t, Receiver{Name: "hook", Kind: KindWebhook, URL: srv.URL, SecretFile: secretFile(t, "s3cret\n")})
	before := time.Now().Unix()
	n.Notify(failoverEvent)
	c.wait(t, 1)
	c.mu.Lock()
	body, sig, ts := c.bodies[0], c.sigs[0], c.stamps[0]
	c.mu.Unlock()
	sec, err := strconv.ParseInt(ts, 10, 64)
	require.NoError(t, err, "%s %q is unix seconds", TimestampHeader, ts)
	assert.GreaterOrEqual(t, sec, before, "the time of sending, not the event's")
	assert.NoError(t, Verify([]byte("s3cret"), body, ts, sig, time.Now()), "signature %q verifies with the key (trailing newline of the file trimmed)", sig)
	assert.Equal(t, Sign([]byte("s3cret"), ts, body), sig, "the HMAC of timestamp.body")
	assert.Error(t, Verify([]byte("other"), body, ts, sig, time.Now()))
	var got Event
	require.NoError(t, json.Unmarshal(body, &got))
	want := failoverEvent
	want.Node = "node-a"
	assert.Equal(t, want, got)
	assert.Eventually(t, func() bool { return testutil.ToFloat64(m.sent.WithLabelValues("hook", "ok")) == 1 }, 5*time.Second, 10*time.Millisecond)
}

func TestSlackBodyIsOneTextField(t *testing.T) {
	c, srv := newCapture(t)
	urlFile := secretFile(t, srv.URL+"/services/T000/B000/XXXX\n")
	n, _ := start(t, Receiver{Name: "chat", Kind: KindSlack, URLFile: urlFile})
	n.Notify(failoverEvent)
	c.wait(t, 1)
	var got map[string]any
	require.NoError(t, json.Unmarshal(c.bodies[0], &got))
	require.Len(t, got, 1, "only text: %s", c.bodies[0])
	assert.Equal(t, ":red_circle: *Meridian failover*: endpoint 10.0.0.1 of app decided down — node node-a at 2026-12-02T01:00:00Z", got["text"])
	assert.Empty(t, c.sigs[0], "only webhooks are signed")
	assert.Empty(t, c.stamps[0], "only webhooks are signed")
}

func TestPagerDutyTriggersAndResolvesWithOneDedupKeyAndSkipsInformationalEvents(t *testing.T) {
	c, srv := newCapture(t)
	n, _ := start(t, Receiver{Name: "pd", Kind: KindPagerDuty, URL: srv.URL, RoutingKeyFile: secretFile(t, "R0UT1NG")})
	n.Notify(Event{Kind: EventShift, Summary: "shift app to eu: step 25%", Severity: SeverityInfo}) // no action: not sent
	n.Notify(failoverEvent)
	recovered := failoverEvent
	recovered.Kind, recovered.From, recovered.To, recovered.Action, recovered.Severity = EventDecided, "down", "up", ActionResolve, SeverityInfo
	n.Notify(recovered)
	c.wait(t, 2)
	var trig, res map[string]any
	require.NoError(t, json.Unmarshal(c.bodies[0], &trig))
	require.NoError(t, json.Unmarshal(c.bodies[1], &res))
	assert.Equal(t, "trigger", trig["event_action"])
	assert.Equal(t, "R0UT1NG", trig["routing_key"])
	assert.Equal(t, "meridian:app 10.0.0.1", trig["dedup_key"])
	p := trig["payload"].(map[string]any)
	assert.Equal(t, "endpoint 10.0.0.1 of app decided down", p["summary"])
	assert.Equal(t, "critical", p["severity"])
	assert.Equal(t, "node-a", p["source"])
	assert.Equal(t, "app", p["group"])
	assert.Equal(t, map[string]any{"routing_key": "R0UT1NG", "event_action": "resolve", "dedup_key": "meridian:app 10.0.0.1"}, res)
}

func TestAReceiverThatIsDownGetsRetriesUntilItAnswers(t *testing.T) {
	defer setBackoff(time.Millisecond)()
	c, srv := newCapture(t)
	c.fail.Store(3)
	n, m := start(t, Receiver{Name: "hook", Kind: KindWebhook, URL: srv.URL, MaxAttempts: 5})
	n.Notify(failoverEvent)
	c.wait(t, 1)
	assert.Equal(t, 3.0, testutil.ToFloat64(m.retries.WithLabelValues("hook")))
	assert.Eventually(t, func() bool { return testutil.ToFloat64(m.sent.WithLabelValues("hook", "ok")) == 1 }, 5*time.Second, 10*time.Millisecond)
}

func TestAReceiverDownPastMaxAttemptsCountsAFailureAndTheNextEventIsSent(t *testing.T) {
	defer setBackoff(time.Millisecond)()
	c, srv := newCapture(t)
	c.fail.Store(2)
	n, m := start(t, Receiver{Name: "hook", Kind: KindWebhook, URL: srv.URL, MaxAttempts: 2})
	n.Notify(failoverEvent)
	second := failoverEvent
	second.Endpoint = "10.0.0.2"
	n.Notify(second)
	c.wait(t, 1)
	var got Event
	require.NoError(t, json.Unmarshal(c.bodies[0], &got))
	assert.Equal(t, "10.0.0.2", got.Endpoint)
	assert.Equal(t, 1.0, testutil.ToFloat64(m.sent.WithLabelValues("hook", "failed")))
	assert.Equal(t, 1.0, testutil.ToFloat64(m.retries.WithLabelValues("hook")))
}

func TestAClientErrorIsNotRetried(t *testing.T) {
	var hits atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
		w.WriteHeader(http.StatusBadRequest)
	}))
	defer srv.Close()
	n, m := start(t, Receiver{Name: "hook", Kind: KindWebhook, URL: srv.URL})
	n.Notify(failoverEvent)
	require.Eventually(t, func() bool { return testutil.ToFloat64(m.sent.WithLabelValues("hook", "failed")) == 1 }, 5*time.Second, 10*time.Millisecond)
	assert.Equal(t, int32(1), hits.Load())
	assert.Zero(t, testutil.ToFloat64(m.retries.WithLabelValues("hook")))
}

func TestAFullQueueDropsTheOldestAndNotifyDoesNotBlockOnAStuckReceiver(t *testing.T) {
	release := make(chan struct{})
	inFlight := make(chan string, 10)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var e Event
		_ = json.NewDecoder(r.Body).Decode(&e)
		inFlight <- e.Endpoint
		<-release
	}))
	defer srv.Close()
	defer close(release)
	n, m := start(t, Receiver{Name: "stuck", Kind: KindWebhook, URL: srv.URL, QueueSize: 2, Timeout: time.Minute})
	send := func(ep string) {
		e := failoverEvent
		e.Endpoint = ep
		n.Notify(e)
	}
	send("e0")
	require.Equal(t, "e0", <-inFlight, "the first event is being sent (the receiver does not answer)")
	for _, ep := range []string{"e1", "e2", "e3", "e4"} {
		send(ep) // returns although the receiver is stuck
	}
	assert.Equal(t, 2.0, testutil.ToFloat64(m.dropped.WithLabelValues("stuck")), "e1 and e2 dropped")
	assert.Equal(t, 2.0, testutil.ToFloat64(m.queued.WithLabelValues("stuck")))
	n.mu.Lock()
	q := n.receivers[0]
	n.mu.Unlock()
	q.mu.Lock()
	assert.Equal(t, []string{"e3", "e4"}, []string{q.queue[0].Endpoint, q.queue[1].Endpoint}, "the newest are kept")
	q.mu.Unlock()
}

func TestEventsFilterSelectsWhatAReceiverGets(t *testing.T) {
	c, srv := newCapture(t)
	n, _ := start(t, Receiver{Name: "rollbacks", Kind: KindWebhook, URL: srv.URL, Events: []string{EventRollback}})
	n.Notify(failoverEvent)
	n.Notify(Event{Kind: EventRollback, Service: "app", Summary: "shift of app rolled back to 5%", Severity: SeverityWarning, Action: ActionTrigger})
	c.wait(t, 1)
	var got Event
	require.NoError(t, json.Unmarshal(c.bodies[0], &got))
	assert.Equal(t, EventRollback, got.Kind)
	assert.False(t, got.At.IsZero(), "Notify stamps a missing time")
}

func TestNilNotifierDropsEvents(t *testing.T) {
	var n *Notifier
	n.Notify(failoverEvent)
	n.Close()
}

func TestNewRefusesAnUnreadableSecretFileNamingTheReceiver(t *testing.T) {
	cfg := Config{Receivers: []Receiver{{Name: "hook", Kind: KindWebhook, URL: "http://127.0.0.1:1/", SecretFile: filepath.Join(t.TempDir(), "missing")}}}
	cfg.ApplyDefaults()
	_, err := New(cfg, "n", NewMetrics(nil), nil)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "notifications.receivers[0] (hook): secret_file")
}

func setBackoff(d time.Duration) func() {
	f, m := backoffFirst, backoffMax
	backoffFirst, backoffMax = d, d
	return func() { backoffFirst, backoffMax = f, m }
}

func TestARedirectIsNotFollowedAndIsAPermanentErrorNamingTheHostAndStatus(t *testing.T) {
	for _, tc := range []struct {
		name   string
		status int
	}{
		{"a 301 moved permanently is not followed", http.StatusMovedPermanently},
		{"a 302 found is not followed", http.StatusFound},
		{"a 303 see other is not followed", http.StatusSeeOther},
		{"a 307 temporary redirect, which would re-post the signed body, is not followed", http.StatusTemporaryRedirect},
		{"a 308 permanent redirect, which would re-post the signed body, is not followed", http.StatusPermanentRedirect},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var elsewhere atomic.Int32 // an internal address the receiver points at
			internal := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { elsewhere.Add(1) }))
			defer internal.Close()
			var hits atomic.Int32
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				hits.Add(1)
				http.Redirect(w, r, internal.URL+"/admin/secret-path", tc.status)
			}))
			defer srv.Close()
			n, m := start(t, Receiver{Name: "hook", Kind: KindWebhook, URL: srv.URL + "/hook/s3cret-path", SecretFile: secretFile(t, "k")})
			n.Notify(failoverEvent)
			require.Eventually(t, func() bool { return testutil.ToFloat64(m.sent.WithLabelValues("hook", "failed")) == 1 }, 5*time.Second, 10*time.Millisecond)
			assert.Equal(t, int32(1), hits.Load(), "one attempt: not retried")
			assert.Zero(t, testutil.ToFloat64(m.retries.WithLabelValues("hook")))
			assert.Zero(t, elsewhere.Load(), "the redirect's target got nothing")

			n.mu.Lock()
			r := n.receivers[0]
			n.mu.Unlock()
			err := n.post(r, []byte(`{}`))
			require.Error(t, err)
			var perm permanentError
			assert.ErrorAs(t, err, &perm)
			assert.Contains(t, err.Error(), fmt.Sprintf("POST %s/…: status %d, a redirect to %s/…", srv.URL, tc.status, internal.URL))
			assert.NotContains(t, err.Error(), "s3cret-path", "the receiver's path is redacted")
			assert.NotContains(t, err.Error(), "secret-path", "the target's path is redacted")
			assert.Zero(t, elsewhere.Load())
		})
	}
}

func TestVerifyRefusesAForgedOrReplayedWebhook(t *testing.T) {
	key, body := []byte("k3y"), []byte(`{"kind":"rollback","at":"2026-12-02T01:00:00Z"}`)
	sent := time.Date(2026, 12, 2, 1, 0, 0, 0, time.UTC)
	ts := strconv.FormatInt(sent.Unix(), 10)
	sig := Sign(key, ts, body)
	oldScheme := func() string { // the HMAC of the body alone (before the timestamp was signed)
		h := hmac.New(sha256.New, key)
		h.Write(body)
		return "sha256=" + hex.EncodeToString(h.Sum(nil))
	}()
	for _, tc := range []struct {
		name    string
		key     []byte
		body    []byte
		ts, sig string
		now     time.Time
		wantErr string // "" = verifies
	}{
		{name: "a request checked as it arrives verifies", key: key, body: body, ts: ts, sig: sig, now: sent.Add(time.Second)},
		{name: "a request exactly five minutes old still verifies", key: key, body: body, ts: ts, sig: sig, now: sent.Add(MaxSignatureAge)},
		{name: "a clock five minutes behind the sender's still verifies", key: key, body: body, ts: ts, sig: sig, now: sent.Add(-MaxSignatureAge)},
		{name: "a replay more than five minutes later is refused", key: key, body: body, ts: ts, sig: sig, now: sent.Add(MaxSignatureAge + time.Second),
			wantErr: "X-Meridian-Timestamp " + ts + " is 5m1s away from now (allowed 5m0s either way)"},
		{name: "a timestamp more than five minutes ahead is refused", key: key, body: body, ts: ts, sig: sig, now: sent.Add(-MaxSignatureAge - time.Second),
			wantErr: "is -5m1s away from now"},
		{name: "a replay with a fresh timestamp does not match the signature", key: key, body: body, ts: strconv.FormatInt(sent.Unix()+600, 10), sig: sig, now: sent.Add(600 * time.Second),
			wantErr: "X-Meridian-Signature \"" + sig + "\" does not match the body and timestamp"},
		{name: "a signature of the body alone is refused", key: key, body: body, ts: ts, sig: oldScheme, now: sent,
			wantErr: "does not match the body and timestamp"},
		{name: "a changed body does not match", key: key, body: []byte(`{"kind":"failover"}`), ts: ts, sig: sig, now: sent,
			wantErr: "does not match"},
		{name: "another key does not match", key: []byte("other"), body: body, ts: ts, sig: sig, now: sent,
			wantErr: "does not match"},
		{name: "a request without a timestamp is refused", key: key, body: body, ts: "", sig: sig, now: sent,
			wantErr: "no X-Meridian-Timestamp header"},
		{name: "a timestamp in milliseconds signed as such is too far from now", key: key, body: body, ts: ts + "000", sig: Sign(key, ts+"000", body), now: sent,
			wantErr: "away from now"},
		{name: "a signed timestamp with a sign is not unix seconds", key: key, body: body, ts: "+" + ts, sig: Sign(key, "+"+ts, body), now: sent,
			wantErr: `X-Meridian-Timestamp "+` + ts + `" is not unix seconds`},
		{name: "a timestamp with a fraction is not unix seconds", key: key, body: body, ts: ts + ".5", sig: sig, now: sent,
			wantErr: "is not unix seconds"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := Verify(tc.key, tc.body, tc.ts, tc.sig, tc.now)
			if tc.wantErr == "" {
				assert.NoError(t, err)
				return
			}
			require.Error(t, err)
			assert.Contains(t, err.Error(), tc.wantErr)
		})
	}
}
