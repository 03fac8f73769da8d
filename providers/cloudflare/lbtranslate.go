package cloudflare

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/meridian-gslb/meridian/internal/model"
	"github.com/meridian-gslb/meridian/providers"
)

// Load Balancing translation (load_balancing: required|preferred): per
// service one load balancer on the service name, one pool per cluster,
// with health_checks: backstop one monitor per distinct health check.
// Objects refer to each other by name (pools) and key (monitors) here; the
// sync resolves them to Cloudflare ids.

// LBOptions are the zone settings the translation needs.
type LBOptions struct {
	Owner    string // providers.owner_id: marks the objects as ours
	TTL      int    // the zone's ttl (0: the service's; 1: automatic = 30)
	Proxied  bool
	Backstop bool // health_checks: backstop: attach monitors to the pools
}

// LBSpec is the desired Load Balancing objects of one service.
type LBSpec struct {
	Service      string       // FQDN with the trailing dot
	LoadBalancer LoadBalancer // pools named by Pool.Name (ids filled in by the sync)
	Pools        []Pool       // Monitor holds a monitor key (MonitorSpec.Key), not an id
	Monitor      *MonitorSpec // nil: no monitor
}

// MonitorSpec is a desired monitor: Key identifies it (a hash of its
// settings and zone, also in its description) so that services with the
// same check share one monitor and a changed check is a new monitor.
type MonitorSpec struct {
	Key     string
	Monitor Monitor
}

// The ownership mark: every object Meridian writes has a description
// starting with markPrefix and carrying owner=<owner id> (and zone=, the
// zone it belongs to); pool names start with "meridian-".
const (
	markPrefix = "managed by meridian"
	poolPrefix = "meridian-"
)

// Monitor settings Cloudflare accepts. The interval floor is the one every
// plan with Load Balancing allows (Pro: 60 s; Business and Enterprise
// allow less, but an API call with less fails on Pro).
const (
	monitorMinInterval = 60
	monitorMaxInterval = 3600
	monitorMaxTimeout  = 10
	monitorMaxCount    = 100 // consecutive_up/down: Meridian's rise/fall range
)

// continentRegions maps Meridian's continent codes to Cloudflare Load
// Balancing regions (region_pools keys). Antarctica has none.
var continentRegions = map[string][]string{
	"EU": {"WEU", "EEU"},
	"NA": {"WNAM", "ENAM"},
	"SA": {"NSAM", "SSAM"},
	"OC": {"OC"},
	"AF": {"NAF", "SAF"},
	"AS": {"ME", "SAS", "SEAS", "NEAS"},
	"AN": nil,
}

// TranslateLB maps the views of the services inside zone to load balancers,
// pools and monitors. It is pure. Warnings say what could not be expressed
// (a dns check as a monitor, geo.networks regions, an HTTP method Cloudflare
// monitors lack); the caller logs them.
func TranslateLB(views []providers.ServiceView, zone string, o LBOptions) (specs []LBSpec, warnings []string) {
	zone = model.CanonicalName(zone)
	for _, v := range views {
		if len(v.Endpoints) == 0 || (v.Name != zone && !strings.HasSuffix(v.Name, "."+zone)) {
			continue
		}
		spec, warn := translateService(v, zone, o)
		warnings = append(warnings, warn...)
		specs = append(specs, spec)
	}
	slices.SortFunc(specs, func(a, b LBSpec) int { return strings.Compare(a.Service, b.Service) })
	return specs, warnings
}

// poolUnit is the endpoints that make one pool.
type poolUnit struct {
	key       string // the cluster, or cluster/group for a cluster in several failover groups
	cluster   string
	endpoints []int
}

