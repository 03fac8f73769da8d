package health

import (
	"github.com/meridian-gslb/meridian/internal/vote"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
)

func ms(n int) time.Duration { return time.Duration(n) * time.Millisecond }

func TestSchedulePlan(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	at := func(d time.Duration) time.Time { return t0.Add(d) }
	// base: interval 5s, cadence 500ms, at most 3 in flight; the last
	// probe started at t0 with gaps 5s and 500ms, and has finished.
	base := func() schedule {
		return schedule{interval: 5 * time.Second, reprobe: ms(500), maxInFlight: 3, first: at(-time.Hour),
			started: t0, regular: t0, gap: 5 * time.Second, fastGap: ms(550), nextSeq: 1, observed: 1}
	}
	cases := []struct {
		name     string
		sched    func(s *schedule)
		now      time.Duration
		status   vote.Status
		heading  vote.Status
		noBudget bool
		wantKind probeKind
		wantWait time.Duration
	}{
		{name: "a new target waits for its first regular probe",
			sched: func(s *schedule) {
				*s = schedule{interval: 5 * time.Second, reprobe: ms(500), maxInFlight: 3, first: at(ms(1200))}
			},
			wantKind: kindNone, wantWait: ms(1200)},
		{name: "a new target probes when its first delay is over",
			sched: func(s *schedule) {
				*s = schedule{interval: 5 * time.Second, reprobe: ms(500), maxInFlight: 3, first: at(0)}
			},
			wantKind: kindRegular},
		{name: "a confirmation of a new target probes at once",
			sched: func(s *schedule) {
				*s = schedule{interval: 5 * time.Second, reprobe: ms(500), maxInFlight: 3, first: at(ms(4000)), confirm: true}
			},
			wantKind: kindConfirm},
		{name: "an up target without a run waits for the regular gap",
			now: ms(600), status: vote.Up, wantKind: kindNone, wantWait: ms(4400)},
		{name: "an up target probes again after the regular gap",
			now: 5 * time.Second, status: vote.Up, wantKind: kindRegular},
		{name: "re-probes do not move the regular cycle",
			sched: func(s *schedule) { s.started = at(ms(1100)) }, now: 5 * time.Second, status: vote.Down, wantKind: kindRegular},
		{name: "a regular probe waits the fast cadence after a re-probe",
			sched: func(s *schedule) { s.started = at(ms(4800)) }, now: 5 * time.Second, status: vote.Down, wantKind: kindNone, wantWait: ms(350)},
		{name: "a run of failures re-probes at the fast cadence",
			now: ms(550), status: vote.Up, heading: vote.Down, wantKind: kindFall},
		{name: "a run of failures never re-probes sooner than the cadence after the last start",
			now: ms(300), status: vote.Up, heading: vote.Down, wantKind: kindNone, wantWait: ms(250)},
		{name: "a run of successes of a down target re-probes at the fast cadence",
			now: ms(600), status: vote.Down, heading: vote.Up, wantKind: kindRise},
		{name: "a confirmation waits for the cadence after the last start",
			sched: func(s *schedule) { s.confirm = true }, now: ms(100), status: vote.Up, wantKind: kindNone, wantWait: ms(450)},
		{name: "a confirmation probes once the cadence allows",
			sched: func(s *schedule) { s.confirm = true }, now: ms(700), status: vote.Up, wantKind: kindConfirm},
		{name: "a probe unanswered for the cadence gets an overlapping re-probe",
			sched: func(s *schedule) { s.inFlight = []flight{{seq: 2, start: t0}}; s.nextSeq = 2 },
			now:   ms(600), status: vote.Up, wantKind: kindSlow},
		{name: "a probe answered within the cadence gets no re-probe: the planner looks again when it would turn slow",
			sched: func(s *schedule) { s.inFlight = []flight{{seq: 2, start: t0}}; s.nextSeq = 2 },
			now:   ms(200), status: vote.Up, wantKind: kindNone, wantWait: ms(300)},
		{name: "a probe of an endpoint that usually answers in 400ms is not slow at 600ms",
			sched: func(s *schedule) { s.inFlight = []flight{{seq: 2, start: t0}}; s.nextSeq = 2; s.srtt = ms(400) },
			now:   ms(600), status: vote.Up, wantKind: kindNone, wantWait: ms(200)},
		{name: "a probe of an endpoint that usually answers in 400ms is slow at twice that",
			sched: func(s *schedule) { s.inFlight = []flight{{seq: 2, start: t0}}; s.nextSeq = 2; s.srtt = ms(400) },
			now:   ms(800), status: vote.Up, wantKind: kindSlow},
		{name: "a slow probe of a down target waits for the regular cycle",
			sched: func(s *schedule) { s.inFlight = []flight{{seq: 2, start: t0}}; s.nextSeq = 2 },
			now:   ms(600), status: vote.Down, wantKind: kindNone, wantWait: ms(4400)},
		{name: "a target with as many probes in flight as allowed waits for a completion",
			sched: func(s *schedule) {
				s.inFlight = []flight{{2, t0}, {3, at(ms(550))}, {4, at(ms(1100))}}
				s.started, s.nextSeq = at(ms(1100)), 4
			},
			now: 6 * time.Second, status: vote.Up, heading: vote.Down, wantKind: kindNone, wantWait: 5 * time.Second},
		{name: "after twice max in flight re-probes a run waits for the regular cycle",
			sched: func(s *schedule) { s.fastRun = 6 }, now: ms(600), status: vote.Unknown, heading: vote.Up, wantKind: kindNone, wantWait: ms(4400)},
		{name: "a confirmation is not held by that bound",
			sched: func(s *schedule) { s.fastRun = 6; s.confirm = true }, now: ms(600), status: vote.Down, wantKind: kindConfirm},
		{name: "a slow probe after the run's re-probes are used up waits for the regular cycle, without spinning",
			sched: func(s *schedule) { s.fastRun = 6; s.inFlight = []flight{{seq: 2, start: at(ms(100))}}; s.nextSeq = 2 },
			now:   ms(900), status: vote.Up, wantKind: kindNone, wantWait: ms(4100)},
		{name: "below that bound a run keeps the fast cadence",
			sched: func(s *schedule) { s.fastRun = 5 }, now: ms(600), status: vote.Unknown, heading: vote.Up, wantKind: kindRise},
		{name: "an endpoint that came back up is watched at twice the fast cadence",
			sched: func(s *schedule) { s.watch = at(time.Minute) }, now: 1100 * time.Millisecond, status: vote.Up, wantKind: kindWatch},
		{name: "a watched endpoint waits twice the fast cadence after its last probe",
			sched: func(s *schedule) { s.watch = at(time.Minute) }, now: ms(600), status: vote.Up, wantKind: kindNone, wantWait: ms(500)},
		{name: "at a 250ms cadence a watched endpoint is still probed at most once a second",
			sched: func(s *schedule) { s.watch = at(time.Minute); s.reprobe, s.fastGap = ms(250), ms(275) }, now: ms(600), status: vote.Up, wantKind: kindNone, wantWait: ms(400)},
		{name: "once the watch is over the regular cycle is back",
			sched: func(s *schedule) { s.watch = at(ms(1000)) }, now: 1100 * time.Millisecond, status: vote.Up, wantKind: kindNone, wantWait: ms(3900)},
		{name: "a watched endpoint that is down is watched too: its restart is seen within a second",
			sched: func(s *schedule) { s.watch = at(time.Minute) }, now: 1100 * time.Millisecond, status: vote.Down, wantKind: kindWatch},
		{name: "an endpoint of unknown status is not watched",
			sched: func(s *schedule) { s.watch = at(time.Minute) }, now: 1100 * time.Millisecond, status: vote.Unknown, wantKind: kindNone, wantWait: ms(3900)},
		{name: "without re-probe budget a watched endpoint waits for the regular cycle",
			sched: func(s *schedule) { s.watch = at(time.Minute) }, now: 1100 * time.Millisecond, status: vote.Up, noBudget: true, wantKind: kindNone, wantWait: ms(3900)},
		{name: "without re-probe budget a run of failures waits for the regular cycle",
			now: ms(600), status: vote.Up, heading: vote.Down, noBudget: true, wantKind: kindNone, wantWait: ms(4400)},
		{name: "without re-probe budget the regular probe still runs",
			now: 5 * time.Second, status: vote.Up, heading: vote.Down, noBudget: true, wantKind: kindRegular},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			s := base()
			if tc.sched != nil {
				tc.sched(&s)
			}
			kind, wait := s.plan(at(tc.now), tc.status, tc.heading, !tc.noBudget)
			assert.Equal(t, tc.wantKind, kind)
			if tc.wantKind == kindNone {
				assert.Equal(t, tc.wantWait, wait)
			}
		})
	}
}

