// Package runner steps progressive shifts (internal/shift decides each
// step) over the serving pipeline's overrides: every tick on the ring's
// writer, storing the progress, republishing and reporting the events.
package runner

import (
	"context"
	"errors"
	"fmt"
	"math"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/meridian-gslb/meridian/internal/admin"
	"github.com/meridian-gslb/meridian/internal/capacity/observe"
	"github.com/meridian-gslb/meridian/internal/engine"
	"github.com/meridian-gslb/meridian/internal/model"
	"github.com/meridian-gslb/meridian/internal/report"
	"github.com/meridian-gslb/meridian/internal/serving"
	"github.com/meridian-gslb/meridian/internal/shift"
)

// Notifier is where shift events go: the status page's timeline and,
// once wired, the notification webhooks (internal/notify). It must not
// block.
type Notifier interface {
	ShiftEvent(shift.Event)
}

// GuardQuery runs a shift's --abort-if instant query and returns the
// samples' values (observe.Instant; tests give a fake).
type GuardQuery func(ctx context.Context, url, query string, timeout time.Duration, now time.Time) ([]float64, error)

// Runner steps the shifts in force every tick (shift.tick).
type Runner struct {
	Pipeline *serving.Pipeline
	Notify   Notifier   // nil: events are only logged and counted
	Query    GuardQuery // nil: observe.Instant
	// Active tells whether this node steps the shifts now: only the ring's
	// elected writer does, so that a shift's progress (its guard failures
	// above all) is decided once, not once per node. nil: always.
	Active func() bool
	// Metrics counts the steps (NewMetrics); nil: on a private registry.
	Metrics *Metrics

	metricsOnce sync.Once
	m           *Metrics

	mu    sync.Mutex
	seen  map[string]bool           // "service\x00cluster" gauges set last tick
	known map[string]shift.Progress // override id -> the progress seen last tick (or set here)
}

// Metrics of progressive shifts.
type Metrics struct {
	percent   *prometheus.GaugeVec
	rollbacks *prometheus.CounterVec
	steps     *prometheus.CounterVec
	guard     *prometheus.CounterVec
	notSaved  *prometheus.CounterVec
}

// NewMetrics creates the shift metrics and registers them with reg.
func NewMetrics(reg prometheus.Registerer) *Metrics {
	m := &Metrics{
		percent: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "meridian_shift_percent",
			Help: "Share (0..100) of a service's traffic a progressive shift sends to its target cluster now.",
		}, []string{"service", "cluster"}),
		rollbacks: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "meridian_shift_rollbacks_total",
			Help: "Progressive shifts rolled back to their last safe step (target unhealthy, guard breached or failing).",
		}, []string{"service"}),
		steps: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "meridian_shift_steps_total",
			Help: "Steps progressive shifts took, by action (advance, finish, rollback, pause, resume).",
		}, []string{"service", "action"}),
		guard: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "meridian_shift_guard_queries_total",
			Help: "Guard (--abort-if) queries of progressive shifts, by result (hold, breach, error).",
		}, []string{"result"}),
		notSaved: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "meridian_shift_not_saved_total",
			Help: "Shift steps decided but not saved, by reason (stale: the stored progress changed since the decision; error: the store refused it; capability: this node may not change traffic over the ring).",
		}, []string{"reason"}),
	}
	for _, r := range []string{"hold", "breach", "error"} {
		m.guard.WithLabelValues(r)
	}
	for _, r := range []string{"stale", "error", "capability"} {
		m.notSaved.WithLabelValues(r)
	}
	reg.MustRegister(m.percent, m.rollbacks, m.steps, m.guard, m.notSaved)
	return m
}

// Run steps the shifts every tick of the config's shift.tick until ctx
// is done.
func (r *Runner) Run(ctx context.Context) {
	for {
		tick := model.DefaultShiftTick
		if st := r.Pipeline.State(); st != nil && st.Effective != nil {
			tick = st.Effective.Desired.Shift.TickOr()
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(tick):
			r.Step(ctx, time.Now())
		}
	}
}

// errStale refuses a step decided on a progress the store no longer holds.
var errStale = errors.New("the shift's progress changed since the decision")

