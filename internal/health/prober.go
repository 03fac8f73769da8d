package health

import (
	"context"
	"errors"
	"github.com/meridian-gslb/meridian/internal/vote"
	"log/slog"
	"maps"
	"math/rand/v2"
	"net/netip"
	"reflect"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/meridian-gslb/meridian/internal/model"
)

// Target is one endpoint this prober is responsible for.
type Target struct {
	Subject vote.Subject // EndpointSubject(service, address)
	Addr    netip.Addr   // address to probe
	Check   *model.Check // the service's check, normalised (interval, timeout, fall, rise)
	Checker Checker      // nil = built from Check by SetTargets
}

// Result is the outcome of one probe or heartbeat poll, after thresholds.
type Result struct {
	Subject  vote.Subject
	Status   vote.Status   // the subject's status after this probe
	Changed  bool          // Status differs from the status before this probe
	At       time.Time     // when the probe started (ProberOptions.Now)
	Err      error         // why the probe failed; nil when it passed
	Duration time.Duration // how long the probe took
	Kind     string        // check kind (http, https, tcp, dns) or "heartbeat"
	// Turned is true when this result began a run toward a status the
	// subject did not have (Thresholds.Turned): a first failure of an
	// endpoint that was not Down, a first success of one that was not Up.
	// The prober re-probes it at the fast cadence from here; a voter asks
	// the other regions to confirm.
	Turned bool
	// Reprobe says why the probe ran out of the regular cycle: "fall",
	// "rise", "slow", "confirm" ("" for a regular probe or a heartbeat).
	Reprobe string
}

// KindHeartbeat is the Result.Kind of cluster heartbeat polls.
const KindHeartbeat = "heartbeat"

// ProberOptions configure a Prober. Every field is optional.
type ProberOptions struct {
	// OnResult is called after every probe and heartbeat poll, from the
	// prober's goroutines. Calls for one subject are serialised and in
	// probe order; calls for different subjects may run concurrently. It
	// must not block for long: while it runs, that subject is not probed and
	// SetTargets/SetHeartbeats removing the subject wait for it. It may call
	// Status and ConfirmNow, but not SetTargets or SetHeartbeats (deadlock).
	OnResult func(Result)
	Logger   *slog.Logger     // default slog.Default()
	Metrics  *Metrics         // default none
	Now      func() time.Time // stamps results and measures heartbeat grace (default time.Now); timers use real time
	Rand     *rand.Rand       // jitter source (default the math/rand/v2 global source); used under a lock
	// MaxConcurrent bounds endpoint probes in flight at once
	// (default GOMAXPROCS × 64). Heartbeat polls are not counted.
	MaxConcurrent int
	// MaxReprobes bounds re-probes (probes at the fast cadence and
	// confirmations) in flight at once (default MaxConcurrent / 2, at
	// least 1). A target that would re-probe beyond it waits for its
	// regular probe.
	MaxReprobes int
	// OnSuspect is called, from the prober's goroutines, when a regular
	// probe of an endpoint that is Up has been unanswered for longer than
	// it should be (the fast cadence, or twice its usual time) and the first
	// overlapping re-probe starts: the endpoint may hang. At most once per
	// regular probe; it must not block. A voter asks the other regions to
	// confirm at once, a timeout earlier than the first failure would.
	OnSuspect func(vote.Subject)
}

// Prober probes every target on its interval and every cluster heartbeat
// URL, applies the thresholds and reports each Result to OnResult.
//
// Each target is probed every Check.Interval with ±10% uniform jitter, the
// first probe after a random delay in [0, interval), each probe bounded by
// Check.Timeout. While a run of results heads for a new status (a failure
// of an endpoint that is not down, a success of one that is down), while a
// probe stays unanswered for longer than Check.ReprobeInterval, and after
// ConfirmNow, the target is re-probed at that fast cadence instead (see
// schedule). SetTargets, SetHeartbeats, ConfirmNow and Status are safe
// for concurrent use, before, during and after Run.
type Prober struct {
	onResult func(Result)
	log      *slog.Logger
	metrics  *Metrics
	now      func() time.Time
	randMu   sync.Mutex
	rnd      *rand.Rand
	sem      chan struct{} // probes in flight
	reprobes chan struct{} // re-probes in flight

	onSuspect func(vote.Subject)

	setMu sync.Mutex // serialises SetTargets, and SetHeartbeats, end to end

	mu      sync.RWMutex
	runCtx  context.Context // non-nil while Run runs
	ran     bool
	wg      sync.WaitGroup // every goroutine started while running
	targets map[vote.Subject]*target
	beats   map[string]*beat
}

