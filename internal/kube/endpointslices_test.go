package kube

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/meridian-gslb/meridian/internal/model"
)

// slice is an EndpointSlice of service with ready, notReady and
// terminating endpoints (one unset Ready counts as ready).
func slice(ns, name, service string, ready, notReady, terminating int) *discoveryv1.EndpointSlice {
	s := &discoveryv1.EndpointSlice{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name,
		Labels: map[string]string{discoveryv1.LabelServiceName: service}}, AddressType: discoveryv1.AddressTypeIPv4}
	add := func(n int, cond discoveryv1.EndpointConditions) {
		for range n {
			s.Endpoints = append(s.Endpoints, discoveryv1.Endpoint{Addresses: []string{fmt.Sprintf("10.0.0.%d", len(s.Endpoints)+1)}, Conditions: cond})
		}
	}
	add(ready, discoveryv1.EndpointConditions{Ready: new(true)})
	add(notReady, discoveryv1.EndpointConditions{Ready: new(false)})
	add(terminating, discoveryv1.EndpointConditions{Ready: new(false), Terminating: new(true)})
	return s
}

func TestCountSlice(t *testing.T) {
	cases := []struct {
		name string
		s    *discoveryv1.EndpointSlice
		want SliceCounts
	}{
		{"ready and not ready endpoints are counted", slice("shop", "web-a", "web", 2, 8, 0), SliceCounts{Ready: 2, NotReady: 8, Slices: 1}},
		{"terminating endpoints are left out", slice("shop", "web-a", "web", 3, 0, 4), SliceCounts{Ready: 3, Slices: 1}},
		{"an endpoint without a ready condition is ready", &discoveryv1.EndpointSlice{Endpoints: []discoveryv1.Endpoint{{}}}, SliceCounts{Ready: 1, Slices: 1}},
		{"an empty slice counts as a slice", &discoveryv1.EndpointSlice{}, SliceCounts{Slices: 1}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			assert.Equal(t, tc.want, countSlice(tc.s))
			trimmed, err := trimSlice(tc.s)
			require.NoError(t, err)
			assert.Equal(t, tc.want, countSlice(trimmed.(*discoveryv1.EndpointSlice)), "the cache's trimmed copy counts the same")
		})
	}
	trimmed, _ := trimSlice(slice("shop", "web-a", "web", 1, 0, 0))
	assert.Empty(t, trimmed.(*discoveryv1.EndpointSlice).Endpoints[0].Addresses, "addresses are not kept")
	other, _ := trimSlice("not a slice")
	assert.Equal(t, "not a slice", other)
}

func TestAMemberCountsTheEndpointSlicesOfEachService(t *testing.T) {
	cs := fake.NewClientset(slice("shop", "web-a", "web", 2, 3, 1), slice("shop", "web-b", "web", 1, 1, 0), slice("shop", "api-a", "api", 4, 0, 0))
	var pokes atomic.Int32
	mg := NewManager(context.Background(), Options{OnEndpointSlices: func() { pokes.Add(1) }})
	m := newMember(mg, MemberSource{Cluster: "east"}, model.Kubernetes{})
	m.state, m.cs, m.watch = StateReady, cs, cs
	mg.members["east"] = m
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	m.ctx = ctx
	_, ok := mg.EndpointCounts("east", "shop", "web")
	assert.False(t, ok, "nothing before EndpointSlices are watched")
	mg.EnableEndpointSlices()
	mg.EnableEndpointSlices() // once is enough
	require.Eventually(t, func() bool {
		c, ok := mg.EndpointCounts("east", "shop", "web")
		return ok && c == SliceCounts{Ready: 3, NotReady: 4, Slices: 2}
	}, 5*time.Second, 10*time.Millisecond)
	c, ok := mg.EndpointCounts("east", "shop", "api")
	assert.True(t, ok)
	assert.Equal(t, SliceCounts{Ready: 4, Slices: 1}, c)
	c, ok = mg.EndpointCounts("east", "shop", "none")
	assert.True(t, ok, "a Service without slices is known to have none")
	assert.Equal(t, SliceCounts{}, c)
	_, ok = mg.EndpointCounts("west", "shop", "web")
	assert.False(t, ok, "an unknown member has no counts")
	assert.Positive(t, pokes.Load())

	// A slice changes, moves to another Service, and is deleted.
	_, err := cs.DiscoveryV1().EndpointSlices("shop").Update(ctx, slice("shop", "web-a", "web", 5, 0, 0), metav1.UpdateOptions{})
	require.NoError(t, err)
	require.Eventually(t, func() bool { c, _ := mg.EndpointCounts("east", "shop", "web"); return c.Ready == 6 }, 5*time.Second, 10*time.Millisecond)
	_, err = cs.DiscoveryV1().EndpointSlices("shop").Update(ctx, slice("shop", "web-b", "api", 1, 1, 0), metav1.UpdateOptions{})
	require.NoError(t, err)
	require.Eventually(t, func() bool {
		w, _ := mg.EndpointCounts("east", "shop", "web")
		a, _ := mg.EndpointCounts("east", "shop", "api")
		return w == SliceCounts{Ready: 5, Slices: 1} && a == SliceCounts{Ready: 5, NotReady: 1, Slices: 2}
	}, 5*time.Second, 10*time.Millisecond)
	require.NoError(t, cs.DiscoveryV1().EndpointSlices("shop").Delete(ctx, "web-a", metav1.DeleteOptions{}))
	require.Eventually(t, func() bool { c, _ := mg.EndpointCounts("east", "shop", "web"); return c == SliceCounts{} }, 5*time.Second, 10*time.Millisecond)

	m.mu.Lock()
	m.state = StateNotReady
	m.mu.Unlock()
	_, ok = mg.EndpointCounts("east", "shop", "api")
	assert.False(t, ok, "a NotReady member's counts are not used")
}

