package model

import (
	"net/netip"
	"slices"
	"strings"
	"time"
)

// Normalize validates d and returns a copy with every default filled in and
// every name in canonical form (lower case, trailing dot). The input is not
// modified. The result is what the engine compiles.
func Normalize(d *Desired) (*Desired, error) {
	if err := Validate(d); err != nil {
		return nil, err
	}
	out := &Desired{
		Zones:      slices.Clone(d.Zones),
		Clusters:   slices.Clone(d.Clusters),
		Services:   slices.Clone(d.Services),
		Geo:        Geo{MMDB: d.Geo.MMDB, Networks: slices.Clone(d.Geo.Networks), ECSTrusted: normalizeECSTrusted(d.Geo.ECSTrusted)},
		Health:     d.Health,
		Ring:       d.Ring,
		Decision:   d.Decision,
		Providers:  d.Providers,
		Kubernetes: normalizeKubernetes(d.Kubernetes),
		Shift:      d.Shift,
		Catalog:    normalizeCatalog(d.Catalog),

		TenantTargets: d.TenantTargets,
	}
	normalizeProviders(&out.Providers, d.Zones)
	out.Ring.Seeds = slices.Clone(d.Ring.Seeds)
	healthDefaults(&out.Health)
	ringDefaults(&out.Ring)
	decisionDefaults(&out.Decision)
	zoneTTL := normalizeZones(out.Zones)
	zones := make(map[string]bool, len(zoneTTL))
	for apex := range zoneTTL {
		zones[apex] = true
	}
	normalizeClusters(out.Clusters)
	// Each service is normalized from itself and the settings above
	// alone: on every core for a long list (see eachChunk).
	eachChunk(len(out.Services), func(i int) {
		normalizeService(&out.Services[i], zones, zoneTTL, &out.Health)
	})
	return out, nil
}

// normalizeProviders fills the providers' defaults in place, after copying
// the lists it changes and adding the entries the zones' delegations imply.
func normalizeProviders(pr *Providers, zones []Zone) {
	pr.Writers = slices.Clone(pr.Writers)
	pr.Debounce = orDefaultDuration(pr.Debounce, DefaultProviderDebounce)
	pr.ResyncInterval = orDefaultDuration(pr.ResyncInterval, DefaultProviderResync)
	pr.Route53 = slices.Clone(pr.Route53)
	pr.Cloudflare = slices.Clone(pr.Cloudflare)
	impliedEntries(zones, pr)
	for i := range pr.Route53 {
		route53Defaults(&pr.Route53[i])
	}
	for i := range pr.Cloudflare {
		z := &pr.Cloudflare[i]
		z.Zone = CanonicalName(z.Zone)
		z.Mode = orDefaultString(z.Mode, ModeDirect)
		z.ProviderAPI = z.ProviderAPI.withDefaults(DefaultCloudflareBudget, DefaultCloudflareBudgetWindow)
		z.LoadBalancing = orDefaultString(z.LoadBalancing, LoadBalancingOff)
		z.HealthChecks = orDefaultString(z.HealthChecks, HealthChecksOff)
	}
	pr.RFC2136 = slices.Clone(pr.RFC2136)
	for i := range pr.RFC2136 {
		z := &pr.RFC2136[i]
		z.Zone = CanonicalName(z.Zone)
		ap, _ := ParseNotifyTarget(z.Server)
		z.Server = ap.String()
		z.ProviderAPI = z.ProviderAPI.withDefaults(DefaultRFC2136Budget, DefaultRFC2136BudgetWindow)
		z.Mode = orDefaultString(z.Mode, ModeDelegate)
	}
}

// route53Defaults fills one providers.route53[] entry's defaults, turning
// the old requests_per_second form into a request budget.
func route53Defaults(z *Route53Zone) {
	z.Zone = CanonicalName(z.Zone)
	z.Mode = orDefaultString(z.Mode, ModeDirect)
	z.Region = orDefaultString(z.Region, DefaultRoute53Region)
	if rps := z.RequestsPerSecond; rps > 0 { // the old form of the budget
		z.RequestBudget, z.RequestBudgetWindow = int(rps), Duration(time.Second)
		if rps != float64(int(rps)) {
			z.RequestBudget, z.RequestBudgetWindow = 1, Duration(float64(time.Second)/rps)
		}
		z.RequestsPerSecond = 0
	}
	z.ProviderAPI = z.ProviderAPI.withDefaults(DefaultRoute53Budget, DefaultRoute53BudgetWindow)
	z.SyncTimeout = orDefaultDuration(z.SyncTimeout, DefaultRoute53SyncTimeout)
	z.HealthChecks = orDefaultString(z.HealthChecks, HealthChecksOff)
}

