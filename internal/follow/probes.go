package follow

import (
	"maps"
	"net/netip"
	"slices"
	"sync"

	"github.com/meridian-gslb/meridian/internal/health"
	"github.com/meridian-gslb/meridian/internal/model"
	"github.com/meridian-gslb/meridian/internal/vote"
)

// Probes is the probing view of the effective desired state: what
// Subjects, LatencySubjects and Targets give, kept from one state to the
// next so that a change costs what changed, not the whole list (a
// Kubernetes change touches one service of maybe 100 000).
//
// A service is looked at again only when its probing-relevant parts are not
// the same values as at the last Update: its name, whether it is a latency
// service, its endpoints (the same slice: a desired state is never modified
// once published, and the pipeline keeps the values of unchanged services,
// see model.ShareUnchanged and Kube.mergeServices) and its health check
// (the same pointer). A copy of an unchanged service is only looked at
// again: the view is the same either way.
//
// Update is called by one goroutine at a time; the lookups may run at any
// time, from any goroutine.
type Probes struct {
	upd  sync.Mutex // one Update at a time; guards keys and clusters
	keys []probeKey // per service of the last Update, in its order
	// clusters are the cluster names of the last Update.
	clusters []string

	mu       sync.RWMutex
	known    map[vote.Subject]bool          // Subjects
	measured map[vote.Subject]bool          // LatencySubjects
	targets  map[vote.Subject]health.Target // the endpoint part of Targets
}

// probeKey is what Probes keeps of a service: the parts its subjects and
// targets are made of.
type probeKey struct {
	name    string
	latency bool
	eps     []model.Endpoint
	check   *model.Check
}

func keyOf(s *model.Service) probeKey {
	return probeKey{name: s.Name, latency: s.Strategy == model.StrategyLatency, eps: s.Endpoints, check: s.HealthCheck}
}

// same reports whether k and o are the same values (not equal copies).
func (k probeKey) same(o probeKey) bool {
	return k.name == o.name && k.latency == o.latency && k.check == o.check &&
		len(k.eps) == len(o.eps) && (len(k.eps) == 0 || &k.eps[0] == &o.eps[0])
}

func (k probeKey) probed() bool { return k.check != nil && k.check.Kind != model.CheckNone }

// ProbeChange is what an Update changed.
type ProbeChange struct {
	// Removed are the subjects known before and not after: votes, RTTs and
	// results about them are to be forgotten.
	Removed []vote.Subject
	// TargetsChanged is true when Targets differs from the last Update's
	// (a target added, removed, or with another address or check).
	TargetsChanged bool
	// Untargeted are the subjects that had a target and have none now;
	// Retargeted are the targets that are new or differ from the last
	// Update's (health.Prober.ChangeTargets takes both).
	Untargeted []vote.Subject
	Retargeted []health.Target
	// Services is how many services were looked at again (added, removed
	// or changed).
	Services int
}

