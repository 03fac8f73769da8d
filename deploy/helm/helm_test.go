package helm

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"helm.sh/helm/v3/pkg/chartutil"
	"helm.sh/helm/v3/pkg/lint"
	"helm.sh/helm/v3/pkg/lint/support"

	"github.com/meridian-gslb/meridian/deploy/kustomize"
)

// renderKustomize renders deploy/kustomize/base, with the named components
// through a throw-away overlay beside the shipped ones (kustomize loads
// bases by relative path only).
func renderKustomize(t *testing.T, components ...string) []byte {
	t.Helper()
	dir := "base"
	if len(components) > 0 {
		var err error
		dir, err = os.MkdirTemp(filepath.Join(kustomize.Dir(), "overlays"), "helm-test-")
		require.NoError(t, err)
		t.Cleanup(func() { os.RemoveAll(dir) })
		k := "apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\nresources: [../../base]\ncomponents:\n"
		for _, c := range components {
			k += "  - ../../components/" + c + "\n"
		}
		require.NoError(t, os.WriteFile(filepath.Join(dir, "kustomization.yaml"), []byte(k), 0o644))
	}
	out, err := kustomize.Render(dir)
	require.NoError(t, err)
	return out
}

func parse(t *testing.T, manifests []byte) map[string]map[string]any {
	t.Helper()
	objs, err := objects(manifests)
	require.NoError(t, err)
	return objs
}

// The chart with release "meridian" in namespace "meridian" renders the
// objects of deploy/kustomize/base (and of its components when enabled),
// field by field: RBAC rules and bindings, the Deployment's ports, probes,
// volumes, mounts, security contexts, args, env, resources, strategy and
// spread, the Services' ports and types, the PDB, the ConfigMap's config
// file. Labels, the instance label in selectors and the image are compared
// on their own below. A failure lists every differing field by object and
// path, e.g. `Role/meridian .rules[2]: only in kustomize: {...}`.
func TestChartRendersTheKustomizeObjects(t *testing.T) {
	for _, c := range []struct {
		name       string
		values     string
		components []string
	}{
		{"default values render the base", "", nil},
		{"propagation enabled renders the base with components/propagation",
			"components: {propagation: {enabled: true}}", []string{"propagation"}},
		{"status annotation enabled renders the base with components/status-annotation",
			"components: {statusAnnotation: {enabled: true}}", []string{"status-annotation"}},
		{"both components enabled render the base with both components",
			"components: {propagation: {enabled: true}, statusAnnotation: {enabled: true}}", []string{"propagation", "status-annotation"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			out, err := Render("meridian", "meridian", []byte(c.values))
			require.NoError(t, err)
			h := parse(t, out)
			k := parse(t, renderKustomize(t, c.components...))
			require.NotEmpty(t, k)
			if d := diffObjects(h, k); len(d) > 0 {
				t.Errorf("the chart and deploy/kustomize differ (%d):\n%s", len(d), strings.Join(d, "\n"))
			}
		})
	}
}

// The comparison is not blind: values that change a compared field are
// reported, naming the object and the field.
func TestChartComparisonReportsChangedFields(t *testing.T) {
	k := parse(t, renderKustomize(t))
	out, err := Render("meridian", "meridian", []byte("probes: {readiness: {periodSeconds: 7}}\nservice: {dns: {externalTrafficPolicy: Cluster}}\nrbac: {create: false}"))
	require.NoError(t, err)
	d := diffObjects(parse(t, out), k)
	assert.Contains(t, d, "Deployment/meridian .spec.template.spec.containers[0].readinessProbe.periodSeconds: helm 7, kustomize 5")
	assert.Contains(t, d, `Service/meridian-dns .spec.externalTrafficPolicy: helm "Cluster", kustomize "Local"`)
	assert.Contains(t, d, "ClusterRole/meridian: only in kustomize")
	assert.Contains(t, d, "RoleBinding/meridian: only in kustomize")
}

