package extdns

import (
	"fmt"
	"net/netip"
	"slices"
	"strconv"
	"strings"

	"github.com/miekg/dns"

	"github.com/meridian-gslb/meridian/internal/kube/claims"
	"github.com/meridian-gslb/meridian/internal/model"
)

// Limits bound what one cluster may store (the zero value: the defaults).
type Limits struct {
	MaxRecords     int // records per cluster (default 10000)
	MaxTargets     int // targets per record (default 64)
	MaxTargetBytes int // bytes per target, TXT values included (default 1024)
	MaxLabels      int // labels per record (default 16), each key and value at most MaxTargetBytes
	MaxBytes       int // bytes of one cluster's records: names, targets, labels, properties (default 8 MiB)
}

// Labels kept on a record (Normalize drops the others): ExternalDNS's
// owner, resource, ownedRecord and txt-encryption-nonce.
var keptLabels = []string{"owner", LabelResource, "ownedRecord", "txt-encryption-nonce"}

// MaxTXTString is the longest TXT value, without its quotes (a DNS
// character-string).
const MaxTXTString = 255

// Defaults of Limits.
const (
	DefaultMaxRecords     = 10000
	DefaultMaxTargets     = 64
	DefaultMaxTargetBytes = 1024
	DefaultMaxLabels      = 16
	DefaultMaxBytes       = 8 << 20
)

func (l Limits) withDefaults() Limits {
	for _, f := range []struct {
		v   *int
		def int
	}{{&l.MaxRecords, DefaultMaxRecords}, {&l.MaxTargets, DefaultMaxTargets}, {&l.MaxTargetBytes, DefaultMaxTargetBytes}, {&l.MaxLabels, DefaultMaxLabels}, {&l.MaxBytes, DefaultMaxBytes}} {
		if *f.v <= 0 {
			*f.v = f.def
		}
	}
	return l
}

// Rules are what a record is normalized and checked against: the served
// zones, the tenancy policy, the limits on tenants' targets and the limits.
type Rules struct {
	zones  map[string]int // apex, lower case without the final dot → the zone's ttl
	limits Limits
	// policy is kubernetes.claims, kubernetes.unclaimed_names and the
	// reserved names (ADR 0006), which records follow as objects do.
	policy claims.Policy
	// nameservers are the in-zone nameserver names (canonical) → what
	// they are: never a service, whatever a claim says (the model refuses
	// a service of that name).
	nameservers map[string]string
	tenant      model.TenantTargets // what A/AAAA targets may be
	// parseCheck reads webhook/meridian-health-check (nil: the property
	// is refused).
	parseCheck func(string) (*model.Check, error)
}

// NewRules are the rules of d's zones, claims, unclaimed_names and
// tenant_targets with the limits lim; parseCheck reads
// webhook/meridian-health-check (kube.ParseHealthCheck; nil refuses the
// property).
func NewRules(d *model.Desired, lim Limits, parseCheck func(string) (*model.Check, error)) *Rules {
	r := &Rules{zones: make(map[string]int, len(d.Zones)), limits: lim.withDefaults(), parseCheck: parseCheck,
		policy: claims.PolicyFrom(d), nameservers: map[string]string{}, tenant: d.TenantTargets}
	for _, z := range d.Zones {
		r.zones[plainName(z.Apex)] = z.TTL
	}
	for _, z := range d.Zones {
		for _, ns := range z.Nameservers {
			if n := plainName(ns.Name); r.zoneOf(n) != "" {
				r.nameservers[model.CanonicalName(n)] = "a nameserver name of zone " + model.CanonicalName(z.Apex)
			}
		}
	}
	return r
}

// MaxRecords is the number of records one cluster may store.
func (r *Rules) MaxRecords() int { return r.limits.MaxRecords }

// Apexes are the served zones, sorted, without the final dot: the domain
// filter of the negotiation.
func (r *Rules) Apexes() []string {
	out := make([]string, 0, len(r.zones))
	for z := range r.zones {
		out = append(out, z)
	}
	slices.Sort(out)
	return out
}

// zoneOf is the apex of the most specific served zone holding name ("": none).
func (r *Rules) zoneOf(name string) string {
	for n := name; ; {
		if _, ok := r.zones[n]; ok {
			return n
		}
		i := strings.IndexByte(n, '.')
		if i < 0 {
			return ""
		}
		n = n[i+1:]
	}
}

// plainName is name in lower case without the final dot (ExternalDNS's form).
func plainName(name string) string {
	return strings.TrimSuffix(strings.ToLower(strings.TrimSpace(name)), ".")
}