// translateService is the load balancer, pools and monitor of one service.
func translateService(v providers.ServiceView, zone string, o LBOptions) (LBSpec, []string) {
	var warnings []string
	cz := cfName(zone)
	units := poolUnits(v)
	spec := LBSpec{Service: v.Name}

	var monitorKey string
	if o.Backstop && v.HealthCheck != nil {
		var warn []string
		spec.Monitor, warn = monitorSpec(v, cz, o.Owner)
		warnings = append(warnings, warn...)
		if spec.Monitor != nil {
			monitorKey = spec.Monitor.Key
		}
	}
	names := map[string]string{} // unit key -> pool name
	for _, u := range units {
		p := servicePool(v, u, cz, o.Owner, monitorKey)
		names[u.key] = p.Name
		spec.Pools = append(spec.Pools, p)
	}

	lb := LoadBalancer{
		Name:        cfName(v.Name),
		Description: fmt.Sprintf("%s owner=%s zone=%s service=%s", markPrefix, o.Owner, cz, cfName(v.Name)),
		Enabled:     true,
		Proxied:     o.Proxied,
	}
	if !o.Proxied {
		lb.TTL = lbTTL(o.TTL, v.TTL)
	}
	switch v.Strategy {
	case model.StrategyFailover:
		lb.SteeringPolicy = "off"
		for _, u := range units {
			lb.DefaultPools = append(lb.DefaultPools, names[u.key])
		}
	case model.StrategyGeo:
		lb.SteeringPolicy = "geo"
		var warn []string
		lb.DefaultPools, lb.CountryPools, lb.RegionPools, warn = geoPools(v, units, names)
		warnings = append(warnings, warn...)
	default: // weighted, roundrobin (every endpoint weighs 1)
		lb.SteeringPolicy = "random"
		lb.DefaultPools, lb.PoolWeights = randomPools(v, units, names)
	}
	lb.FallbackPool = lb.DefaultPools[len(lb.DefaultPools)-1]
	spec.LoadBalancer = lb
	return spec, warnings
}

// monitorSpec is the monitor of v's health check, marked with its key (nil
// when the check has no Cloudflare monitor).
func monitorSpec(v providers.ServiceView, cz, owner string) (*MonitorSpec, []string) {
	m, warnings := monitorFor(v.Name, *v.HealthCheck)
	if m == nil {
		return nil, warnings
	}
	key := hashOf(cz, monitorIdentity(*m))[:16]
	m.Description = fmt.Sprintf("%s owner=%s zone=%s monitor=%s service=%s", markPrefix, owner, cz, key, cfName(v.Name))
	return &MonitorSpec{Key: key, Monitor: *m}, warnings
}

// servicePool is the pool of one unit of v, enabled while one of its
// origins is.
func servicePool(v providers.ServiceView, u poolUnit, cz, owner, monitorKey string) Pool {
	p := Pool{
		Name:           poolName(owner, v.Name, u.key),
		Description:    fmt.Sprintf("%s owner=%s zone=%s service=%s cluster=%s", markPrefix, owner, cz, cfName(v.Name), u.key),
		MinimumOrigins: 1,
		Monitor:        monitorKey,
	}
	p.Origins = originsOf(v, u.endpoints)
	for _, o := range p.Origins {
		p.Enabled = p.Enabled || o.Enabled
	}
	return p
}

// randomPools are the default pools and pool weights of random steering:
// each pool weighs its endpoints' effective weights, at least 0.01 while
// they have any; pools whose endpoints are all configured with weight 0
// (standby) come last.
func randomPools(v providers.ServiceView, units []poolUnit, names map[string]string) ([]string, map[string]float64) {
	var pools, standby []string
	total := 0
	sums := map[string]int{}
	for _, u := range units {
		configured := 0
		for _, i := range u.endpoints {
			sums[u.key] += v.Endpoints[i].Effective
			configured += v.Endpoints[i].Weight
		}
		total += sums[u.key]
		if configured == 0 {
			standby = append(standby, names[u.key])
		} else {
			pools = append(pools, names[u.key])
		}
	}
	pools = append(pools, standby...)
	weights := map[string]float64{}
	for _, u := range units {
		w := 0.0
		if total > 0 && sums[u.key] > 0 {
			w = max(round2(float64(sums[u.key])/float64(total)), 0.01)
		}
		weights[names[u.key]] = w
	}
	return pools, weights
}

// originsOf makes the origins of a pool. An origin weighs the endpoint's
// effective weight (what it should carry now: a standby promoted because
// every weighted endpoint is out carries 1) over the largest of the pool's
// enabled origins, since Cloudflare sends nothing to an origin of weight 0.
// When every enabled origin would weigh 0 (standbys not promoted, in a
// pool of their own, whose pool weight is 0), they weigh 1 each, so the
// pool can answer when steering falls back to it; disabled origins weigh 0.
func originsOf(v providers.ServiceView, endpoints []int) []Origin {
	out := make([]Origin, 0, len(endpoints))
	maxW := 0
	for _, i := range endpoints {
		e := v.Endpoints[i]
		o := Origin{Name: e.Target, Address: originAddress(e), Enabled: e.Available || e.Effective > 0}
		if o.Enabled {
			maxW = max(maxW, e.Effective)
		}
		out = append(out, o)
	}
	for j, i := range endpoints {
		e, o := v.Endpoints[i], &out[j]
		switch {
		case !o.Enabled:
		case maxW == 0:
			o.Weight = 1
		case e.Effective > 0:
			o.Weight = max(round2(float64(e.Effective)/float64(maxW)), 0.01)
		}
	}
	return out
}