// Every object carries the standard labels; selectors are the name and the
// instance only, and the pods carry them.
func TestChartLabelsAndSelectors(t *testing.T) {
	out, err := Render("meridian", "meridian", nil)
	require.NoError(t, err)
	selector := map[string]any{"app.kubernetes.io/name": "meridian", instanceLabel: "meridian"}
	for key, o := range parse(t, out) {
		labels, _ := get(o, "metadata", "labels").(map[string]any)
		for k, v := range map[string]any{
			"app.kubernetes.io/name":       "meridian",
			instanceLabel:                  "meridian",
			"app.kubernetes.io/version":    "v0.1.0",
			"app.kubernetes.io/managed-by": "Helm",
			"app.kubernetes.io/part-of":    "meridian",
			"app.kubernetes.io/component":  "gslb",
			"helm.sh/chart":                "meridian-0.1.0",
		} {
			assert.Equal(t, v, labels[k], "%s label %s", key, k)
		}
		switch key {
		case "Deployment/meridian":
			assert.Equal(t, selector, get(o, "spec", "selector", "matchLabels"), key)
			podLabels, _ := get(o, "spec", "template", "metadata", "labels").(map[string]any)
			for k, v := range selector {
				assert.Equal(t, v, podLabels[k], "pod label %s", k)
			}
			for i := range 2 {
				assert.Equal(t, selector, get(o, "spec", "template", "spec", "topologySpreadConstraints", i, "labelSelector", "matchLabels"))
			}
			assert.Equal(t, "ghcr.io/meridian-gslb/meridian:v0.1.0", get(o, "spec", "template", "spec", "containers", 0, "image"), "image.tag defaults to the appVersion")
			assert.NotContains(t, get(o, "spec", "template", "metadata", "annotations"), "checksum/config", "the config is hot-reloaded: no rollout on a change")
		case "PodDisruptionBudget/meridian":
			assert.Equal(t, selector, get(o, "spec", "selector", "matchLabels"), key)
		case "Service/meridian-dns", "Service/meridian-http", "Service/meridian-gossip":
			assert.Equal(t, selector, get(o, "spec", "selector"), key)
		}
	}
}

