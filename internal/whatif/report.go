package whatif

import (
	"cmp"
	"context"
	"math"
	"net/netip"
	"slices"

	"github.com/miekg/dns"

	"github.com/meridian-gslb/meridian/internal/engine"
	"github.com/meridian-gslb/meridian/internal/geo"
	"github.com/meridian-gslb/meridian/internal/model"
)

// Report is what a simulation would change.
type Report struct {
	Changes  []string        `json:"changes"`
	Services []ServiceReport `json:"services"`  // the services whose answers or shares change, in config order
	Same     int             `json:"unchanged"` // services left as they are
}

// ServiceReport is one affected service.
type ServiceReport struct {
	Service  string        `json:"service"`
	Strategy string        `json:"strategy"`
	Places   []PlaceReport `json:"places"` // one ("everywhere") unless the service is geo
	Load     []ClusterLoad `json:"load"`
}

// PlaceReport is what clients at one place get before and after.
type PlaceReport struct {
	Place          string   `json:"place"` // "everywhere", "default" (unlocated), "region X", "country X", "continent X"
	Before         []Share  `json:"before"`
	After          []Share  `json:"after"`
	AnswerBefore   []string `json:"answer_before"`
	AnswerAfter    []string `json:"answer_after"`
	FailOpenBefore bool     `json:"fail_open_before"`
	FailOpenAfter  bool     `json:"fail_open_after"`
}

// Share is the percent of a place's answers that go to one cluster.
type Share struct {
	Cluster string  `json:"cluster"`
	Percent float64 `json:"percent"`
}

// ClusterLoad is the load a cluster would get from one service.
type ClusterLoad struct {
	Cluster string  `json:"cluster"`
	Before  float64 `json:"before"` // percent of the service's answers (places weighted equally)
	After   float64 `json:"after"`
	// Ready is the cluster's ready fraction in percent (mean over its
	// endpoints) for a capacity-aware service; nil when not known.
	Ready *float64 `json:"ready,omitempty"`
	// ReadyShare is the cluster's percent of the service's ready capacity
	// now: its healthy endpoints' effective weights (weight × ready
	// fraction) over those of every healthy endpoint.
	ReadyShare float64 `json:"ready_share"`
	// VsReady is After / ReadyShare: 1 = traffic in proportion to its ready
	// capacity, 2 = twice its part. 0 when it has no ready capacity.
	VsReady float64 `json:"vs_ready"`
}

// place is one client location a service is compared at.
type place struct {
	name string
	loc  *geo.Location // nil: an unlocated client
}

// places lists where a service's answers may differ: everywhere for a
// non-geo service; for a geo service the unlocated default, every place
// its rules name and every place its clusters are tagged with.
func places(ms *model.Service, d *model.Desired) []place {
	if ms.Strategy != model.StrategyGeo {
		return []place{{name: "everywhere"}}
	}
	out := []place{{name: "default"}}
	seen := map[string]bool{}
	add := func(kind, v string, loc geo.Location) {
		if v == "" || seen[kind+" "+v] {
			return
		}
		seen[kind+" "+v] = true
		out = append(out, place{name: kind + " " + v, loc: &loc})
	}
	if ms.Geo != nil {
		for _, r := range ms.Geo.Rules {
			for _, v := range r.Regions {
				add("region", v, geo.Location{Region: v})
			}
			for _, v := range r.Countries {
				add("country", v, geo.Location{Country: v})
			}
			for _, v := range r.Continents {
				add("continent", v, geo.Location{Continent: v})
			}
		}
	}
	used := map[string]bool{}
	for _, e := range ms.Endpoints {
		used[e.Cluster] = true
	}
	for _, c := range d.Clusters {
		if used[c.Name] {
			add("region", c.Region, geo.Location{Region: c.Region})
			add("country", c.Country, geo.Location{Country: c.Country})
			add("continent", c.Continent, geo.Location{Continent: c.Continent})
		}
	}
	return out
}

// family is the record type a target is answered with.
func family(target string) uint16 {
	a, err := netip.ParseAddr(target)
	switch {
	case err != nil:
		return dns.TypeCNAME
	case a.Is6():
		return dns.TypeAAAA
	}
	return dns.TypeA
}

// qtype is the record type a service answers first: A, AAAA or CNAME.
func qtype(ms *model.Service) uint16 {
	if len(ms.Endpoints) == 0 {
		return dns.TypeA
	}
	return family(ms.Endpoints[0].Address + ms.Endpoints[0].CNAME)
}

