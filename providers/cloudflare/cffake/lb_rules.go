package cffake

import (
	"math"
	"net/http"
	"net/netip"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/meridian-gslb/meridian/internal/model"
)

// Load Balancing error codes. Cloudflare's Load Balancing API answers
// 1001 for an unknown object and 1002 for a refused body, with messages
// ending in ": validation failed" (e.g. "the origin list length must be in
// range [1, 0]: validation failed", seen in hashicorp/terraform#17948). A
// zone or account without Load Balancing also gets 1002, "load balancing
// not enabled for zone" (as recorded by alchemy-run's Cloudflare tests);
// the fake sends it with HTTP 403 (third-party docs report a 403), so a
// client tells it from a validation error (HTTP 400) by the status. An
// object still referenced cannot be deleted: 1005 "This object is
// referenced by other objects, delete them first." with HTTP 412
// (terraform-provider-cloudflare#66, #6575; cloudflare-docs#3686).
// Duplicate names answer 1002 too: the code Cloudflare uses for them was
// not found, so that is an assumption.
const (
	CodeLBNotFound    = 1001 // no monitor, pool or load balancer with that id
	CodeLBValidation  = 1002 // the body breaks a rule (HTTP 400)
	CodeLBNotEntitled = 1002 // Load Balancing is not enabled (HTTP 403)
	CodeLBInUse       = 1005 // deleting a monitor or pool that is referenced (HTTP 412)
)

// Limits the fake enforces. Cloudflare's depend on the plan and add-on;
// these are representative.
const (
	MaxOriginsPerPool  = 20   // origins in one pool
	MinMonitorInterval = 5    // seconds (Cloudflare: 60 on Pro, lower on higher plans)
	MaxMonitorInterval = 3600 // seconds
	MaxDescription     = 1024 // characters of a description
)

var (
	poolNameRE      = regexp.MustCompile(`^[A-Za-z0-9_-]+$`)
	expectedCodesRE = regexp.MustCompile(`^[1-5]([0-9]{2}|xx)$`)
	popRE           = regexp.MustCompile(`^[A-Z]{3}$`)
)

func invalid(format string, args ...any) *apiErr {
	e := refuse(http.StatusBadRequest, CodeLBValidation, format, args...)
	e.message += ": validation failed"
	return e
}

// normalizeMonitor fills the type-dependent defaults and checks m alone.
func normalizeMonitor(m *Monitor) *apiErr {
	m.Type = strings.ToLower(m.Type)
	if m.Type == "" {
		m.Type = "http"
	}
	switch m.Type {
	case "http", "https":
		if err := normalizeHTTPMonitor(m); err != nil {
			return err
		}
	case "tcp":
		m.Method = "connection_established" // the only method of a TCP check
		if m.Port == 0 {
			return invalid("port is required for tcp monitors")
		}
	case "udp_icmp", "smtp":
		if m.Port == 0 {
			return invalid("port is required for %s monitors", m.Type)
		}
	case "icmp_ping":
	default:
		return invalid("type %q is not one of http, https, tcp, udp_icmp, icmp_ping, smtp", m.Type)
	}
	return checkMonitorRanges(m)
}

// normalizeHTTPMonitor fills the defaults of an HTTP or HTTPS monitor and
// checks its HTTP fields.
func normalizeHTTPMonitor(m *Monitor) *apiErr {
	m.Method = strings.ToUpper(m.Method)
	if m.Method == "" {
		m.Method = "GET"
	}
	if m.Method != "GET" && m.Method != "HEAD" {
		return invalid("method %q is not allowed for %s monitors (GET or HEAD)", m.Method, m.Type)
	}
	if m.Path == "" {
		m.Path = "/"
	}
	if !strings.HasPrefix(m.Path, "/") {
		return invalid("path %q must start with /", m.Path)
	}
	if m.ExpectedCodes == "" {
		m.ExpectedCodes = "200"
	}
	if !expectedCodesRE.MatchString(m.ExpectedCodes) {
		return invalid("expected_codes %q must be a status code (200) or a range (2xx)", m.ExpectedCodes)
	}
	for k := range m.Header {
		if strings.EqualFold(k, "User-Agent") {
			return invalid("the User-Agent header cannot be overridden")
		}
	}
	return nil
}