// NewProber returns a Prober with no targets; call Run to start it.
func NewProber(opts ProberOptions) *Prober {
	p := &Prober{
		onResult: opts.OnResult,
		log:      opts.Logger,
		metrics:  opts.Metrics,
		now:      opts.Now,
		rnd:      opts.Rand,
		targets:  map[vote.Subject]*target{},
		beats:    map[string]*beat{},
	}
	p.onSuspect = opts.OnSuspect
	if p.log == nil {
		p.log = slog.Default()
	}
	if p.now == nil {
		p.now = time.Now
	}
	n := opts.MaxConcurrent
	if n <= 0 {
		n = runtime.GOMAXPROCS(0) * 64
	}
	p.sem = make(chan struct{}, n)
	r := opts.MaxReprobes
	if r <= 0 {
		r = max(n/2, 1)
	}
	p.reprobes = make(chan struct{}, r)
	return p
}

// Run starts probing the targets and heartbeats set so far (and those set
// later) and blocks until ctx is done. When it returns, every goroutine of
// the prober has stopped and no OnResult call is running. It returns nil,
// or an error when called a second time (a Prober runs once).
func (p *Prober) Run(ctx context.Context) error {
	p.mu.Lock()
	if p.ran {
		p.mu.Unlock()
		return errors.New("health: prober: Run called twice")
	}
	p.ran = true
	p.runCtx = ctx
	for _, t := range p.targets {
		p.startLocked(t)
	}
	for _, b := range p.beats {
		p.startBeatLocked(b)
	}
	p.mu.Unlock()

	<-ctx.Done()
	p.mu.Lock()
	p.runCtx = nil // nothing starts from here on
	p.mu.Unlock()
	p.wg.Wait()
	return nil
}

// target is a Target with its running state.
type target struct {
	Target
	ctx     context.Context // nil until started
	cancel  context.CancelFunc
	status  atomic.Uint32 // Status, for Status() without waiting on mu
	confirm atomic.Bool   // ConfirmNow asked for a probe; the loop takes it
	wake    chan struct{} // a result came in or a confirmation was asked: plan again

	mu      sync.Mutex // serialises Observe and OnResult of this subject; guards th and sched
	th      Thresholds
	sched   schedule
	stopped bool
}

func newTarget(tg Target) *target {
	t := &target{Target: tg, th: Thresholds{Fall: tg.Check.Fall, Rise: tg.Check.Rise}, wake: make(chan struct{}, 1)}
	t.sched = schedule{interval: t.interval(), reprobe: t.reprobe(), maxInFlight: max(tg.Check.Fall, tg.Check.Rise, 1)}
	return t
}

func (t *target) interval() time.Duration {
	if iv := t.Check.Interval.D(); iv > 0 {
		return iv
	}
	return model.DefaultInterval
}

func (t *target) timeout() time.Duration {
	if to := t.Check.Timeout.D(); to > 0 {
		return to
	}
	return min(model.DefaultTimeout, t.interval())
}

// reprobe is the fast cadence: Check.ReprobeInterval, at most the interval.
func (t *target) reprobe() time.Duration {
	r := t.Check.ReprobeInterval.D()
	if r <= 0 {
		r = model.DefaultReprobeInterval
	}
	return min(r, t.interval())
}

// poke asks t's loop to plan again. It never blocks.
func (t *target) poke() {
	select {
	case t.wake <- struct{}{}:
	default:
	}
}

// cancelLocked ends t's goroutines; p.mu is held (t.cancel is set under it).
func (t *target) cancelLocked() {
	if t.cancel != nil {
		t.cancel()
	}
}

