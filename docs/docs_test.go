// Package docs holds the tests that keep the reference pages in this
// directory in step with the code: every config field is in
// configuration.md and every metric in metrics.md. (The CLI commands are
// checked by cmd/meridian's tests against operations.md, the HTTP routes by
// internal/api's.)
package docs

import (
	"bufio"
	"encoding"
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/meridian-gslb/meridian/internal/config"
	"github.com/meridian-gslb/meridian/internal/kube"
	"github.com/meridian-gslb/meridian/internal/layers"
)

// tableKeys returns the code spans of the first cell of every table row of
// a page ("| `a` / `b` | ..." gives a and b).
func tableKeys(t *testing.T, page string) map[string]bool {
	t.Helper()
	f, err := os.Open(page)
	require.NoError(t, err)
	defer f.Close()
	span := regexp.MustCompile("`([^`]+)`")
	out := map[string]bool{}
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		l := sc.Text()
		if !strings.HasPrefix(l, "| `") {
			continue
		}
		first, _, _ := strings.Cut(l[1:], " | ")
		for _, m := range span.FindAllStringSubmatch(first, -1) {
			out[m[1]] = true
		}
	}
	require.NoError(t, sc.Err())
	require.NotEmpty(t, out, "%s has tables", page)
	return out
}

// leaf reports whether a config type is one value in YAML (a scalar, a
// duration, anything that decodes itself) rather than a section.
func leaf(t reflect.Type) bool {
	p := reflect.PointerTo(t)
	return t == reflect.TypeFor[time.Duration]() ||
		p.Implements(reflect.TypeFor[encoding.TextUnmarshaler]()) ||
		p.Implements(reflect.TypeFor[interface{ UnmarshalYAML([]byte) error }]()) ||
		p.Implements(reflect.TypeFor[interface{ UnmarshalYAML(func(any) error) error }]()) ||
		t.Kind() != reflect.Struct
}

// configPaths walks a config type by its yaml tags: every field that holds
// one value, as a dotted path with [] for list items
// (services[].health_check.interval). Sections (structs, lists of structs)
// are descended into, not listed; maps and lists of scalars are values.
func configPaths(t reflect.Type, prefix string, out *[]string) {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if t.Kind() == reflect.Slice {
		e := t.Elem()
		for e.Kind() == reflect.Pointer {
			e = e.Elem()
		}
		if !leaf(e) {
			configPaths(e, prefix+"[]", out)
			return
		}
	}
	if leaf(t) {
		*out = append(*out, prefix)
		return
	}
	for f := range t.Fields() {
		if !f.IsExported() {
			continue
		}
		name, opts, _ := strings.Cut(f.Tag.Get("yaml"), ",")
		switch {
		case name == "-":
			continue
		case strings.Contains(opts, "inline"):
			configPaths(f.Type, prefix, out)
			continue
		case name == "":
			name = strings.ToLower(f.Name) // the YAML decoder's default
		}
		if prefix != "" {
			name = prefix + "." + name
		}
		configPaths(f.Type, name, out)
	}
}

// TestConfigurationDocumentsEveryField: every field of config.File, by its
// full path, is the first cell of a row of configuration.md, and every path
// there is a field (a renamed field leaves no stale row).
func TestConfigurationDocumentsEveryField(t *testing.T) {
	var fields []string
	configPaths(reflect.TypeFor[config.File](), "", &fields)
	require.Greater(t, len(fields), 100, "the walk finds the config's fields")
	require.Contains(t, fields, "services[].health_check.interval")
	require.Contains(t, fields, "server.dns.listen")
	documented := tableKeys(t, "configuration.md")
	for _, p := range fields {
		assert.True(t, documented[p], "config field %s is documented in docs/configuration.md (a table row whose first cell names `%s`)", p, p)
	}
	roots := map[string]bool{}
	for _, p := range fields {
		root, _, _ := strings.Cut(p, ".")
		roots[strings.TrimSuffix(root, "[]")] = true
	}
	for k := range documented {
		root, _, ok := strings.Cut(k, ".")
		if ok && roots[strings.TrimSuffix(root, "[]")] {
			assert.True(t, slices.Contains(fields, k), "docs/configuration.md documents %s, which is not a field of config.File", k)
		}
	}
}

