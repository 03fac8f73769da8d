package kube

import (
	"fmt"
	"net/netip"
	"slices"
	"strings"

	"github.com/miekg/dns"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	gwv1 "sigs.k8s.io/gateway-api/apis/v1"
)

// Kinds of Gateway API routes Meridian watches (group gateway.networking.k8s.io).
const (
	KindHTTPRoute = "HTTPRoute"
	KindGRPCRoute = "GRPCRoute"
	KindTLSRoute  = "TLSRoute"
	KindGateway   = "Gateway"
)

// GatewayGroup is the API group of the Gateway API.
const GatewayGroup = "gateway.networking.k8s.io"

// RouteNotAcceptedPrefix starts the problem of a route that no parent
// Gateway accepted.
const RouteNotAcceptedPrefix = "not served: no parent Gateway accepted the route"

// routeNotThroughPrefix starts the problem of one parent Gateway that did
// not accept a route another parent serves.
const routeNotThroughPrefix = "not served through Gateway "

// Route is what Meridian reads of an HTTPRoute, GRPCRoute or TLSRoute.
type Route struct {
	Kind, Namespace, Name string
	Hostnames             []string                 // spec.hostnames
	ParentRefs            []gwv1.ParentReference   // spec.parentRefs
	Parents               []gwv1.RouteParentStatus // status.parents
}

// GatewayKey names a Gateway: NAMESPACE/NAME.
func GatewayKey(namespace, name string) string { return namespace + "/" + name }

// RouteTargets are the addresses a route serves: the status.addresses of
// each parent Gateway that accepted it (a status.parents entry for that
// parentRef with condition Accepted=True). IPAddress values are addresses,
// Hostname values CNAME targets; other address types and invalid values are
// skipped with a problem. A parent that is not a Gateway, that did not
// accept the route, or that is not found is reported; a route without any
// accepting parent is not served (the problem starts with
// RouteNotAcceptedPrefix). Targets are de-duplicated in parent order.
func RouteTargets(r Route, gateways map[string]*gwv1.Gateway) (targets, problems []string) {
	var rejected []string
	accepted := 0
	for _, ref := range r.ParentRefs {
		group, kind, ns := GatewayGroup, KindGateway, r.Namespace
		if ref.Group != nil {
			group = string(*ref.Group)
		}
		if ref.Kind != nil {
			kind = string(*ref.Kind)
		}
		if ref.Namespace != nil && *ref.Namespace != "" {
			ns = string(*ref.Namespace)
		}
		key := GatewayKey(ns, string(ref.Name))
		if group != GatewayGroup || kind != KindGateway {
			problems = append(problems, fmt.Sprintf("parent %s %s/%s is not a Gateway (%s); only Gateway parents give addresses", kind, ns, ref.Name, GatewayGroup))
			continue
		}
		ok, why := acceptedBy(r, ref, ns)
		if !ok {
			rejected = append(rejected, fmt.Sprintf("%s %s", key, why))
			continue
		}
		accepted++
		gw := gateways[key]
		if gw == nil {
			problems = append(problems, fmt.Sprintf("parent Gateway %s accepted the route but is not found", key))
			continue
		}
		for _, a := range gw.Status.Addresses {
			t, err := gatewayAddress(a)
			if err != nil {
				problems = append(problems, fmt.Sprintf("Gateway %s: %v", key, err))
				continue
			}
			if !slices.Contains(targets, t) {
				targets = append(targets, t)
			}
		}
	}
	switch {
	case len(r.ParentRefs) == 0:
		problems = append(problems, RouteNotAcceptedPrefix+" (spec.parentRefs is empty)")
	case accepted == 0 && len(rejected) > 0:
		problems = append(problems, RouteNotAcceptedPrefix+": Gateway "+strings.Join(rejected, "; Gateway "))
	case accepted == 0:
		problems = append(problems, RouteNotAcceptedPrefix+" (no parent is a Gateway)")
	default:
		for _, why := range rejected {
			problems = append(problems, routeNotThroughPrefix+why)
		}
	}
	slices.Sort(problems)
	return targets, slices.Compact(problems)
}

// acceptedBy reports whether a status.parents entry for ref (in namespace
// ns) has Accepted=True, and if not, why.
func acceptedBy(r Route, ref gwv1.ParentReference, ns string) (bool, string) {
	why := "has not accepted the route (no status.parents entry for it yet)"
	for _, p := range r.Parents {
		if !sameParent(p.ParentRef, ref, r.Namespace, ns) {
			continue
		}
		c := findCondition(p.Conditions, string(gwv1.RouteConditionAccepted))
		switch {
		case c == nil:
			why = "has not accepted the route (no Accepted condition)"
		case c.Status == metav1.ConditionTrue:
			return true, ""
		default:
			why = fmt.Sprintf("did not accept the route (Accepted=%s, reason %s: %s)", c.Status, c.Reason, c.Message)
		}
	}
	return false, why
}