// poolUnits groups the endpoints into pools: one per cluster, in the order
// clusters first appear; for failover, in failover order, and a cluster
// whose endpoints sit in several failover groups (priorities) gets one pool
// per group.
func poolUnits(v providers.ServiceView) []poolUnit {
	if v.Strategy == model.StrategyFailover && len(v.Failover) > 0 {
		groupsOf := map[string]int{}
		for _, g := range v.Failover {
			seen := map[string]bool{}
			for _, i := range g {
				if c := v.Endpoints[i].Cluster; !seen[c] {
					seen[c] = true
					groupsOf[c]++
				}
			}
		}
		var out []poolUnit
		for gi, g := range v.Failover {
			idx := map[string]int{}
			for _, i := range g {
				c := v.Endpoints[i].Cluster
				j, ok := idx[c]
				if !ok {
					key := c
					if groupsOf[c] > 1 {
						key = c + "-" + strconv.Itoa(gi+1)
					}
					out = append(out, poolUnit{key: key, cluster: c})
					j = len(out) - 1
					idx[c] = j
				}
				out[j].endpoints = append(out[j].endpoints, i)
			}
		}
		return out
	}
	var out []poolUnit
	idx := map[string]int{}
	for i, e := range v.Endpoints {
		j, ok := idx[e.Cluster]
		if !ok {
			out = append(out, poolUnit{key: e.Cluster, cluster: e.Cluster})
			j = len(out) - 1
			idx[e.Cluster] = j
		}
		out[j].endpoints = append(out[j].endpoints, i)
	}
	return out
}

// geoPools maps a geo policy to Cloudflare's pool lists, each in Meridian's
// order: the matched clusters, then geo.default, then every other cluster.
// Cloudflare checks country_pools, then region_pools, then default_pools;
// Meridian checks rules (country, then continent), then the clusters' own
// tags (country, then continent). So country tags are mapped only when no
// rule names a continent (they would otherwise win over the continent rule).
// Rules by region (geo.networks) and region tags cannot be expressed.
func geoPools(v providers.ServiceView, units []poolUnit, names map[string]string) (def []string, country, region map[string][]string, warnings []string) {
	chain := newPoolChain(v, units, names)
	def = chain.of(nil)
	country, region = map[string][]string{}, map[string][]string{}
	continentRules, warnings := geoRulePools(v, chain, country, region)
	byCountry, byContinent := tagIndex{clusters: map[string][]string{}}, tagIndex{clusters: map[string][]string{}}
	for _, u := range units {
		e := v.Endpoints[u.endpoints[0]]
		byCountry.add(strings.ToUpper(e.Country), u.cluster)
		byContinent.add(e.Continent, u.cluster)
	}
	if !continentRules {
		for _, c := range byCountry.order {
			if country[c] == nil {
				country[c] = chain.of(byCountry.clusters[c])
			}
		}
	}
	for _, c := range byContinent.order {
		for _, reg := range continentRegions[c] {
			if region[reg] == nil {
				region[reg] = chain.of(byContinent.clusters[c])
			}
		}
	}
	return def, country, region, warnings
}

// poolChain orders the pools of a service for one geo match.
type poolChain struct {
	poolsOf     map[string][]string // cluster -> pool names
	all         []string            // every pool, in unit order
	defClusters []string            // geo.default
}

func newPoolChain(v providers.ServiceView, units []poolUnit, names map[string]string) poolChain {
	pc := poolChain{poolsOf: map[string][]string{}}
	for _, u := range units {
		pc.poolsOf[u.cluster] = append(pc.poolsOf[u.cluster], names[u.key])
		pc.all = append(pc.all, names[u.key])
	}
	if v.Geo != nil {
		pc.defClusters = v.Geo.Default
	}
	return pc
}

