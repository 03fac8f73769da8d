package health

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/meridian-gslb/meridian/internal/promreg"
)

// Metrics are the prober's Prometheus metrics; docs/metrics.md lists them. A nil
// *Metrics records nothing.
type Metrics struct {
	results  *prometheus.CounterVec
	duration *prometheus.HistogramVec
	targets  prometheus.Gauge
	polls    *prometheus.CounterVec

	reprobes        *prometheus.CounterVec
	reprobesSkipped prometheus.Counter
	reprobesRunning prometheus.Gauge
}

// NewMetrics creates the metrics and registers them with reg (nil reg = not
// registered, for tests). Registering twice with one registry reuses the
// collectors already there, so two probers in one process share them.
func NewMetrics(reg prometheus.Registerer) *Metrics {
	f := promreg.With(reg)
	m := &Metrics{
		results: f.NewCounterVec(prometheus.CounterOpts{
			Name: "meridian_probe_results_total",
			Help: "Endpoint probes by check kind and result (ok or fail).",
		}, []string{"kind", "result"}),
		duration: f.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "meridian_probe_duration_seconds",
			Help:    "Time an endpoint probe took, by check kind (failed probes included).",
			Buckets: []float64{.001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10},
		}, []string{"kind"}),
		targets: f.NewGauge(prometheus.GaugeOpts{
			Name: "meridian_probe_targets",
			Help: "Endpoints this prober is probing.",
		}),
		polls: f.NewCounterVec(prometheus.CounterOpts{
			Name: "meridian_heartbeat_polls_total",
			Help: "Cluster heartbeat URL polls by cluster and result (ok or fail).",
		}, []string{"cluster", "result"}),
		reprobes: f.NewCounterVec(prometheus.CounterOpts{
			Name: "meridian_probe_reprobes_total",
			Help: "Endpoint probes started out of the regular cycle, at the fast cadence (health.reprobe_interval), by check kind and reason (fall, rise, slow, confirm).",
		}, []string{"kind", "reason"}),
		reprobesSkipped: f.NewCounter(prometheus.CounterOpts{
			Name: "meridian_probe_reprobes_skipped_total",
			Help: "Re-probes not started because the prober's re-probe budget was in use; the endpoint waits for its regular probe.",
		}),
		reprobesRunning: f.NewGauge(prometheus.GaugeOpts{
			Name: "meridian_probe_reprobes_in_flight",
			Help: "Re-probes running now (bounded by the prober's re-probe budget).",
		}),
	}
	return m
}

func resultLabel(err error) string {
	if err == nil {
		return "ok"
	}
	return "fail"
}

func (m *Metrics) probe(kind string, err error, d time.Duration) {
	if m == nil {
		return
	}
	m.results.WithLabelValues(kind, resultLabel(err)).Inc()
	m.duration.WithLabelValues(kind).Observe(d.Seconds())
}

func (m *Metrics) setTargets(n int) {
	if m == nil {
		return
	}
	m.targets.Set(float64(n))
}

func (m *Metrics) poll(cluster string, err error) {
	if m == nil {
		return
	}
	m.polls.WithLabelValues(cluster, resultLabel(err)).Inc()
}

func (m *Metrics) reprobe(kind string, why probeKind) {
	if m == nil {
		return
	}
	m.reprobes.WithLabelValues(kind, why.String()).Inc()
}

func (m *Metrics) reprobeSkipped() {
	if m == nil {
		return
	}
	m.reprobesSkipped.Inc()
}

func (m *Metrics) reprobesInFlight(delta float64) {
	if m == nil {
		return
	}
	m.reprobesRunning.Add(delta)
}
