package engine

import (
	"reflect"
	"slices"

	"github.com/meridian-gslb/meridian/internal/model"
)

// HealthDiff is implemented by a Health that can tell, against the Health
// an earlier snapshot was compiled with, which services' endpoint states
// may differ (see Options.Previous). ok is false when it cannot tell (then
// a compile asks for the state of every endpoint of every service it would
// share). A service not in services gives the same Endpoint result for
// every target under both, and Cluster gives the same result for every
// cluster.
type HealthDiff interface {
	Health
	ChangedSince(prev Health) (services map[string]bool, ok bool)
}

// ChangedSince implements HealthDiff: NoHealth after NoHealth changes nothing.
func (NoHealth) ChangedSince(prev Health) (map[string]bool, bool) {
	_, ok := prev.(NoHealth)
	return nil, ok
}

var _ HealthDiff = NoHealth{}

// reuser finds, for a compile that follows a previous snapshot, the
// compiled services it can share with it. A compiled service is a pure
// function of its model.Service, the clusters, and the health and capacity
// of its endpoints; it is shared only when all of these are the same:
//   - the model.Service is the same value (sameService: the same scalars
//     and the same slices and pointers; a desired state is never modified
//     once compiled, see Snapshot.Desired);
//   - the clusters are equal (otherwise nothing is shared);
//   - every endpoint's state, drain and capacity are what the previous
//     compile saw (asked of the Health, or known unchanged from HealthDiff);
//   - it is not a latency service (its RTT table changes on its own).
type reuser struct {
	prev        *Snapshot
	h           Health
	capa        Capacity
	clusters    map[string]*model.Cluster
	byName      map[string]int  // the previous services by name, when positions differ
	changed     map[string]bool // services whose health may differ (with healthKnown)
	healthKnown bool
	shared      int
}

// newReuser returns nil when nothing of prev can be shared.
func newReuser(prev *Snapshot, d *model.Desired, opts Options, clusters map[string]*model.Cluster) *reuser {
	if prev == nil || prev.desired == nil || !reflect.DeepEqual(prev.desired.Clusters, d.Clusters) {
		return nil
	}
	r := &reuser{prev: prev, h: opts.Health, capa: opts.Capacity, clusters: clusters}
	if hd, ok := opts.Health.(HealthDiff); ok && prev.health != nil {
		r.changed, r.healthKnown = hd.ChangedSince(prev.health)
	}
	return r
}

// service returns the previous compiled form of ms (the i-th service of
// the compile), or nil when it must be compiled.
func (r *reuser) service(i int, ms *model.Service) *service {
	if r == nil || ms.Strategy == model.StrategyLatency {
		return nil
	}
	pd := r.prev.desired.Services
	j := i
	if j >= len(pd) || pd[j].Name != ms.Name {
		if r.byName == nil {
			r.byName = make(map[string]int, len(pd))
			for k := range pd {
				r.byName[pd[k].Name] = k
			}
		}
		var ok bool
		if j, ok = r.byName[ms.Name]; !ok {
			return nil
		}
	}
	return r.serviceAt(j, ms)
}

// serviceAt is service with the previous service of the same name known:
// the j-th.
func (r *reuser) serviceAt(j int, ms *model.Service) *service {
	if ms.Strategy == model.StrategyLatency {
		return nil
	}
	pd := r.prev.desired.Services
	if !sameService(ms, &pd[j]) {
		return nil
	}
	svc := r.prev.services[j]
	if !r.healthKnown || r.changed[ms.Name] || ms.Capacity != nil {
		for k := range ms.Endpoints {
			if !sameStatus(endpointStatus(ms, &ms.Endpoints[k], r.clusters, r.h, r.capa), svc.status[k]) {
				return nil
			}
		}
	}
	r.shared++
	return svc
}

