package health

import (
	"context"
	"errors"
	"github.com/meridian-gslb/meridian/internal/vote"
	"math/rand/v2"
	"net/netip"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/meridian-gslb/meridian/internal/model"
)

// fastTarget is a target whose regular cycle never comes back during a
// test (1h): every probe after the first is a re-probe or a confirmation.
func fastTarget(service string, c Checker, timeout time.Duration, fall, rise int) Target {
	return Target{
		Subject: vote.EndpointSubject(service, "192.0.2.1"),
		Addr:    netip.MustParseAddr("192.0.2.1"),
		Check: &model.Check{Kind: model.CheckTCP, Port: 80, Interval: model.Duration(time.Hour), Timeout: model.Duration(timeout),
			ReprobeInterval: model.Duration(20 * time.Millisecond), Fall: fall, Rise: rise},
		Checker: c,
	}
}

// switchChecker fails while down is set and passes otherwise.
type switchChecker struct{ down atomic.Bool }

func (c *switchChecker) Check(context.Context, netip.Addr) error {
	if c.down.Load() {
		return errors.New("connection refused")
	}
	return nil
}

// proberOf runs a prober of the one target tg (its first regular probe at
// once) until the test ends, and returns it with the results it records.
func proberOf(t *testing.T, tg Target) (*Prober, *recorder) {
	t.Helper()
	rec := &recorder{}
	p := NewProber(ProberOptions{Logger: quiet, OnResult: rec.add, Rand: firstProbeNow()})
	p.SetTargets([]Target{tg})
	run(t, p)
	return p, rec
}

// firstProbeNow makes the first regular probe of every target start at once.
func firstProbeNow() *rand.Rand { return rand.New(constSource(0)) }

func reprobes(rs []Result) []string {
	var out []string
	for _, r := range rs {
		out = append(out, r.Reprobe)
	}
	return out
}

func TestProberReprobesARunAtTheFastCadence(t *testing.T) {
	noLeaks(t)
	c := &switchChecker{}
	c.down.Store(true)
	tg := fastTarget("dead.example.com.", c, time.Second, 3, 2)
	var rec recorder
	m := NewMetrics(prometheus.NewRegistry())
	p := NewProber(ProberOptions{Logger: quiet, OnResult: rec.add, Rand: firstProbeNow(), Metrics: m})
	p.SetTargets([]Target{tg})
	run(t, p)

	rs := rec.waitFor(t, tg.Subject, "down", func(rs []Result) bool { _, ok := changedTo(rs, 0, vote.Down); return ok })
	require.Len(t, rs, 3, "down after fall results, without waiting for the regular cycle (1h)")
	assert.Equal(t, []string{"", "fall", "fall"}, reprobes(rs), "the first probe is regular, the rest re-probes")
	assert.True(t, rs[0].Turned, "the first failure turns the endpoint toward down")
	assert.False(t, rs[1].Turned)
	assert.Equal(t, 2.0, testutil.ToFloat64(m.reprobes.WithLabelValues(model.CheckTCP, "fall")))

	t.Run("a down endpoint that answers again rises at the fast cadence after a confirmation", func(t *testing.T) {
		c.down.Store(false)
		require.True(t, p.ConfirmNow(tg.Subject))
		rs := rec.waitFor(t, tg.Subject, "up", func(rs []Result) bool { _, ok := changedTo(rs, 3, vote.Up); return ok })
		require.GreaterOrEqual(t, len(rs), 5) // watch probes may follow
		assert.Equal(t, []string{"confirm", "rise"}, reprobes(rs[3:5]))
		assert.True(t, rs[3].Turned, "the first success turns the endpoint toward up")
		assert.Equal(t, vote.Up, rs[4].Status)
	})
}

// hangingEndpoint is a Checker that hangs until its context ends while
// hang is set, and passes at once otherwise. It records the most probes
// that ran at once.
type hangingEndpoint struct {
	hangingChecker
	pass atomic.Bool
}