// healthDefaults fills the health section's defaults in place.
func healthDefaults(h *Health) {
	h.Interval = orDefaultDuration(h.Interval, DefaultInterval)
	h.Timeout = orDefaultDuration(h.Timeout, min(DefaultTimeout, h.Interval.D()))
	h.Fall = orDefault(h.Fall, DefaultFall)
	h.Rise = orDefault(h.Rise, DefaultRise)
	h.ReprobeInterval = orDefaultDuration(h.ReprobeInterval, min(DefaultReprobeInterval, h.Interval.D()))
}

// ringDefaults fills the ring section's defaults in place and copies its
// peer list.
func ringDefaults(r *Ring) {
	r.Bind = orDefaultString(r.Bind, DefaultRingBind)
	r.Advertise = orDefaultString(r.Advertise, r.Bind)
	r.RejoinInterval = orDefaultDuration(r.RejoinInterval, DefaultRejoinInterval)
	r.MaxClockSkew = orDefaultDuration(r.MaxClockSkew, DefaultMaxClockSkew)
	r.Peers = slices.Clone(r.Peers)
}

// decisionDefaults fills the decision section's defaults in place.
func decisionDefaults(dec *Decision) {
	dec.FreshVotes = orDefault(dec.FreshVotes, DefaultFreshVotes)
	dec.MinRegions = orDefault(dec.MinRegions, DefaultMinRegions)
	dec.HoldDown = orDefaultDuration(dec.HoldDown, DefaultHoldDown)
	dec.HoldDownMax = orDefaultDuration(dec.HoldDownMax, max(DefaultHoldDownMax, dec.HoldDown.D()))
	dec.HoldDownMin = orDefaultDuration(dec.HoldDownMin, min(DefaultHoldDownMin, dec.HoldDown.D()))
	dec.FirstHoldDown = orDefaultDuration(dec.FirstHoldDown, min(DefaultFirstHoldDown, dec.HoldDownMin.D()))
	dec.FlapWindow = orDefaultDuration(dec.FlapWindow, DefaultFlapWindow)
	if dec.Brake == 0 {
		dec.Brake = DefaultBrake
	}
	if dec.Outliers == nil {
		t := true
		dec.Outliers = &t
	}
}

// normalizeZones fills each zone's defaults in place and returns every
// zone's default TTL by apex.
func normalizeZones(zones []Zone) map[string]int {
	zoneTTL := make(map[string]int, len(zones))
	for i := range zones {
		z := &zones[i]
		z.Apex = CanonicalName(z.Apex)
		z.TTL = orDefault(z.TTL, DefaultTTL)
		z.NSTTL = orDefault(z.NSTTL, DefaultNSTTL)
		if z.Delegation != nil {
			z.Delegation = &Delegation{Provider: z.Delegation.Provider, Parent: CanonicalName(z.Delegation.Parent)}
		}
		z.Nameservers = slices.Clone(z.Nameservers)
		for j := range z.Nameservers {
			ns := &z.Nameservers[j]
			ns.Name = CanonicalName(ns.Name)
			ns.IPv4 = canonicalAddrs(ns.IPv4)
			ns.IPv6 = canonicalAddrs(ns.IPv6)
		}
		soaDefaults(&z.SOA, z)
		zoneTTL[z.Apex] = z.TTL
	}
	return zoneTTL
}

