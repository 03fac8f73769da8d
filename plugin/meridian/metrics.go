package meridian

import (
	"github.com/coredns/coredns/plugin"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promauto"
)

// Metrics of the plugin, exported by CoreDNS's prometheus plugin. Every
// metric is listed in README.md.
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
	reloads = promauto.NewCounterVec(prometheus.CounterOpts{
		Namespace: plugin.Namespace,
		Subsystem: "meridian",
		Name:      "config_reloads_total",
		Help:      "Reloads of the Meridian config file by result; a failed one keeps the previous snapshot.",
	}, []string{"result"})
	generation = promauto.NewGauge(prometheus.GaugeOpts{
		Namespace: plugin.Namespace,
		Subsystem: "meridian",
		Name:      "snapshot_generation",
		Help:      "Generation of the snapshot being served.",
	})
	ringMembers = promauto.NewGauge(prometheus.GaugeOpts{
		Namespace: plugin.Namespace,
		Subsystem: "meridian",
		Name:      "ring_probers",
		Help:      "Probers this plugin sees on the ring (0 without ring).",
	})
)
