package capacity

import (
	"cmp"
	"fmt"
	"math"
	"slices"
	"time"

	"github.com/meridian-gslb/meridian/internal/engine"
)

// Decide computes the fraction in use of every endpoint of every
// capacity-aware service from the readings, the previous State and the
// time. It is pure and deterministic; the package doc lists the rules.
// Decide never modifies in.Prev.
func Decide(in Input, p Params) *State {
	p = p.withDefaults()
	st := &State{At: in.Now, Services: make([]ServiceState, 0, len(in.Services))}
	for _, svc := range in.Services {
		svc = svc.withDefaults()
		ss, changes := decideService(svc, in, p)
		st.Services = append(st.Services, ss)
		st.Changes = append(st.Changes, changes...)
	}
	slices.SortStableFunc(st.Services, func(a, b ServiceState) int { return cmp.Compare(a.Name, b.Name) })
	st.Services = slices.CompactFunc(st.Services, func(a, b ServiceState) bool { return a.Name == b.Name })
	st.Changed = in.Prev == nil || !in.Prev.sameEngineStates(st)
	return st
}

// decideService applies rules 1 to 5 to one service.
func decideService(svc Service, in Input, p Params) (ServiceState, []Change) {
	now := in.Now
	prev, _ := in.Prev.Lookup(svc.Name)
	ss := ServiceState{Name: svc.Name, Source: svc.Source, Step: svc.Step, LastChange: prev.LastChange}
	prevEp := make(map[string]EndpointState, len(prev.Endpoints))
	for _, e := range prev.Endpoints {
		prevEp[e.Target] = e
	}
	d := &decider{svc: svc, p: p, now: now, ss: &ss}
	ss.Endpoints = make([]EndpointState, len(svc.Endpoints))
	for i, ep := range svc.Endpoints {
		e := EndpointState{Target: ep.Target, Cluster: ep.Cluster, Weight: ep.Weight, Percent: 100, Since: now}
		if pe, ok := prevEp[ep.Target]; ok {
			e.Percent, e.Since, e.Held, e.HeldSince = pe.Percent, pe.Since, pe.Held, pe.HeldSince
		}
		r, ok := in.Readings[Key{svc.Name, ep.Target}]
		e.Missing = in.Missing[Key{svc.Name, ep.Target}]
		switch {
		case !ok:
			e.Stale, e.Wanted = true, 100
		case now.Sub(r.At) > svc.StaleAfter:
			e.Stale, e.Wanted, e.Reading = true, 100, r
		default:
			e.Reading = r
			e.Wanted = level(r.Fraction, e.Percent, svc.Step, svc.Hysteresis)
		}
		ss.Endpoints[i] = e
	}
	if d.allWeightedAt(func(e *EndpointState) int { return e.Wanted }, 0) {
		ss.Fallback = true
		for i := range ss.Endpoints {
			ss.Endpoints[i].Wanted = 100
		}
	}
	d.stabilize()
	return ss, d.changes
}

// decider holds the working state of one service in one call.
type decider struct {
	svc     Service
	p       Params
	now     time.Time
	ss      *ServiceState
	changes []Change
}

// allWeightedAt reports whether the service has weighted endpoints and
// every one of them has f(e) == pct.
func (d *decider) allWeightedAt(f func(*EndpointState) int, pct int) bool {
	any := false
	for i := range d.ss.Endpoints {
		e := &d.ss.Endpoints[i]
		if e.Weight == 0 {
			continue
		}
		if f(e) != pct {
			return false
		}
		any = true
	}
	return any
}

// stabilize moves Percent toward Wanted under rules 4 and 5, then keeps
// rule 3 on the fractions in use.
func (d *decider) stabilize() {
	pending, applied := d.releaseBraked()
	if d.applyWithinBrake(pending) {
		applied = true
	}
	if d.fallback() {
		applied = true
	}
	if applied {
		d.ss.LastChange = d.now
	}
	d.setHeldUntil()
}

