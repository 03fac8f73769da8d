//go:build e2e

package e2e

import (
	"bytes"
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/discovery/cached/memory"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/restmapper"

	"github.com/meridian-gslb/meridian/deploy/helm"
	"github.com/meridian-gslb/meridian/deploy/kustomize"
	"github.com/meridian-gslb/meridian/e2e/kubelab"
)

// dryRunApplier server-side applies objects to a member with dryRun=All and
// strict field validation: the kube-apiserver decodes, defaults, validates
// and admits each object as `kubectl apply --server-side --dry-run=server
// --validate=strict` would, and stores nothing.
type dryRunApplier struct {
	dyn    dynamic.Interface
	mapper meta.RESTMapper
}

func newDryRunApplier(t *testing.T, m *kubelab.Member) *dryRunApplier {
	t.Helper()
	dyn, err := dynamic.NewForConfig(m.AdminConfig())
	require.NoError(t, err)
	disc, err := discovery.NewDiscoveryClientForConfig(m.AdminConfig())
	require.NoError(t, err)
	return &dryRunApplier{dyn: dyn, mapper: restmapper.NewDeferredDiscoveryRESTMapper(memory.NewMemCacheClient(disc))}
}

// decodeManifests splits multi-document YAML into objects.
func decodeManifests(t *testing.T, manifests []byte) []*unstructured.Unstructured {
	t.Helper()
	var out []*unstructured.Unstructured
	dec := yaml.NewYAMLOrJSONDecoder(bytes.NewReader(manifests), 4096)
	for {
		var o map[string]any
		err := dec.Decode(&o)
		if errors.Is(err, io.EOF) {
			return out
		}
		require.NoError(t, err)
		if len(o) > 0 {
			out = append(out, &unstructured.Unstructured{Object: o})
		}
	}
}

func (a *dryRunApplier) apply(ctx context.Context, o *unstructured.Unstructured) error {
	gvk := o.GroupVersionKind()
	mapping, err := a.mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
	if err != nil {
		return err
	}
	body, err := o.MarshalJSON()
	if err != nil {
		return err
	}
	var r dynamic.ResourceInterface = a.dyn.Resource(mapping.Resource)
	if mapping.Scope.Name() == meta.RESTScopeNameNamespace {
		r = a.dyn.Resource(mapping.Resource).Namespace(o.GetNamespace())
	}
	force := true
	_, err = r.Patch(ctx, o.GetName(), types.ApplyPatchType, body, metav1.PatchOptions{
		FieldManager:    "meridian-e2e",
		Force:           &force,
		DryRun:          []string{metav1.DryRunAll},
		FieldValidation: metav1.FieldValidationStrict,
	})
	return err
}

// renderKustomizeWith renders the kustomize base with the named components
// through a throw-away overlay beside the shipped ones.
func renderKustomizeWith(t *testing.T, components ...string) []byte {
	t.Helper()
	dir, err := os.MkdirTemp(filepath.Join(kustomize.Dir(), "overlays"), "e2e-")
	require.NoError(t, err)
	defer os.RemoveAll(dir)
	k := "apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\nresources: [../../base]\ncomponents:\n"
	for _, c := range components {
		k += "  - ../../components/" + c + "\n"
	}
	require.NoError(t, os.WriteFile(filepath.Join(dir, "kustomization.yaml"), []byte(k), 0o644))
	out, err := kustomize.Render(dir)
	require.NoError(t, err)
	return out
}