// checkMonitorRanges checks the numeric fields and the description of a
// monitor of any type.
func checkMonitorRanges(m *Monitor) *apiErr {
	switch {
	case m.Interval < MinMonitorInterval || m.Interval > MaxMonitorInterval:
		return invalid("interval is not in range [%d, %d]", MinMonitorInterval, MaxMonitorInterval)
	case m.Timeout < 1 || m.Timeout > 10:
		return invalid("timeout must be in range [1, 10]")
	case m.Timeout >= m.Interval:
		return invalid("timeout (%d) must be less than interval (%d)", m.Timeout, m.Interval)
	case m.Retries < 0 || m.Retries > 5:
		return invalid("retries must be in range [0, 5]")
	case m.Port < 0 || m.Port > 65535:
		return invalid("port must be in range [0, 65535]")
	case m.ConsecutiveUp < 0 || m.ConsecutiveDown < 0:
		return invalid("consecutive_up and consecutive_down must not be negative")
	case len(m.Description) > MaxDescription:
		return invalid("description must be at most %d characters", MaxDescription)
	}
	return nil
}

// storeMonitor validates m as the new state of cur (nil: a create) and
// stores it. Callers hold s.mu.
func (s *Server) storeMonitor(cur *Monitor, m Monitor) (*Monitor, *apiErr) {
	if err := normalizeMonitor(&m); err != nil {
		return nil, err
	}
	now := s.now()
	m.ModifiedOn = now
	if cur != nil {
		m.ID, m.CreatedOn = cur.ID, cur.CreatedOn
	} else {
		m.ID, m.CreatedOn = firstOf(m.ID, newID()), now
	}
	s.acct.monitors[m.ID] = &m
	return &m, nil
}

// normalizePool checks p alone; origins' disabled_at follow prev.
func normalizePool(p *Pool, prev *Pool, now time.Time) *apiErr {
	switch {
	case p.Name == "":
		return invalid("name is required")
	case !poolNameRE.MatchString(p.Name):
		return invalid("pool name %q may only contain letters, digits, - and _", p.Name)
	case len(p.Origins) < 1 || len(p.Origins) > MaxOriginsPerPool:
		return invalid("the origin list length must be in range [1, %d]", MaxOriginsPerPool)
	case p.MinimumOrigins < 1:
		return invalid("minimum_origins must be at least 1")
	case len(p.Description) > MaxDescription:
		return invalid("description must be at most %d characters", MaxDescription)
	case (p.Latitude == nil) != (p.Longitude == nil):
		return invalid("latitude and longitude must be set together")
	case p.Latitude != nil && (math.Abs(*p.Latitude) > 90 || math.Abs(*p.Longitude) > 180):
		return invalid("latitude must be in [-90, 90] and longitude in [-180, 180]")
	}
	if p.OriginSteering != nil && !slices.Contains([]string{"", "random", "hash", "least_outstanding_requests", "least_connections"}, p.OriginSteering.Policy) {
		return invalid("origin_steering.policy %q is not one of random, hash, least_outstanding_requests, least_connections", p.OriginSteering.Policy)
	}
	for _, r := range p.CheckRegions {
		if !lbRegions[r] && r != "ALL_REGIONS" {
			return invalid("check_regions: %q is not a region code", r)
		}
	}
	names, endpoints := map[string]bool{}, map[string]bool{}
	for i := range p.Origins {
		o := &p.Origins[i]
		if err := normalizeOrigin(o); err != nil {
			return err
		}
		if names[o.Name] {
			return invalid("origin name %q is used twice in the pool", o.Name)
		}
		names[o.Name] = true
		ep := strings.Join([]string{o.Address, strconv.Itoa(o.Port), o.VirtualNetworkID}, "|")
		if endpoints[ep] {
			return invalid("origin %q: address %s is used twice in the pool (differ by port or virtual network)", o.Name, o.Address)
		}
		endpoints[ep] = true
		o.DisabledAt = disabledAt(o.Enabled, prevOriginDisabledAt(prev, o.Name), now)
	}
	var prevAt *time.Time
	if prev != nil {
		prevAt = prev.DisabledAt
	}
	p.DisabledAt = disabledAt(p.Enabled, prevAt, now)
	return nil
}

func normalizeOrigin(o *Origin) *apiErr {
	o.Address = strings.TrimSpace(o.Address)
	switch {
	case o.Name == "":
		return invalid("origin name is required")
	case o.Address == "":
		return invalid("origin %q: address is required", o.Name)
	case o.Weight < 0 || o.Weight > 1 || !multipleOf(o.Weight, 0.01):
		return invalid("origin %q: weight %v must be in range [0, 1] in steps of 0.01", o.Name, o.Weight)
	case o.Port < 0 || o.Port > 65535:
		return invalid("origin %q: port must be in range [0, 65535]", o.Name)
	case o.Header != nil && len(o.Header.Host) > 1:
		return invalid("origin %q: at most one Host header", o.Name)
	}
	if a, err := netip.ParseAddr(o.Address); err == nil {
		if a.Zone() != "" {
			return invalid("origin %q: address %q must not carry a zone", o.Name, o.Address)
		}
		o.Address = a.String()
	} else if o.Address = strings.TrimSuffix(strings.ToLower(o.Address), "."); !hostname(o.Address, false) {
		return invalid("origin %q: address %q is neither an IP address nor a host name", o.Name, o.Address)
	}
	return nil
}

