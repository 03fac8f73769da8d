package providers

import (
	"slices"

	"github.com/miekg/dns"

	"github.com/meridian-gslb/meridian/internal/model"
	"github.com/meridian-gslb/meridian/providers/plan"
)

// Delegation returns the records that delegate Meridian's zones below
// providerZone to Meridian's nameservers: NS at each zone apex and glue
// A/AAAA for nameserver names inside providerZone. A nameserver whose ring
// node (nameservers[].node) is not live is left out, but at least one stays:
// an empty delegation would take the whole zone down.
func Delegation(d *model.Desired, providerZone string, live func(node string) bool) []plan.Record {
	var out []plan.Record
	for _, z := range d.Zones {
		if z.Apex == providerZone || !dns.IsSubDomain(providerZone, z.Apex) {
			continue
		}
		var healthy []model.Nameserver
		for _, ns := range z.Nameservers {
			if ns.Node == "" || live == nil || live(ns.Node) {
				healthy = append(healthy, ns)
			}
		}
		if len(healthy) == 0 {
			healthy = z.Nameservers
		}
		ttl := uint32(z.NSTTL)
		nsRec := plan.Record{Name: z.Apex, Type: "NS", TTL: ttl}
		v4 := map[string][]string{}
		v6 := map[string][]string{}
		for _, ns := range healthy {
			nsRec.Values = append(nsRec.Values, ns.Name)
			if dns.IsSubDomain(providerZone, ns.Name) {
				v4[ns.Name] = append(v4[ns.Name], ns.IPv4...)
				v6[ns.Name] = append(v6[ns.Name], ns.IPv6...)
			}
		}
		nsRec.Normalize()
		out = append(out, nsRec)
		for _, glue := range []struct {
			typ   string
			addrs map[string][]string
		}{{"A", v4}, {"AAAA", v6}} {
			for name, addrs := range glue.addrs {
				if len(addrs) == 0 {
					continue
				}
				r := plan.Record{Name: name, Type: glue.typ, TTL: ttl, Values: slices.Clone(addrs)}
				r.Normalize()
				out = append(out, r)
			}
		}
	}
	slices.SortFunc(out, func(a, b plan.Record) int {
		if a.Name != b.Name {
			if a.Name < b.Name {
				return -1
			}
			return 1
		}
		if a.Type < b.Type {
			return -1
		}
		if a.Type > b.Type {
			return 1
		}
		return 0
	})
	return out
}
