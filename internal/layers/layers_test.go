package layers

import (
	"encoding/json"
	"fmt"
	"io"
	"os/exec"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

const module = "github.com/meridian-gslb/meridian/"

// imports lists the module's packages (tests excluded) and their imports
// of the module's packages, module-relative.
func imports(t *testing.T) map[string][]string {
	t.Helper()
	cmd := exec.Command("go", "list", "-json=ImportPath,Imports", module+"...")
	cmd.Dir = "../.."
	out, err := cmd.Output()
	require.NoError(t, err, "go list")
	got := map[string][]string{}
	dec := json.NewDecoder(strings.NewReader(string(out)))
	for {
		var p struct {
			ImportPath string
			Imports    []string
		}
		if err := dec.Decode(&p); err == io.EOF {
			break
		} else {
			require.NoError(t, err)
		}
		name := strings.TrimPrefix(p.ImportPath, module)
		var ours []string
		for _, i := range p.Imports {
			if rest, ok := strings.CutPrefix(i, module); ok {
				ours = append(ours, rest)
			}
		}
		got[name] = ours
	}
	return got
}

// check returns the imports of pkgs that the table forbids.
func check(table []Layer, frontOnly []string, debt map[string][]string, pkgs map[string][]string) []string {
	exact := map[string]string{}
	uses := map[string][]string{}
	var trees [][2]string // dir, layer
	for _, l := range table {
		uses[l.Name] = l.MayUse
		for _, p := range l.Packages {
			if dir, ok := strings.CutSuffix(p, "/..."); ok {
				trees = append(trees, [2]string{dir, l.Name})
			} else {
				exact[p] = l.Name
			}
		}
	}
	layerOf := func(p string) (string, bool) {
		if l, ok := exact[p]; ok {
			return l, true
		}
		for _, tr := range trees {
			if p == tr[0] || strings.HasPrefix(p, tr[0]+"/") {
				return tr[1], true
			}
		}
		return "", false
	}
	var bad []string
	for _, p := range slices.Sorted(mapsKeys(pkgs)) {
		if p == "internal/layers" {
			continue
		}
		l, ok := layerOf(p)
		if !ok {
			bad = append(bad, fmt.Sprintf("%s is in no layer (internal/layers)", p))
			continue
		}
		for _, i := range pkgs[p] {
			il, ok := layerOf(i)
			switch {
			case !ok:
				continue // reported as a package of its own
			case !slices.Contains(uses[l], il):
				bad = append(bad, fmt.Sprintf("%s (%s) imports %s (%s): %s may use %v", p, l, i, il, l, uses[l]))
			case slices.Contains(frontOnly, i) && l != "front end" && l != "outside" && p != i && !slices.Contains(debt[p], i):
				bad = append(bad, fmt.Sprintf("%s (%s) imports %s, which only front ends may", p, l, i))
			}
		}
	}
	for p, ds := range debt {
		for _, d := range ds {
			if !slices.Contains(pkgs[p], d) {
				bad = append(bad, fmt.Sprintf("debt paid: %s no longer imports %s; remove it from Debt", p, d))
			}
		}
	}
	return bad
}

func mapsKeys(m map[string][]string) func(func(string) bool) {
	return func(yield func(string) bool) {
		for k := range m {
			if !yield(k) {
				return
			}
		}
	}
}

func TestEveryImportFollowsTheLayers(t *testing.T) {
	if testing.Short() {
		t.Skip("go list of the module")
	}
	bad := check(Layers, FrontEndsOnly, Debt, imports(t))
	assert.Empty(t, bad, "imports against the layers:\n%s", strings.Join(bad, "\n"))
}

func TestTheLayerCheckRefuses(t *testing.T) {
	table := []Layer{
		{Name: "foundation", Packages: []string{"internal/model"}},
		{Name: "domain", Packages: []string{"internal/engine", "internal/failover"}, MayUse: []string{"foundation", "domain"}},
		{Name: "edge", Packages: []string{"internal/api", "internal/health"}, MayUse: []string{"foundation", "domain", "edge"}},
		{Name: "front end", Packages: []string{"internal/app"}, MayUse: []string{"foundation", "domain", "edge", "front end"}},
		{Name: "outside", Packages: []string{"bench/..."}, MayUse: []string{"foundation", "outside"}},
	}
	for _, tc := range []struct {
		name string
		pkgs map[string][]string
		debt map[string][]string
		want string
	}{
		{"a package that imports a layer above its own is refused",
			map[string][]string{"internal/model": nil, "internal/failover": {"internal/health"}}, nil, "internal/failover (domain) imports internal/health (edge)"},
		{"a package under a tree of the outside layer is placed, and may not be imported from below",
			map[string][]string{"bench/x/y": nil, "internal/model": {"bench/x/y"}}, nil, "internal/model (foundation) imports bench/x/y (outside)"},
		{"a package in no layer is refused",
			map[string][]string{"internal/newthing": nil}, nil, "internal/newthing is in no layer"},
		{"an edge that imports the API is refused",
			map[string][]string{"internal/health": {"internal/api"}}, nil, "internal/health (edge) imports internal/api, which only front ends may"},
		{"a debt that is paid must leave the list",
			map[string][]string{"internal/health": nil}, map[string][]string{"internal/health": {"internal/api"}}, "debt paid: internal/health no longer imports internal/api"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			bad := check(table, []string{"internal/api"}, tc.debt, tc.pkgs)
			require.Len(t, bad, 1, "%v", bad)
			assert.Contains(t, bad[0], tc.want)
		})
	}
	assert.Empty(t, check(table, []string{"internal/api"}, nil, map[string][]string{
		"internal/app": {"internal/api", "internal/engine"}, "internal/engine": {"internal/model"}, "internal/api": {"internal/engine"},
	}), "a front end may import the API; the API and the domain their layers")
}

func TestThePipelineCoreImportsNoMoreOfOurPackagesThanItsCap(t *testing.T) {
	pkgs := imports(t)
	for p, most := range MaxImports {
		got, ok := pkgs[p]
		require.True(t, ok, "%s is a package of the module", p)
		assert.LessOrEqual(t, len(got), most, "%s imports %d of our packages (cap %d): %v", p, len(got), most, got)
	}
}
