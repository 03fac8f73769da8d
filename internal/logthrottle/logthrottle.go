// Package logthrottle bounds how many log lines of one kind a flood can
// write. Some lines are written for packets anyone can send (a refused
// zone transfer, a failed TSIG check): without a bound, 1 000 spoofed
// packets write 1 000 WARN lines. A Throttle lets a burst of lines of each
// kind through, then one per interval, and the next line written after
// some were held back carries their number ("suppressed"), so the log
// still says how many there were. Counting every event is the metrics'
// job, not the log's.
//
// Kinds are a fixed, small set chosen by the caller (a message, never a
// client address): the state is one token bucket per kind.
package logthrottle

import (
	"sync"
	"time"
)

// Defaults of a Throttle's zero fields.
const (
	DefaultBurst = 10               // lines of one kind written at once
	DefaultEvery = 10 * time.Second // then one line per interval
)

// Throttle decides which log lines of each kind are written. Use New; it
// is safe for concurrent use, and Allow never blocks on I/O.
type Throttle struct {
	burst int
	every time.Duration
	now   func() time.Time

	mu    sync.Mutex
	kinds map[string]*bucket
}

type bucket struct {
	tokens     float64   // lines that may be written now (at most burst)
	last       time.Time // when tokens was last refilled
	suppressed int       // lines held back since the last one written
}

// New returns a Throttle that writes burst lines of a kind at once, then
// one every interval; zero or negative values take the defaults. now is
// the clock (nil: time.Now).
func New(burst int, every time.Duration, now func() time.Time) *Throttle {
	if burst <= 0 {
		burst = DefaultBurst
	}
	if every <= 0 {
		every = DefaultEvery
	}
	if now == nil {
		now = time.Now
	}
	return &Throttle{burst: burst, every: every, now: now, kinds: map[string]*bucket{}}
}

// Allow reports whether a line of kind may be written now and, when it
// may, how many lines of kind were held back since the last one written
// (to be logged with it). A held-back line is counted and not written.
func (t *Throttle) Allow(kind string) (ok bool, suppressed int) {
	now := t.now()
	t.mu.Lock()
	defer t.mu.Unlock()
	b := t.kinds[kind]
	if b == nil {
		b = &bucket{tokens: float64(t.burst), last: now}
		t.kinds[kind] = b
	}
	if d := now.Sub(b.last); d > 0 {
		b.tokens = min(float64(t.burst), b.tokens+float64(d)/float64(t.every))
		b.last = now
	}
	if b.tokens < 1 {
		b.suppressed++
		return false, 0
	}
	b.tokens--
	suppressed, b.suppressed = b.suppressed, 0
	return true, suppressed
}
