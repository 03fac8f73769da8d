package kube

import (
	"cmp"
	"errors"
	"fmt"
	"net/netip"
	"reflect"
	"slices"
	"strings"
	"time"

	"github.com/miekg/dns"

	"github.com/meridian-gslb/meridian/internal/kube/claims"
	"github.com/meridian-gslb/meridian/internal/model"
)

// Kinds of watched objects.
const (
	KindService = "Service"
	KindIngress = "Ingress"
)

// ObjectRef names one watched object in one member cluster.
type ObjectRef struct {
	Cluster, Kind, Namespace, Name string
}

func (r ObjectRef) String() string {
	return r.Cluster + "/" + strings.ToLower(r.Kind) + "/" + r.Namespace + "/" + r.Name
}

// Object is one annotated Service or Ingress as the builder sees it.
type Object struct {
	Ref      ObjectRef
	Created  time.Time // creationTimestamp: the older object wins a disagreement
	Settings Settings  // the last valid settings
	Valid    bool      // false: no valid settings yet, the object contributes nothing
	Targets  []string  // status.loadBalancer.ingress (routes: accepting Gateways' status.addresses): IP addresses or host names
	// Problems are the object's own reasons not to be (fully) served, e.g.
	// a route no parent Gateway accepted; reported like conflicts.
	Problems []string `json:",omitempty"`
	// Backends are the Services (in the object's namespace) whose
	// EndpointSlices measure its ready capacity (meridian.io/capacity): a
	// Service itself, an Ingress's backend Services, a route's Service
	// backendRefs. Sorted, without duplicates.
	Backends []string `json:",omitempty"`
	// NameTargets are, for an object whose names have targets of their
	// own (a DNSEndpoint), the targets of each name (Targets is their
	// union). Such an object serves only its names under a served zone:
	// the others are another DNS provider's (Result.Scoped).
	NameTargets map[string][]string `json:",omitempty"`
}

// targetsOf is the targets o gives name.
func (o *Object) targetsOf(name string) []string {
	if o.NameTargets != nil {
		return o.NameTargets[name]
	}
	return o.Targets
}

// Backend is a Service whose EndpointSlices measure an endpoint's ready
// capacity.
type Backend struct {
	Cluster, Namespace, Name string
}

// Result is the desired state the watched objects add to the config file's.
type Result struct {
	Services []model.Service          // sorted by name, each valid on its own
	Problems map[ObjectRef][]string   // per object: conflicts and errors, sorted
	Sources  map[string][]ObjectRef   // service name -> objects behind it, oldest first
	Dropped  map[string]string        // service name -> why it is not served
	Owner    map[string]ObjectRef     // service name -> object whose service-level settings won
	Settings map[ObjectRef]SettingsOf // per object: service-level values in effect
	// Owners is, per claimed name (not defined in the config file), the
	// namespaces whose objects serve it (package claims); empty when no
	// namespace may.
	Owners map[string][]string
	// Refused is, per object, the names it claims but may not serve
	// (another namespace owns them, or they are reserved), sorted by name.
	Refused map[ObjectRef][]Refusal
	// Backends is, per capacity-aware service (meridian.io/capacity: true)
	// and endpoint target, the Services whose EndpointSlices measure the
	// endpoint's ready fraction: those behind the objects that give the
	// endpoint in its cluster.
	Backends map[string]map[string][]Backend
	// First is the ledger of the names' first claimants after this build
	// (package claims, rule 4): the caller keeps it (in the state
	// directory) and passes it to the next build.
	First claims.Ledger
	// Limited is, per object that the hostname limits cut
	// (kubernetes.max_hostnames_per_object, max_hostnames_per_namespace),
	// the names it may still serve; objects not cut are not listed.
	Limited map[ObjectRef][]string
	// OverLimit counts the names refused by each limit now, by
	// LimitObject and LimitNamespace.
	OverLimit map[string]int
	// Scoped is, per object with NameTargets that lists names outside
	// every served zone, its names under a served zone (before the
	// hostname limits); objects not narrowed are not listed.
	Scoped map[ObjectRef][]string
}

