package webhook

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/meridian-gslb/meridian/internal/promreg"
)

// Metrics of the webhook and the ExternalDNS stage (docs/metrics.md).
type Metrics struct {
	requests *prometheus.CounterVec // route, code
	changes  *prometheus.CounterVec // cluster, action
	records  *prometheus.GaugeVec   // cluster
	services prometheus.Gauge
	dropped  prometheus.Gauge
	adjusted *prometheus.CounterVec // cluster: records adjustendpoints left out
	panics   prometheus.Counter
}

// NewMetrics registers the metrics with reg (nil: a private registry).
func NewMetrics(reg prometheus.Registerer) *Metrics {
	if reg == nil {
		reg = prometheus.NewRegistry()
	}
	f := promreg.With(reg)
	return &Metrics{
		requests: f.NewCounterVec(prometheus.CounterOpts{Name: "meridian_externaldns_requests_total",
			Help: "Requests to the ExternalDNS webhook, by route and HTTP status code (401: no or an unknown token)."}, []string{"route", "code"}),
		changes: f.NewCounterVec(prometheus.CounterOpts{Name: "meridian_externaldns_changes_total",
			Help: "Records in the accepted POST /records changes of each cluster's ExternalDNS, by action (create, update, delete)."}, []string{"cluster", "action"}),
		records: f.NewGaugeVec(prometheus.GaugeOpts{Name: "meridian_externaldns_records",
			Help: "Records stored for each cluster's ExternalDNS (TXT ownership records included)."}, []string{"cluster"}),
		services: f.NewGauge(prometheus.GaugeOpts{Name: "meridian_externaldns_services",
			Help: "Services served from ExternalDNS records after the last merge."}),
		dropped: f.NewGauge(prometheus.GaugeOpts{Name: "meridian_externaldns_names_not_served",
			Help: "Names of ExternalDNS records left out by the last merge (config or Kubernetes names, unknown clusters, records that do not validate); the log says why."}),
		adjusted: f.NewCounterVec(prometheus.CounterOpts{Name: "meridian_externaldns_adjust_dropped_total",
			Help: "Records that POST /adjustendpoints left out because Meridian would refuse them (outside the served zones, a name the record's namespace may not serve, unsupported type, bad target), by cluster."}, []string{"cluster"}),
		panics: f.NewCounter(prometheus.CounterOpts{Name: "meridian_externaldns_panics_total",
			Help: "Panics recovered while handling ExternalDNS webhook requests (answered 500) or merging the stored records (the previous state keeps serving)."}),
	}
}

// Observe records a merge's outcome (extdns.Stage.Observe).
func (m *Metrics) Observe(served int, dropped map[string]string) {
	m.services.Set(float64(served))
	m.dropped.Set(float64(len(dropped)))
}

// Panicked counts a panic recovered outside a request (extdns.Stage.Panicked).
func (m *Metrics) Panicked() { m.panics.Inc() }
