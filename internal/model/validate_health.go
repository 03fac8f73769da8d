package model

import (
	"fmt"
	"net"
	"net/netip"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/miekg/dns"
)

func (v *validator) health(p string, h Health) {
	v.timing(p, h.Interval, h.Timeout, h.Fall, h.Rise)
	v.reprobe(p, h.Interval, h.ReprobeInterval)
}

// reprobe checks a fast re-probe cadence against its interval (zero means
// "inherit" for both).
func (v *validator) reprobe(p string, interval, reprobe Duration) {
	if reprobe == 0 {
		return
	}
	if reprobe.D() < 50*time.Millisecond {
		v.add(p+".reprobe_interval", "%s is too short (at least 50ms)", reprobe)
	}
	if interval != 0 && reprobe > interval {
		v.add(p+".reprobe_interval", "%s is longer than the interval %s", reprobe, interval)
	}
}

// timing checks interval/timeout/fall/rise, where zero means "inherit".
func (v *validator) timing(p string, interval, timeout Duration, fall, rise int) {
	if interval != 0 && interval.D() < 100*time.Millisecond {
		v.add(p+".interval", "%s is too short (at least 100ms)", interval)
	}
	if timeout != 0 && timeout.D() < 10*time.Millisecond {
		v.add(p+".timeout", "%s is too short (at least 10ms)", timeout)
	}
	if interval != 0 && timeout != 0 && timeout > interval {
		v.add(p+".timeout", "%s is longer than the interval %s", timeout, interval)
	}
	if fall < 0 || fall > 100 {
		v.add(p+".fall", "%d is out of range (allowed 1..100; 0 = default %d)", fall, DefaultFall)
	}
	if rise < 0 || rise > 100 {
		v.add(p+".rise", "%d is out of range (allowed 1..100; 0 = default %d)", rise, DefaultRise)
	}
}

// ValidateHealthCheck validates c as services[].health_check is
// validated, for a service whose endpoints are CNAMEs (cname) or
// addresses; the *ValidationError lists every problem under
// health_check. For checks that other sources write (e.g. ExternalDNS
// records) and that become services later.
func ValidateHealthCheck(c *Check, cname bool) error {
	s := &Service{Endpoints: []Endpoint{{Address: "192.0.2.1"}}}
	if cname {
		s.Endpoints = []Endpoint{{CNAME: "target.example."}}
	}
	v := &validator{}
	v.check("health_check", c, s)
	if len(v.errs) == 0 {
		return nil
	}
	return &ValidationError{Fields: v.errs}
}

var httpMethods = []string{"GET", "HEAD", "POST", "OPTIONS"}

func (v *validator) check(p string, c *Check, s *Service) {
	v.checkOneOf(p+".kind", c.Kind, CheckKinds)
	v.timing(p, c.Interval, c.Timeout, c.Fall, c.Rise)
	v.reprobe(p, c.Interval, c.ReprobeInterval)
	if c.Port < 0 || c.Port > 65535 {
		v.add(p+".port", "%d is out of range (allowed 1..65535)", c.Port)
	}
	if c.Kind == CheckTCP && c.Port == 0 {
		v.add(p+".port", "is required for tcp checks")
	}
	if c.Kind != "" && c.Kind != CheckNone {
		for _, e := range s.Endpoints {
			if e.CNAME != "" {
				v.add(p+".kind", "%s checks need address endpoints: CNAME endpoints cannot be probed (use kind none)", c.Kind)
				break
			}
		}
	}
	http := c.Kind == CheckHTTP || c.Kind == CheckHTTPS
	if c.Method != "" {
		v.checkOneOf(p+".method", c.Method, httpMethods)
	}
	if c.Path != "" && !strings.HasPrefix(c.Path, "/") {
		v.add(p+".path", "%q must start with /", c.Path)
	}
	for i, st := range c.ExpectStatus {
		if _, _, ok := ParseStatusRange(st); !ok {
			v.add(fmt.Sprintf("%s.expect_status[%d]", p, i), "%q is not a status code or range (e.g. 200 or 200-299, within 100..599)", st)
		}
	}
	if !http {
		for _, f := range []struct{ name, val string }{{"method", c.Method}, {"path", c.Path}, {"host", c.Host}, {"body_contains", c.BodyContains}} {
			if f.val != "" {
				v.add(p+"."+f.name, "is only used by http and https checks (kind is %q)", c.Kind)
			}
		}
	}
	if c.Kind != CheckHTTPS && (c.SNI != "" || c.CAFile != "" || c.InsecureSkipVerify) {
		v.add(p, "sni, ca_file and insecure_skip_verify are only used by https checks (kind is %q)", c.Kind)
	}
	if c.Kind != CheckDNS && (c.QueryName != "" || c.QueryType != "" || c.ExpectRcode != "") {
		v.add(p, "query_name, query_type and expect_rcode are only used by dns checks (kind is %q)", c.Kind)
	}
	if c.QueryName != "" {
		v.checkName(p+".query_name", c.QueryName)
	}
	if c.QueryType != "" {
		if _, ok := dns.StringToType[strings.ToUpper(c.QueryType)]; !ok {
			v.add(p+".query_type", "%q is not a DNS type (e.g. A, AAAA, SOA)", c.QueryType)
		}
	}
	if c.ExpectRcode != "" {
		if _, ok := dns.StringToRcode[strings.ToUpper(c.ExpectRcode)]; !ok {
			v.add(p+".expect_rcode", "%q is not an rcode (e.g. NOERROR, NXDOMAIN, REFUSED)", c.ExpectRcode)
		}
	}
}