// Refusal is one name an object claims and may not serve.
type Refusal struct {
	Hostname string
	Kind     string   // claims.KindTaken, KindNotAllowed, KindReserved or KindUnclaimed
	Owners   []string // the namespaces that own the name (may be empty)
	Msg      string   // the problem reported on the object
}

// refused reports whether ref is refused name.
func (r *Result) refused(ref ObjectRef, name string) bool {
	return slices.ContainsFunc(r.Refused[ref], func(f Refusal) bool { return f.Hostname == name })
}

// SettingsOf are the service-level values in effect for one object's hostname.
type SettingsOf struct {
	Strategy string
}

// Build turns the watched objects into global services. It is pure and
// deterministic: the same objects give the same result whatever their order.
//
// Rules (documented in docs/kubernetes.md):
//   - objects are grouped by host name; a name the config file defines is
//     not taken from Kubernetes (reported on every object that claims it);
//   - each other name is served only by the objects of the namespaces that
//     own it (package claims: kubernetes.claims, reserved names, else the
//     namespace that claimed it first); objects of other namespaces are
//     refused with the reason, never merged, and take no part in the rules
//     below;
//   - a service-level setting (strategy, ttl, health-check, failover-order,
//     sticky, capacity, latency-tolerance) comes from the oldest object that
//     sets it (creationTimestamp, then cluster, namespace, kind and name); an
//     object that sets another value is reported as a conflict and does not
//     flap the service;
//   - cluster-level settings (weight, geo, drain) apply to the endpoints of
//     the object that carries them;
//   - each load-balancer IP is an address endpoint, each load-balancer host
//     name a CNAME endpoint; an address listed twice in one cluster counts once;
//   - a failover service without failover-order fails over in the order of
//     cluster names;
//   - a service that does not validate (e.g. CNAME and addresses mixed, a
//     name outside every zone, an unknown cluster in failover-order) is not
//     served and the reason is reported on each of its objects.
//
// BuildSafe is BuildWith on an input path: a panic (a bug some tenant's
// object runs into) becomes an error, so the caller keeps serving what it
// served.
//
// prev is what the build before validated (nil: none): the services that
// are as they were, against the same settings, are not validated again.
// next is what this build validated, for the next; it keeps base's zones,
// clusters and providers, which (like every desired state) are not
// modified afterwards.
// first is the ledger of first claimants the build before returned
// (Result.First; nil: none yet) and now the time of this build, both for
// claims.Decide.
func BuildSafe(objs []Object, base *model.Desired, fileNames FileNames, prev *Validated, first claims.Ledger, now time.Time) (res Result, next *Validated, err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("kubernetes: building services from %d objects panicked (recovered): %v", len(objs), r)
		}
	}()
	next = prev.next(base)
	return build(objs, base, fileNames, next, first, now), next, nil
}

// Validated is what one build validated: the services it serves, by name,
// and the settings they were validated against (a service is validated
// against the zones, clusters and providers of the config file alone, see
// validateOne). It is never modified once the build that made it returned.
type Validated struct {
	zones     []model.Zone
	clusters  []model.Cluster
	providers model.Providers
	prev      map[string]model.Service // what the build before validated, if against the same settings
	services  map[string]model.Service
}

// next is the Validated of a build against base that follows v's.
func (v *Validated) next(base *model.Desired) *Validated {
	n := &Validated{zones: base.Zones, clusters: base.Clusters, providers: base.Providers, services: map[string]model.Service{}}
	if v != nil && reflect.DeepEqual(v.zones, base.Zones) && reflect.DeepEqual(v.clusters, base.Clusters) && reflect.DeepEqual(v.providers, base.Providers) {
		n.prev = v.services
	}
	return n
}

// validate is validateOne, unless the build before validated an equal
// service against the same settings.
func (v *Validated) validate(base *model.Desired, svc model.Service) error {
	if v == nil {
		return validateOne(base, svc)
	}
	if p, ok := v.prev[svc.Name]; !ok || !reflect.DeepEqual(p, svc) {
		if err := validateOne(base, svc); err != nil {
			return err
		}
	}
	v.services[svc.Name] = svc
	return nil
}