// releaseBraked settles the endpoints already at their wanted fraction and
// applies the changes the brake held for an Interval (rule 5); it returns
// the endpoints still to change and whether anything was applied.
func (d *decider) releaseBraked() (pending []int, applied bool) {
	ss := d.ss
	for i := range ss.Endpoints {
		e := &ss.Endpoints[i]
		if e.Wanted == e.Percent {
			e.Held, e.HeldSince = "", time.Time{}
			continue
		}
		// A change the brake held for an Interval applies now (rule 5).
		if e.Held == HeldBrake && d.now.Sub(e.HeldSince) >= d.p.Interval {
			d.apply(e, "brake")
			applied = true
			continue
		}
		pending = append(pending, i)
	}
	return pending, applied
}

// applyWithinBrake applies the pending changes, in order, while the
// traffic they move stays within the brake; the rest are held, by the
// brake or, within MinChangeInterval of the last change, by the interval.
// It reports whether anything was applied.
func (d *decider) applyWithinBrake(pending []int) bool {
	ss := d.ss
	applied := false
	waiting := !ss.LastChange.IsZero() && d.now.Sub(ss.LastChange) < d.svc.MinChangeInterval
	base := d.percents()
	try := slices.Clone(base)
	for _, i := range pending {
		e := &ss.Endpoints[i]
		switch {
		case e.Held == HeldBrake:
			// Held by the brake: waits for its Interval even if it would fit.
		case waiting:
			d.hold(e, HeldInterval)
		default:
			try[i] = e.Wanted
			if tv(ss.Endpoints, base, try) <= d.p.Brake+1e-9 {
				d.apply(e, d.reason(e))
				applied = true
			} else {
				try[i] = base[i]
				d.hold(e, HeldBrake)
			}
		}
	}
	return applied
}

// fallback never leaves every weighted endpoint at 0 %: the wanted
// fractions (not all 0, rule 3) then apply at once, whatever holds them.
// It reports whether anything was applied.
func (d *decider) fallback() bool {
	if !d.allWeightedAt(func(e *EndpointState) int { return e.Percent }, 0) {
		return false
	}
	applied := false
	for i := range d.ss.Endpoints {
		if e := &d.ss.Endpoints[i]; e.Weight > 0 && e.Percent != e.Wanted {
			d.apply(e, "fallback")
			applied = true
		}
	}
	return applied
}

// setHeldUntil says until when each held endpoint waits: an Interval after
// the brake held it, MinChangeInterval after the last change for the
// interval; never for an endpoint not held.
func (d *decider) setHeldUntil() {
	ss := d.ss
	for i := range ss.Endpoints {
		e := &ss.Endpoints[i]
		switch e.Held {
		case HeldBrake:
			e.HeldUntil = e.HeldSince.Add(d.p.Interval)
		case HeldInterval:
			e.HeldUntil = ss.LastChange.Add(d.svc.MinChangeInterval)
		default:
			e.HeldUntil = time.Time{}
		}
	}
}

func (d *decider) reason(e *EndpointState) string {
	switch {
	case d.ss.Fallback:
		return "fallback"
	case e.Stale:
		return "stale"
	}
	return "reading"
}

func (d *decider) percents() []int {
	out := make([]int, len(d.ss.Endpoints))
	for i := range d.ss.Endpoints {
		out[i] = d.ss.Endpoints[i].Percent
	}
	return out
}

// apply moves e to its wanted fraction.
func (d *decider) apply(e *EndpointState, reason string) {
	to := e.Wanted
	e.Held, e.HeldSince = "", time.Time{}
	if to == e.Percent {
		return
	}
	d.changes = append(d.changes, Change{Service: d.svc.Name, Target: e.Target, Cluster: e.Cluster, From: e.Percent, To: to, Reason: reason, At: d.now})
	e.Percent, e.Since = to, d.now
}