// ParseStatusRange parses "200" or "200-299".
func ParseStatusRange(s string) (lo, hi int, ok bool) {
	a, b, isRange := strings.Cut(strings.TrimSpace(s), "-")
	lo, err := strconv.Atoi(strings.TrimSpace(a))
	if err != nil {
		return 0, 0, false
	}
	hi = lo
	if isRange {
		if hi, err = strconv.Atoi(strings.TrimSpace(b)); err != nil {
			return 0, 0, false
		}
	}
	return lo, hi, lo >= 100 && hi <= 599 && lo <= hi
}

func (v *validator) ring(r Ring) {
	p := "ring"
	if r.RejoinInterval != 0 && r.RejoinInterval.D() < time.Second {
		v.add(p+".rejoin_interval", "%s is too short (at least 1s)", r.RejoinInterval)
	}
	v.peers(p, r)
	if !r.Enabled {
		return
	}
	if r.Region == "" {
		v.add(p+".region", "is required when the ring is enabled (the region this prober runs in)")
	}
	if r.Bind != "" {
		v.hostPort(p+".bind", r.Bind, true)
	}
	if r.Advertise != "" {
		v.hostPort(p+".advertise", r.Advertise, true)
	}
	for i, s := range r.Seeds {
		v.hostPort(fmt.Sprintf("%s.seeds[%d]", p, i), s, false)
	}
	if r.RequireEncryption && r.KeyFile == "" {
		v.add(p+".key_file", "is required because require_encryption is set")
	}
	m := r.Memberlist
	if m.GossipNodes < 0 || m.GossipNodes > 64 {
		v.add(p+".memberlist.gossip_nodes", "%d is out of range (allowed 1..64; 0 = default)", m.GossipNodes)
	}
	if m.SuspicionMult < 0 || m.SuspicionMult > 100 {
		v.add(p+".memberlist.suspicion_mult", "%d is out of range (allowed 1..100; 0 = default)", m.SuspicionMult)
	}
}

// hostPort checks host:port; with ipOnly the host must be an IP address.
func (v *validator) hostPort(path, s string, ipOnly bool) {
	host, port, err := net.SplitHostPort(s)
	if err != nil {
		v.add(path, "%q is not host:port (e.g. 10.0.0.1:7946)", s)
		return
	}
	if n, err := strconv.Atoi(port); err != nil || n < 0 || n > 65535 {
		v.add(path, "%q has an invalid port (allowed 0..65535)", s)
	}
	if ipOnly && net.ParseIP(host) == nil {
		v.add(path, "%q: the host must be an IP address", s)
	}
	if host == "" && !ipOnly {
		v.add(path, "%q has no host", s)
	}
}