// disabledAt keeps the time an object was disabled (Cloudflare shows
// disabled_at only while it is disabled).
func disabledAt(enabled bool, prev *time.Time, now time.Time) *time.Time {
	switch {
	case enabled:
		return nil
	case prev != nil:
		t := *prev
		return &t
	default:
		return &now
	}
}

func prevOriginDisabledAt(prev *Pool, name string) *time.Time {
	if prev == nil {
		return nil
	}
	for _, o := range prev.Origins {
		if o.Name == name {
			return o.DisabledAt
		}
	}
	return nil
}

// storePool validates p as the new state of cur (nil: a create) against the
// account and stores it. Callers hold s.mu.
func (s *Server) storePool(cur *Pool, p Pool) (*Pool, *apiErr) {
	now := s.now()
	if err := normalizePool(&p, cur, now); err != nil {
		return nil, err
	}
	if p.Monitor != "" && s.acct.monitors[p.Monitor] == nil {
		return nil, invalid("monitor %q does not exist", p.Monitor)
	}
	for _, o := range s.acct.pools {
		if o.Name == p.Name && (cur == nil || o.ID != cur.ID) {
			return nil, invalid("a pool named %q already exists", p.Name)
		}
	}
	p.ModifiedOn = now
	if cur != nil {
		p.ID, p.CreatedOn = cur.ID, cur.CreatedOn
	} else {
		p.ID, p.CreatedOn = firstOf(p.ID, newID()), now
	}
	s.acct.pools[p.ID] = &p
	return &p, nil
}

// normalizeLB checks lb against its zone and the account's pools.
func (s *Server) normalizeLB(z *zone, lb *LoadBalancer) *apiErr {
	name := strings.TrimSuffix(strings.ToLower(strings.TrimSpace(lb.Name)), ".")
	switch {
	case name == "":
		return invalid("name is required")
	case name == "@":
		name = z.name
	case !strings.Contains(name, "."):
		name += "." + z.name
	}
	if (name != z.name && !strings.HasSuffix(name, "."+z.name)) || !hostname(name, true) {
		return invalid("name %q is not a host name in zone %s", lb.Name, z.name)
	}
	lb.Name, lb.ZoneName = name, z.name
	if lb.SessionAffinity == "" {
		lb.SessionAffinity = "none"
	}
	if lb.TTL == 0 {
		lb.TTL = 30
	}
	switch {
	case len(lb.DefaultPools) == 0:
		return invalid("default_pools must list at least one pool")
	case lb.FallbackPool == "":
		return invalid("fallback_pool is required")
	case !slices.Contains([]string{"", "off", "geo", "random", "dynamic_latency", "proximity", "least_outstanding_requests", "least_connections"}, lb.SteeringPolicy):
		return invalid("steering_policy %q is not one of off, geo, random, dynamic_latency, proximity, least_outstanding_requests, least_connections", lb.SteeringPolicy)
	case !slices.Contains([]string{"none", "cookie", "ip_cookie", "header"}, lb.SessionAffinity):
		return invalid("session_affinity %q is not one of none, cookie, ip_cookie, header", lb.SessionAffinity)
	case lb.TTL < 30 || lb.TTL > 86400:
		return invalid("ttl must be in range [30, 86400]")
	}
	if len(lb.Description) > MaxDescription {
		return invalid("description must be at most %d characters", MaxDescription)
	}
	if ls := lb.LocationStrategy; ls != nil {
		if !slices.Contains([]string{"", "pop", "resolver_ip"}, ls.Mode) || !slices.Contains([]string{"", "always", "never", "proximity", "geo"}, ls.PreferECS) {
			return invalid("location_strategy: mode must be pop or resolver_ip, prefer_ecs always, never, proximity or geo")
		}
	}
	if err := s.checkPools("default_pools", lb.DefaultPools); err != nil {
		return err
	}
	if err := s.checkPools("fallback_pool", []string{lb.FallbackPool}); err != nil {
		return err
	}
	if err := s.checkPoolMaps(lb); err != nil {
		return err
	}
	return checkRandomSteering(lb)
}