// soaDefaults fills the SOA of zone z (already canonical) in place.
func soaDefaults(s *SOA, z *Zone) {
	if s.MName == "" && len(z.Nameservers) > 0 {
		s.MName = z.Nameservers[0].Name
	}
	if s.MName == "" {
		s.MName = "ns." + z.Apex // only the ring's nameservers: set by the serving node (ns-<site>)
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
}

// normalizeClusters fills each cluster's defaults in place, copying the
// heartbeat and Kubernetes settings it points to.
func normalizeClusters(clusters []Cluster) {
	for i := range clusters {
		c := &clusters[i]
		c.State = orDefaultString(c.State, StateUp)
		if c.Kubernetes != nil && c.Heartbeat == nil {
			// A Kubernetes member's /readyz is its heartbeat by default.
			c.Heartbeat = &Heartbeat{}
		}
		if c.Heartbeat != nil {
			hb := *c.Heartbeat
			hb.Interval = orDefaultDuration(hb.Interval, DefaultHeartbeatPeriod)
			hb.Grace = orDefaultDuration(hb.Grace, max(DefaultHeartbeatGrace, 4*hb.Interval.D()))
			c.Heartbeat = &hb
		}
		if c.Kubernetes != nil {
			k := *c.Kubernetes
			c.Kubernetes = &k
		}
	}
}

// normalizeService fills one service's defaults in place from the zones
// (apex set and default TTLs) and the health defaults, copying every
// list and section it points to.
func normalizeService(s *Service, zones map[string]bool, zoneTTL map[string]int, health *Health) {
	s.Name = CanonicalName(s.Name)
	s.Strategy = orDefaultString(s.Strategy, StrategyWeighted)
	s.TTL = orDefault(s.TTL, zoneTTL[zoneOf(zones, s.Name)])
	s.MaxAnswers = orDefault(s.MaxAnswers, DefaultMaxAnswers)
	s.WhenAllDown = orDefaultString(s.WhenAllDown, WhenAllDownFailOpen)
	s.FailOpenTTL = min(orDefault(s.FailOpenTTL, DefaultFailOpenTTL), s.TTL)
	s.DoubtTTL = min(orDefault(s.DoubtTTL, DefaultDoubtTTL), s.TTL)
	s.Sticky = orDefaultString(s.Sticky, StickyOff)
	s.FallbackAnswer = orDefaultString(s.FallbackAnswer, FallbackAuto)
	s.Endpoints = slices.Clone(s.Endpoints)
	for j := range s.Endpoints {
		endpointDefaults(&s.Endpoints[j])
	}
	if s.HealthCheck != nil {
		s.HealthCheck = checkDefaults(*s.HealthCheck, *health, s.Name)
	}
	if s.Failover != nil {
		f := *s.Failover
		s.Failover = &f
	}
	if s.Geo != nil {
		g := *s.Geo
		s.Geo = &g
	}
	s.Capacity = normalizeCapacity(s.Capacity)
	if s.Strategy == StrategyLatency {
		s.Latency = latencyDefaults(s.Latency)
	}
}

// endpointDefaults puts one endpoint's address and CNAME in canonical form
// and fills its weight and state.
func endpointDefaults(e *Endpoint) {
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

// impliedEntries appends to pr the providers.route53[] and cloudflare[]
// entries the zones' delegations imply: a delegation whose parent has no
// entry gets one with the defaults, in mode delegate (one per parent).
func impliedEntries(zones []Zone, pr *Providers) {
	for i := range zones {
		kind, parent := zones[i].DelegatingEntry()
		if kind == "" {
			continue
		}
		if k, _, _ := providerEntry(*pr, parent); k != "" {
			continue
		}
		switch kind {
		case ProviderRoute53:
			pr.Route53 = append(pr.Route53, Route53Zone{Zone: parent, Mode: ModeDelegate})
		case ProviderCloudflare:
			pr.Cloudflare = append(pr.Cloudflare, CloudflareZone{Zone: parent, Mode: ModeDelegate})
		}
	}
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

// checkDefaults fills a check from the health defaults and its kind.
func checkDefaults(c Check, h Health, service string) *Check {
	c.Kind = orDefaultString(c.Kind, CheckNone)
	c.Interval = orDefaultDuration(c.Interval, h.Interval.D())
	c.Timeout = orDefaultDuration(c.Timeout, min(h.Timeout.D(), c.Interval.D()))
	c.Fall = orDefault(c.Fall, h.Fall)
	c.Rise = orDefault(c.Rise, h.Rise)
	c.ReprobeInterval = orDefaultDuration(c.ReprobeInterval, min(h.ReprobeInterval.D(), c.Interval.D()))
	host := strings.TrimSuffix(service, ".")
	switch c.Kind {
	case CheckHTTP, CheckHTTPS:
		c.Port = orDefault(c.Port, map[string]int{CheckHTTP: 80, CheckHTTPS: 443}[c.Kind])
		c.Method = orDefaultString(c.Method, "GET")
		c.Path = orDefaultString(c.Path, DefaultHTTPPath)
		c.Host = orDefaultString(c.Host, host)
		if c.Kind == CheckHTTPS {
			c.SNI = orDefaultString(c.SNI, c.Host)
		}
		if len(c.ExpectStatus) == 0 {
			c.ExpectStatus = []string{DefaultExpectStatus}
		}
	case CheckDNS:
		c.Port = orDefault(c.Port, 53)
		c.QueryName = CanonicalName(orDefaultString(c.QueryName, service))
		c.QueryType = strings.ToUpper(orDefaultString(c.QueryType, "A"))
		c.ExpectRcode = strings.ToUpper(orDefaultString(c.ExpectRcode, "NOERROR"))
	}
	return &c
}

func orDefaultDuration(v Duration, def time.Duration) Duration {
	if v == 0 {
		return Duration(def)
	}
	return v
}

// normalizeECSTrusted returns geo.ecs_trusted in canonical form (IPv4-mapped
// networks as IPv4), keeping the difference between absent (nil: trust every
// source) and empty (trust none).
func normalizeECSTrusted(list []string) []string {
	if list == nil {
		return nil
	}
	out := make([]string, 0, len(list))
	for _, s := range list {
		out = append(out, unmapPrefix(netip.MustParsePrefix(strings.TrimSpace(s))).String())
	}
	return out
}

// unmapPrefix returns an IPv4-mapped IPv6 prefix (::ffff:192.0.2.0/120) as
// the IPv4 prefix it covers; other prefixes unchanged.
func unmapPrefix(p netip.Prefix) netip.Prefix {
	if a := p.Addr(); a.Is4In6() && p.Bits() >= 96 {
		return netip.PrefixFrom(a.Unmap(), p.Bits()-96)
	}
	return p
}