func (v *validator) decision(d Decision) {
	p := "decision"
	if d.FreshVotes < 0 || d.FreshVotes > 100 {
		v.add(p+".fresh_votes", "%d is out of range (allowed 1..100; 0 = default %d)", d.FreshVotes, DefaultFreshVotes)
	}
	if d.MinRegions < 0 || d.MinRegions > 16 {
		v.add(p+".min_regions", "%d is out of range (allowed 1..16; 0 = default %d)", d.MinRegions, DefaultMinRegions)
	}
	if d.HoldDown != 0 && d.HoldDownMax != 0 && d.HoldDown > d.HoldDownMax {
		v.add(p+".hold_down", "%s is longer than hold_down_max %s", d.HoldDown, d.HoldDownMax)
	}
	holdDown := d.HoldDown
	if holdDown == 0 {
		holdDown = Duration(DefaultHoldDown)
	}
	if d.HoldDownMin < 0 || (d.HoldDownMin != 0 && d.HoldDownMin.D() < 100*time.Millisecond) {
		v.add(p+".hold_down_min", "%s is too short (at least 100ms; 0 = default %s)", d.HoldDownMin, Duration(DefaultHoldDownMin))
	} else if d.HoldDownMin > holdDown {
		v.add(p+".hold_down_min", "%s is longer than hold_down %s", d.HoldDownMin, holdDown)
	}
	holdDownMin := d.HoldDownMin
	if holdDownMin == 0 {
		holdDownMin = Duration(min(DefaultHoldDownMin, holdDown.D()))
	}
	if d.FirstHoldDown < 0 || (d.FirstHoldDown != 0 && d.FirstHoldDown.D() < 100*time.Millisecond) {
		v.add(p+".first_hold_down", "%s is too short (at least 100ms; 0 = default %s)", d.FirstHoldDown, Duration(DefaultFirstHoldDown))
	} else if d.FirstHoldDown > holdDownMin {
		v.add(p+".first_hold_down", "%s is longer than hold_down_min %s", d.FirstHoldDown, holdDownMin)
	}
	if d.FlapWindow != 0 && (d.FlapWindow.D() < time.Second || d.FlapWindow.D() > 24*time.Hour) {
		v.add(p+".flap_window", "%s is out of range (allowed 1s..24h; 0 = default %s)", d.FlapWindow, Duration(DefaultFlapWindow))
	}
	if d.Brake < 0 || d.Brake > 1 {
		v.add(p+".brake", "%v is out of range (allowed 0 < brake <= 1; 0 = default %v)", d.Brake, DefaultBrake)
	}
	v.checkMinHealthy(p+".min_healthy", d.MinHealthy)
}

func (v *validator) heartbeat(p string, h *Heartbeat, kube bool) {
	if h.URL == "" && !h.Agent && !kube {
		v.add(p, "needs url (a readiness URL to poll), agent: true, or the cluster's kubernetes member (its /readyz is polled)")
	}
	if h.URL != "" {
		u, err := url.Parse(h.URL)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			v.add(p+".url", "%q is not an http(s) URL (e.g. https://10.0.0.1:6443/readyz)", h.URL)
		}
	}
	if h.Interval != 0 && h.Interval.D() < 100*time.Millisecond {
		v.add(p+".interval", "%s is too short (at least 100ms)", h.Interval)
	}
	interval := h.Interval
	if interval == 0 {
		interval = Duration(DefaultHeartbeatPeriod)
	}
	if h.Grace != 0 && h.Grace <= interval {
		v.add(p+".grace", "%s must be longer than the interval %s", h.Grace, interval)
	}
}

var modes = []string{ModeDirect, ModeDelegate}

func (v *validator) providers(d *Desired, zones map[string]bool) {
	pr := d.Providers
	p := "providers"
	if d.providerZones() > 0 && pr.OwnerID == "" {
		v.add(p+".owner_id", "is required with route53, cloudflare or rfc2136 zones and zone delegations: it marks the records this installation owns (e.g. meridian-prod)")
	}
	if pr.OwnerID != "" && (strings.ContainsAny(pr.OwnerID, ",=+\" \t") || len(pr.OwnerID) > 64) {
		v.add(p+".owner_id", "%q may not contain spaces, quotes or , = + and is at most 64 characters", pr.OwnerID)
	}
	if pr.Debounce != 0 && pr.Debounce.D() < 10*time.Millisecond {
		v.add(p+".debounce", "%s is too short (at least 10ms)", pr.Debounce)
	}
	if pr.ResyncInterval != 0 && pr.ResyncInterval.D() < 10*time.Second {
		v.add(p+".resync_interval", "%s is too short (at least 10s)", pr.ResyncInterval)
	}
	seen := map[string]bool{}
	for i := range pr.Route53 {
		v.route53Zone(fmt.Sprintf("%s.route53[%d]", p, i), &pr.Route53[i], seen, zones)
	}
	for i := range pr.RFC2136 {
		v.rfc2136Zone(fmt.Sprintf("%s.rfc2136[%d]", p, i), &pr.RFC2136[i], seen, zones)
	}
	for i := range pr.Cloudflare {
		v.cloudflareZone(fmt.Sprintf("%s.cloudflare[%d]", p, i), &pr.Cloudflare[i], seen, zones)
	}
}

