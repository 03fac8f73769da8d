package kube

import (
	"maps"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// The informers' transforms: each keeps, of an object, what Meridian reads
// (and what the cache and Events need: name, namespace, UID,
// resourceVersion) and drops the rest (managedFields, labels, other
// annotations, ports, rules' matches, addresses), so a large cluster's
// objects cost little memory. Each is idempotent, and passes objects of
// other types through unchanged. What Meridian reads:
//   - every object: name, namespace, UID, creationTimestamp, the
//     meridian.io/ annotations (serviceSource.read, routeSource.routeObject;
//     meridian.io/status for the status writer), resourceVersion (Events);
//   - a Service: spec.type, status.loadBalancer.ingress IP and hostname;
//   - an Ingress: the same status, and the backend Services' names
//     (backendsOf);
//   - a route: kind, apiVersion, spec.hostnames, spec.parentRefs,
//     status.parents (readRoute) and the backendRefs' group, kind, name and
//     namespace (routeBackends);
//   - a Gateway: status.addresses (gatewayChanged);
//   - an EndpointSlice: the service-name label and each endpoint's
//     conditions (countSlice);
//   - a DNSEndpoint: kind, apiVersion and, of each spec.endpoints entry,
//     dnsName, targets, recordType, recordTTL and providerSpecific
//     (ReadDNSEndpoint), one entry and one target past what it reads
//     (MaxDNSEndpointEndpoints, MaxDNSEndpointTargets), so that it still
//     reports the excess;
//   - a ServiceExport: kind, apiVersion and its meridian.io/Served
//     condition (servedConditionOf); a ServiceImport: kind, apiVersion,
//     spec.type and spec.ips (importText).

// annoPrefix starts every annotation Meridian reads or writes.
const annoPrefix = "meridian.io/"

// slimMeta keeps the metadata Meridian reads.
func slimMeta(m *metav1.ObjectMeta) metav1.ObjectMeta {
	return metav1.ObjectMeta{Name: m.Name, Namespace: m.Namespace, UID: m.UID, ResourceVersion: m.ResourceVersion,
		CreationTimestamp: m.CreationTimestamp, Annotations: meridianAnnotations(m.Annotations)}
}

// meridianAnnotations keeps the meridian.io/ annotations of a (nil when
// there are none).
func meridianAnnotations(a map[string]string) map[string]string {
	var out map[string]string
	for k, v := range a {
		if strings.HasPrefix(k, annoPrefix) {
			if out == nil {
				out = map[string]string{}
			}
			out[k] = v
		}
	}
	return out
}

// slimServiceObject is the transform of the Service and Ingress informers.
func slimServiceObject(o any) (any, error) {
	switch v := o.(type) {
	case *corev1.Service:
		return slimService(v), nil
	case *networkingv1.Ingress:
		return slimIngress(v), nil
	}
	return o, nil
}

// slimService keeps a Service's type and load-balancer addresses.
func slimService(s *corev1.Service) *corev1.Service {
	out := &corev1.Service{TypeMeta: s.TypeMeta, ObjectMeta: slimMeta(&s.ObjectMeta), Spec: corev1.ServiceSpec{Type: s.Spec.Type}}
	if in := s.Status.LoadBalancer.Ingress; len(in) > 0 {
		out.Status.LoadBalancer.Ingress = make([]corev1.LoadBalancerIngress, len(in))
		for i, a := range in {
			out.Status.LoadBalancer.Ingress[i] = corev1.LoadBalancerIngress{IP: a.IP, Hostname: a.Hostname}
		}
	}
	return out
}

// slimIngress keeps an Ingress's load-balancer addresses and the names of
// its backend Services (as one rule with a path per backend).
func slimIngress(g *networkingv1.Ingress) *networkingv1.Ingress {
	out := &networkingv1.Ingress{TypeMeta: g.TypeMeta, ObjectMeta: slimMeta(&g.ObjectMeta)}
	if b := g.Spec.DefaultBackend; b != nil && b.Service != nil {
		out.Spec.DefaultBackend = &networkingv1.IngressBackend{Service: &networkingv1.IngressServiceBackend{Name: b.Service.Name}}
	}
	var paths []networkingv1.HTTPIngressPath
	for _, r := range g.Spec.Rules {
		if r.HTTP == nil {
			continue
		}
		for _, p := range r.HTTP.Paths {
			if p.Backend.Service != nil {
				paths = append(paths, networkingv1.HTTPIngressPath{Backend: networkingv1.IngressBackend{
					Service: &networkingv1.IngressServiceBackend{Name: p.Backend.Service.Name}}})
			}
		}
	}
	if len(paths) > 0 {
		out.Spec.Rules = []networkingv1.IngressRule{{IngressRuleValue: networkingv1.IngressRuleValue{HTTP: &networkingv1.HTTPIngressRuleValue{Paths: paths}}}}
	}
	if in := g.Status.LoadBalancer.Ingress; len(in) > 0 {
		out.Status.LoadBalancer.Ingress = make([]networkingv1.IngressLoadBalancerIngress, len(in))
		for i, a := range in {
			out.Status.LoadBalancer.Ingress[i] = networkingv1.IngressLoadBalancerIngress{IP: a.IP, Hostname: a.Hostname}
		}
	}
	return out
}

// slimGatewayObject is the transform of the Gateway API informers: a
// Gateway keeps its status.addresses, a route what readRoute and
// routeBackends read.
func slimGatewayObject(o any) (any, error) {
	u, ok := o.(*unstructured.Unstructured)
	if !ok {
		return o, nil
	}
	out := slimUnstructured(u)
	if u.GetKind() == KindGateway {
		keep(out, u.Object, "status", "addresses")
		return &unstructured.Unstructured{Object: out}, nil
	}
	keep(out, u.Object, "spec", "hostnames")
	keep(out, u.Object, "spec", "parentRefs")
	if rules, ok := routeRules(u.Object); ok {
		spec, _ := out["spec"].(map[string]any)
		if spec == nil {
			spec = map[string]any{}
			out["spec"] = spec
		}
		spec["rules"] = rules
	}
	keep(out, u.Object, "status", "parents")
	return &unstructured.Unstructured{Object: out}, nil
}

// slimUnstructuredMeta keeps the metadata Meridian reads of an
// unstructured object.
func slimUnstructuredMeta(obj map[string]any) map[string]any {
	md, _ := obj["metadata"].(map[string]any)
	out := map[string]any{}
	for _, k := range []string{"name", "namespace", "uid", "resourceVersion", "creationTimestamp"} {
		if v, ok := md[k]; ok {
			out[k] = v
		}
	}
	if a, ok := md["annotations"].(map[string]any); ok {
		kept := maps.Clone(a)
		maps.DeleteFunc(kept, func(k string, _ any) bool { return !strings.HasPrefix(k, annoPrefix) })
		if len(kept) > 0 {
			out["annotations"] = kept
		}
	}
	return out
}

// keep copies obj[section][field] into out[section][field], if set.
func keep(out, obj map[string]any, section, field string) {
	from, _ := obj[section].(map[string]any)
	v, ok := from[field]
	if !ok {
		return
	}
	to, _ := out[section].(map[string]any)
	if to == nil {
		to = map[string]any{}
		out[section] = to
	}
	to[field] = v
}

// routeRules keeps, of a route's spec.rules, each backendRef's group,
// kind, name and namespace.
func routeRules(obj map[string]any) ([]any, bool) {
	spec, _ := obj["spec"].(map[string]any)
	rules, ok := spec["rules"].([]any)
	if !ok {
		return nil, false
	}
	out := make([]any, len(rules))
	for i, r := range rules {
		rule := map[string]any{}
		out[i] = rule
		rm, _ := r.(map[string]any)
		refs, ok := rm["backendRefs"].([]any)
		if !ok {
			continue
		}
		kept := make([]any, len(refs))
		for j, b := range refs {
			bm, _ := b.(map[string]any)
			ref := map[string]any{}
			for _, k := range []string{"group", "kind", "name", "namespace"} {
				if v, ok := bm[k]; ok {
					ref[k] = v
				}
			}
			kept[j] = ref
		}
		rule["backendRefs"] = kept
	}
	return out, true
}

// trimSlice keeps what countSlice and the cache need of an EndpointSlice:
// names, labels and each endpoint's conditions (no addresses, topology or
// managed fields), so a large cluster's slices cost little memory.
func trimSlice(o any) (any, error) {
	s, ok := o.(*discoveryv1.EndpointSlice)
	if !ok {
		return o, nil
	}
	out := &discoveryv1.EndpointSlice{
		ObjectMeta: metav1.ObjectMeta{Name: s.Name, Namespace: s.Namespace, UID: s.UID, ResourceVersion: s.ResourceVersion,
			Labels: map[string]string{discoveryv1.LabelServiceName: s.Labels[discoveryv1.LabelServiceName]}},
		AddressType: s.AddressType,
		Endpoints:   make([]discoveryv1.Endpoint, len(s.Endpoints)),
	}
	for i, e := range s.Endpoints {
		out.Endpoints[i].Conditions = e.Conditions
	}
	return out, nil
}

// slimDNSEndpoint is the transform of the DNSEndpoint informers.
func slimDNSEndpoint(o any) (any, error) {
	u, ok := o.(*unstructured.Unstructured)
	if !ok {
		return o, nil
	}
	out := slimUnstructured(u)
	spec, _ := u.Object["spec"].(map[string]any)
	eps, ok := spec["endpoints"].([]any)
	if !ok {
		return &unstructured.Unstructured{Object: out}, nil
	}
	eps = eps[:min(len(eps), MaxDNSEndpointEndpoints+1)]
	kept := make([]any, len(eps))
	for i, e := range eps {
		em, _ := e.(map[string]any)
		ep := map[string]any{}
		for _, k := range []string{"dnsName", "targets", "recordType", "recordTTL", "providerSpecific"} {
			if v, ok := em[k]; ok {
				ep[k] = v
			}
		}
		if ts, ok := ep["targets"].([]any); ok && len(ts) > MaxDNSEndpointTargets+1 {
			ep["targets"] = slices.Clone(ts[:MaxDNSEndpointTargets+1])
		}
		kept[i] = ep
	}
	out["spec"] = map[string]any{"endpoints": kept}
	return &unstructured.Unstructured{Object: out}, nil
}

// slimMCSObject is the transform of the ServiceExport and ServiceImport
// informers.
func slimMCSObject(o any) (any, error) {
	u, ok := o.(*unstructured.Unstructured)
	if !ok {
		return o, nil
	}
	out := slimUnstructured(u)
	if u.GetKind() == KindServiceImport {
		keep(out, u.Object, "spec", "type")
		keep(out, u.Object, "spec", "ips")
		return &unstructured.Unstructured{Object: out}, nil
	}
	conds, _, _ := unstructured.NestedSlice(u.Object, "status", "conditions")
	for _, c := range conds {
		if m, ok := c.(map[string]any); ok && m["type"] == ConditionServed {
			out["status"] = map[string]any{"conditions": []any{c}}
		}
	}
	return &unstructured.Unstructured{Object: out}, nil
}

// slimUnstructured keeps the metadata, apiVersion and kind of u.
func slimUnstructured(u *unstructured.Unstructured) map[string]any {
	out := map[string]any{"metadata": slimUnstructuredMeta(u.Object)}
	for _, k := range []string{"apiVersion", "kind"} {
		if v, ok := u.Object[k]; ok {
			out[k] = v
		}
	}
	return out
}