// of is the pools of clusters, then those of geo.default, then every
// other pool, each once.
func (pc poolChain) of(clusters []string) []string {
	var out []string
	add := func(cs []string) {
		for _, c := range cs {
			for _, p := range pc.poolsOf[c] {
				if !slices.Contains(out, p) {
					out = append(out, p)
				}
			}
		}
	}
	add(clusters)
	add(pc.defClusters)
	for _, p := range pc.all {
		if !slices.Contains(out, p) {
			out = append(out, p)
		}
	}
	return out
}

// geoRulePools fills country and region from v's geo rules (the first rule
// of a country or region wins) and reports whether a rule names a
// continent; rules by region (geo.networks) are warnings.
func geoRulePools(v providers.ServiceView, chain poolChain, country, region map[string][]string) (continentRules bool, warnings []string) {
	if v.Geo == nil {
		return false, nil
	}
	for _, r := range v.Geo.Rules {
		for _, c := range r.Countries {
			if c = strings.ToUpper(c); country[c] == nil {
				country[c] = chain.of(r.Clusters)
			}
		}
		for _, c := range r.Continents {
			continentRules = true
			for _, reg := range continentRegions[c] {
				if region[reg] == nil {
					region[reg] = chain.of(r.Clusters)
				}
			}
		}
		if len(r.Regions) > 0 {
			warnings = append(warnings, fmt.Sprintf("service %s: geo rule regions %v (geo.networks) cannot be expressed by Cloudflare Load Balancing: those clients get the pools of their country or continent", v.Name, r.Regions))
		}
	}
	return continentRules, warnings
}

// tagIndex is the clusters of each value of a location tag (country or
// continent), the values in the order first seen.
type tagIndex struct {
	clusters map[string][]string
	order    []string
}

// add records that cluster has the tag value tag ("" none).
func (t *tagIndex) add(tag, cluster string) {
	if tag == "" {
		return
	}
	if t.clusters[tag] == nil {
		t.order = append(t.order, tag)
	}
	if !slices.Contains(t.clusters[tag], cluster) {
		t.clusters[tag] = append(t.clusters[tag], cluster)
	}
}

// monitorFor maps a health check to a monitor (nil: the kind has none).
func monitorFor(service string, c model.Check) (*Monitor, []string) {
	var warnings []string
	switch c.Kind {
	case model.CheckHTTP, model.CheckHTTPS, model.CheckTCP:
	default:
		return nil, []string{fmt.Sprintf("service %s: a %s health check has no Cloudflare monitor: its pools are not checked by Cloudflare (health_checks: backstop needs http, https or tcp)", service, c.Kind)}
	}
	m := &Monitor{
		Type:            c.Kind,
		Port:            c.Port,
		Interval:        clamp(int(math.Ceil(c.Interval.D().Seconds())), monitorMinInterval, monitorMaxInterval),
		Timeout:         clamp(int(math.Ceil(c.Timeout.D().Seconds())), 1, monitorMaxTimeout),
		Retries:         0, // Meridian's fall (consecutive_down) absorbs a lost probe
		ConsecutiveDown: clamp(c.Fall, 1, monitorMaxCount),
		ConsecutiveUp:   clamp(c.Rise, 1, monitorMaxCount),
	}
	if c.Kind == model.CheckTCP {
		m.Method = "connection_established"
		return m, nil
	}
	m.Method = strings.ToUpper(c.Method)
	if m.Method != "GET" && m.Method != "HEAD" {
		warnings = append(warnings, fmt.Sprintf("service %s: Cloudflare monitors send GET or HEAD, not %s: the monitor sends GET", service, c.Method))
		m.Method = "GET"
	}
	m.Path = c.Path
	if m.Path == "" {
		m.Path = "/"
	}
	if c.Host != "" {
		m.Header = map[string][]string{"Host": {c.Host}}
	}
	codes, follow, ok := expectedCodes(c.ExpectStatus)
	if !ok {
		return nil, append(warnings, fmt.Sprintf("service %s: expect_status %v cannot be expressed as one Cloudflare expected_codes value (a code, a class such as 2xx, or 2xx with 3xx codes): its pools get no Cloudflare monitor, since a monitor failing what Meridian passes would take healthy endpoints out", service, c.ExpectStatus))
	}
	m.ExpectedCodes, m.FollowRedirects = codes, follow
	m.ExpectedBody = c.BodyContains
	// Cloudflare cannot be given a CA: with a private one its probe would
	// fail verification and take healthy endpoints out.
	m.AllowInsecure = c.InsecureSkipVerify || c.CAFile != ""
	return m, warnings
}

