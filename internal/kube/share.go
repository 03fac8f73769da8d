package kube

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/meridian-gslb/meridian/internal/model"
)

// EndpointView is one endpoint of a served service as decided now.
type EndpointView struct {
	Cluster   string
	Target    string // address or CNAME target
	Weight    int
	State     string // up, down or unknown (decided health)
	Drained   bool
	Forced    bool      // forced down by an operator or the config: never answered, not even by fail-open
	Since     time.Time // last decided change
	Reason    string    // why
	Available bool      // in the answers: not down and not drained
}

// ServiceView is a served service as decided now.
type ServiceView struct {
	Strategy  string
	Order     []string // failover order
	Endpoints []EndpointView
}

// Statuses computes each object's meridian.io/status (without its own
// annotation errors, which the member adds) from the build result and the
// decided state of the served services. It is pure.
func Statuses(objs []Object, r Result, view func(name string) (ServiceView, bool)) map[ObjectRef]Status {
	out := map[ObjectRef]Status{}
	for _, o := range objs {
		hosts := r.hostnamesOf(o) // after the hostname limits
		st := Status{Hostnames: slices.Clone(hosts)}
		if !o.Valid {
			out[o.Ref] = st
			continue
		}
		if o.NameTargets != nil && len(hosts) == 0 && len(r.Problems[o.Ref]) == 0 {
			continue // another DNS provider's names only: nothing to report
		}
		var shares, healths []string
		for _, name := range hosts {
			if r.refused(o.Ref, name) {
				continue // the refusal is among the object's problems
			}
			if why, dropped := r.Dropped[name]; dropped {
				if !slices.Contains(r.Problems[o.Ref], why) {
					st.Problems = append(st.Problems, why)
				}
				continue
			}
			sv, ok := view(name)
			if !ok {
				continue
			}
			st.Strategy = sv.Strategy
			mine := ownEndpoints(sv.Endpoints, o, name)
			share, served := shareOf(sv, mine)
			st.Served = st.Served || served
			prefix := ""
			if len(hosts) > 1 {
				prefix = strings.TrimSuffix(name, ".") + ": "
			}
			shares = append(shares, prefix+share)
			healths = append(healths, prefix+healthOf(mine))
			for _, e := range mine {
				if !e.Since.IsZero() && (st.LastChange == nil || e.Since.After(*st.LastChange)) {
					t := e.Since.UTC()
					st.LastChange, st.Reason = &t, e.Reason
				}
			}
		}
		st.Share, st.Health = strings.Join(shares, ", "), strings.Join(healths, ", ")
		out[o.Ref] = st
	}
	return out
}

func ownEndpoints(all []EndpointView, o Object, name string) []EndpointView {
	var mine []EndpointView
	for _, e := range all {
		if e.Cluster != o.Ref.Cluster {
			continue
		}
		for _, t := range o.targetsOf(name) {
			if model.CanonicalName(t) == e.Target || t == e.Target {
				mine = append(mine, e)
				break
			}
		}
	}
	return mine
}

func healthOf(mine []EndpointView) string {
	counts := map[string]int{}
	drained := 0
	for _, e := range mine {
		counts[e.State]++
		if e.Drained {
			drained++
		}
	}
	var parts []string
	for _, st := range []string{"up", "down", "unknown"} {
		if n := counts[st]; n > 0 {
			label := st
			if st == "unknown" {
				label = "not probed (no health-check)"
			}
			parts = append(parts, fmt.Sprintf("%d %s", n, label))
		}
	}
	if drained > 0 {
		parts = append(parts, fmt.Sprintf("%d drained", drained))
	}
	if len(parts) == 0 {
		return "no endpoints"
	}
	return strings.Join(parts, ", ")
}

// shareOf is the share of the answers that go to mine now.
func shareOf(sv ServiceView, mine []EndpointView) (string, bool) {
	if len(mine) == 0 {
		return "0%", false
	}
	if sv.Strategy == model.StrategyGeo || sv.Strategy == model.StrategyLatency {
		for _, e := range mine {
			if e.Available {
				return "by location", true
			}
		}
		return "0%", false
	}
	pool := available(sv.Endpoints)
	if len(pool) == 0 { // fail-open: everything not drained or forced down answers
		pool = slices.DeleteFunc(slices.Clone(sv.Endpoints), func(e EndpointView) bool { return e.Drained || e.Forced })
	}
	if sv.Strategy == model.StrategyFailover {
		active := ""
		for _, c := range sv.Order {
			if slices.ContainsFunc(pool, func(e EndpointView) bool { return e.Cluster == c }) {
				active = c
				break
			}
		}
		pool = slices.DeleteFunc(pool, func(e EndpointView) bool { return e.Cluster != active })
	}
	weight := func(e EndpointView) int {
		if sv.Strategy == model.StrategyRoundRobin {
			return 1
		}
		return e.Weight
	}
	total, own := 0, 0
	for _, e := range pool {
		total += weight(e)
		if slices.ContainsFunc(mine, func(m EndpointView) bool { return m.Target == e.Target && m.Cluster == e.Cluster }) {
			own += weight(e)
		}
	}
	if total == 0 {
		return "0%", false
	}
	pct := float64(own) * 100 / float64(total)
	return fmt.Sprintf("%.0f%%", pct), own > 0
}

func available(es []EndpointView) []EndpointView {
	var out []EndpointView
	for _, e := range es {
		if e.Available {
			out = append(out, e)
		}
	}
	return out
}
