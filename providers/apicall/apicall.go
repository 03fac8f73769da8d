// Package apicall makes the API requests of the provider adapters: every
// attempt first takes a request from the adapter's budget, is bounded by a
// per-attempt timeout, and a throttle, a server error or a timeout is
// retried with jittered exponential backoff (or after the provider's
// Retry-After) up to a number of attempts, after which the error wraps
// providers.ErrTransient so that the reconciler tries again on its next
// pass. Adapters only classify their own errors (a Classifier); the retry
// loop, the budgets and the metrics (one set, labelled by provider) are
// shared.
package apicall

import (
	"cmp"
	"context"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"time"

	"github.com/meridian-gslb/meridian/internal/model"
	"github.com/meridian-gslb/meridian/providers"
)

// Class is what one attempt's outcome calls for. Its String is the result
// label of meridian_provider_api_calls_total.
type Class int

const (
	OK        Class = iota // success
	Throttled              // the provider's rate limit: retried after Retry-After or a backoff
	Retryable              // 5xx, a timeout, a broken connection: retried after a backoff
	Refused                // anything else (a 4xx, a missing zone, bad credentials): returned at once
)

func (c Class) String() string {
	switch c {
	case OK:
		return "ok"
	case Throttled:
		return "throttled"
	case Retryable:
		return "retryable"
	default:
		return "error"
	}
}

// Verdict is an adapter's reading of one attempt's error.
type Verdict struct {
	Class      Class
	RetryAfter time.Duration // with Throttled: the wait the provider asked for (0: none, back off)
}

// Classifier reads the error of one attempt; ctx is the caller's context
// (not the attempt's), err is never nil.
type Classifier func(ctx context.Context, err error) Verdict

// Defaults of Policy, the same for every provider: those of the config's
// model.ProviderAPI.
const (
	DefaultMaxAttempts    = model.DefaultProviderMaxAttempts
	DefaultBackoff        = model.DefaultProviderBackoff
	DefaultMaxBackoff     = model.DefaultProviderMaxBackoff
	DefaultRequestTimeout = model.DefaultProviderRequestTimeout
	// MaxRetryAfter caps a provider's Retry-After: a bogus or hostile value
	// must not park a sync for hours (Cloudflare's own window is 5 minutes).
	MaxRetryAfter = model.MaxProviderRetryAfter
)

// Policy is how one request is retried. Zero fields take the defaults.
type Policy struct {
	MaxAttempts    int           // attempts of one request, the first included (default 5)
	Backoff        time.Duration // delay before the second attempt, doubled per attempt (default 1s)
	MaxBackoff     time.Duration // cap of the doubled delay (default 30s)
	RequestTimeout time.Duration // bound of one attempt (default 30s)
}

// WithDefaults returns p with its zero (or negative) fields set to the
// defaults.
func (p Policy) WithDefaults() Policy {
	p.MaxAttempts = cmp.Or(max(p.MaxAttempts, 0), DefaultMaxAttempts)
	p.Backoff = cmp.Or(max(p.Backoff, 0), DefaultBackoff)
	p.MaxBackoff = cmp.Or(max(p.MaxBackoff, 0), DefaultMaxBackoff)
	p.RequestTimeout = cmp.Or(max(p.RequestTimeout, 0), DefaultRequestTimeout)
	return p
}

// With returns p with the retry settings a zone's config sets (its
// positive fields) in place of p's.
func (p Policy) With(c model.ProviderAPI) Policy {
	p.MaxAttempts = cmp.Or(max(c.MaxAttempts, 0), p.MaxAttempts)
	p.Backoff = cmp.Or(max(c.Backoff.D(), 0), p.Backoff)
	p.MaxBackoff = cmp.Or(max(c.MaxBackoff.D(), 0), p.MaxBackoff)
	p.RequestTimeout = cmp.Or(max(c.RequestTimeout.D(), 0), p.RequestTimeout)
	return p
}