// Step decides every shift in force once at now, stores what changed,
// republishes and reports the events. A panic on one shift is recovered
// and logged; the others still step.
func (r *Runner) Step(ctx context.Context, now time.Time) []shift.Event {
	p := r.Pipeline
	if p.Admin() == nil {
		return nil
	}
	st := p.State()
	var events []shift.Event
	seen := map[string]bool{}
	changed := false
	stepping := r.Active == nil || r.Active()
	for _, o := range p.Admin().Active() {
		if !stepping || o.Kind != admin.KindShift || o.Shift == nil {
			continue
		}
		ev, ch := r.stepOne(ctx, st, o, now)
		changed = changed || ch
		if ev != nil {
			events = append(events, *ev)
		}
	}
	if changed {
		p.AdminChanged(true)
	}
	for _, o := range p.Admin().Active() {
		if o.Kind == admin.KindShift && o.Shift != nil {
			key := strings.TrimSuffix(o.Service, ".") + "\x00" + o.Shift.Spec.To
			seen[key] = true
			r.metrics().percent.WithLabelValues(strings.TrimSuffix(o.Service, "."), o.Shift.Spec.To).Set(float64(o.Shift.Percent()))
		}
	}
	r.mu.Lock()
	for key := range r.seen {
		if !seen[key] {
			svc, cl, _ := strings.Cut(key, "\x00")
			r.metrics().percent.DeleteLabelValues(svc, cl)
		}
	}
	r.seen = seen
	observed := r.observe(now, events)
	r.mu.Unlock()
	for _, ev := range events {
		r.emit(ev)
	}
	if r.Notify != nil {
		for _, ev := range observed {
			p.Logger().Info("shift step taken by another node", "id", ev.ID, "service", ev.Service, "action", ev.Action, "from", ev.From, "percent", ev.Percent)
			r.Notify.ShiftEvent(ev)
		}
	}
	return events
}

// observe returns the steps other nodes stored since the last tick (the
// shifts' progress this node did not change itself) and remembers the
// progress of every shift in force. r.mu is held.
func (r *Runner) observe(now time.Time, mine []shift.Event) []shift.Event {
	took := map[string]bool{}
	for _, ev := range mine {
		took[ev.ID] = true
	}
	known := map[string]shift.Progress{}
	var out []shift.Event
	for _, o := range r.Pipeline.Admin().Active() {
		if o.Kind != admin.KindShift || o.Shift == nil {
			continue
		}
		cur := o.Shift.Progress
		known[o.ID] = cur
		prev, ok := r.known[o.ID]
		if !ok || took[o.ID] || prev.Equal(cur) {
			continue
		}
		a := shift.Observed(prev, cur)
		if a == shift.Hold {
			continue
		}
		at := now
		if !cur.Since.Equal(prev.Since) && cur.Since.Before(now) {
			at = cur.Since // when the step was taken, by the node that took it
		}
		before := admin.Shift{Spec: o.Shift.Spec, Progress: prev}
		out = append(out, shift.Event{At: at, ID: o.ID, Service: strings.TrimSuffix(o.Service, "."), To: o.Shift.Spec.To,
			Action: string(a), From: before.Percent(), Percent: o.Shift.Percent(), Reason: cur.Reason, Observed: true})
	}
	r.known = known
	return out
}

