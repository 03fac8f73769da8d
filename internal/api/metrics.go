package api

import (
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promauto"
)

// Metrics of the HTTP surface. A nil *Metrics records nothing.
type Metrics struct {
	ChangesRefused      *prometheus.CounterVec // reason
	Connections         *prometheus.GaugeVec   // listener
	ConnectionsRejected *prometheus.CounterVec // listener, reason
	ConnectionsShed     *prometheus.CounterVec // listener, reason
	HostRefused         prometheus.Counter
	Panics              prometheus.Counter
	Streams             prometheus.Gauge
	StreamsRejected     prometheus.Counter
	StreamsDropped      prometheus.Counter
	Reloads             *prometheus.CounterVec // file, result
}

// Reasons a change is refused (label values of meridian_http_changes_refused_total).
const (
	RefusedDisabled     = "disabled"
	RefusedMissingToken = "missing_token"
	RefusedInvalidToken = "invalid_token"
	RefusedContentType  = "content_type"
)

// NewMetrics creates the HTTP metrics and registers them on reg (nil: not
// registered); a second registration on one registry panics.
func NewMetrics(reg prometheus.Registerer) *Metrics {
	f := promauto.With(reg)
	m := &Metrics{
		ChangesRefused: f.NewCounterVec(prometheus.CounterOpts{
			Name: "meridian_http_changes_refused_total",
			Help: "State-changing HTTP requests refused before reaching their handler, by reason (disabled, missing_token, invalid_token, content_type).",
		}, []string{"reason"}),
		Connections: f.NewGaugeVec(prometheus.GaugeOpts{
			Name: "meridian_http_connections",
			Help: "Open HTTP connections, by listener (main, read_only).",
		}, []string{"listener"}),
		ConnectionsRejected: f.NewCounterVec(prometheus.CounterOpts{
			Name: "meridian_http_connections_rejected_total",
			Help: "HTTP connections closed at once, by listener and reason (total: server.http.max_connections open; per-client: server.http.max_connections_per_client open from that client network, IPv4 /24 or IPv6 /64), every connection counted by that cap busy.",
		}, []string{"listener", "reason"}),
		ConnectionsShed: f.NewCounterVec(prometheus.CounterOpts{
			Name: "meridian_http_connections_shed_total",
			Help: "Idle HTTP connections (nothing sent yet, or keep-alive between requests) closed to make room for a new one, by listener and the cap that was full (total, per-client).",
		}, []string{"listener", "reason"}),
		HostRefused: f.NewCounter(prometheus.CounterOpts{
			Name: "meridian_http_requests_refused_host_total",
			Help: "HTTP requests answered 421 because their Host is not an IP address, localhost or a name of server.http.allowed_hosts (a DNS-rebinding page, or a name to add to the list).",
		}),
		Panics: f.NewCounter(prometheus.CounterOpts{
			Name: "meridian_http_panics_total",
			Help: "Panics recovered in HTTP handlers; each was logged with its stack and answered 500.",
		}),
		Streams: f.NewGauge(prometheus.GaugeOpts{
			Name: "meridian_http_event_streams",
			Help: "Open GET /v1/events streams.",
		}),
		StreamsRejected: f.NewCounter(prometheus.CounterOpts{
			Name: "meridian_http_event_streams_rejected_total",
			Help: "GET /v1/events requests answered 503 because server.http.max_event_streams streams were open.",
		}),
		StreamsDropped: f.NewCounter(prometheus.CounterOpts{
			Name: "meridian_http_event_streams_dropped_total",
			Help: "GET /v1/events streams closed because the client did not read within the write deadline.",
		}),
		Reloads: f.NewCounterVec(prometheus.CounterOpts{
			Name: "meridian_http_reloads_total",
			Help: "Reloads of the admin token file and the TLS certificate, by file (tokens, tls) and result (success, failure); a failure keeps the last good one.",
		}, []string{"file", "result"}),
	}
	for _, r := range []string{RefusedDisabled, RefusedMissingToken, RefusedInvalidToken, RefusedContentType} {
		m.ChangesRefused.WithLabelValues(r)
	}
	for _, file := range []string{"tokens", "tls"} {
		for _, r := range []string{"success", "failure"} {
			m.Reloads.WithLabelValues(file, r)
		}
	}
	return m
}

func (m *Metrics) refused(reason string) {
	if m != nil {
		m.ChangesRefused.WithLabelValues(reason).Inc()
	}
}

// Reloaded counts one reload of file (tokens, tls).
func (m *Metrics) Reloaded(file string, err error) {
	if m == nil {
		return
	}
	res := "success"
	if err != nil {
		res = "failure"
	}
	m.Reloads.WithLabelValues(file, res).Inc()
}
