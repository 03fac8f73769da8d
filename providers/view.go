package providers

import (
	"net/netip"
	"slices"

	"github.com/meridian-gslb/meridian/internal/engine"
	"github.com/meridian-gslb/meridian/internal/model"
)

// ServiceView is a service as providers publish it: every endpoint with the
// weight it should carry now.
type ServiceView struct {
	Name      string // canonical FQDN
	Strategy  string
	TTL       uint32
	FailOpen  bool           // nothing is available: endpoints carry their configured weights
	Endpoints []EndpointView // config order
	Geo       *model.GeoPolicy
	Failover  [][]int // failover groups in order, as indexes into Endpoints (failover only)
	// HealthCheck is the service's health_check with its defaults filled
	// (nil: not probed), for the providers' own checks (backstop).
	HealthCheck *model.Check
	// Networks are geo.networks, the custom client map (geo services only;
	// nil otherwise), for the providers' IP-based routing.
	Networks []model.GeoNetwork
	// Sticky is services[].sticky: subnet. No provider record can express
	// it: a direct-mode zone gets a warning (StickyWarning).
	Sticky bool
}

// EndpointView is one endpoint of a ServiceView.
type EndpointView struct {
	Target    string // canonical IP or CNAME target
	Type      string // A, AAAA or CNAME
	Cluster   string
	Country   string // cluster tags, for geolocation
	Continent string
	Region    string
	Weight    int  // configured, 0..1000
	Available bool // decided up (or unknown), not drained, cluster not down
	// Ready is the ready percent (0..100) a capacity-aware service draws
	// the weight with (services[].capacity); 100 for other services.
	Ready int
	// Effective is the weight this endpoint should carry now: its configured
	// weight when available (weight-0 standbys get 1 only when no weighted
	// endpoint is available), 0 when not; with FailOpen, the configured
	// weight of every endpoint that is not drained or forced down. For a capacity-aware service it
	// is the configured weight × Ready (so 100 times larger: shares are what
	// counts), and an endpoint at 0 % ready is a standby like a weight-0 one.
	Effective int
	// CloudRegion is the cluster's AWS region (cloud_region, or region when
	// that is an AWS region code; "" otherwise), for Route 53 latency sets.
	CloudRegion string
}

// Services builds the views of every service of d under health h (nil:
// everything unknown, i.e. up), with the configured weights.
func Services(d *model.Desired, h engine.Health) []ServiceView {
	return ServicesWithCapacity(d, h, nil)
}

// ServicesWithCapacity is Services with the ready fractions of the
// capacity-aware services (c nil: every endpoint at 100 %), the same ones
// the engine answers with.
func ServicesWithCapacity(d *model.Desired, h engine.Health, capa engine.Capacity) []ServiceView {
	if h == nil {
		h = engine.NoHealth{}
	}
	if capa == nil {
		capa = engine.NoCapacity{}
	}
	clusters := map[string]model.Cluster{}
	for _, c := range d.Clusters {
		clusters[c.Name] = c
	}
	out := make([]ServiceView, 0, len(d.Services))
	for _, s := range d.Services {
		v := ServiceView{Name: s.Name, Strategy: s.Strategy, TTL: uint32(s.TTL), Geo: s.Geo, HealthCheck: s.HealthCheck,
			Sticky: s.Sticky == model.StickySubnet}
		if s.Strategy == model.StrategyGeo {
			v.Networks = d.Geo.Networks
		}
		for _, e := range s.Endpoints {
			cl := clusters[e.Cluster]
			ev := EndpointView{Target: e.Address, Cluster: e.Cluster, Country: cl.Country, Continent: cl.Continent, Region: cl.Region, Weight: *e.Weight, Ready: 100,
				CloudRegion: cl.AWSRegion()}
			switch {
			case e.CNAME != "":
				ev.Target, ev.Type = e.CNAME, "CNAME"
			case netip.MustParseAddr(e.Address).Is4():
				ev.Type = "A"
			default:
				ev.Type = "AAAA"
			}
			down := e.State == model.StateDown || cl.State == model.StateDown ||
				h.Endpoint(s.Name, ev.Target) == engine.Down || h.Cluster(cl.Name) == engine.Down
			ev.Available = !down && !e.Drain && !cl.Drain
			if s.Strategy == model.StrategyRoundRobin {
				ev.Weight = 1
			}
			if scaled(s) {
				if st, ok := capa.Endpoint(s.Name, ev.Target); ok {
					ev.Ready = min(max(st.Percent, 0), 100)
				}
			}
			v.Endpoints = append(v.Endpoints, ev)
		}
		effective(&v, s, clusters)
		if s.Strategy == model.StrategyFailover {
			v.Failover = failoverGroups(s, v)
		}
		out = append(out, v)
	}
	return out
}

// effective fills Effective per address family / CNAME, with the engine's
// rules: weighted endpoints first, weight-0 standbys when none is
// available, fail-open (configured weights, drained and forced-down ones
// out) when nothing is.
func effective(v *ServiceView, s model.Service, clusters map[string]model.Cluster) {
	for _, typ := range []string{"A", "AAAA", "CNAME"} {
		var idx []int
		for i, e := range v.Endpoints {
			if e.Type == typ {
				idx = append(idx, i)
			}
		}
		if len(idx) == 0 {
			continue
		}
		any := false
		for _, i := range idx {
			e := &v.Endpoints[i]
			w := e.Weight
			if scaled(s) {
				w *= e.Ready // configured × ready percent, as the engine draws
			}
			if e.Available && w > 0 {
				e.Effective, any = w, true
			}
		}
		if any {
			continue
		}
		for _, i := range idx {
			if e := &v.Endpoints[i]; e.Available {
				e.Effective, any = 1, true
			}
		}
		if any {
			continue
		}
		v.FailOpen = true
		for _, i := range idx {
			e := &v.Endpoints[i]
			me := s.Endpoints[i]
			c := clusters[me.Cluster]
			if !me.Drain && !c.Drain && me.State != model.StateDown && c.State != model.StateDown { // never an operator's "not this one"
				e.Effective = max(e.Weight, 1)
			}
		}
	}
}

// scaled reports whether the engine draws s's endpoints with configured
// weight × ready percent (a capacity-aware service).
func scaled(s model.Service) bool {
	return s.Capacity != nil && s.Strategy != model.StrategyRoundRobin
}

func failoverGroups(s model.Service, v ServiceView) [][]int {
	var groups [][]int
	if s.Failover != nil && len(s.Failover.Order) > 0 {
		for _, c := range s.Failover.Order {
			var g []int
			for i, e := range v.Endpoints {
				if e.Cluster == c {
					g = append(g, i)
				}
			}
			groups = append(groups, g)
		}
		return groups
	}
	var prios []int
	for _, e := range s.Endpoints {
		if !slices.Contains(prios, *e.Priority) {
			prios = append(prios, *e.Priority)
		}
	}
	slices.Sort(prios)
	for _, p := range prios {
		var g []int
		for i, e := range s.Endpoints {
			if *e.Priority == p {
				g = append(g, i)
			}
		}
		groups = append(groups, g)
	}
	return groups
}

// ActiveGroups returns the failover groups that have an available endpoint,
// in order (the first answers now, the next takes over after it).
func (v ServiceView) ActiveGroups() [][]int {
	var out [][]int
	for _, g := range v.Failover {
		for _, i := range g {
			if v.Endpoints[i].Available {
				out = append(out, g)
				break
			}
		}
	}
	return out
}