// providerZone checks the zone and mode every provider entry has: a valid
// name configured once across all providers (seen), and, in mode delegate,
// a Meridian zone below it.
func (v *validator) providerZone(path, z, mode string, seen, zones map[string]bool) {
	name, ok := v.checkName(path+".zone", z)
	if ok {
		if seen[name] {
			v.add(path+".zone", "zone %q is configured twice", name)
		}
		seen[name] = true
	}
	v.checkOneOf(path+".mode", mode, modes)
	if mode == ModeDelegate && ok {
		if !below(zones, name) {
			v.add(path+".mode", "delegate needs a Meridian zone below %q to delegate (zones: %s)", name, strings.Join(sortedKeys(zones), ", "))
		}
	}
}

// route53Zone checks one providers.route53[] entry.
func (v *validator) route53Zone(path string, z *Route53Zone, seen, zones map[string]bool) {
	v.providerZone(path, z.Zone, z.Mode, seen, zones)
	if z.RequestsPerSecond < 0 || z.RequestsPerSecond > 100 {
		v.add(path+".requests_per_second", "%v is out of range (allowed 0 < rps <= 100; 0 = default %v)", z.RequestsPerSecond, DefaultRoute53RPS)
	}
	if z.RequestsPerSecond != 0 && (z.RequestBudget != 0 || z.RequestBudgetWindow != 0) {
		v.add(path+".requests_per_second", "is the old name of request_budget (per request_budget_window 1s): set request_budget and request_budget_window only")
	}
	v.providerAPI(path, z.ProviderAPI, DefaultRoute53Budget, DefaultRoute53BudgetWindow)
	v.healthChecks(path, z.HealthChecks, z.Mode)
	if w := z.RequestBudgetWindow.D(); z.RequestBudget > 0 && w > 0 && float64(z.RequestBudget)/w.Seconds() > 100 {
		v.add(path+".request_budget", "%d per %s is more than 100 requests per second (Route 53 allows 5 per account)", z.RequestBudget, z.RequestBudgetWindow)
	}
	v.endpointURL(path, z.Endpoint)
}

// rfc2136Zone checks one providers.rfc2136[] entry.
func (v *validator) rfc2136Zone(path string, z *RFC2136Zone, seen, zones map[string]bool) {
	v.providerZone(path, z.Zone, ModeDirect, seen, zones) // delegate by default: checked below, on zone
	v.checkOneOf(path+".mode", z.Mode, modes)
	if name, ok := v.checkNameQuiet(z.Zone); ok && z.Mode != ModeDirect && !below(zones, name) {
		v.add(path+".zone", "an rfc2136 zone only holds delegations and needs a Meridian zone below %q (zones: %s); set mode: direct to write the answers of the services inside it instead", name, strings.Join(sortedKeys(zones), ", "))
	}
	if strings.TrimSpace(z.Server) == "" {
		v.add(path+".server", "is required: the parent's primary that takes the updates, IP or IP:port (e.g. 192.0.2.53 or [2001:db8::53]:53)")
	} else if _, err := ParseNotifyTarget(z.Server); err != nil {
		v.add(path+".server", "%q is not IP or IP:port (e.g. 192.0.2.53 or [2001:db8::53]:5353; a host name is not accepted: whoever answers for it would get the updates)", z.Server)
	}
	if strings.TrimSpace(z.TSIGKeyFile) == "" {
		v.add(path+".tsig_key_file", "is required: updates and transfers of the parent are signed with TSIG (a file from `tsig-keygen -a hmac-sha256 NAME`)")
	}
	v.providerAPI(path, z.ProviderAPI, DefaultRFC2136Budget, DefaultRFC2136BudgetWindow)
}