// markStopped waits for a running OnResult of t; no Result of t is reported
// after it returns.
func (t *target) markStopped() {
	t.mu.Lock()
	t.stopped = true
	t.mu.Unlock()
}

// SetTargets replaces the set of targets (a config reload). Targets whose
// Subject, Addr and Check are unchanged keep their threshold state, their
// schedule and their Checker; removed and changed ones are stopped (no
// Result of theirs is reported once SetTargets returns); new and changed
// ones start from Unknown. Targets of kind none are ignored; a Target
// without a Checker gets one from NewChecker, and when that fails (say, an
// unreadable ca_file) every probe of it fails with that error.
func (p *Prober) SetTargets(ts []Target) {
	p.setMu.Lock()
	defer p.setMu.Unlock()
	p.mu.RLock()
	cur := maps.Clone(p.targets) // only SetTargets and ChangeTargets write p.targets, under setMu
	p.mu.RUnlock()

	next := make(map[vote.Subject]*target, len(ts))
	started := p.nextTargets(ts, cur, next)
	swapRunners(&p.mu, func() { p.targets = next }, cur, next, started, p.startLocked)
	p.metrics.setTargets(len(next))
}

// ChangeTargets changes some of the targets: it is SetTargets of the
// current targets with those of the subjects in remove taken out and those
// of set added or put in place of the current ones of their subjects (a
// Target of kind none takes its subject out), at the cost of the changes,
// not of the whole list (a config change touches a few of maybe 300 000).
func (p *Prober) ChangeTargets(remove []vote.Subject, set []Target) {
	p.setMu.Lock()
	defer p.setMu.Unlock()
	cur := make(map[vote.Subject]*target, len(remove)+len(set)) // the current targets of the subjects touched
	p.mu.RLock()
	for _, s := range remove {
		if t, ok := p.targets[s]; ok {
			cur[s] = t
		}
	}
	for _, nt := range set {
		if t, ok := p.targets[nt.Subject]; ok {
			cur[nt.Subject] = t
		}
	}
	p.mu.RUnlock()

	next := make(map[vote.Subject]*target, len(set))
	started := p.nextTargets(set, cur, next)
	n := 0
	swapRunners(&p.mu, func() {
		for s := range cur {
			delete(p.targets, s) // only SetTargets and ChangeTargets write p.targets, under setMu and mu
		}
		maps.Copy(p.targets, next)
		n = len(p.targets)
	}, cur, next, started, p.startLocked)
	p.metrics.setTargets(n)
}

// nextTargets puts in next the targets of ts: those of cur that probe
// the same are kept, the others are made (and returned, to be started).
func (p *Prober) nextTargets(ts []Target, cur, next map[vote.Subject]*target) (started []*target) {
	for _, nt := range ts {
		if nt.Check == nil || nt.Check.Kind == "" || nt.Check.Kind == model.CheckNone {
			continue
		}
		if _, dup := next[nt.Subject]; dup {
			p.log.Warn("health: duplicate target ignored", "service", nt.Subject.Service, "endpoint", nt.Subject.Target)
			continue
		}
		if old, ok := cur[nt.Subject]; ok && sameTarget(old.Target, nt) {
			next[nt.Subject] = old
			continue
		}
		check := *nt.Check // ours: the caller may reuse its copy
		nt.Check = &check
		if nt.Checker == nil {
			c, err := NewChecker(nt.Check)
			if err != nil {
				p.log.Error("health: cannot build check; every probe will fail", "service", nt.Subject.Service, "endpoint", nt.Subject.Target, "err", err)
				c = errChecker{err}
			}
			nt.Checker = c
		}
		t := newTarget(nt)
		next[nt.Subject] = t
		started = append(started, t)
	}
	return started
}

// runner is a target or a heartbeat poll loop.
type runner interface {
	cancelLocked() // stop; called with the prober's mutex held
	markStopped()  // wait until its last OnResult has returned
}