// Normalize is e in the form Meridian stores (POST /adjustendpoints): see
// the package doc. A target that does not parse is kept as it is, for
// Check to name.
func (r *Rules) Normalize(e *Endpoint) *Endpoint {
	n := e.clone()
	n.DNSName = plainName(e.DNSName)
	n.RecordType = strings.ToUpper(strings.TrimSpace(e.RecordType))
	for i, t := range n.Targets {
		switch n.RecordType {
		case TypeA, TypeAAAA:
			if a, err := netip.ParseAddr(strings.TrimSpace(t)); err == nil {
				n.Targets[i] = a.String()
			}
		case TypeCNAME:
			n.Targets[i] = plainName(t)
		}
	}
	slices.Sort(n.Targets)
	n.Targets = slices.Compact(n.Targets)
	if n.RecordTTL == 0 {
		if z := r.zoneOf(n.DNSName); z != "" {
			n.RecordTTL = int64(r.zones[z])
		}
	}
	for k := range n.Labels {
		if !slices.Contains(keptLabels, k) {
			delete(n.Labels, k)
		}
	}
	if len(n.Labels) == 0 {
		n.Labels = nil
	}
	n.ProviderSpecific = nil
	for _, p := range e.ProviderSpecific {
		if (p.Name == PropWeight || p.Name == PropHealthCheck) && n.Prop(p.Name) == "" {
			n.ProviderSpecific = append(n.ProviderSpecific, Property{Name: p.Name, Value: strings.TrimSpace(p.Value)})
		}
	}
	slices.SortFunc(n.ProviderSpecific, func(a, b Property) int { return strings.Compare(a.Name, b.Name) })
	return n
}

// FieldError is a record that Check refuses: the field and why.
type FieldError struct {
	Field string // e.g. targets[0], providerSpecific[webhook/meridian-weight]
	Msg   string
}

func (e *FieldError) Error() string { return e.Field + ": " + e.Msg }

func fieldErr(field, format string, args ...any) *FieldError {
	return &FieldError{Field: field, Msg: fmt.Sprintf(format, args...)}
}

// Check validates a normalized record against the rules.
func (r *Rules) Check(e *Endpoint) error {
	if err := r.checkName(e); err != nil {
		return err
	}
	switch e.RecordType {
	case TypeA, TypeAAAA, TypeCNAME, TypeTXT:
	default:
		return fieldErr("recordType", "%q is not served (allowed: A, AAAA, CNAME, TXT)", e.RecordType)
	}
	if e.SetIdentifier != "" {
		return fieldErr("setIdentifier", "%q: set identifiers are not supported (Meridian merges every cluster's targets of a name into one weighted service; weight them with %s)", e.SetIdentifier, PropWeight)
	}
	if err := r.checkTenancy(e); err != nil {
		return err
	}
	if e.RecordTTL < 0 || e.RecordTTL > model.MaxTTL {
		return fieldErr("recordTTL", "%d is out of range (allowed 0..%d seconds)", e.RecordTTL, model.MaxTTL)
	}
	if err := r.checkTargets(e); err != nil {
		return err
	}
	if err := r.checkProps(e); err != nil {
		return err
	}
	if n := len(e.Labels); n > r.limits.MaxLabels {
		return fieldErr("labels", "has %d labels (allowed at most %d)", n, r.limits.MaxLabels)
	}
	for k, v := range e.Labels {
		if len(k) > r.limits.MaxTargetBytes || len(v) > r.limits.MaxTargetBytes {
			return fieldErr("labels", "label %.40q is longer than %d bytes", k, r.limits.MaxTargetBytes)
		}
	}
	return nil
}

func (r *Rules) checkName(e *Endpoint) error {
	name := e.DNSName
	switch {
	case name == "":
		return fieldErr("dnsName", "is required (a name under one of the served zones %s)", strings.Join(r.Apexes(), ", "))
	case len(name) > 253, strings.ContainsAny(name, "* \\"):
		return fieldErr("dnsName", "%.80q is not a host name (no wildcards, at most 253 characters)", name)
	}
	if _, ok := dns.IsDomainName(name); !ok {
		return fieldErr("dnsName", "%.80q is not a domain name", name)
	}
	if err := model.CheckHostName(name); err != nil { // what services[].name allows
		return fieldErr("dnsName", "%v", err)
	}
	z := r.zoneOf(name)
	if z == "" {
		return fieldErr("dnsName", "%q is not under a served zone (allowed: %s)", name, strings.Join(r.Apexes(), ", "))
	}
	if z == name && e.RecordType == TypeCNAME {
		return fieldErr("dnsName", "%q is the zone apex: a CNAME cannot sit there", name)
	}
	return nil
}

