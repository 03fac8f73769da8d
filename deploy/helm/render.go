// Package helm renders Meridian's Helm chart in meridian/ with the Helm Go
// SDK (the engine `helm template` uses), without a cluster. Its tests compare
// the render with deploy/kustomize's, lint the chart and check
// values.schema.json; end-to-end tests use Render to apply the manifests to a
// real kube-apiserver.
package helm

import (
	"fmt"
	"path/filepath"
	"sort"
	"strings"

	"helm.sh/helm/v3/pkg/chart/loader"
	"helm.sh/helm/v3/pkg/chartutil"
	"helm.sh/helm/v3/pkg/engine"

	"github.com/meridian-gslb/meridian/internal/srcdir"
)

// Dir is the absolute path of deploy/helm in the source tree this package
// was built from.
func Dir() string {
	root := srcdir.Root()
	if root == "" {
		panic("helm: cannot find the source directory")
	}
	return filepath.Join(root, "deploy", "helm")
}

// ChartDir is the chart's directory, deploy/helm/meridian.
func ChartDir() string { return filepath.Join(Dir(), "meridian") }

// Render renders the chart as `helm template release chart -n namespace -f
// values` does: values (YAML, may be empty) are merged over values.yaml and
// validated against values.schema.json. It returns the manifests as
// multi-document YAML, one template file after another in name order,
// NOTES.txt left out.
func Render(release, namespace string, values []byte) ([]byte, error) {
	ch, err := loader.Load(ChartDir())
	if err != nil {
		return nil, fmt.Errorf("helm: load chart %s: %w", ChartDir(), err)
	}
	vals, err := chartutil.ReadValues(values)
	if err != nil {
		return nil, fmt.Errorf("helm: values: %w", err)
	}
	opts := chartutil.ReleaseOptions{Name: release, Namespace: namespace, Revision: 1, IsInstall: true}
	top, err := chartutil.ToRenderValues(ch, vals, opts, chartutil.DefaultCapabilities)
	if err != nil {
		return nil, fmt.Errorf("helm: values of release %s: %w", release, err)
	}
	files, err := engine.Render(ch, top)
	if err != nil {
		return nil, fmt.Errorf("helm: render release %s: %w", release, err)
	}
	names := make([]string, 0, len(files))
	for name := range files {
		if strings.HasSuffix(name, "NOTES.txt") {
			continue
		}
		names = append(names, name)
	}
	sort.Strings(names)
	var b strings.Builder
	for _, name := range names {
		doc := strings.TrimSpace(files[name])
		if doc == "" {
			continue
		}
		fmt.Fprintf(&b, "---\n# Source: %s\n%s\n", name, doc)
	}
	return []byte(b.String()), nil
}