// Both install paths, the Helm chart and deploy/kustomize (base, the example
// overlay, and with the opt-in components), are accepted by a real
// kube-apiserver: server-side apply with dryRun=All and strict field
// validation, so a schema error (unknown field, wrong type, invalid value)
// fails the test. A broken StatefulSet is refused the same way, and the dry
// runs store nothing.
func TestDeployManifestsPassServerDryRun(t *testing.T) {
	lab := kubelab.Start(t, kubelab.Bins(t), "east")
	m := lab.Member("east")
	m.EnsureNamespace(t, "meridian")
	a := newDryRunApplier(t, m)
	ctx := context.Background()

	// A site's values of the walkthrough (deploy/helm/examples: common.yaml
	// and the site's file, whose keys do not overlap), then more values.
	helmRender := func(release, site, values string) []byte {
		common, err := os.ReadFile(filepath.Join(helm.Dir(), "examples", "common.yaml"))
		require.NoError(t, err)
		ex, err := os.ReadFile(filepath.Join(helm.Dir(), "examples", site+".yaml"))
		require.NoError(t, err)
		out, err := helm.Render(release, "meridian", []byte(string(common)+"\n"+string(ex)+"\n"+values))
		require.NoError(t, err)
		return out
	}
	kustomizeRender := func(path string) []byte {
		out, err := kustomize.Render(path)
		require.NoError(t, err)
		return out
	}
	components := "components: {propagation: {enabled: true}, statusAnnotation: {enabled: true}}"
	for _, c := range []struct {
		name      string
		manifests []byte
		objects   int
	}{
		{"kustomize base", kustomizeRender("base"), 13},
		{"kustomize example overlay", kustomizeRender("overlays/example"), 11},
		{"kustomize base with both components", renderKustomizeWith(t, "propagation", "status-annotation"), 17},
		{"helm chart, site east", helmRender("meridian", "east", ""), 13},
		{"helm chart, site eu-west", helmRender("meridian", "eu-west", ""), 11},
		{"helm chart, both components", helmRender("meridian", "east", components), 17},
		{"helm chart, gossip through node ports", helmRender("meridian", "east",
			"gossip: {expose: NodePort, nodePorts: [30946, 30947], advertise: [203.0.113.10, 203.0.113.11]}"), 13},
		{"helm chart, gossip on the host network", helmRender("meridian", "east", "gossip: {expose: hostNetwork}"), 11},
		{"helm chart, release edge with a pinned image and a ClusterIP DNS Service", helmRender("edge", "east",
			"image: {digest: \"sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef\"}\nservice: {dns: {type: ClusterIP}}\n"+
				"nameservers: [{name: ns1.gslb.example.com, ipv4: [192.0.2.53]}]\n"+
				"nodeSelector: {pool: dns}\ntolerations: [{key: dns, operator: Exists, effect: NoSchedule}]\nimagePullSecrets: [{name: regcred}]"), 13},
	} {
		t.Run(c.name, func(t *testing.T) {
			objs := decodeManifests(t, c.manifests)
			require.Len(t, objs, c.objects)
			for _, o := range objs {
				assert.NoError(t, a.apply(ctx, o), "%s/%s", o.GetKind(), o.GetName())
			}
		})
	}

	t.Run("a broken StatefulSet is refused by the dry run", func(t *testing.T) {
		var deploy *unstructured.Unstructured
		for _, o := range decodeManifests(t, helmRender("meridian", "east", "")) {
			if o.GetKind() == "StatefulSet" {
				deploy = o
			}
		}
		require.NotNil(t, deploy)
		for _, c := range []struct {
			name, want string
			mutate     func(o *unstructured.Unstructured)
		}{
			{"a port above 65535", "containerPort", func(o *unstructured.Unstructured) {
				containers, _, _ := unstructured.NestedSlice(o.Object, "spec", "template", "spec", "containers")
				containers[0].(map[string]any)["ports"].([]any)[0].(map[string]any)["containerPort"] = int64(70000)
				require.NoError(t, unstructured.SetNestedSlice(o.Object, containers, "spec", "template", "spec", "containers"))
			}},
			{"an unknown field", ".spec.template.spec.replicaz: field not declared in schema", func(o *unstructured.Unstructured) {
				require.NoError(t, unstructured.SetNestedField(o.Object, int64(1), "spec", "template", "spec", "replicaz"))
			}},
		} {
			o := deploy.DeepCopy()
			c.mutate(o)
			err := a.apply(ctx, o)
			require.Error(t, err, c.name)
			assert.ErrorContains(t, err, c.want, c.name)
		}
		_, err := m.Client(t).AppsV1().StatefulSets("meridian").Get(ctx, "meridian", metav1.GetOptions{})
		assert.True(t, apierrors.IsNotFound(err), "a dry run stores nothing: %v", err)
	})
}
