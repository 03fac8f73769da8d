package model

import (
	"errors"
	"fmt"
	"net/netip"
	"slices"
	"strconv"
	"strings"

	"github.com/miekg/dns"
)

// FieldError is one validation failure. Path names the field the way it is
// written in the config file (services[2].endpoints[0].weight), so that the
// config loader can point at the file line.
type FieldError struct {
	Path string
	Msg  string
}

func (e FieldError) Error() string { return e.Path + ": " + e.Msg }

// ValidationError holds every failure found in one pass.
type ValidationError struct {
	Fields []FieldError
}

func (e *ValidationError) Error() string {
	parts := make([]string, len(e.Fields))
	for i, f := range e.Fields {
		parts[i] = f.Error()
	}
	return strings.Join(parts, "; ")
}

type validator struct {
	errs []FieldError
}

func (v *validator) add(path, format string, args ...any) {
	v.errs = append(v.errs, FieldError{Path: path, Msg: fmt.Sprintf(format, args...)})
}

// CanonicalName returns name in lower case with a trailing dot.
func CanonicalName(name string) string {
	return dns.Fqdn(strings.ToLower(strings.TrimSpace(name)))
}

// checkNameQuiet is checkName without adding an error (for a field that
// checkName already reported on).
func (v *validator) checkNameQuiet(name string) (string, bool) {
	q := &validator{}
	return q.checkName("", name)
}

// checkName validates a domain name field and returns its canonical form.
func (v *validator) checkName(path, name string) (string, bool) {
	if strings.TrimSpace(name) == "" {
		v.add(path, "is required (a domain name such as app.example.com)")
		return "", false
	}
	if _, ok := dns.IsDomainName(name); !ok || strings.Contains(name, "*") || strings.Contains(name, " ") || !isASCII(name) {
		v.add(path, "%q is not a valid domain name (ASCII letters, digits, hyphens and dots, punycode for international names; no wildcards)", name)
		return "", false
	}
	return CanonicalName(name), true
}

// CheckHostName validates name as services[].name and
// endpoints[].cname are validated: a domain name of ASCII letters, digits,
// hyphens and dots (punycode for international names), no wildcards. The
// error says what is allowed. For names that other sources write (e.g.
// ExternalDNS records) and that become services later.
func CheckHostName(name string) error {
	v := &validator{}
	if _, ok := v.checkName("", name); !ok {
		return errors.New(v.errs[0].Msg)
	}
	return nil
}

// isASCII reports whether s has only ASCII bytes: lower-casing other bytes
// changes their length, so a label could outgrow 63 bytes after the check
// (found by fuzzing the annotation parser). Internationalized names go in
// their punycode form (xn--...).
func isASCII(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] >= 0x80 {
			return false
		}
	}
	return true
}

// oneOf reports whether value is empty or one of allowed (checkOneOf
// without the path).
func oneOf(value string, allowed []string) bool {
	return value == "" || slices.Contains(allowed, value)
}

// ttlInRange is checkTTL without the path.
func ttlInRange(ttl int) bool { return ttl >= 0 && ttl <= MaxTTL }

func (v *validator) checkTTL(path string, ttl int) {
	if !ttlInRange(ttl) {
		v.add(path, "%d is out of range (allowed 0..%d seconds; 0 = default)", ttl, MaxTTL)
	}
}

func (v *validator) checkOneOf(path, value string, allowed []string) {
	if !oneOf(value, allowed) {
		v.add(path, "%q is not allowed (allowed: %s)", value, strings.Join(allowed, ", "))
	}
}

func (v *validator) checkCountry(path, c string) {
	switch {
	case len(c) != 2 || strings.ToUpper(c) != c || c[0] < 'A' || c[0] > 'Z' || c[1] < 'A' || c[1] > 'Z':
		v.add(path, "%q is not an ISO 3166-1 alpha-2 country code (two upper-case letters, e.g. DE)", c)
	case countryHints[c] != "":
		v.add(path, "%q is not an ISO 3166-1 alpha-2 country code: did you mean %s?", c, countryHints[c])
	case !IsCountry(c):
		v.add(path, "%q is not an ISO 3166-1 alpha-2 country code in use (e.g. DE, US, JP; continents go under continents)", c)
	}
}

