package kube

import (
	"fmt"
	"log/slog"
	"maps"
	"net/netip"
	"slices"
	"strconv"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/meridian-gslb/meridian/internal/model"
)

// KindDNSEndpoint is ExternalDNS's DNSEndpoint, a watched kind.
const KindDNSEndpoint = "DNSEndpoint"

// ExternalDNSGroup is the API group of ExternalDNS's DNSEndpoint CRD.
const ExternalDNSGroup = "externaldns.k8s.io"

// dnsEndpointKinds is what the DNSEndpoint source watches.
var dnsEndpointKinds = []crdKind{{KindDNSEndpoint, ExternalDNSGroup, "dnsendpoints", []string{"v1alpha1"}}}

// The size limits of a DNSEndpoint, which a tenant writes freely (the API
// server bounds only the object's size, about 1.5 MB: some 100 000
// targets). A DNSEndpoint is read up to MaxDNSEndpointEndpoints entries of
// spec.endpoints and, of each, up to MaxDNSEndpointTargets targets; more
// is a problem, and not served. A DNSEndpoint's first maxDNSEndpointProblems
// problems are each listed, the rest are counted in one.
const (
	// MaxDNSEndpointEndpoints is ten entries for each of the
	// model.DefaultMaxHostnamesPerObject names an object may serve.
	MaxDNSEndpointEndpoints = 1000
	// MaxDNSEndpointTargets is the targets per record the ExternalDNS
	// webhook accepts (extdns.DefaultMaxTargets).
	MaxDNSEndpointTargets  = 64
	maxDNSEndpointProblems = 10
)

// externalEndpoint is one entry of a DNSEndpoint's spec.endpoints, the
// part Meridian reads (labels and setIdentifier are ExternalDNS's own).
type externalEndpoint struct {
	DNSName          string             `json:"dnsName"`
	Targets          []string           `json:"targets"`
	RecordType       string             `json:"recordType"`
	RecordTTL        int64              `json:"recordTTL"`
	ProviderSpecific []providerProperty `json:"providerSpecific"`
}

// providerProperty is one providerSpecific entry of an endpoint.
type providerProperty struct {
	Name  string `json:"name"`
	Value string `json:"value"`
}

// dnsEndpointShape is the part of a DNSEndpoint Meridian reads.
type dnsEndpointShape struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata"`
	Spec              struct {
		Endpoints []externalEndpoint `json:"endpoints"`
	} `json:"spec"`
}

// DNSEndpointRead is what one DNSEndpoint gives Meridian.
type DNSEndpointRead struct {
	// Targets are the targets of each name it serves (canonical names),
	// from its A, AAAA and CNAME endpoints.
	Targets map[string][]string
	// Annotations are the settings it is read with: its own meridian.io/
	// annotations, then (for a setting none sets) the meridian.io/
	// providerSpecific entries of its endpoints and the smallest
	// recordTTL, with meridian.io/hostname set to its names.
	Annotations map[string]string
	// Err is a providerSpecific setting its endpoints disagree on.
	Err *FieldError
	// Problems are targets that are not what their record type says
	// (reported on a DNSEndpoint that serves some name).
	Problems []string
}

// ReadDNSEndpoint reads a DNSEndpoint's endpoints. It is pure. The rules
// (docs/kubernetes.md, "DNSEndpoint source"):
//   - an A, AAAA or CNAME endpoint whose dnsName is a host name (no
//     wildcard) gives its name its targets; endpoints of one name add up
//     (whatever their setIdentifier); other record types, and names
//     Meridian cannot serve, are left to ExternalDNS's other providers;
//   - an A target must be an IPv4 address, an AAAA target an IPv6 address,
//     a CNAME target a host name: another target is a problem, and skipped;
//   - at most MaxDNSEndpointEndpoints entries of spec.endpoints, and of
//     each at most MaxDNSEndpointTargets targets, are read: more is a
//     problem, and the rest is not read;
//   - the first maxDNSEndpointProblems problems are listed, the others
//     counted in one more;
//   - its meridian.io/ annotations are its settings, as on a Service
//     (meridian.io/hostname is not: the names are spec.endpoints'); a
//     setting no annotation sets is taken from the providerSpecific
//     entries named meridian.io/<setting> (or webhook/meridian.io/<setting>)
//     when every endpoint that has it gives the same value (else Err), and
//     meridian.io/ttl from the smallest recordTTL.
func ReadDNSEndpoint(own map[string]string, eps []externalEndpoint) DNSEndpointRead {
	r := DNSEndpointRead{Targets: map[string][]string{}}
	specific := map[string]string{}
	ttl := int64(0)
	var problems problemList
	if len(eps) > MaxDNSEndpointEndpoints {
		problems.add("not served: spec.endpoints lists more than %d entries (a DNSEndpoint is read up to %d): the others are not read (split the DNSEndpoint)",
			MaxDNSEndpointEndpoints, MaxDNSEndpointEndpoints)
		eps = eps[:MaxDNSEndpointEndpoints]
	}
	seen := map[string]map[string]bool{} // name -> its targets, as r.Targets[name]
	for i, ep := range eps {
		name, ok := endpointName(ep)
		if !ok {
			continue
		}
		targets := ep.Targets
		if len(targets) > MaxDNSEndpointTargets {
			problems.add("not served: spec.endpoints[%d] (%s %s) lists more than %d targets (an endpoint is read up to %d): the others are not read",
				i, ep.DNSName, ep.RecordType, MaxDNSEndpointTargets, MaxDNSEndpointTargets)
			targets = targets[:MaxDNSEndpointTargets]
		}
		if seen[name] == nil {
			seen[name] = map[string]bool{}
		}
		for _, t := range targets {
			v, err := endpointTarget(ep.RecordType, t)
			if err != "" {
				problems.add("not served: spec.endpoints[%d] (%s %s): target %q %s", i, ep.DNSName, ep.RecordType, t, err)
				continue
			}
			if !seen[name][v] {
				seen[name][v] = true
				r.Targets[name] = append(r.Targets[name], v)
			}
		}
		if len(r.Targets[name]) == 0 {
			delete(r.Targets, name)
			continue
		}
		if ep.RecordTTL > 0 && (ttl == 0 || ep.RecordTTL < ttl) {
			ttl = ep.RecordTTL
		}
		if r.Err == nil {
			r.Err = providerSettings(specific, i, ep.ProviderSpecific)
		}
	}
	r.Problems = problems.done("problems of spec.endpoints")
	r.Annotations = dnsEndpointAnnotations(own, r.Targets, specific, ttl)
	return r
}