// FileNames is the set of the names the config file's services define
// (canonical): the names Build does not take from Kubernetes. It depends
// on the file alone, so a caller that builds after every object change
// makes it once per loaded file (NewFileNames) and passes it to each
// BuildWith; it is never modified once made.
type FileNames map[string]bool

// NewFileNames is the set of the names services define.
func NewFileNames(services []model.Service) FileNames {
	names := make(FileNames, len(services))
	for _, s := range services {
		names[model.CanonicalName(s.Name)] = true
	}
	return names
}

// Build is BuildWith with the names of base's services. Build and
// BuildWith start from an empty ledger of first claimants, at the zero
// time.
func Build(objs []Object, base *model.Desired) Result {
	return BuildWith(objs, base, NewFileNames(base.Services))
}

// BuildWith is Build where fileNames is NewFileNames(base.Services).
func BuildWith(objs []Object, base *model.Desired, fileNames FileNames) Result {
	return build(objs, base, fileNames, nil, nil, time.Time{})
}

// build is BuildWith that validates through v (nil: every service), with
// the ledger first at now.
func build(objs []Object, base *model.Desired, fileNames FileNames, v *Validated, first claims.Ledger, now time.Time) Result {
	r := Result{Problems: map[ObjectRef][]string{}, Sources: map[string][]ObjectRef{}, Dropped: map[string]string{},
		Owner: map[string]ObjectRef{}, Settings: map[ObjectRef]SettingsOf{}, Owners: map[string][]string{}, Refused: map[ObjectRef][]Refusal{},
		Backends: map[string]map[string][]Backend{}, Limited: map[ObjectRef][]string{}, OverLimit: map[string]int{},
		Scoped: map[ObjectRef][]string{}}
	sorted := oldestFirst(objs)
	r.scope(sorted, base.Zones, base.TenantTargets)
	groups, names := byHostname(sorted, r.limit(sorted, base.Kubernetes))
	owners, ledger := claims.Decide(claims.PolicyFrom(base), claimsOf(groups, fileNames), first, now)
	r.First = ledger
	for _, name := range names {
		r.serve(name, groups[name], fileNames[name], owners[name], base, v)
	}
	for _, o := range sorted {
		for _, p := range o.Problems {
			r.problem(o.Ref, p)
		}
	}
	for ref := range r.Problems {
		slices.Sort(r.Problems[ref])
		r.Problems[ref] = slices.Compact(r.Problems[ref])
	}
	return r
}

// oldestFirst is the objects in order (creationTimestamp, then cluster,
// namespace, kind and name), by pointer (objs is only read): sorting
// pointers moves 8 bytes a swap, not an Object.
func oldestFirst(objs []Object) []*Object {
	sorted := make([]*Object, len(objs))
	for i := range objs {
		sorted[i] = &objs[i]
	}
	slices.SortFunc(sorted, func(a, b *Object) int {
		return cmp.Or(a.Created.Compare(b.Created), cmp.Compare(a.Ref.Cluster, b.Ref.Cluster),
			cmp.Compare(a.Ref.Namespace, b.Ref.Namespace), cmp.Compare(a.Ref.Kind, b.Ref.Kind), cmp.Compare(a.Ref.Name, b.Ref.Name))
	})
	return sorted
}

// byHostname groups the valid objects of sorted by the names hosts gives
// each (order kept), and returns the names sorted.
func byHostname(sorted []*Object, hosts func(*Object) []string) (map[string][]*Object, []string) {
	groups := map[string][]*Object{}
	var names []string
	for _, o := range sorted {
		if !o.Valid {
			continue
		}
		for _, h := range hosts(o) {
			if groups[h] == nil {
				names = append(names, h)
			}
			groups[h] = append(groups[h], o)
		}
	}
	slices.Sort(names)
	return groups, names
}

