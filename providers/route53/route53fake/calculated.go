package route53fake

// CALCULATED health checks (added for the Route 53 adapter's backstop
// mapping of failover, geolocation and IP-based sets): a check whose status
// is that of its children, healthy while at least HealthThreshold of them
// are (Route 53 API reference, HealthCheckConfig: ChildHealthChecks at most
// 256, HealthThreshold 0..256; a threshold of 0 is always healthy). A child
// that no longer exists counts as unhealthy. Disabled and Inverted apply
// as to any check.

// maxChildHealthChecks is Route 53's limit on ChildHealthChecks.
const maxChildHealthChecks = 256

// checkCalculated validates a CALCULATED configuration as CreateHealthCheck
// and UpdateHealthCheck do.
func checkCalculated(c HealthCheckConfig) *apiError {
	switch {
	case len(c.ChildHealthChecks) > maxChildHealthChecks:
		return invalidInput("Invalid parameter: a CALCULATED health check has at most %d child health checks, not %d", maxChildHealthChecks, len(c.ChildHealthChecks))
	case c.HealthThreshold < 0 || c.HealthThreshold > maxChildHealthChecks:
		return invalidInput("Invalid parameter: HealthThreshold must be between 0 and %d, not %d", maxChildHealthChecks, c.HealthThreshold)
	case c.IPAddress != "" || c.FullyQualifiedDomainName != "" || c.ResourcePath != "" || c.SearchString != "":
		return invalidInput("Invalid parameter: a CALCULATED health check has no endpoint (IPAddress, FullyQualifiedDomainName, ResourcePath, SearchString)")
	}
	seen := map[string]bool{}
	for _, id := range c.ChildHealthChecks {
		if seen[id] {
			return invalidInput("Invalid parameter: child health check %s is listed twice", id)
		}
		seen[id] = true
	}
	return nil
}

// statusOf is the status record sets see of h: its own for endpoint
// checks, its children's for CALCULATED ones (depth bounds nesting).
// Called with s.mu held.
func (s *Server) statusOf(h *healthCheck, depth int) bool {
	if h.cfg.Type != "CALCULATED" {
		return h.healthy()
	}
	up := 0
	for _, id := range h.cfg.ChildHealthChecks {
		if c, ok := s.checks[id]; ok && c.id != h.id && depth < maxAliasDepth && s.statusOf(c, depth+1) {
			up++
		}
	}
	ok := up >= int(h.cfg.HealthThreshold) || h.cfg.Disabled
	return ok != h.cfg.Inverted
}
