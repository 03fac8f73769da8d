package rfc2136

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/meridian-gslb/meridian/internal/promreg"
)

// providerLabel is the provider label of every metric of the package.
const providerLabel = "rfc2136"

// Operations of the primary (the operation label).
const (
	opTransfer = "transfer" // AXFR of the zone
	opUpdate   = "update"   // one UPDATE message
)

// metrics are the metrics of this adapter, beside the shared API metrics
// (meridian_provider_api_calls_total{provider="rfc2136",...}).
type metrics struct {
	responses *prometheus.CounterVec // meridian_provider_rfc2136_responses_total{zone,operation,rcode}
	records   *prometheus.GaugeVec   // meridian_provider_rfc2136_zone_records{zone}
}

// newMetrics creates the adapter's metrics on reg (nil: registered nowhere),
// sharing the families an earlier Provider registered there.
func newMetrics(reg prometheus.Registerer) *metrics {
	f := promreg.With(reg)
	return &metrics{
		responses: f.NewCounterVec(prometheus.CounterOpts{
			Name: "meridian_provider_rfc2136_responses_total",
			Help: "Answers of RFC 2136 primaries by operation (transfer, update) and rcode (NOERROR, REFUSED, NXRRSET, YXRRSET, NOTAUTH, SERVFAIL...; BADSIG when the answer's TSIG did not verify, UNSIGNED when it had none).",
		}, []string{"zone", "operation", "rcode"}),
		records: f.NewGaugeVec(prometheus.GaugeOpts{
			Name: "meridian_provider_rfc2136_zone_records",
			Help: "Records of the zone in the last transfer from its primary (its signatures and NSEC records left out).",
		}, []string{"zone"}),
	}
}