// Validate checks d and returns a *ValidationError listing every problem, or nil.
func Validate(d *Desired) error {
	v := &validator{}
	zones := v.zones(d.Zones)
	clusters := v.clusters(d.Clusters)
	v.geo(d.Geo)
	v.health("health", d.Health)
	v.ring(d.Ring)
	v.decision(d.Decision)
	v.providers(d, zones)
	v.delegations(d, zones)
	v.backstopAddresses(d)
	v.kubernetes(d.Kubernetes, zones)
	v.leaderElection("kubernetes.leader_election", d)
	v.route53Latency(d)
	v.shiftConfig(d.Shift)
	v.catalog(d.Catalog, zones)
	if d.providerZones() > 0 && d.Ring.Enabled && len(d.Ring.Seeds) > 0 && len(d.Providers.Writers) == 0 && len(d.Ring.CA) == 0 {
		v.add("providers.writers", "is required in a multi-node ring without ring.ca: list the ring node names that may push (a strict majority of them must agree on the one writer); with ring.ca the candidates come from the credentials")
	}
	names := make(map[string]string, len(d.Services)) // canonical owner name -> path that claimed it
	for i, z := range d.Zones {
		for j, ns := range z.Nameservers {
			n := CanonicalName(ns.Name)
			if _, claimed := names[n]; !claimed && zoneOf(zones, n) != "" {
				names[n] = fmt.Sprintf("zones[%d].nameservers[%d].name", i, j)
			}
		}
	}
	proberRegions := d.ProberRegions()
	for i := range d.Services {
		p := "services[" + strconv.Itoa(i) + "]"
		v.service(p, &d.Services[i], zones, clusters, names)
		if s := &d.Services[i]; s.Strategy == StrategyLatency {
			v.latency(p, s, proberRegions)
		} else if s.Latency != nil {
			v.add(p+".latency", "is only allowed with strategy latency (strategy is %s)", orDefaultString(s.Strategy, StrategyWeighted))
		}
	}
	v.capacityNamespaces(d)
	if len(v.errs) == 0 {
		return nil
	}
	return &ValidationError{Fields: v.errs}
}

// zoneOf returns the longest zone apex that contains name, or "".
func zoneOf(zones map[string]bool, name string) string {
	best := ""
	for apex := range zones {
		if dns.IsSubDomain(apex, name) && len(apex) > len(best) {
			best = apex
		}
	}
	return best
}

func (v *validator) zones(zs []Zone) map[string]bool {
	apexes := map[string]bool{}
	if len(zs) == 0 {
		v.add("zones", "at least one zone is required")
	}
	for i, z := range zs {
		p := fmt.Sprintf("zones[%d]", i)
		apex, ok := v.checkName(p+".apex", z.Apex)
		if !ok {
			continue
		}
		if apexes[apex] {
			v.add(p+".apex", "duplicate zone %q", apex)
		}
		apexes[apex] = true
		v.checkTTL(p+".ttl", z.TTL)
		v.checkTTL(p+".ns_ttl", z.NSTTL)
		v.soa(p+".soa", z.SOA)
		v.dnssec(p+".dnssec", z.DNSSEC)
		v.transfer(p+".transfer", z.Transfer)
		if len(z.Nameservers) == 0 && (z.Ring == nil || !z.Ring.Nameservers) {
			v.add(p+".nameservers", "at least one nameserver is required (or ring.nameservers: true, the sites' nameservers learned from the ring)")
		}
		seen := map[string]bool{}
		for j, ns := range z.Nameservers {
			np := fmt.Sprintf("%s.nameservers[%d]", p, j)
			name, ok := v.checkName(np+".name", ns.Name)
			if !ok {
				continue
			}
			if seen[name] {
				v.add(np+".name", "duplicate nameserver %q", name)
			}
			seen[name] = true
			v.addresses(np+".ipv4", ns.IPv4, true)
			v.addresses(np+".ipv6", ns.IPv6, false)
			inZone := dns.IsSubDomain(apex, name)
			if inZone && len(ns.IPv4)+len(ns.IPv6) == 0 {
				v.add(np, "nameserver %q is inside the zone and needs glue (ipv4 and/or ipv6)", name)
			}
			if !inZone && len(ns.IPv4)+len(ns.IPv6) > 0 {
				v.add(np, "nameserver %q is outside zone %q: glue addresses are only allowed for in-zone names", name, apex)
			}
		}
		if z.SOA.MName != "" {
			v.checkName(p+".soa.mname", z.SOA.MName)
		}
		if z.SOA.RName != "" {
			v.checkName(p+".soa.rname", z.SOA.RName)
		}
	}
	return apexes
}

