// Package kustomize renders Meridian's Kubernetes manifests in this directory
// (base/ and overlays/) with the kustomize Go API, the same engine as
// `kubectl kustomize`. Its test pins the output in testdata/*.golden.yaml;
// end-to-end tests can use Render and RenderRBAC to apply the manifests, or
// only their RBAC objects, to a real kube-apiserver.
package kustomize

import (
	"fmt"
	"path/filepath"

	"sigs.k8s.io/kustomize/api/krusty"
	"sigs.k8s.io/kustomize/api/resmap"
	"sigs.k8s.io/kustomize/kyaml/filesys"

	"github.com/meridian-gslb/meridian/internal/srcdir"
)

// RBACGroup is the API group of the objects RenderRBAC keeps.
const RBACGroup = "rbac.authorization.k8s.io"

// Dir is the absolute path of deploy/kustomize in the source tree this
// package was built from.
func Dir() string {
	root := srcdir.Root()
	if root == "" {
		panic("kustomize: cannot find the source directory")
	}
	return filepath.Join(root, "deploy", "kustomize")
}

// Render builds the kustomization at path (a directory; relative paths are
// taken from Dir, e.g. "base" or "overlays/example") and returns the
// manifests as multi-document YAML, ordered as `kubectl kustomize` orders them.
func Render(path string) ([]byte, error) {
	m, err := build(path)
	if err != nil {
		return nil, err
	}
	return m.AsYaml()
}

// RenderRBAC is Render keeping only the RBAC objects (ClusterRole,
// ClusterRoleBinding, Role, RoleBinding).
func RenderRBAC(path string) ([]byte, error) {
	m, err := build(path)
	if err != nil {
		return nil, err
	}
	for _, r := range m.Resources() {
		if r.GetGvk().Group != RBACGroup {
			if err := m.Remove(r.CurId()); err != nil {
				return nil, fmt.Errorf("kustomize %s: %w", path, err)
			}
		}
	}
	return m.AsYaml()
}

func build(path string) (resmap.ResMap, error) {
	if !filepath.IsAbs(path) {
		path = filepath.Join(Dir(), path)
	}
	opts := krusty.MakeDefaultOptions()
	opts.Reorder = krusty.ReorderOptionLegacy // as kubectl kustomize
	m, err := krusty.MakeKustomizer(opts).Run(filesys.MakeFsOnDisk(), path)
	if err != nil {
		return nil, fmt.Errorf("kustomize %s: %w", path, err)
	}
	return m, nil
}
