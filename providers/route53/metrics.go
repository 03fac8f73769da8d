package route53

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/meridian-gslb/meridian/providers/apicall"
)

// providerLabel is the value of the provider label on every metric here.
const providerLabel = "route53"

// Metrics are the provider API metrics, shared with every adapter
// (apicall.Metrics).
type Metrics = apicall.Metrics

// NewMetrics is apicall.NewMetrics, kept for callers that build the
// adapters one by one: every call on one registry returns the same
// families.
func NewMetrics(reg prometheus.Registerer) *Metrics { return apicall.NewMetrics(reg) }