func explain(s *engine.Snapshot, name string, t uint16, p place) engine.Explanation {
	if p.loc == nil {
		return s.Explain(name, t, engine.Client{}, false)
	}
	return s.ExplainPlace(name, t, *p.loc)
}

// byCluster sums an explanation's candidate shares per cluster, in
// cluster name order.
func byCluster(e engine.Explanation) []Share {
	sum := map[string]float64{}
	for _, c := range e.Candidates {
		if c.Share > 0 {
			sum[c.Cluster] += c.Share
		}
	}
	out := make([]Share, 0, len(sum))
	for c, p := range sum {
		out = append(out, Share{Cluster: c, Percent: round1(p)})
	}
	slices.SortFunc(out, func(a, b Share) int { return cmp.Compare(a.Cluster, b.Cluster) })
	return out
}

func round1(f float64) float64 { return math.Round(f*10) / 10 }

// Compare reports every service whose answers or shares differ between
// before (what is served) and after (the same inputs with the simulated
// overrides), with the load each cluster would get relative to its ready
// capacity. Both snapshots must come from the same desired state's
// services (after only adds overrides). It stops with ctx's error between
// services when ctx is done (the client went away).
func Compare(ctx context.Context, before, after *engine.Snapshot, changes []Change) (Report, error) {
	r := Report{Services: []ServiceReport{}}
	for _, c := range changes {
		r.Changes = append(r.Changes, c.String())
	}
	d := before.Desired()
	status := map[string]engine.ServiceStatus{}
	for _, s := range before.Services() {
		status[s.Name] = s
	}
	for i := range d.Services {
		if err := ctx.Err(); err != nil {
			return Report{}, err
		}
		ms := &d.Services[i]
		t := qtype(ms)
		sr := ServiceReport{Service: ms.Name, Strategy: ms.Strategy}
		changed := false
		for _, p := range places(ms, d) {
			eb, ea := explain(before, ms.Name, t, p), explain(after, ms.Name, t, p)
			pr := PlaceReport{Place: p.name, Before: byCluster(eb), After: byCluster(ea),
				AnswerBefore: eb.Answer, AnswerAfter: ea.Answer, FailOpenBefore: eb.FailOpen, FailOpenAfter: ea.FailOpen}
			if !slices.Equal(pr.Before, pr.After) || !slices.Equal(pr.AnswerBefore, pr.AnswerAfter) || pr.FailOpenBefore != pr.FailOpenAfter {
				changed = true
			}
			sr.Places = append(sr.Places, pr)
		}
		if !changed {
			r.Same++
			continue
		}
		sr.Load = load(sr.Places, status[ms.Name], t)
		r.Services = append(r.Services, sr)
	}
	return r, nil
}

// load averages each cluster's share over the places (no query rates are
// known: places count equally) and sets it against the cluster's part of
// the service's ready capacity now.
func load(ps []PlaceReport, st engine.ServiceStatus, t uint16) []ClusterLoad {
	type acc struct {
		before, after, eff, ready float64
		n                         int
	}
	by := map[string]*acc{}
	get := func(c string) *acc {
		if by[c] == nil {
			by[c] = &acc{}
		}
		return by[c]
	}
	var total float64
	for _, e := range st.Endpoints {
		if family(e.Target) != t {
			continue // the other family's pool: not the answers compared
		}
		a := get(e.Cluster)
		if e.Capacity != nil {
			a.ready += float64(e.Capacity.Percent)
			a.n++
		}
		if e.State != engine.Down && !e.Drained {
			a.eff += e.EffectiveWeight()
			total += e.EffectiveWeight()
		}
	}
	for _, p := range ps {
		for _, s := range p.Before {
			get(s.Cluster).before += s.Percent / float64(len(ps))
		}
		for _, s := range p.After {
			get(s.Cluster).after += s.Percent / float64(len(ps))
		}
	}
	out := make([]ClusterLoad, 0, len(by))
	for c, a := range by {
		cl := ClusterLoad{Cluster: c, Before: round1(a.before), After: round1(a.after)}
		if a.n > 0 {
			r := round1(a.ready / float64(a.n))
			cl.Ready = &r
		}
		if total > 0 {
			cl.ReadyShare = round1(100 * a.eff / total)
		}
		if a.eff > 0 && total > 0 {
			cl.VsReady = math.Round(100*a.after/(100*a.eff/total)) / 100
		}
		out = append(out, cl)
	}
	slices.SortFunc(out, func(a, b ClusterLoad) int { return cmp.Compare(a.Cluster, b.Cluster) })
	return out
}
