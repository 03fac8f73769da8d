package logthrottle

import (
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

type clock struct{ t time.Time }

func (c *clock) now() time.Time          { return c.t }
func (c *clock) advance(d time.Duration) { c.t = c.t.Add(d) }

// lines asks for n lines of kind at the current time and returns how many
// were written and the suppressed counts they carried.
func lines(th *Throttle, kind string, n int) (written int, carried []int) {
	for range n {
		if ok, s := th.Allow(kind); ok {
			written++
			if s > 0 {
				carried = append(carried, s)
			}
		}
	}
	return written, carried
}

func TestThrottle(t *testing.T) {
	for _, tc := range []struct {
		name string
		run  func(t *testing.T, th *Throttle, c *clock)
	}{
		{"a flood of 1 000 lines at once writes the burst", func(t *testing.T, th *Throttle, c *clock) {
			w, carried := lines(th, "refused", 1000)
			assert.Equal(t, 10, w)
			assert.Empty(t, carried, "nothing was held back before them")
		}},
		{"the first line after the interval carries the number held back", func(t *testing.T, th *Throttle, c *clock) {
			lines(th, "refused", 1000)
			c.advance(10 * time.Second)
			w, carried := lines(th, "refused", 1)
			assert.Equal(t, 1, w)
			assert.Equal(t, []int{990}, carried)
		}},
		{"a sustained flood writes one line per interval, each with its count", func(t *testing.T, th *Throttle, c *clock) {
			total := 0
			var carried []int
			for range 60 { // 100 lines a second for a minute
				w, cs := lines(th, "refused", 100)
				total += w
				carried = append(carried, cs...)
				c.advance(time.Second)
			}
			assert.Equal(t, 10+5, total, "the burst, then one per 10 s")
			sum := 0
			for _, s := range carried {
				sum += s
			}
			assert.Equal(t, 6000-total-heldSince(th, "refused"), sum, "every line is either written or counted")
		}},
		{"kinds have their own budgets", func(t *testing.T, th *Throttle, c *clock) {
			lines(th, "refused", 1000)
			w, _ := lines(th, "tsig", 1000)
			assert.Equal(t, 10, w)
		}},
		{"a quiet kind saves up no more than the burst", func(t *testing.T, th *Throttle, c *clock) {
			c.advance(24 * time.Hour)
			w, _ := lines(th, "refused", 1000)
			assert.Equal(t, 10, w)
		}},
		{"lines under the rate are all written", func(t *testing.T, th *Throttle, c *clock) {
			total := 0
			for range 100 {
				w, carried := lines(th, "refused", 1)
				require.Empty(t, carried)
				total += w
				c.advance(10 * time.Second)
			}
			assert.Equal(t, 100, total)
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := &clock{t: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)}
			tc.run(t, New(10, 10*time.Second, c.now), c)
		})
	}
}

// heldSince is the number of lines of kind held back and not yet reported.
func heldSince(th *Throttle, kind string) int {
	th.mu.Lock()
	defer th.mu.Unlock()
	return th.kinds[kind].suppressed
}

func TestThrottleDefaultsAndConcurrency(t *testing.T) {
	th := New(0, 0, nil)
	assert.Equal(t, DefaultBurst, th.burst)
	assert.Equal(t, DefaultEvery, th.every)
	var wg sync.WaitGroup
	var mu sync.Mutex
	written := 0
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			w, _ := lines(th, "refused", 500)
			mu.Lock()
			written += w
			mu.Unlock()
		}()
	}
	wg.Wait()
	assert.Equal(t, DefaultBurst, written, "8 goroutines share one burst (within a test's run time of 10 s)")
}
