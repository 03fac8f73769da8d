package coalesce

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

const window = 100 * time.Millisecond

// A script is what happens, in order, one step a word:
//
//	poke    a change (sent like the app's poke: never blocks)
//	run     the work must start next
//	done    the running work returns
//	window  the loop must ask for its window's timer next
//	fire    the window's timer fires
//
// The loop's events (run, window) are awaited; any other event of the
// loop in their place fails the script. No step depends on real time.
func TestRun(t *testing.T) {
	for _, tc := range []struct {
		name, script string
	}{
		{"a change after a quiet period runs at once, without waiting for a window",
			"poke run done window fire poke run done window fire"},
		{"changes during a run become one run at the end of the window after it",
			"poke run poke poke done window fire run done window fire"},
		{"changes within the window after a run wait for its end, then run once",
			"poke run done window poke poke fire run done window fire"},
		{"a change both during a run and in its window is one run",
			"poke run poke done window poke fire run done window fire"},
		{"a burst of changes runs once per window, and a quiet window ends it",
			"poke run poke done window poke fire run poke done window poke fire run done window fire poke run done window fire"},
		{"after a quiet window the next change runs at once again",
			"poke run done window poke fire run done window fire poke run done window fire"},
		{"nothing runs without a change", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := start(t)
			for i, step := range strings.Fields(tc.script) {
				h.step(t, i, step)
			}
			h.stop(t)
		})
	}
}

func TestRunStopsWhenTheContextIsDone(t *testing.T) {
	for _, tc := range []struct {
		name, script string
	}{
		{"while it waits for a change", ""},
		{"while it waits out a window", "poke run done window"},
		{"while it waits out a window with a change pending", "poke run done window poke"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := start(t)
			for i, step := range strings.Fields(tc.script) {
				h.step(t, i, step)
			}
			h.stop(t)
		})
	}
}

type harness struct {
	ctx     context.Context
	cancel  context.CancelFunc
	poke    chan struct{}
	started chan struct{}       // the work started
	finish  chan struct{}       // lets the running work return
	asked   chan chan time.Time // the loop asked for a window's timer
	timer   chan time.Time
	exited  chan struct{}
}

func start(t *testing.T) *harness {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	h := &harness{ctx: ctx, cancel: cancel, poke: make(chan struct{}, 1), started: make(chan struct{}), finish: make(chan struct{}),
		asked: make(chan chan time.Time), exited: make(chan struct{})}
	after := func(d time.Duration) <-chan time.Time {
		require.Equal(t, window, d)
		c := make(chan time.Time, 1)
		select {
		case h.asked <- c:
		case <-ctx.Done():
		}
		return c
	}
	work := func() {
		select {
		case h.started <- struct{}{}:
			<-h.finish
		case <-ctx.Done():
		}
	}
	go func() {
		defer close(h.exited)
		Run(ctx, h.poke, window, after, work)
	}()
	return h
}

// step runs step i of a script.
func (h *harness) step(t *testing.T, i int, step string) {
	t.Helper()
	switch step {
	case "poke":
		select {
		case h.poke <- struct{}{}:
		default:
		}
	case "done":
		h.finish <- struct{}{}
	case "fire":
		require.NotNil(t, h.timer, "step %d: no window to end", i)
		h.timer <- time.Now()
		h.timer = nil
	case "run", "window":
		got := h.next(t, i)
		require.Equal(t, step, got, "step %d", i)
	default:
		t.Fatalf("step %d: unknown step %q", i, step)
	}
}

// next is the loop's next event. The bound only turns a hang into a
// failure; no outcome depends on it.
func (h *harness) next(t *testing.T, i int) string {
	t.Helper()
	select {
	case <-h.started:
		return "run"
	case c := <-h.asked:
		h.timer = c
		return "window"
	case <-h.exited:
		t.Fatalf("step %d: the loop returned", i)
	case <-time.After(10 * time.Second):
		t.Fatalf("step %d: the loop did nothing", i)
	}
	return ""
}

func (h *harness) stop(t *testing.T) {
	t.Helper()
	h.cancel()
	select {
	case <-h.exited:
	case <-time.After(10 * time.Second):
		t.Fatal("Run did not return after the context was done")
	}
}