func TestScheduleObservesResultsInStartOrder(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	s := schedule{interval: 5 * time.Second, reprobe: ms(500), maxInFlight: 3}
	a := s.start(t0, kindRegular, 5*time.Second, ms(500))
	b := s.start(t0.Add(ms(500)), kindSlow, 5*time.Second, ms(500))
	c := s.start(t0.Add(ms(1000)), kindSlow, 5*time.Second, ms(500))
	assert.Len(t, s.inFlight, 3)
	assert.True(t, s.done(b), "the second probe answers first: observed")
	assert.False(t, s.done(a), "the first probe answers after it: stale")
	assert.True(t, s.done(c), "the third probe answers last: observed")
	assert.Empty(t, s.inFlight, "every probe is done")
}

func TestScheduleStartTakesAConfirmation(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	s := schedule{interval: 5 * time.Second, reprobe: ms(500), maxInFlight: 3, confirm: true}
	s.start(t0, kindRegular, 5*time.Second, ms(500))
	assert.False(t, s.confirm, "any probe that starts answers the request")
	kind, wait := s.plan(t0.Add(ms(400)), vote.Up, vote.Unknown, true)
	assert.Equal(t, kindNone, kind)
	assert.Equal(t, ms(100), wait, "the probe in flight turns slow at the cadence")
}