// Values change what they say they change.
func TestChartValues(t *testing.T) {
	for _, c := range []struct {
		name, release, values string
		check                 func(t *testing.T, objs map[string]map[string]any)
	}{
		{"another release name prefixes every object and binds its own service account", "edge", "",
			func(t *testing.T, objs map[string]map[string]any) {
				for _, key := range []string{"Deployment/edge-meridian", "ConfigMap/edge-meridian-config", "Service/edge-meridian-dns",
					"Service/edge-meridian-gossip", "ClusterRole/edge-meridian", "ServiceAccount/edge-meridian"} {
					assert.Contains(t, objs, key)
				}
				assert.Equal(t, "edge-meridian", get(objs["ClusterRoleBinding/edge-meridian"], "subjects", 0, "name"))
				assert.Equal(t, "edge-meridian-config", get(objs["Deployment/edge-meridian"], "spec", "template", "spec", "volumes", 1, "projected", "sources", 0, "configMap", "name"))
			}},
		{"a digest pins the image", "meridian", "image: {tag: v0.2.0, digest: \"sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef\"}",
			func(t *testing.T, objs map[string]map[string]any) {
				assert.Equal(t, "ghcr.io/meridian-gslb/meridian:v0.2.0@sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef",
					get(objs["Deployment/meridian"], "spec", "template", "spec", "containers", 0, "image"))
			}},
		{"an existing service account is bound and none is created", "meridian", "serviceAccount: {create: false, name: gslb}",
			func(t *testing.T, objs map[string]map[string]any) {
				assert.NotContains(t, objs, "ServiceAccount/meridian")
				assert.Equal(t, "gslb", get(objs["Deployment/meridian"], "spec", "template", "spec", "serviceAccountName"))
				assert.Equal(t, "gslb", get(objs["RoleBinding/meridian"], "subjects", 0, "name"))
			}},
		{"a parent chart's global values are accepted", "meridian", "global: {imageRegistry: example.com}",
			func(t *testing.T, objs map[string]map[string]any) { assert.Contains(t, objs, "Deployment/meridian") }},
		{"a ClusterIP DNS Service has no externalTrafficPolicy", "meridian", "service: {dns: {type: ClusterIP}}",
			func(t *testing.T, objs map[string]map[string]any) {
				assert.Equal(t, "ClusterIP", get(objs["Service/meridian-dns"], "spec", "type"))
				assert.Nil(t, get(objs["Service/meridian-dns"], "spec", "externalTrafficPolicy"))
			}},
		{"secret names, replicas and the config file come from values", "meridian",
			"replicaCount: 3\nsecrets: {gossipKey: gk, ringIdentity: ri, adminTokens: at}\nconfig: |\n  zones: []\npdb: {enabled: false}\n",
			func(t *testing.T, objs map[string]map[string]any) {
				d := objs["Deployment/meridian"]
				assert.EqualValues(t, 3, get(d, "spec", "replicas"))
				for i, name := range []string{"gk", "ri", "at"} {
					assert.Equal(t, name, get(d, "spec", "template", "spec", "volumes", 1, "projected", "sources", i+1, "secret", "name"))
				}
				assert.Equal(t, "zones: []\n", get(objs["ConfigMap/meridian-config"], "data", "config.yaml"))
				assert.NotContains(t, objs, "PodDisruptionBudget/meridian")
			}},
		{"scheduling values reach the pod", "meridian",
			"nodeSelector: {pool: dns}\ntolerations: [{key: dns, operator: Exists}]\npodAnnotations: {a: b}\ntopologySpread: false",
			func(t *testing.T, objs map[string]map[string]any) {
				spec := get(objs["Deployment/meridian"], "spec", "template", "spec")
				assert.Equal(t, map[string]any{"pool": "dns"}, get(spec, "nodeSelector"))
				assert.Equal(t, "dns", get(spec, "tolerations", 0, "key"))
				assert.Nil(t, get(spec, "topologySpreadConstraints"))
				assert.Equal(t, "b", get(objs["Deployment/meridian"], "spec", "template", "metadata", "annotations", "a"), "added to the Prometheus annotations")
			}},
	} {
		t.Run(c.name, func(t *testing.T) {
			out, err := Render(c.release, "meridian", []byte(c.values))
			require.NoError(t, err)
			c.check(t, parse(t, out))
		})
	}
}

// values.schema.json refuses values of the wrong type, outside their range
// or enum, and unknown keys, naming the value.
func TestChartSchemaRefusesBadValues(t *testing.T) {
	for _, c := range []struct{ name, values, want string }{
		{"a replica count that is a word is refused", `replicaCount: "two"`, "replicaCount"},
		{"zero replicas are refused", `replicaCount: 0`, "replicaCount"},
		{"an unknown pull policy is refused", `image: {pullPolicy: Sometimes}`, "pullPolicy"},
		{"an unknown DNS Service type is refused", `service: {dns: {type: ExternalName}}`, "type"},
		{"a port above 65535 is refused", `service: {http: {port: 70000}}`, "port"},
		{"a misspelt key is refused", `replicas: 3`, "replicas"},
		{"a component flag that is a string is refused", `components: {propagation: {enabled: "yes"}}`, "enabled"},
		{"an empty config file is refused", `config: ""`, "config"},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := Render("meridian", "meridian", []byte(c.values))
			require.Error(t, err)
			assert.Contains(t, err.Error(), "schema")
			assert.Contains(t, err.Error(), c.want)
		})
	}
}

