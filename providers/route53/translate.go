package route53

import (
	"maps"
	"math"
	"slices"
	"strings"

	"github.com/meridian-gslb/meridian/internal/model"
	"github.com/meridian-gslb/meridian/providers"
	"github.com/meridian-gslb/meridian/providers/plan"
)

// Set identifiers of the failover and geolocation record sets.
const (
	setPrimary   = "primary"
	setSecondary = "secondary"
	setGeoDef    = "geo-default"
)

// Translate maps the services inside zone to Route 53 record sets (direct
// mode), one kind of record set per strategy and address family; see
// README.md for the table. Every set of a service carries its TTL. The
// result is sorted by key and deterministic. No health checks and no
// IP-based sets: TranslateWith adds them. Pure.
func Translate(views []providers.ServiceView, zone string) []plan.Record {
	return TranslateWith(views, zone, Objects{})
}

// Objects are the provider objects record sets refer to, as
// Provider.PrepareObjects settled them.
type Objects struct {
	ZoneID string // hosted zone id, the target zone of the IP-based default aliases
	// Checks maps a health check's identity (checkSpec.key) to its id. A
	// set whose endpoints all have a check gets it (one endpoint) or the
	// CALCULATED check over them (several); nil: no checks (backstop off).
	Checks map[string]string
	CIDR   *CIDRObjects // nil: geolocation only, no IP-based sets
}

// CIDRObjects is the zone's CIDR collection.
type CIDRObjects struct {
	CollectionID string
	Locations    map[string]bool // locations the collection holds now
}

// TranslateWith is Translate with the health checks and CIDR collection of
// objs attached. Pure.
func TranslateWith(views []providers.ServiceView, zone string, objs Objects) []plan.Record {
	out, _ := translate(views, zone, objs)
	return out
}

// translator is one translation: the objects it reads and the health
// checks the sets would carry (needs), by key, including those objs lacks.
type translator struct {
	objs  Objects
	needs map[string]checkSpec
}

// translate is TranslateWith that also returns the checks the sets need,
// sorted by key: every endpoint check, and the CALCULATED checks whose
// children objs has. Pure.
func translate(views []providers.ServiceView, zone string, objs Objects) ([]plan.Record, []checkSpec) {
	tr := &translator{objs: objs, needs: map[string]checkSpec{}}
	zone = canonicalName(zone)
	var out []plan.Record
	for _, v := range views {
		name := canonicalName(v.Name)
		if name != zone && !strings.HasSuffix(name, "."+zone) {
			continue
		}
		for _, typ := range []string{"A", "AAAA", "CNAME"} {
			t := typed{v: v, name: name, typ: typ, tr: tr}
			for i, e := range v.Endpoints {
				if e.Type == typ {
					t.idx = append(t.idx, i)
				}
			}
			if len(t.idx) == 0 {
				continue
			}
			var sets []plan.Record
			switch {
			case v.Strategy == model.StrategyWeighted || v.Strategy == "":
				sets = t.weighted()
			case v.Strategy == model.StrategyLatency:
				sets = t.latency()
			case typ == "CNAME":
				sets = []plan.Record{t.cname()}
			case v.Strategy == model.StrategyFailover:
				sets = t.failover()
			case v.Strategy == model.StrategyGeo:
				sets = t.geoOrIP()
			default: // roundrobin
				sets = []plan.Record{t.simple(t.targets(func(e providers.EndpointView) bool { return e.Effective > 0 }))}
			}
			for i := range sets {
				sets[i].Values = slices.Compact(sets[i].Values)
				t.attach(&sets[i])
			}
			out = append(out, sets...)
		}
	}
	slices.SortFunc(out, func(a, b plan.Record) int {
		return strings.Compare(a.Name+" "+a.Type+" "+a.SetID, b.Name+" "+b.Type+" "+b.SetID)
	})
	needs := make([]checkSpec, 0, len(tr.needs))
	for _, k := range slices.Sorted(maps.Keys(tr.needs)) {
		needs = append(needs, tr.needs[k])
	}
	return out, needs
}