func (r *Runner) stepOne(ctx context.Context, st *serving.State, o admin.Override, now time.Time) (ev *shift.Event, changed bool) {
	p := r.Pipeline
	defer func() {
		if v := recover(); v != nil {
			p.Logger().Error("shift: stepping panicked (recovered); the shift holds", "id", o.ID, "service", o.Service, "panic", fmt.Sprint(v))
			ev, changed = nil, false
		}
	}()
	if o.Shift.Progress.Paused || o.Shift.Progress.Done {
		return nil, false
	}
	obs := shift.Observation{Now: now, TargetHealthy: true}
	if st != nil && st.Effective != nil {
		targetHealth(st, o.Service, o.Shift.Spec.To, &obs)
		if obs.TargetHealthy && o.Shift.Spec.AbortIf != "" {
			obs.Guard = r.guard(ctx, st.Effective.Desired.Shift, o.Shift.Spec.AbortIf, now)
		}
	}
	d := shift.Decide(o.Shift.Spec, o.Shift.Progress, obs)
	if d.Action == shift.Hold && d.Progress.Failures == o.Shift.Progress.Failures {
		return nil, false
	}
	if err := p.MayChange(); err != nil {
		// Stepped here only, the other nodes would refuse the step and
		// answer differently: the shift holds until a node that may writes.
		r.metrics().notSaved.WithLabelValues("capability").Inc()
		p.Logger().Warn("shift: not stepped; this node is the writer but may not change traffic over the ring", "id", o.ID, "service", o.Service, "err", err)
		return nil, false
	}
	from := o.Shift.Percent()
	// Compare and swap: the decision stands only on the progress it was
	// made from. Another node's version (from the ring) or an operator's
	// pause or resume may have replaced it while the guard ran; then the
	// next tick decides again on what is stored.
	_, err := p.Admin().Update(o.ID, func(cur admin.Override) (admin.Override, error) {
		if cur.Shift == nil || !cur.Shift.Progress.Equal(o.Shift.Progress) {
			return cur, errStale
		}
		sh := *cur.Shift
		sh.Progress = d.Progress
		cur.Shift = &sh
		return cur, nil
	})
	switch {
	case errors.Is(err, admin.ErrNotFound):
		return nil, false
	case errors.Is(err, errStale):
		r.metrics().notSaved.WithLabelValues("stale").Inc()
		p.Logger().Info("shift: progress changed since the decision (another node or an operator stepped it); not saved, decided again next tick",
			"id", o.ID, "service", o.Service, "action", string(d.Action))
		return nil, false
	case err != nil:
		r.metrics().notSaved.WithLabelValues("error").Inc()
		p.Logger().Error("shift: progress not saved; the shift holds", "id", o.ID, "service", o.Service, "action", string(d.Action), "err", err)
		return nil, false
	case d.Action == shift.Hold:
		p.Logger().Warn("shift: guard query failed", "id", o.ID, "service", o.Service, "reason", d.Reason)
		return nil, true
	}
	return &shift.Event{At: now, ID: o.ID, Service: strings.TrimSuffix(o.Service, "."), To: o.Shift.Spec.To, Action: string(d.Action), From: from, Percent: d.Percent, Reason: d.Reason}, true
}

// guard runs the --abort-if query: a non-empty result with a non-zero
// sample is a breach; an error counts against --max-failures.
func (r *Runner) guard(ctx context.Context, cfg model.ShiftConfig, query string, now time.Time) shift.Guard {
	m := r.metrics()
	if cfg.PrometheusURL == "" {
		m.guard.WithLabelValues("error").Inc()
		return shift.Guard{Checked: true, Err: errors.New("shift.prometheus_url is not configured")}
	}
	q := r.Query
	if q == nil {
		q = observe.Instant
	}
	vals, err := q(ctx, cfg.PrometheusURL, query, cfg.TimeoutOr(), now)
	if err != nil {
		m.guard.WithLabelValues("error").Inc()
		return shift.Guard{Checked: true, Err: err}
	}
	for _, v := range vals {
		if v != 0 || math.IsNaN(v) {
			m.guard.WithLabelValues("breach").Inc()
			return shift.Guard{Checked: true, Breach: true, Detail: fmt.Sprintf("%g (%d samples)", v, len(vals))}
		}
	}
	m.guard.WithLabelValues("hold").Inc()
	return shift.Guard{Checked: true, Detail: fmt.Sprintf("%d samples, all 0", len(vals))}
}

// targetHealth reports whether the target cluster and every endpoint of
// the service in it pass their probes (the ring's decision; Unknown, not
// probed yet, counts as passing like everywhere else) and are not forced
// down by an operator. It fills o's TargetHealthy, Unhealthy, Down (the
// first shift.MaxNamed down endpoints only), DownCount and Endpoints.
func targetHealth(st *serving.State, service, to string, o *shift.Observation) {
	var h engine.Health = engine.NoHealth{}
	if st.Decision != nil {
		h = st.Decision
	}
	d := &st.Effective.Desired
	if st.Served != nil {
		d = st.Served
	}
	o.TargetHealthy, o.Unhealthy, o.Down, o.DownCount, o.Endpoints = false, "", nil, 0, 0
	for _, c := range d.Clusters {
		if c.Name == to && (c.State == model.StateDown || h.Cluster(to) == engine.Down) {
			o.Unhealthy = "cluster " + to + " is down"
			return
		}
	}
	for _, s := range d.Services {
		if s.Name != service {
			continue
		}
		for _, e := range s.Endpoints {
			if e.Cluster != to {
				continue
			}
			o.Endpoints++
			if e.State == model.StateDown || h.Endpoint(s.Name, e.Address+e.CNAME) == engine.Down {
				o.DownCount++
				if len(o.Down) < shift.MaxNamed {
					o.Down = append(o.Down, e.Address+e.CNAME)
				}
			}
		}
	}
	switch {
	case o.Endpoints == 0:
		o.Unhealthy = "the service has no endpoint in " + to
	case o.DownCount == 0:
		o.TargetHealthy = true
	}
}