func (v *validator) soa(p string, s SOA) {
	v.checkTTL(p+".refresh", s.Refresh)
	v.checkTTL(p+".retry", s.Retry)
	if s.Expire < 0 || s.Expire > 1<<31-1 {
		v.add(p+".expire", "%d is out of range (allowed 0..%d seconds; 0 = default)", s.Expire, 1<<31-1)
	}
	v.checkTTL(p+".minimum", s.Minimum)
	v.checkTTL(p+".ttl", s.TTL)
}

func (v *validator) addresses(p string, addrs []string, v4 bool) {
	for k, a := range addrs {
		ip, err := netip.ParseAddr(a)
		switch {
		case err != nil:
			v.add(fmt.Sprintf("%s[%d]", p, k), "%q is not an IP address", a)
		case v4 && !ip.Is4():
			v.add(fmt.Sprintf("%s[%d]", p, k), "%q is not an IPv4 address", a)
		case !v4 && (!ip.Is6() || ip.Is4In6()):
			v.add(fmt.Sprintf("%s[%d]", p, k), "%q is not an IPv6 address", a)
		}
	}
}

func (v *validator) clusters(cs []Cluster) map[string]bool {
	names := map[string]bool{}
	for i, c := range cs {
		p := fmt.Sprintf("clusters[%d]", i)
		if c.Name == "" {
			v.add(p+".name", "is required")
		} else if names[c.Name] {
			v.add(p+".name", "duplicate cluster %q", c.Name)
		}
		names[c.Name] = true
		if c.Region == "" {
			v.add(p+".region", "is required")
		}
		v.checkOneOf(p+".continent", c.Continent, Continents)
		if c.Country != "" {
			v.checkCountry(p+".country", c.Country)
		}
		v.checkOneOf(p+".state", c.State, []string{StateUp, StateDown})
		v.cloudRegion(p+".cloud_region", c.CloudRegion)
		if c.Heartbeat != nil {
			v.heartbeat(p+".heartbeat", c.Heartbeat, c.Kubernetes != nil)
		}
		if c.Kubernetes != nil {
			v.kubeMember(p+".kubernetes", c.Kubernetes)
		}
	}
	return names
}

func (v *validator) geo(g Geo) {
	seen := map[netip.Prefix]bool{}
	for i, n := range g.Networks {
		p := fmt.Sprintf("geo.networks[%d]", i)
		pfx, err := netip.ParsePrefix(n.CIDR)
		switch {
		case err != nil:
			v.add(p+".cidr", "%q is not a CIDR prefix (e.g. 10.1.0.0/16 or 2001:db8::/32)", n.CIDR)
		case pfx.Masked() != pfx:
			v.add(p+".cidr", "%q has host bits set (did you mean %s?)", n.CIDR, pfx.Masked())
		case seen[pfx]:
			v.add(p+".cidr", "duplicate network %s", pfx)
		}
		seen[pfx] = true
		if n.Region == "" && n.Country == "" && n.Continent == "" {
			v.add(p, "needs at least one of region, country, continent")
		}
		if n.Country != "" {
			v.checkCountry(p+".country", n.Country)
		}
		v.checkOneOf(p+".continent", n.Continent, Continents)
	}
	v.ecsTrusted(g.ECSTrusted)
}

