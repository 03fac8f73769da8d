// Package sites turns what the ring knows about its sites into names a
// zone serves (ADR 0018), so that a new site needs only the zone's name
// and its own credential to find the others, and the zone's delegation
// follows the sites' live DNS addresses:
//
//   - zones[].ring.names: ring.<apex> holds the gossip addresses of every
//     live trusted prober, <site>.ring.<apex> those of one site: the seeds;
//   - zones[].ring.nameservers: ns-<site>.<apex> joins the zone's NS set,
//     with the site's announced DNS addresses as glue, for every live site
//     that announces some. A site that leaves leaves the NS set, and with it
//     the delegation the providers write.
//
// The package is pure: a View in, a desired state out.
package sites

import (
	"maps"
	"net/netip"
	"regexp"
	"slices"
	"strings"

	"github.com/meridian-gslb/meridian/internal/model"
)

// Site is what the live trusted probers of one site tell.
type Site struct {
	Gossip []netip.Addr // their advertised gossip addresses
	DNS    []netip.Addr // the DNS addresses they announce (ring.dns_addresses)
}

// View is the ring's sites now, by site name. The zero View has none.
type View struct {
	Sites map[string]Site
	// Conflicts are site names that members of different scopes claim
	// (e.g. a prefix east-* and an exact name east): left out, reported.
	Conflicts []string
}

// Member is a live trusted prober as the ring lists it.
type Member struct {
	Site   string
	Scope  string // what lists it (its credential's URI, or ring.peers entry): one site, one scope
	Gossip netip.Addr
	DNS    []netip.Addr
}

// MaxGlue bounds the DNS addresses of one site (its nameserver's glue).
const MaxGlue = 8

// label is what a site name must be to appear in a DNS name.
var label = regexp.MustCompile(`^[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?$`)

// FromMembers builds the view of members. Sites whose name is not a DNS
// label (lower case letters, digits and -) are left out.
func FromMembers(members []Member) *View {
	v := &View{Sites: map[string]Site{}}
	scopes := map[string]string{}
	conflict := map[string]bool{}
	for _, m := range members {
		name := strings.ToLower(m.Site)
		if len(name) > 60 || !label.MatchString(name) {
			continue // ns-<site> must stay a DNS label
		}
		if sc, ok := scopes[name]; ok && sc != m.Scope {
			conflict[name] = true
		}
		scopes[name] = m.Scope
		s := v.Sites[name]
		if m.Gossip.IsValid() {
			s.Gossip = append(s.Gossip, m.Gossip.Unmap())
		}
		s.DNS = append(s.DNS, m.DNS...)
		v.Sites[name] = s
	}
	for name, s := range v.Sites {
		if conflict[name] {
			delete(v.Sites, name)
			v.Conflicts = append(v.Conflicts, name)
			continue
		}
		s.Gossip, s.DNS = sortedAddrs(s.Gossip), sortedAddrs(s.DNS)
		if len(s.DNS) > MaxGlue {
			s.DNS = s.DNS[:MaxGlue]
		}
		v.Sites[name] = s
	}
	slices.Sort(v.Conflicts)
	return v
}

func sortedAddrs(a []netip.Addr) []netip.Addr {
	out := slices.Clone(a)
	slices.SortFunc(out, func(x, y netip.Addr) int { return x.Compare(y) })
	return slices.Compact(out)
}

// Equal reports whether two views say the same.
func (v *View) Equal(o *View) bool {
	if v == nil || o == nil {
		return v == o
	}
	return maps.EqualFunc(v.Sites, o.Sites, func(a, b Site) bool {
		return slices.Equal(a.Gossip, b.Gossip) && slices.Equal(a.DNS, b.DNS)
	})
}

// NameserverName is the NS name of a site in the zone apex (canonical, with
// the final dot): ns-<site>.<apex>.
func NameserverName(site, apex string) string { return "ns-" + site + "." + apex }

// Apply is Apply(d, v): the view as the pipeline's serving.Sites.
func (v *View) Apply(d *model.Desired) *model.Desired { return Apply(d, v) }

// Apply returns d with the names its zones[].ring sections ask for, from
// v; d itself is not changed (zones are copied when one changes). Names
// the config already uses (a service, a static nameserver) are left to it.
func Apply(d *model.Desired, v *View) *model.Desired {
	if v == nil || !slices.ContainsFunc(d.Zones, func(z model.Zone) bool { return z.Ring != nil }) {
		return d
	}
	used := map[string]bool{}
	for _, s := range d.Services {
		used[model.CanonicalName(s.Name)] = true
	}
	out := *d
	out.Zones = slices.Clone(d.Zones)
	names := slices.Sorted(maps.Keys(v.Sites))
	for i := range out.Zones {
		z := &out.Zones[i]
		if z.Ring == nil {
			continue
		}
		for _, ns := range z.Nameservers {
			used[model.CanonicalName(ns.Name)] = true
		}
		if z.Ring.Names {
			z.Hosts = slices.Clone(z.Hosts)
			var all []netip.Addr
			for _, site := range names {
				g := v.Sites[site].Gossip
				all = append(all, g...)
				addHost(z, used, site+".ring."+z.Apex, g)
			}
			addHost(z, used, "ring."+z.Apex, sortedAddrs(all))
		}
		if z.Ring.Nameservers {
			static := len(z.Nameservers) > 0
			z.Nameservers = slices.Clone(z.Nameservers)
			for _, site := range names {
				name := NameserverName(site, z.Apex)
				if dns := v.Sites[site].DNS; len(dns) > 0 && !used[name] {
					z.Nameservers = append(z.Nameservers, nameserver(name, dns))
				}
			}
			if !static && len(z.Nameservers) > 0 && z.SOA.MName == "ns."+z.Apex {
				z.SOA.MName = z.Nameservers[0].Name // the placeholder of a zone with the ring's nameservers only
			}
		}
	}
	return &out
}

func addHost(z *model.Zone, used map[string]bool, name string, addrs []netip.Addr) {
	if len(addrs) == 0 || used[name] {
		return
	}
	h := model.Host{Name: name}
	for _, a := range addrs {
		if a.Is4() {
			h.IPv4 = append(h.IPv4, a.String())
		} else {
			h.IPv6 = append(h.IPv6, a.String())
		}
	}
	z.Hosts = append(z.Hosts, h)
}

func nameserver(name string, addrs []netip.Addr) model.Nameserver {
	ns := model.Nameserver{Name: name}
	for _, a := range addrs {
		if a.Is4() {
			ns.IPv4 = append(ns.IPv4, a.String())
		} else {
			ns.IPv6 = append(ns.IPv6, a.String())
		}
	}
	return ns
}
