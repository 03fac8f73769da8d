package kube

import (
	"context"
	"io"
	"log/slog"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	dynamicfake "k8s.io/client-go/dynamic/fake"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/tools/cache"

	"github.com/meridian-gslb/meridian/internal/model"
)

func uRoute(name string, anno map[string]string, acceptedStatus string) *unstructured.Unstructured {
	a := map[string]any{}
	for k, v := range anno {
		a[k] = v
	}
	u := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "gateway.networking.k8s.io/v1", "kind": KindHTTPRoute,
		"metadata": map[string]any{"namespace": "shop", "name": name, "uid": "uid-" + name, "annotations": a},
		"spec":     map[string]any{"hostnames": []any{"app.gslb.example.com"}, "parentRefs": []any{map[string]any{"name": "gw"}}},
	}}
	if acceptedStatus != "" {
		u.Object["status"] = map[string]any{"parents": []any{map[string]any{"parentRef": map[string]any{"name": "gw"}, "controllerName": "example.com/gw",
			"conditions": []any{map[string]any{"type": "Accepted", "status": acceptedStatus, "reason": "R", "message": "", "lastTransitionTime": "2026-11-01T00:00:00Z"}}}}}
	}
	return u
}

func uGateway(labels map[string]any, ips ...string) *unstructured.Unstructured {
	var addrs []any
	for _, ip := range ips {
		addrs = append(addrs, map[string]any{"type": "IPAddress", "value": ip})
	}
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "gateway.networking.k8s.io/v1", "kind": KindGateway,
		"metadata": map[string]any{"namespace": "shop", "name": "gw", "labels": labels},
		"status":   map[string]any{"addresses": addrs},
	}}
}

func gwMember(t *testing.T) *member {
	t.Helper()
	mg := NewManager(context.Background(), Options{Logger: slog.New(slog.NewTextHandler(io.Discard, nil)), Registry: prometheus.NewRegistry()})
	return newMember(mg, MemberSource{Cluster: "east"}, model.Kubernetes{})
}

func onlyObject(t *testing.T, m *member) Object {
	t.Helper()
	objs := m.objects()
	require.Len(t, objs, 1)
	return objs[0]
}

func TestARouteFollowsItsGatewayWhateverTheOrderOfEvents(t *testing.T) {
	m := gwMember(t)
	m.routes.upsert(uRoute("web", map[string]string{AnnoHostname: "app.gslb.example.com"}, "True"))
	o := onlyObject(t, m)
	assert.True(t, o.Valid)
	assert.Empty(t, o.Targets, "the Gateway is not seen yet")
	assert.Equal(t, []string{"parent Gateway shop/gw accepted the route but is not found"}, o.Problems)

	m.routes.upsert(uGateway(nil, "198.51.100.1"))
	o = onlyObject(t, m)
	assert.Equal(t, []string{"198.51.100.1"}, o.Targets, "the Gateway's arrival re-reads the route")
	assert.Empty(t, o.Problems)

	m.routes.upsert(uGateway(map[string]any{"a": "b"}, "198.51.100.2"))
	assert.Equal(t, []string{"198.51.100.2"}, onlyObject(t, m).Targets, "an address change is taken at once")

	m.routes.remove(cache.DeletedFinalStateUnknown{Key: "shop/gw", Obj: uGateway(nil, "198.51.100.2")})
	o = onlyObject(t, m)
	assert.Empty(t, o.Targets, "a deleted Gateway gives no address")
	assert.Equal(t, []string{"parent Gateway shop/gw accepted the route but is not found"}, o.Problems)
}

func TestARouteThatIsNotAcceptedCarriesTheReason(t *testing.T) {
	m := gwMember(t)
	m.routes.upsert(uGateway(nil, "198.51.100.1"))
	m.routes.upsert(uRoute("web", map[string]string{AnnoHostname: "app.gslb.example.com"}, "False"))
	o := onlyObject(t, m)
	assert.Empty(t, o.Targets)
	require.Len(t, o.Problems, 1)
	assert.Contains(t, o.Problems[0], RouteNotAcceptedPrefix+": Gateway shop/gw did not accept the route (Accepted=False, reason R")
}

func TestARouteLeavesWhenItsAnnotationsGoAndADeletedRouteStaysGone(t *testing.T) {
	m := gwMember(t)
	m.routes.upsert(uGateway(nil, "198.51.100.1"))
	m.routes.upsert(uRoute("web", map[string]string{AnnoHostnamesFromSpec: "true"}, "True"))
	assert.Equal(t, []string{"app.gslb.example.com."}, onlyObject(t, m).Settings.Hostnames, "spec.hostnames are served on opt-in")
	m.routes.upsert(uRoute("web", nil, "True"))
	assert.Empty(t, m.objects(), "without the annotations the route is not watched")

	m.routes.upsert(uRoute("web", map[string]string{AnnoHostname: "app.gslb.example.com"}, "True"))
	m.routes.remove(uRoute("web", map[string]string{AnnoHostname: "app.gslb.example.com"}, "True"))
	m.routes.upsert(uGateway(nil, "198.51.100.9"))
	assert.Empty(t, m.objects(), "a Gateway change does not bring back a deleted route")
}

func TestAnInvalidOptInKeepsTheRouteWithoutSettings(t *testing.T) {
	m := gwMember(t)
	m.routes.upsert(uRoute("web", map[string]string{AnnoHostnamesFromSpec: "yes"}, "True"))
	o := onlyObject(t, m)
	assert.False(t, o.Valid)
	assert.Equal(t, 1, m.invalid())
}

func TestStatusIsWrittenOnARouteThroughTheDynamicClient(t *testing.T) {
	m := gwMember(t)
	route := uRoute("web", map[string]string{AnnoHostname: "app.gslb.example.com"}, "False")
	gvr := schema.GroupVersionResource{Group: GatewayGroup, Version: "v1", Resource: "httproutes"}
	scheme := runtime.NewScheme()
	dyn := dynamicfake.NewSimpleDynamicClientWithCustomListKinds(scheme, map[schema.GroupVersionResource]string{gvr: "HTTPRouteList"}, route.DeepCopy())
	cs := fake.NewClientset()
	m.state, m.cs, m.writer.cs, m.routes.dyn = StateReady, cs, cs, dyn
	m.routes.gvrs[KindHTTPRoute] = gvr
	m.writer.events = newEventWriter(cs, nil)
	m.routes.upsert(route)
	ref := onlyObject(t, m).Ref
	r := Build(m.objects(), base())

	require.Zero(t, m.writeStatus(map[ObjectRef]Status{ref: {Hostnames: []string{"app.gslb.example.com."}}}, r.Problems, true))
	got, err := dyn.Resource(gvr).Namespace("shop").Get(context.Background(), "web", metav1.GetOptions{})
	require.NoError(t, err)
	assert.Contains(t, got.GetAnnotations()[AnnoStatus], RouteNotAcceptedPrefix)
	evs, err := cs.CoreV1().Events("shop").List(context.Background(), metav1.ListOptions{})
	require.NoError(t, err)
	require.Len(t, evs.Items, 1)
	assert.Equal(t, ReasonRouteNotAccepted, evs.Items[0].Reason)
	assert.Equal(t, KindHTTPRoute, evs.Items[0].InvolvedObject.Kind)
}