// serve decides one name: dropped when the config file defines it
// (inFile) or no owning object gives it an address or a valid service,
// else served from the objects of g its owners d allow.
func (r *Result) serve(name string, g []*Object, inFile bool, d claims.Decision, base *model.Desired, v *Validated) {
	if inFile {
		why := fmt.Sprintf("%s is defined in the config file; the config file's definition is served (remove one of the two)", name)
		r.Dropped[name] = why
		for _, o := range g {
			r.Sources[name] = append(r.Sources[name], o.Ref)
			r.problem(o.Ref, why)
		}
		return
	}
	g = r.owned(d, g)
	if len(g) == 0 {
		r.Dropped[name] = unowned(d)
		return
	}
	for _, o := range g {
		r.Sources[name] = append(r.Sources[name], o.Ref)
	}
	svc, owner := r.service(name, g)
	r.Owner[name] = owner
	for _, o := range g {
		r.Settings[o.Ref] = SettingsOf{Strategy: svc.Strategy}
	}
	if len(svc.Endpoints) == 0 {
		r.Dropped[name] = noAddress(g)
		return
	}
	if err := v.validate(base, svc); err != nil {
		why := fmt.Sprintf("%s is not served: %v", name, err)
		r.Dropped[name] = why
		for _, o := range g {
			r.problem(o.Ref, why)
		}
		return
	}
	r.Services = append(r.Services, svc)
}

// claimsOf lists the claims of the grouped objects on names the file does
// not define.
func claimsOf(groups map[string][]*Object, fileNames FileNames) []claims.Claim {
	var out []claims.Claim
	for name, g := range groups {
		if fileNames[name] {
			continue
		}
		for _, o := range g {
			out = append(out, claims.Claim{Name: name, Namespace: o.Ref.Namespace, Created: o.Created, Export: o.Ref.Kind == KindServiceExport})
		}
	}
	return out
}

// owned keeps the objects of g whose namespace owns the name and records
// a refusal on each of the others.
func (r *Result) owned(d claims.Decision, g []*Object) []*Object {
	r.Owners[d.Name] = d.Owners
	var out []*Object
	for _, o := range g {
		if d.Allows(o.Ref.Namespace) {
			out = append(out, o)
			continue
		}
		msg := d.Refusal(o.Ref.Namespace)
		r.Refused[o.Ref] = append(r.Refused[o.Ref], Refusal{Hostname: d.Name, Kind: d.Refused, Owners: d.Owners, Msg: msg})
		r.problem(o.Ref, msg)
	}
	return out
}

// unowned says why a name none of whose objects may serve it is dropped.
func unowned(d claims.Decision) string {
	if held := d.Held(); held != "" {
		return held
	}
	if len(d.Owners) > 0 {
		return fmt.Sprintf("no object of namespace %s claims it (kubernetes.claims gives it to that namespace only)", strings.Join(d.Owners, ", "))
	}
	return strings.TrimPrefix(d.Refusal(""), claims.ConflictPrefix)
}

func (r *Result) problem(ref ObjectRef, msg string) {
	r.Problems[ref] = append(r.Problems[ref], msg)
}

// service builds one service from its objects (oldest first) and returns the
// object that decided its strategy.
func (r *Result) service(name string, g []*Object) (model.Service, ObjectRef) {
	svc := model.Service{Name: name}
	owner := r.serviceLevel(&svc, g)
	if svc.Strategy == "" {
		svc.Strategy = model.StrategyWeighted
	}
	r.dropIgnored(&svc, g)
	clusters := r.endpoints(&svc, g)
	r.policy(&svc, g, clusters)
	return svc, owner
}

// level is one service-level setting: the annotation that sets it, and
// how it is read from Settings and applied to the service.
type level struct {
	anno  string
	isSet func(*Settings) bool
	equal func(a, b *Settings) bool
	show  func(*Settings) string
	apply func(*model.Service, *Settings)
}