// ecsTrusted checks geo.ecs_trusted: networks in CIDR form without host
// bits, each listed once.
func (v *validator) ecsTrusted(list []string) {
	v.errs = append(v.errs, PrefixListErrors("geo.ecs_trusted", list)...)
}

// PrefixListErrors checks a list of networks (the field at path, e.g.
// geo.ecs_trusted or server.dns.rrl.exempt): each in CIDR form without host
// bits, listed once (IPv4-mapped IPv6 networks count as IPv4).
func PrefixListErrors(path string, list []string) []FieldError {
	var errs []FieldError
	add := func(p, format string, args ...any) {
		errs = append(errs, FieldError{Path: p, Msg: fmt.Sprintf(format, args...)})
	}
	seen := map[netip.Prefix]int{}
	for i, s := range list {
		p := fmt.Sprintf("%s[%d]", path, i)
		pfx, err := netip.ParsePrefix(strings.TrimSpace(s))
		switch {
		case err != nil:
			add(p, "%q is not a CIDR prefix (e.g. 192.0.2.0/24, 2001:db8::/32, or 192.0.2.53/32 for one address)", s)
			continue
		case pfx.Masked() != pfx:
			add(p, "%q has host bits set (did you mean %s?)", s, pfx.Masked())
			continue
		}
		pfx = unmapPrefix(pfx)
		if j, dup := seen[pfx]; dup {
			add(p, "duplicate network %s (already %s[%d])", pfx, path, j)
		}
		seen[pfx] = i
	}
	return errs
}

func (v *validator) service(p string, s *Service, zones, clusters map[string]bool, names map[string]string) {
	name := v.serviceName(p, s, zones, names)
	v.serviceSettings(p, s)
	v.endpoints(p, s, name, clusters)
	strategy := s.Strategy
	if strategy == "" {
		strategy = StrategyWeighted
	}
	if s.Failover != nil && strategy != StrategyFailover {
		v.add(p+".failover", "is only allowed with strategy failover (strategy is %s)", strategy)
	}
	if s.Geo != nil && strategy != StrategyGeo {
		v.add(p+".geo", "is only allowed with strategy geo (strategy is %s)", strategy)
	}
	if s.Capacity != nil {
		v.capacity(p+".capacity", s.Capacity, strategy)
	}
	switch strategy {
	case StrategyFailover:
		v.failover(p, s, clusters)
	case StrategyGeo:
		if s.Geo != nil {
			v.geoPolicy(p+".geo", s.Geo, clusters)
		}
	}
}

// serviceName checks the service's name (canonical, inside a zone, unique,
// no CNAME at an apex), records it in names and returns it canonical ("" when
// it is not a valid name).
func (v *validator) serviceName(p string, s *Service, zones map[string]bool, names map[string]string) string {
	name, ok := v.checkName(p+".name", s.Name)
	if !ok {
		return name
	}
	apex := zoneOf(zones, name)
	switch {
	case apex == "":
		v.add(p+".name", "%q is outside every zone (zones: %s)", name, strings.Join(sortedKeys(zones), ", "))
	case names[name] != "":
		v.add(p+".name", "duplicate name %q (already used by %s)", name, names[name])
	}
	names[name] = p
	if apex == name {
		for _, e := range s.Endpoints {
			if e.CNAME != "" {
				v.add(p+".name", "a CNAME service cannot sit at the zone apex %q", apex)
				break
			}
		}
	}
	return name
}

