package propagation

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

func obj(t *testing.T, text string) *unstructured.Unstructured {
	t.Helper()
	m := map[string]any{}
	require.NoError(t, json.Unmarshal([]byte(text), &m))
	if _, ok := m["kind"]; !ok { // the API's decoder needs a kind; status-only fixtures have none
		m["apiVersion"], m["kind"] = "example.meridian.io/v1", "Fixture"
	}
	b, err := json.Marshal(m)
	require.NoError(t, err)
	u := &unstructured.Unstructured{}
	require.NoError(t, u.UnmarshalJSON(b), "decoded as the API's clients decode (whole numbers as int64)")
	return u
}

var all = metav1.Verbs{"create", "delete", "deletecollection", "get", "list", "patch", "update", "watch"}

func TestKindsAreEveryNamespacedResourceThatCanBeAppliedInDependencyOrder(t *testing.T) {
	lists := []*metav1.APIResourceList{
		{GroupVersion: "v1", APIResources: []metav1.APIResource{
			{Name: "pods", Kind: "Pod", Namespaced: true, Verbs: all},
			{Name: "pods/status", Kind: "Pod", Namespaced: true, Verbs: metav1.Verbs{"get", "patch"}},
			{Name: "configmaps", Kind: "ConfigMap", Namespaced: true, Verbs: all},
			{Name: "serviceaccounts", Kind: "ServiceAccount", Namespaced: true, Verbs: all},
			{Name: "namespaces", Kind: "Namespace", Namespaced: false, Verbs: all},
			{Name: "nodes", Kind: "Node", Namespaced: false, Verbs: all},
			{Name: "events", Kind: "Event", Namespaced: true, Verbs: all},
			{Name: "bindings", Kind: "Binding", Namespaced: true, Verbs: metav1.Verbs{"create"}},
		}},
		{GroupVersion: "apps/v1", APIResources: []metav1.APIResource{
			{Name: "statefulsets", Kind: "StatefulSet", Namespaced: true, Verbs: all},
			{Name: "controllerrevisions", Kind: "ControllerRevision", Namespaced: true, Verbs: all},
		}},
		{GroupVersion: "example.meridian.io/v1", APIResources: []metav1.APIResource{
			{Name: "widgets", Kind: "Widget", Namespaced: true, Verbs: all},
			{Name: "readonlies", Kind: "ReadOnly", Namespaced: true, Verbs: metav1.Verbs{"get", "list"}},
		}},
		{GroupVersion: "policy/v1", APIResources: []metav1.APIResource{
			{Name: "poddisruptionbudgets", Kind: "PodDisruptionBudget", Namespaced: true, Verbs: all},
		}},
		{GroupVersion: "authorization.k8s.io/v1", APIResources: []metav1.APIResource{
			{Name: "localsubjectaccessreviews", Kind: "LocalSubjectAccessReview", Namespaced: true, Verbs: metav1.Verbs{"create"}},
		}},
	}
	var got []string
	for _, k := range Kinds(lists) {
		got = append(got, k.Name())
	}
	assert.Equal(t, []string{"Namespace", "ServiceAccount", "ConfigMap", "StatefulSet.apps", "PodDisruptionBudget.policy", "Widget.example.meridian.io"}, got,
		"no pods, events, subresources, cluster-scoped kinds but Namespace, or kinds that cannot be written")
}

func TestTemplateRefsNameTheGroupOutsideTheCoreGroup(t *testing.T) {
	tests := []struct {
		name, in, want string
	}{
		{"a core kind keeps Kind/namespace/name", `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"c","namespace":"shop"}}`, "ConfigMap/shop/c"},
		{"a grouped kind is Kind.group", `{"apiVersion":"apps/v1","kind":"StatefulSet","metadata":{"name":"db","namespace":"shop"}}`, "StatefulSet.apps/shop/db"},
		{"a Namespace has no namespace part", `{"apiVersion":"v1","kind":"Namespace","metadata":{"name":"shop"}}`, "Namespace/shop"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) { assert.Equal(t, tt.want, TemplateRef(obj(t, tt.in))) })
	}
}

