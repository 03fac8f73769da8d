package propagation

import (
	"testing"

	"github.com/stretchr/testify/assert"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// counts flattens a replica plan for comparison.
func counts(plan map[string]*int64) map[string]int64 {
	out := map[string]int64{}
	for cl, n := range plan {
		out[cl] = *n
	}
	return out
}

func TestDivideReplicas(t *testing.T) {
	tests := []struct {
		name    string
		total   int64
		spec    Spec
		keep    []string
		weights map[string]int
		want    map[string]int64
		wantErr []string
	}{
		{"duplicated replicas give every cluster the whole count", 3, Spec{Mode: ModeDuplicated},
			[]string{"east", "west"}, map[string]int{"east": 9}, map[string]int64{"east": 3, "west": 3}, nil},
		{"divided replicas without weights are shared equally", 4, Spec{Mode: ModeDivided},
			[]string{"east", "west"}, nil, map[string]int64{"east": 2, "west": 2}, nil},
		{"divided replicas follow the weights", 4, Spec{Mode: ModeDivided},
			[]string{"east", "west"}, map[string]int{"east": 3, "west": 1}, map[string]int64{"east": 3, "west": 1}, nil},
		{"a cluster missing from the weights gets none", 4, Spec{Mode: ModeDivided},
			[]string{"east", "west"}, map[string]int{"east": 1}, map[string]int64{"east": 4, "west": 0}, nil},
		{"a minimum is kept before the weights share the rest", 4, Spec{Mode: ModeDivided, Min: map[string]int{"west": 2}},
			[]string{"east", "west"}, map[string]int{"east": 1}, map[string]int64{"east": 2, "west": 2}, nil},
		{"replicas beyond every maximum are reported as not placed", 5, Spec{Mode: ModeDivided, Max: map[string]int{"east": 1, "west": 1}},
			[]string{"east", "west"}, nil, map[string]int64{"east": 1, "west": 1},
			[]string{"3 of 5 replicas could not be placed (every cluster at its maximum or weight 0)"}},
		{"no cluster left means no counts", 3, Spec{Mode: ModeDivided}, nil, nil, map[string]int64{},
			[]string{"3 of 3 replicas could not be placed (every cluster at its maximum or weight 0)"}},
		{"a division that cannot be made is an error and places nothing", -1, Spec{Mode: ModeDivided},
			[]string{"east"}, nil, map[string]int64{}, []string{"dividing replicas: placement: total replicas -1 is negative"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, errs := divideReplicas(tt.total, tt.spec, tt.keep, tt.weights)
			assert.Equal(t, tt.want, counts(got))
			assert.Equal(t, tt.wantErr, errs)
		})
	}
}

func TestTemplateReplicas(t *testing.T) {
	path := []string{"spec", "replicas"}
	tests := []struct {
		name string
		tmpl string
		want int64
	}{
		{"the template's count is the total", `{"spec":{"replicas":7}}`, 7},
		{"a template without a count has the API server's default of one", `{"spec":{}}`, 1},
		{"a count that is not a whole number counts as unset", `{"spec":{"replicas":"seven"}}`, 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			assert.Equal(t, tt.want, templateReplicas(obj(t, tt.tmpl), Spec{ReplicasPath: path}))
		})
	}
}

func TestExplicitClusters(t *testing.T) {
	registered := map[string]map[string]string{"hub": {}, "east": {}, "west": {}}
	tests := []struct {
		name    string
		names   []string
		want    []string
		wantErr []string
	}{
		{"registered members are kept in the order named", []string{"west", "east"}, []string{"west", "east"}, nil},
		{"the hub is never a target", []string{"hub", "east"}, []string{"east"},
			[]string{`meridian.io/clusters: "hub" is the hub, which holds the templates and is never a target (skipped)`}},
		{"an unknown cluster is skipped and reported", []string{"east", "north"}, []string{"east"},
			[]string{`meridian.io/clusters: cluster "north" is not a registered member (skipped)`}},
		{"no usable name leaves no cluster at all", []string{"north"}, nil,
			[]string{`meridian.io/clusters: cluster "north" is not a registered member (skipped)`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, errs := explicitClusters(tt.names, "hub", registered)
			assert.Equal(t, tt.want, got)
			assert.Equal(t, tt.wantErr, errs)
		})
	}
}

func TestExcludedClusters(t *testing.T) {
	tests := []struct {
		name         string
		chosen, keep []string
		want         []string
	}{
		{"nothing is excluded when every chosen cluster survives", []string{"east", "west"}, []string{"west", "east"}, nil},
		{"a failed cluster is excluded in the chosen order", []string{"east", "west", "north"}, []string{"west"}, []string{"east", "north"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			assert.Equal(t, tt.want, excludedClusters(tt.chosen, tt.keep))
		})
	}
}

