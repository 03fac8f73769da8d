package app

import (
	"github.com/meridian-gslb/meridian/internal/failover"
	"github.com/meridian-gslb/meridian/internal/model"
	"github.com/meridian-gslb/meridian/internal/placement"
)

// placementHealth is what propagation needs of a decision: which clusters
// are failed over, and since when (nil without a decision).
func placementHealth(d *failover.Decision) []placement.ClusterHealth {
	if d == nil {
		return nil
	}
	var out []placement.ClusterHealth
	for _, c := range d.Clusters {
		h := placement.ClusterHealth{Cluster: c.Name}
		if c.State == failover.FailedOver {
			h.Failed, h.FailedSince = true, c.Since
		}
		out = append(out, h)
	}
	return out
}

// trafficWeights is the configured traffic weight of each cluster behind a
// service name (nil when d has no such service): replica division follows
// these, never the effective weights, so that the loop cannot chase itself.
// Capacity-aware services (services[].capacity) scale only what is
// answered: dividing replicas by ready capacity would give a cluster with
// failing pods fewer replicas, hence fewer ready endpoints, a lower weight
// and fewer replicas again (internal/capacity, rule 7).
func trafficWeights(d *model.Desired, hostname string) map[string]int {
	name := model.CanonicalName(hostname)
	for _, s := range d.Services {
		if s.Name != name {
			continue
		}
		out := map[string]int{}
		for _, ep := range s.Endpoints {
			out[ep.Cluster] += ep.WeightOr()
		}
		return out
	}
	return nil
}