func TestOwnershipNeedsOurLabelAndTheTemplatesReference(t *testing.T) {
	tmpl := obj(t, `{"apiVersion":"apps/v1","kind":"Deployment","metadata":{"name":"web","namespace":"shop"}}`)
	copyWith := func(label, ref string) *unstructured.Unstructured {
		u := tmpl.DeepCopy()
		if label != "" {
			u.SetLabels(map[string]string{LabelPropagated: label})
		}
		if ref != "" {
			u.SetAnnotations(map[string]string{AnnoTemplate: ref})
		}
		return u
	}
	tests := []struct {
		name string
		live *unstructured.Unstructured
		want bool
	}{
		{"a copy with our label and reference is ours", copyWith("true", "Deployment.apps/shop/web"), true},
		{"a copy made before refs carried the group is still ours", copyWith("true", "Deployment/shop/web"), true},
		{"an object without our label is not ours", copyWith("", "Deployment.apps/shop/web"), false},
		{"a copy of another template is not ours", copyWith("true", "Deployment.apps/shop/other"), false},
		{"a labelled object without a reference is not ours", copyWith("true", ""), false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) { assert.Equal(t, tt.want, owned(tt.live, tmpl)) })
	}
}

func TestReplicaPaths(t *testing.T) {
	tests := []struct {
		name    string
		in      string
		mode    string
		anno    string
		want    []string
		wantErr string
	}{
		{"a StatefulSet divides spec.replicas", `{"apiVersion":"apps/v1","kind":"StatefulSet","spec":{"replicas":10}}`, ModeDivided, "", []string{"spec", "replicas"}, ""},
		{"a Deployment without replicas still has the field", `{"apiVersion":"apps/v1","kind":"Deployment","spec":{}}`, ModeDivided, "", []string{"spec", "replicas"}, ""},
		{"a custom resource with spec.replicas has it", `{"apiVersion":"example.meridian.io/v1","kind":"Widget","spec":{"replicas":4}}`, ModeDivided, "", []string{"spec", "replicas"}, ""},
		{"the annotation names another field", `{"apiVersion":"example.meridian.io/v1","kind":"Widget","spec":{"workers":{"count":6}}}`, ModeDivided, "spec.workers.count", []string{"spec", "workers", "count"}, ""},
		{"an annotation naming a missing field is an error", `{"apiVersion":"example.meridian.io/v1","kind":"Widget","spec":{}}`, ModeDivided, "/spec/workers/count", nil, AnnoReplicasPath},
		{"a duplicated kind without replicas needs none", `{"apiVersion":"policy/v1","kind":"PodDisruptionBudget","spec":{"minAvailable":1}}`, ModeDuplicated, "", nil, ""},
		{"dividing a kind without replicas is an error", `{"apiVersion":"autoscaling/v2","kind":"HorizontalPodAutoscaler","spec":{"maxReplicas":5}}`, ModeDivided, "", nil, AnnoReplicas},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			u := obj(t, tt.in)
			a := map[string]string{AnnoClusters: "east", AnnoReplicas: tt.mode}
			if tt.anno != "" {
				a[AnnoReplicasPath] = tt.anno
				u.SetAnnotations(a)
			}
			spec, errs := ParseSpec(a)
			require.Empty(t, errs)
			got, errs := replicasPath(u, spec)
			if tt.wantErr != "" {
				require.Len(t, errs, 1)
				assert.Equal(t, tt.wantErr, errs[0].Annotation)
				assert.Contains(t, errs[0].Error(), "allowed")
				return
			}
			assert.Empty(t, errs)
			assert.Equal(t, tt.want, got)
		})
	}
}

func TestFieldPathsMustLieUnderSpec(t *testing.T) {
	for in, ok := range map[string]bool{"spec.replicas": true, "/spec/workers/replicas": true, "status.replicas": false,
		"spec": false, "spec..x": false, "metadata.name": false, "": false} {
		_, err := ParseFieldPath(in)
		assert.Equal(t, ok, err == nil, in)
	}
}