func (h *hangingEndpoint) Check(ctx context.Context, a netip.Addr) error {
	if h.pass.Load() {
		return nil
	}
	return h.hangingChecker.Check(ctx, a)
}

func TestProberOverlapsReprobesOfAnEndpointThatDoesNotAnswer(t *testing.T) {
	noLeaks(t)
	h := &hangingEndpoint{}
	tg := fastTarget("hang.example.com.", h, 200*time.Millisecond, 3, 2)
	_, rec := proberOf(t, tg)

	rs := rec.waitFor(t, tg.Subject, "down", func(rs []Result) bool { _, ok := changedTo(rs, 0, vote.Down); return ok })
	require.Len(t, rs, 3, "down at the third timeout")
	assert.Equal(t, []string{"", "slow", "slow"}, reprobes(rs), "probes started while the first one hung")
	for _, r := range rs {
		assert.ErrorIs(t, r.Err, context.DeadlineExceeded)
	}
	assert.Equal(t, int64(3), h.maxInFlight.Load(), "at most max(fall, rise) probes of one endpoint at once")
}

// firstHangs hangs its first probe until released and passes every other
// one at once.
type firstHangs struct {
	calls    atomic.Int64
	release  chan struct{}
	returned chan struct{}
}

func (f *firstHangs) Check(ctx context.Context, _ netip.Addr) error {
	if f.calls.Add(1) > 1 {
		return nil
	}
	defer close(f.returned)
	<-f.release
	return errors.New("late failure")
}

func TestProberDropsAResultSupersededByALaterProbe(t *testing.T) {
	noLeaks(t)
	f := &firstHangs{release: make(chan struct{}), returned: make(chan struct{})}
	tg := fastTarget("late.example.com.", f, 5*time.Second, 3, 2)
	var rec recorder
	m := NewMetrics(prometheus.NewRegistry())
	p := NewProber(ProberOptions{Logger: quiet, OnResult: rec.add, Rand: firstProbeNow(), Metrics: m})
	p.SetTargets([]Target{tg})
	run(t, p)

	rs := rec.waitFor(t, tg.Subject, "up", func(rs []Result) bool { _, ok := changedTo(rs, 0, vote.Up); return ok })
	assert.Equal(t, []string{"slow", "rise"}, reprobes(rs), "two probes started after the hanging one answered")
	close(f.release)
	<-f.returned
	require.Eventually(t, func() bool { return testutil.ToFloat64(m.results.WithLabelValues(model.CheckTCP, "fail")) == 1 },
		5*time.Second, time.Millisecond, "the late failure is counted")
	tt := p.targets[tg.Subject]
	tt.mu.Lock() // the late result has been handled once its lock is free
	observed, inFlight := tt.sched.observed, len(tt.sched.inFlight)
	tt.mu.Unlock()
	assert.Equal(t, uint64(3), observed, "the latest observed probe is still the third (the rise re-probe), not the first")
	assert.Zero(t, inFlight)
	assert.Len(t, rec.of(tg.Subject), 2, "the late failure is not reported")
	st, _ := p.Status(tg.Subject)
	assert.Equal(t, vote.Up, st, "nor observed")
}

func TestProberBoundsReprobesInFlight(t *testing.T) {
	noLeaks(t)
	h := &hangingChecker{}
	a := fastTarget("a.example.com.", h, 300*time.Millisecond, 3, 2)
	b := fastTarget("b.example.com.", h, 300*time.Millisecond, 3, 2)
	b.Subject = vote.EndpointSubject("b.example.com.", "192.0.2.2")
	// A target denied a re-probe waits for its regular cycle: keep it short.
	a.Check.Interval, b.Check.Interval = model.Duration(400*time.Millisecond), model.Duration(400*time.Millisecond)
	var rec recorder
	m := NewMetrics(prometheus.NewRegistry())
	p := NewProber(ProberOptions{Logger: quiet, OnResult: rec.add, Rand: firstProbeNow(), Metrics: m, MaxReprobes: 1})
	p.SetTargets([]Target{a, b})
	run(t, p)

	require.Eventually(t, func() bool { return len(rec.snapshot()) >= 6 }, 10*time.Second, time.Millisecond, "six results")
	assert.LessOrEqual(t, h.maxInFlight.Load(), int64(3), "two regular probes and one re-probe at most")
	assert.Positive(t, testutil.ToFloat64(m.reprobesSkipped), "the other target's re-probes waited")
	assert.LessOrEqual(t, testutil.ToFloat64(m.reprobesRunning), 1.0)
}