// cloudflareZone checks one providers.cloudflare[] entry.
func (v *validator) cloudflareZone(path string, z *CloudflareZone, seen, zones map[string]bool) {
	v.providerZone(path, z.Zone, z.Mode, seen, zones)
	if z.TTL < 0 || z.TTL > 86400 || (z.TTL > 1 && z.TTL < 30) {
		v.add(path+".ttl", "%d is not allowed (1 = automatic, or 30..86400; 0 = the service's TTL)", z.TTL)
	}
	v.providerAPI(path, z.ProviderAPI, DefaultCloudflareBudget, DefaultCloudflareBudgetWindow)
	switch z.LoadBalancing {
	case "", LoadBalancingOff:
		if z.HealthChecks == HealthChecksBackstop {
			v.add(path+".health_checks", "backstop attaches Cloudflare monitors to load balancing pools: set load_balancing: required or preferred")
		}
	case LoadBalancingRequired, LoadBalancingPreferred:
		if z.Mode == ModeDelegate {
			v.add(path+".load_balancing", "%s needs mode direct (a delegated zone holds only NS records)", z.LoadBalancing)
		}
	default:
		v.add(path+".load_balancing", "%q is not allowed (allowed: off, required, preferred)", z.LoadBalancing)
	}
	v.healthChecks(path, z.HealthChecks, z.Mode)
	if z.AccountID != "" && !isHexID(z.AccountID) {
		v.add(path+".account_id", "%q is not a Cloudflare account id (32 hex digits)", z.AccountID)
	}
	v.endpointURL(path, z.Endpoint)
}

// endpointURL checks an entry's optional API endpoint override is a URL.
func (v *validator) endpointURL(path, endpoint string) {
	if endpoint == "" {
		return
	}
	if u, err := url.Parse(endpoint); err != nil || u.Scheme == "" || u.Host == "" {
		v.add(path+".endpoint", "%q is not a URL", endpoint)
	}
}

// below reports whether a Meridian zone lies strictly below name.
func below(zones map[string]bool, name string) bool {
	for apex := range zones {
		if dns.IsSubDomain(name, apex) && apex != name {
			return true
		}
	}
	return false
}

// healthChecks checks a provider zone's health_checks.
func (v *validator) healthChecks(path, hc, mode string) {
	switch hc {
	case "", HealthChecksOff:
	case HealthChecksBackstop:
		if mode == ModeDelegate {
			v.add(path+".health_checks", "backstop needs mode direct (a delegated zone holds only NS records)")
		}
	default:
		v.add(path+".health_checks", "%q is not allowed (allowed: off, backstop)", hc)
	}
}

// isHexID reports whether s is a 32-hex-digit Cloudflare id.
func isHexID(s string) bool {
	if len(s) != 32 {
		return false
	}
	for _, c := range s {
		if !('0' <= c && c <= '9' || 'a' <= c && c <= 'f') {
			return false
		}
	}
	return true
}

// providerAPI checks the API call settings of one provider zone; budget and
// window are the provider's defaults, for the messages.
func (v *validator) providerAPI(path string, c ProviderAPI, budget int, window time.Duration) {
	if c.RequestBudget < 0 || c.RequestBudget > 100000 {
		v.add(path+".request_budget", "%d is out of range (allowed 1..100000 requests per request_budget_window; 0 = default %d per %s)", c.RequestBudget, budget, Duration(window))
	}
	if w := c.RequestBudgetWindow.D(); w != 0 && (w < 100*time.Millisecond || w > time.Hour) {
		v.add(path+".request_budget_window", "%s is out of range (allowed 100ms..1h; 0 = default %s)", c.RequestBudgetWindow, Duration(window))
	}
	if c.MaxAttempts < 0 || c.MaxAttempts > 20 {
		v.add(path+".max_attempts", "%d is out of range (allowed 1..20; 0 = default %d)", c.MaxAttempts, DefaultProviderMaxAttempts)
	}
	if b := c.Backoff.D(); b != 0 && (b < 10*time.Millisecond || b > time.Minute) {
		v.add(path+".backoff", "%s is out of range (allowed 10ms..1m; 0 = default %s)", c.Backoff, Duration(DefaultProviderBackoff))
	}
	if b := c.MaxBackoff.D(); b != 0 && (b < 10*time.Millisecond || b > 10*time.Minute) {
		v.add(path+".max_backoff", "%s is out of range (allowed 10ms..10m; 0 = default %s)", c.MaxBackoff, Duration(DefaultProviderMaxBackoff))
	}
	if c.Backoff != 0 && c.MaxBackoff != 0 && c.MaxBackoff < c.Backoff {
		v.add(path+".max_backoff", "%s is shorter than backoff %s", c.MaxBackoff, c.Backoff)
	}
	if t := c.RequestTimeout.D(); t != 0 && (t < 100*time.Millisecond || t > 10*time.Minute) {
		v.add(path+".request_timeout", "%s is out of range (allowed 100ms..10m; 0 = default %s)", c.RequestTimeout, Duration(DefaultProviderRequestTimeout))
	}
}