// allowedTargets applies tenant_targets to the address targets of names
// (canonical, each a key of nameTargets): DNSEndpoints are written by
// tenants, and Meridian's probers connect to their targets, so an address
// tt refuses (model.TenantTargets.CheckTenantTarget: unspecified,
// link-local, multicast, reserved; loopback unless allowed) is not served.
// It returns nil when every target is allowed, else the targets of each
// name that are (a name with none left has none), and the problems: the
// first maxDNSEndpointProblems refused targets, the rest counted in one.
// Host-name targets (CNAME) are not addresses and are kept. It is pure.
func allowedTargets(nameTargets map[string][]string, names []string, tt model.TenantTargets) (map[string][]string, []string) {
	var out map[string][]string
	var problems problemList
	for _, name := range names {
		ts := nameTargets[name]
		var kept []string
		for i, t := range ts {
			a, err := netip.ParseAddr(t)
			if err != nil {
				if kept != nil {
					kept = append(kept, t)
				}
				continue
			}
			if err := tt.CheckTenantTarget(a); err != nil {
				if kept == nil {
					kept = append(make([]string, 0, len(ts)), ts[:i]...)
				}
				problems.add("not served: a target of %s (tenant_targets): %v", name, err)
				continue
			}
			if kept != nil {
				kept = append(kept, t)
			}
		}
		if kept == nil {
			continue
		}
		if out == nil {
			out = maps.Clone(nameTargets)
		}
		out[name] = kept
	}
	return out, problems.done("targets refused by tenant_targets")
}

// problemList keeps the first maxDNSEndpointProblems problems of a
// DNSEndpoint and counts the others.
type problemList struct {
	list []string
	more int
}

func (p *problemList) add(format string, args ...any) {
	if len(p.list) < maxDNSEndpointProblems {
		p.list = append(p.list, fmt.Sprintf(format, args...))
		return
	}
	p.more++
}

// done is the problems kept, then one that counts the others as what.
func (p *problemList) done(what string) []string {
	if p.more == 0 {
		return p.list
	}
	return append(p.list, fmt.Sprintf("not served: %d more %s are not listed (the first %d are)", p.more, what, maxDNSEndpointProblems))
}

// endpointName is the canonical name of an endpoint Meridian serves; ok
// is false for other record types and names that are not host names.
func endpointName(ep externalEndpoint) (string, bool) {
	switch ep.RecordType {
	case "A", "AAAA", "CNAME":
	default:
		return "", false
	}
	hs, err := parseHostnames(ep.DNSName)
	if err != nil || len(hs) != 1 {
		return "", false
	}
	return hs[0], true
}

// endpointTarget checks one target against its record type; it returns
// the target as Build reads it, or what is wrong with it.
func endpointTarget(recordType, t string) (string, string) {
	t = strings.TrimSpace(t)
	a, err := netip.ParseAddr(t)
	switch recordType {
	case "A":
		if err != nil || !a.Is4() {
			return "", "is not an IPv4 address"
		}
		return a.String(), ""
	case "AAAA":
		if err != nil || !a.Is6() || a.Is4In6() {
			return "", "is not an IPv6 address"
		}
		return a.String(), ""
	}
	if err == nil {
		return "", "is an address, not a host name"
	}
	hs, herr := parseHostnames(t)
	if herr != nil || len(hs) != 1 {
		return "", "is not a host name"
	}
	return hs[0], ""
}