func TestScheduleCountsReprobesSinceTheLastRegularProbe(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	s := schedule{interval: 5 * time.Second, reprobe: ms(500), maxInFlight: 3}
	s.start(t0, kindRegular, 5*time.Second, ms(500))
	s.start(t0, kindFall, 5*time.Second, ms(500))
	s.start(t0, kindSlow, 5*time.Second, ms(500))
	s.start(t0, kindConfirm, 5*time.Second, ms(500))
	assert.Equal(t, 2, s.fastRun, "two re-probes of its own after the regular one; the confirmation does not count")
	s.start(t0, kindRegular, 5*time.Second, ms(500))
	assert.Zero(t, s.fastRun, "a regular probe starts the count again")
}

func TestScheduleSmoothsTheDurationOfPassedProbes(t *testing.T) {
	s := schedule{reprobe: ms(500)}
	assert.Equal(t, ms(500), s.slowAfter(), "the cadence until a probe passed")
	s.passed(ms(400))
	assert.Equal(t, ms(400), s.srtt, "the first passed probe sets it")
	assert.Equal(t, ms(800), s.slowAfter(), "twice the usual time when that is longer than the cadence")
	s.passed(ms(1200))
	assert.Equal(t, ms(500), s.srtt, "one eighth of the way to each new duration")
}

func TestScheduleWatchesAfterATurn(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	s := schedule{interval: 5 * time.Second, reprobe: ms(500), maxInFlight: 3}
	s.turned(t0)
	assert.Equal(t, t0.Add(time.Minute), s.watch, "watched for twelve intervals")
	s.fastRun = 3
	s.start(t0, kindWatch, 5*time.Second, ms(500))
	assert.Zero(t, s.fastRun, "a watch probe is a regular probe at a shorter cycle")
}

func TestScheduleKeepsTheRegularPhaseThroughReprobes(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	s := schedule{interval: 5 * time.Second, reprobe: ms(500), maxInFlight: 3}
	for i, k := range []probeKind{kindRegular, kindFall, kindFall} {
		s.done(s.start(t0.Add(time.Duration(i)*ms(500)), k, time.Duration(5-i)*time.Second, ms(500)))
	}
	assert.Equal(t, t0, s.regular, "re-probes leave the regular start")
	assert.Equal(t, 5*time.Second, s.gap, "and the gap drawn for it")
	kind, wait := s.plan(t0.Add(ms(1500)), vote.Down, vote.Unknown, true)
	assert.Equal(t, kindNone, kind)
	assert.Equal(t, ms(3500), wait, "the next regular probe is one gap after the last regular one")
}
