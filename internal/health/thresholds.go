package health

import "github.com/meridian-gslb/meridian/internal/vote"

// Thresholds turns a run of probe outcomes into a Status: Fall consecutive
// failures make a subject Down, Rise consecutive successes make it Up.
//
// A new Thresholds starts Unknown; from Unknown the first threshold reached
// decides (Rise successes for Up, Fall failures for Down). A success resets
// the run of failures and a failure resets the run of successes, so a flapping
// subject keeps its status. Fall or Rise below 1 count as 1.
//
// Thresholds is a pure value with no locking: the owner serialises calls.
type Thresholds struct {
	Fall int // consecutive failures to go Down (default 1 when < 1)
	Rise int // consecutive successes to go Up (default 1 when < 1)

	status vote.Status
	fails  int  // current run of failures
	oks    int  // current run of successes
	turned bool // the last outcome began a run toward a status the subject did not have
}

// Observe records one probe outcome and returns the status after it and
// whether that status differs from the one before.
func (t *Thresholds) Observe(ok bool) (s vote.Status, changed bool) {
	prev := t.status
	if ok {
		t.fails = 0
		t.oks++
		t.turned = t.oks == 1 && prev != vote.Up
		if t.oks >= max(t.Rise, 1) {
			t.status = vote.Up
		}
	} else {
		t.oks = 0
		t.fails++
		t.turned = t.fails == 1 && prev != vote.Down
		if t.fails >= max(t.Fall, 1) {
			t.status = vote.Down
		}
	}
	return t.status, t.status != prev
}

// Status returns the current status without observing anything.
func (t *Thresholds) Status() vote.Status { return t.status }

// Heading returns the status the current run of outcomes leads to while it
// has not reached its threshold: Down during a run of failures shorter than
// Fall of a subject that is not Down, Up during a run of successes shorter
// than Rise of a subject that is not Up, and Unknown otherwise (no run, or
// the run's status is reached). The prober re-probes fast while it is not
// Unknown.
func (t *Thresholds) Heading() vote.Status {
	switch {
	case t.fails > 0 && t.status != vote.Down:
		return vote.Down
	case t.oks > 0 && t.status != vote.Up:
		return vote.Up
	}
	return vote.Unknown
}

// Turned reports whether the last outcome was the first of a run toward a
// status the subject did not have: a failure of a subject that was not
// Down, or a success of one that was not Up. That is when a prober asks
// the other regions to confirm.
func (t *Thresholds) Turned() bool { return t.turned }