// Update makes the view that of d.
func (p *Probes) Update(d *model.Desired) ProbeChange {
	p.upd.Lock()
	defer p.upd.Unlock()
	gone, came := p.diff(d)
	clusters := make([]string, len(d.Clusters))
	for i := range d.Clusters {
		clusters[i] = d.Clusters[i].Name
	}
	sameClusters := slices.Equal(clusters, p.clusters)

	p.mu.Lock()
	defer p.mu.Unlock()
	if p.known == nil {
		p.known, p.measured, p.targets = map[vote.Subject]bool{}, map[vote.Subject]bool{}, map[vote.Subject]health.Target{}
	}
	var ch ProbeChange
	ch.Services = max(len(gone), len(came))
	touched := map[vote.Subject]health.Target{} // the touched subjects' targets before
	var candidates []vote.Subject
	for _, k := range gone {
		for _, e := range k.eps {
			if e.Address == "" {
				continue
			}
			s := vote.EndpointSubject(k.name, e.Address)
			if t, ok := p.targets[s]; ok {
				touched[s] = t
			} else if _, seen := touched[s]; !seen {
				touched[s] = health.Target{}
			}
			if p.known[s] {
				candidates = append(candidates, s)
			}
			delete(p.known, s)
			delete(p.measured, s)
			delete(p.targets, s)
		}
	}
	if !sameClusters {
		for _, c := range p.clusters {
			s := vote.ClusterSubject(c)
			candidates = append(candidates, s)
			delete(p.known, s)
		}
		for _, c := range clusters {
			p.known[vote.ClusterSubject(c)] = true
		}
		p.clusters = clusters
	}
	for _, k := range came {
		for _, e := range k.eps {
			if e.Address == "" {
				continue
			}
			s := vote.EndpointSubject(k.name, e.Address)
			if _, seen := touched[s]; !seen {
				touched[s] = health.Target{}
			}
			p.known[s] = true
			if k.latency {
				p.measured[s] = true
			}
			if k.probed() {
				if _, dup := p.targets[s]; !dup { // the first, as the prober keeps it
					p.targets[s] = health.Target{Subject: s, Addr: netip.MustParseAddr(e.Address), Check: k.check}
				}
			}
		}
	}
	for _, s := range candidates {
		if !p.known[s] && !slices.Contains(ch.Removed, s) {
			ch.Removed = append(ch.Removed, s)
		}
	}
	for s, before := range touched {
		after, ok := p.targets[s]
		switch {
		case before.Subject == after.Subject && before.Addr == after.Addr && before.Check == after.Check:
		case !ok:
			ch.Untargeted = append(ch.Untargeted, s)
		default:
			ch.Retargeted = append(ch.Retargeted, after)
		}
	}
	ch.TargetsChanged = len(ch.Untargeted) > 0 || len(ch.Retargeted) > 0
	return ch
}

// diff compares d's services with the last Update's and keeps d's keys:
// gone are the keys of the services removed or changed, came those of the
// services added or changed. It costs one comparison per service when the
// names are where they were, one map of the previous names otherwise (a
// service added or removed in the middle).
func (p *Probes) diff(d *model.Desired) (gone, came []probeKey) {
	svcs := d.Services
	if len(svcs) == len(p.keys) {
		aligned := true
		for i := range svcs {
			if svcs[i].Name != p.keys[i].name {
				aligned = false
				break
			}
		}
		if aligned {
			for i := range svcs {
				k := keyOf(&svcs[i])
				if !k.same(p.keys[i]) {
					gone, came = append(gone, p.keys[i]), append(came, k)
					p.keys[i] = k
				}
			}
			return gone, came
		}
	}
	byName := make(map[string]int, len(p.keys))
	for j := range p.keys {
		if _, dup := byName[p.keys[j].name]; !dup {
			byName[p.keys[j].name] = j
		}
	}
	used := make([]bool, len(p.keys))
	next := make([]probeKey, len(svcs))
	for i := range svcs {
		k := keyOf(&svcs[i])
		next[i] = k
		j, ok := byName[k.name]
		if ok && !used[j] {
			used[j] = true
			if k.same(p.keys[j]) {
				continue
			}
			gone = append(gone, p.keys[j])
		}
		came = append(came, k)
	}
	for j, u := range used {
		if !u {
			gone = append(gone, p.keys[j])
		}
	}
	p.keys = next
	return gone, came
}

// Known reports whether s is a subject of the view (Subjects).
func (p *Probes) Known(s vote.Subject) bool {
	p.mu.RLock()
	defer p.mu.RUnlock()
	return p.known[s]
}

// Measured reports whether s is an endpoint of a latency service
// (LatencySubjects).
func (p *Probes) Measured(s vote.Subject) bool {
	p.mu.RLock()
	defer p.mu.RUnlock()
	return p.measured[s]
}

// AnyMeasured reports whether the view has a latency service endpoint.
func (p *Probes) AnyMeasured() bool {
	p.mu.RLock()
	defer p.mu.RUnlock()
	return len(p.measured) > 0
}

// Targets lists the endpoint targets of the view (the first part of
// Targets), in no particular order. It costs the whole list: call it when
// ProbeChange.TargetsChanged.
func (p *Probes) Targets() []health.Target {
	p.mu.RLock()
	defer p.mu.RUnlock()
	return slices.Collect(maps.Values(p.targets))
}
