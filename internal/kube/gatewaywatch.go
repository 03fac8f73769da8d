package kube

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/dynamic/dynamicinformer"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
	gwv1 "sigs.k8s.io/gateway-api/apis/v1"
)

// gatewayResources are the Gateway API resources Meridian watches, by
// kind, in the versions it reads (the first one the member serves wins).
var gatewayResources = []struct {
	kind, resource string
	versions       []string
}{
	{KindGateway, "gateways", []string{"v1"}},
	{KindHTTPRoute, "httproutes", []string{"v1"}},
	{KindGRPCRoute, "grpcroutes", []string{"v1"}},
	{KindTLSRoute, "tlsroutes", []string{"v1", "v1alpha3", "v1alpha2"}},
}

// routeShape is the part of any route kind and version Meridian reads.
type routeShape struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata"`
	Spec              struct {
		Hostnames  []gwv1.Hostname        `json:"hostnames"`
		ParentRefs []gwv1.ParentReference `json:"parentRefs"`
	} `json:"spec"`
	Status struct {
		Parents []gwv1.RouteParentStatus `json:"parents"`
	} `json:"status"`
}

// gatewayShape is the part of a Gateway Meridian reads.
type gatewayShape struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata"`
	Status            struct {
		Addresses []gwv1.GatewayStatusAddress `json:"addresses"`
	} `json:"status"`
}

// discoverGateway finds which Gateway API resources the member serves. An
// empty map means none (the CRDs are not installed).
func discoverGateway(cs kubernetes.Interface) (map[string]schema.GroupVersionResource, error) {
	served := map[string][]string{} // version -> resources
	for _, v := range []string{"v1", "v1alpha3", "v1alpha2"} {
		list, err := cs.Discovery().ServerResourcesForGroupVersion(GatewayGroup + "/" + v)
		if apierrors.IsNotFound(err) {
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("discovery of %s/%s: %w", GatewayGroup, v, err)
		}
		for _, r := range list.APIResources {
			served[v] = append(served[v], r.Name)
		}
	}
	out := map[string]schema.GroupVersionResource{}
	for _, r := range gatewayResources {
		for _, v := range r.versions {
			if slices.Contains(served[v], r.resource) {
				out[r.kind] = schema.GroupVersionResource{Group: GatewayGroup, Version: v, Resource: r.resource}
				break
			}
		}
	}
	if _, ok := out[KindGateway]; !ok {
		return map[string]schema.GroupVersionResource{}, nil // routes without Gateways give no address
	}
	return out, nil
}

// tryGateway starts the Gateway API informers of the kinds the member
// serves; it is called on every heartbeat until all of them run, so CRDs
// installed later are picked up. It logs the absence of the CRDs once.
func (m *member) tryGateway(ctx context.Context, cs kubernetes.Interface) {
	m.mu.Lock()
	cfg, running := m.watchCfg, len(m.gvrs)
	m.mu.Unlock()
	if running == len(gatewayResources) || cfg == nil {
		return
	}
	gvrs, err := discoverGateway(cs)
	if err != nil {
		m.mg.log.Warn("kubernetes: Gateway API discovery failed; retried", "cluster", m.src.Cluster, "err", err)
		return
	}
	if len(gvrs) == 0 {
		if !m.gwAbsentLogged {
			m.gwAbsentLogged = true
			m.mg.log.Info("kubernetes: the Gateway API CRDs are not installed; HTTPRoutes, GRPCRoutes and TLSRoutes are not watched (checked again with each heartbeat)", "cluster", m.src.Cluster)
		}
		return
	}
	m.mu.Lock()
	if m.dyn == nil {
		m.dyn, err = dynamic.NewForConfig(cfg)
		if err != nil {
			m.mu.Unlock()
			m.mg.log.Error("kubernetes: Gateway API client", "cluster", m.src.Cluster, "err", err)
			return
		}
		nss := m.kcfg.Namespaces
		if len(nss) == 0 {
			nss = []string{metav1.NamespaceAll}
		}
		for _, ns := range nss {
			m.gwFactories = append(m.gwFactories, dynamicinformer.NewFilteredDynamicSharedInformerFactory(m.dyn, m.kcfg.Resync.D(), ns, nil))
		}
	}
	var kinds []string
	for _, r := range gatewayResources { // Gateways first
		if gvr, ok := gvrs[r.kind]; ok {
			if _, running := m.gvrs[r.kind]; !running {
				m.gvrs[r.kind] = gvr
				kinds = append(kinds, r.kind)
			}
		}
	}
	factories := m.gwFactories
	m.mu.Unlock()
	if len(kinds) == 0 {
		return
	}
	h := cache.ResourceEventHandlerFuncs{
		AddFunc:    func(o any) { m.safely(o, m.upsert) },
		UpdateFunc: func(_, o any) { m.safely(o, m.upsert) },
		DeleteFunc: func(o any) { m.safely(o, m.remove) },
	}
	for _, f := range factories {
		for _, k := range kinds {
			if _, err := f.ForResource(gvrs[k]).Informer().AddEventHandler(h); err != nil {
				m.mg.log.Error("kubernetes: Gateway API informer", "cluster", m.src.Cluster, "kind", k, "err", err)
			}
		}
		f.Start(ctx.Done())
	}
	go func() {
		for _, f := range factories {
			f.WaitForCacheSync(ctx.Done())
		}
		m.mg.log.Info("kubernetes: watching annotated Gateway API routes", "cluster", m.src.Cluster, "namespaces", orAll(strings.Join(m.kcfg.Namespaces, ",")), "kinds", kinds)
	}()
}