// alternating fails and passes by turns.
type alternating struct{ n atomic.Int64 }

func (a *alternating) Check(context.Context, netip.Addr) error {
	if a.n.Add(1)%2 == 1 {
		return errors.New("flap")
	}
	return nil
}

func TestProberFlappingEndpointIsNotAProbeStorm(t *testing.T) {
	noLeaks(t)
	tg := fastTarget("flap.example.com.", &alternating{}, time.Second, 3, 2)
	tg.Check.Interval = model.Duration(60 * time.Millisecond)
	_, rec := proberOf(t, tg)

	rs := rec.waitFor(t, tg.Subject, "40 results", func(rs []Result) bool { return len(rs) >= 40 })
	run, regular := 0, 0
	for i, r := range rs {
		if r.Reprobe == "" {
			regular++
			run = 0
			continue
		}
		run++
		assert.LessOrEqual(t, run, 6, "result %d: at most 2 × max(fall, rise) re-probes per regular probe", i)
	}
	assert.GreaterOrEqual(t, regular, 40/7, "the regular cycle goes on")
}

func TestConfirmNowFromOnResultDoesNotDeadlock(t *testing.T) {
	noLeaks(t)
	c := &switchChecker{}
	tg := fastTarget("cb.example.com.", c, time.Second, 1, 1)
	var (
		p    *Prober
		once sync.Once
		rec  recorder
	)
	p = NewProber(ProberOptions{Logger: quiet, Rand: firstProbeNow(), OnResult: func(r Result) {
		rec.add(r)
		once.Do(func() { assert.True(t, p.ConfirmNow(r.Subject)) })
	}})
	p.SetTargets([]Target{tg})
	run(t, p)
	rs := rec.waitFor(t, tg.Subject, "the confirmation", func(rs []Result) bool { return len(rs) >= 2 })
	assert.Equal(t, "confirm", rs[1].Reprobe)
}

// hangAfter passes its probes at once until hang is set, then hangs them
// until their context ends.
type hangAfter struct {
	hang atomic.Bool
}

func (h *hangAfter) Check(ctx context.Context, _ netip.Addr) error {
	if !h.hang.Load() {
		return nil
	}
	<-ctx.Done()
	return ctx.Err()
}

func TestProberSuspectsAnUpEndpointWhoseProbeHangs(t *testing.T) {
	noLeaks(t)
	h := &hangAfter{}
	tg := fastTarget("hang.example.com.", h, 150*time.Millisecond, 3, 2)
	tg.Check.Interval = model.Duration(200 * time.Millisecond)
	var rec recorder
	var suspects atomic.Int32
	p := NewProber(ProberOptions{Logger: quiet, OnResult: rec.add, Rand: firstProbeNow(), OnSuspect: func(s vote.Subject) {
		assert.Equal(t, tg.Subject, s)
		suspects.Add(1)
	}})
	p.SetTargets([]Target{tg})
	run(t, p)
	rs := rec.waitFor(t, tg.Subject, "up", func(rs []Result) bool { _, ok := changedTo(rs, 0, vote.Up); return ok })
	assert.Zero(t, suspects.Load(), "probes that answer are not suspect")
	h.hang.Store(true)
	from := len(rs)
	rs = rec.waitFor(t, tg.Subject, "down", func(rs []Result) bool { _, ok := changedTo(rs, from, vote.Down); return ok })
	rec.waitFor(t, tg.Subject, "two more regular probes of the down endpoint", func(rs2 []Result) bool {
		n := 0
		for _, r := range rs2[len(rs):] {
			if r.Reprobe == "" {
				n++
			}
		}
		return n >= 2
	})
	assert.Equal(t, int32(1), suspects.Load(), "suspected once: when the first probe of the up endpoint hung")
}

