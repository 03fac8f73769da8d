package main

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"time"

	"github.com/meridian-gslb/meridian/bench/internal/benchenv"
)

// trials runs the scenarios in order.
func (b *bench) trials(ctx context.Context) error {
	for _, sc := range b.p.Scenarios {
		switch sc {
		case "kill", "blackhole":
			for k := range b.p.Trials {
				r, err := b.faultTrial(ctx, sc, k)
				if err != nil {
					return fmt.Errorf("%s trial %d: %w", sc, k+1, err)
				}
				if sc == "kill" {
					b.res.Kill = append(b.res.Kill, r)
				} else {
					b.res.Blackhole = append(b.res.Blackhole, r)
				}
			}
		case "flap":
			r, err := b.flap(ctx)
			if err != nil {
				return fmt.Errorf("flap: %w", err)
			}
			b.res.Flap = r
		case "loss":
			r, err := b.loss(ctx)
			if err != nil {
				return fmt.Errorf("loss: %w", err)
			}
			b.res.Loss = r
		case "clients":
			r, err := b.clients(ctx)
			b.res.Clients = r
			if err != nil {
				return fmt.Errorf("clients: %w", err)
			}
		}
	}
	return nil
}

// alive fails when a server process has exited.
func (b *bench) alive() error {
	var errs []error
	if b.pdns != nil {
		errs = append(errs, b.pdns.alive())
	}
	for _, n := range b.mnodes {
		if n.proc != nil {
			errs = append(errs, n.proc.alive())
		}
	}
	return errors.Join(errs...)
}

func allPresent(n int) func(answerSet) bool {
	return func(s answerSet) bool { return s.count() == n }
}
func present(i int) func(answerSet) bool { return func(s answerSet) bool { return s.has(i) } }
func absent(i int) func(answerSet) bool  { return func(s answerSet) bool { return !s.has(i) } }

// ready restarts Meridian with an empty state, brings every backend up, and
// waits until every server has answered every backend for Stable and every
// Meridian node has decided both endpoints up on fresh votes from every
// prober of its ring.
func (b *bench) ready(ctx context.Context) error {
	for _, be := range b.backends {
		be.setBlackhole(false)
		be.setLoss(0)
		if err := be.start(); err != nil {
			return err
		}
	}
	if err := b.restartMeridian(); err != nil {
		return err
	}
	t0 := time.Now()
	deadline := t0.Add(b.p.ReadyTimeout)
	for {
		if err := benchenv.Sleep(ctx, 250*time.Millisecond); err != nil {
			return err
		}
		if err := b.alive(); err != nil {
			return err
		}
		var waiting []string
		for _, name := range b.res.Targets {
			at, last, ok := settledAt(b.poller.since(name, t0), t0, allPresent(len(b.backends)))
			if !ok || last.Sub(at) < b.p.Stable {
				waiting = append(waiting, name+": not answering every backend yet")
			}
		}
		for _, n := range b.mnodes {
			if err := n.settledHealth(ctx); err != nil {
				waiting = append(waiting, n.name+": "+err.Error())
			}
		}
		if len(waiting) == 0 {
			logf("ready after %.1f s (every server answers both backends; Meridian decided both up on fresh votes)", time.Since(t0).Seconds())
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("not ready %v after the start (BENCH_FAILOVER_READY_TIMEOUT): %s", b.p.ReadyTimeout, strings.Join(waiting, "; "))
		}
	}
}

// await waits until every server's answers have satisfied pred for Stable
// (from the first sample of that final run), or the bound, and returns each
// server's time from `from` to that first sample. Servers that had not
// settled at the bound get the bound, marked timed out.
func (b *bench) await(ctx context.Context, from time.Time, pred func(answerSet) bool, bound time.Duration) (map[string]measure, error) {
	deadline := from.Add(bound)
	for {
		if err := benchenv.Sleep(ctx, 100*time.Millisecond); err != nil {
			return nil, err
		}
		if err := b.alive(); err != nil {
			return nil, err
		}
		res := map[string]measure{}
		done := true
		for _, name := range b.res.Targets {
			at, last, ok := settledAt(b.poller.since(name, from), from, pred)
			if ok && last.Sub(at) >= b.p.Stable {
				res[name] = measure{Seconds: at.Sub(from).Seconds()}
			} else {
				done = false
				res[name] = measure{Seconds: bound.Seconds(), TimedOut: true}
			}
		}
		if done || time.Now().After(deadline) {
			if m, ok := ringWorst(res); ok {
				res["ring"] = m
			}
			return res, nil
		}
	}
}

// ringWorst is the two-node ring's figure: the slower of its nodes.
func ringWorst(res map[string]measure) (measure, bool) {
	a, okA := res["ring-a"]
	bb, okB := res["ring-b"]
	if !okA || !okB {
		return measure{}, false
	}
	return worst(a, bb), true
}

// faultResult is one kill or blackhole trial.
type faultResult struct {
	Backend string             `json:"backend"`
	Out     map[string]measure `json:"out"`            // fault → out of the answers
	Back    map[string]measure `json:"back,omitempty"` // restart → back in (kill only)
}

