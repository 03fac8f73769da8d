package meridian

import (
	"strconv"
	"sync"
	"sync/atomic"

	"github.com/coredns/coredns/plugin"
	"github.com/miekg/dns"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promauto"
)

// Metrics of the plugin, exported by CoreDNS's prometheus plugin; the
// pipeline's own (reloads, snapshot, overrides, decisions) are registered
// by pipelineMetrics with the same coredns_ prefix. Every metric is listed
// in docs/metrics.md.
var (
	queryCount = promauto.NewCounterVec(prometheus.CounterOpts{
		Namespace: plugin.Namespace,
		Subsystem: "meridian",
		Name:      "queries_total",
		Help:      "Queries answered by the meridian plugin, by server, zone, query type, rcode and strategy.",
	}, []string{"server", "zone", "qtype", "rcode", "strategy"})
	failOpen = promauto.NewCounterVec(prometheus.CounterOpts{
		Namespace: plugin.Namespace,
		Subsystem: "meridian",
		Name:      "fail_open_answers_total",
		Help:      "Answers that ignored health because every endpoint of the name was down.",
	}, []string{"server", "zone"})
	ringMembers = promauto.NewGauge(prometheus.GaugeOpts{
		Namespace: plugin.Namespace,
		Subsystem: "meridian",
		Name:      "ring_probers",
		Help:      "Probers this plugin sees on the ring (0 without ring).",
	})
)

// queryKey is one label set of queryCount, before the labels are strings.
type queryKey struct {
	server, zone string
	qtype        uint16
	rcode        int
	strategy     string
}

// queryCounters caches queryCount's children: WithLabelValues hashes five
// strings and validates them on every call, which showed up in profiles of
// the query path.
type queryCounters struct {
	m    sync.Map // queryKey -> prometheus.Counter
	size atomic.Int64
}

// maxCachedCounters bounds the cache: query types are chosen by clients.
const maxCachedCounters = 4096

func (q *queryCounters) get(k queryKey) prometheus.Counter {
	if c, ok := q.m.Load(k); ok {
		return c.(prometheus.Counter)
	}
	qt, ok := dns.TypeToString[k.qtype]
	if !ok {
		qt = "TYPE" + strconv.Itoa(int(k.qtype))
	}
	rc, ok := dns.RcodeToString[k.rcode]
	if !ok {
		rc = strconv.Itoa(k.rcode)
	}
	c := queryCount.WithLabelValues(k.server, orNone(k.zone), qt, rc, orNone(k.strategy))
	if q.size.Add(1) <= maxCachedCounters {
		q.m.Store(k, c)
	}
	return c
}