// nonPublic are the ranges Route 53 health checkers cannot probe ("local,
// private, non-routable, or multicast ranges": RFC 5735, RFC 6598, RFC 5156).
var nonPublic = func() []netip.Prefix {
	var out []netip.Prefix
	for _, p := range []string{
		"0.0.0.0/8", "10.0.0.0/8", "100.64.0.0/10", "127.0.0.0/8", "169.254.0.0/16", "172.16.0.0/12",
		"192.0.0.0/24", "192.0.2.0/24", "192.88.99.0/24", "192.168.0.0/16", "198.18.0.0/15",
		"198.51.100.0/24", "203.0.113.0/24", "224.0.0.0/4", "240.0.0.0/4",
		"::/128", "::1/128", "::ffff:0:0/96", "fc00::/7", "fe80::/10", "ff00::/8", "2001:db8::/32", "2001::/32", "2002::/16",
	} {
		out = append(out, netip.MustParsePrefix(p))
	}
	return out
}()

// NonPublic reports the range of a when the clouds' health checkers cannot
// reach it (Route 53: "local, private, non-routable, or multicast ranges").
func NonPublic(a netip.Addr) (netip.Prefix, bool) {
	for _, p := range nonPublic {
		if p.Contains(a.Unmap()) || p.Contains(a) {
			return p, true
		}
	}
	return netip.Prefix{}, false
}

// backstopAddresses refuses what would fail at sync time or never pass: a
// backstop check (Route 53 health check, Cloudflare monitor) on an endpoint
// address the cloud's checkers cannot reach (private, loopback,
// documentation, ...). Route 53 refuses to create such a check; a
// Cloudflare monitor would fail for ever and, since a failing cloud check
// wins (ADR 0011), take the pool out. A zone with an endpoint override (a
// fake, a proxy) leaves the rule to that endpoint. Endpoints from
// Kubernetes are checked by the adapters, which report the refusal.
func (v *validator) backstopAddresses(d *Desired) {
	type zone struct{ path, apex, cloud string }
	var zones []zone
	for i, z := range d.Providers.Route53 {
		if z.HealthChecks == HealthChecksBackstop && z.Endpoint == "" {
			zones = append(zones, zone{fmt.Sprintf("providers.route53[%d]", i), CanonicalName(z.Zone), "Route 53 health checkers"})
		}
	}
	for i, z := range d.Providers.Cloudflare {
		if z.HealthChecks == HealthChecksBackstop && z.Endpoint == "" {
			zones = append(zones, zone{fmt.Sprintf("providers.cloudflare[%d]", i), CanonicalName(z.Zone), "Cloudflare monitors"})
		}
	}
	for _, z := range zones {
		for si, s := range d.Services {
			if s.HealthCheck == nil || (s.HealthCheck.Kind != "http" && s.HealthCheck.Kind != "https" && s.HealthCheck.Kind != "tcp") {
				continue
			}
			if name := CanonicalName(s.Name); name != z.apex && !strings.HasSuffix(name, "."+z.apex) {
				continue
			}
			for ei, e := range s.Endpoints {
				a, err := netip.ParseAddr(e.Address)
				if err != nil {
					continue
				}
				if p, ok := NonPublic(a); ok {
					v.add(fmt.Sprintf("services[%d].endpoints[%d].address", si, ei),
						"%s is in %s, which %s cannot reach: %s.health_checks: backstop needs public endpoint addresses (or set it to off for this zone)", e.Address, p, z.cloud, z.path)
				}
			}
		}
	}
}