// faultPhase bounds the random pause before each fault and each restart:
// one check interval of both servers at their defaults (5 s), so the event
// falls anywhere in every server's check cycle. (Meridian restarted for the
// trial is ready right after one of its probes; a shorter pause would put
// every kill early in its cycle and time its worst case each time.)
const faultPhase = 5 * time.Second

// faultTrial: ready, then kill (or blackhole) one backend (A and B in
// turn) after a random pause in [0, faultPhase), time until every server
// dropped it; after a kill, another random pause, then restart it and time
// until every server answers it again.
func (b *bench) faultTrial(ctx context.Context, kind string, k int) (faultResult, error) {
	idx := k % len(b.backends)
	be := b.backends[idx]
	r := faultResult{Backend: be.name}
	logf("%s %d/%d: backend %s (%s); restarting Meridian with an empty state and waiting until ready", kind, k+1, b.p.Trials, be.name, be.addr)
	if err := b.ready(ctx); err != nil {
		return r, err
	}
	if err := benchenv.Sleep(ctx, rand.N(faultPhase)); err != nil {
		return r, err
	}
	t0 := time.Now()
	if kind == "kill" {
		be.kill()
	} else {
		be.setBlackhole(true)
	}
	var err error
	if r.Out, err = b.await(ctx, t0, absent(idx), b.p.OutTimeout); err != nil {
		return r, err
	}
	logf("%s %d/%d: out of the answers after %s", kind, k+1, b.p.Trials, b.line(r.Out))
	if kind != "kill" {
		be.setBlackhole(false)
		return r, nil
	}
	if err := benchenv.Sleep(ctx, rand.N(faultPhase)); err != nil {
		return r, err
	}
	t1 := time.Now()
	if err := be.start(); err != nil {
		return r, err
	}
	if r.Back, err = b.await(ctx, t1, present(idx), b.p.BackTimeout); err != nil {
		return r, err
	}
	logf("%s %d/%d: restarted, back in the answers after %s", kind, k+1, b.p.Trials, b.line(r.Back))
	return r, nil
}

// line is a progress line of one trial: every server's time.
func (b *bench) line(res map[string]measure) string {
	var parts []string
	for _, name := range b.columns() {
		if m, ok := res[name]; ok {
			parts = append(parts, fmt.Sprintf("%s %s", name, fmtMeasure(m)))
		}
	}
	s := strings.Join(parts, ", ")
	if a, ok := res["ring-a"]; ok {
		s += fmt.Sprintf(" (ring-a %s, ring-b %s)", fmtMeasure(a), fmtMeasure(res["ring-b"]))
	}
	return s
}

// columns are the servers as reported: pdns, meridian, ring.
func (b *bench) columns() []string { return b.res.columns() }

// flapResult is the flap scenario: backend A down FlapDown, up FlapUp, for FlapFor.
type flapResult struct {
	Backend    string                `json:"backend"`
	Seconds    float64               `json:"seconds"`
	RealFlips  int                   `json:"real_flips"` // real up↔down changes the harness made
	DownTotalS float64               `json:"down_total_seconds"`
	UpTotalS   float64               `json:"up_total_seconds"`
	Servers    map[string]flapServer `json:"servers"`
}

// flapServer is what one server's answers did during the flap.
type flapServer struct {
	Changes        int     `json:"answer_changes"`
	ChangesPerMin  float64 `json:"answer_changes_per_minute"`
	DeadAnsweredS  float64 `json:"dead_answered_seconds"` // backend down but in the answers
	DeadAnsweredPc float64 `json:"dead_answered_percent"` // … as a share of its down time
	LiveMissingS   float64 `json:"live_missing_seconds"`  // backend up but not in the answers
	LiveMissingPc  float64 `json:"live_missing_percent"`  // … as a share of its up time
}