// levels are the service-level settings, in the order they are decided.
var levels = []level{
	{AnnoStrategy, func(s *Settings) bool { return s.Strategy != "" },
		func(a, b *Settings) bool { return a.Strategy == b.Strategy },
		func(s *Settings) string { return s.Strategy },
		func(svc *model.Service, s *Settings) { svc.Strategy = s.Strategy }},
	{AnnoTTL, func(s *Settings) bool { return s.TTL != 0 },
		func(a, b *Settings) bool { return a.TTL == b.TTL },
		func(s *Settings) string { return fmt.Sprint(s.TTL) },
		func(svc *model.Service, s *Settings) { svc.TTL = s.TTL }},
	{AnnoHealthCheck, func(s *Settings) bool { return s.HealthCheck != nil },
		func(a, b *Settings) bool { return checkString(a.HealthCheck) == checkString(b.HealthCheck) },
		func(s *Settings) string { return checkString(s.HealthCheck) },
		func(svc *model.Service, s *Settings) { c := *s.HealthCheck; svc.HealthCheck = &c }},
	{AnnoLatencyTolerance, func(s *Settings) bool { return s.LatencyTolerance != nil },
		func(a, b *Settings) bool { return *a.LatencyTolerance == *b.LatencyTolerance },
		func(s *Settings) string { return s.LatencyTolerance.String() },
		func(svc *model.Service, s *Settings) {
			t := *s.LatencyTolerance
			svc.Latency = &model.LatencyPolicy{Tolerance: &t}
		}},
	{AnnoFailoverOrder, func(s *Settings) bool { return s.FailoverOrder != nil },
		func(a, b *Settings) bool { return slices.Equal(a.FailoverOrder, b.FailoverOrder) },
		func(s *Settings) string { return strings.Join(s.FailoverOrder, ",") },
		func(svc *model.Service, s *Settings) {
			svc.Failover = &model.FailoverPolicy{Order: slices.Clone(s.FailoverOrder)}
		}},
	{AnnoSticky, func(s *Settings) bool { return s.Sticky != "" },
		func(a, b *Settings) bool { return a.Sticky == b.Sticky },
		func(s *Settings) string { return s.Sticky },
		func(svc *model.Service, s *Settings) { svc.Sticky = s.Sticky }},
	{AnnoFallbackAnswer, func(s *Settings) bool { return s.FallbackAnswer != "" },
		func(a, b *Settings) bool { return a.FallbackAnswer == b.FallbackAnswer },
		func(s *Settings) string { return s.FallbackAnswer },
		func(svc *model.Service, s *Settings) { svc.FallbackAnswer = s.FallbackAnswer }},
	{AnnoMinHealthy, func(s *Settings) bool { return s.MinHealthy != nil },
		func(a, b *Settings) bool { return *a.MinHealthy == *b.MinHealthy },
		func(s *Settings) string { return fmt.Sprint(*s.MinHealthy) },
		func(svc *model.Service, s *Settings) { n := *s.MinHealthy; svc.MinHealthy = &n }},
	{AnnoCapacity, func(s *Settings) bool { return s.Capacity != nil },
		func(a, b *Settings) bool { return *a.Capacity == *b.Capacity },
		func(s *Settings) string { return fmt.Sprint(*s.Capacity) },
		func(svc *model.Service, s *Settings) {
			if *s.Capacity {
				svc.Capacity = &model.Capacity{Source: model.CapacitySourceKubernetes, FromObjects: true}
			}
		}},
}

// serviceLevel applies each service-level setting of the oldest object of
// g that sets it, reports each object that sets another value as a
// conflict, and returns the object that decided the strategy (else the
// oldest).
func (r *Result) serviceLevel(svc *model.Service, g []*Object) ObjectRef {
	owner := g[0].Ref
	for _, l := range levels {
		var winner *Object
		for _, o := range g {
			if !l.isSet(&o.Settings) {
				continue
			}
			if winner == nil {
				winner = o
				l.apply(svc, &o.Settings)
				if l.anno == AnnoStrategy {
					owner = o.Ref
				}
				if l.anno == AnnoMinHealthy {
					svc.MinHealthyFrom = fmt.Sprintf("annotation %s on %s %s/%s in cluster %s",
						AnnoMinHealthy, strings.ToLower(o.Ref.Kind), o.Ref.Namespace, o.Ref.Name, o.Ref.Cluster)
				}
				continue
			}
			if !l.equal(&winner.Settings, &o.Settings) {
				r.problem(o.Ref, fmt.Sprintf("conflict: %s %q differs from %q set by %s, which is older and wins",
					l.anno, l.show(&o.Settings), l.show(&winner.Settings), winner.Ref))
			}
		}
	}
	return owner
}

