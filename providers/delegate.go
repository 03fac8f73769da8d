package providers

import (
	"fmt"
	"net/netip"
	"slices"
	"strings"

	"github.com/miekg/dns"

	"github.com/meridian-gslb/meridian/internal/dnssec"
	"github.com/meridian-gslb/meridian/internal/model"
	"github.com/meridian-gslb/meridian/providers/plan"
)

// Delegation (mode delegate, and every zones[].delegation) is computed in
// two pure steps, with the I/O at the edges:
//
//  1. DelegatedZones picks the Meridian zones a parent zone delegates and
//     gathers their inputs: the effective nameservers (names and
//     addresses, from whatever knows them: the config today, addresses
//     learned at run time later) and the DNSKEY RRset of a signed zone;
//  2. Delegation turns those inputs into the parent's records: NS, glue,
//     DS. It trusts none of them: a bad name or address is an error (the
//     pass fails and the parent keeps what it had).
//
// The reconciler diffs the result against the parent with plan.Compute, so
// only names carrying this installation's ownership TXT are ever changed.

// DelegatedZone is what a parent zone must hold for one Meridian zone.
type DelegatedZone struct {
	Apex string // the zone (canonical: lower case, trailing dot)
	TTL  uint32 // of its NS, glue and DS records (zones[].ns_ttl)
	// Nameservers is the effective list: each name with its addresses
	// (ipv4, ipv6; Node is not read). A name inside the zone without an
	// address cannot be reached and is left out.
	Nameservers []model.Nameserver
	// Signed is set for a zone with dnssec: its delegation then needs DS
	// records, from DNSKEY (the RRset the zone serves).
	Signed bool
	DNSKEY []dns.RR
}

// Delegation returns the records parent must hold to delegate zones, sorted:
// for each zone, NS at its apex, glue A/AAAA for the nameservers inside it,
// and for a signed zone the DS records of its secure entry keys (SHA-256,
// dnssec.DSSet: the keys and digest its own CDS names). Glue for a name
// several zones share is merged. It fails, naming the zone and the value,
// when a zone is not below parent, a nameserver name or address is not
// valid, no nameserver is left to delegate to (an empty NS set is never
// written), or a signed zone has no key to point the DS at (writing it
// without DS would turn validation off for the zone).
func Delegation(parent string, zones []DelegatedZone) ([]plan.Record, error) {
	byKey := map[plan.Key]*plan.Record{}
	add := func(name, typ string, ttl uint32, values ...string) {
		k := plan.Key{Name: name, Type: typ}
		r := byKey[k]
		if r == nil {
			r = &plan.Record{Name: name, Type: typ, TTL: ttl}
			byKey[k] = r
		}
		r.TTL = min(r.TTL, ttl)
		for _, v := range values {
			if !slices.Contains(r.Values, v) {
				r.Values = append(r.Values, v)
			}
		}
	}
	for _, z := range zones {
		apex := model.CanonicalName(z.Apex)
		if apex == parent || !dns.IsSubDomain(parent, apex) {
			return nil, fmt.Errorf("zone %s is not below the parent zone %s", apex, parent)
		}
		ns, glue, err := nameservers(apex, z.Nameservers)
		if err != nil {
			return nil, fmt.Errorf("zone %s: %w", apex, err)
		}
		add(apex, "NS", z.TTL, ns...)
		for _, g := range glue {
			add(g.Name, g.Type, z.TTL, g.Values...)
		}
		if !z.Signed {
			continue
		}
		ds := dnssec.DSSet(z.DNSKEY, z.TTL)
		if len(ds) == 0 {
			return nil, fmt.Errorf("zone %s is signed but has no key loaded yet: the delegation is not written without its DS", apex)
		}
		var values []string
		for _, d := range ds {
			values = append(values, DSValue(d))
		}
		add(apex, "DS", z.TTL, values...)
	}
	out := make([]plan.Record, 0, len(byKey))
	for _, r := range byKey {
		r.Normalize()
		out = append(out, *r)
	}
	slices.SortFunc(out, func(a, b plan.Record) int {
		if c := strings.Compare(a.Name, b.Name); c != 0 {
			return c
		}
		return strings.Compare(a.Type, b.Type)
	})
	return out, nil
}

// DSValue is the value of a DS record in plan records, the same for every
// provider (plan.CanonicalDS): "key-tag algorithm digest-type DIGEST", the
// digest in upper-case hex (the presentation form of RFC 4034 section 5.3).
func DSValue(ds *dns.DS) string {
	return fmt.Sprintf("%d %d %d %s", ds.KeyTag, ds.Algorithm, ds.DigestType, strings.ToUpper(ds.Digest))
}

// nameservers checks a zone's effective nameservers and returns the NS
// targets and the glue records (names inside the zone only: glue is what
// the parent needs to reach them; a name elsewhere is resolved on its own).
func nameservers(apex string, list []model.Nameserver) (ns []string, glue []plan.Record, err error) {
	for _, n := range list {
		if _, ok := dns.IsDomainName(n.Name); !ok || strings.TrimSpace(n.Name) == "" || strings.ContainsAny(n.Name, " *") {
			return nil, nil, fmt.Errorf("nameserver %q is not a domain name", n.Name)
		}
		name := model.CanonicalName(n.Name)
		v4, err := addrs(name, n.IPv4, true)
		if err != nil {
			return nil, nil, err
		}
		v6, err := addrs(name, n.IPv6, false)
		if err != nil {
			return nil, nil, err
		}
		if !dns.IsSubDomain(apex, name) {
			ns = append(ns, name)
			continue
		}
		if len(v4)+len(v6) == 0 {
			continue // inside the zone without glue: unreachable
		}
		ns = append(ns, name)
		if len(v4) > 0 {
			glue = append(glue, plan.Record{Name: name, Type: "A", Values: v4})
		}
		if len(v6) > 0 {
			glue = append(glue, plan.Record{Name: name, Type: "AAAA", Values: v6})
		}
	}
	if len(ns) == 0 {
		return nil, nil, fmt.Errorf("no nameserver to delegate to (%d listed, none outside the zone or with an address): an empty NS set is never written", len(list))
	}
	return ns, glue, nil
}