// sleepy answers every probe after d.
type sleepy struct{ d time.Duration }

func (s sleepy) Check(ctx context.Context, _ netip.Addr) error {
	select {
	case <-time.After(s.d):
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

func TestProberDoesNotReprobeAnEndpointThatIsAlwaysSlow(t *testing.T) {
	noLeaks(t)
	tg := fastTarget("slow.example.com.", sleepy{60 * time.Millisecond}, time.Second, 3, 2)
	tg.Check.Interval = model.Duration(150 * time.Millisecond)
	var rec recorder
	var suspects atomic.Int32
	p := NewProber(ProberOptions{Logger: quiet, OnResult: rec.add, Rand: firstProbeNow(), OnSuspect: func(vote.Subject) { suspects.Add(1) }})
	p.SetTargets([]Target{tg})
	run(t, p)
	rs := rec.waitFor(t, tg.Subject, "20 results", func(rs []Result) bool { return len(rs) >= 20 })
	for i, r := range rs[5:] {
		assert.NotEqual(t, "slow", r.Reprobe, "result %d: once its usual time is known (60ms), it is not slow at the 20ms cadence", i+5)
	}
	assert.Zero(t, suspects.Load(), "never suspected")
}

func TestProberWatchesAnEndpointThatCameBack(t *testing.T) {
	noLeaks(t)
	c := &switchChecker{}
	c.down.Store(true)
	tg := fastTarget("back.example.com.", c, time.Second, 2, 2)
	p, rec := proberOf(t, tg)
	rs := rec.waitFor(t, tg.Subject, "down", func(rs []Result) bool { _, ok := changedTo(rs, 0, vote.Down); return ok })
	c.down.Store(false)
	require.True(t, p.ConfirmNow(tg.Subject))
	from := len(rs)
	rs = rec.waitFor(t, tg.Subject, "up and three more probes", func(rs []Result) bool {
		i, ok := changedTo(rs, from, vote.Up)
		return ok && len(rs) >= i+4
	})
	up, _ := changedTo(rs, from, vote.Up)
	for _, r := range rs[up+1 : up+4] {
		assert.Equal(t, "watch", r.Reprobe, "probed at the shortened cycle after coming back, not after the regular hour")
	}
}

// failNext fails the next n checks, then passes.
type failNext struct{ n atomic.Int32 }

func (c *failNext) Check(context.Context, netip.Addr) error {
	if c.n.Add(-1) >= 0 {
		return errors.New("connection refused")
	}
	return nil
}

func TestProberWatchesAnEndpointWhoseFailureItsReprobesDidNotConfirm(t *testing.T) {
	noLeaks(t)
	c := &failNext{}
	tg := fastTarget("blip.example.com.", c, time.Second, 3, 2)
	p, rec := proberOf(t, tg)
	rs := rec.waitFor(t, tg.Subject, "up", func(rs []Result) bool { _, ok := changedTo(rs, 0, vote.Up); return ok })
	c.n.Store(1)
	require.True(t, p.ConfirmNow(tg.Subject))
	from := len(rs)
	rs = rec.waitFor(t, tg.Subject, "one failure, its re-probe passing, and two more probes", func(rs []Result) bool { return len(rs) >= from+4 })
	require.Error(t, rs[from].Err, "the confirmation probe fails")
	require.NoError(t, rs[from+1].Err, "its re-probe passes: the failure is not confirmed")
	assert.Equal(t, vote.Up, rs[from+1].Status)
	for _, r := range rs[from+2 : from+4] {
		assert.Equal(t, "watch", r.Reprobe, "watched after an unconfirmed failure (a flap's next failure run comes within a second), not left to the regular hour")
	}
}