// dropIgnored drops the settings the strategy does not use (failover
// order, capacity, latency tolerance) and reports them on each object
// that sets them.
func (r *Result) dropIgnored(svc *model.Service, g []*Object) {
	if svc.Strategy != model.StrategyFailover {
		if svc.Failover != nil {
			for _, o := range g {
				if o.Settings.FailoverOrder != nil {
					r.problem(o.Ref, fmt.Sprintf("%s is ignored: the strategy is %s, not failover", AnnoFailoverOrder, svc.Strategy))
				}
			}
		}
		svc.Failover = nil
	}
	if svc.Capacity != nil && svc.Strategy == model.StrategyRoundRobin {
		for _, o := range g {
			if o.Settings.Capacity != nil && *o.Settings.Capacity {
				r.problem(o.Ref, fmt.Sprintf("%s is ignored: the strategy is roundrobin, which answers equal shares", AnnoCapacity))
			}
		}
		svc.Capacity = nil
	}
	if svc.Strategy != model.StrategyLatency && svc.Latency != nil {
		for _, o := range g {
			if o.Settings.LatencyTolerance != nil {
				r.problem(o.Ref, fmt.Sprintf("%s is ignored: the strategy is %s, not latency", AnnoLatencyTolerance, svc.Strategy))
			}
		}
		svc.Latency = nil
	}
}

// endpoints adds an endpoint per target of each object of g (an address
// listed twice in one cluster counts once), sorted by cluster and target,
// records the backends of a capacity-aware service, and returns the
// clusters, sorted.
func (r *Result) endpoints(svc *model.Service, g []*Object) []string {
	seen := map[string]bool{}
	var clusters []string
	for _, o := range g {
		if !slices.Contains(clusters, o.Ref.Cluster) {
			clusters = append(clusters, o.Ref.Cluster)
		}
		if svc.Capacity != nil {
			r.addBackends(svc.Name, o)
		}
		for _, t := range o.targetsOf(svc.Name) {
			e := model.Endpoint{Cluster: o.Ref.Cluster, Drain: o.Settings.Drain}
			if a, err := netip.ParseAddr(t); err == nil {
				e.Address = a.Unmap().String()
			} else {
				e.CNAME = model.CanonicalName(t)
			}
			key := o.Ref.Cluster + "|" + e.Address + e.CNAME
			if seen[key] {
				continue
			}
			seen[key] = true
			if o.Settings.Weight != nil {
				w := *o.Settings.Weight
				e.Weight = &w
			}
			svc.Endpoints = append(svc.Endpoints, e)
		}
	}
	slices.SortStableFunc(svc.Endpoints, func(a, b model.Endpoint) int {
		return cmp.Or(cmp.Compare(a.Cluster, b.Cluster), cmp.Compare(a.Address+a.CNAME, b.Address+b.CNAME))
	})
	slices.Sort(clusters)
	return clusters
}

// policy completes the strategy's policy: a failover service without
// failover-order fails over in the order of clusters; a geo service
// serves each object's places from its cluster; meridian.io/geo on
// another strategy is reported.
func (r *Result) policy(svc *model.Service, g []*Object, clusters []string) {
	switch svc.Strategy {
	case model.StrategyFailover:
		if svc.Failover == nil {
			svc.Failover = &model.FailoverPolicy{Order: clusters}
		}
	case model.StrategyGeo:
		svc.Geo = &model.GeoPolicy{}
		for _, o := range g {
			if p := o.Settings.Geo; p != nil {
				svc.Geo.Rules = append(svc.Geo.Rules, model.GeoRule{Regions: slices.Clone(p.Regions),
					Countries: slices.Clone(p.Countries), Continents: slices.Clone(p.Continents), Clusters: []string{o.Ref.Cluster}})
			}
		}
	default:
		for _, o := range g {
			if o.Settings.Geo != nil {
				r.problem(o.Ref, fmt.Sprintf("%s is ignored: the strategy is %s, not geo", AnnoGeo, svc.Strategy))
			}
		}
	}
}

