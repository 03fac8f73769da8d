package apicall

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/meridian-gslb/meridian/internal/model"
	"github.com/meridian-gslb/meridian/providers"
)

var (
	errThrottle = errors.New("throttled")
	errServer   = errors.New("server error")
	errRefused  = errors.New("refused")
	errSlowDown = errors.New("slow down, 7s")
)

// classify is a test adapter's classifier.
func classify(_ context.Context, err error) Verdict {
	switch {
	case errors.Is(err, errThrottle):
		return Verdict{Class: Throttled}
	case errors.Is(err, errSlowDown):
		return Verdict{Class: Throttled, RetryAfter: 7 * time.Second}
	case errors.Is(err, errServer):
		return Verdict{Class: Retryable}
	}
	return Verdict{Class: Refused}
}

// fakeBudget counts the requests it grants, and refuses after limit.
type fakeBudget struct{ taken, limit int }

func (b *fakeBudget) Take(context.Context) error {
	if b.limit > 0 && b.taken >= b.limit {
		return errors.New("would wait past the deadline")
	}
	b.taken++
	return nil
}

func TestDo(t *testing.T) {
	cases := []struct {
		name     string
		errs     []error // one per attempt; past the end: success
		policy   Policy
		budget   int // requests the budget grants (0: any)
		attempts int
		sleeps   []time.Duration // with a jitter of 0: the lower half of each backoff
		wantErr  error           // nil: success
		calls    map[string]float64
		throttle float64
		retries  float64
	}{
		{
			name: "a success on the first attempt makes one request and no retry", attempts: 1,
			calls: map[string]float64{"ok": 1},
		},
		{
			name: "a refusal is returned at once, not retried", errs: []error{errRefused}, attempts: 1,
			wantErr: errRefused, calls: map[string]float64{"error": 1},
		},
		{
			name: "throttles are retried after a doubling backoff until they stop",
			errs: []error{errThrottle, errThrottle, errThrottle}, attempts: 4,
			sleeps: []time.Duration{500 * time.Millisecond, time.Second, 2 * time.Second},
			calls:  map[string]float64{"throttled": 3, "ok": 1}, throttle: 3, retries: 3,
		},
		{
			name: "a throttle with Retry-After waits exactly that long",
			errs: []error{errSlowDown, errSlowDown}, attempts: 3,
			sleeps: []time.Duration{7 * time.Second, 7 * time.Second},
			calls:  map[string]float64{"throttled": 2, "ok": 1}, throttle: 2, retries: 2,
		},
		{
			name: "server errors are retried but are not throttles",
			errs: []error{errServer}, attempts: 2, sleeps: []time.Duration{500 * time.Millisecond},
			calls: map[string]float64{"retryable": 1, "ok": 1}, retries: 1,
		},
		{
			name: "a fault that never ends gives up as transient after the last attempt",
			errs: []error{errServer, errServer, errServer, errServer}, policy: Policy{MaxAttempts: 3},
			attempts: 3, sleeps: []time.Duration{500 * time.Millisecond, time.Second},
			wantErr: providers.ErrTransient, calls: map[string]float64{"retryable": 3}, retries: 2,
		},
		{
			name: "the backoff stops doubling at its cap",
			errs: []error{errServer, errServer, errServer}, policy: Policy{Backoff: time.Second, MaxBackoff: 3 * time.Second},
			attempts: 4, sleeps: []time.Duration{500 * time.Millisecond, time.Second, 1500 * time.Millisecond},
			calls: map[string]float64{"retryable": 3, "ok": 1}, retries: 3,
		},
		{
			name: "a budget that cannot grant the next request is transient, and no request is sent past it",
			errs: []error{errServer, errServer}, budget: 1, attempts: 1, sleeps: []time.Duration{500 * time.Millisecond},
			wantErr: providers.ErrTransient, calls: map[string]float64{"retryable": 1}, retries: 1,
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			reg := prometheus.NewRegistry()
			b := &fakeBudget{limit: tc.budget}
			var sleeps []time.Duration
			c := &Caller{Provider: "test", Policy: tc.policy, Budget: b, Classify: classify, Metrics: NewMetrics(reg),
				Sleep:  func(_ context.Context, d time.Duration) error { sleeps = append(sleeps, d); return nil },
				Jitter: func(int64) int64 { return 0 }}
			if c.Policy.Backoff == 0 {
				c.Policy.Backoff = time.Second
			}
			sent := 0
			n, err := c.Do(context.Background(), "list", func(ctx context.Context) error {
				_, ok := ctx.Deadline()
				require.True(t, ok, "every attempt has a timeout")
				sent++
				if sent <= len(tc.errs) {
					return tc.errs[sent-1]
				}
				return nil
			})
			if tc.wantErr == nil {
				require.NoError(t, err)
			} else {
				require.ErrorIs(t, err, tc.wantErr)
				assert.Contains(t, err.Error(), "list: ", "the error names the operation")
			}
			assert.Equal(t, tc.attempts, n)
			assert.Equal(t, tc.attempts, sent)
			assert.Equal(t, tc.sleeps, sleeps)
			for result, want := range tc.calls {
				assert.Equal(t, want, testutil.ToFloat64(c.Metrics.APICalls.WithLabelValues("test", "list", result)), result)
			}
			assert.Equal(t, tc.throttle, testutil.ToFloat64(c.Metrics.Throttles.WithLabelValues("test")))
			assert.Equal(t, tc.retries, testutil.ToFloat64(c.Metrics.Retries.WithLabelValues("test")))
		})
	}
}

