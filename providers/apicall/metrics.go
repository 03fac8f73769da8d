package apicall

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/meridian-gslb/meridian/internal/promreg"
)

// Metrics are the provider API metrics, one set for every adapter, told
// apart by the provider label.
type Metrics struct {
	APICalls    *prometheus.CounterVec   // meridian_provider_api_calls_total{provider,operation,result}
	Throttles   *prometheus.CounterVec   // meridian_provider_throttles_total{provider}
	Retries     *prometheus.CounterVec   // meridian_provider_retries_total{provider}
	Propagation *prometheus.HistogramVec // meridian_provider_propagation_seconds{provider}
}

// NewMetrics creates the metrics and registers them with reg (nil: not
// registered). Families already registered on reg by an earlier call are
// reused, so every adapter of a process may call it with the same registry
// and count into the same families.
func NewMetrics(reg prometheus.Registerer) *Metrics {
	f := promreg.With(reg)
	return &Metrics{
		APICalls: f.NewCounterVec(prometheus.CounterOpts{
			Name: "meridian_provider_api_calls_total",
			Help: "Provider API requests by operation and result (ok, throttled, retryable, error).",
		}, []string{"provider", "operation", "result"}),
		Throttles: f.NewCounterVec(prometheus.CounterOpts{
			Name: "meridian_provider_throttles_total",
			Help: "Provider API requests refused for the rate limit.",
		}, []string{"provider"}),
		Retries: f.NewCounterVec(prometheus.CounterOpts{
			Name: "meridian_provider_retries_total",
			Help: "Provider API requests repeated after a throttle, a server error or a timeout.",
		}, []string{"provider"}),
		Propagation: f.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "meridian_provider_propagation_seconds",
			Help:    "Time from a change's submission to the provider reporting it live (Route 53 INSYNC).",
			Buckets: []float64{1, 2, 5, 10, 20, 30, 45, 60, 90, 120, 180, 300},
		}, []string{"provider"}),
	}
}