// attach gives a routing-policy set its health check when checks are on
// and every endpoint of the set has one: the endpoint's check for a set of
// one, else the CALCULATED check over them (healthy while one is). A set
// with an endpoint Route 53 cannot check gets none: a check over the others
// would take it out when only they fail. Simple sets and aliases get none.
func (t typed) attach(r *plan.Record) {
	if t.tr.objs.Checks == nil || r.SetID == "" || r.Alias != nil || len(r.Values) == 0 {
		return
	}
	var ids []string
	complete := true
	for _, val := range r.Values {
		e, ok := t.endpoint(val)
		if !ok {
			return
		}
		spec, reason := endpointCheck(t.v, e)
		if reason != "" {
			return
		}
		t.tr.needs[spec.key()] = spec // every endpoint's, also after one is missing
		id := t.tr.objs.Checks[spec.key()]
		complete = complete && id != ""
		ids = append(ids, id)
	}
	if !complete {
		return
	}
	if len(ids) == 1 {
		r.HealthCheckID = ids[0]
		return
	}
	if len(ids) > maxChildChecks {
		return
	}
	calc := calculatedCheck(ids, r.Values)
	t.tr.needs[calc.key()] = calc
	r.HealthCheckID = t.tr.objs.Checks[calc.key()]
}

// endpoint returns the first endpoint of t with target val.
func (t typed) endpoint(val string) (providers.EndpointView, bool) {
	for _, i := range t.idx {
		if e := t.v.Endpoints[i]; e.Target == val {
			return e, true
		}
	}
	return providers.EndpointView{}, false
}

// typed is one service's endpoints of one type (A, AAAA or CNAME).
type typed struct {
	v    providers.ServiceView
	name string
	typ  string
	idx  []int // indexes into v.Endpoints, config order
	tr   *translator
}

// record is a record set of the service with its TTL and sorted values.
func (t typed) record(values []string) plan.Record {
	r := plan.Record{Name: t.name, Type: t.typ, TTL: t.v.TTL, Values: values}
	r.Normalize()
	return r
}

func (t typed) simple(values []string) plan.Record { return t.record(values) }

// targets returns the targets of the endpoints that keep, in config order;
// when none does, every endpoint's (the engine's fail-open: something is
// better than nothing).
func (t typed) targets(keep func(providers.EndpointView) bool) []string {
	var out, all []string
	for _, i := range t.idx {
		e := t.v.Endpoints[i]
		all = append(all, e.Target)
		if keep(e) {
			out = append(out, e.Target)
		}
	}
	if len(out) == 0 {
		return all
	}
	return out
}

// weighted is one weighted set per endpoint, SetIdentifier
// "<cluster>/<target>", Weight the Effective weight scaled to 0..255.
//
// Without backstop checks, an endpoint that is failed over (Effective 0)
// keeps its set with weight 0 instead of losing it: Route 53 answers a
// weight-0 member only when every member is 0, which is exactly Meridian's
// fail-open; bringing it back is one UPSERT of its weight, not a CREATE
// after a DELETE; and the name never churns between weighted and empty.
//
// With backstop checks, Route 53 also answers weight-0 members when every
// non-zero member's check fails: a weight-0 set of an endpoint Meridian
// decided down or drained would then get all the traffic (ADR 0011: what
// Meridian took out stays out). Such an endpoint loses its set, unless
// Meridian fails open for the type (it then carries its weight) or no
// endpoint of the type is left at all (a name is never emptied). Available
// weight-0 standbys keep their weight-0 set: Route 53 answering them once
// every weighted one fails is what a standby is for.
func (t typed) weighted() []plan.Record {
	eff := make([]int, len(t.idx))
	for j, i := range t.idx {
		eff[j] = t.v.Endpoints[i].Effective
	}
	weights := scaleWeights(eff)
	keep := func(providers.EndpointView) bool { return true }
	if t.tr.objs.Checks != nil {
		in := func(e providers.EndpointView) bool { return e.Available || e.Effective > 0 }
		for _, i := range t.idx {
			if in(t.v.Endpoints[i]) {
				keep = in
				break
			}
		}
	}
	var out []plan.Record
	seen := map[string]bool{}
	for j, i := range t.idx {
		e := t.v.Endpoints[i]
		if !keep(e) {
			continue // decided down or drained, with backstop checks: out
		}
		id := e.Cluster + "/" + e.Target
		if seen[id] {
			continue // the same target twice in a cluster: the first one stands
		}
		seen[id] = true
		r := t.record([]string{e.Target})
		r.SetID, r.Weight = id, &weights[j]
		out = append(out, r)
	}
	return out
}

