package kustomize_test

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/meridian-gslb/meridian/deploy/kustomize"
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
