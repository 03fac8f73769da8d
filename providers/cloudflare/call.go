package cloudflare

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"net/url"
	"sync"
	"time"

	"github.com/meridian-gslb/meridian/providers"
)

// budgetWindow is the period of Options.RequestBudget: Cloudflare limits an
// API user to 1200 requests per 5 minutes.
const budgetWindow = 5 * time.Minute

// Backoff after a 5xx, a timeout or a 429 without Retry-After: full jitter
// between half and all of min(backoffMax, backoffBase·2^attempt).
const (
	backoffBase = time.Second
	backoffMax  = 30 * time.Second
)

// window is a sliding-window limiter: at most n requests in any period.
// It is safe for concurrent use.
type window struct {
	n      int
	period time.Duration
	now    func() time.Time
	sleep  func(context.Context, time.Duration) error

	mu    sync.Mutex
	times []time.Time // start times of the requests of the last period, oldest first
}

// take waits until a request may start and books it. It blocks for up to
// one period, or until ctx ends.
func (w *window) take(ctx context.Context) error {
	for {
		w.mu.Lock()
		now := w.now()
		drop := 0
		for drop < len(w.times) && !w.times[drop].Add(w.period).After(now) {
			drop++
		}
		w.times = w.times[drop:]
		if len(w.times) < w.n {
			w.times = append(w.times, now)
			w.mu.Unlock()
			return nil
		}
		wait := w.times[0].Add(w.period).Sub(now)
		w.mu.Unlock()
		if err := w.sleep(ctx, wait); err != nil {
			return err
		}
	}
}

// outcome of one request, for retries and metrics.
type outcome int

const (
	success   outcome = iota
	throttled         // 429: retry after Retry-After
	transient         // 5xx, timeout, connection failure: retry with backoff
	refused           // any other API error: report, do not retry
)

// classify sorts the error of one request; ctx is the caller's context
// (a per-request timeout is transient, the caller's cancellation is not).
func classify(ctx context.Context, err error) outcome {
	if err == nil {
		return success
	}
	var ae *APIError
	switch {
	case errors.As(err, &ae) && ae.Status == http.StatusTooManyRequests:
		return throttled
	case errors.As(err, &ae) && ae.Status >= 500:
		return transient
	case errors.As(err, &ae), ctx.Err() != nil:
		return refused
	}
	// No answer: a per-request timeout, a refused or reset connection, a
	// cut-off body. Anything else (e.g. "zone not found") is final.
	var ne net.Error
	var ue *url.Error
	if errors.Is(err, context.DeadlineExceeded) || errors.As(err, &ne) || errors.As(err, &ue) ||
		errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, io.EOF) {
		return transient
	}
	return refused
}

// do makes one API request under the budget, retrying throttling (after
// Retry-After exactly, or a jittered backoff), server errors and timeouts
// up to Options.MaxRetries times. It returns the number of requests made.
// An error after the last retry wraps providers.ErrTransient; a refusal
// (a 4xx other than 429) is returned as its *APIError.
func (p *Provider) do(ctx context.Context, op string, fn func(context.Context) error) (int, error) {
	for attempt := 0; ; attempt++ {
		if err := p.budget.take(ctx); err != nil {
			return attempt, fmt.Errorf("%s: waiting for the request budget: %w: %w", op, providers.ErrTransient, err)
		}
		err := fn(ctx)
		var wait time.Duration
		switch classify(ctx, err) {
		case success:
			p.metrics.call(op, resultOK)
			return attempt + 1, nil
		case refused:
			p.metrics.call(op, resultError)
			return attempt + 1, err
		case throttled:
			p.metrics.call(op, resultThrottled)
			p.metrics.throttle()
			var ae *APIError
			if errors.As(err, &ae) && ae.RetryAfter > 0 {
				wait = ae.RetryAfter
			} else {
				wait = p.backoff(attempt)
			}
		case transient:
			p.metrics.call(op, resultRetryable)
			wait = p.backoff(attempt)
		}
		if attempt >= p.opts.MaxRetries {
			return attempt + 1, fmt.Errorf("%s: %d attempts: %w: %w", op, attempt+1, providers.ErrTransient, err)
		}
		p.metrics.retry()
		p.log.Debug("cloudflare: retrying", "operation", op, "attempt", attempt+1, "wait", wait, "err", err)
		if err := p.opts.Sleep(ctx, wait); err != nil {
			return attempt + 1, fmt.Errorf("%s: waiting to retry: %w: %w", op, providers.ErrTransient, err)
		}
	}
}

// backoff is the jittered wait before retry attempt+1.
func (p *Provider) backoff(attempt int) time.Duration {
	d := backoffMax
	if attempt < 5 {
		d = min(backoffMax, backoffBase<<attempt)
	}
	return d/2 + time.Duration(rand.Int64N(int64(d/2)+1))
}

// sleep waits d or until ctx ends.
func sleep(ctx context.Context, d time.Duration) error {
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