// metricOpts are the prometheus option structs whose Namespace, Subsystem
// and Name make a metric's name.
var metricOpts = map[string]bool{"Opts": true, "CounterOpts": true, "GaugeOpts": true, "HistogramOpts": true, "SummaryOpts": true}

// knownSelectors resolves the constants from other modules that metric
// names are built from.
var knownSelectors = map[string]string{"plugin.Namespace": "coredns"}

// declaredMetrics scans the Go sources (not the tests) under the given
// directories for the metrics they declare: every prometheus.XxxOpts
// literal (Namespace_Subsystem_Name, each a string literal, a constant of
// the same package or one of knownSelectors) and the first argument of
// every prometheus.NewDesc call. It does not see a name computed at run
// time or built with another helper; no package does that today, and a
// metric declared so is missed here (declare it with one of these forms).
func declaredMetrics(t *testing.T, dirs ...string) map[string]string {
	t.Helper()
	out := map[string]string{} // name → file
	for _, dir := range dirs {
		pkgs := map[string][]*ast.File{}
		fset := token.NewFileSet()
		err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
			if err != nil || d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
				return err
			}
			f, err := parser.ParseFile(fset, path, nil, 0)
			if err != nil {
				return err
			}
			pkgs[filepath.Dir(path)] = append(pkgs[filepath.Dir(path)], f)
			return nil
		})
		require.NoError(t, err)
		for _, files := range pkgs {
			consts := map[string]string{}
			for _, f := range files {
				for _, d := range f.Decls {
					g, ok := d.(*ast.GenDecl)
					if !ok || g.Tok != token.CONST {
						continue
					}
					for _, s := range g.Specs {
						vs := s.(*ast.ValueSpec)
						for i, n := range vs.Names {
							if i < len(vs.Values) {
								if v, ok := stringLit(vs.Values[i]); ok {
									consts[n.Name] = v
								}
							}
						}
					}
				}
			}
			value := func(e ast.Expr) string {
				if v, ok := stringLit(e); ok {
					return v
				}
				switch e := e.(type) {
				case *ast.Ident:
					if v, ok := consts[e.Name]; ok {
						return v
					}
				case *ast.SelectorExpr:
					if x, ok := e.X.(*ast.Ident); ok {
						if v, ok := knownSelectors[x.Name+"."+e.Sel.Name]; ok {
							return v
						}
					}
				}
				t.Errorf("%s: a metric name part is not a string literal or a known constant; teach declaredMetrics about it", fset.Position(e.Pos()))
				return ""
			}
			for _, f := range files {
				ast.Inspect(f, func(n ast.Node) bool {
					switch n := n.(type) {
					case *ast.CompositeLit:
						sel, ok := n.Type.(*ast.SelectorExpr)
						if !ok || !metricOpts[sel.Sel.Name] || !isIdent(sel.X, "prometheus") {
							return true
						}
						parts := map[string]string{}
						for _, el := range n.Elts {
							if kv, ok := el.(*ast.KeyValueExpr); ok {
								if k, ok := kv.Key.(*ast.Ident); ok && (k.Name == "Namespace" || k.Name == "Subsystem" || k.Name == "Name") {
									parts[k.Name] = value(kv.Value)
								}
							}
						}
						var name []string
						for _, k := range []string{"Namespace", "Subsystem", "Name"} {
							if parts[k] != "" {
								name = append(name, parts[k])
							}
						}
						out[strings.Join(name, "_")] = fset.Position(n.Pos()).String()
					case *ast.CallExpr:
						sel, ok := n.Fun.(*ast.SelectorExpr)
						if ok && sel.Sel.Name == "NewDesc" && isIdent(sel.X, "prometheus") && len(n.Args) > 0 {
							out[value(n.Args[0])] = fset.Position(n.Pos()).String()
						}
					}
					return true
				})
			}
		}
	}
	return out
}

