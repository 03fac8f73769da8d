package dnsserver

import (
	"github.com/miekg/dns"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promauto"
)

// Metrics of the embedded DNS server. Every metric is listed in docs/metrics.md.
type Metrics struct {
	Queries     *prometheus.CounterVec   // meridian_dns_queries_total{zone,qtype,rcode,strategy}
	Duration    *prometheus.HistogramVec // meridian_dns_request_duration_seconds{proto}
	Truncated   prometheus.Counter       // meridian_dns_truncated_total
	Malformed   prometheus.Counter       // meridian_dns_malformed_total
	Panics      prometheus.Counter       // meridian_dns_panics_total
	FailOpen    *prometheus.CounterVec   // meridian_dns_fail_open_answers_total{zone}
	TCPConns    prometheus.Gauge         // meridian_dns_tcp_connections
	TCPRejected prometheus.Counter       // meridian_dns_tcp_connections_rejected_total
	// meridian_dns_tcp_connections_per_client_rejected_total
	TCPClientRejected prometheus.Counter
	// meridian_dns_tcp_connections_evicted_total{reason}
	TCPEvicted *prometheus.CounterVec
	RRLDropped prometheus.Counter // meridian_dns_rrl_dropped_total
	RRLSlipped prometheus.Counter // meridian_dns_rrl_slipped_total
	// meridian_dns_rrl_limited_total{class}
	RRLLimited *prometheus.CounterVec
	RRLExempt  prometheus.Counter // meridian_dns_rrl_exempt_total
	// meridian_dnssec_sign_limited_total{proto}
	SignLimited *prometheus.CounterVec
	ECSIgnored  prometheus.Counter // meridian_dns_ecs_ignored_total
	// meridian_dns_extended_errors_total{code,reason}
	EDE *prometheus.CounterVec
}

// NewMetrics creates the server metrics and registers them on reg (nil: not
// registered); a second registration on one registry panics.
func NewMetrics(reg prometheus.Registerer) *Metrics {
	f := promauto.With(reg)
	m := &Metrics{}
	m.newAnswerMetrics(f)
	m.newTCPMetrics(f)
	m.newRRLMetrics(f)
	for _, r := range []string{tcpReasonTotal, tcpReasonSite} {
		m.TCPEvicted.WithLabelValues(r)
	}
	return m
}

// newAnswerMetrics creates the metrics of answering: queries, their
// duration, and the answers that went wrong or were unusual.
func (m *Metrics) newAnswerMetrics(f promauto.Factory) {
	m.Queries = f.NewCounterVec(prometheus.CounterOpts{
		Name: "meridian_dns_queries_total",
		Help: "DNS queries answered, by zone (\"none\" outside our zones), query type, response code and strategy (\"none\" when no service answered).",
	}, []string{"zone", "qtype", "rcode", "strategy"})
	m.Duration = f.NewHistogramVec(prometheus.HistogramOpts{
		Name:    "meridian_dns_request_duration_seconds",
		Help:    "Time from reading a DNS query to handing its response to the kernel, by transport (udp, tcp).",
		Buckets: []float64{5e-6, 1e-5, 2.5e-5, 5e-5, 1e-4, 2.5e-4, 5e-4, 1e-3, 5e-3, 0.025, 0.1},
	}, []string{"proto"})
	m.Truncated = f.NewCounter(prometheus.CounterOpts{
		Name: "meridian_dns_truncated_total",
		Help: "UDP responses truncated (TC set) because they exceeded the client's buffer.",
	})
	m.Malformed = f.NewCounter(prometheus.CounterOpts{
		Name: "meridian_dns_malformed_total",
		Help: "Queries that could not be parsed (answered FORMERR when the header was readable, else dropped).",
	})
	m.Panics = f.NewCounter(prometheus.CounterOpts{
		Name: "meridian_dns_panics_total",
		Help: "Panics recovered while answering (each answered SERVFAIL) or while sending a zone transfer over TCP (the connection closed).",
	})
	m.FailOpen = f.NewCounterVec(prometheus.CounterOpts{
		Name: "meridian_dns_fail_open_answers_total",
		Help: "Answers that ignored health because every endpoint of the name was down.",
	}, []string{"zone"})
	m.ECSIgnored = f.NewCounter(prometheus.CounterOpts{
		Name: "meridian_dns_ecs_ignored_total",
		Help: "Queries whose EDNS Client Subnet option was ignored because their source is not in geo.ecs_trusted (answered by the source address, ECS scope 0).",
	})
	m.EDE = newEDEMetric(f)
}

