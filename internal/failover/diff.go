package failover

import "github.com/meridian-gslb/meridian/internal/engine"

// ChangedSince implements engine.HealthDiff: the services with an endpoint
// whose Endpoint result differs between d and prev (an endpoint only one of
// them has counts as changed). ok is false when prev is not a *Decision or
// some cluster's Cluster result differs: then the engine asks for every
// endpoint's state.
func (d *Decision) ChangedSince(prev engine.Health) (services map[string]bool, ok bool) {
	o, isDecision := prev.(*Decision)
	if !isDecision || d == nil || o == nil {
		return nil, false
	}
	if d == o {
		return nil, true
	}
	if len(d.Clusters) != len(o.Clusters) {
		return nil, false
	}
	for i := range d.Clusters {
		if d.Clusters[i].Name != o.Clusters[i].Name || d.Clusters[i].engineState() != o.Clusters[i].engineState() {
			return nil, false
		}
	}
	services = map[string]bool{}
	// Both lists are sorted by subject: walk them together.
	i, j := 0, 0
	for i < len(d.Endpoints) || j < len(o.Endpoints) {
		c := 0
		switch {
		case i == len(d.Endpoints):
			c = 1
		case j == len(o.Endpoints):
			c = -1
		default:
			c = compareSubjects(d.Endpoints[i].Subject, o.Endpoints[j].Subject)
		}
		switch {
		case c < 0:
			services[d.Endpoints[i].Subject.Service] = true
			i++
		case c > 0:
			services[o.Endpoints[j].Subject.Service] = true
			j++
		default:
			// The clusters match, so an endpoint in the same cluster differs
			// only if its own state does (as in SameStates).
			a, b := &d.Endpoints[i], &o.Endpoints[j]
			if (a.Cluster != b.Cluster || ownEngineState(a.State) != ownEngineState(b.State)) &&
				d.endpointEngineState(i) != o.endpointEngineState(j) || a.Doubt != b.Doubt || d.returning(i) != o.returning(j) {
				services[d.Endpoints[i].Subject.Service] = true
			}
			i++
			j++
		}
	}
	return services, true
}

var _ engine.HealthDiff = (*Decision)(nil)