// addrs parses the addresses of nameserver name, all IPv4 (v4) or all IPv6.
func addrs(name string, in []string, v4 bool) ([]string, error) {
	var out []string
	for _, s := range in {
		a, err := netip.ParseAddr(strings.TrimSpace(s))
		switch {
		case err != nil:
			return nil, fmt.Errorf("nameserver %s: address %q is not an IP address", name, s)
		case v4 && !a.Is4():
			return nil, fmt.Errorf("nameserver %s: address %q is not an IPv4 address", name, s)
		case !v4 && (!a.Is6() || a.Is4In6() || a.Zone() != ""):
			return nil, fmt.Errorf("nameserver %s: address %q is not an IPv6 address", name, s)
		}
		if !slices.Contains(out, a.String()) {
			out = append(out, a.String())
		}
	}
	return out, nil
}

// DelegatedZones returns the inputs of Delegation for the parent zone
// (canonical) of the provider kind: every Meridian zone strictly below it,
// except those whose zones[].delegation names another provider entry (an
// explicit delegation is written by the entry it names only). nameservers
// gives a zone's effective nameservers (nil: EffectiveNameservers(nil),
// the configured ones); dnskey the DNSKEY RRset a signed zone serves (nil:
// none known).
func DelegatedZones(d *model.Desired, kind, parent string, nameservers func(z *model.Zone) []model.Nameserver, dnskey func(apex string) []dns.RR) []DelegatedZone {
	if nameservers == nil {
		nameservers = EffectiveNameservers(nil)
	}
	var out []DelegatedZone
	for i := range d.Zones {
		z := &d.Zones[i]
		apex := model.CanonicalName(z.Apex)
		if apex == parent || !dns.IsSubDomain(parent, apex) {
			continue
		}
		if k, p := z.DelegatingEntry(); k != "" && (k != kind || p != parent) {
			continue
		}
		dz := DelegatedZone{Apex: apex, TTL: uint32(z.NSTTL), Nameservers: nameservers(z), Signed: z.DNSSEC != nil}
		if dz.TTL == 0 {
			dz.TTL = model.DefaultNSTTL
		}
		if dz.Signed && dnskey != nil {
			dz.DNSKEY = dnskey(apex)
		}
		out = append(out, dz)
	}
	return out
}

// EffectiveNameservers is the nameservers of a zone as configured, less
// those whose ring node (nameservers[].node) is not live, but all of them
// when none would stay: an empty delegation would take the whole zone down.
// live nil: every node is live.
func EffectiveNameservers(live func(node string) bool) func(z *model.Zone) []model.Nameserver {
	return func(z *model.Zone) []model.Nameserver {
		var healthy []model.Nameserver
		for _, ns := range z.Nameservers {
			if ns.Node == "" || live == nil || live(ns.Node) {
				healthy = append(healthy, ns)
			}
		}
		if len(healthy) == 0 {
			return z.Nameservers
		}
		return healthy
	}
}

// KeepUnseen adds to a delegation (desired) the nameservers the parent
// holds now (current) that keep says to keep although the state does not
// have them: the ring's nameservers of sites this node has never seen live
// (internal/sites). A new site that runs alone before it finds the others
// would otherwise write a delegation of its own nameserver only, and take
// the others' out of the parent; a site this node saw leave is removed as
// the state says. The glue of a kept nameserver is kept with it. Pure.
func KeepUnseen(desired, current []plan.Record, keep func(nsName string) bool) []plan.Record {
	if keep == nil {
		return desired
	}
	cur := map[plan.Key]plan.Record{}
	for _, r := range current {
		cur[r.Key()] = r
	}
	out := slices.Clone(desired)
	have := map[plan.Key]int{}
	for i, r := range out {
		have[r.Key()] = i
	}
	for i := range out {
		d := &out[i]
		if d.Type != "NS" {
			continue
		}
		c, ok := cur[d.Key()]
		if !ok {
			continue
		}
		var added []string
		for _, v := range c.Values {
			if !slices.Contains(d.Values, v) && keep(v) {
				added = append(added, v)
			}
		}
		if len(added) == 0 {
			continue
		}
		d.Values = append(slices.Clone(d.Values), added...)
		d.Normalize()
		for _, ns := range added {
			for _, typ := range []string{"A", "AAAA"} {
				k := plan.Key{Name: ns, Type: typ}
				g, ok := cur[k]
				if _, dup := have[k]; !ok || dup {
					continue
				}
				g.IDs = nil
				out = append(out, g)
				have[k] = len(out) - 1
			}
		}
	}
	slices.SortFunc(out, func(a, b plan.Record) int {
		if c := strings.Compare(a.Name, b.Name); c != 0 {
			return c
		}
		return strings.Compare(a.Type, b.Type)
	})
	return out
}
