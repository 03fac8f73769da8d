package notify

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/meridian-gslb/meridian/internal/secretfile"
)

// Headers of a signed generic webhook request: TimestampHeader is the unix
// time in seconds the attempt was sent, SignatureHeader "sha256=" + the hex
// HMAC-SHA256 of TimestampHeader's value, ".", and the body, keyed with the
// receiver's secret_file (Sign). A receiver checks both with Verify.
const (
	SignatureHeader = "X-Meridian-Signature"
	TimestampHeader = "X-Meridian-Timestamp"
)

// MaxSignatureAge is how far a signed request's timestamp may be from the
// receiver's clock, either way, before Verify refuses it as a replay.
const MaxSignatureAge = 5 * time.Minute

// Backoff between attempts of one event: first, then doubled up to max.
var (
	backoffFirst = 500 * time.Millisecond
	backoffMax   = 30 * time.Second
)

// Notifier sends events to the configured receivers. Notify never blocks:
// each receiver has a bounded queue and one goroutine that sends in order,
// with retries. A nil *Notifier drops every event (no receivers).
type Notifier struct {
	node   string
	log    *slog.Logger
	m      *Metrics
	client *http.Client
	first  time.Duration // backoff: the first wait, doubled up to max
	max    time.Duration
	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup

	mu        sync.Mutex
	receivers []*receiver
}

// New reads the receivers' secret files and starts one sender per
// receiver; the Config must be validated and defaulted. node names this
// process in the events. Close stops the senders.
func New(cfg Config, node string, m *Metrics, log *slog.Logger) (*Notifier, error) {
	if log == nil {
		log = slog.Default()
	}
	n := &Notifier{node: node, log: log, m: m, client: &http.Client{CheckRedirect: noRedirect}, first: backoffFirst, max: backoffMax}
	rs := make([]*receiver, 0, len(cfg.Receivers))
	for i, rc := range cfg.Receivers {
		r, err := newReceiver(rc)
		if err != nil {
			return nil, fmt.Errorf("notifications.receivers[%d] (%s): %w", i, rc.Name, err)
		}
		rs = append(rs, r)
	}
	n.ctx, n.cancel = context.WithCancel(context.Background())
	n.receivers = rs
	for _, r := range rs {
		m.queued.WithLabelValues(r.cfg.Name).Set(0)
		n.wg.Add(1)
		go n.run(r)
	}
	return n, nil
}

// Notify queues e for every receiver whose events include e.Kind. It never
// blocks: a full queue drops its oldest event (meridian_notify_dropped_total).
// Safe for concurrent use and on a nil Notifier.
func (n *Notifier) Notify(e Event) {
	if n == nil {
		return
	}
	if e.Node == "" {
		e.Node = n.node
	}
	if e.At.IsZero() {
		e.At = time.Now()
	}
	n.mu.Lock()
	rs := n.receivers
	n.mu.Unlock()
	for _, r := range rs {
		if !slices.Contains(r.cfg.Events, e.Kind) {
			continue
		}
		if r.cfg.Kind == KindPagerDuty && e.Action == "" {
			continue // informational: PagerDuty only triggers and resolves
		}
		if r.push(e) {
			n.m.dropped.WithLabelValues(r.cfg.Name).Inc()
			if d := r.drops.Add(1); d == 1 || d%100 == 0 { // the first drop, then every 100th
				n.log.Warn("notification queue full: oldest event dropped", "receiver", r.cfg.Name, "queue_size", r.cfg.QueueSize, "dropped", d)
			}
		}
		n.m.queued.WithLabelValues(r.cfg.Name).Set(float64(r.len()))
	}
}

// Close stops the senders; events still queued are not sent.
func (n *Notifier) Close() {
	if n == nil {
		return
	}
	n.cancel()
	n.wg.Wait()
}

type receiver struct {
	cfg        Receiver
	url        string
	secret     []byte // webhook HMAC key, nil: unsigned
	routingKey string

	drops atomic.Uint64 // events dropped so far (for the log's rate)

	mu    sync.Mutex
	queue []Event       // oldest first, at most cfg.QueueSize
	wake  chan struct{} // one token: the queue is not empty
}

