package admin

import (
	"slices"
	"strings"

	"github.com/meridian-gslb/meridian/internal/engine"
	"github.com/meridian-gslb/meridian/internal/model"
)

// Applied is the effect of the overrides on one desired state.
type Applied struct {
	Desired *model.Desired    // drains, forced-down states and weights applied
	Notes   map[string]string // engine.NoteKey -> human notes, for explain and the page
	up      map[string]bool   // forced up, by engine.NoteKey
}

// Apply returns a copy of d with the overrides in force: drain sets the
// cluster's or endpoint's drain flag, force-down its administrative state
// down, weight its weight; force-up is applied to health by Health. d is
// not modified.
func Apply(d *model.Desired, ovs []Override) Applied {
	a := Applied{Desired: d, Notes: map[string]string{}, up: map[string]bool{}}
	if len(ovs) == 0 {
		return a
	}
	out := *d
	out.Clusters = slices.Clone(d.Clusters)
	out.Services = slices.Clone(d.Services)
	cloned := map[int]bool{}
	var shifts []Override
	for _, o := range ovs {
		if o.Kind == KindShift {
			shifts = append(shifts, o) // after the weights: a shift splits what they set
			continue
		}
		key := engine.NoteKey(o.Service, o.Endpoint)
		if o.Cluster != "" {
			key = engine.NoteKey("", o.Cluster)
		}
		a.note(key, o)
		if o.Cluster != "" {
			a.applyToCluster(&out, o, key)
			continue
		}
		a.applyToEndpoint(&out, cloned, o, key)
	}
	for _, o := range shifts {
		a.applyShiftOverride(&out, cloned, o)
	}
	a.Desired = &out
	return a
}

// note adds o's description to the notes under key.
func (a *Applied) note(key string, o Override) {
	if n := a.Notes[key]; n != "" {
		a.Notes[key] = n + "; " + o.Describe()
	} else {
		a.Notes[key] = o.Describe()
	}
}

// applyToCluster applies a cluster override to out (key is its note key);
// a cluster that left the config is skipped: the override waits.
func (a *Applied) applyToCluster(out *model.Desired, o Override, key string) {
	i := slices.IndexFunc(out.Clusters, func(c model.Cluster) bool { return c.Name == o.Cluster })
	if i < 0 {
		return // the cluster left the config; the override waits
	}
	switch o.Kind {
	case KindDrain:
		out.Clusters[i].Drain = true
	case KindForceDown:
		out.Clusters[i].State = model.StateDown
	case KindForceUp:
		a.up[key] = true
	}
}

// applyToEndpoint applies an endpoint override to out (key is its note
// key); a service that left the config is skipped.
func (a *Applied) applyToEndpoint(out *model.Desired, cloned map[int]bool, o Override, key string) {
	si := slices.IndexFunc(out.Services, func(s model.Service) bool { return s.Name == o.Service })
	if si < 0 {
		return
	}
	eps := ownEndpoints(out, cloned, si)
	for j := range eps {
		if eps[j].Address+eps[j].CNAME != o.Endpoint {
			continue
		}
		switch o.Kind {
		case KindDrain:
			eps[j].Drain = true
		case KindForceDown:
			eps[j].State = model.StateDown
		case KindForceUp:
			a.up[key] = true
		case KindWeight:
			w := *o.Weight
			eps[j].Weight = &w
		}
	}
}

// applyShiftOverride applies a traffic shift to its service's weights in
// out and notes it on every endpoint of the service; a service that left
// the config is skipped: the shift waits.
func (a *Applied) applyShiftOverride(out *model.Desired, cloned map[int]bool, o Override) {
	si := slices.IndexFunc(out.Services, func(s model.Service) bool { return s.Name == o.Service })
	if si < 0 || o.Shift == nil {
		return // the service left the config; the shift waits
	}
	eps := ownEndpoints(out, cloned, si)
	applyShift(eps, o.Shift.Spec.To, o.Shift.Percent())
	for _, e := range eps {
		a.note(engine.NoteKey(o.Service, e.Address+e.CNAME), o)
	}
}

// ownEndpoints returns service si's endpoints in out, copied the first time
// (cloned records which): the caller's desired state is never modified.
func ownEndpoints(out *model.Desired, cloned map[int]bool, si int) []model.Endpoint {
	if !cloned[si] {
		out.Services[si].Endpoints = slices.Clone(out.Services[si].Endpoints)
		cloned[si] = true
	}
	return out.Services[si].Endpoints
}

// Health wraps the observed health: forced-up endpoints and clusters are Up
// whatever the votes say.
func (a Applied) Health(inner engine.Health) engine.Health {
	if len(a.up) == 0 {
		return inner
	}
	return forced{inner: inner, up: a.up}
}

type forced struct {
	inner engine.Health
	up    map[string]bool
}

func (f forced) Endpoint(service, target string) engine.State {
	if f.up[engine.NoteKey(service, target)] {
		return engine.Up
	}
	return f.inner.Endpoint(service, target)
}

// Doubt implements engine.DoubtHealth: a forced-up endpoint is settled;
// otherwise what the inner health says.
func (f forced) Doubt(service, target string) bool {
	if f.up[engine.NoteKey(service, target)] {
		return false
	}
	dh, ok := f.inner.(engine.DoubtHealth)
	return ok && dh.Doubt(service, target)
}

func (f forced) Cluster(name string) engine.State {
	if f.up[engine.NoteKey("", name)] {
		return engine.Up
	}
	return f.inner.Cluster(name)
}

// ChangedSince implements engine.HealthDiff: what the inner health says
// changed, plus the services whose forced-up endpoints differ from prev's.
// A forced-up cluster that differs, or an inner health that cannot tell,
// gives ok false.
func (f forced) ChangedSince(prev engine.Health) (map[string]bool, bool) {
	prevInner, prevUp := prev, map[string]bool(nil)
	if p, ok := prev.(forced); ok {
		prevInner, prevUp = p.inner, p.up
	}
	hd, ok := f.inner.(engine.HealthDiff)
	if !ok {
		return nil, false
	}
	inner, ok := hd.ChangedSince(prevInner)
	if !ok {
		return nil, false
	}
	changed := map[string]bool{}
	for s := range inner {
		changed[s] = true
	}
	for _, pair := range [2][2]map[string]bool{{f.up, prevUp}, {prevUp, f.up}} {
		for key := range pair[0] {
			if pair[1][key] {
				continue
			}
			service, _, _ := strings.Cut(key, " ")
			if service == "cluster" || service == "" {
				return nil, false // a cluster's forced-up state changed (engine.NoteKey("", name))
			}
			changed[service] = true
		}
	}
	return changed, true
}

var _ engine.HealthDiff = forced{}