// `helm lint --strict`: no warning and no error, with the default values
// and with the components enabled.
func TestChartLintsStrict(t *testing.T) {
	for _, values := range []string{"", "components: {propagation: {enabled: true}, statusAnnotation: {enabled: true}}"} {
		vals, err := chartutil.ReadValues([]byte(values))
		require.NoError(t, err)
		res := lint.AllWithKubeVersionAndSchemaValidation(ChartDir(), vals.AsMap(), "meridian", nil, false)
		for _, m := range res.Messages {
			assert.LessOrEqual(t, m.Severity, support.InfoSev, "%s", m)
		}
	}
	// The same lint fails a chart rendered with values the schema refuses.
	vals, err := chartutil.ReadValues([]byte(`replicaCount: "two"`))
	require.NoError(t, err)
	res := lint.AllWithKubeVersionAndSchemaValidation(ChartDir(), vals.AsMap(), "meridian", nil, false)
	assert.Equal(t, support.ErrorSev, res.HighestSeverity, "%v", res.Messages)
}

// The comparison names the object and the field that differ.
func TestDiffNamesObjectAndField(t *testing.T) {
	role := func(rules ...any) map[string]any {
		return map[string]any{"kind": "Role", "metadata": map[string]any{"name": "meridian"}, "rules": rules}
	}
	lease := map[string]any{"apiGroups": []any{"coordination.k8s.io"}, "resources": []any{"leases"}, "verbs": []any{"get"}}
	secrets := map[string]any{"apiGroups": []any{""}, "resources": []any{"secrets"}, "verbs": []any{"get"}}
	for _, c := range []struct {
		name       string
		helm, kust map[string]map[string]any
		want       []string
	}{
		{"equal objects have no difference",
			map[string]map[string]any{"Role/meridian": role(secrets)}, map[string]map[string]any{"Role/meridian": role(secrets)}, nil},
		{"a rule only kustomize has is named with its content",
			map[string]map[string]any{"Role/meridian": role(secrets)}, map[string]map[string]any{"Role/meridian": role(secrets, lease)},
			[]string{`Role/meridian .rules[1]: only in kustomize: {"apiGroups":["coordination.k8s.io"],"resources":["leases"],"verbs":["get"]}`}},
		{"a differing verb is named by its path",
			map[string]map[string]any{"Role/meridian": role(lease)},
			map[string]map[string]any{"Role/meridian": role(map[string]any{"apiGroups": []any{"coordination.k8s.io"}, "resources": []any{"leases"}, "verbs": []any{"list"}})},
			[]string{`Role/meridian .rules[0].verbs[0]: helm "get", kustomize "list"`}},
		{"an object only one side renders is named",
			map[string]map[string]any{"ClusterRole/meridian-gateway": role()}, map[string]map[string]any{},
			[]string{"ClusterRole/meridian-gateway: only in helm"}},
		{"labels, the instance selector and the image are not differences",
			map[string]map[string]any{"Deployment/meridian": {"metadata": map[string]any{"labels": map[string]any{"a": "b"}}, "spec": map[string]any{
				"selector": map[string]any{"matchLabels": map[string]any{"app.kubernetes.io/name": "meridian", instanceLabel: "meridian"}},
				"template": map[string]any{"spec": map[string]any{"containers": []any{map[string]any{"name": "meridian", "image": "x:v1", "imagePullPolicy": "Always"}}}}}}},
			map[string]map[string]any{"Deployment/meridian": {"metadata": map[string]any{}, "spec": map[string]any{
				"selector": map[string]any{"matchLabels": map[string]any{"app.kubernetes.io/name": "meridian"}},
				"template": map[string]any{"spec": map[string]any{"containers": []any{map[string]any{"name": "meridian", "image": "x:latest"}}}}}}},
			nil},
	} {
		t.Run(c.name, func(t *testing.T) {
			assert.Equal(t, c.want, diffObjects(c.helm, c.kust))
		})
	}
}