// scaleWeights maps Meridian weights (0..1000) to Route 53's (0..255)
// keeping the shares: the largest maps to 255, the others in proportion,
// rounded, a non-zero weight never below 1. All zero stays all zero.
func scaleWeights(eff []int) []int64 {
	top := 0
	for _, e := range eff {
		top = max(top, e)
	}
	out := make([]int64, len(eff))
	if top == 0 {
		return out
	}
	for i, e := range eff {
		if e > 0 {
			out[i] = max(1, int64(math.Round(float64(e)*255/float64(top))))
		}
	}
	return out
}

// cname is the one simple CNAME of a non-weighted CNAME service: the
// target with the highest Effective weight (the first on a tie), among the
// answering failover group for failover services.
func (t typed) cname() plan.Record {
	cands := t.idx
	if t.v.Strategy == model.StrategyFailover {
		if g := t.failoverGroups(); len(g) > 0 {
			cands = g[0]
		}
	}
	best := cands[0]
	for _, i := range cands[1:] {
		if t.v.Endpoints[i].Effective > t.v.Endpoints[best].Effective {
			best = i
		}
	}
	return t.record([]string{t.v.Endpoints[best].Target})
}

// failoverGroups returns the failover groups that have an available
// endpoint of t's type, as endpoint indexes of that type, in order: the
// per-type ActiveGroups.
func (t typed) failoverGroups() [][]int {
	var out [][]int
	for _, g := range t.v.Failover {
		var avail []int
		for _, i := range g {
			if e := t.v.Endpoints[i]; e.Type == t.typ && e.Available {
				avail = append(avail, i)
			}
		}
		if len(avail) > 0 {
			out = append(out, avail)
		}
	}
	return out
}

// failover is a PRIMARY set with the available endpoints of the group that
// answers now and a SECONDARY one with the next group's (none when there is
// no next group). Meridian moves traffic by rewriting PRIMARY (no Route 53
// health checks are attached, so Route 53 always answers PRIMARY). When no
// group is available (fail-open) PRIMARY holds the first group's endpoints.
func (t typed) failover() []plan.Record {
	values := func(idx []int) []string {
		var out []string
		for _, i := range idx {
			out = append(out, t.v.Endpoints[i].Target)
		}
		return out
	}
	groups := t.failoverGroups()
	if len(groups) == 0 {
		for _, g := range t.v.Failover {
			var all []int
			for _, i := range g {
				if t.v.Endpoints[i].Type == t.typ {
					all = append(all, i)
				}
			}
			if len(all) > 0 {
				first := typed{v: t.v, name: t.name, typ: t.typ, idx: all}
				primary := t.record(first.targets(func(e providers.EndpointView) bool { return e.Effective > 0 }))
				primary.SetID, primary.Failover = setPrimary, "PRIMARY"
				return []plan.Record{primary}
			}
		}
		// No groups at all: a simple set of what is available.
		return []plan.Record{t.simple(t.targets(func(e providers.EndpointView) bool { return e.Available }))}
	}
	primary := t.record(values(groups[0]))
	primary.SetID, primary.Failover = setPrimary, "PRIMARY"
	out := []plan.Record{primary}
	if len(groups) > 1 {
		secondary := t.record(values(groups[1]))
		secondary.SetID, secondary.Failover = setSecondary, "SECONDARY"
		out = append(out, secondary)
	}
	return out
}

