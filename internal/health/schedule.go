package health

import (
	"time"

	"github.com/meridian-gslb/meridian/internal/vote"
)

// probeKind says why a probe runs.
type probeKind uint8

// Probe kinds. Every kind but regular is a re-probe: out of the regular
// cycle, at the fast cadence, counted against the prober's re-probe budget.
const (
	kindNone    probeKind = iota // nothing to start
	kindRegular                  // the regular cycle (interval ± 10%)
	kindFall                     // a run of failures heads for fall
	kindRise                     // a run of successes heads for rise
	kindSlow                     // a probe is unanswered for longer than the cadence
	kindConfirm                  // another region asked for a second confirmation
	kindWatch                    // the shortened cycle of an endpoint watched after a recovery
)

var kindNames = [...]string{"none", "regular", "fall", "rise", "slow", "confirm", "watch"}

// watchIntervals is how long, in intervals, an endpoint is watched after
// its status changes between up and down.
const watchIntervals = 12

// minWatchGap is the shortest cycle of a watched endpoint: twice the fast
// cadence, but not under a second (the defaults' 250 ms cadence would
// otherwise probe a recovered endpoint twice a second for a minute).
const minWatchGap = time.Second

func (k probeKind) String() string { return kindNames[k] }

// reprobe reports whether k runs at the fast cadence.
func (k probeKind) reprobe() bool { return k > kindRegular }

// schedule decides when one target is probed next. It is pure (the caller
// passes the clock and the target's thresholds) and not safe for
// concurrent use: the target's mutex guards it.
//
// The rules:
//   - Regular probes start every gap (interval ± 10%, drawn at each
//     regular start) after the last regular start, the first one at first.
//     Re-probes do not move this cycle (a regular probe only waits until
//     fastGap after the last re-probe): the probers of a ring keep their
//     random phases, so that after a failure that all of them re-probed at
//     once, the first of them still probes the recovered endpoint about
//     interval / (probers + 1) after it comes back, not one full interval.
//   - While a run of outcomes heads for a new status (Thresholds.Heading),
//     while a probe has been unanswered for slowAfter (the cadence, or
//     twice the smoothed time of passed probes when that is longer, so an
//     endpoint that is always slow is not re-probed for it) and the target
//     is not Down, and after a confirmation request, probes start
//     at the fast cadence instead: fastGap (reprobe + 0–20 %) after the last
//     start, never sooner. A confirmation asks for one such probe.
//   - At most 2 × maxInFlight re-probes of its own (fall, rise, slow)
//     follow one regular probe; then the target waits for its regular
//     cycle, so that an endpoint whose outcomes alternate while it is
//     Unknown cannot keep the fast cadence. Confirmations are not counted:
//     the ring rate-limits them per requesting prober.
//   - At most maxInFlight probes of the target run at once; re-probes
//     overlap a probe that hangs, so that a dead endpoint that does not
//     answer reaches fall about one timeout after its first probe instead
//     of fall timeouts.
//   - Results are observed in start order: a result that comes back after
//     the result of a probe started later is stale (superseded).
//   - For watchIntervals intervals after the target turns Up from Down or
//     Down from Up, or after a failure of an Up target that its re-probes
//     did not confirm (a success cut the run short of fall), its regular cycle is shortened to twice the fast
//     cadence, at least minWatchGap (watch probes, counted as re-probes):
//     a flapping endpoint fails again while it is still held down, instead
//     of being released between two regular probes, and a failed endpoint
//     that is restarted is seen within a second (at the defaults: one
//     probe a second for a minute).
type schedule struct {
	interval, reprobe time.Duration
	maxInFlight       int

	first   time.Time     // when the first regular probe is due
	started time.Time     // the last start; zero before the first
	regular time.Time     // the last regular start
	gap     time.Duration // after regular
	fastGap time.Duration
	confirm bool          // a confirmation asks for one fast probe
	fastRun int           // re-probes since the last regular probe
	srtt    time.Duration // smoothed duration of passed probes (1/8 per probe); 0 = none yet
	watch   time.Time     // watched (shortened cycle) until then

	nextSeq  uint64   // sequence of the next probe (from 1)
	observed uint64   // the latest-started probe whose result was observed
	inFlight []flight // oldest first
}

type flight struct {
	seq   uint64
	start time.Time
}