func TestDoStopsWhenTheCallerCancels(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	c := &Caller{Provider: "test", Classify: classify, Budget: &fakeBudget{}}
	sent := 0
	n, err := c.Do(ctx, "change", func(context.Context) error {
		sent++
		cancel() // the caller gives up while the attempt runs
		return errServer
	})
	require.ErrorIs(t, err, context.Canceled)
	assert.NotErrorIs(t, err, providers.ErrTransient, "a shutdown is not an outage")
	assert.Equal(t, 1, n)
	assert.Equal(t, 1, sent)
}

func TestDoStopsWhenTheCallerCancelsDuringTheBackoff(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	c := &Caller{Provider: "test", Classify: classify, Sleep: func(context.Context, time.Duration) error {
		cancel()
		return context.Canceled
	}}
	n, err := c.Do(ctx, "change", func(context.Context) error { return errThrottle })
	require.ErrorIs(t, err, context.Canceled)
	assert.Equal(t, 1, n)
}

func TestDelay(t *testing.T) {
	pol := Policy{Backoff: time.Second, MaxBackoff: 30 * time.Second}
	top := func(n int64) int64 { return n - 1 }
	none := func(int64) int64 { return 0 }
	cases := []struct {
		name    string
		attempt int
		v       Verdict
		jitter  func(int64) int64
		want    time.Duration
	}{
		{"the first retry waits between half and all of the backoff (lowest draw)", 1, Verdict{Class: Retryable}, none, 500 * time.Millisecond},
		{"the first retry waits between half and all of the backoff (highest draw)", 1, Verdict{Class: Retryable}, top, time.Second},
		{"each attempt doubles the backoff", 4, Verdict{Class: Retryable}, top, 8 * time.Second},
		{"the backoff is capped", 9, Verdict{Class: Throttled}, top, 30 * time.Second},
		{"a huge attempt number does not overflow past the cap", 1000, Verdict{Class: Retryable}, top, 30 * time.Second},
		{"a Retry-After is honoured exactly, without jitter", 1, Verdict{Class: Throttled, RetryAfter: 7 * time.Second}, top, 7 * time.Second},
		{"a Retry-After longer than the backoff cap is still honoured", 1, Verdict{Class: Throttled, RetryAfter: 2 * time.Minute}, top, 2 * time.Minute},
		{"a Retry-After of hours is capped at five minutes", 1, Verdict{Class: Throttled, RetryAfter: 3 * time.Hour}, top, MaxRetryAfter},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			assert.Equal(t, tc.want, pol.Delay(tc.attempt, tc.v, tc.jitter))
		})
	}
}

func TestPolicyDefaults(t *testing.T) {
	cases := []struct {
		name string
		in   Policy
		want Policy
	}{
		{"an empty policy takes every default", Policy{},
			Policy{MaxAttempts: DefaultMaxAttempts, Backoff: DefaultBackoff, MaxBackoff: DefaultMaxBackoff, RequestTimeout: DefaultRequestTimeout}},
		{"set fields are kept", Policy{MaxAttempts: 2, Backoff: time.Millisecond, MaxBackoff: time.Second, RequestTimeout: time.Minute},
			Policy{MaxAttempts: 2, Backoff: time.Millisecond, MaxBackoff: time.Second, RequestTimeout: time.Minute}},
		{"negative fields take the defaults", Policy{MaxAttempts: -1, Backoff: -1},
			Policy{MaxAttempts: DefaultMaxAttempts, Backoff: DefaultBackoff, MaxBackoff: DefaultMaxBackoff, RequestTimeout: DefaultRequestTimeout}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) { assert.Equal(t, tc.want, tc.in.WithDefaults()) })
	}
}

func TestMetricsAreSharedByEveryAdapterOfARegistry(t *testing.T) {
	reg := prometheus.NewRegistry()
	a, b := NewMetrics(reg), NewMetrics(reg)
	a.Throttles.WithLabelValues("route53").Inc()
	b.Throttles.WithLabelValues("cloudflare").Inc()
	assert.Same(t, a.APICalls, b.APICalls)
	assert.Equal(t, 2, testutil.CollectAndCount(a.Throttles), "one family, two provider series")
	assert.NotPanics(t, func() { NewMetrics(nil) })
}

func TestPolicyWithAZoneConfig(t *testing.T) {
	base := Policy{MaxAttempts: 3, Backoff: time.Millisecond, MaxBackoff: time.Second, RequestTimeout: time.Minute}
	cases := []struct {
		name string
		cfg  model.ProviderAPI
		want Policy
	}{
		{"a zone without settings keeps the caller's policy", model.ProviderAPI{}, base},
		{"the settings a zone sets replace the caller's", model.ProviderAPI{MaxAttempts: 7, MaxBackoff: model.Duration(time.Hour)},
			Policy{MaxAttempts: 7, Backoff: time.Millisecond, MaxBackoff: time.Hour, RequestTimeout: time.Minute}},
		{"negative settings are ignored", model.ProviderAPI{MaxAttempts: -1, Backoff: model.Duration(-time.Second)}, base},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) { assert.Equal(t, tc.want, base.With(tc.cfg)) })
	}
}