// copyOf is a member's copy of template "ConfigMap/shop/web" with a spec hash.
func copyOf(hash string) *unstructured.Unstructured {
	u := &unstructured.Unstructured{}
	u.SetAPIVersion("v1")
	u.SetKind("ConfigMap")
	u.SetNamespace("shop")
	u.SetName("web")
	u.SetLabels(map[string]string{LabelPropagated: "true"})
	u.SetAnnotations(map[string]string{AnnoTemplate: "ConfigMap/shop/web", AnnoSpecHash: hash})
	return u
}

func TestPlanCopy(t *testing.T) {
	oneByOne := Spec{Rollout: RolloutOneByOne}
	tests := []struct {
		name      string
		spec      Spec
		prevReady bool
		live      *unstructured.Unstructured
		want      copyStep
	}{
		{"a rollout to all clusters applies everywhere at once", Spec{Rollout: RolloutAll}, false, copyOf("old"), stepApply},
		{"a one-by-one rollout applies once the previous cluster is ready", oneByOne, true, copyOf("old"), stepApply},
		{"a one-by-one rollout sends a missing copy only after the previous cluster is ready", oneByOne, false, nil, stepWait},
		{"a one-by-one rollout sets only the count of a copy with older content", oneByOne, false, copyOf("old"), stepScaleOnly},
		{"a copy that already has the content is applied even while the rollout waits", oneByOne, false, copyOf("new"), stepApply},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			assert.Equal(t, tt.want, planCopy(tt.spec, tt.prevReady, tt.live, "new"))
		})
	}
}

func TestMemberReplicas(t *testing.T) {
	spec := Spec{ReplicasPath: []string{"spec", "replicas"}}
	three, five := int64(3), int64(5)
	live := func(n int64) *unstructured.Unstructured {
		u := copyOf("h")
		_ = unstructured.SetNestedField(u.Object, n, "spec", "replicas")
		return u
	}
	tests := []struct {
		name     string
		live     *unstructured.Unstructured
		planned  *int64
		scaledBy string
		want     int64
		wantOK   bool
	}{
		{"an autoscaled copy keeps the count its member's HPA set", live(5), &three, "HorizontalPodAutoscaler.autoscaling/shop/web", 5, true},
		{"a copy nobody autoscales gets the planned count", live(5), &three, "", 0, false},
		{"an autoscaled copy already at the planned count changes nothing", live(5), &five, "HorizontalPodAutoscaler.autoscaling/shop/web", 0, false},
		{"a missing copy starts from the planned count", nil, &three, "HorizontalPodAutoscaler.autoscaling/shop/web", 0, false},
		{"a kind without a count has nothing to keep", live(5), nil, "HorizontalPodAutoscaler.autoscaling/shop/web", 0, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, ok := memberReplicas(tt.live, spec, tt.planned, tt.scaledBy)
			assert.Equal(t, tt.wantOK, ok)
			assert.Equal(t, tt.want, got)
		})
	}
}

func TestBlocksRollout(t *testing.T) {
	oneByOne := Spec{Rollout: RolloutOneByOne}
	tests := []struct {
		name string
		spec Spec
		cs   ClusterStatus
		want bool
	}{
		{"a healthy copy lets the rollout go on", oneByOne, ClusterStatus{Healthy: true}, false},
		{"a copy not yet healthy holds the rollout back", oneByOne, ClusterStatus{}, true},
		{"an error holds the rollout back", oneByOne, ClusterStatus{Healthy: true, Error: "apply failed"}, true},
		{"a waiting cluster holds the rollout back", oneByOne, ClusterStatus{Healthy: true, Waiting: "member not ready"}, true},
		{"a rollout to all clusters is never held back", Spec{Rollout: RolloutAll}, ClusterStatus{Error: "apply failed"}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			assert.Equal(t, tt.want, blocksRollout(tt.spec, tt.cs))
		})
	}
}

func TestPlanRemoval(t *testing.T) {
	tmpl := func(kind string) *unstructured.Unstructured {
		u := &unstructured.Unstructured{}
		u.SetAPIVersion("v1")
		u.SetKind(kind)
		u.SetName("web")
		if kind != "Namespace" {
			u.SetNamespace("shop")
		}
		return u
	}
	ns := copyOf("h")
	ns.SetKind("Namespace")
	ns.SetNamespace("")
	ns.SetAnnotations(map[string]string{AnnoTemplate: "Namespace/web"})
	foreignCopy := copyOf("h")
	foreignCopy.SetLabels(nil)
	tests := []struct {
		name string
		live *unstructured.Unstructured
		tmpl *unstructured.Unstructured
		want removal
	}{
		{"the template's copy is deleted", copyOf("h"), tmpl("ConfigMap"), removeDelete},
		{"an object without our label is never deleted", foreignCopy, tmpl("ConfigMap"), removeNothing},
		{"another template's copy is never deleted", copyOf("h"), tmpl("Secret"), removeNothing},
		{"a namespace copy is released, not deleted", ns, tmpl("Namespace"), removeRelease},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			assert.Equal(t, tt.want, planRemoval(tt.live, tt.tmpl))
		})
	}
}