func (b *bench) flap(ctx context.Context) (*flapResult, error) {
	be := b.backends[0]
	logf("flap: backend %s %v down / %v up for %v; restarting Meridian with an empty state and waiting until ready", be.name, b.p.FlapDown, b.p.FlapUp, b.p.FlapFor)
	if err := b.ready(ctx); err != nil {
		return nil, err
	}
	var ts []truth
	t0 := time.Now()
	end := t0.Add(b.p.FlapFor)
	for time.Now().Before(end) {
		be.kill()
		ts = append(ts, truth{time.Now(), false})
		if err := benchenv.Sleep(ctx, min(b.p.FlapDown, time.Until(end))); err != nil {
			return nil, err
		}
		if err := be.start(); err != nil {
			return nil, err
		}
		ts = append(ts, truth{time.Now(), true})
		if d := time.Until(end); d > 0 {
			if err := benchenv.Sleep(ctx, min(b.p.FlapUp, d)); err != nil {
				return nil, err
			}
		}
	}
	t1 := time.Now()
	if err := b.alive(); err != nil {
		return nil, err
	}
	r := &flapResult{Backend: be.name, Seconds: t1.Sub(t0).Seconds(), RealFlips: len(ts), Servers: map[string]flapServer{}}
	for _, name := range b.res.Targets {
		ss := b.poller.since(name, t0.Add(-time.Second))
		ch := changes(ss, t0, t1)
		dead, live, down, up := mismatch(ss, 0, ts, t0, t1, 4*b.p.Poll)
		r.DownTotalS, r.UpTotalS = down.Seconds(), up.Seconds()
		r.Servers[name] = flapServer{
			Changes: ch, ChangesPerMin: float64(ch) * 60 / r.Seconds,
			DeadAnsweredS: dead.Seconds(), DeadAnsweredPc: pct(dead, down),
			LiveMissingS: live.Seconds(), LiveMissingPc: pct(live, up),
		}
	}
	if a, ok := r.Servers["ring-a"]; ok {
		bb := r.Servers["ring-b"]
		r.Servers["ring"] = flapServer{
			Changes: max(a.Changes, bb.Changes), ChangesPerMin: max(a.ChangesPerMin, bb.ChangesPerMin),
			DeadAnsweredS: max(a.DeadAnsweredS, bb.DeadAnsweredS), DeadAnsweredPc: max(a.DeadAnsweredPc, bb.DeadAnsweredPc),
			LiveMissingS: max(a.LiveMissingS, bb.LiveMissingS), LiveMissingPc: max(a.LiveMissingPc, bb.LiveMissingPc),
		}
	}
	var parts []string
	for _, name := range b.columns() {
		s := r.Servers[name]
		parts = append(parts, fmt.Sprintf("%s %d changes, dead answered %.0f%%", name, s.Changes, s.DeadAnsweredPc))
	}
	logf("flap: %d real flips; %s", r.RealFlips, strings.Join(parts, "; "))
	return r, nil
}

func pct(a, b time.Duration) float64 {
	if b <= 0 {
		return 0
	}
	return 100 * a.Seconds() / b.Seconds()
}

// lossResult is the loss scenario: every backend drops LossPercent % of its
// requests for LossFor; every departure from the answers is a false down.
type lossResult struct {
	Seconds  float64               `json:"seconds"`
	Percent  int                   `json:"percent"`
	Requests map[string]uint64     `json:"requests"` // per backend: checks received
	Dropped  map[string]uint64     `json:"dropped"`  // per backend: checks held unanswered
	Servers  map[string]lossServer `json:"servers"`
}

type lossServer struct {
	FalseDowns int `json:"false_downs"` // a (live) backend left the answers
	Changes    int `json:"answer_changes"`
}

func (b *bench) loss(ctx context.Context) (*lossResult, error) {
	logf("loss: every backend drops %d %% of its requests for %v; restarting Meridian with an empty state and waiting until ready", b.p.LossPercent, b.p.LossFor)
	if err := b.ready(ctx); err != nil {
		return nil, err
	}
	r := &lossResult{Percent: b.p.LossPercent, Requests: map[string]uint64{}, Dropped: map[string]uint64{}, Servers: map[string]lossServer{}}
	ans0 := make([]uint64, len(b.backends))
	held0 := make([]uint64, len(b.backends))
	for i, be := range b.backends {
		ans0[i], held0[i] = be.answered.Load(), be.held.Load()
	}
	t0 := time.Now()
	for _, be := range b.backends {
		be.setLoss(b.p.LossPercent)
	}
	if err := benchenv.Sleep(ctx, b.p.LossFor); err != nil {
		return nil, err
	}
	for _, be := range b.backends {
		be.setLoss(0)
	}
	t1 := time.Now()
	// A decision begun under loss may land a little later: count it too.
	if err := benchenv.Sleep(ctx, b.p.Tail); err != nil {
		return nil, err
	}
	if err := b.alive(); err != nil {
		return nil, err
	}
	end := time.Now()
	r.Seconds = t1.Sub(t0).Seconds()
	for i, be := range b.backends {
		held := be.held.Load() - held0[i]
		r.Dropped[be.name] = held
		r.Requests[be.name] = be.answered.Load() - ans0[i] + held
	}
	for _, name := range b.res.Targets {
		ss := b.poller.since(name, t0.Add(-time.Second))
		s := lossServer{Changes: changes(ss, t0, end)}
		for i := range b.backends {
			s.FalseDowns += departures(ss, i, t0, end)
		}
		r.Servers[name] = s
	}
	if a, ok := r.Servers["ring-a"]; ok {
		bb := r.Servers["ring-b"]
		r.Servers["ring"] = lossServer{FalseDowns: max(a.FalseDowns, bb.FalseDowns), Changes: max(a.Changes, bb.Changes)}
	}
	var parts []string
	for _, name := range b.columns() {
		s := r.Servers[name]
		parts = append(parts, fmt.Sprintf("%s %d false downs (%d changes)", name, s.FalseDowns, s.Changes))
	}
	logf("loss: %s", strings.Join(parts, "; "))
	return r, nil
}