func (s *Server) checkPoolMaps(lb *LoadBalancer) *apiErr {
	for field, m := range map[string]*map[string][]string{"region_pools": &lb.RegionPools, "country_pools": &lb.CountryPools, "pop_pools": &lb.PopPools} {
		if *m == nil {
			*m = map[string][]string{}
		}
		for k, ids := range *m {
			var ok bool
			switch field {
			case "region_pools":
				ok = lbRegions[k]
			case "country_pools":
				ok = model.IsCountry(k)
			default:
				ok = popRE.MatchString(k)
			}
			if !ok {
				return invalid("%s: %q is not a %s", field, k, map[string]string{
					"region_pools":  "Cloudflare region code (WNAM, ENAM, WEU, EEU, NSAM, SSAM, OC, ME, NAF, SAF, SAS, SEAS, NEAS)",
					"country_pools": "ISO 3166-1 alpha-2 country code in upper case",
					"pop_pools":     "Cloudflare PoP code (three upper-case letters)",
				}[field])
			}
			if len(ids) == 0 {
				return invalid("%s[%s] must list at least one pool", field, k)
			}
			if err := s.checkPools(field+"["+k+"]", ids); err != nil {
				return err
			}
		}
	}
	return nil
}

func checkRandomSteering(lb *LoadBalancer) *apiErr {
	rs := lb.RandomSteering
	if rs == nil {
		return nil
	}
	if rs.DefaultWeight < 0 || rs.DefaultWeight > 1 || !multipleOf(rs.DefaultWeight, 0.1) {
		return invalid("random_steering.default_weight %v must be in range [0, 1] in steps of 0.1", rs.DefaultWeight)
	}
	used := lbPools(lb, false)
	for id, w := range rs.PoolWeights {
		if w < 0 || w > 1 {
			return invalid("random_steering.pool_weights[%s] %v must be in range [0, 1]", id, w)
		}
		if !used[id] {
			return invalid("random_steering.pool_weights: pool %q is not a pool of this load balancer", id)
		}
	}
	return nil
}

func (s *Server) checkPools(field string, ids []string) *apiErr {
	for _, id := range ids {
		if s.acct.pools[id] == nil {
			return invalid("%s: pool %q does not exist", field, id)
		}
	}
	return nil
}

// lbPools is every pool a load balancer references (with or without the
// keys of random_steering.pool_weights).
func lbPools(lb *LoadBalancer, weights bool) map[string]bool {
	out := map[string]bool{lb.FallbackPool: true}
	for _, id := range lb.DefaultPools {
		out[id] = true
	}
	for _, m := range []map[string][]string{lb.RegionPools, lb.CountryPools, lb.PopPools} {
		for _, ids := range m {
			for _, id := range ids {
				out[id] = true
			}
		}
	}
	if weights && lb.RandomSteering != nil {
		for id := range lb.RandomSteering.PoolWeights {
			out[id] = true
		}
	}
	return out
}

// storeLB validates lb as the new state of cur (nil: a create) and stores
// it in z. Callers hold s.mu.
func (s *Server) storeLB(z *zone, cur *LoadBalancer, lb LoadBalancer) (*LoadBalancer, *apiErr) {
	if err := s.normalizeLB(z, &lb); err != nil {
		return nil, err
	}
	for _, o := range z.lbs {
		if o.Name == lb.Name && (cur == nil || o.ID != cur.ID) {
			return nil, invalid("a load balancer named %q already exists in zone %s", lb.Name, z.name)
		}
	}
	now := s.now()
	lb.ModifiedOn = now
	if cur != nil {
		lb.ID, lb.CreatedOn = cur.ID, cur.CreatedOn
	} else {
		lb.ID, lb.CreatedOn = firstOf(lb.ID, newID()), now
	}
	z.lbs[lb.ID] = &lb
	return &lb, nil
}

// referenced says what keeps a monitor or pool from being deleted ("" when
// nothing does). Callers hold s.mu.
func (s *Server) referenced(monitorID, poolID string) string {
	if monitorID != "" {
		for _, p := range s.acct.pools {
			if p.Monitor == monitorID {
				return "pool " + p.Name
			}
		}
	}
	if poolID != "" {
		for _, z := range s.zones {
			for _, lb := range z.lbs {
				if lbPools(lb, true)[poolID] {
					return "load balancer " + lb.Name
				}
			}
		}
	}
	return ""
}

// multipleOf reports whether v is a whole number of steps (to a millionth of a step).
func multipleOf(v, step float64) bool {
	n := v / step
	return math.Abs(n-math.Round(n)) < 1e-6
}