// addBackends records the Services behind o for each of its targets of
// the capacity-aware service name; a target given by several objects of a
// cluster counts all their Services.
func (r *Result) addBackends(name string, o *Object) {
	if len(o.Backends) == 0 {
		r.problem(o.Ref, fmt.Sprintf("%s: no backend Service to count ready endpoints of; its endpoints keep their configured weights", AnnoCapacity))
		return
	}
	byTarget := r.Backends[name]
	if byTarget == nil {
		byTarget = map[string][]Backend{}
		r.Backends[name] = byTarget
	}
	for _, t := range o.targetsOf(name) {
		key := t
		if a, err := netip.ParseAddr(t); err == nil {
			key = a.Unmap().String()
		} else {
			key = model.CanonicalName(t)
		}
		for _, b := range o.Backends {
			be := Backend{Cluster: o.Ref.Cluster, Namespace: o.Ref.Namespace, Name: b}
			if !slices.Contains(byTarget[key], be) {
				byTarget[key] = append(byTarget[key], be)
			}
		}
	}
}

// noAddress says why a name has no endpoints yet.
func noAddress(g []*Object) string {
	for _, o := range g {
		switch o.Ref.Kind {
		case KindService, KindIngress:
			return "no load-balancer address yet (status.loadBalancer.ingress is empty)"
		case KindServiceExport:
			return "no load-balancer address yet (the exported Service's status.loadBalancer.ingress is empty, or it is missing)"
		}
	}
	return "no address yet (no accepting parent Gateway has status.addresses)"
}

// scope narrows, in sorted, each valid object with NameTargets (a
// DNSEndpoint) to its names under a served zone, and their address
// targets to those tt allows (allowedTargets), as a copy (the objects are
// only read), and records the narrowed names in r.Scoped. Its other names
// are another DNS provider's: they claim nothing and are not reported.
func (r *Result) scope(sorted []*Object, zones []model.Zone, tt model.TenantTargets) {
	for i, o := range sorted {
		if o.NameTargets == nil || !o.Valid {
			continue
		}
		kept := slices.DeleteFunc(slices.Clone(o.Settings.Hostnames), func(h string) bool { return !underZone(h, zones) })
		targets, problems := allowedTargets(o.NameTargets, kept, tt)
		for _, p := range problems {
			r.problem(o.Ref, p)
		}
		if targets != nil {
			kept = slices.DeleteFunc(kept, func(h string) bool { return len(targets[h]) == 0 })
		}
		if len(kept) == len(o.Settings.Hostnames) && targets == nil {
			continue
		}
		c := *o
		c.Settings.Hostnames = kept
		if targets != nil {
			c.NameTargets = targets
		}
		sorted[i] = &c
		r.Scoped[o.Ref] = kept
	}
}

// underZone reports whether name (canonical) is in one of zones.
func underZone(name string, zones []model.Zone) bool {
	for _, z := range zones {
		if dns.IsSubDomain(model.CanonicalName(z.Apex), name) {
			return true
		}
	}
	return false
}

func checkString(c *model.Check) string {
	s := c.Kind
	if c.Port != 0 {
		s += fmt.Sprintf(":%d", c.Port)
	}
	return s + c.Path
}

// validateOne checks svc against the zones and clusters of base (names the
// file defines are checked by the caller).
func validateOne(base *model.Desired, svc model.Service) error {
	// The providers too: what a provider zone needs of a service (an AWS
	// region per cluster for latency records, public addresses for
	// backstop checks) refuses this service alone, not the merged whole.
	d := &model.Desired{Zones: base.Zones, Clusters: base.Clusters, Services: []model.Service{svc}, Providers: base.Providers}
	err := model.Validate(d)
	var verr *model.ValidationError
	if !errors.As(err, &verr) {
		return err
	}
	msgs := make([]string, 0, len(verr.Fields))
	for _, f := range verr.Fields {
		path := strings.TrimPrefix(strings.TrimPrefix(f.Path, "services[0]"), ".")
		if path == "" || path == "name" {
			msgs = append(msgs, f.Msg)
			continue
		}
		msgs = append(msgs, path+": "+f.Msg)
	}
	return errors.New(strings.Join(msgs, "; "))
}
