package cloudflare

import (
	"slices"
	"strings"

	"github.com/meridian-gslb/meridian/internal/model"
	"github.com/meridian-gslb/meridian/providers"
	"github.com/meridian-gslb/meridian/providers/plan"
)

// Translate maps service views to plain Cloudflare DNS records (direct
// mode). It is pure. Only services inside zone are kept. Per service and
// address family there is one record set:
//
//   - weighted, roundrobin: every endpoint whose Effective weight is > 0
//     (plain DNS cannot carry the weights: resolvers rotate evenly);
//   - failover: the available endpoints of the first failover group that
//     has one; when none has (fail-open), the first group's endpoints;
//   - geo: the endpoints of the geo.default clusters (every cluster when
//     unset) with Effective > 0, else every endpoint with Effective > 0
//     (plain DNS has no client location: everyone gets the default).
//
// A CNAME service is a single CNAME to its highest-Effective target (the
// first in config order on a tie). TTL is ttl when non-zero (1 = automatic),
// else the service's TTL; proxied records get TTL 1, as Cloudflare stores
// them. Proxied is set only when proxied is true.
func Translate(views []providers.ServiceView, zone string, ttl int, proxied bool) []plan.Record {
	zone = model.CanonicalName(zone)
	var out []plan.Record
	for _, v := range views {
		if v.Name != zone && !strings.HasSuffix(v.Name, "."+zone) {
			continue
		}
		for _, typ := range []string{"A", "AAAA", "CNAME"} {
			vals := values(v, typ)
			if len(vals) == 0 {
				continue
			}
			r := plan.Record{Name: v.Name, Type: typ, TTL: v.TTL, Values: vals}
			if ttl != 0 {
				r.TTL = uint32(ttl)
			}
			if proxied {
				r.TTL, r.Proxied = 1, ptr(true)
			}
			r.Normalize()
			out = append(out, r)
		}
	}
	sortByNameType(out)
	return out
}

// values are the targets of v's record set of type typ.
func values(v providers.ServiceView, typ string) []string {
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
	pick := func(ok func(providers.EndpointView) bool, idx []int) []string {
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
	effective := func(e providers.EndpointView) bool { return e.Effective > 0 }
	switch v.Strategy {
	case model.StrategyFailover:
		for _, g := range v.Failover {
			if vals := pick(func(e providers.EndpointView) bool { return e.Available }, g); len(vals) > 0 {
				return vals
			}
		}
		for _, g := range v.Failover { // fail-open: the first group that has this family
			if vals := pick(effective, g); len(vals) > 0 {
				return vals
			}
			if vals := pick(func(providers.EndpointView) bool { return true }, g); len(vals) > 0 {
				return vals
			}
		}
	case model.StrategyGeo:
		var def []string
		if v.Geo != nil {
			def = v.Geo.Default
		}
		inDefault := func(e providers.EndpointView) bool {
			return e.Effective > 0 && (len(def) == 0 || slices.Contains(def, e.Cluster))
		}
		if vals := pick(inDefault, all); len(vals) > 0 {
			return vals
		}
	}
	return pick(effective, all)
}

// sortByNameType sorts records by name, then type (Cloudflare records have
// no set identifier).
func sortByNameType(rs []plan.Record) {
	slices.SortFunc(rs, func(a, b plan.Record) int {
		if c := strings.Compare(a.Name, b.Name); c != 0 {
			return c
		}
		return strings.Compare(a.Type, b.Type)
	})
}
