package apicall

import (
	"context"
	"sync"
	"time"

	"golang.org/x/time/rate"
)

// Budget grants requests: Take waits until one may start and books it, or
// returns an error when ctx ends first (or, for Rate, when the wait would
// outlast ctx's deadline).
type Budget interface {
	Take(ctx context.Context) error
}

// Rate is a budget that spreads requests evenly: a token bucket of
// perSecond with a burst of 1 (Route 53: 5 requests per second per account).
type Rate struct{ l *rate.Limiter }

// NewRate returns a budget of perSecond requests per second, burst 1.
func NewRate(perSecond float64) *Rate {
	return &Rate{l: rate.NewLimiter(rate.Limit(perSecond), 1)}
}

// Take implements Budget.
func (r *Rate) Take(ctx context.Context) error { return r.l.Wait(ctx) }

// Window is a sliding-window budget: at most n requests start in any
// period, in bursts if they come so (Cloudflare: 1200 requests per 5
// minutes per user). It is safe for concurrent use.
type Window struct {
	period time.Duration
	now    func() time.Time
	sleep  func(context.Context, time.Duration) error

	mu    sync.Mutex
	n     int
	times []time.Time // start times of the requests of the last period, oldest first
}

// NewWindow returns a budget of n requests per period. now and sleep are
// the clock (nil: time.Now and Sleep).
func NewWindow(n int, period time.Duration, now func() time.Time, sleep func(context.Context, time.Duration) error) *Window {
	if now == nil {
		now = time.Now
	}
	if sleep == nil {
		sleep = Sleep
	}
	return &Window{n: max(n, 1), period: period, now: now, sleep: sleep}
}

// Limit is the number of requests allowed per period.
func (w *Window) Limit() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.n
}

// Lower sets the limit to n when n is smaller (budgets shared by several
// zones keep the smallest configured).
func (w *Window) Lower(n int) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.n = max(min(w.n, n), 1)
}

// Take implements Budget. It blocks for up to one period, or until ctx ends.
func (w *Window) Take(ctx context.Context) error {
	for {
		wait, ok := w.book()
		if ok {
			return nil
		}
		if err := w.sleep(ctx, wait); err != nil {
			return err
		}
	}
}

// book books a request now if the window has room, else says how long
// until the oldest request leaves it.
func (w *Window) book() (time.Duration, bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	now := w.now()
	drop := 0
	for drop < len(w.times) && !w.times[drop].Add(w.period).After(now) {
		drop++
	}
	w.times = w.times[drop:]
	if len(w.times) < w.n {
		w.times = append(w.times, now)
		return 0, true
	}
	return w.times[0].Add(w.period).Sub(now), false
}
