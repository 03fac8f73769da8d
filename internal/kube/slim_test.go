package kube

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/tools/reference"
)

// managed is a managedFields entry as the API server writes them.
var managed = []metav1.ManagedFieldsEntry{{Manager: "kubectl", Operation: metav1.ManagedFieldsOperationApply, APIVersion: "v1",
	FieldsType: "FieldsV1", FieldsV1: metav1.NewFieldsV1(`{"f:metadata":{"f:annotations":{}},"f:spec":{"f:ports":{}}}`)}}

// fullMeta is the metadata of a busy object: meridian.io/ annotations and
// everything Meridian never reads.
func fullMeta(ns, name string, anno map[string]string) metav1.ObjectMeta {
	a := map[string]string{"kubectl.kubernetes.io/last-applied-configuration": `{"a":"large blob"}`, "team": "a"}
	for k, v := range anno {
		a[k] = v
	}
	return metav1.ObjectMeta{Namespace: ns, Name: name, UID: types.UID("uid-" + name), ResourceVersion: "42", Generation: 3,
		CreationTimestamp: metav1.NewTime(t0), Annotations: a, Labels: map[string]string{"app": name},
		Finalizers: []string{"service.kubernetes.io/load-balancer-cleanup"}, ManagedFields: managed,
		OwnerReferences: []metav1.OwnerReference{{Kind: "Deployment", Name: name}}}
}

func fullService() *corev1.Service {
	return &corev1.Service{
		ObjectMeta: fullMeta("shop", "web", map[string]string{AnnoHostname: "app.gslb.example.com", AnnoWeight: "30",
			AnnoCapacity: "true", AnnoStatus: `{"served":true}`}),
		Spec: corev1.ServiceSpec{Type: corev1.ServiceTypeLoadBalancer, Selector: map[string]string{"app": "web"},
			Ports: []corev1.ServicePort{{Name: "https", Port: 443}}, ClusterIP: "10.0.0.1", ClusterIPs: []string{"10.0.0.1"}},
		Status: corev1.ServiceStatus{LoadBalancer: corev1.LoadBalancerStatus{Ingress: []corev1.LoadBalancerIngress{
			{IP: "198.51.100.1", Ports: []corev1.PortStatus{{Port: 443}}}, {Hostname: "lb.example.net"}}}},
	}
}

func fullIngress() *networkingv1.Ingress {
	path := func(svc string) networkingv1.HTTPIngressPath {
		return networkingv1.HTTPIngressPath{Path: "/" + svc, Backend: networkingv1.IngressBackend{Service: &networkingv1.IngressServiceBackend{
			Name: svc, Port: networkingv1.ServiceBackendPort{Number: 80}}}}
	}
	return &networkingv1.Ingress{
		ObjectMeta: fullMeta("shop", "front", map[string]string{AnnoHostname: "front.gslb.example.com", AnnoStrategy: "failover"}),
		Spec: networkingv1.IngressSpec{
			DefaultBackend: &networkingv1.IngressBackend{Service: &networkingv1.IngressServiceBackend{Name: "web"}},
			TLS:            []networkingv1.IngressTLS{{Hosts: []string{"front.example.com"}, SecretName: "tls"}},
			Rules: []networkingv1.IngressRule{
				{Host: "front.example.com", IngressRuleValue: networkingv1.IngressRuleValue{HTTP: &networkingv1.HTTPIngressRuleValue{
					Paths: []networkingv1.HTTPIngressPath{path("api"), path("web"), {Backend: networkingv1.IngressBackend{Resource: &corev1.TypedLocalObjectReference{Kind: "Bucket", Name: "b"}}}}}}},
				{Host: "no-http.example.com"},
			}},
		Status: networkingv1.IngressStatus{LoadBalancer: networkingv1.IngressLoadBalancerStatus{Ingress: []networkingv1.IngressLoadBalancerIngress{{IP: "198.51.100.2"}}}},
	}
}

func fullRoute() *unstructured.Unstructured {
	u := uRoute("web", map[string]string{AnnoHostname: "app.gslb.example.com", "team": "a"}, "True")
	md := u.Object["metadata"].(map[string]any)
	md["creationTimestamp"] = t0.Format(time.RFC3339)
	md["resourceVersion"] = "7"
	md["labels"] = map[string]any{"app": "web"}
	md["managedFields"] = []any{map[string]any{"manager": "kubectl", "operation": "Apply"}}
	spec := u.Object["spec"].(map[string]any)
	spec["rules"] = []any{
		map[string]any{"matches": []any{map[string]any{"path": map[string]any{"type": "PathPrefix", "value": "/"}}},
			"filters":     []any{map[string]any{"type": "RequestHeaderModifier"}},
			"backendRefs": []any{map[string]any{"name": "web", "port": int64(80), "weight": int64(3)}, map[string]any{"name": "far", "namespace": "other"}}},
		map[string]any{"matches": []any{}},
	}
	return u
}