// plan returns what to start now (kindNone: nothing) and, when nothing,
// how long to wait before planning again. Completions and confirmation
// requests plan again at once, so a full target waits for them. With
// allowFast false (the prober's re-probe budget is spent) only regular
// probes start.
func (s *schedule) plan(now time.Time, status, heading vote.Status, allowFast bool) (probeKind, time.Duration) {
	regularDue := s.first
	if !s.regular.IsZero() {
		regularDue = s.regular.Add(s.gap)
	}
	if !s.started.IsZero() {
		regularDue = maxTime(regularDue, s.started.Add(s.fastGap))
	}
	full := len(s.inFlight) >= max(s.maxInFlight, 1)
	if full {
		return kindNone, s.interval // a completion plans again
	}
	fast := s.fastReason(now, status, heading)
	if fast != kindConfirm && s.fastRun >= 2*max(s.maxInFlight, 1) {
		fast = kindNone
	}
	fastDue := now
	if !s.started.IsZero() {
		fastDue = s.started.Add(s.fastGap)
	}
	if fast != kindNone && allowFast && !fastDue.After(now) {
		return fast, 0
	}
	if !regularDue.After(now) {
		return kindRegular, 0
	}
	wait := regularDue.Sub(now)
	if fast != kindNone && allowFast {
		wait = min(wait, fastDue.Sub(now))
	}
	if fast == kindNone && allowFast && status != vote.Unknown && now.Before(s.watch) && !s.started.IsZero() {
		watchDue := s.started.Add(max(2*s.fastGap, minWatchGap))
		if !watchDue.After(now) {
			return kindWatch, 0
		}
		wait = min(wait, watchDue.Sub(now))
	}
	if status != vote.Down && len(s.inFlight) > 0 {
		// When the oldest probe turns slow, plan again (not when it is
		// slow already and the run's re-probes are used up: no spinning).
		if slowAt := s.inFlight[0].start.Add(s.slowAfter()); slowAt.After(now) {
			wait = min(wait, slowAt.Sub(now))
		}
	}
	return kindNone, max(wait, time.Millisecond)
}

// fastReason is why the next probe should come at the fast cadence, or
// kindNone.
func (s *schedule) fastReason(now time.Time, status, heading vote.Status) probeKind {
	switch {
	case s.confirm:
		return kindConfirm
	case heading == vote.Down:
		return kindFall
	case heading == vote.Up:
		return kindRise
	case status != vote.Down && len(s.inFlight) > 0 && now.Sub(s.inFlight[0].start) >= s.slowAfter():
		return kindSlow
	}
	return kindNone
}

// slowAfter is how long a probe may stay unanswered before it is slow:
// the cadence, or twice the smoothed duration of passed probes if longer.
func (s *schedule) slowAfter() time.Duration { return max(s.reprobe, 2*s.srtt) }

// turned starts watching the target: its status changed between Up and
// Down at now, or a failure of an Up target was not confirmed by its
// re-probes. A recovered endpoint is watched so that a flap fails again
// while it is still held down; a failed one so that its restart is seen
// within about a second instead of at its next regular probe (up to an
// interval later): a first recovery waits only first_hold_down after it;
// one whose failure passed unconfirmed so that, if it flaps, its next
// failure run comes within a second and fits a short down phase.
func (s *schedule) turned(now time.Time) {
	s.watch = now.Add(watchIntervals * s.interval)
}

// watching reports whether the target is watched at now.
func (s *schedule) watching(now time.Time) bool { return now.Before(s.watch) }

// passed records the duration of a passed probe in the smoothed duration.
func (s *schedule) passed(d time.Duration) {
	if s.srtt == 0 {
		s.srtt = d
		return
	}
	s.srtt += (d - s.srtt) / 8
}

// start records a probe of the given kind started at now and returns its
// sequence. gap and fastGap are the next waits, drawn by the caller (with
// jitter).
func (s *schedule) start(now time.Time, kind probeKind, gap, fastGap time.Duration) uint64 {
	switch kind {
	case kindRegular, kindWatch:
		s.fastRun = 0
	case kindConfirm:
	default:
		s.fastRun++
	}
	s.nextSeq++
	s.started, s.fastGap, s.confirm = now, fastGap, false
	if kind == kindRegular || kind == kindWatch || s.regular.IsZero() {
		s.regular, s.gap = now, gap
	}
	s.inFlight = append(s.inFlight, flight{seq: s.nextSeq, start: now})
	return s.nextSeq
}

// done records the end of probe seq and reports whether its result is to
// be observed: false when a probe started later was observed already.
func (s *schedule) done(seq uint64) bool {
	for i, f := range s.inFlight {
		if f.seq == seq {
			s.inFlight = append(s.inFlight[:i], s.inFlight[i+1:]...)
			break
		}
	}
	if seq < s.observed {
		return false
	}
	s.observed = seq
	return true
}

func maxTime(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}