// isRouteKind reports whether kind is a watched Gateway API route.
func isRouteKind(kind string) bool {
	return kind == KindHTTPRoute || kind == KindGRPCRoute || kind == KindTLSRoute
}

// readRoute converts a watched route into what Meridian reads.
func readRoute(u *unstructured.Unstructured) (Route, *routeShape, error) {
	var s routeShape
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, &s); err != nil {
		return Route{}, nil, fmt.Errorf("%s %s/%s: %w", u.GetKind(), u.GetNamespace(), u.GetName(), err)
	}
	r := Route{Kind: u.GetKind(), Namespace: u.GetNamespace(), Name: u.GetName(), ParentRefs: s.Spec.ParentRefs, Parents: s.Status.Parents}
	for _, h := range s.Spec.Hostnames {
		r.Hostnames = append(r.Hostnames, string(h))
	}
	return r, &s, nil
}

// gatewayChanged records a Gateway (nil: deleted) and, when its addresses
// changed, re-reads every watched route, so an address change is served at
// once (a Gateway's other changes, and resyncs, cost nothing). m.routeMu is
// held.
func (m *member) gatewayChanged(key string, u *unstructured.Unstructured) {
	var gw *gwv1.Gateway
	if u != nil {
		var s gatewayShape
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, &s); err != nil {
			m.mg.log.Warn("kubernetes: unreadable Gateway; its addresses are not served", "cluster", m.src.Cluster, "gateway", key, "err", err)
		} else {
			gw = &gwv1.Gateway{ObjectMeta: s.ObjectMeta}
			gw.Status.Addresses = s.Status.Addresses
		}
	}
	m.mu.Lock()
	old, had := m.gateways[key]
	if had == (gw != nil) && (gw == nil || slices.EqualFunc(old.Status.Addresses, gw.Status.Addresses, sameAddress)) {
		m.mu.Unlock()
		return
	}
	if gw == nil {
		delete(m.gateways, key)
	} else {
		m.gateways[key] = gw
	}
	var routes []any
	for ref, st := range m.objs {
		if isRouteKind(ref.Kind) && st.runtime != nil {
			routes = append(routes, st.runtime)
		}
	}
	m.mu.Unlock()
	for _, r := range routes {
		m.safely(r, m.upsertLocked)
	}
}

// routeObject reads a watched route: its ref, the annotations it is read
// with, its targets and problems; watched is false for routes Meridian
// ignores.
func (m *member) routeObject(u *unstructured.Unstructured) (ref ObjectRef, anno map[string]string, targets, problems []string, annoErr *FieldError, watched bool) {
	ref = ObjectRef{m.src.Cluster, u.GetKind(), u.GetNamespace(), u.GetName()}
	r, _, err := readRoute(u)
	if err != nil {
		anno, watched, _ = RouteAnnotations(u.GetAnnotations(), nil)
		return ref, anno, nil, []string{fmt.Sprintf("not served: the route is unreadable: %v", err)}, nil, watched
	}
	anno, watched, annoErr = RouteAnnotations(u.GetAnnotations(), r.Hostnames)
	if !watched {
		return ref, anno, nil, nil, nil, false
	}
	m.mu.Lock()
	targets, problems = RouteTargets(r, m.gateways)
	m.mu.Unlock()
	return ref, anno, targets, problems, annoErr, true
}

// patchRouteStatus writes meridian.io/status on a route.
func (m *member) patchRouteStatus(ctx context.Context, ref ObjectRef, text, manager string) error {
	m.mu.Lock()
	dyn, gvr, ok := m.dyn, m.gvrs[ref.Kind], m.gvrs[ref.Kind].Resource != ""
	m.mu.Unlock()
	if dyn == nil || !ok {
		return fmt.Errorf("kind %s is not watched", ref.Kind)
	}
	patch, err := json.Marshal(map[string]any{"metadata": map[string]any{"annotations": map[string]string{AnnoStatus: text}}})
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	_, err = dyn.Resource(gvr).Namespace(ref.Namespace).Patch(ctx, ref.Name, types.MergePatchType, patch, metav1.PatchOptions{FieldManager: manager})
	return err
}

// gatewayKinds lists the Gateway API kinds watched now, sorted.
func (m *member) gatewayKinds() []string {
	m.mu.Lock()
	defer m.mu.Unlock()
	out := make([]string, 0, len(m.gvrs))
	for k := range m.gvrs {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

// sameAddress compares two Gateway status addresses by type and value.
func sameAddress(a, b gwv1.GatewayStatusAddress) bool {
	typ := func(t *gwv1.AddressType) gwv1.AddressType {
		if t == nil {
			return gwv1.IPAddressType
		}
		return *t
	}
	return typ(a.Type) == typ(b.Type) && a.Value == b.Value
}