// swapRunners installs next (via set) in place of cur: it cancels the
// runners that are not kept under mu, so that Run cannot start a removed
// one; then waits for the removed runners' last OnResult before starting the
// new ones, so that a changed subject never reports from two runners at once.
func swapRunners[K comparable, R interface {
	runner
	comparable
}](mu sync.Locker, set func(), cur, next map[K]R, started []R, startLocked func(R)) {
	var removed []R
	mu.Lock()
	set()
	for k, old := range cur {
		if next[k] != old {
			old.cancelLocked()
			removed = append(removed, old)
		}
	}
	mu.Unlock()
	for _, old := range removed {
		old.markStopped()
	}
	mu.Lock()
	for _, r := range started {
		startLocked(r)
	}
	mu.Unlock()
}

// sameTarget reports whether b probes exactly what a probes.
func sameTarget(a, b Target) bool {
	if a.Subject != b.Subject || a.Addr != b.Addr || (a.Check == nil) != (b.Check == nil) {
		return false
	}
	if a.Check == nil {
		return true
	}
	ca, cb := *a.Check, *b.Check
	if !slices.Equal(ca.ExpectStatus, cb.ExpectStatus) {
		return false
	}
	ca.ExpectStatus, cb.ExpectStatus = nil, nil // nil and empty mean the same
	return reflect.DeepEqual(ca, cb)
}

// startLocked starts t's probe loop if the prober runs; p.mu is held.
func (p *Prober) startLocked(t *target) {
	if p.runCtx == nil || t.ctx != nil {
		return
	}
	t.ctx, t.cancel = context.WithCancel(p.runCtx)
	p.wg.Go(func() { p.loop(t) })
}

// loop starts t's probes when its schedule says so, until t is stopped.
// The probes run on their own goroutines, so that a re-probe can start
// while an earlier probe hangs.
func (p *Prober) loop(t *target) {
	t.mu.Lock()
	t.sched.first = time.Now().Add(p.firstDelay(t.interval()))
	t.mu.Unlock()
	timer := time.NewTimer(0)
	defer timer.Stop()
	for {
		select {
		case <-t.ctx.Done():
			return
		case <-timer.C:
		case <-t.wake:
		}
		timer.Reset(p.startDue(t))
	}
}

// startDue starts the probes of t that are due and returns how long to
// wait before planning again.
func (p *Prober) startDue(t *target) time.Duration {
	for {
		now := time.Now()
		gap, fastGap := p.jitter(t.interval()), p.fastJitter(t.reprobe())
		t.mu.Lock()
		t.sched.confirm = t.sched.confirm || t.confirm.Swap(false)
		st, heading := t.th.Status(), t.th.Heading()
		kind, wait := t.sched.plan(now, st, heading, true)
		if kind.reprobe() && !p.takeReprobe() {
			p.metrics.reprobeSkipped()
			kind, wait = t.sched.plan(now, st, heading, false)
		}
		if kind == kindNone {
			t.mu.Unlock()
			return wait
		}
		suspect := kind == kindSlow && t.sched.fastRun == 0 && st == vote.Up // a regular probe of an up endpoint hangs
		seq := t.sched.start(now, kind, gap, fastGap)
		t.mu.Unlock()
		if kind.reprobe() {
			p.metrics.reprobe(t.Check.Kind, kind)
		}
		if suspect && p.onSuspect != nil {
			p.onSuspect(t.Subject)
		}
		p.wg.Go(func() { p.probe(t, seq, kind) })
	}
}

// takeReprobe takes a slot of the re-probe budget, if one is free.
func (p *Prober) takeReprobe() bool {
	select {
	case p.reprobes <- struct{}{}:
		p.metrics.reprobesInFlight(1)
		return true
	default:
		return false
	}
}

func (p *Prober) releaseReprobe() {
	<-p.reprobes
	p.metrics.reprobesInFlight(-1)
}

