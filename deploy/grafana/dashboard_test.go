package grafana_test

import (
	"bufio"
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

const dashboardFile = "meridian.json"

type gridPos struct {
	H, W, X, Y int
}

type panel struct {
	ID         int             `json:"id"`
	Type       string          `json:"type"`
	Title      string          `json:"title"`
	GridPos    *gridPos        `json:"gridPos"`
	Datasource json.RawMessage `json:"datasource"`
	Targets    []struct {
		Expr  string `json:"expr"`
		RefID string `json:"refId"`
	} `json:"targets"`
	Panels []panel `json:"panels"` // collapsed rows
}

type dashboard struct {
	Title         string  `json:"title"`
	UID           string  `json:"uid"`
	SchemaVersion int     `json:"schemaVersion"`
	Panels        []panel `json:"panels"`
	Templating    struct {
		List []variable `json:"list"`
	} `json:"templating"`
}

type variable struct {
	Name  string `json:"name"`
	Type  string `json:"type"`
	Query any    `json:"query"`
}

func load(t *testing.T) ([]byte, dashboard) {
	t.Helper()
	raw, err := os.ReadFile(dashboardFile)
	require.NoError(t, err)
	require.True(t, json.Valid(raw), "%s is valid JSON", dashboardFile)
	var d dashboard
	require.NoError(t, json.Unmarshal(raw, &d))
	return raw, d
}

// allPanels flattens rows.
func allPanels(ps []panel) []panel {
	var out []panel
	for _, p := range ps {
		out = append(out, p)
		out = append(out, allPanels(p.Panels)...)
	}
	return out
}

func TestDashboardShape(t *testing.T) {
	_, d := load(t)
	assert.NotEmpty(t, d.Title)
	assert.Regexp(t, `^[a-zA-Z0-9_-]{1,40}$`, d.UID, "a stable uid Grafana accepts")
	assert.GreaterOrEqual(t, d.SchemaVersion, 36)
	require.NotEmpty(t, d.Panels)

	ids := map[int]string{}
	type cell struct{ x, y int }
	taken := map[cell]string{}
	for _, p := range allPanels(d.Panels) {
		assert.Positive(t, p.ID, "panel %q has an id", p.Title)
		if other, dup := ids[p.ID]; dup {
			t.Errorf("panel id %d is used by %q and %q", p.ID, other, p.Title)
		}
		ids[p.ID] = p.Title
		assert.NotEmpty(t, p.Title, "panel %d has a title", p.ID)
		if !assert.NotNil(t, p.GridPos, "panel %q has a gridPos", p.Title) {
			continue
		}
		g := *p.GridPos
		assert.True(t, g.W > 0 && g.H > 0 && g.X >= 0 && g.Y >= 0 && g.X+g.W <= 24, "panel %q: gridPos %+v fits the 24-column grid", p.Title, g)
		for x := g.X; x < g.X+g.W; x++ {
			for y := g.Y; y < g.Y+g.H; y++ {
				if other, ok := taken[cell{x, y}]; ok {
					t.Errorf("panels %q and %q overlap at (%d,%d)", other, p.Title, x, y)
					return
				}
				taken[cell{x, y}] = p.Title
			}
		}
		if p.Type == "row" {
			continue
		}
		assert.JSONEq(t, `{"type":"prometheus","uid":"${DS_PROMETHEUS}"}`, string(p.Datasource), "panel %q uses the templated Prometheus data source", p.Title)
		assert.NotEmpty(t, p.Targets, "panel %q has a query", p.Title)
		for _, tg := range p.Targets {
			assert.NotEmpty(t, strings.TrimSpace(tg.Expr), "panel %q target %s has an expression", p.Title, tg.RefID)
		}
	}

	ds := slices.IndexFunc(d.Templating.List, func(v variable) bool { return v.Name == "DS_PROMETHEUS" })
	require.GreaterOrEqual(t, ds, 0, "the data source is the template variable DS_PROMETHEUS")
	assert.Equal(t, "datasource", d.Templating.List[ds].Type)
	assert.Equal(t, "prometheus", d.Templating.List[ds].Query)
}

func TestDashboardHasNoExternalLinks(t *testing.T) {
	raw, _ := load(t)
	for _, u := range regexp.MustCompile(`(?i)https?://[^"\s]*`).FindAllString(string(raw), -1) {
		t.Errorf("the dashboard links to nothing outside Grafana; found %s", u)
	}
}

// documentedMetrics reads the metrics table of docs/metrics.md: metric
// name → type.
func documentedMetrics(t *testing.T) map[string]string {
	t.Helper()
	f, err := os.Open(filepath.Join("..", "..", "docs", "metrics.md"))
	require.NoError(t, err)
	defer f.Close()
	row := regexp.MustCompile("^\\| `(meridian_[a-z_]+)` \\| ([a-z]+) \\|")
	out := map[string]string{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if m := row.FindStringSubmatch(sc.Text()); m != nil {
			out[m[1]] = m[2]
		}
	}
	require.NoError(t, sc.Err())
	require.NotEmpty(t, out, "docs/metrics.md has a metrics table")
	return out
}

// expressions returns every PromQL string of the dashboard: panel targets,
// annotations and template variable queries ("expr", "query", "definition").
func expressions(v any) []string {
	var out []string
	switch v := v.(type) {
	case map[string]any:
		for k, x := range v {
			if s, ok := x.(string); ok && (k == "expr" || k == "query" || k == "definition") {
				out = append(out, s)
				continue
			}
			out = append(out, expressions(x)...)
		}
	case []any:
		for _, x := range v {
			out = append(out, expressions(x)...)
		}
	}
	return out
}

func TestDashboardUsesOnlyDocumentedMetrics(t *testing.T) {
	raw, _ := load(t)
	var doc any
	require.NoError(t, json.Unmarshal(raw, &doc))
	documented := documentedMetrics(t)
	metric := regexp.MustCompile(`meridian_[a-z_]+`)
	used := map[string]bool{}
	for _, expr := range expressions(doc) {
		for _, name := range metric.FindAllString(expr, -1) {
			base := name
			for _, suffix := range []string{"_bucket", "_sum", "_count"} {
				if b, ok := strings.CutSuffix(name, suffix); ok {
					base = b
					assert.Equal(t, "histogram", documented[base], "%s in %q: %s is a histogram in docs/metrics.md", name, expr, base)
					break
				}
			}
			typ, ok := documented[base]
			assert.True(t, ok, "metric %s (in %q) is in the metrics table of docs/metrics.md", base, expr)
			if ok && typ == "histogram" && base == name {
				t.Errorf("%s is a histogram: query %s_bucket, _sum or _count (in %q)", name, name, expr)
			}
			used[base] = true
		}
	}
	for _, m := range []string{
		"meridian_dns_queries_total", "meridian_dns_request_duration_seconds", "meridian_endpoint_up", "meridian_cluster_state",
		"meridian_failover_events_total", "meridian_failover_detection_seconds", "meridian_probe_duration_seconds",
		"meridian_probe_results_total", "meridian_ring_members", "meridian_ring_gossip_bytes_total", "meridian_provider_syncs_total",
		"meridian_provider_decision_to_applied_seconds", "meridian_kube_member_ready", "meridian_admin_overrides", "meridian_config_reloads_total",
	} {
		assert.True(t, used[m], "the dashboard shows %s", m)
	}
}
