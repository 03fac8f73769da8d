package kube

import (
	"context"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"strings"
	"sync"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/dynamic/dynamicinformer"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	gwv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/meridian-gslb/meridian/internal/model"
)

// gatewayResources are the Gateway API resources Meridian watches, by
// kind, in the versions it reads (the first one the member serves wins).
var gatewayResources = []crdKind{
	{KindGateway, GatewayGroup, "gateways", []string{"v1"}},
	{KindHTTPRoute, GatewayGroup, "httproutes", []string{"v1"}},
	{KindGRPCRoute, GatewayGroup, "grpcroutes", []string{"v1"}},
	{KindTLSRoute, GatewayGroup, "tlsroutes", []string{"v1", "v1alpha3", "v1alpha2"}},
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
// empty map means none (the CRDs are not installed, or not the Gateway
// one: routes without Gateways give no address).
func discoverGateway(cs kubernetes.Interface) (map[string]schema.GroupVersionResource, error) {
	out, err := discoverKinds(cs, gatewayResources)
	if err != nil {
		return nil, err
	}
	if _, ok := out[KindGateway]; !ok {
		return map[string]schema.GroupVersionResource{}, nil
	}
	return out, nil
}

// routeSource watches a member's Gateway API routes (HTTPRoute,
// GRPCRoute, TLSRoute) and Gateways, where the CRDs are served, and hands
// each watched route, with the addresses of the Gateways that accepted it,
// to the sink. Its informers keep slim copies (slimGatewayObject).
type routeSource struct {
	cluster string
	log     *slog.Logger
	kcfg    model.Kubernetes
	sink    objectSink

	// eventMu serialises route and Gateway events: a Gateway's change
	// re-reads the routes, and must not bring back an older or deleted one.
	eventMu sync.Mutex

	absentLogged bool // try's goroutine only

	mu        sync.Mutex
	dyn       dynamic.Interface
	factories []dynamicinformer.DynamicSharedInformerFactory // one per watched namespace
	gvrs      map[string]schema.GroupVersionResource         // kind -> watched resource
	gateways  map[string]*gwv1.Gateway                       // NAMESPACE/NAME -> last seen
}

func newRouteSource(cluster string, log *slog.Logger, k model.Kubernetes, sink objectSink) *routeSource {
	return &routeSource{cluster: cluster, log: log, kcfg: k, sink: sink,
		gvrs: map[string]schema.GroupVersionResource{}, gateways: map[string]*gwv1.Gateway{}}
}

// try starts the informers of the Gateway API kinds the member serves; it
// is called on every heartbeat until all of them run, so CRDs installed
// later are picked up. It logs the absence of the CRDs once. cfg is the
// member's watch configuration.
func (s *routeSource) try(ctx context.Context, cs kubernetes.Interface, cfg *rest.Config) {
	s.mu.Lock()
	running := len(s.gvrs)
	s.mu.Unlock()
	if running == len(gatewayResources) || cfg == nil {
		return
	}
	gvrs, err := discoverGateway(cs)
	if err != nil {
		s.log.Warn("kubernetes: Gateway API discovery failed; retried", "cluster", s.cluster, "err", err)
		return
	}
	if len(gvrs) == 0 {
		if !s.absentLogged {
			s.absentLogged = true
			s.log.Info("kubernetes: the Gateway API CRDs are not installed; HTTPRoutes, GRPCRoutes and TLSRoutes are not watched (checked again with each heartbeat)", "cluster", s.cluster)
		}
		return
	}
	factories, kinds, err := s.claim(cfg, gvrs)
	if err != nil {
		s.log.Error("kubernetes: Gateway API client", "cluster", s.cluster, "err", err)
		return
	}
	if len(kinds) > 0 {
		s.startInformers(ctx, factories, kinds, gvrs)
	}
}

// claim makes the dynamic client and the informer factories once, and
// records as watched the kinds of gvrs not watched yet, Gateways first;
// it returns the factories and those kinds.
func (s *routeSource) claim(cfg *rest.Config, gvrs map[string]schema.GroupVersionResource) ([]dynamicinformer.DynamicSharedInformerFactory, []string, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.dyn == nil {
		dyn, err := dynamic.NewForConfig(cfg)
		if err != nil {
			return nil, nil, err
		}
		s.dyn = dyn
		for _, ns := range watchedNamespaces(s.kcfg) {
			s.factories = append(s.factories, dynamicinformer.NewFilteredDynamicSharedInformerFactory(dyn, s.kcfg.Resync.D(), ns, nil))
		}
	}
	var kinds []string
	for _, r := range gatewayResources { // Gateways first
		if gvr, ok := gvrs[r.kind]; ok {
			if _, running := s.gvrs[r.kind]; !running {
				s.gvrs[r.kind] = gvr
				kinds = append(kinds, r.kind)
			}
		}
	}
	return s.factories, kinds, nil
}

// startInformers starts the informers of kinds in every factory, each
// keeping slim copies.
func (s *routeSource) startInformers(ctx context.Context, factories []dynamicinformer.DynamicSharedInformerFactory, kinds []string, gvrs map[string]schema.GroupVersionResource) {
	h := handlers(s.sink, s.upsert, s.remove)
	for _, f := range factories {
		for _, k := range kinds {
			inf := f.ForResource(gvrs[k]).Informer()
			if err := inf.SetTransform(slimGatewayObject); err != nil {
				s.log.Error("kubernetes: Gateway API informer", "cluster", s.cluster, "kind", k, "err", err)
			}
			if _, err := inf.AddEventHandler(h); err != nil {
				s.log.Error("kubernetes: Gateway API informer", "cluster", s.cluster, "kind", k, "err", err)
			}
		}
		f.Start(ctx.Done())
	}
	go func() {
		for _, f := range factories {
			f.WaitForCacheSync(ctx.Done())
		}
		s.log.Info("kubernetes: watching annotated Gateway API routes", "cluster", s.cluster, "namespaces", orAll(strings.Join(s.kcfg.Namespaces, ",")), "kinds", kinds)
	}()
}

// upsert reads an added or changed route or Gateway.
func (s *routeSource) upsert(o any) {
	s.eventMu.Lock()
	defer s.eventMu.Unlock()
	u, ok := o.(*unstructured.Unstructured)
	if !ok {
		return
	}
	if u.GetKind() == KindGateway {
		s.gatewayChanged(GatewayKey(u.GetNamespace(), u.GetName()), u)
		return
	}
	s.upsertRoute(u)
}

// upsertRoute reads a route: a watched one is put, one that is no longer
// watched is dropped. s.eventMu is held.
func (s *routeSource) upsertRoute(u *unstructured.Unstructured) {
	in, watched := s.routeObject(u)
	if !watched {
		s.sink.drop(in.ref)
		return
	}
	s.sink.put(in)
}

// remove drops a deleted route, or forgets a deleted Gateway.
func (s *routeSource) remove(o any) {
	u, ok := withoutTombstone(o).(*unstructured.Unstructured)
	if !ok {
		return
	}
	s.eventMu.Lock()
	defer s.eventMu.Unlock()
	if u.GetKind() == KindGateway {
		s.gatewayChanged(GatewayKey(u.GetNamespace(), u.GetName()), nil)
		return
	}
	s.sink.drop(ObjectRef{s.cluster, u.GetKind(), u.GetNamespace(), u.GetName()})
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
// once (a Gateway's other changes, and resyncs, cost nothing). s.eventMu is
// held.
func (s *routeSource) gatewayChanged(key string, u *unstructured.Unstructured) {
	var gw *gwv1.Gateway
	if u != nil {
		var sh gatewayShape
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, &sh); err != nil {
			s.log.Warn("kubernetes: unreadable Gateway; its addresses are not served", "cluster", s.cluster, "gateway", key, "err", err)
		} else {
			gw = &gwv1.Gateway{ObjectMeta: sh.ObjectMeta}
			gw.Status.Addresses = sh.Status.Addresses
		}
	}
	s.mu.Lock()
	old, had := s.gateways[key]
	if had == (gw != nil) && (gw == nil || slices.EqualFunc(old.Status.Addresses, gw.Status.Addresses, sameAddress)) {
		s.mu.Unlock()
		return
	}
	if gw == nil {
		delete(s.gateways, key)
	} else {
		s.gateways[key] = gw
	}
	s.mu.Unlock()
	for _, r := range s.sink.watchedRoutes() {
		s.sink.safely(r, func(o any) {
			if u, ok := o.(*unstructured.Unstructured); ok {
				s.upsertRoute(u)
			}
		})
	}
}

// routeObject reads a watched route: its ref, the annotations it is read
// with, its targets and problems; watched is false for routes Meridian
// ignores.
func (s *routeSource) routeObject(u *unstructured.Unstructured) (in objectRead, watched bool) {
	in = objectRead{ref: ObjectRef{s.cluster, u.GetKind(), u.GetNamespace(), u.GetName()},
		uid: u.GetUID(), created: u.GetCreationTimestamp().Time, obj: u, own: u.GetAnnotations()}
	r, _, err := readRoute(u)
	if err != nil {
		in.anno, watched, _ = RouteAnnotations(in.own, nil)
		in.problems = []string{fmt.Sprintf("not served: the route is unreadable: %v", err)}
	} else {
		in.anno, watched, in.annoErr = RouteAnnotations(in.own, r.Hostnames)
		if !watched {
			return in, false
		}
		s.mu.Lock()
		in.targets, in.problems = RouteTargets(r, s.gateways)
		s.mu.Unlock()
	}
	in.backends = backendsOf(u)
	return in, watched
}

// patchStatus writes meridian.io/status on a route.
func (s *routeSource) patchStatus(ctx context.Context, ref ObjectRef, text, manager string) error {
	s.mu.Lock()
	dyn, gvr, ok := s.dyn, s.gvrs[ref.Kind], s.gvrs[ref.Kind].Resource != ""
	s.mu.Unlock()
	if dyn == nil || !ok {
		return fmt.Errorf("kind %s is not watched", ref.Kind)
	}
	return patchAnnotation(ctx, dyn.Resource(gvr).Namespace(ref.Namespace), ref.Name, text, manager)
}

// kinds lists the Gateway API kinds watched now, sorted.
func (s *routeSource) kinds() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Sorted(maps.Keys(s.gvrs))
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
