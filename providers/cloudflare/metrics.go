package cloudflare

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/meridian-gslb/meridian/internal/promreg"
	"github.com/meridian-gslb/meridian/providers/apicall"
)

// providerLabel is the provider label value of every metric of the package.
const providerLabel = "cloudflare"

// Metrics are the provider API metrics, shared with every adapter
// (apicall.Metrics).
type Metrics = apicall.Metrics

// newLBGauge is meridian_provider_load_balancing{zone}: 1 while the zone's
// services are load balancers, 0 while the account has no Load Balancing.
// It is registered with reg (nil: nowhere); a family already registered
// there by another Provider is reused.
func newLBGauge(reg prometheus.Registerer) *prometheus.GaugeVec {
	return promreg.With(reg).NewGaugeVec(prometheus.GaugeOpts{
		Name: "meridian_provider_load_balancing",
		Help: "Cloudflare zones with load_balancing required or preferred: 1 while load balancers are in use, 0 while the account has no Load Balancing (plain records with preferred, failing syncs with required).",
	}, []string{"zone"})
}