// Delay is the wait after failed attempt number attempt (1-based) with
// verdict v: the provider's Retry-After when it gave one (at most
// MaxRetryAfter), else Backoff·2^(attempt-1) capped at MaxBackoff, drawn
// uniformly from its upper half by jitter (jitter(n) is uniform in [0, n))
// so that writers throttled together do not come back together.
func (p Policy) Delay(attempt int, v Verdict, jitter func(n int64) int64) time.Duration {
	if v.Class == Throttled && v.RetryAfter > 0 {
		return min(v.RetryAfter, MaxRetryAfter)
	}
	d := p.Backoff << min(max(attempt-1, 0), 30)
	if d <= 0 || d > p.MaxBackoff {
		d = p.MaxBackoff
	}
	return d/2 + time.Duration(jitter(int64(d/2)+1))
}

// Caller makes the requests of one adapter. Its fields are set once, before
// the first Do; it is safe for concurrent use when Budget is.
type Caller struct {
	Provider string // the provider label: route53, cloudflare
	Policy   Policy // (zero fields: the defaults)
	Budget   Budget // (nil: unlimited)
	Classify Classifier
	Metrics  *Metrics     // (nil: NewMetrics(nil), counted nowhere)
	Logger   *slog.Logger // (nil: slog.Default())
	// Sleep waits d or until ctx ends, returning ctx's error then (nil: a timer).
	Sleep func(ctx context.Context, d time.Duration) error
	// Jitter is uniform in [0, n) (nil: math/rand/v2).
	Jitter func(n int64) int64
}

// Do runs fn, operation op, until it succeeds, is refused, runs out of
// attempts or ctx ends, and returns the number of attempts made (requests
// sent). fn gets a context bounded by the policy's RequestTimeout and must
// set its results only on success. The errors name op; a refusal wraps the
// adapter's error; running out of attempts, or a budget that cannot grant a
// request before ctx's deadline, also wraps providers.ErrTransient.
func (c *Caller) Do(ctx context.Context, op string, fn func(ctx context.Context) error) (int, error) {
	pol := c.Policy.WithDefaults()
	m, log, sleepFn, jitter := c.Metrics, c.Logger, c.Sleep, c.Jitter
	if m == nil {
		m = NewMetrics(nil)
	}
	if log == nil {
		log = slog.Default()
	}
	if sleepFn == nil {
		sleepFn = Sleep
	}
	if jitter == nil {
		jitter = rand.Int64N
	}
	for attempt := 1; ; attempt++ {
		if c.Budget != nil {
			if err := c.Budget.Take(ctx); err != nil {
				if ctx.Err() != nil {
					return attempt - 1, fmt.Errorf("%s: waiting for the request budget: %w", op, ctx.Err())
				}
				// The budget cannot grant a request before ctx's deadline.
				return attempt - 1, fmt.Errorf("%s: waiting for the request budget: %w: %w", op, providers.ErrTransient, err)
			}
		}
		actx, cancel := context.WithTimeout(ctx, pol.RequestTimeout)
		err := fn(actx)
		cancel()
		v := Verdict{Class: OK}
		if err != nil {
			v = c.Classify(ctx, err)
		}
		m.APICalls.WithLabelValues(c.Provider, op, v.Class.String()).Inc()
		switch {
		case v.Class == OK:
			return attempt, nil
		case ctx.Err() != nil:
			return attempt, fmt.Errorf("%s: %w", op, ctx.Err())
		case v.Class != Throttled && v.Class != Retryable:
			return attempt, fmt.Errorf("%s: %w", op, err)
		}
		if v.Class == Throttled {
			m.Throttles.WithLabelValues(c.Provider).Inc()
		}
		if attempt >= pol.MaxAttempts {
			return attempt, fmt.Errorf("%s: gave up after %d attempts: %w: %w", op, attempt, providers.ErrTransient, err)
		}
		m.Retries.WithLabelValues(c.Provider).Inc()
		d := pol.Delay(attempt, v, jitter)
		log.Debug("provider API request retried", "provider", c.Provider, "operation", op, "attempt", attempt, "result", v.Class.String(), "delay", d, "err", err)
		if err := sleepFn(ctx, d); err != nil {
			return attempt, fmt.Errorf("%s: waiting to retry: %w", op, err)
		}
	}
}

// Sleep waits d or until ctx ends, and then returns ctx's error.
func Sleep(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		return ctx.Err()
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}