func TestACustomReplicaPathIsDividedAndLeftOutOfTheHash(t *testing.T) {
	u := obj(t, `{"apiVersion":"example.meridian.io/v1","kind":"Widget","metadata":{"name":"w","namespace":"shop"},"spec":{"workers":{"count":6},"size":"l"}}`)
	spec := Spec{ReplicasPath: []string{"spec", "workers", "count"}}
	two, four := int64(2), int64(4)
	a, h1, err := Render(u, "east", &two, spec)
	require.NoError(t, err)
	n, _, _ := unstructured.NestedInt64(a.Object, "spec", "workers", "count")
	assert.Equal(t, int64(2), n)
	_, h2, err := Render(u, "west", &four, spec)
	require.NoError(t, err)
	assert.Equal(t, h1, h2)
	assert.Equal(t, "Widget.example.meridian.io/shop/w", a.GetAnnotations()[AnnoTemplate])
}

func TestKindsLoseWhatEachClusterAllocates(t *testing.T) {
	tests := []struct {
		name, in string
		gone     [][]string
		kept     [][]string
	}{
		{"a Job loses the hub's generated selector and uid labels",
			`{"apiVersion":"batch/v1","kind":"Job","metadata":{"name":"j","namespace":"n"},"spec":{"selector":{"matchLabels":{"batch.kubernetes.io/controller-uid":"u"}},
			  "template":{"metadata":{"labels":{"batch.kubernetes.io/controller-uid":"u","controller-uid":"u","job-name":"j"}},"spec":{"containers":[{"name":"c","image":"i"}]}}}}`,
			[][]string{{"spec", "selector"}, {"spec", "template", "metadata", "labels", "controller-uid"}, {"spec", "template", "metadata", "labels", "batch.kubernetes.io/controller-uid"}},
			[][]string{{"spec", "template", "metadata", "labels", "job-name"}}},
		{"a Job with a manual selector keeps it",
			`{"apiVersion":"batch/v1","kind":"Job","metadata":{"name":"j","namespace":"n"},"spec":{"manualSelector":true,"selector":{"matchLabels":{"a":"b"}}}}`,
			nil, [][]string{{"spec", "selector"}}},
		{"a claim loses the hub's bound volume",
			`{"apiVersion":"v1","kind":"PersistentVolumeClaim","metadata":{"name":"p","namespace":"n","annotations":{"pv.kubernetes.io/bind-completed":"yes"}},"spec":{"volumeName":"pv-1","resources":{"requests":{"storage":"1Gi"}}}}`,
			[][]string{{"spec", "volumeName"}, {"metadata", "annotations", "pv.kubernetes.io/bind-completed"}}, [][]string{{"spec", "resources"}}},
		{"a ServiceAccount loses the hub's token Secrets",
			`{"apiVersion":"v1","kind":"ServiceAccount","metadata":{"name":"sa","namespace":"n"},"secrets":[{"name":"sa-token-x"}],"automountServiceAccountToken":false}`,
			[][]string{{"secrets"}}, [][]string{{"automountServiceAccountToken"}}},
		{"a service account token Secret loses the hub's token and account uid (each member's token controller fills in its own)",
			`{"apiVersion":"v1","kind":"Secret","type":"kubernetes.io/service-account-token","metadata":{"name":"t","namespace":"n",
			  "annotations":{"kubernetes.io/service-account.name":"build","kubernetes.io/service-account.uid":"hub-uid"}},
			  "data":{"token":"aHViLWp3dA==","ca.crt":"Y2E=","namespace":"bg==","extra":"eA=="}}`,
			[][]string{{"data", "token"}, {"data", "ca.crt"}, {"data", "namespace"}, {"metadata", "annotations", "kubernetes.io/service-account.uid"}},
			[][]string{{"type"}, {"data", "extra"}, {"metadata", "annotations", "kubernetes.io/service-account.name"}}},
		{"another Secret keeps its data",
			`{"apiVersion":"v1","kind":"Secret","type":"Opaque","metadata":{"name":"s","namespace":"n"},"data":{"token":"eA=="}}`,
			nil, [][]string{{"data", "token"}}},
		{"a Namespace loses its finalizers",
			`{"apiVersion":"v1","kind":"Namespace","metadata":{"name":"shop","labels":{"pod-security.kubernetes.io/enforce":"restricted"}},"spec":{"finalizers":["kubernetes"]}}`,
			[][]string{{"spec"}}, [][]string{{"metadata", "labels", "pod-security.kubernetes.io/enforce"}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out, _, err := Render(obj(t, tt.in), "east", nil, Spec{})
			require.NoError(t, err)
			for _, p := range tt.gone {
				_, has, _ := unstructured.NestedFieldNoCopy(out.Object, p...)
				assert.False(t, has, "%v", p)
			}
			for _, p := range tt.kept {
				_, has, _ := unstructured.NestedFieldNoCopy(out.Object, p...)
				assert.True(t, has, "%v", p)
			}
		})
	}
}