// newTCPMetrics creates the metrics of DNS-over-TCP connections.
func (m *Metrics) newTCPMetrics(f promauto.Factory) {
	m.TCPConns = f.NewGauge(prometheus.GaugeOpts{
		Name: "meridian_dns_tcp_connections",
		Help: "Open DNS-over-TCP connections.",
	})
	m.TCPRejected = f.NewCounter(prometheus.CounterOpts{
		Name: "meridian_dns_tcp_connections_rejected_total",
		Help: "TCP connections closed at once because max_tcp_connections was reached and none of the listener's connections was idle.",
	})
	m.TCPClientRejected = f.NewCounter(prometheus.CounterOpts{
		Name: "meridian_dns_tcp_connections_per_client_rejected_total",
		Help: "TCP connections closed at once because their client prefix (tcp_client_ipv4_prefix, tcp_client_ipv6_prefix) already had max_tcp_per_client open, or their IPv6 site (tcp_site_ipv6_prefix) max_tcp_per_site, none of them idle.",
	})
	m.TCPEvicted = f.NewCounterVec(prometheus.CounterOpts{
		Name: "meridian_dns_tcp_connections_evicted_total",
		Help: "Idle TCP connections closed to make room for a new one (RFC 7766 6.2.2), by the cap that was full: total (max_tcp_connections of the listener), site (max_tcp_per_site of an IPv6 site).",
	}, []string{"reason"})
}

// newRRLMetrics creates the metrics of response rate limiting and of the
// signing limit.
func (m *Metrics) newRRLMetrics(f promauto.Factory) {
	m.RRLDropped = f.NewCounter(prometheus.CounterOpts{
		Name: "meridian_dns_rrl_dropped_total",
		Help: "UDP queries not answered because their client prefix was over the response rate limit.",
	})
	m.RRLSlipped = f.NewCounter(prometheus.CounterOpts{
		Name: "meridian_dns_rrl_slipped_total",
		Help: "UDP queries over the response rate limit answered with an empty truncated reply (TC=1) instead, so that real clients retry over TCP.",
	})
	m.RRLLimited = f.NewCounterVec(prometheus.CounterOpts{
		Name: "meridian_dns_rrl_limited_total",
		Help: "UDP responses over the response rate limit (dropped or slipped), by response class: answer, nodata (of a name that exists), nxdomain (NXDOMAIN and DNSSEC compact denials of names that do not exist), error.",
	}, []string{"class"})
	m.RRLExempt = f.NewCounter(prometheus.CounterOpts{
		Name: "meridian_dns_rrl_exempt_total",
		Help: "UDP responses sent without rate limiting because their source is in server.dns.rrl.exempt.",
	})
	m.SignLimited = f.NewCounterVec(prometheus.CounterOpts{
		Name: "meridian_dnssec_sign_limited_total",
		Help: "Denials in signed zones not signed because their client prefix was over the signing limit, by transport: udp got an empty truncated reply (TC=1), tcp got SERVFAIL.",
	}, []string{"proto"})
}

// queryKey identifies one series of meridian_dns_queries_total.
type queryKey struct {
	zone, strategy string
	qtype          uint16
	rcode          int
}

// counterCache resolves query counters without touching the CounterVec's
// lock on every query. Each worker goroutine owns one cache.
type counterCache struct {
	m  *Metrics
	c  map[queryKey]prometheus.Counter
	fo map[string]prometheus.Counter
}

func newCounterCache(m *Metrics) *counterCache {
	return &counterCache{m: m, c: map[queryKey]prometheus.Counter{}, fo: map[string]prometheus.Counter{}}
}

func (cc *counterCache) query(k queryKey) prometheus.Counter {
	c, ok := cc.c[k]
	if !ok {
		if len(cc.c) > 4096 { // bound the cache if label values churn across reloads
			clear(cc.c)
		}
		c = cc.m.Queries.WithLabelValues(orNone(k.zone), qtypeLabel(k.qtype), rcodeLabel(k.rcode), orNone(k.strategy))
		cc.c[k] = c
	}
	return c
}

func (cc *counterCache) failOpen(zone string) prometheus.Counter {
	c, ok := cc.fo[zone]
	if !ok {
		c = cc.m.FailOpen.WithLabelValues(orNone(zone))
		cc.fo[zone] = c
	}
	return c
}

func orNone(s string) string {
	if s == "" {
		return "none"
	}
	return s
}

// qtypeLabel bounds the qtype label to well-known types.
func qtypeLabel(t uint16) string {
	switch t {
	case dns.TypeA, dns.TypeAAAA, dns.TypeCNAME, dns.TypeNS, dns.TypeSOA, dns.TypeMX, dns.TypeTXT,
		dns.TypeSRV, dns.TypePTR, dns.TypeANY, dns.TypeHTTPS, dns.TypeSVCB, dns.TypeCAA, dns.TypeDS,
		dns.TypeDNSKEY, dns.TypeAXFR, dns.TypeIXFR, dns.TypeHINFO:
		return dns.TypeToString[t]
	}
	return "other"
}

func rcodeLabel(r int) string {
	if s, ok := dns.RcodeToString[r]; ok {
		return s
	}
	return "other"
}