// sameService reports whether a and b are the same service value: equal
// scalars, and the same slices and pointers (not equal copies: a copy is
// compiled again). TestSameServiceSeesEveryField keeps it complete.
func sameService(a, b *model.Service) bool {
	return a.Name == b.Name && a.Strategy == b.Strategy && a.TTL == b.TTL && a.MaxAnswers == b.MaxAnswers &&
		a.WhenAllDown == b.WhenAllDown && a.FailOpenTTL == b.FailOpenTTL && a.DoubtTTL == b.DoubtTTL && a.FallbackAnswer == b.FallbackAnswer && a.Sticky == b.Sticky &&
		sameSlice(a.Endpoints, b.Endpoints) && a.HealthCheck == b.HealthCheck && a.Failover == b.Failover &&
		a.Geo == b.Geo && a.Capacity == b.Capacity && a.Latency == b.Latency && a.MinHealthy == b.MinHealthy &&
		a.MinHealthyFrom == b.MinHealthyFrom
}

func sameSlice[T any](a, b []T) bool {
	return len(a) == len(b) && (len(a) == 0 || &a[0] == &b[0])
}

func sameStatus(a, b EndpointStatus) bool {
	if (a.Capacity == nil) != (b.Capacity == nil) || (a.Capacity != nil && *a.Capacity != *b.Capacity) {
		return false
	}
	a.Capacity, b.Capacity = nil, nil
	return a == b
}

// endpointStatus is the effective state of endpoint e of service ms.
func endpointStatus(ms *model.Service, e *model.Endpoint, clusters map[string]*model.Cluster, h Health, capa Capacity) EndpointStatus {
	c := clusters[e.Cluster]
	target := e.Target()
	own := h.Endpoint(ms.Name, target)
	state := own
	clusterOut := c.State == model.StateDown || h.Cluster(c.Name) == Down
	if e.State == model.StateDown || clusterOut {
		state = Down
	}
	forced, drained := e.State == model.StateDown || c.State == model.StateDown, e.Drain || c.Drain
	doubt, returning := false, false
	if dh, ok := h.(DoubtHealth); ok {
		switch {
		case state != Down:
			doubt = dh.Doubt(ms.Name, target)
		case own == Down && !forced && !drained && !clusterOut: // out by its own health, not an operator's or its cluster's
			returning = dh.Doubt(ms.Name, target)
		}
	}
	return EndpointStatus{Target: target, Cluster: e.Cluster, Weight: *e.Weight, State: state, Drained: drained, Forced: forced,
		Capacity: capacityOf(ms, target, capa), Doubt: doubt, Returning: returning}
}

// namesShareable reports whether the zones' owner names can start from
// the previous snapshot's (each zone's name table shared, with the names
// that changed put over it: see shareNames and Snapshot.placeChanges):
// the same zones with the same apex, nameservers and TTLs. Otherwise the
// tables are built from scratch.
func (r *reuser) namesShareable(d *model.Desired) bool {
	if r == nil || len(d.Zones) != len(r.prev.zones) {
		return false
	}
	for i := range d.Zones {
		pz := r.prev.zones[d.Zones[i].Apex]
		if pz == nil || !slices.ContainsFunc(r.prev.desired.Zones, func(z model.Zone) bool { return sameZoneNames(&z, &d.Zones[i]) }) {
			return false
		}
	}
	return true
}

// shareNames sets the name tables of s's zones to follow the previous
// snapshot's (when namesShareable): the previous tables are shared, not
// copied (nameTable.following), and replaceService puts the services
// compiled anew over them.
func (r *reuser) shareNames(s *Snapshot) {
	for apex, z := range s.zones {
		z.names = r.prev.zones[apex].names.following()
	}
}

// sameZoneNames reports whether two zones have the same owner names apart
// from services: compileZone reads only these fields into the name table.
func sameZoneNames(a, b *model.Zone) bool {
	return a.Apex == b.Apex && a.TTL == b.TTL && a.SOA.TTL == b.SOA.TTL && a.NSTTL == b.NSTTL && reflect.DeepEqual(a.Nameservers, b.Nameservers) && reflect.DeepEqual(a.Hosts, b.Hosts)
}

// replaceService puts svc at its name in a name table that follows the
// previous snapshot's (see reuser.shareNames), unless the node there has it.
// The previous node is copied, never modified: the previous snapshot
// still answers from it.
func (z *zone) replaceService(ms *model.Service, svc *service) {
	pn := z.names.get(ms.Name)
	if pn.svc == svc {
		return
	}
	n := *pn
	n.svc = svc
	n.hinfo = hinfo(ms.Name, uint32(ms.TTL))
	z.names.setOver(ms.Name, &n)
}
