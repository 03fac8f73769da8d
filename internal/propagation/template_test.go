package propagation

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

func TestParseSpec(t *testing.T) {
	tests := []struct {
		name    string
		in      map[string]string
		check   func(t *testing.T, s Spec)
		wantErr []string
	}{
		{"an explicit list is duplicated and rolled out at once by default",
			map[string]string{AnnoClusters: "east, west"},
			func(t *testing.T, s Spec) {
				assert.Equal(t, []string{"east", "west"}, s.Clusters)
				assert.Equal(t, ModeDuplicated, s.Mode)
				assert.Equal(t, RolloutAll, s.Rollout)
			}, nil},
		{"weights, bounds, overrides and registries are read",
			map[string]string{AnnoClusters: "east,west", AnnoReplicas: "divided", AnnoWeights: "east=3,west=1",
				AnnoReplicasMin: "west=1", AnnoReplicasMax: "east=5", AnnoImageRegistry: "west=reg.west.example.com/",
				AnnoOverrides: `{"east":[{"op":"add","path":"/spec/paused","value":true}]}`, AnnoRollout: "one-by-one", "meridian.io/hostname": "app.x.test"},
			func(t *testing.T, s Spec) {
				assert.Equal(t, map[string]int{"east": 3, "west": 1}, s.Weights)
				assert.Equal(t, map[string]int{"west": 1}, s.Min)
				assert.Equal(t, map[string]int{"east": 5}, s.Max)
				assert.Equal(t, "reg.west.example.com", s.Registry["west"])
				assert.Contains(t, string(s.Overrides["east"]), "paused")
				assert.Equal(t, RolloutOneByOne, s.Rollout)
				assert.Equal(t, "app.x.test", s.Hostname)
			}, nil},
		{"a selector with a maximum is read", map[string]string{AnnoSelector: "tier=prod", AnnoMaxClusters: "2"},
			func(t *testing.T, s Spec) {
				assert.Equal(t, "tier=prod", s.Selector)
				assert.Equal(t, 2, s.MaxClusters)
			}, nil},
		{"no placement at all is an error", map[string]string{}, nil, []string{AnnoClusters}},
		{"a list and a selector together are an error", map[string]string{AnnoClusters: "east", AnnoSelector: "a=b"}, nil, []string{AnnoSelector}},
		{"an unknown replica mode is an error", map[string]string{AnnoClusters: "east", AnnoReplicas: "split"}, nil, []string{AnnoReplicas}},
		{"a weight out of range is an error", map[string]string{AnnoClusters: "east", AnnoWeights: "east=2000"}, nil, []string{AnnoWeights}},
		{"a max below the min is an error", map[string]string{AnnoClusters: "east", AnnoReplicasMin: "east=3", AnnoReplicasMax: "east=2"}, nil, []string{AnnoReplicasMax}},
		{"overrides that are not JSON are an error", map[string]string{AnnoClusters: "east", AnnoOverrides: "{east: nope}"}, nil, []string{AnnoOverrides}},
		{"an override that is not an operation list is an error", map[string]string{AnnoClusters: "east", AnnoOverrides: `{"east":{"op":"add"}}`}, nil, []string{AnnoOverrides}},
		{"a registry without a cluster is an error", map[string]string{AnnoClusters: "east", AnnoImageRegistry: "reg.example.com"}, nil, []string{AnnoImageRegistry}},
		{"an unknown rollout is an error", map[string]string{AnnoClusters: "east", AnnoRollout: "canary"}, nil, []string{AnnoRollout}},
		{"a bad selector is an error", map[string]string{AnnoSelector: "tier in (prod"}, nil, []string{AnnoSelector}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, errs := ParseSpec(tt.in)
			var got []string
			for _, e := range errs {
				got = append(got, e.Annotation)
				assert.Contains(t, e.Error(), e.Annotation)
			}
			assert.ElementsMatch(t, tt.wantErr, got)
			if tt.check != nil {
				tt.check(t, s)
			}
		})
	}
}