func TestACronJobsImagesFollowTheRegistryOverride(t *testing.T) {
	u := obj(t, `{"apiVersion":"batch/v1","kind":"CronJob","metadata":{"name":"c","namespace":"n"},
	  "spec":{"jobTemplate":{"spec":{"template":{"spec":{"containers":[{"name":"c","image":"tool:1"}]}}}}}}`)
	out, _, err := Render(u, "west", nil, Spec{Registry: map[string]string{"west": "reg.west"}})
	require.NoError(t, err)
	cs, _, _ := unstructured.NestedSlice(out.Object, "spec", "jobTemplate", "spec", "template", "spec", "containers")
	assert.Equal(t, "reg.west/tool:1", cs[0].(map[string]any)["image"])
}

func TestACopysHealthComesFromReplicasElseConditions(t *testing.T) {
	rp := []string{"spec", "replicas"}
	tests := []struct {
		name    string
		live    string
		spec    Spec
		desired int64
		healthy bool
	}{
		{"replicas ready at the observed generation are healthy",
			`{"metadata":{"generation":2},"status":{"observedGeneration":2,"readyReplicas":7}}`, Spec{ReplicasPath: rp}, 7, true},
		{"fewer ready replicas are not",
			`{"metadata":{"generation":2},"status":{"observedGeneration":2,"readyReplicas":6}}`, Spec{ReplicasPath: rp}, 7, false},
		{"an unobserved generation is not",
			`{"metadata":{"generation":3},"status":{"observedGeneration":2,"readyReplicas":7}}`, Spec{ReplicasPath: rp}, 7, false},
		{"a Ready=False condition is not",
			`{"status":{"conditions":[{"type":"Synced","status":"True"},{"type":"Ready","status":"False"}]}}`, Spec{}, 0, false},
		{"an Available=True condition is",
			`{"status":{"conditions":[{"type":"Available","status":"True"}]}}`, Spec{}, 0, true},
		{"a kind without status is healthy once applied", `{"data":{"a":"b"}}`, Spec{}, 0, true},
		{"a custom resource with a replica path but no readyReplicas goes by its conditions",
			`{"status":{"conditions":[{"type":"Ready","status":"True"}]}}`, Spec{ReplicasPath: []string{"spec", "workers"}}, 4, true},
		{"a custom resource reporting readyReplicas goes by them",
			`{"metadata":{"generation":1},"status":{"readyReplicas":3,"conditions":[{"type":"Ready","status":"True"}]}}`, Spec{ReplicasPath: []string{"spec", "workers"}}, 4, false},
		{"a custom resource reporting readyReplicas but no observedGeneration goes by the replicas",
			`{"metadata":{"generation":3},"status":{"readyReplicas":4}}`, Spec{ReplicasPath: []string{"spec", "workers"}}, 4, true},
		{"a Ready=False condition past the eighth still counts",
			`{"status":{"conditions":[{"type":"A","status":"True"},{"type":"B","status":"True"},{"type":"C","status":"True"},{"type":"D","status":"True"},
			  {"type":"E","status":"True"},{"type":"F","status":"True"},{"type":"G","status":"True"},{"type":"H","status":"True"},{"type":"Ready","status":"False"}]}}`, Spec{}, 0, false},
		{"a Deployment with no ready replicas yet (field left out) is not healthy",
			`{"apiVersion":"apps/v1","kind":"Deployment","metadata":{"generation":1},"status":{"observedGeneration":1}}`, Spec{ReplicasPath: rp}, 2, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cs := ClusterStatus{Desired: tt.desired}
			fillFrom(obj(t, tt.live), tt.spec, &cs)
			assert.Equal(t, tt.healthy, cs.Healthy)
		})
	}
}
