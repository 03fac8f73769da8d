package whatif

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/meridian-gslb/meridian/internal/admin"
	"github.com/meridian-gslb/meridian/internal/engine"
	"github.com/meridian-gslb/meridian/internal/model"
	"github.com/meridian-gslb/meridian/internal/report"
)

// Source is the served state a Simulator starts from (internal/serving's
// Pipeline).
type Source interface {
	// SimulationBase returns the served snapshot, the effective desired
	// state changes are resolved against, the ids of the overrides in
	// force, and a compile of those same inputs with extra overrides
	// (nothing is published).
	SimulationBase() (snap *engine.Snapshot, d *model.Desired, overrides string, compile func(extra []admin.Override) (*engine.Snapshot, error))
}

// Simulator answers GET /v1/simulate over a Source; it bounds what that
// costs: one simulation runs at a time (a second gets
// report.ErrSimulationBusy) and the last report is kept for its snapshot
// generation, overrides in force and query, so that the same question
// asked again is not compiled again.
type Simulator struct {
	Source  Source
	Metrics *prometheus.CounterVec // NewMetrics; nil: counted nowhere

	run sync.Mutex // held while a simulation compiles (TryLock: never waits)

	mu   sync.Mutex
	key  string
	last Report
}

func (s *Simulator) cached(key string) (Report, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.last, s.key != "" && s.key == key
}

func (s *Simulator) keep(key string, r Report) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.key, s.last = key, r
}

func (s *Simulator) count(result string) {
	if s.Metrics != nil {
		s.Metrics.WithLabelValues(result).Inc()
	}
}

// NewMetrics creates meridian_simulations_total and registers it with reg.
func NewMetrics(reg prometheus.Registerer) *prometheus.CounterVec {
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
var kindOrder = []string{Fail, Drain, Weight}

// normalize sorts the changes by kind (fail, drain, weight) and then by
// spec, so that the same question asked in another order is the same
// simulation (and the same cache entry).
func normalize(changes []Change) []Change {
	out := slices.Clone(changes)
	for i := range out {
		out[i].Spec = strings.TrimSpace(out[i].Spec)
	}
	slices.SortStableFunc(out, func(a, b Change) int {
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
func (s *Simulator) Simulate(ctx context.Context, changes []Change) (Report, error) {
	snap, d, inForce, compile := s.Source.SimulationBase()
	changes = normalize(changes)
	ovs, err := Overrides(changes, d, time.Now())
	if err != nil {
		s.count("invalid")
		return Report{}, err
	}
	names := make([]string, len(changes))
	for i, c := range changes {
		names[i] = c.String()
	}
	key := fmt.Sprintf("%d\x00%s\x00%s", snap.Generation(), inForce, strings.Join(names, "\x00"))
	if r, ok := s.cached(key); ok {
		s.count("cached")
		return r, nil
	}
	if !s.run.TryLock() {
		s.count("busy")
		return Report{}, report.ErrSimulationBusy
	}
	defer s.run.Unlock()
	if r, ok := s.cached(key); ok { // the one that just ran may have answered it
		s.count("cached")
		return r, nil
	}
	if err := ctx.Err(); err != nil {
		s.count("canceled")
		return Report{}, fmt.Errorf("simulate: %w", err)
	}
	after, err := compile(ovs)
	if err != nil {
		return Report{}, err
	}
	r, err := Compare(ctx, snap, after, changes)
	if err != nil {
		s.count("canceled")
		return Report{}, fmt.Errorf("simulate: %w", err)
	}
	s.keep(key, r)
	s.count("computed")
	return r, nil
}
