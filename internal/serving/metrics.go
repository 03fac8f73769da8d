package serving

import (
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/meridian-gslb/meridian/internal/admin"
	"github.com/meridian-gslb/meridian/internal/engine"
)

// Metrics of the pipeline (the follower's are internal/follow's). `meridian serve` registers
// them as they are; the CoreDNS plugin registers them once per process
// with the prefix "coredns_" (coredns_meridian_...).
type Metrics struct {
	reloads   *prometheus.CounterVec
	lastOK    prometheus.Gauge
	overrides *prometheus.GaugeVec
	rejected  *prometheus.CounterVec
	guard     *prometheus.CounterVec

	snap atomic.Pointer[engine.Snapshot] // the last published, for the gauges
}

// NewMetrics creates the metrics and registers them with reg.
func NewMetrics(reg prometheus.Registerer) *Metrics {
	m := &Metrics{
		reloads: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "meridian_config_reloads_total",
			Help: "Config reloads by result (success, failure). A failed reload keeps the previous snapshot serving.",
		}, []string{"result"}),
		lastOK: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "meridian_config_last_reload_success_timestamp_seconds",
			Help: "Unix time of the last successful config load.",
		}),
		overrides: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "meridian_admin_overrides",
			Help: "Operator overrides in force, by kind (drain, force-up, force-down, weight).",
		}, []string{"kind"}),
		rejected: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "meridian_admin_entries_rejected_total",
			Help: "Override entries skipped because they failed validation, by source (ring, file) and reason (invalid, future, unknown-target).",
		}, []string{"source", "reason"}),
		guard: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "meridian_admin_guard_total",
			Help: "Drains and force-downs that would leave a service below min_healthy, by result (refused, forced).",
		}, []string{"result"}),
	}
	m.reloads.WithLabelValues("success")
	m.reloads.WithLabelValues("failure")
	m.guard.WithLabelValues("refused")
	m.guard.WithLabelValues("forced")
	for _, k := range admin.Kinds {
		m.overrides.WithLabelValues(k)
	}
	gen := prometheus.NewGaugeFunc(prometheus.GaugeOpts{
		Name: "meridian_snapshot_generation",
		Help: "Generation of the snapshot being served; increases by one with every publish.",
	}, func() float64 {
		if s := m.snap.Load(); s != nil {
			return float64(s.Generation())
		}
		return 0
	})
	age := prometheus.NewGaugeFunc(prometheus.GaugeOpts{
		Name: "meridian_snapshot_age_seconds",
		Help: "Seconds since the snapshot being served was compiled.",
	}, func() float64 {
		if s := m.snap.Load(); s != nil {
			return time.Since(s.Built()).Seconds()
		}
		return 0
	})
	reg.MustRegister(m.reloads, m.lastOK, gen, age, m.overrides, m.rejected, m.guard)
	return m
}

// newPrivateRegistry is where a pipeline built without Metrics registers
// its own (tests, one-shot commands): exported by nobody.
func newPrivateRegistry() *prometheus.Registry { return prometheus.NewRegistry() }
