package meridian

import (
	"sync"

	"github.com/coredns/coredns/plugin"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promauto"

	"github.com/meridian-gslb/meridian/internal/engine"
)

// extendedErrors counts the Extended DNS Errors (RFC 8914) the plugin
// sends: engine.Respond decides and adds them (fail-open answers, REFUSED
// in the plugin's zones), exactly as for `meridian serve`.
var extendedErrors = promauto.NewCounterVec(prometheus.CounterOpts{
	Namespace: plugin.Namespace,
	Subsystem: "meridian",
	Name:      "extended_errors_total",
	Help:      "Replies sent with an Extended DNS Error (RFC 8914; only to queries with EDNS), by server, INFO-CODE and reason: fail_open, not_authoritative, other_class, transfer_refused.",
}, []string{"server", "code", "reason"})

// edeKey is one label set of extendedErrors.
type edeKey struct {
	server string
	ede    engine.ExtendedError
}

// edeCounters caches extendedErrors' children (see queryCounters): a
// fail-open service answers every query with an EDE.
var edeCounters sync.Map // edeKey -> prometheus.Counter

// countEDE counts an EDE sent by server.
func countEDE(server string, e engine.ExtendedError) {
	k := edeKey{server, e}
	if c, ok := edeCounters.Load(k); ok {
		c.(prometheus.Counter).Inc()
		return
	}
	c := extendedErrors.WithLabelValues(server, e.CodeLabel(), e.Reason())
	edeCounters.Store(k, c)
	c.Inc()
}