// providerSettings adds the meridian.io/ providerSpecific entries of
// endpoint i to specific (also named webhook/meridian.io/<setting> or
// webhook/meridian-<setting>, the webhook provider's form); a value that differs from another endpoint's
// is returned as an error.
func providerSettings(specific map[string]string, i int, props []providerProperty) *FieldError {
	for _, p := range props {
		key := strings.TrimPrefix(p.Name, "webhook/")
		if setting, ok := strings.CutPrefix(key, "meridian-"); ok {
			// webhook/meridian-weight, what an ExternalDNS annotation
			// external-dns.kubernetes.io/webhook-meridian-weight gives and
			// what Meridian's webhook provider reads (internal/extdns).
			key = annoPrefix + setting
		}
		if !strings.HasPrefix(key, annoPrefix) || key == AnnoHostname || key == AnnoStatus {
			continue
		}
		if prev, ok := specific[key]; ok && prev != p.Value {
			return &FieldError{Annotation: key, Value: p.Value,
				Msg: fmt.Sprintf("(providerSpecific of spec.endpoints[%d]) differs from %q of another endpoint (allowed: one value per DNSEndpoint; set it as an annotation on the DNSEndpoint)", i, prev)}
		}
		specific[key] = p.Value
	}
	return nil
}

// dnsEndpointAnnotations are the annotations a DNSEndpoint is read with.
func dnsEndpointAnnotations(own map[string]string, targets map[string][]string, specific map[string]string, ttl int64) map[string]string {
	out := make(map[string]string, len(own)+len(specific)+2)
	for k, v := range specific {
		out[k] = v
	}
	if _, set := out[AnnoTTL]; !set && ttl > 0 {
		out[AnnoTTL] = strconv.FormatInt(min(ttl, model.MaxTTL), 10)
	}
	maps.Copy(out, own)
	names := slices.Sorted(maps.Keys(targets))
	out[AnnoHostname] = strings.Join(names, ",")
	return out
}

// dnsEndpointSource watches a member's DNSEndpoints (ExternalDNS's CRD)
// where the CRD is served, and hands each one with a served record to the
// sink. Its informers keep slim copies (slimDNSEndpoint).
type dnsEndpointSource struct {
	cluster string
	sink    objectSink
	watch   *crdWatch
}

func newDNSEndpointSource(cluster string, log *slog.Logger, k model.Kubernetes, sink objectSink) *dnsEndpointSource {
	s := &dnsEndpointSource{cluster: cluster, sink: sink}
	s.watch = &crdWatch{cluster: cluster, log: log, kcfg: k, what: "DNSEndpoints (ExternalDNS)", kinds: dnsEndpointKinds,
		transform: slimDNSEndpoint, handler: handlers(sink, s.upsert, s.remove)}
	return s
}

// upsert reads an added or changed DNSEndpoint: one with an A, AAAA or
// CNAME record is put, another is dropped.
func (s *dnsEndpointSource) upsert(o any) {
	u, ok := o.(*unstructured.Unstructured)
	if !ok {
		return
	}
	in, watched := s.read(u)
	if !watched {
		s.sink.drop(in.ref)
		return
	}
	s.sink.put(in)
}

// remove drops a deleted DNSEndpoint.
func (s *dnsEndpointSource) remove(o any) {
	if u, ok := withoutTombstone(o).(*unstructured.Unstructured); ok {
		s.sink.drop(ObjectRef{s.cluster, KindDNSEndpoint, u.GetNamespace(), u.GetName()})
	}
}

// read reads a DNSEndpoint; watched is false when it has no record
// Meridian serves (the API server validates the CRD's schema, so one that
// does not read as the schema says is not watched either, and logged).
func (s *dnsEndpointSource) read(u *unstructured.Unstructured) (in objectRead, watched bool) {
	in = objectRead{ref: ObjectRef{s.cluster, KindDNSEndpoint, u.GetNamespace(), u.GetName()},
		uid: u.GetUID(), created: u.GetCreationTimestamp().Time, obj: u, own: u.GetAnnotations()}
	var sh dnsEndpointShape
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, &sh); err != nil {
		s.watch.log.Warn("kubernetes: unreadable DNSEndpoint; not served", "object", in.ref.String(), "err", err)
		return in, false
	}
	r := ReadDNSEndpoint(in.own, sh.Spec.Endpoints)
	if len(r.Targets) == 0 {
		return in, false
	}
	in.anno, in.annoErr, in.problems, in.nameTargets = r.Annotations, r.Err, r.Problems, r.Targets
	seen := map[string]bool{}
	for _, name := range slices.Sorted(maps.Keys(r.Targets)) {
		for _, t := range r.Targets[name] {
			if !seen[t] {
				seen[t] = true
				in.targets = append(in.targets, t)
			}
		}
	}
	return in, true
}
