package observe

import (
	"sync"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/meridian-gslb/meridian/internal/capacity"
)

// metrics of the capacity-aware weights; every one is listed in
// docs/metrics.md. Labels are bounded by the config: capacity-aware
// services × their clusters, and fixed reason lists.
type metrics struct {
	fraction       *prometheus.GaugeVec
	read           *prometheus.GaugeVec
	stale          *prometheus.GaugeVec
	changes        *prometheus.CounterVec
	holds          *prometheus.CounterVec
	queries        *prometheus.CounterVec
	queryFailures  *prometheus.CounterVec
	invalidSamples *prometheus.CounterVec

	mu      sync.Mutex
	seen    map[[2]string]bool // service, cluster series of the gauges set last
	seenSvc map[string]bool    // services of the stale gauge set last
}

func newMetrics(reg prometheus.Registerer) *metrics {
	m := &metrics{
		fraction: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "meridian_capacity_ready_fraction",
			Help: "Ready fraction in use (0..1) of a capacity-aware service's endpoints in a cluster (the lowest when it has several): their weights are drawn × this.",
		}, []string{"service", "cluster"}),
		read: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "meridian_capacity_read_fraction",
			Help: "Latest good reading (0..1) behind meridian_capacity_ready_fraction, before quantising, hysteresis, the minimum change interval and the brake (absent while there is none).",
		}, []string{"service", "cluster"}),
		stale: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "meridian_capacity_stale_endpoints",
			Help: "Endpoints of a capacity-aware service without a good reading within stale_after: they count at their configured weight.",
		}, []string{"service"}),
		changes: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "meridian_capacity_changes_total",
			Help: "Changes of an endpoint's ready fraction in use, by service and reason (reading, stale, fallback: every weighted endpoint read 0 or would draw 0, brake: applied after the brake held it).",
		}, []string{"service", "reason"}),
		holds: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "meridian_capacity_held_total",
			Help: "Wanted changes of a ready fraction that began waiting, by service and reason (interval: min_change_interval, brake).",
		}, []string{"service", "reason"}),
		queries: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "meridian_capacity_queries_total",
			Help: "Successful Prometheus queries of capacity-aware services, by service.",
		}, []string{"service"}),
		queryFailures: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "meridian_capacity_query_failures_total",
			Help: "Failed Prometheus queries of capacity-aware services, by service and reason (timeout, unreachable, status, result, oversized, panic); the last good fractions stay until stale_after.",
		}, []string{"service", "reason"}),
		invalidSamples: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "meridian_capacity_invalid_samples_total",
			Help: "Prometheus samples left out or changed, by service and reason (nan, negative, above-one: used as 1, duplicate, unmatched, too-many).",
		}, []string{"service", "reason"}),
		seen: map[[2]string]bool{}, seenSvc: map[string]bool{},
	}
	if reg != nil {
		reg.MustRegister(m.fraction, m.read, m.stale, m.changes, m.holds, m.queries, m.queryFailures, m.invalidSamples)
	}
	return m
}

// observe sets the gauges from a State and counts its changes; series of
// services and clusters no longer there are removed.
func (m *metrics) observe(st *capacity.State) {
	m.mu.Lock()
	defer m.mu.Unlock()
	type agg struct {
		pct     int
		read    float64
		hasRead bool
	}
	now := map[[2]string]*agg{}
	svcs := map[string]bool{}
	for _, s := range st.Services {
		svcs[s.Name] = true
		stale := 0
		for _, e := range s.Endpoints {
			k := [2]string{s.Name, e.Cluster}
			a := now[k]
			if a == nil {
				a = &agg{pct: e.Percent, read: 2}
				now[k] = a
			}
			a.pct = min(a.pct, e.Percent)
			if e.Stale {
				stale++
			} else {
				a.read, a.hasRead = min(a.read, e.Reading.Fraction), true
			}
		}
		m.stale.WithLabelValues(s.Name).Set(float64(stale))
	}
	for k := range m.seen {
		if now[k] == nil {
			m.fraction.DeleteLabelValues(k[0], k[1])
			m.read.DeleteLabelValues(k[0], k[1])
			delete(m.seen, k)
		}
	}
	for name := range m.seenSvc {
		if !svcs[name] {
			m.stale.DeleteLabelValues(name)
		}
	}
	m.seenSvc = svcs
	for k, a := range now {
		m.fraction.WithLabelValues(k[0], k[1]).Set(float64(a.pct) / 100)
		if a.hasRead {
			m.read.WithLabelValues(k[0], k[1]).Set(a.read)
		} else {
			m.read.DeleteLabelValues(k[0], k[1])
		}
		m.seen[k] = true
	}
	for _, c := range st.Changes {
		if c.From != c.To {
			m.changes.WithLabelValues(c.Service, c.Reason).Inc()
		} else {
			m.holds.WithLabelValues(c.Service, c.Reason).Inc()
		}
	}
}