func template(t *testing.T) *unstructured.Unstructured {
	t.Helper()
	u := &unstructured.Unstructured{}
	require.NoError(t, json.Unmarshal([]byte(`{
	  "apiVersion": "apps/v1", "kind": "Deployment",
	  "metadata": {"name": "web", "namespace": "shop", "uid": "u1", "resourceVersion": "42", "generation": 3,
	    "labels": {"app": "web"},
	    "annotations": {"meridian.io/propagate": "true", "meridian.io/clusters": "east,west", "meridian.io/hostname": "app.x.test", "team": "a",
	      "kubectl.kubernetes.io/last-applied-configuration": "{}"},
	    "finalizers": ["meridian.io/propagation"], "managedFields": [{"manager": "kubectl"}]},
	  "spec": {"replicas": 10, "selector": {"matchLabels": {"app": "web"}},
	    "template": {"metadata": {"labels": {"app": "web"}}, "spec": {"containers": [{"name": "app", "image": "nginx:1.27"}]}}},
	  "status": {"readyReplicas": 10}}`), &u.Object))
	return u
}

func TestRenderMakesAnOwnedCopyWithoutHubState(t *testing.T) {
	seven := int64(7)
	obj, hash, err := Render(template(t), "east", &seven, Spec{ReplicasPath: []string{"spec", "replicas"}})
	require.NoError(t, err)
	assert.Equal(t, "true", obj.GetLabels()[LabelPropagated])
	assert.Equal(t, "web", obj.GetLabels()["app"])
	assert.Equal(t, "Deployment.apps/shop/web", obj.GetAnnotations()[AnnoTemplate])
	assert.Equal(t, hash, obj.GetAnnotations()[AnnoSpecHash])
	assert.Equal(t, "a", obj.GetAnnotations()["team"])
	assert.Equal(t, "app.x.test", obj.GetAnnotations()["meridian.io/hostname"])
	assert.NotContains(t, obj.GetAnnotations(), AnnoPropagate, "placement annotations stay on the hub")
	assert.NotContains(t, obj.GetAnnotations(), "kubectl.kubernetes.io/last-applied-configuration")
	assert.Empty(t, obj.GetUID())
	assert.Empty(t, obj.GetResourceVersion())
	assert.Empty(t, obj.GetFinalizers())
	assert.Empty(t, obj.GetManagedFields())
	assert.NotContains(t, obj.Object, "status")
	r, _, _ := unstructured.NestedInt64(obj.Object, "spec", "replicas")
	assert.Equal(t, int64(7), r)
}

func TestTheSpecHashIgnoresReplicasButNotContent(t *testing.T) {
	three, seven := int64(3), int64(7)
	rp := []string{"spec", "replicas"}
	_, h1, err := Render(template(t), "east", &three, Spec{ReplicasPath: rp})
	require.NoError(t, err)
	_, h2, _ := Render(template(t), "east", &seven, Spec{ReplicasPath: rp})
	assert.Equal(t, h1, h2, "a replica change is not a rollout")
	_, h3, _ := Render(template(t), "west", &seven, Spec{ReplicasPath: rp, Registry: map[string]string{"west": "reg.example.com"}})
	assert.NotEqual(t, h1, h3)
}

func TestOverridesApplyPerCluster(t *testing.T) {
	spec := Spec{Registry: map[string]string{"west": "reg.west.example.com"},
		Overrides: map[string]json.RawMessage{"west": json.RawMessage(`[{"op":"add","path":"/spec/template/spec/nodeSelector","value":{"zone":"a"}}]`)}}
	west, _, err := Render(template(t), "west", nil, spec)
	require.NoError(t, err)
	cs, _, _ := unstructured.NestedSlice(west.Object, "spec", "template", "spec", "containers")
	assert.Equal(t, "reg.west.example.com/nginx:1.27", cs[0].(map[string]any)["image"])
	sel, _, _ := unstructured.NestedStringMap(west.Object, "spec", "template", "spec", "nodeSelector")
	assert.Equal(t, map[string]string{"zone": "a"}, sel)
	east, _, err := Render(template(t), "east", nil, spec)
	require.NoError(t, err)
	cs, _, _ = unstructured.NestedSlice(east.Object, "spec", "template", "spec", "containers")
	assert.Equal(t, "nginx:1.27", cs[0].(map[string]any)["image"], "other clusters are untouched")
}

