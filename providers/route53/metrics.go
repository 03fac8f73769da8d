package route53

import "github.com/meridian-gslb/meridian/providers/apicall"

// providerLabel is the value of the provider label on every metric here.
const providerLabel = "route53"

// Metrics are the provider API metrics, shared with every adapter
// (apicall.Metrics).
type Metrics = apicall.Metrics
