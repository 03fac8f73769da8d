package providers

import (
	"slices"
	"strings"

	"github.com/meridian-gslb/meridian/internal/model"
	"github.com/meridian-gslb/meridian/providers/plan"
)

// PlainRecords maps service views to plain DNS records: what a provider
// without weighted, failover or geolocation records holds (Cloudflare's
// direct mode without load balancing, an RFC 2136 primary). It is pure.
// Only services inside zone are kept. Per service and record type (A,
// AAAA, CNAME) there is one record set with the service's TTL, holding the
// decided answer set, the targets that receive traffic now:
//
//   - weighted, roundrobin, latency: every endpoint whose Effective weight
//     is > 0 (plain DNS cannot carry the weights: resolvers rotate evenly);
//   - failover: the available endpoints of the first failover group that
//     has one; when none has (fail-open), the first group's endpoints;
//   - geo: the endpoints of the geo.default clusters (every cluster when
//     unset) with Effective > 0, else every endpoint with Effective > 0
//     (plain DNS has no client location: everyone gets the default).
//
// A CNAME service is a single CNAME to its highest-Effective target (the
// first in config order on a tie). The records are sorted by name, then
// type.
func PlainRecords(views []ServiceView, zone string) []plan.Record {
	zone = model.CanonicalName(zone)
	var out []plan.Record
	for _, v := range views {
		if v.Name != zone && !strings.HasSuffix(v.Name, "."+zone) {
			continue
		}
		for _, typ := range []string{"A", "AAAA", "CNAME"} {
			vals := plainValues(v, typ)
			if len(vals) == 0 {
				continue
			}
			r := plan.Record{Name: v.Name, Type: typ, TTL: v.TTL, Values: vals}
			r.Normalize()
			out = append(out, r)
		}
	}
	SortByNameType(out)
	return out
}

// plainValues are the targets of v's record set of type typ.
func plainValues(v ServiceView, typ string) []string {
	if typ == "CNAME" {
		best := -1
		for i, e := range v.Endpoints {
			if e.Type == typ && e.Effective > 0 && (best < 0 || e.Effective > v.Endpoints[best].Effective) {
				best = i
			}
		}
		if best < 0 {
			return nil
		}
		return []string{v.Endpoints[best].Target}
	}
	pick := func(ok func(EndpointView) bool, idx []int) []string {
		var out []string
		for _, i := range idx {
			if e := v.Endpoints[i]; e.Type == typ && ok(e) && !slices.Contains(out, e.Target) {
				out = append(out, e.Target)
			}
		}
		return out
	}
	all := make([]int, len(v.Endpoints))
	for i := range all {
		all[i] = i
	}
	effective := func(e EndpointView) bool { return e.Effective > 0 }
	switch v.Strategy {
	case model.StrategyFailover:
		for _, g := range v.Failover {
			if vals := pick(func(e EndpointView) bool { return e.Available }, g); len(vals) > 0 {
				return vals
			}
		}
		for _, g := range v.Failover { // fail-open: the first group that has this family
			if vals := pick(effective, g); len(vals) > 0 {
				return vals
			}
			if vals := pick(func(EndpointView) bool { return true }, g); len(vals) > 0 {
				return vals
			}
		}
	case model.StrategyGeo:
		var def []string
		if v.Geo != nil {
			def = v.Geo.Default
		}
		inDefault := func(e EndpointView) bool {
			return e.Effective > 0 && (len(def) == 0 || slices.Contains(def, e.Cluster))
		}
		if vals := pick(inDefault, all); len(vals) > 0 {
			return vals
		}
	}
	return pick(effective, all)
}

// SortByNameType sorts records by name, then type (for providers whose
// records have no set identifier).
func SortByNameType(rs []plan.Record) {
	slices.SortFunc(rs, func(a, b plan.Record) int {
		if c := strings.Compare(a.Name, b.Name); c != 0 {
			return c
		}
		return strings.Compare(a.Type, b.Type)
	})
}
