package cloudflare

import "github.com/meridian-gslb/meridian/providers/apicall"

// providerLabel is the provider label value of every metric of the package.
const providerLabel = "cloudflare"

// Metrics are the provider API metrics, shared with every adapter
// (apicall.Metrics).
type Metrics = apicall.Metrics
