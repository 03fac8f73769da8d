package kustomize_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/meridian-gslb/meridian/deploy/kustomize"
)

// The propagation component adds its ClusterRole and binding to an overlay
// and nothing else.
func TestThePropagationComponentAddsItsRBACOnly(t *testing.T) {
	dir := filepath.Join(kustomize.Dir(), "overlays", "test-propagation")
	require.NoError(t, os.MkdirAll(dir, 0o755))
	t.Cleanup(func() { os.RemoveAll(dir) })
	require.NoError(t, os.WriteFile(filepath.Join(dir, "kustomization.yaml"), []byte(`apiVersion: kustomize.config.k8s.io/v1beta1
kind: Kustomization
resources: [../../base]
components: [../../components/propagation]
`), 0o644))
	with, err := kustomize.RenderRBAC(dir)
	require.NoError(t, err)
	without, err := kustomize.RenderRBAC(filepath.Join(kustomize.Dir(), "base"))
	require.NoError(t, err)
	out := string(with)
	assert.Contains(t, out, "name: meridian-propagation")
	assert.Equal(t, strings.Count(string(without), "apiVersion: ")+2, strings.Count(out, "apiVersion: "), "one ClusterRole and one binding more")
	assert.NotContains(t, string(without), "meridian-propagation", "the base stays least-privilege")
}
