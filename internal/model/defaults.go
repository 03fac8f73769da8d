package model

import (
	"net/netip"
	"slices"
)

// Normalize validates d and returns a copy with every default filled in and
// every name in canonical form (lower case, trailing dot). The input is not
// modified. The result is what the engine compiles.
func Normalize(d *Desired) (*Desired, error) {
	if err := Validate(d); err != nil {
		return nil, err
	}
	out := &Desired{
		Zones:    slices.Clone(d.Zones),
		Clusters: slices.Clone(d.Clusters),
		Services: slices.Clone(d.Services),
		Geo:      Geo{MMDB: d.Geo.MMDB, Networks: slices.Clone(d.Geo.Networks)},
	}
	zoneTTL := map[string]int{}
	for i := range out.Zones {
		z := &out.Zones[i]
		z.Apex = CanonicalName(z.Apex)
		z.TTL = orDefault(z.TTL, DefaultTTL)
		z.NSTTL = orDefault(z.NSTTL, DefaultNSTTL)
		z.Nameservers = slices.Clone(z.Nameservers)
		for j := range z.Nameservers {
			ns := &z.Nameservers[j]
			ns.Name = CanonicalName(ns.Name)
			ns.IPv4 = canonicalAddrs(ns.IPv4)
			ns.IPv6 = canonicalAddrs(ns.IPv6)
		}
		s := &z.SOA
		if s.MName == "" {
			s.MName = z.Nameservers[0].Name
		}
		s.MName = CanonicalName(s.MName)
		if s.RName == "" {
			s.RName = "hostmaster." + z.Apex
		}
		s.RName = CanonicalName(s.RName)
		s.Refresh = orDefault(s.Refresh, DefaultRefresh)
		s.Retry = orDefault(s.Retry, DefaultRetry)
		s.Expire = orDefault(s.Expire, DefaultExpire)
		s.Minimum = orDefault(s.Minimum, DefaultNegativeTTL)
		s.TTL = orDefault(s.TTL, DefaultSOATTL)
		zoneTTL[z.Apex] = z.TTL
	}
	zones := map[string]bool{}
	for apex := range zoneTTL {
		zones[apex] = true
	}
	for i := range out.Clusters {
		c := &out.Clusters[i]
		c.State = orDefaultString(c.State, StateUp)
	}
	for i := range out.Services {
		s := &out.Services[i]
		s.Name = CanonicalName(s.Name)
		s.Strategy = orDefaultString(s.Strategy, StrategyWeighted)
		s.TTL = orDefault(s.TTL, zoneTTL[zoneOf(zones, s.Name)])
		s.MaxAnswers = orDefault(s.MaxAnswers, DefaultMaxAnswers)
		s.WhenAllDown = orDefaultString(s.WhenAllDown, WhenAllDownFailOpen)
		s.FailOpenTTL = min(orDefault(s.FailOpenTTL, DefaultFailOpenTTL), s.TTL)
		s.Endpoints = slices.Clone(s.Endpoints)
		for j := range s.Endpoints {
			e := &s.Endpoints[j]
			if e.Address != "" {
				e.Address = netip.MustParseAddr(e.Address).String()
			}
			if e.CNAME != "" {
				e.CNAME = CanonicalName(e.CNAME)
			}
			if e.Weight == nil {
				w := DefaultWeight
				e.Weight = &w
			}
			e.State = orDefaultString(e.State, StateUp)
		}
		if s.Failover != nil {
			f := *s.Failover
			s.Failover = &f
		}
		if s.Geo != nil {
			g := *s.Geo
			s.Geo = &g
		}
	}
	return out, nil
}

// ZoneOf returns the apex of the most specific zone of d that contains name
// (both canonical), or "" when no zone does.
func (d *Desired) ZoneOf(name string) string {
	zones := make(map[string]bool, len(d.Zones))
	for _, z := range d.Zones {
		zones[z.Apex] = true
	}
	return zoneOf(zones, name)
}

func canonicalAddrs(in []string) []string {
	out := make([]string, len(in))
	for i, a := range in {
		out[i] = netip.MustParseAddr(a).String()
	}
	return out
}

func orDefault(v, def int) int {
	if v == 0 {
		return def
	}
	return v
}

func orDefaultString(v, def string) string {
	if v == "" {
		return def
	}
	return v
}
