package main

import (
	"math/bits"
	"slices"
	"time"
)

// answerSet is the set of backends in one DNS answer: bit i = backend i.
type answerSet uint8

func (s answerSet) has(i int) bool { return s&(1<<i) != 0 }

// count is the number of backends in the answer.
func (s answerSet) count() int { return bits.OnesCount8(uint8(s)) }

// sample is one DNS query of one server: when it was sent and what came
// back. OK is false when there was no usable answer (timeout, error rcode,
// the server not running); such samples carry no information and every
// function below skips them.
type sample struct {
	At  time.Time
	OK  bool
	Set answerSet
}

// settledAt returns the time of the first answered sample at or after from
// that starts the final run of answered samples all satisfying pred, and the
// time of the last answered sample. ok is false when there is no answered
// sample at or after from, or the last one does not satisfy pred. "Out of
// the answers" is settledAt with pred = backend absent: a backend that
// leaves, comes back and leaves again is out from its last departure.
func settledAt(ss []sample, from time.Time, pred func(answerSet) bool) (at, last time.Time, ok bool) {
	for i := len(ss) - 1; i >= 0 && !ss[i].At.Before(from); i-- {
		if !ss[i].OK {
			continue
		}
		if !pred(ss[i].Set) {
			break
		}
		if last.IsZero() {
			last = ss[i].At
		}
		at, ok = ss[i].At, true
	}
	return at, last, ok
}

// inWindow returns the answered samples with from <= At < to.
func inWindow(ss []sample, from, to time.Time) []sample {
	var out []sample
	for _, s := range ss {
		if s.OK && !s.At.Before(from) && s.At.Before(to) {
			out = append(out, s)
		}
	}
	return out
}

// changes counts how often an answered sample in [from, to) differs from
// the answered sample before it (the first one in the window is compared
// with the last one before the window, when there is one).
func changes(ss []sample, from, to time.Time) int {
	n := 0
	var prev answerSet
	have := false
	for _, s := range ss {
		if !s.OK || !s.At.Before(to) {
			continue
		}
		if have && s.Set != prev && !s.At.Before(from) {
			n++
		}
		prev, have = s.Set, true
	}
	return n
}

// departures counts how often backend i left the answers in [from, to):
// an answered sample without it after one with it. Under loss, with every
// backend alive, each departure is a false down.
func departures(ss []sample, i int, from, to time.Time) int {
	n := 0
	prevHas, have := false, false
	for _, s := range ss {
		if !s.OK || !s.At.Before(to) {
			continue
		}
		h := s.Set.has(i)
		if have && prevHas && !h && !s.At.Before(from) {
			n++
		}
		prevHas, have = h, true
	}
	return n
}

// truth is a change of a backend's real state, as the harness made it.
type truth struct {
	At time.Time
	Up bool
}

// upAt is the real state at t: the last change at or before t (up before
// the first one).
func upAt(ts []truth, t time.Time) bool {
	up := true
	for _, e := range ts {
		if e.At.After(t) {
			break
		}
		up = e.Up
	}
	return up
}

// mismatch sums, over [from, to), the time during which the answers
// disagreed with backend i's real state: deadAnswered while it was down
// but in the answers, liveMissing while it was up but absent. Each answered
// sample stands for the time until the next one (at most maxGap, and not
// past to); the real state is read at the sample's time. downTotal and
// upTotal are the real down and up time in the window, for shares.
func mismatch(ss []sample, i int, ts []truth, from, to time.Time, maxGap time.Duration) (deadAnswered, liveMissing, downTotal, upTotal time.Duration) {
	w := inWindow(ss, from, to)
	for k, s := range w {
		end := to
		if k+1 < len(w) {
			end = w[k+1].At
		}
		dt := min(end.Sub(s.At), maxGap)
		up := upAt(ts, s.At)
		switch {
		case !up && s.Set.has(i):
			deadAnswered += dt
		case up && !s.Set.has(i):
			liveMissing += dt
		}
	}
	// Real time down and up in the window, from the change list.
	t, up := from, upAt(ts, from)
	for _, e := range ts {
		if !e.At.After(from) {
			continue
		}
		if !e.At.Before(to) {
			break
		}
		if up {
			upTotal += e.At.Sub(t)
		} else {
			downTotal += e.At.Sub(t)
		}
		t, up = e.At, e.Up
	}
	if up {
		upTotal += to.Sub(t)
	} else {
		downTotal += to.Sub(t)
	}
	return deadAnswered, liveMissing, downTotal, upTotal
}

// measure is one timing of one server in one trial. TimedOut: the server
// had not settled when the bound ran out; Seconds is then the bound.
type measure struct {
	Seconds  float64 `json:"seconds"`
	TimedOut bool    `json:"timed_out,omitempty"`
}

// summary is the median and max of one server's timings over the trials.
type summary struct {
	N        int     `json:"n"`
	Median   float64 `json:"median_seconds"`
	Max      float64 `json:"max_seconds"`
	TimedOut int     `json:"timed_out,omitempty"` // trials that hit the bound (counted at the bound)
}

// summarize gives the median (the mean of the middle two for an even
// count) and the max of ms; timed-out trials count at their bound.
func summarize(ms []measure) summary {
	s := summary{N: len(ms)}
	if len(ms) == 0 {
		return s
	}
	v := make([]float64, len(ms))
	for i, m := range ms {
		v[i] = m.Seconds
		if m.TimedOut {
			s.TimedOut++
		}
	}
	slices.Sort(v)
	s.Max = v[len(v)-1]
	if n := len(v); n%2 == 1 {
		s.Median = v[n/2]
	} else {
		s.Median = (v[n/2-1] + v[n/2]) / 2
	}
	return s
}

// worst combines the timings of the nodes of one ring: a backend is out of
// (or back in) every node's answers when the slowest node is done.
func worst(ms ...measure) measure {
	var w measure
	for _, m := range ms {
		w.Seconds = max(w.Seconds, m.Seconds)
		w.TimedOut = w.TimedOut || m.TimedOut
	}
	return w
}
