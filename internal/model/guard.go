package model

import "fmt"

// DefaultMinHealthy is decision.min_healthy when it is not set.
const DefaultMinHealthy = 1

// MaxMinHealthy bounds decision.min_healthy and services[].min_healthy.
const MaxMinHealthy = 1000

// MinHealthyOf is the guard of service s: its own min_healthy, else
// decision.min_healthy, else DefaultMinHealthy — at most the number of
// endpoints s has (a larger value means every endpoint must stay).
func (d *Desired) MinHealthyOf(s *Service) int {
	n, _ := d.MinHealthyRule(s)
	return n
}

// MinHealthyRule is MinHealthyOf and where it comes from, for the
// messages that name it: "services[].min_healthy in the config",
// "decision.min_healthy in the config", "the default", or the annotation
// and object a Kubernetes-sourced service took it from — with ", clamped
// to the service's N endpoint(s)" when the value was above that.
func (d *Desired) MinHealthyRule(s *Service) (int, string) {
	n, from := DefaultMinHealthy, "the default"
	switch {
	case s != nil && s.MinHealthy != nil:
		n, from = *s.MinHealthy, "services[].min_healthy in the config"
		if s.MinHealthyFrom != "" {
			from = s.MinHealthyFrom
		}
	case d.Decision.MinHealthy != nil:
		n, from = *d.Decision.MinHealthy, "decision.min_healthy in the config"
	}
	if s != nil && n > len(s.Endpoints) {
		from = fmt.Sprintf("%s = %d, clamped to the service's %d endpoint(s)", from, n, len(s.Endpoints))
		n = len(s.Endpoints)
	}
	return n, from
}

// checkMinHealthy validates a min_healthy field at path p.
func (v *validator) checkMinHealthy(p string, n *int) {
	if n != nil && (*n < 0 || *n > MaxMinHealthy) {
		v.add(p, "%d is out of range (allowed 0..%d; 0 = no guard; default %d)", *n, MaxMinHealthy, DefaultMinHealthy)
	}
}