func TestABadOverrideIsAnError(t *testing.T) {
	_, _, err := Render(template(t), "east", nil, Spec{Overrides: map[string]json.RawMessage{"east": json.RawMessage(`[{"op":"replace","path":"/spec/nope/x","value":1}]`)}})
	assert.ErrorContains(t, err, "override for east does not apply")
	_, _, err = Render(template(t), "east", nil, Spec{Overrides: map[string]json.RawMessage{"east": json.RawMessage(`[{"op":"replace","path":"/metadata/name","value":"other"}]`)}})
	assert.ErrorContains(t, err, "changes the apiVersion, kind, name or namespace")
}

func TestWithRegistry(t *testing.T) {
	for in, want := range map[string]string{
		"nginx:1.27":                     "reg.example.com/nginx:1.27",
		"library/nginx":                  "reg.example.com/library/nginx",
		"docker.io/library/nginx:1":      "reg.example.com/library/nginx:1",
		"localhost:5000/app@sha256:abcd": "reg.example.com/app@sha256:abcd",
		"ghcr.io/org/app":                "reg.example.com/org/app",
	} {
		assert.Equal(t, want, WithRegistry(in, "reg.example.com"), in)
	}
}

func TestServicesLoseTheirClusterAllocatedFields(t *testing.T) {
	u := &unstructured.Unstructured{}
	require.NoError(t, json.Unmarshal([]byte(`{"apiVersion":"v1","kind":"Service","metadata":{"name":"s","namespace":"n"},
	  "spec":{"type":"NodePort","clusterIP":"10.0.0.1","clusterIPs":["10.0.0.1"],"ports":[{"port":80,"nodePort":30080}]}}`), &u.Object))
	obj, _, err := Render(u, "east", nil, Spec{})
	require.NoError(t, err)
	_, has, _ := unstructured.NestedString(obj.Object, "spec", "clusterIP")
	assert.False(t, has)
	ports, _, _ := unstructured.NestedSlice(obj.Object, "spec", "ports")
	assert.NotContains(t, ports[0].(map[string]any), "nodePort")
}

func TestAnOverrideCannotTakeACopyAwayFromMeridian(t *testing.T) {
	tests := []struct {
		name, patch string
	}{
		{"removing every annotation", `[{"op":"remove","path":"/metadata/annotations"}]`},
		{"replacing the annotations with a string", `[{"op":"replace","path":"/metadata/annotations","value":"x"}]`},
		{"naming another template", `[{"op":"replace","path":"/metadata/annotations/meridian.io~1template","value":"Deployment.apps/shop/other"}]`},
		{"removing our label", `[{"op":"remove","path":"/metadata/labels/meridian.io~1propagated"}]`},
		{"replacing the labels", `[{"op":"replace","path":"/metadata/labels","value":{"app":"web"}}]`},
	}
	for _, tt := range tests {
		t.Run(tt.name+" is refused", func(t *testing.T) {
			var err error
			require.NotPanics(t, func() {
				_, _, err = Render(template(t), "east", nil, Spec{Overrides: map[string]json.RawMessage{"east": json.RawMessage(tt.patch)}})
			})
			assert.ErrorContains(t, err, "override for east changes Meridian's")
		})
	}
}

func TestABootstrapTokenSecretIsNeverPropagated(t *testing.T) {
	u := &unstructured.Unstructured{}
	require.NoError(t, json.Unmarshal([]byte(`{"apiVersion":"v1","kind":"Secret","type":"bootstrap.kubernetes.io/token","metadata":{"name":"bootstrap-token-abcdef","namespace":"kube-system"}}`), &u.Object))
	_, _, err := Render(u, "east", nil, Spec{})
	assert.ErrorContains(t, err, "never propagated")
}