// sameParent compares a status parentRef with a spec parentRef, defaults applied.
func sameParent(a, b gwv1.ParentReference, routeNS, bNS string) bool {
	aNS := routeNS
	if a.Namespace != nil && *a.Namespace != "" {
		aNS = string(*a.Namespace)
	}
	str := func(p *gwv1.Group, def string) string {
		if p == nil {
			return def
		}
		return string(*p)
	}
	kind := func(p *gwv1.Kind) string {
		if p == nil {
			return KindGateway
		}
		return string(*p)
	}
	sec := func(p *gwv1.SectionName) string {
		if p == nil {
			return ""
		}
		return string(*p)
	}
	port := func(p *gwv1.PortNumber) int32 {
		if p == nil {
			return 0
		}
		return int32(*p)
	}
	return a.Name == b.Name && aNS == bNS && str(a.Group, GatewayGroup) == str(b.Group, GatewayGroup) &&
		kind(a.Kind) == kind(b.Kind) && sec(a.SectionName) == sec(b.SectionName) && port(a.Port) == port(b.Port)
}

func findCondition(cs []metav1.Condition, typ string) *metav1.Condition {
	for i := range cs {
		if cs[i].Type == typ {
			return &cs[i]
		}
	}
	return nil
}

// gatewayAddress reads one status.addresses entry: an IP address (type
// IPAddress, the default) or a host name (type Hostname).
func gatewayAddress(a gwv1.GatewayStatusAddress) (string, error) {
	typ := gwv1.IPAddressType
	if a.Type != nil {
		typ = *a.Type
	}
	v := strings.TrimSpace(a.Value)
	switch typ {
	case gwv1.IPAddressType:
		ip, err := netip.ParseAddr(v)
		if err != nil {
			return "", fmt.Errorf("status.addresses value %q is not an IP address (type IPAddress)", a.Value)
		}
		return ip.Unmap().String(), nil
	case gwv1.HostnameAddressType:
		if _, ok := dns.IsDomainName(v); !ok || !hostChars(v) || !strings.Contains(strings.Trim(v, "."), ".") {
			return "", fmt.Errorf("status.addresses value %q is not a host name (type Hostname)", a.Value)
		}
		return v, nil
	}
	return "", fmt.Errorf("status.addresses type %q is skipped (allowed: IPAddress, Hostname)", typ)
}

// RouteAnnotations are the annotations a route is read with: its own, and
// with meridian.io/hostnames-from-spec: "true" and no meridian.io/hostname,
// spec.hostnames as meridian.io/hostname. ok is false when the route is not
// watched (neither annotation), or when the opt-in is not a boolean or
// there is nothing to take (then err says why).
func RouteAnnotations(a map[string]string, specHostnames []string) (out map[string]string, watched bool, err *FieldError) {
	_, hasHost := a[AnnoHostname]
	v, optIn := a[AnnoHostnamesFromSpec]
	if !hasHost && !optIn {
		return a, false, nil
	}
	if hasHost || !optIn {
		return a, true, nil
	}
	switch strings.TrimSpace(v) {
	case "true":
	case "false":
		return a, false, nil
	default:
		return a, true, &FieldError{Annotation: AnnoHostnamesFromSpec, Value: v, Msg: "is not a boolean (allowed: true, false)"}
	}
	if len(specHostnames) == 0 {
		return a, true, &FieldError{Annotation: AnnoHostnamesFromSpec, Value: v, Msg: "is true but spec.hostnames is empty (set spec.hostnames or meridian.io/hostname)"}
	}
	out = make(map[string]string, len(a)+1)
	for k, val := range a {
		out[k] = val
	}
	out[AnnoHostname] = strings.Join(specHostnames, ",")
	return out, true, nil
}

// routeErrors are the annotation errors of an object read with anno (own
// holds its own annotations): with hostnames taken from spec.hostnames, a
// rejected name is reported on meridian.io/hostnames-from-spec, and an
// opt-in error replaces the rest.
func routeErrors(anno, own map[string]string, optIn *FieldError, errs []FieldError) []FieldError {
	if optIn != nil {
		return []FieldError{*optIn}
	}
	if _, set := own[AnnoHostname]; set {
		return errs
	}
	for i, e := range errs {
		if e.Annotation == AnnoHostname {
			errs[i] = FieldError{Annotation: AnnoHostnamesFromSpec, Value: own[AnnoHostnamesFromSpec],
				Msg: "takes spec.hostnames, and " + strings.TrimPrefix(e.Msg, "is not a host name list ") + " (spec.hostnames: " + anno[AnnoHostname] + ")"}
		}
	}
	return errs
}