func stringLit(e ast.Expr) (string, bool) {
	b, ok := e.(*ast.BasicLit)
	if !ok || b.Kind != token.STRING {
		return "", false
	}
	s, err := strconv.Unquote(b.Value)
	return s, err == nil
}

func isIdent(e ast.Expr, name string) bool {
	id, ok := e.(*ast.Ident)
	return ok && id.Name == name
}

// TestMetricsDocumentsEveryMetric: every metric the code declares is a row
// of metrics.md, and every row is a metric the code declares.
func TestMetricsDocumentsEveryMetric(t *testing.T) {
	declared := declaredMetrics(t, "../internal", "../providers", "../plugin", "../cmd")
	require.Contains(t, declared, "meridian_dns_queries_total", "the scan finds the DNS server's metrics")
	require.Contains(t, declared, "meridian_kube_member_ready", "the scan finds metrics declared with prometheus.NewDesc")
	require.Contains(t, declared, "coredns_meridian_queries_total", "the scan finds the plugin's namespaced metrics")
	// The CoreDNS plugin registers the serving pipeline's and the ring
	// followers' metrics again
	// with the prefix coredns_ (plugin/meridian/meridian.go,
	// pipelineMetrics, followMetrics): each is a coredns_meridian_ metric too.
	plugin, err := os.ReadFile("../plugin/meridian/meridian.go")
	require.NoError(t, err)
	require.Contains(t, string(plugin), `serving.NewMetrics(prometheus.WrapRegistererWithPrefix(plugin.Namespace+"_"`, "the plugin still prefixes the pipeline's metrics")
	require.Contains(t, string(plugin), `follow.NewMetrics(prometheus.WrapRegistererWithPrefix(plugin.Namespace+"_"`, "the plugin still prefixes the ring followers' metrics")
	// It sends no notifications (the serve nodes' writer does).
	require.NotContains(t, string(plugin), "meridian/internal/notify\"", "the plugin sends no notifications (it does not import internal/notify)")
	prefixed := map[string]string{}
	for name, at := range declared {
		if strings.Contains(at, "internal/serving/") || strings.Contains(at, "internal/follow/") {
			prefixed["coredns_"+name] = at + " (registered by the CoreDNS plugin with the prefix coredns_)"
		}
	}
	maps.Copy(declared, prefixed)
	documented := tableKeys(t, "metrics.md")
	for name, at := range declared {
		assert.True(t, documented[name], "metric %s (declared at %s) is in the table of docs/metrics.md", name, at)
	}
	for name := range documented {
		if strings.HasPrefix(name, "meridian_") || strings.HasPrefix(name, "coredns_meridian_") {
			_, ok := declared[name]
			assert.True(t, ok, "docs/metrics.md lists %s, which no package declares", name)
		}
	}
}

// TestArchitectureListsEveryPackage: every package of the layer table
// (internal/layers) has its row in architecture.md, with its layer.
func TestArchitectureListsEveryPackage(t *testing.T) {
	b, err := os.ReadFile("architecture.md")
	require.NoError(t, err)
	page := string(b)
	for _, l := range layers.Layers {
		for _, p := range l.Packages {
			if strings.HasSuffix(p, "/...") || l.Name == "outside" || strings.HasPrefix(p, "deploy/") {
				continue
			}
			assert.Regexp(t, regexp.MustCompile("(?m)^\\| `"+regexp.QuoteMeta(p)+"`[^|]*\\| "+regexp.QuoteMeta(l.Name)+" \\|"), page,
				"architecture.md has no row for %s in layer %q (| `%s` | %s | what it does |)", p, l.Name, p, l.Name)
		}
	}
}

func TestKubernetesDocumentsEveryAnnotation(t *testing.T) {
	b, err := os.ReadFile("kubernetes.md")
	require.NoError(t, err)
	for _, anno := range kube.InputAnnotations {
		assert.Contains(t, string(b), "| `"+anno+"` |", "kubernetes.md's annotation table lacks a row for %s", anno)
	}
}
