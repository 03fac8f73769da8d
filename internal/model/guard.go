package model

// DefaultMinHealthy is decision.min_healthy when it is not set.
const DefaultMinHealthy = 1

// MaxMinHealthy bounds decision.min_healthy and services[].min_healthy.
const MaxMinHealthy = 1000

// MinHealthyOf is the guard of service s: its own min_healthy, else
// decision.min_healthy, else DefaultMinHealthy.
func (d *Desired) MinHealthyOf(s *Service) int {
	switch {
	case s != nil && s.MinHealthy != nil:
		return *s.MinHealthy
	case d.Decision.MinHealthy != nil:
		return *d.Decision.MinHealthy
	}
	return DefaultMinHealthy
}

// checkMinHealthy validates a min_healthy field at path p.
func (v *validator) checkMinHealthy(p string, n *int) {
	if n != nil && (*n < 0 || *n > MaxMinHealthy) {
		v.add(p, "%d is out of range (allowed 0..%d; 0 = no guard; default %d)", *n, MaxMinHealthy, DefaultMinHealthy)
	}
}
