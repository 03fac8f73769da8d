package xfr

import (
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promauto"
)

// metrics of the transfer server; docs/metrics.md lists them.
type metrics struct {
	requests *prometheus.CounterVec
	notifies *prometheus.CounterVec
	serial   *prometheus.GaugeVec
	duration *prometheus.HistogramVec
}

// newMetrics creates the metrics and registers them on reg (nil: not
// registered).
func newMetrics(reg prometheus.Registerer) *metrics {
	f := promauto.With(reg)
	m := &metrics{
		requests: f.NewCounterVec(prometheus.CounterOpts{
			Name: "meridian_xfr_requests_total",
			Help: "Zone transfer requests and TSIG-signed queries by zone (\"\" when not a transfer zone), type (axfr, ixfr, query) and result: full, incremental, uptodate, ok (signed query), refused_acl, refused_no_tsig, refused_not_configured, refused_udp, badkey, badsig, badtime, formerr, error.",
		}, []string{"zone", "type", "result"}),
		notifies: f.NewCounterVec(prometheus.CounterOpts{
			Name: "meridian_xfr_notify_total",
			Help: "NOTIFY messages sent to secondaries by zone and result: ok (answered NOERROR), retry (no or bad answer, retried), failed (given up), superseded (a newer serial took over).",
		}, []string{"zone", "result"}),
		serial: f.NewGaugeVec(prometheus.GaugeOpts{
			Name: "meridian_xfr_zone_serial",
			Help: "SOA serial of each zone with transfers configured, as served and transferred.",
		}, []string{"zone"}),
		duration: f.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "meridian_xfr_duration_seconds",
			Help:    "Time to send one zone transfer (AXFR or IXFR) over TCP.",
			Buckets: prometheus.ExponentialBuckets(0.0005, 4, 8),
		}, []string{"type"}),
	}
	return m
}
