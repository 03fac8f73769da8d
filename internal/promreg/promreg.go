// Package promreg registers Prometheus collectors that several instances in
// one process share (two probers, a provider per zone, the pipeline of each
// CoreDNS server block).
package promreg

import (
	"errors"

	"github.com/prometheus/client_golang/prometheus"
)

// Reuse registers c with reg, or returns the equal collector already
// registered there (nil reg: c, registered nowhere). Any other registration
// error (the same name with other labels or help) is a programming error
// and panics, as MustRegister does.
func Reuse[C prometheus.Collector](reg prometheus.Registerer, c C) C {
	if reg == nil {
		return c
	}
	if err := reg.Register(c); err != nil {
		var are prometheus.AlreadyRegisteredError
		if errors.As(err, &are) {
			if existing, ok := are.ExistingCollector.(C); ok {
				return existing
			}
		}
		panic(err)
	}
	return c
}
