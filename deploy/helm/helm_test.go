package helm

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"helm.sh/helm/v3/pkg/chartutil"
	"helm.sh/helm/v3/pkg/lint"
	"helm.sh/helm/v3/pkg/lint/support"

	"github.com/meridian-gslb/meridian/deploy/kustomize"
)

// renderKustomize renders a kustomization of deploy/kustomize ("base",
// "overlays/example"), with the named components through a throw-away
// overlay beside the shipped ones (kustomize loads bases by relative path
// only).
func renderKustomize(t *testing.T, path string, components ...string) []byte {
	t.Helper()
	dir := path
	if len(components) > 0 {
		var err error
		dir, err = os.MkdirTemp(filepath.Join(kustomize.Dir(), "overlays"), "helm-test-")
		require.NoError(t, err)
		t.Cleanup(func() { os.RemoveAll(dir) })
		k := "apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\nresources: [../../" + path + "]\ncomponents:\n"
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

// example is the values file of a site of the two-site walkthrough,
// deploy/helm/examples/<name>.yaml.
func example(t *testing.T, name string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(Dir(), "examples", name+".yaml"))
	require.NoError(t, err)
	return string(b)
}

// minimalSite is a walkthrough site's own values with the zone alone of
// common.yaml: the objects deploy/kustomize renders (no signing, no
// delegation, no notifications).
func minimalSite(t *testing.T, name string) string {
	t.Helper()
	return "zone: gslb.example.com\n" + example(t, name)
}

// render renders the chart as release "meridian" in namespace "meridian"
// with the values documents given, merged in order (later ones win, as
// several -f files do).
func render(t *testing.T, values ...string) map[string]map[string]any {
	t.Helper()
	out, err := Render("meridian", "meridian", []byte(mergeValues(t, values...)))
	require.NoError(t, err)
	return parse(t, out)
}

// mergeValues merges YAML values documents as `helm -f a -f b` does.
func mergeValues(t *testing.T, values ...string) string {
	t.Helper()
	merged := map[string]any{}
	for _, v := range values {
		m, err := chartutil.ReadValues([]byte(v))
		require.NoError(t, err)
		merged = chartutil.CoalesceTables(m.AsMap(), merged)
	}
	b, err := chartutil.Values(merged).YAML()
	require.NoError(t, err)
	return b
}

// The chart with release "meridian" in namespace "meridian" renders the
// objects of deploy/kustomize: site east (examples/east.yaml) is the base
// (with its opt-in components when enabled), site eu-west
// (examples/eu-west.yaml) is overlays/example. Field by field: RBAC rules
// and bindings, the StatefulSet's ports, probes, volumes, mounts, security
// contexts, args, env, resources and spread, every Service (the per-pod
// gossip Services with their selectors), the PDB, and the config file
// parsed field by field. Labels, the instance label in selectors and the
// image are compared on their own below. A failure lists every differing
// field by object and path, e.g. `Role/meridian .rules[2]: only in
// kustomize: {...}`.
func TestChartRendersTheKustomizeObjects(t *testing.T) {
	for _, c := range []struct {
		name, site, kustomization string
		values                    string
		components                []string
		want                      []string // the differences meant to be there
	}{
		{"site east renders the base", "east", "base", "", nil, nil},
		{"site eu-west renders the example overlay", "eu-west", "overlays/example", "", nil, nil},
		{"propagation enabled renders the base with components/propagation", "east", "base",
			"components: {propagation: {enabled: true}}", []string{"propagation"}, nil},
		{"both components enabled render the base with both components, and the chart's config asks for the annotation", "east", "base",
			"components: {propagation: {enabled: true}, statusAnnotation: {enabled: true}}", []string{"propagation", "status-annotation"},
			// kustomize leaves it to the overlay's config.yaml.
			[]string{"ConfigMap/meridian-config .data.config.yaml.kubernetes.status_annotation: helm true, kustomize false"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			h := render(t, minimalSite(t, c.site), c.values)
			k := parse(t, renderKustomize(t, c.kustomization, c.components...))
			require.NotEmpty(t, k)
			if d := diffObjects(h, k); !slices.Equal(d, c.want) {
				t.Errorf("the chart and deploy/kustomize differ (%d):\n%s", len(d), strings.Join(d, "\n"))
			}
		})
	}
}

// The comparison is not blind: values that change a compared field are
// reported, naming the object and the field (the config's too).
func TestChartComparisonReportsChangedFields(t *testing.T) {
	k := parse(t, renderKustomize(t, "base"))
	h := render(t, minimalSite(t, "east"), "probes: {readiness: {periodSeconds: 7}}\nservice: {dns: {externalTrafficPolicy: Cluster}}\nrbac: {create: false}\nsite: {region: us-west}\nreplicaCount: 3")
	d := diffObjects(h, k)
	assert.Contains(t, d, "StatefulSet/meridian .spec.template.spec.containers[0].readinessProbe.periodSeconds: helm 7, kustomize 5")
	assert.Contains(t, d, `Service/meridian-dns .spec.externalTrafficPolicy: helm "Cluster", kustomize "Local"`)
	assert.Contains(t, d, "ClusterRole/meridian: only in kustomize")
	assert.Contains(t, d, "RoleBinding/meridian: only in kustomize")
	assert.Contains(t, d, `ConfigMap/meridian-config .data.config.yaml.ring.region: helm "us-west", kustomize "us-east"`)
	assert.Contains(t, d, "Service/meridian-2-gossip: only in helm")
}

// Every object carries the standard labels; selectors are the name and the
// instance only (a per-pod gossip Service adds its pod's name), and the
// pods carry them.
func TestChartLabelsAndSelectors(t *testing.T) {
	objs := render(t, minimalSite(t, "east"))
	selector := map[string]any{"app.kubernetes.io/name": "meridian", instanceLabel: "meridian"}
	for key, o := range objs {
		labels, _ := get(o, "metadata", "labels").(map[string]any)
		for k, v := range map[string]any{
			"app.kubernetes.io/name":       "meridian",
			instanceLabel:                  "meridian",
			"app.kubernetes.io/version":    "v0.1.0",
			"app.kubernetes.io/managed-by": "Helm",
			"app.kubernetes.io/part-of":    "meridian",
			"app.kubernetes.io/component":  "gslb",
			"helm.sh/chart":                "meridian-0.2.0",
		} {
			assert.Equal(t, v, labels[k], "%s label %s", key, k)
		}
		switch key {
		case "StatefulSet/meridian":
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
		case "Service/meridian-0-gossip", "Service/meridian-1-gossip":
			pod := strings.TrimSuffix(strings.TrimPrefix(key, "Service/"), "-gossip")
			want := map[string]any{"app.kubernetes.io/name": "meridian", instanceLabel: "meridian", "statefulset.kubernetes.io/pod-name": pod}
			assert.Equal(t, want, get(o, "spec", "selector"), "%s selects its one pod", key)
		}
	}
}

// `helm lint --strict`: no warning and no error with the walkthrough's
// values and with every gossip mode and option; and an error naming the
// value with the chart's defaults alone (a site needs its zone and name)
// or with values the schema refuses.
func TestChartLintsStrict(t *testing.T) {
	lintWith := func(values ...string) *support.Linter {
		vals, err := chartutil.ReadValues([]byte(mergeValues(t, values...)))
		require.NoError(t, err)
		res := lint.AllWithKubeVersionAndSchemaValidation(ChartDir(), vals.AsMap(), "meridian", nil, false)
		return &res
	}
	for _, c := range []struct{ name, values string }{
		{"site east", ""},
		{"both components", "components: {propagation: {enabled: true}, statusAnnotation: {enabled: true}}"},
		{"gossip through node ports", "gossip: {expose: NodePort, nodePorts: [30946, 30947], advertise: [203.0.113.10, 203.0.113.11]}"},
		{"gossip on the host network", "gossip: {expose: hostNetwork}"},
		{"cert-manager with its Issuer", "ring: {certManager: {enabled: true, issuer: {create: true, caSecret: meridian-ring-ca}}}"},
		{"a whole config file", "config: \"zones: []\\n\""},
		{"extra environment variables", "extraEnv: [{name: AWS_ACCESS_KEY_ID, valueFrom: {secretKeyRef: {name: meridian-aws, key: AWS_ACCESS_KEY_ID}}}]"},
	} {
		t.Run(c.name, func(t *testing.T) {
			res := lintWith(minimalSite(t, "east"), c.values)
			for _, m := range res.Messages {
				assert.LessOrEqual(t, m.Severity, support.InfoSev, "%s", m)
			}
		})
	}
	t.Run("the defaults alone lack the zone and the site", func(t *testing.T) {
		res := lintWith("")
		assert.Equal(t, support.ErrorSev, res.HighestSeverity, "%v", res.Messages)
		for _, want := range []string{"at '/zone': minLength: got 0, want 1", "at '/site/name': minLength: got 0, want 1", "at '/site/region': minLength: got 0, want 1"} {
			assert.Contains(t, messages(res), want)
		}
	})
	t.Run("a value the schema refuses", func(t *testing.T) {
		res := lintWith(minimalSite(t, "east"), `replicaCount: "two"`)
		assert.Equal(t, support.ErrorSev, res.HighestSeverity, "%v", res.Messages)
		assert.Contains(t, messages(res), "replicaCount")
	})
}

func messages(l *support.Linter) string {
	var b strings.Builder
	for _, m := range l.Messages {
		b.WriteString(m.Error() + "\n")
	}
	return b.String()
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