func newReceiver(c Receiver) (*receiver, error) {
	r := &receiver{cfg: c, url: c.URL, wake: make(chan struct{}, 1)}
	if c.URLFile != "" {
		b, err := secretfile.Read(c.URLFile)
		if err != nil {
			return nil, fmt.Errorf("url_file: %w", err)
		}
		r.url = strings.TrimSpace(string(b))
		if err := checkURL(r.url); err != nil {
			return nil, fmt.Errorf("url_file %s: %w", c.URLFile, err)
		}
	}
	if c.SecretFile != "" {
		b, err := secretfile.Read(c.SecretFile)
		if err != nil {
			return nil, fmt.Errorf("secret_file: %w", err)
		}
		if r.secret = bytes.TrimSpace(b); len(r.secret) == 0 {
			return nil, fmt.Errorf("secret_file %s is empty", c.SecretFile)
		}
	}
	if c.RoutingKeyFile != "" {
		b, err := secretfile.Read(c.RoutingKeyFile)
		if err != nil {
			return nil, fmt.Errorf("routing_key_file: %w", err)
		}
		if r.routingKey = strings.TrimSpace(string(b)); r.routingKey == "" {
			return nil, fmt.Errorf("routing_key_file %s is empty", c.RoutingKeyFile)
		}
	}
	return r, nil
}

// push appends e, dropping the oldest event when the queue is full; it
// reports whether one was dropped.
func (r *receiver) push(e Event) (dropped bool) {
	r.mu.Lock()
	if len(r.queue) >= r.cfg.QueueSize {
		r.queue[0] = Event{}
		r.queue = r.queue[1:] // O(1); append moves the rest to a new array when it runs out
		dropped = true
	}
	r.queue = append(r.queue, e)
	r.mu.Unlock()
	select {
	case r.wake <- struct{}{}:
	default:
	}
	return dropped
}

func (r *receiver) pop() (Event, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(r.queue) == 0 {
		return Event{}, false
	}
	e := r.queue[0]
	r.queue[0] = Event{}
	r.queue = r.queue[1:]
	return e, true
}

func (r *receiver) len() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.queue)
}

// run sends r's events in order until the Notifier is closed.
func (n *Notifier) run(r *receiver) {
	defer n.wg.Done()
	for n.ctx.Err() == nil {
		e, ok := r.pop()
		if !ok {
			select {
			case <-n.ctx.Done():
				return
			case <-r.wake:
				continue
			}
		}
		n.m.queued.WithLabelValues(r.cfg.Name).Set(float64(r.len()))
		n.deliver(r, e)
	}
}

// deliver sends one event with up to max_attempts attempts; a panic while
// encoding or sending is recovered and counted as a failure.
func (n *Notifier) deliver(r *receiver, e Event) {
	defer func() {
		if v := recover(); v != nil {
			n.m.sent.WithLabelValues(r.cfg.Name, "panic").Inc()
			n.log.Error("notification panicked: event dropped", "receiver", r.cfg.Name, "kind", e.Kind, "panic", v)
		}
	}()
	body, err := r.encode(e)
	if err != nil {
		n.m.sent.WithLabelValues(r.cfg.Name, "failed").Inc()
		n.log.Error("notification not encodable: event dropped", "receiver", r.cfg.Name, "kind", e.Kind, "err", err)
		return
	}
	wait := n.first
	for attempt := 1; ; attempt++ {
		err := n.post(r, body)
		if err == nil {
			n.m.sent.WithLabelValues(r.cfg.Name, "ok").Inc()
			n.m.latency.WithLabelValues(r.cfg.Name).Observe(time.Since(e.At).Seconds())
			return
		}
		var perm permanentError
		final := errors.As(err, &perm) || attempt >= r.cfg.MaxAttempts
		if final {
			n.m.sent.WithLabelValues(r.cfg.Name, "failed").Inc()
			n.log.Error("notification failed: event dropped", "receiver", r.cfg.Name, "kind", e.Kind, "attempts", attempt, "err", err)
			return
		}
		n.m.retries.WithLabelValues(r.cfg.Name).Inc()
		n.log.Warn("notification failed: retrying", "receiver", r.cfg.Name, "kind", e.Kind, "attempt", attempt, "in", wait, "err", err)
		t := time.NewTimer(wait)
		select {
		case <-n.ctx.Done():
			t.Stop()
			return
		case <-t.C:
		}
		wait = min(wait*2, n.max)
	}
}

// noRedirect makes the client return a 3xx answer as it is: following it
// would re-post the (signed) body to wherever the receiver points, internal
// addresses included.
func noRedirect(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }

// permanentError is a failure that a retry cannot change: a 3xx answer
// (redirects are not followed), a 4xx answer (but 408 and 429), a request
// that cannot be built.
type permanentError struct{ msg string }

func (e permanentError) Error() string { return e.msg }

func (n *Notifier) post(r *receiver, body []byte) error {
	ctx, cancel := context.WithTimeout(n.ctx, r.cfg.Timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, r.url, bytes.NewReader(body))
	if err != nil {
		return permanentError{msg: fmt.Sprintf("POST %s: request: %v", redact(r.url), err)}
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("User-Agent", "meridian-notify")
	if r.secret != nil {
		ts := strconv.FormatInt(time.Now().Unix(), 10) // each attempt's own: a retry is not a replay
		req.Header.Set(TimestampHeader, ts)
		req.Header.Set(SignatureHeader, Sign(r.secret, ts, body))
	}
	resp, err := n.client.Do(req)
	if err != nil {
		// The error holds the URL, which may hold a secret (Slack).
		var ue interface{ Unwrap() error }
		if errors.As(err, &ue) && ue.Unwrap() != nil {
			return fmt.Errorf("POST %s: %w", redact(r.url), ue.Unwrap())
		}
		return fmt.Errorf("POST %s failed", redact(r.url))
	}
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
	_ = resp.Body.Close()
	switch s := resp.StatusCode; {
	case s >= 200 && s < 300:
		return nil
	case s >= 300 && s < 400:
		to := ""
		if u, err := resp.Location(); err == nil {
			to = " to " + redact(u.String())
		}
		return permanentError{msg: fmt.Sprintf("POST %s: status %d, a redirect%s (redirects are not followed: set the final URL; not retried)", redact(r.url), s, to)}
	case s >= 400 && s < 500 && s != http.StatusRequestTimeout && s != http.StatusTooManyRequests:
		return permanentError{msg: fmt.Sprintf("POST %s: status %d (not retried)", redact(r.url), s)}
	default:
		return fmt.Errorf("POST %s: status %d", redact(r.url), s)
	}
}

// encode returns the request body of e in the receiver's format.
func (r *receiver) encode(e Event) ([]byte, error) {
	switch r.cfg.Kind {
	case KindSlack:
		return json.Marshal(slackBody{Text: slackText(e)})
	case KindPagerDuty:
		return json.Marshal(pagerDuty(e, r.routingKey))
	default:
		return json.Marshal(e)
	}
}

// Sign returns the X-Meridian-Signature value of a request with body sent
// with X-Meridian-Timestamp timestamp: "sha256=" and the hex HMAC-SHA256 of
// timestamp + "." + body keyed with secret. The timestamp is signed so that
// a captured request cannot be replayed later (Verify).
func Sign(secret []byte, timestamp string, body []byte) string {
	h := hmac.New(sha256.New, secret)
	h.Write([]byte(timestamp))
	h.Write([]byte{'.'})
	h.Write(body)
	return "sha256=" + hex.EncodeToString(h.Sum(nil))
}

// Verify checks a signed webhook request received at now: timestamp and
// signature are its X-Meridian-Timestamp and X-Meridian-Signature headers,
// body the raw bytes received. It refuses a timestamp that is not unix
// seconds, a signature that does not match (compared in constant time)
// and a timestamp more than MaxSignatureAge from now either way (a replay,
// or a clock that is off). For receivers written in Go and for the tests.
func Verify(secret, body []byte, timestamp, signature string, now time.Time) error {
	if timestamp == "" {
		return fmt.Errorf("no %s header (signed requests carry one)", TimestampHeader)
	}
	sec, err := strconv.ParseInt(timestamp, 10, 64)
	if err != nil || strings.TrimLeft(timestamp, "0123456789") != "" {
		return fmt.Errorf("%s %.32q is not unix seconds", TimestampHeader, timestamp)
	}
	if !hmac.Equal([]byte(signature), []byte(Sign(secret, timestamp, body))) {
		return fmt.Errorf("%s %.80q does not match the body and timestamp", SignatureHeader, signature)
	}
	if d := now.Sub(time.Unix(sec, 0)); d > MaxSignatureAge || d < -MaxSignatureAge {
		return fmt.Errorf("%s %s is %s away from now (allowed %s either way): a replay, or a clock off", TimestampHeader, timestamp, d.Round(time.Second), MaxSignatureAge)
	}
	return nil
}
