package engine

import (
	"math"
	"slices"
	"strings"

	"github.com/miekg/dns"
)

// Family names of ShareFamily.
const (
	FamilyA     = "A"
	FamilyAAAA  = "AAAA"
	FamilyCNAME = "CNAME"
)

// ClientShares is what a service answers, read from the pools the query
// path draws from: one group of clients for most services, one per geo or
// latency bucket for services that answer by where the client is.
type ClientShares struct {
	Service string
	Groups  []ClientGroup
}

// ClientGroup is a set of clients that get the same answers.
type ClientGroup struct {
	// Locations that land in this group, in the order the engine matches
	// them (a client's region, then country, then continent; rules before
	// the clusters' own tags). Empty for a service that does not answer by
	// location.
	Regions, Countries, Continents []string
	// Unlocated: clients that cannot be located, and located clients no
	// location above matches, get these answers (the default bucket; for
	// latency services every prober region's median RTT).
	Unlocated bool
	Families  []ShareFamily
}

// Label says in words which clients the group is.
func (g ClientGroup) Label() string {
	var parts []string
	for _, p := range [...]struct {
		one, many string
		list      []string
	}{{"region", "regions", g.Regions}, {"country", "countries", g.Countries}, {"continent", "continents", g.Continents}} {
		switch len(p.list) {
		case 0:
		case 1:
			parts = append(parts, p.one+" "+p.list[0])
		default:
			parts = append(parts, p.many+" "+strings.Join(p.list, ", "))
		}
	}
	located := strings.Join(parts, "; ")
	switch {
	case !g.Unlocated && located == "":
		return "every client"
	case !g.Unlocated:
		return "clients in " + located
	case located == "":
		return "clients we cannot locate (and any location without a rule)"
	default:
		return "clients we cannot locate (and any location without a rule); clients in " + located
	}
}

// ShareFamily is the answer of one address family for a group of clients.
// No shares means the family answers nothing (NODATA).
type ShareFamily struct {
	Family   string // FamilyA, FamilyAAAA or FamilyCNAME
	FailOpen bool   // every candidate is down: the answer fails open
	Shares   []TargetShare
}

// TargetShare is the percent (0..100, one decimal) of a family's answers
// whose first record is Target (its weight over the pool's total weight).
type TargetShare struct {
	Target string
	Share  float64
}

// ServiceShares returns the answers of the service with the canonical
// name, per group of clients and address family, ok false when the
// snapshot has no such service. Shares are drawn from the compiled pools,
// so they are the shares lookups give.
func (s *Snapshot) ServiceShares(name string) (ClientShares, bool) {
	z := s.zoneFor(name)
	if z == nil {
		return ClientShares{}, false
	}
	n := z.names.get(name)
	if n == nil || n.svc == nil {
		return ClientShares{}, false
	}
	return n.svc.shares(), true
}

func (svc *service) shares() ClientShares {
	out := ClientShares{Service: svc.name}
	fams := [...]struct {
		name  string
		pools []*pool
	}{{FamilyA, svc.v4}, {FamilyAAAA, svc.v6}, {FamilyCNAME, svc.cn}}
	buckets := 1
	for _, f := range fams {
		buckets = max(buckets, len(f.pools))
	}
	groups := make([]ClientGroup, buckets)
	switch {
	case svc.geo != nil:
		svc.geo.label(groups)
	case svc.lat != nil:
		svc.lat.label(groups)
	}
	for b := range groups {
		for _, f := range fams {
			if f.pools == nil {
				continue // the service has no endpoint of this family
			}
			sf := ShareFamily{Family: f.name}
			if b < len(f.pools) && f.pools[b] != nil {
				p := f.pools[b]
				sf.FailOpen = p.failOpen
				total := float64(p.total())
				for i, rr := range p.rrs {
					share := 0.0
					if total > 0 {
						share = math.Round(1000*float64(p.weights[i])/total) / 10
					}
					sf.Shares = append(sf.Shares, TargetShare{Target: svc.targetOf(rr), Share: share})
				}
			}
			groups[b].Families = append(groups[b].Families, sf)
		}
	}
	// Groups no client can land in (a bucket whose every location another
	// one shadows) are left out.
	out.Groups = slices.DeleteFunc(groups, func(g ClientGroup) bool {
		return (svc.geo != nil || svc.lat != nil) && !g.Unlocated && len(g.Regions)+len(g.Countries)+len(g.Continents) == 0
	})
	return out
}

// targetOf is the endpoint target a pool record answers.
func (svc *service) targetOf(rr dns.RR) string {
	for _, st := range svc.status {
		if rrTarget(rr, st.Target) {
			return st.Target
		}
	}
	return rrTargetString(rr)
}

// label names the clients of each geo bucket: the keys of the index's maps
// that point at it, the rules' before the tags' (a tag key a rule of the
// same kind also names is never reached). The default bucket also takes
// the clients that cannot be located.
func (g *geoIndex) label(groups []ClientGroup) {
	add := func(dst func(*ClientGroup) *[]string, rules, tags map[string]int) {
		for pass, m := range []map[string]int{rules, tags} {
			keys := make([]string, 0, len(m))
			for k := range m {
				keys = append(keys, k)
			}
			slices.Sort(keys)
			for _, k := range keys {
				if _, ruled := rules[k]; ruled && pass == 1 {
					continue // a rule for the same place is matched first
				}
				if b := m[k]; b < len(groups) {
					if l := dst(&groups[b]); !slices.Contains(*l, k) {
						*l = append(*l, k)
					}
				}
			}
		}
	}
	add(func(c *ClientGroup) *[]string { return &c.Regions }, g.region, g.tagRegion)
	add(func(c *ClientGroup) *[]string { return &c.Countries }, g.country, g.tagCountry)
	add(func(c *ClientGroup) *[]string { return &c.Continents }, g.continent, g.tagContinent)
	if g.def < len(groups) {
		groups[g.def].Unlocated = true
	}
}

// label names the clients of each latency bucket: bucket 0 (every region's
// median RTT) takes the clients that cannot be located or are in no
// measured region; bucket i the clients of prober region i and the
// countries and continents latency.regions points at it.
func (li *latencyIndex) label(groups []ClientGroup) {
	groups[0].Unlocated = true
	for b := 1; b < len(groups) && b < len(li.regions); b++ {
		groups[b].Regions = []string{li.regions[b]}
	}
	for _, m := range [...]struct {
		idx map[string]int
		dst func(*ClientGroup) *[]string
	}{
		{li.country, func(c *ClientGroup) *[]string { return &c.Countries }},
		{li.continent, func(c *ClientGroup) *[]string { return &c.Continents }},
	} {
		keys := make([]string, 0, len(m.idx))
		for k := range m.idx {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		for _, k := range keys {
			if b := m.idx[k]; b < len(groups) {
				l := m.dst(&groups[b])
				*l = append(*l, k)
			}
		}
	}
}
