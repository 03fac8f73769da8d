// Package coalesce runs a piece of work after changes, with a leading
// edge:
//
//   - the first change after a quiet period runs the work at once;
//   - changes that arrive while the work runs, or within the window after
//     it finished, become one following run, at the end of that window;
//   - a window in which nothing changed ends the period: the next change
//     runs at once again.
//
// A burst of changes (an informer's start-up lists every object) so runs
// the work at most once per window plus its own duration, and a lone
// change waits for nothing.
package coalesce

import (
	"context"
	"time"
)

// After returns a channel that receives once d has passed (time.After;
// tests pass a fake clock).
type After func(d time.Duration) <-chan time.Time

// Run calls work after the changes poke signals, until ctx is done; it
// returns then. poke is a channel with a buffer of one that senders fill
// without blocking (a change while one is pending adds nothing), so a
// change during a run is kept for after it. work is called from Run's
// goroutine, one call at a time.
func Run(ctx context.Context, poke <-chan struct{}, window time.Duration, after After, work func()) {
	for {
		select {
		case <-ctx.Done():
			return
		case <-poke:
		}
		for pending := true; pending; {
			work()
			var ok bool
			if pending, ok = wait(ctx, poke, after(window)); !ok {
				return
			}
		}
	}
}

// wait waits out one window and reports whether a change arrived in it
// (or during the run before it); ok is false when ctx is done.
func wait(ctx context.Context, poke <-chan struct{}, end <-chan time.Time) (changed, ok bool) {
	for {
		select {
		case <-ctx.Done():
			return false, false
		case <-poke:
			changed = true
		case <-end:
			select { // a change that raced the window's end belongs to it
			case <-poke:
				changed = true
			default:
			}
			return changed, true
		}
	}
}
