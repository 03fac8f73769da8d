package serving

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/meridian-gslb/meridian/internal/report"
	"github.com/meridian-gslb/meridian/internal/whatif"
)

// simulations bounds what GET /v1/simulate costs: one simulation runs at a
// time (a second gets report.ErrSimulationBusy) and the last report is kept
// for its snapshot generation, overrides in force and query, so that the
// same question asked again is not compiled again.
type simulations struct {
	run sync.Mutex // held while a simulation compiles (TryLock: never waits)

	mu   sync.Mutex
	key  string
	last whatif.Report
}

func (s *simulations) cached(key string) (whatif.Report, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.last, s.key != "" && s.key == key
}

func (s *simulations) keep(key string, r whatif.Report) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.key, s.last = key, r
}

func newSimulateMetric(reg prometheus.Registerer) *prometheus.CounterVec {
	m := prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "meridian_simulations_total",
		Help: "GET /v1/simulate requests by result (computed, cached, busy: another simulation was running, canceled: the client went away, invalid).",
	}, []string{"result"})
	for _, r := range []string{"computed", "cached", "busy", "canceled", "invalid"} {
		m.WithLabelValues(r)
	}
	reg.MustRegister(m)
	return m
}

// kindOrder is the order changes are simulated and reported in.
var kindOrder = []string{whatif.Fail, whatif.Drain, whatif.Weight}

// normalize sorts the changes by kind (fail, drain, weight) and then by
// spec, so that the same question asked in another order is the same
// simulation (and the same cache entry).
func normalize(changes []whatif.Change) []whatif.Change {
	out := slices.Clone(changes)
	for i := range out {
		out[i].Spec = strings.TrimSpace(out[i].Spec)
	}
	slices.SortStableFunc(out, func(a, b whatif.Change) int {
		return cmp.Or(cmp.Compare(slices.Index(kindOrder, a.Kind), slices.Index(kindOrder, b.Kind)), cmp.Compare(a.Spec, b.Spec))
	})
	return out
}

// Simulate reports what the changes would do to the answers, without
// changing anything: they become overrides (validated like the admin
// API's), compiled with the current inputs beside the served snapshot.
// One simulation runs at a time: while one compiles, another returns
// report.ErrSimulationBusy (a cached answer is still given). The last report
// is kept per (snapshot generation, overrides in force, normalized
// changes); it is shared, callers must not change it. The work stops
// between services when ctx is done.
func (p *Pipeline) Simulate(ctx context.Context, changes []whatif.Change) (whatif.Report, error) {
	s := p.State()
	changes = normalize(changes)
	ovs, err := whatif.Overrides(changes, &s.Effective.Desired, time.Now())
	if err != nil {
		p.m.simulations.WithLabelValues("invalid").Inc()
		return whatif.Report{}, err
	}
	names := make([]string, len(changes))
	for i, c := range changes {
		names[i] = c.String()
	}
	key := fmt.Sprintf("%d\x00%s\x00%s", s.Snapshot.Generation(), overrideIDs(p.activeOverrides()), strings.Join(names, "\x00"))
	if r, ok := p.sim.cached(key); ok {
		p.m.simulations.WithLabelValues("cached").Inc()
		return r, nil
	}
	if !p.sim.run.TryLock() {
		p.m.simulations.WithLabelValues("busy").Inc()
		return whatif.Report{}, report.ErrSimulationBusy
	}
	defer p.sim.run.Unlock()
	if r, ok := p.sim.cached(key); ok { // the one that just ran may have answered it
		p.m.simulations.WithLabelValues("cached").Inc()
		return r, nil
	}
	if err := ctx.Err(); err != nil {
		p.m.simulations.WithLabelValues("canceled").Inc()
		return whatif.Report{}, fmt.Errorf("simulate: %w", err)
	}
	after, err := p.whatIf(s, ovs)
	if err != nil {
		return whatif.Report{}, err
	}
	r, err := whatif.Compare(ctx, s.Snapshot, after, changes)
	if err != nil {
		p.m.simulations.WithLabelValues("canceled").Inc()
		return whatif.Report{}, fmt.Errorf("simulate: %w", err)
	}
	p.sim.keep(key, r)
	p.m.simulations.WithLabelValues("computed").Inc()
	return r, nil
}
