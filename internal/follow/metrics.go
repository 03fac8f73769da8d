package follow

import (
	"log/slog"
	"sync"

	"github.com/meridian-gslb/meridian/internal/serving"
	"github.com/prometheus/client_golang/prometheus"
)

// Metrics of the ring followers: the decided states, the decided changes
// and the latency view. `meridian serve` registers them as they are; the
// CoreDNS plugin registers them once per process with the prefix
// "coredns_" (coredns_meridian_...).
type Metrics struct {
	endpointState *prometheus.GaugeVec
	clusterState  *prometheus.GaugeVec
	events        *prometheus.CounterVec
	detection     prometheus.Histogram
	decideSeconds prometheus.Histogram
	holdDown      *prometheus.GaugeVec
	holds         prometheus.Histogram
	doubt         prometheus.Gauge
	returning     prometheus.Gauge
	latency       latencyMetrics // the latency view (latency.go)
}

// NewMetrics creates the metrics and registers them with reg.
func NewMetrics(reg prometheus.Registerer) *Metrics {
	m := &Metrics{
		endpointState: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "meridian_endpoint_up",
			Help: "Decided state of an endpoint: 1 up (or unknown), 0 down.",
		}, []string{"service", "endpoint", "cluster"}),
		clusterState: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "meridian_cluster_state",
			Help: "Decided state of a cluster: 1 for the current state label (ready, unreachable, failed-over), 0 for the others.",
		}, []string{"cluster", "state"}),
		events: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "meridian_failover_events_total",
			Help: "Decided changes by reason (threshold, confirmation, heartbeat-lost, hold-down, brake, ...) and new state.",
		}, []string{"reason", "to"}),
		detection: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "meridian_failover_detection_seconds",
			Help:    "Time from this node's first failed probe of an endpoint to the decision that took it down.",
			Buckets: []float64{0.5, 1, 2, 3, 5, 8, 13, 20, 30, 60, 120},
		}),
		decideSeconds: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "meridian_decision_duration_seconds",
			Help:    "Time to compute one failover decision.",
			Buckets: prometheus.ExponentialBuckets(1e-5, 4, 10),
		}),
		holdDown: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "meridian_endpoint_hold_down_seconds",
			Help: "The hold-down an endpoint's next recovery waits: the current one while it is down, the one a failure now would bring while it is up (adaptive: decision.hold_down_min doubling per repeated flap).",
		}, []string{"service", "endpoint", "cluster"}),
		holds: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "meridian_failover_hold_down_seconds",
			Help:    "Length of each hold-down started (endpoints and clusters), by the adaptive ladder.",
			Buckets: []float64{1, 2, 5, 10, 20, 30, 60, 120, 240, 300, 600},
		}),
		doubt: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "meridian_endpoints_in_doubt",
			Help: "Answered endpoints in doubt (a failed probe being re-checked, down votes short of a decision, a failure within the flap window): answers carrying one get the service's doubt_ttl.",
		}),
	}
	m.returning = prometheus.NewGauge(prometheus.GaugeOpts{
		Name: "meridian_endpoints_returning",
		Help: "Endpoints out of the answers that may come back soon (down less than the flap window, or their hold-down ends within it): the answers they are missing from get the service's doubt_ttl.",
	})
	reg.MustRegister(m.endpointState, m.clusterState, m.events, m.detection, m.decideSeconds, m.holdDown, m.holds, m.doubt, m.returning)
	m.latency = newLatencyMetrics(reg)
	return m
}

// lazyMetrics is a follower's metrics: the ones it was given, or private
// ones made on first use.
type lazyMetrics struct {
	once sync.Once
	m    *Metrics
}

func (l *lazyMetrics) get(given *Metrics) *Metrics {
	l.once.Do(func() { l.m = metricsOr(given) })
	return l.m
}

// loggerOr is l, or the pipeline's logger when l is nil.
func loggerOr(l *slog.Logger, p *serving.Pipeline) *slog.Logger {
	if l != nil {
		return l
	}
	return p.Logger()
}

// metricsOr is m, or metrics on a private registry when m is nil (tests,
// one-shot commands): exported by nobody.
func metricsOr(m *Metrics) *Metrics {
	if m != nil {
		return m
	}
	return NewMetrics(prometheus.NewRegistry())
}