func (r *Runner) emit(ev shift.Event) {
	p := r.Pipeline
	r.metrics().steps.WithLabelValues(ev.Service, ev.Action).Inc()
	kv := []any{"id", ev.ID, "service", ev.Service, "to", ev.To, "action", ev.Action, "from", ev.From, "percent", ev.Percent, "reason", ev.Reason}
	if ev.Action == string(shift.Rollback) {
		r.metrics().rollbacks.WithLabelValues(ev.Service).Inc()
		p.Logger().Warn("shift rolled back", kv...)
	} else {
		p.Logger().Info("shift stepped", kv...)
	}
	if r.Notify != nil {
		r.Notify.ShiftEvent(ev)
	}
}

// PauseShift pauses the shift of service (who and why recorded in its
// progress), republishes and spreads it.
func (r *Runner) PauseShift(service, who, reason string) (admin.Override, error) {
	if len(reason) > admin.MaxReason {
		return admin.Override{}, admin.FieldError{Field: "reason", Msg: fmt.Sprintf("is longer than %d characters", admin.MaxReason)}
	}
	return r.operate(service, who, "pause", func(p shift.Progress, now time.Time) shift.Progress {
		why := "paused by " + who
		if reason = strings.TrimSpace(reason); reason != "" {
			why += ": " + reason
		}
		return shift.Pause(p, why)
	})
}

// ResumeShift resumes the paused shift of service.
func (r *Runner) ResumeShift(service, who string) (admin.Override, error) {
	return r.operate(service, who, "resume", shift.Resume)
}

// ErrNoShift is returned when a service has no shift in force.
var ErrNoShift = report.ErrNoShift

func (r *Runner) operate(service, who, action string, f func(shift.Progress, time.Time) shift.Progress) (admin.Override, error) {
	p := r.Pipeline
	if p.Admin() == nil {
		return admin.Override{}, serving.ErrNoAdmin
	}
	if len(who) > 128 {
		return admin.Override{}, admin.FieldError{Field: "who", Msg: "is longer than 128 characters"}
	}
	if err := p.MayChange(); err != nil {
		return admin.Override{}, err
	}
	svc := model.CanonicalName(service)
	for _, o := range p.Admin().Active() {
		if o.Kind != admin.KindShift || o.Service != svc || o.Shift == nil {
			continue
		}
		now := time.Now()
		from := o.Shift.Percent()
		got, err := p.Admin().Update(o.ID, func(cur admin.Override) (admin.Override, error) {
			sh := *cur.Shift
			sh.Progress = f(sh.Progress, now)
			if len(sh.Progress.Reason) > shift.MaxProgressReason {
				return cur, admin.FieldError{Field: "reason", Msg: fmt.Sprintf("with who it is longer than %d bytes", shift.MaxProgressReason)}
			}
			cur.Shift = &sh
			return cur, nil
		})
		if err != nil {
			return got, err
		}
		p.Logger().Warn("shift "+action, "id", got.ID, "service", got.Service, "who", who)
		r.mu.Lock()
		if r.known != nil {
			r.known[got.ID] = got.Shift.Progress // taken here: not observed again next tick
		}
		r.mu.Unlock()
		p.AdminChanged(true)
		r.emit(shift.Event{At: now, ID: got.ID, Service: strings.TrimSuffix(got.Service, "."), To: got.Shift.Spec.To, Action: action, From: from, Percent: got.Shift.Percent(), Reason: got.Shift.Progress.Reason, Who: who})
		return got, nil
	}
	return admin.Override{}, fmt.Errorf("%w for %s", ErrNoShift, strings.TrimSuffix(svc, "."))
}

func (r *Runner) metrics() *Metrics {
	r.metricsOnce.Do(func() {
		r.m = r.Metrics
		if r.m == nil {
			r.m = NewMetrics(prometheus.NewRegistry())
		}
	})
	return r.m
}