// hold keeps e's fraction and records the hold when it starts.
func (d *decider) hold(e *EndpointState, reason string) {
	if e.Held == reason {
		return
	}
	e.Held, e.HeldSince = reason, d.now
	d.changes = append(d.changes, Change{Service: d.svc.Name, Target: e.Target, Cluster: e.Cluster, From: e.Percent, To: e.Percent, Reason: reason, At: d.now})
}

// tv is the share of a service's answers that moves between fractions a
// and b: the total variation distance of the shares weight × fraction.
// From nothing (every share 0) nothing moves; to nothing, everything.
func tv(eps []EndpointState, a, b []int) float64 {
	var sa, sb float64
	for i, e := range eps {
		sa += float64(e.Weight * a[i])
		sb += float64(e.Weight * b[i])
	}
	switch {
	case sa == 0:
		return 0
	case sb == 0:
		return 1
	}
	var sum float64
	for i, e := range eps {
		sum += math.Abs(float64(e.Weight*a[i])/sa - float64(e.Weight*b[i])/sb)
	}
	return sum / 2
}

// level is the percent a reading f asks for when cur is in use (rule 2).
func level(f float64, cur int, step, hyst float64) int {
	if math.Abs(100*f-float64(cur)) <= 100*(step/2+hyst)+1e-9 {
		return cur
	}
	return Quantise(f, step)
}

// Quantise returns the percent nearest f among the multiples of step and
// 100 (a tie goes up).
func Quantise(f, step float64) int {
	f = min(max(f, 0), 1)
	r := f / step
	k := math.Floor(r + 1e-9)
	lo, hi := k*step, min(1, (k+1)*step)
	x := lo
	if r-k >= 0.5-1e-9 || f-lo > hi-f {
		x = hi
	}
	return int(math.Round(100 * x))
}

// engineState is what the engine and explain get for e.
func (e *EndpointState) engineState(svc ServiceState) engine.CapacityState {
	c := engine.CapacityState{Percent: e.Percent, Source: svc.Source}
	missing := ""
	if e.Missing != "" {
		missing = " (" + e.Missing + ")"
	}
	switch {
	case e.Stale && e.Reading.At.IsZero():
		c.Source, c.Why = SourceNone, "no reading yet"+missing+": the configured weight"
	case e.Stale:
		c.Source, c.Why = SourceNone, fmt.Sprintf("no good reading since %s%s (last: %s): the configured weight", stamp(e.Reading.At), missing, e.Reading.Detail)
	case svc.Fallback:
		c.Why = e.Reading.Detail + "; every weighted endpoint of the service reads 0: the configured weights"
	default:
		c.Why = e.Reading.Detail
	}
	if !e.Stale && !svc.Fallback && e.Held == "" && Quantise(e.Reading.Fraction, svc.Step) != e.Percent {
		c.Why += fmt.Sprintf(" (%.3g is within the hysteresis of %d %%)", e.Reading.Fraction, e.Percent)
	}
	switch e.Held {
	case HeldInterval:
		c.Why += fmt.Sprintf("; wants %d %%, held by min_change_interval until %s", e.Wanted, stamp(e.HeldUntil))
	case HeldBrake:
		c.Why += fmt.Sprintf("; wants %d %%, held by the brake until %s", e.Wanted, stamp(e.HeldUntil))
	}
	return c
}

func stamp(t time.Time) string { return t.UTC().Format(time.TimeOnly) }

// sameEngineStates reports whether s and o give the engine the same
// capacities (services, endpoints, percent, source and why).
func (s *State) sameEngineStates(o *State) bool {
	if len(s.Services) != len(o.Services) {
		return false
	}
	for i := range s.Services {
		a, b := &s.Services[i], &o.Services[i]
		if a.Name != b.Name || len(a.Endpoints) != len(b.Endpoints) {
			return false
		}
		for j := range a.Endpoints {
			x, y := &a.Endpoints[j], &b.Endpoints[j]
			if x.Target != y.Target || x.engineState(*a) != y.engineState(*b) {
				return false
			}
		}
	}
	return true
}