// readObject is what a member keeps of o.
func readObject(t *testing.T, o any) Object {
	t.Helper()
	m := gwMember(t)
	m.routes.upsert(uGateway(nil, "198.51.100.9"))
	if u, ok := o.(*unstructured.Unstructured); ok {
		m.routes.upsert(u)
	} else {
		m.services.upsert(o)
	}
	return onlyObject(t, m)
}

func TestASlimObjectIsReadLikeTheFullObject(t *testing.T) {
	cases := []struct {
		name  string
		full  runtime.Object
		slim  func(any) (any, error)
		extra []string // annotations the full object has and the slim one must not
	}{
		{"a Service keeps its type, addresses and meridian.io/ annotations", fullService(), slimServiceObject, []string{"team"}},
		{"an Ingress keeps its addresses and backend Services", fullIngress(), slimServiceObject, []string{"team"}},
		{"a route keeps its hostnames, parents, status and backendRefs", fullRoute(), slimGatewayObject, []string{"team"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			s, err := tc.slim(tc.full.DeepCopyObject())
			require.NoError(t, err)
			slim := s.(runtime.Object)
			want, got := readObject(t, tc.full), readObject(t, slim)
			assert.Equal(t, want, got, "the slim object is read the same")
			assert.Equal(t, Build([]Object{want}, base()), Build([]Object{got}, base()), "and gives the same services")

			meta, err := apimeta.Accessor(slim)
			require.NoError(t, err)
			assert.Empty(t, meta.GetManagedFields(), "managedFields are dropped")
			assert.Empty(t, meta.GetLabels(), "labels are dropped")
			assert.Empty(t, meta.GetFinalizers())
			assert.Empty(t, meta.GetOwnerReferences())
			for _, a := range tc.extra {
				assert.NotContains(t, meta.GetAnnotations(), a, "an annotation Meridian does not read is dropped")
			}
			assert.NotContains(t, meta.GetAnnotations(), "kubectl.kubernetes.io/last-applied-configuration")

			again, err := tc.slim(slim.DeepCopyObject())
			require.NoError(t, err)
			assert.Equal(t, slim, again, "the transform is idempotent")

			wantRef, err := reference.GetReference(scheme.Scheme, tc.full)
			require.NoError(t, err)
			gotRef, err := reference.GetReference(scheme.Scheme, slim)
			require.NoError(t, err)
			assert.Equal(t, wantRef, gotRef, "Events name the same object")
		})
	}
}

func TestASlimObjectDropsWhatMeridianNeverReads(t *testing.T) {
	svc, _ := slimServiceObject(fullService())
	s := svc.(*corev1.Service)
	assert.Equal(t, corev1.ServiceSpec{Type: corev1.ServiceTypeLoadBalancer}, s.Spec, "no ports, selector or cluster IPs")
	assert.Equal(t, []corev1.LoadBalancerIngress{{IP: "198.51.100.1"}, {Hostname: "lb.example.net"}}, s.Status.LoadBalancer.Ingress)
	assert.Equal(t, map[string]string{AnnoHostname: "app.gslb.example.com", AnnoWeight: "30", AnnoCapacity: "true", AnnoStatus: `{"served":true}`},
		s.Annotations, "meridian.io/ annotations only, meridian.io/status included")

	ing, _ := slimServiceObject(fullIngress())
	assert.Empty(t, ing.(*networkingv1.Ingress).Spec.TLS)
	assert.Equal(t, []string{"api", "web"}, backendsOf(ing))

	route, _ := slimGatewayObject(fullRoute())
	rules, _, _ := unstructured.NestedSlice(route.(*unstructured.Unstructured).Object, "spec", "rules")
	assert.Equal(t, []any{
		map[string]any{"backendRefs": []any{map[string]any{"name": "web"}, map[string]any{"name": "far", "namespace": "other"}}},
		map[string]any{},
	}, rules, "no matches, filters, ports or weights")

	gw, _ := slimGatewayObject(uGateway(map[string]any{"a": "b"}, "198.51.100.1"))
	assert.Equal(t, map[string]any{
		"apiVersion": "gateway.networking.k8s.io/v1", "kind": KindGateway,
		"metadata": map[string]any{"namespace": "shop", "name": "gw"},
		"status":   map[string]any{"addresses": []any{map[string]any{"type": "IPAddress", "value": "198.51.100.1"}}},
	}, gw.(*unstructured.Unstructured).Object)

	other, _ := slimServiceObject("not an object")
	assert.Equal(t, "not an object", other, "other objects pass through")
}