// probe runs probe seq of t, applies the thresholds and reports the
// Result, unless t was stopped meanwhile or a probe started later has been
// observed already (then the result is stale and only counted).
func (p *Prober) probe(t *target, seq uint64, kind probeKind) {
	defer t.poke() // after the re-probe slot is free
	if kind.reprobe() {
		defer p.releaseReprobe()
	}
	select {
	case p.sem <- struct{}{}:
	case <-t.ctx.Done():
		return
	}
	at := p.now()
	start := time.Now()
	ctx, cancel := context.WithTimeout(t.ctx, t.timeout())
	err := t.Checker.Check(ctx, t.Addr)
	cancel()
	d := time.Since(start)
	<-p.sem
	if t.ctx.Err() != nil {
		return // stopped while probing: the failure is ours
	}

	t.mu.Lock()
	defer t.mu.Unlock()
	if t.stopped {
		return
	}
	p.metrics.probe(t.Check.Kind, err, d)
	if !t.sched.done(seq) {
		return // superseded by a probe started later
	}
	if err == nil {
		t.sched.passed(d)
	}
	was := t.th.Status()
	now := time.Now()
	// A failure its re-probes did not confirm starts a watch, but does not
	// extend one: under random loss the watch's extra probes would find the
	// next such failure and keep the endpoint watched for good.
	unconfirmed := err == nil && was == vote.Up && t.th.Heading() == vote.Down && !t.sched.watching(now)
	s, changed := t.th.Observe(err == nil)
	if changed && (was == vote.Down && s == vote.Up || was == vote.Up && s == vote.Down) || unconfirmed {
		// Watched: a flapping endpoint's next failure run starts within a
		// second, so it fits a short down phase instead of waiting for a
		// regular probe that happens to land early in one.
		t.sched.turned(now)
	}
	t.status.Store(uint32(s))
	log := p.log.With("service", t.Subject.Service, "endpoint", t.Subject.Target, "kind", t.Check.Kind)
	switch {
	case changed:
		log.Info("health: endpoint status changed", "status", s, "err", err)
	case err != nil:
		log.Debug("health: probe failed", "status", s, "err", err, "reprobe", kind.reprobe())
	}
	if p.onResult != nil {
		res := Result{Subject: t.Subject, Status: s, Changed: changed, At: at, Err: err, Duration: d, Kind: t.Check.Kind, Turned: t.th.Turned()}
		if kind.reprobe() {
			res.Reprobe = kind.String()
		}
		p.onResult(res)
	}
}

// ConfirmNow is the second confirmation of s: it asks for a probe of s
// out of its cycle, as soon as the fast cadence allows (at once unless a
// probe of s started less than Check.ReprobeInterval ago). Its result goes
// through the thresholds and OnResult as usual; a failure (or a success of
// a down endpoint) starts a run that is re-probed at the fast cadence
// until fall (rise) is reached or the run breaks. It returns at once;
// false when s is not an endpoint target of a running prober. A request
// while an earlier one waits is absorbed by it. Safe to call from OnResult.
func (p *Prober) ConfirmNow(s vote.Subject) bool {
	p.mu.RLock()
	defer p.mu.RUnlock()
	t := p.targets[s]
	if t == nil || p.runCtx == nil || t.ctx == nil {
		return false
	}
	t.confirm.Store(true)
	t.poke()
	return true
}

// Status returns the current status of an endpoint target or of a cluster
// heartbeat; false when s is neither.
func (p *Prober) Status(s vote.Subject) (vote.Status, bool) {
	p.mu.RLock()
	defer p.mu.RUnlock()
	if s.IsCluster() {
		if b := p.beats[s.Target]; b != nil {
			return vote.Status(b.status.Load()), true
		}
		return vote.Unknown, false
	}
	if t := p.targets[s]; t != nil {
		return vote.Status(t.status.Load()), true
	}
	return vote.Unknown, false
}

func (p *Prober) random() float64 {
	if p.rnd == nil {
		return rand.Float64()
	}
	p.randMu.Lock()
	defer p.randMu.Unlock()
	return p.rnd.Float64()
}

// jitter returns iv ± 10%, uniformly.
func (p *Prober) jitter(iv time.Duration) time.Duration {
	return time.Duration(float64(iv) * (0.9 + 0.2*p.random()))
}

// fastJitter returns r + 0–20%, uniformly: re-probes are never more
// frequent than their cadence.
func (p *Prober) fastJitter(r time.Duration) time.Duration {
	return time.Duration(float64(r) * (1 + 0.2*p.random()))
}

// firstDelay spreads first probes uniformly over [0, iv).
func (p *Prober) firstDelay(iv time.Duration) time.Duration {
	return time.Duration(float64(iv) * p.random())
}