func TestBackendsOf(t *testing.T) {
	pathBackend := func(name string) networkingv1.HTTPIngressPath {
		return networkingv1.HTTPIngressPath{Backend: networkingv1.IngressBackend{Service: &networkingv1.IngressServiceBackend{Name: name}}}
	}
	route := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "gateway.networking.k8s.io/v1", "kind": "HTTPRoute",
		"metadata": map[string]any{"namespace": "shop", "name": "r"},
		"spec": map[string]any{"rules": []any{
			map[string]any{"backendRefs": []any{
				map[string]any{"name": "web", "port": int64(80), "weight": int64(3)},
				map[string]any{"name": "api", "kind": "Service", "group": ""},
				map[string]any{"name": "bucket", "kind": "Bucket", "group": "storage.example.com"},
				map[string]any{"name": "far", "namespace": "other"},
			}},
			map[string]any{"backendRefs": []any{map[string]any{"name": "web", "namespace": "shop"}}},
		}},
	}}
	cases := []struct {
		name string
		obj  any
		want []string
	}{
		{"a Service counts its own endpoints", &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: "web"}}, []string{"web"}},
		{"an Ingress counts its backend Services", &networkingv1.Ingress{Spec: networkingv1.IngressSpec{
			DefaultBackend: &networkingv1.IngressBackend{Service: &networkingv1.IngressServiceBackend{Name: "web"}},
			Rules: []networkingv1.IngressRule{
				{IngressRuleValue: networkingv1.IngressRuleValue{HTTP: &networkingv1.HTTPIngressRuleValue{Paths: []networkingv1.HTTPIngressPath{pathBackend("api"), pathBackend("web")}}}},
				{}, // no http
			}}}, []string{"api", "web"}},
		{"a route counts its Service backendRefs in its own namespace", route, []string{"api", "web"}},
		{"anything else has none", "x", nil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			assert.Equal(t, tc.want, backendsOf(tc.obj))
		})
	}
}

func TestBuildRecordsTheServicesBehindACapacityAwareName(t *testing.T) {
	capacity := map[string]string{AnnoHostname: "app.gslb.example.com", AnnoCapacity: "true"}
	east := obj("east", "web", 1, capacity, "198.51.100.1")
	east.Backends = []string{"web"}
	west := obj("west", "front", 2, map[string]string{AnnoHostname: "app.gslb.example.com"}, "198.51.100.2")
	west.Ref.Kind = KindIngress
	west.Backends = []string{"api", "web"}
	r := Build([]Object{east, west}, base())
	require.Len(t, r.Services, 1)
	assert.Equal(t, &model.Capacity{Source: "kubernetes", FromObjects: true}, r.Services[0].Capacity, "the oldest object that sets it decides")
	assert.Equal(t, map[string][]Backend{
		"198.51.100.1": {{Cluster: "east", Namespace: "default", Name: "web"}},
		"198.51.100.2": {{Cluster: "west", Namespace: "default", Name: "api"}, {Cluster: "west", Namespace: "default", Name: "web"}},
	}, r.Backends["app.gslb.example.com."])
	assert.Empty(t, r.Problems)
}

func TestACapacityAnnotationWithoutServiceOrOnRoundRobinIsReported(t *testing.T) {
	on := map[string]string{AnnoHostname: "app.gslb.example.com", AnnoCapacity: "true"}
	noBackend := obj("east", "web", 1, on, "198.51.100.1")
	r := Build([]Object{noBackend}, base())
	require.Len(t, r.Services, 1)
	assert.NotNil(t, r.Services[0].Capacity)
	assert.Equal(t, []string{"meridian.io/capacity: no backend Service to count ready endpoints of; its endpoints keep their configured weights"}, r.Problems[noBackend.Ref])

	rr := obj("east", "web", 1, map[string]string{AnnoHostname: "app.gslb.example.com", AnnoCapacity: "true", AnnoStrategy: "roundrobin"}, "198.51.100.1")
	rr.Backends = []string{"web"}
	r = Build([]Object{rr}, base())
	require.Len(t, r.Services, 1, "the name is still served")
	assert.Nil(t, r.Services[0].Capacity)
	assert.Empty(t, r.Backends)
	assert.Equal(t, []string{"meridian.io/capacity is ignored: the strategy is roundrobin, which answers equal shares"}, r.Problems[rr.Ref])

	off := obj("west", "web", 0, map[string]string{AnnoHostname: "app.gslb.example.com", AnnoCapacity: "false"}, "198.51.100.2")
	r = Build([]Object{noBackend, off}, base())
	require.Len(t, r.Services, 1)
	assert.Nil(t, r.Services[0].Capacity, "the older object says false")
	assert.Contains(t, r.Problems[noBackend.Ref][0], `meridian.io/capacity "true" differs from "false"`)
}