// serviceSettings checks the service's own settings: strategy, TTLs, answer
// count, all-down behaviour, stickiness, min_healthy and health check.
func (v *validator) serviceSettings(p string, s *Service) {
	// The checks below build a field's path only when it has a problem:
	// on a good file of 100 000 services the paths cost more than the
	// checks (BenchmarkLoad/validate in internal/config).
	if !oneOf(s.Strategy, Strategies) {
		v.checkOneOf(p+".strategy", s.Strategy, Strategies)
	}
	if !ttlInRange(s.TTL) {
		v.checkTTL(p+".ttl", s.TTL)
	}
	if !ttlInRange(s.FailOpenTTL) {
		v.checkTTL(p+".fail_open_ttl", s.FailOpenTTL)
	}
	if !ttlInRange(s.DoubtTTL) {
		v.checkTTL(p+".doubt_ttl", s.DoubtTTL)
	}
	if s.MaxAnswers < 0 || s.MaxAnswers > MaxMaxAnswers {
		v.add(p+".max_answers", "%d is out of range (allowed 1..%d; 0 = default %d)", s.MaxAnswers, MaxMaxAnswers, DefaultMaxAnswers)
	}
	switch {
	case s.FallbackAnswer == "true" || s.FallbackAnswer == "false":
		v.add(p+".fallback_answer", "%q is not allowed (allowed: %s; it is no longer a boolean: true is on, false is off)", s.FallbackAnswer, strings.Join(FallbackModes, ", "))
	case !oneOf(s.FallbackAnswer, FallbackModes):
		v.checkOneOf(p+".fallback_answer", s.FallbackAnswer, FallbackModes)
	}
	if s.FallbackAnswer == FallbackOn {
		if s.MaxAnswers > 1 {
			v.add(p+".fallback_answer", "on needs one record per reply (max_answers 1; it is %d): a reply of several records already lets clients fall back", s.MaxAnswers)
		}
		if s.Sticky == StickySubnet {
			v.add(p+".fallback_answer", "on does not combine with sticky: subnet (a sticky answer ranks its records per network)")
		}
		if len(s.Endpoints) > 0 && s.Endpoints[0].CNAME != "" {
			v.add(p+".fallback_answer", "on needs address endpoints: a CNAME answer is one record (RFC 2181 10.1), so it has no second to fall back on")
		}
	}
	if whenAllDown := []string{WhenAllDownFailOpen, WhenAllDownNoData}; !oneOf(s.WhenAllDown, whenAllDown) {
		v.checkOneOf(p+".when_all_down", s.WhenAllDown, whenAllDown)
	}
	if !oneOf(s.Sticky, StickyModes) {
		v.checkOneOf(p+".sticky", s.Sticky, StickyModes)
	}
	if s.MinHealthy != nil {
		v.checkMinHealthy(p+".min_healthy", s.MinHealthy)
	}
	if s.HealthCheck != nil {
		v.check(p+".health_check", s.HealthCheck, s)
	}
}

// endpoints checks the service's endpoints: each one's target, cluster,
// weight, priority and state, no duplicate targets, and no CNAME mixed with
// addresses. name is the service's canonical name.
func (v *validator) endpoints(p string, s *Service, name string, clusters map[string]bool) {
	if len(s.Endpoints) == 0 {
		v.add(p+".endpoints", "at least one endpoint is required")
	}
	var nAddr, nCNAME int
	seen := map[string]bool{}
	for j, e := range s.Endpoints {
		ep := func() string { return p + ".endpoints[" + strconv.Itoa(j) + "]" }
		switch {
		case e.Address != "" && e.CNAME != "":
			v.add(ep(), "set either address or cname, not both")
		case e.Address != "":
			nAddr++
			ip, err := netip.ParseAddr(e.Address)
			if err != nil || ip.Zone() != "" || ip.Is4In6() {
				v.add(ep()+".address", "%q is not an IPv4 or IPv6 address", e.Address)
			} else if key := ip.String(); seen[key] {
				v.add(ep()+".address", "duplicate endpoint address %s", ip)
			} else {
				seen[key] = true
			}
		case e.CNAME != "":
			nCNAME++
			if t, ok := v.checkName(ep()+".cname", e.CNAME); ok {
				if t == name {
					v.add(ep()+".cname", "%q points at the service itself", e.CNAME)
				} else if seen[t] {
					v.add(ep()+".cname", "duplicate endpoint target %s", t)
				}
				seen[t] = true
			}
		default:
			v.add(ep(), "needs an address (IPv4 or IPv6) or a cname")
		}
		v.endpointSettings(ep, &e, clusters)
	}
	if nAddr > 0 && nCNAME > 0 {
		v.add(p+".endpoints", "a CNAME cannot be mixed with addresses at one name (%d addresses, %d cnames)", nAddr, nCNAME)
	}
}

