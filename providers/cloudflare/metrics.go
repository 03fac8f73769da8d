package cloudflare

import (
	"errors"
	"fmt"

	"github.com/prometheus/client_golang/prometheus"
)

// providerLabel is the provider label value of every metric of the package.
const providerLabel = "cloudflare"

// Metric names, help texts and result values are those of the Route53
// adapter (providers/route53/metrics.go), which registers the same
// families: a registry accepts the second registration only when names,
// labels and help texts are identical. Keep the two in step.
const (
	callsName     = "meridian_provider_api_calls_total"
	callsHelp     = "Provider API requests by operation and result (ok, throttled, retryable, error)."
	throttlesName = "meridian_provider_throttles_total"
	throttlesHelp = "Provider API requests refused for the rate limit."
	retriesName   = "meridian_provider_retries_total"
	retriesHelp   = "Provider API requests repeated after a throttle, a server error or a timeout."
)

// Metrics are the adapter's Prometheus counters.
type Metrics struct {
	calls     *prometheus.CounterVec // provider, operation, result
	throttles *prometheus.CounterVec // provider
	retries   *prometheus.CounterVec // provider
}

// NewMetrics registers the counters with reg (nil: not registered). When
// the families are already registered (by the Route53 adapter, or by an
// earlier call) the registered ones are reused. It panics, like
// prometheus.MustRegister, when a family of the same name was registered
// with other labels or another help text: that is a programming error.
func NewMetrics(reg prometheus.Registerer) *Metrics {
	return &Metrics{
		calls:     register(reg, prometheus.NewCounterVec(prometheus.CounterOpts{Name: callsName, Help: callsHelp}, []string{"provider", "operation", "result"})),
		throttles: register(reg, prometheus.NewCounterVec(prometheus.CounterOpts{Name: throttlesName, Help: throttlesHelp}, []string{"provider"})),
		retries:   register(reg, prometheus.NewCounterVec(prometheus.CounterOpts{Name: retriesName, Help: retriesHelp}, []string{"provider"})),
	}
}

func register(reg prometheus.Registerer, c *prometheus.CounterVec) *prometheus.CounterVec {
	if reg == nil {
		return c
	}
	err := reg.Register(c)
	if err == nil {
		return c
	}
	var are prometheus.AlreadyRegisteredError
	if errors.As(err, &are) {
		if existing, ok := are.ExistingCollector.(*prometheus.CounterVec); ok {
			return existing
		}
	}
	panic(fmt.Sprintf("cloudflare: metrics: %v", err))
}

// Results of one request.
const (
	resultOK        = "ok"
	resultThrottled = "throttled" // 429: retried
	resultRetryable = "retryable" // 5xx, timeouts, broken connections: retried
	resultError     = "error"     // refused (4xx), or not worth a retry
)

// call counts one API request of operation op.
func (m *Metrics) call(op, result string) {
	m.calls.WithLabelValues(providerLabel, op, result).Inc()
}

func (m *Metrics) throttle() { m.throttles.WithLabelValues(providerLabel).Inc() }
func (m *Metrics) retry()    { m.retries.WithLabelValues(providerLabel).Inc() }