// geo is one geolocation set per country and per continent a rule lists
// (the first rule listing a place wins, as in the engine), per country and
// continent the service's clusters are tagged with (the engine's fallback
// after the rules), and the default set (country "*"). Each carries the
// available endpoints of its clusters, else of the default clusters, else
// every available one, else (fail-open) every one. Regions have no Route 53
// geolocation: rules and tags by region are left out.
func (t typed) geo() []plan.Record {
	var def []string
	var rules []model.GeoRule
	if t.v.Geo != nil {
		def, rules = t.v.Geo.Default, t.v.Geo.Rules
	}
	var out []plan.Record
	done := map[plan.GeoLocation]bool{}
	add := func(loc plan.GeoLocation, id string, clusters []string) {
		if done[loc] {
			return
		}
		done[loc] = true
		r := t.record(t.pickGeo(clusters))
		r.SetID, r.Geo = id, &loc
		out = append(out, r)
	}
	ruleContinents := map[string]bool{}
	for _, r := range rules {
		for _, c := range r.Countries {
			add(plan.GeoLocation{Country: c}, "geo-country-"+c, r.Clusters)
		}
		for _, c := range r.Continents {
			add(plan.GeoLocation{Continent: c}, "geo-continent-"+c, r.Clusters)
			ruleContinents[c] = true
		}
	}
	// Cluster tags, over every endpoint of the service as in the engine.
	// The engine checks every rule before any tag, while Route 53 prefers a
	// country set to a continent one: a country tag whose cluster sits on a
	// continent a rule lists is left out, so that the rule answers there.
	var countries, conts []string
	byCountry, byContinent := map[string][]string{}, map[string][]string{}
	for _, e := range t.v.Endpoints {
		if e.Country != "" && !slices.Contains(byCountry[e.Country], e.Cluster) && !ruleContinents[e.Continent] {
			if byCountry[e.Country] == nil {
				countries = append(countries, e.Country)
			}
			byCountry[e.Country] = append(byCountry[e.Country], e.Cluster)
		}
		if e.Continent != "" && !slices.Contains(byContinent[e.Continent], e.Cluster) {
			if byContinent[e.Continent] == nil {
				conts = append(conts, e.Continent)
			}
			byContinent[e.Continent] = append(byContinent[e.Continent], e.Cluster)
		}
	}
	for _, c := range countries {
		add(plan.GeoLocation{Country: c}, "geo-country-"+c, byCountry[c])
	}
	for _, c := range conts {
		add(plan.GeoLocation{Continent: c}, "geo-continent-"+c, byContinent[c])
	}
	add(plan.GeoLocation{Country: "*"}, setGeoDef, def)
	return out
}

// pickGeo is what a geo set for clusters carries: their available
// endpoints, else geo.default's, else every available one, else
// (fail-open) every one with Effective > 0.
func (t typed) pickGeo(clusters []string) []string {
	var def []string
	if t.v.Geo != nil {
		def = t.v.Geo.Default
	}
	available := func(clusters []string) []string {
		var out []string
		for _, i := range t.idx {
			if e := t.v.Endpoints[i]; e.Available && (clusters == nil || slices.Contains(clusters, e.Cluster)) {
				out = append(out, e.Target)
			}
		}
		return out
	}
	for _, cs := range [][]string{clusters, def} {
		if cs != nil {
			if vals := available(cs); len(vals) > 0 {
				return vals
			}
		}
	}
	if vals := available(nil); len(vals) > 0 {
		return vals
	}
	return t.targets(func(e providers.EndpointView) bool { return e.Effective > 0 })
}

// latency is one latency set per AWS region of the service's clusters
// (SetIdentifier "latency-<region>", Region the cluster's AWS region) with
// the available endpoints of the clusters there (a CNAME service: the one
// with the highest Effective weight). Route 53 answers each client from the
// region nearest it by its own latency data; a region with nothing
// available has no set, so Route 53 answers the next nearest region. When
// nothing of the type is available (fail-open) every region carries its
// endpoints with Effective > 0 (all of them when none has). Endpoints whose
// cluster names no AWS region are left out (check-config refuses them).
func (t typed) latency() []plan.Record {
	byRegion := map[string][]int{}
	anyAvailable := false
	for _, i := range t.idx {
		e := t.v.Endpoints[i]
		if e.CloudRegion == "" {
			continue
		}
		byRegion[e.CloudRegion] = append(byRegion[e.CloudRegion], i)
		anyAvailable = anyAvailable || e.Available
	}
	var out []plan.Record
	for _, region := range slices.Sorted(maps.Keys(byRegion)) {
		var keep []int
		for _, i := range byRegion[region] {
			if e := t.v.Endpoints[i]; (anyAvailable && e.Available) || (!anyAvailable && e.Effective > 0) {
				keep = append(keep, i)
			}
		}
		if !anyAvailable && len(keep) == 0 {
			keep = byRegion[region]
		}
		if len(keep) == 0 {
			continue // nothing available there: Route 53 answers the next nearest region
		}
		var values []string
		if t.typ == "CNAME" {
			best := keep[0]
			for _, i := range keep[1:] {
				if t.v.Endpoints[i].Effective > t.v.Endpoints[best].Effective {
					best = i
				}
			}
			values = []string{t.v.Endpoints[best].Target}
		} else {
			for _, i := range keep {
				values = append(values, t.v.Endpoints[i].Target)
			}
		}
		r := t.record(values)
		r.SetID, r.Region = "latency-"+region, region
		out = append(out, r)
	}
	return out
}