func TestLeavesMember(t *testing.T) {
	tests := []struct {
		name    string
		cluster string
		keep    []string
		want    bool
	}{
		{"the hub never loses a template", "hub", nil, false},
		{"a member still chosen keeps its copy", "east", []string{"east"}, false},
		{"a member no longer chosen loses its copy", "west", []string{"east"}, true},
		{"every member loses its copy when the template goes", "east", nil, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			assert.Equal(t, tt.want, leavesMember(tt.cluster, "hub", tt.keep))
		})
	}
}

func TestIsTemplate(t *testing.T) {
	namespaced := Kind{GVK: schema.GroupVersionKind{Version: "v1", Kind: "ConfigMap"}, Namespaced: true}
	namespace := Kind{GVK: schema.GroupVersionKind{Version: "v1", Kind: "Namespace"}}
	item := func(name string, annos map[string]string, finalizers ...string) metav1.PartialObjectMetadata {
		return metav1.PartialObjectMetadata{ObjectMeta: metav1.ObjectMeta{Name: name, Annotations: annos, Finalizers: finalizers}}
	}
	marked := map[string]string{AnnoPropagate: "true"}
	tests := []struct {
		name       string
		it         metav1.PartialObjectMetadata
		kind       Kind
		configured []string
		want       bool
	}{
		{"an object marked for propagation is a template", item("web", marked), namespaced, nil, true},
		{"an unmarked object is not a template", item("web", nil), namespaced, nil, false},
		{"an unmarked object holding our finalizer is still reconciled", item("web", nil, Finalizer), namespaced, nil, true},
		{"a namespace template outside the configured namespaces is skipped", item("other", marked), namespace, []string{"shop"}, false},
		{"a namespace template inside the configured namespaces is kept", item("shop", marked), namespace, []string{"shop"}, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			assert.Equal(t, tt.want, isTemplate(tt.it, tt.kind, tt.configured))
		})
	}
}

func TestScanNamespaces(t *testing.T) {
	namespaced := Kind{Namespaced: true}
	tests := []struct {
		name       string
		kind       Kind
		configured []string
		want       []string
	}{
		{"a namespaced kind is listed in the configured namespaces", namespaced, []string{"a", "b"}, []string{"a", "b"}},
		{"a namespaced kind is listed everywhere when none are configured", namespaced, nil, []string{metav1.NamespaceAll}},
		{"a cluster-scoped kind is always listed once", Kind{}, []string{"a"}, []string{metav1.NamespaceAll}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			assert.Equal(t, tt.want, scanNamespaces(tt.kind, tt.configured))
		})
	}
}

func TestStaleStatuses(t *testing.T) {
	status := map[string]Status{"ConfigMap/shop/a": {}, "ConfigMap/shop/b": {}, "Secret/shop/c": {}}
	tests := []struct {
		name   string
		seen   map[string]bool
		failed map[string]bool
		want   []string
	}{
		{"a template found again keeps its status", map[string]bool{"ConfigMap/shop/a": true, "ConfigMap/shop/b": true, "Secret/shop/c": true}, nil, nil},
		{"a template no longer found loses its status", map[string]bool{"ConfigMap/shop/a": true}, nil, []string{"ConfigMap/shop/b", "Secret/shop/c"}},
		{"a kind that failed to list keeps its templates' statuses", map[string]bool{}, map[string]bool{"ConfigMap": true}, []string{"Secret/shop/c"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			assert.Equal(t, tt.want, staleStatuses(status, tt.seen, tt.failed))
		})
	}
}

func TestSortTemplates(t *testing.T) {
	tm := func(kind, ref string) templateMeta {
		return templateMeta{kind: Kind{GVK: schema.GroupVersionKind{Version: "v1", Kind: kind}}, ref: ref}
	}
	tests := []struct {
		name string
		in   []templateMeta
		want []string
	}{
		{"a namespace comes before what lives in it", []templateMeta{tm("ConfigMap", "ConfigMap/shop/a"), tm("Namespace", "Namespace/shop")},
			[]string{"Namespace/shop", "ConfigMap/shop/a"}},
		{"templates of one kind are sorted by ref", []templateMeta{tm("ConfigMap", "ConfigMap/shop/b"), tm("ConfigMap", "ConfigMap/shop/a")},
			[]string{"ConfigMap/shop/a", "ConfigMap/shop/b"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			sortTemplates(tt.in)
			var got []string
			for _, x := range tt.in {
				got = append(got, x.ref)
			}
			assert.Equal(t, tt.want, got)
		})
	}
}

func TestSpecErrorsSayNothingChanged(t *testing.T) {
	_, errs := ParseSpec(map[string]string{AnnoClusters: "east", AnnoRollout: "sometimes"})
	got := specErrors(errs)
	assert.Len(t, got, 2)
	assert.Contains(t, got[0], AnnoRollout)
	assert.Equal(t, "nothing was changed in the members until the annotations are fixed", got[1])
}