// expectedCodes maps expect_status (codes and ranges) to Cloudflare's one
// expected_codes value, a code ("200") or a class ("2xx"), and
// follow_redirects. Meridian's checker does not follow redirects, so
// neither does the monitor (a followed 301 ends on the target's status,
// which "301" never matches), with one exception: the accepted codes are
// the whole 2xx class plus 3xx codes (the default 200-399), which becomes
// "2xx" following redirects, so a redirect is judged by where it leads.
// That monitor fails only a redirect whose target does not answer 2xx.
// Anything else (["200", "404"], 200-499, a part of a class) cannot be
// expressed: ok is false, and the service gets no monitor, since a failing
// monitor takes an endpoint out even where Meridian passes it (ADR 0011).
func expectedCodes(expect []string) (codes string, follow, ok bool) {
	if len(expect) == 0 {
		expect = []string{model.DefaultExpectStatus}
	}
	var accepted [600]bool
	for _, s := range expect {
		a, b, valid := model.ParseStatusRange(s)
		if !valid {
			return "", false, false
		}
		for c := a; c <= b; c++ {
			accepted[c] = true
		}
	}
	var classes [6]int // accepted codes per class (1xx..5xx)
	n, one := 0, 0
	for c := 100; c < 600; c++ {
		if accepted[c] {
			classes[c/100]++
			n++
			one = c
		}
	}
	switch {
	case n == 1:
		return strconv.Itoa(one), false, true
	case n == 100 && classes[one/100] == 100:
		return strconv.Itoa(one/100) + "xx", false, true
	case classes[2] == 100 && classes[3] > 0 && n == 100+classes[3]:
		return "2xx", true, true
	}
	return "", false, false
}

// monitorIdentity is what distinguishes two monitors (every setting but the
// description).
func monitorIdentity(m Monitor) string {
	m.ID, m.Description = "", ""
	return fmt.Sprintf("%+v", m)
}

// originAddress is the origin address of an endpoint: the IP, or the CNAME
// target without the trailing dot.
func originAddress(e providers.EndpointView) string {
	if e.Type == "CNAME" {
		return cfName(e.Target)
	}
	return e.Target
}

// lbTTL is the load balancer's TTL: the zone's when it is set (not 0 or 1,
// automatic), else the service's; within Cloudflare's 30..86400.
func lbTTL(zoneTTL int, serviceTTL uint32) int {
	ttl := int(serviceTTL)
	if zoneTTL > 1 {
		ttl = zoneTTL
	}
	return clamp(ttl, 30, 86400)
}

// poolName is the pool's name: meridian-<owner>-<hash>-<cluster>, letters,
// digits, - and _ only. The hash (of the service and cluster) keeps it
// unique and stable; owner and cluster are there to be read.
func poolName(owner, service, key string) string {
	c := sanitize(key)
	if len(c) > 32 {
		c = c[:32]
	}
	return poolPrefix + sanitize(owner) + "-" + hashOf(service, key)[:10] + "-" + c
}

func sanitize(s string) string {
	b := []byte(s)
	for i, c := range b {
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '-' || c == '_') {
			b[i] = '_'
		}
	}
	return string(b)
}

func hashOf(parts ...string) string {
	h := sha256.Sum256([]byte(strings.Join(parts, "\x00")))
	return hex.EncodeToString(h[:])
}

// round2 rounds to 0.01.
func round2(f float64) float64 { return math.Round(f*100) / 100 }

func clamp(v, lo, hi int) int { return min(max(v, lo), hi) }

// mark is the parsed ownership mark of a description (nil: none).
func mark(desc string) map[string]string {
	rest, ok := strings.CutPrefix(desc, markPrefix+" ")
	if !ok {
		return nil
	}
	out := map[string]string{}
	for _, f := range strings.Fields(rest) {
		if k, v, ok := strings.Cut(f, "="); ok {
			out[k] = v
		}
	}
	return out
}

// ours reports whether desc marks an object of owner in zone (cz: the
// zone as Cloudflare writes it).
func ours(desc, owner, cz string) bool {
	m := mark(desc)
	return m != nil && m["owner"] == owner && m["zone"] == cz
}
