package kustomize_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/meridian-gslb/meridian/deploy/kustomize"
	"github.com/meridian-gslb/meridian/internal/kube/grants"
)

// Each opt-in component adds its ClusterRole and binding to an overlay and
// nothing else.
func TestEachComponentAddsItsRBACOnly(t *testing.T) {
	without, err := kustomize.RenderRBAC(filepath.Join(kustomize.Dir(), "base"))
	require.NoError(t, err)
	for _, c := range []struct{ component, role string }{
		{"propagation", "meridian-propagation"},
		{"status-annotation", "meridian-status"},
	} {
		t.Run(c.component, func(t *testing.T) {
			with, err := kustomize.RenderRBAC(overlayWith(t, c.component))
			require.NoError(t, err)
			out := string(with)
			assert.Contains(t, out, "name: "+c.role)
			assert.Equal(t, strings.Count(string(without), "apiVersion: ")+2, strings.Count(out, "apiVersion: "), "one ClusterRole and one binding more")
			assert.NotContains(t, string(without), c.role, "the base stays least-privilege")
			full, err := kustomize.Render(overlayWith(t, c.component))
			require.NoError(t, err)
			base, err := kustomize.Render("base")
			require.NoError(t, err)
			assert.Equal(t, strings.Count(string(base), "apiVersion: ")+2, strings.Count(string(full), "apiVersion: "), "nothing but RBAC is added")
		})
	}
}

// components/propagation grants exactly grants.Propagation's rules:
// templates and copies of the listed kinds, Namespaces (templates and a
// copy's missing namespace), and nodes and pods for selector ranking.
var wantPropagationRules = fromGrants(grants.Propagation.Rules())

// The verbs propagation needs on every kind it propagates.
var propagationVerbs = grants.PropagationVerbs()

func TestThePropagationComponentGrantsExactlyTheDocumentedRules(t *testing.T) {
	out, err := kustomize.RenderRBAC(overlayWith(t, "propagation"))
	require.NoError(t, err)
	golden(t, "rbac-propagation.golden.yaml", out)

	objs := parse(t, out)
	cr := find(t, objs, "ClusterRole", "meridian-propagation")
	assert.Equal(t, normalize(wantPropagationRules), normalize(cr.Rules))
	for _, r := range cr.Rules {
		for _, l := range [][]string{r.APIGroups, r.Resources, r.Verbs} {
			assert.NotContains(t, l, "*", "no wildcards")
		}
		assert.NotContains(t, r.APIGroups, kustomize.RBACGroup, "no Roles or bindings: granting them needs escalate and bind")
		for _, v := range []string{"escalate", "bind", "impersonate"} {
			assert.NotContains(t, r.Verbs, v)
		}
	}
	crb := find(t, objs, "ClusterRoleBinding", "meridian-propagation")
	assert.Equal(t, ref{APIGroup: kustomize.RBACGroup, Kind: "ClusterRole", Name: "meridian-propagation"}, crb.RoleRef)
	assert.Equal(t, []ref{{Kind: "ServiceAccount", Name: "meridian", Namespace: namespace}}, crb.Subjects)
}

// extra-kinds.example.yaml is the shape users copy to grant a CRD: a
// ClusterRole with the propagation verbs on one resource, bound to the
// service account the component binds. It is not a resource of the
// component.
func TestThePropagationExtraKindsExampleGrantsACRDToMeridiansServiceAccount(t *testing.T) {
	dir := filepath.Join(kustomize.Dir(), "components", "propagation")
	data, err := os.ReadFile(filepath.Join(dir, "extra-kinds.example.yaml"))
	require.NoError(t, err)
	objs := parse(t, data)
	require.Len(t, objs, 2, "a ClusterRole and its ClusterRoleBinding")

	cr := find(t, objs, "ClusterRole", "meridian-propagation-widgets")
	assert.Equal(t, kustomize.RBACGroup+"/v1", cr.APIVersion)
	assert.Equal(t, normalize([]rule{{APIGroups: []string{"example.meridian.io"}, Resources: []string{"widgets"}, Verbs: propagationVerbs}}), normalize(cr.Rules))

	crb := find(t, objs, "ClusterRoleBinding", "meridian-propagation-widgets")
	assert.Equal(t, kustomize.RBACGroup+"/v1", crb.APIVersion)
	assert.Equal(t, ref{APIGroup: kustomize.RBACGroup, Kind: "ClusterRole", Name: cr.Metadata.Name}, crb.RoleRef)
	assert.Equal(t, []ref{{Kind: "ServiceAccount", Name: "meridian", Namespace: namespace}}, crb.Subjects)

	// The same subject as the component's binding, and not one of its
	// resources.
	out, err := kustomize.RenderRBAC(overlayWith(t, "propagation"))
	require.NoError(t, err)
	rendered := parse(t, out)
	assert.Equal(t, find(t, rendered, "ClusterRoleBinding", "meridian-propagation").Subjects, crb.Subjects)
	for _, o := range rendered {
		assert.NotEqual(t, "meridian-propagation-widgets", o.Metadata.Name, "the example is not part of the component")
	}
	k, err := os.ReadFile(filepath.Join(dir, "kustomization.yaml"))
	require.NoError(t, err)
	assert.NotContains(t, string(k), "- extra-kinds.example.yaml")
}

// internal/kube/grants lists exactly the components under components/, and
// each grants exactly its ClusterRole's rules: `meridian cluster join
// --components` reads them there.
func TestEveryComponentIsInGrantsWithItsRules(t *testing.T) {
	entries, err := os.ReadDir(filepath.Join(kustomize.Dir(), "components"))
	require.NoError(t, err)
	var dirs []string
	for _, e := range entries {
		if e.IsDir() {
			dirs = append(dirs, e.Name())
		}
	}
	assert.ElementsMatch(t, dirs, grants.ComponentNames(), "a component directory for every grants.Component, and no other")
	for _, c := range grants.Components() {
		t.Run(c.Name, func(t *testing.T) {
			out, err := kustomize.RenderRBAC(overlayWith(t, c.Name))
			require.NoError(t, err)
			cr := find(t, parse(t, out), "ClusterRole", c.ClusterRole)
			assert.Equal(t, normalize(fromGrants(c.Rules())), normalize(cr.Rules))
		})
	}
}