// endpointSettings checks one endpoint's cluster, weight, priority and
// state; ep builds the endpoint's path, only when there is a problem.
func (v *validator) endpointSettings(ep func() string, e *Endpoint, clusters map[string]bool) {
	if e.Cluster == "" {
		v.add(ep()+".cluster", "is required (%s)", known(clusters))
	} else if !clusters[e.Cluster] {
		v.add(ep()+".cluster", "unknown cluster %q (%s)", e.Cluster, known(clusters))
	}
	if e.Weight != nil && (*e.Weight < 0 || *e.Weight > MaxWeight) {
		v.add(ep()+".weight", "%d is out of range (allowed 0..%d)", *e.Weight, MaxWeight)
	}
	if e.Priority != nil && (*e.Priority < 0 || *e.Priority > 1000) {
		v.add(ep()+".priority", "%d is out of range (allowed 0..1000, lower is preferred)", *e.Priority)
	}
	if states := []string{StateUp, StateDown}; !oneOf(e.State, states) {
		v.checkOneOf(ep()+".state", e.State, states)
	}
}

func (v *validator) failover(p string, s *Service, clusters map[string]bool) {
	if s.Failover == nil || s.Failover.Order == nil {
		for _, e := range s.Endpoints {
			if e.Priority == nil {
				v.add(p+".failover.order", "is required: list the clusters primary first (or give every endpoint a priority)")
				return
			}
		}
		return
	}
	if len(s.Failover.Order) == 0 {
		v.add(p+".failover.order", "is empty: list the clusters primary first, e.g. [us-east, eu-west]")
		return
	}
	inOrder := map[string]bool{}
	for k, c := range s.Failover.Order {
		op := func() string { return fmt.Sprintf("%s.failover.order[%d]", p, k) }
		switch {
		case !clusters[c]:
			v.add(op(), "unknown cluster %q (%s)", c, known(clusters))
		case inOrder[c]:
			v.add(op(), "cluster %q is listed twice", c)
		}
		inOrder[c] = true
	}
	for j, e := range s.Endpoints {
		if e.Cluster != "" && clusters[e.Cluster] && !inOrder[e.Cluster] {
			v.add(fmt.Sprintf("%s.endpoints[%d].cluster", p, j), "cluster %q is not in failover.order %v", e.Cluster, s.Failover.Order)
		}
		if e.Priority != nil {
			v.add(fmt.Sprintf("%s.endpoints[%d].priority", p, j), "priority cannot be combined with failover.order (use one or the other)")
		}
	}
}

func (v *validator) geoPolicy(p string, g *GeoPolicy, clusters map[string]bool) {
	checkClusters := func(base func() string, field string, cs []string) {
		for k, c := range cs {
			if !clusters[c] {
				v.add(fmt.Sprintf("%s%s[%d]", base(), field, k), "unknown cluster %q (%s)", c, known(clusters))
			}
		}
	}
	for i, r := range g.Rules {
		rp := func() string { return fmt.Sprintf("%s.rules[%d]", p, i) }
		if len(r.Countries)+len(r.Regions)+len(r.Continents) == 0 {
			v.add(rp(), "needs at least one of countries, regions, continents")
		}
		if len(r.Clusters) == 0 {
			v.add(rp()+".clusters", "at least one cluster is required")
		}
		for k, c := range r.Countries {
			v.checkCountry(fmt.Sprintf("%s.countries[%d]", rp(), k), c)
		}
		for k, c := range r.Continents {
			if !oneOf(c, Continents) {
				v.checkOneOf(fmt.Sprintf("%s.continents[%d]", rp(), k), c, Continents)
			}
		}
		checkClusters(rp, ".clusters", r.Clusters)
	}
	checkClusters(func() string { return p }, ".default", g.Default)
}

func sortedKeys(m map[string]bool) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

// known describes the defined clusters for error messages.
func known(clusters map[string]bool) string {
	if len(clusters) == 0 {
		return "no clusters are defined: add them under clusters"
	}
	return "known: " + strings.Join(sortedKeys(clusters), ", ")
}