// checkTenancy refuses a served record (A, AAAA, CNAME) of a name its
// namespace may not serve (ADR 0006, package kube/claims rules 1 to 3): a
// reserved name (a zone apex, a nameserver name, a name of the ring's)
// unless a claim lists it for the namespace, a name a claim gives to other
// namespaces, a name no claim covers under unclaimed_names: refuse. The
// namespace is the one of the object the record comes from (its resource
// label); a record without one may serve only names no claim covers and
// not reserved ones. In-zone nameserver names are refused always. TXT
// records are not served (the registry's bookkeeping) and are not checked.
func (r *Rules) checkTenancy(e *Endpoint) error {
	if e.RecordType == TypeTXT {
		return nil
	}
	name := model.CanonicalName(e.DNSName)
	if what, ok := r.nameservers[name]; ok {
		return fieldErr("dnsName", "%s%s is %s: it is never served from ExternalDNS records", claims.ConflictPrefix, name, what)
	}
	ns := e.Namespace()
	if msg, refused := r.policy.Refuses(ns, name); refused {
		from := "the record has no labels[" + LabelResource + "] naming a namespace"
		if ns != "" {
			from = fmt.Sprintf("the record's namespace %s is from labels[%s] %.80q", ns, LabelResource, e.Labels[LabelResource])
		}
		return fieldErr("dnsName", "%s (%s)", msg, from)
	}
	return nil
}

func (r *Rules) checkTargets(e *Endpoint) error {
	switch n := len(e.Targets); {
	case n == 0:
		return fieldErr("targets", "is empty (at least one target)")
	case n > r.limits.MaxTargets:
		return fieldErr("targets", "has %d targets (allowed at most %d)", n, r.limits.MaxTargets)
	case n > 1 && e.RecordType == TypeCNAME:
		return fieldErr("targets", "a CNAME has one target, not %d", n)
	}
	for i, t := range e.Targets {
		f := "targets[" + strconv.Itoa(i) + "]"
		if len(t) > r.limits.MaxTargetBytes {
			return fieldErr(f, "is longer than %d bytes", r.limits.MaxTargetBytes)
		}
		a, err := netip.ParseAddr(t)
		switch e.RecordType {
		case TypeTXT:
			if v := strings.TrimSuffix(strings.TrimPrefix(t, `"`), `"`); len(v) > MaxTXTString {
				return fieldErr(f, "has a value of %d bytes (a TXT string holds at most %d)", len(v), MaxTXTString)
			}
		case TypeA:
			if err != nil || !a.Is4() {
				return fieldErr(f, "%.80q is not an IPv4 address (type A)", t)
			}
			if err := r.tenant.CheckTenantTarget(a); err != nil {
				return fieldErr(f, "%v", err)
			}
		case TypeAAAA:
			if err != nil || !a.Is6() || a.Is4In6() || a.Zone() != "" {
				return fieldErr(f, "%.80q is not an IPv6 address (type AAAA)", t)
			}
			if err := r.tenant.CheckTenantTarget(a); err != nil {
				return fieldErr(f, "%v", err)
			}
		case TypeCNAME:
			if _, ok := dns.IsDomainName(t); !ok || t == "" || strings.ContainsAny(t, "* \\") {
				return fieldErr(f, "%.80q is not a host name (type CNAME)", t)
			}
			if err := model.CheckHostName(t); err != nil { // what endpoints[].cname allows
				return fieldErr(f, "%v (type CNAME)", err)
			}
			if t == e.DNSName {
				return fieldErr(f, "%q points at the record's own name", t)
			}
		}
	}
	return nil
}

func (r *Rules) checkProps(e *Endpoint) error {
	if v := e.Prop(PropWeight); v != "" {
		if w, err := strconv.Atoi(v); err != nil || w < 0 || w > model.MaxWeight {
			return fieldErr("providerSpecific["+PropWeight+"]", "%.40q is not a weight (allowed: an integer 0..%d; default %d)", v, model.MaxWeight, model.DefaultWeight)
		}
	}
	if v := e.Prop(PropHealthCheck); v != "" {
		if r.parseCheck == nil {
			return fieldErr("providerSpecific["+PropHealthCheck+"]", "is not read here")
		}
		c, err := r.parseCheck(v)
		if err != nil {
			return fieldErr("providerSpecific["+PropHealthCheck+"]", "%.80q %v", v, err)
		}
		// What services[].health_check allows (a CNAME cannot be probed).
		if err := model.ValidateHealthCheck(c, e.RecordType == TypeCNAME); err != nil {
			return fieldErr("providerSpecific["+PropHealthCheck+"]", "%.80q: %v", v, err)
		}
	}
	return nil
}
