package prometheus_test

import (
	"fmt"
	"os"
	"os/exec"
	"regexp"
	"testing"

	"github.com/goccy/go-yaml"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

const (
	rulesFile = "meridian-alerts.yaml"
	testsFile = "meridian-alerts_test.yaml"
)

type rulesDoc struct {
	Groups []struct {
		Name  string `yaml:"name"`
		Rules []struct {
			Alert string `yaml:"alert"`
			Expr  string `yaml:"expr"`
		} `yaml:"rules"`
	} `yaml:"groups"`
}

type testsDoc struct {
	Tests []struct {
		AlertRuleTest []struct {
			Alertname string `yaml:"alertname"`
			ExpAlerts []any  `yaml:"exp_alerts"`
		} `yaml:"alert_rule_test"`
	} `yaml:"tests"`
}

func readRules(t *testing.T) rulesDoc {
	t.Helper()
	b, err := os.ReadFile(rulesFile)
	require.NoError(t, err)
	var d rulesDoc
	require.NoError(t, yaml.Unmarshal(b, &d))
	require.NotEmpty(t, d.Groups)
	return d
}

// promtool finds Debian's promtool (package prometheus; `make unit`
// installs it with scripts/deps.sh). Without it the test is skipped,
// saying so.
func promtool(t *testing.T) string {
	t.Helper()
	p, err := exec.LookPath("promtool")
	if err != nil {
		if os.Getenv("CI") != "" {
			t.Fatal("promtool not found and CI is set: the alert rules would go untested (`make unit` installs it: scripts/deps.sh promtool=prometheus)")
		}
		t.Skip("promtool not found: install Debian's prometheus package (apt-get install prometheus; `make unit` runs scripts/deps.sh promtool=prometheus)")
	}
	return p
}

func TestPromtoolChecksTheRules(t *testing.T) {
	bin := promtool(t)
	n := 0
	for _, g := range readRules(t).Groups {
		n += len(g.Rules)
	}
	out, err := exec.Command(bin, "check", "rules", rulesFile).CombinedOutput()
	require.NoError(t, err, "promtool check rules:\n%s", out)
	assert.Contains(t, string(out), fmt.Sprintf("SUCCESS: %d rules found", n))
}

func TestPromtoolRulesUnitTestsPass(t *testing.T) {
	bin := promtool(t)
	out, err := exec.Command(bin, "test", "rules", testsFile).CombinedOutput()
	require.NoError(t, err, "promtool test rules:\n%s", out)
	assert.Contains(t, string(out), "SUCCESS")
}

// TestEveryAlertHasAFiringTest: each alert of the rules is expected to fire
// in at least one case of the unit tests (MeridianFailover included), so a
// rule that can never fire fails promtool test rules.
func TestEveryAlertHasAFiringTest(t *testing.T) {
	b, err := os.ReadFile(testsFile)
	require.NoError(t, err)
	var d testsDoc
	require.NoError(t, yaml.Unmarshal(b, &d))
	fires := map[string]bool{}
	for _, tc := range d.Tests {
		for _, a := range tc.AlertRuleTest {
			if len(a.ExpAlerts) > 0 {
				fires[a.Alertname] = true
			}
		}
	}
	var alerts []string
	for _, g := range readRules(t).Groups {
		for _, r := range g.Rules {
			alerts = append(alerts, r.Alert)
			assert.True(t, fires[r.Alert], "alert %s fires in a case of %s", r.Alert, testsFile)
		}
	}
	require.Contains(t, alerts, "MeridianFailover")
}

// TestRulesUseDocumentedMetrics: every metric in an expression is a row of
// docs/metrics.md (which docs/docs_test.go keeps in step with the code).
func TestRulesUseDocumentedMetrics(t *testing.T) {
	doc, err := os.ReadFile("../../docs/metrics.md")
	require.NoError(t, err)
	documented := map[string]bool{}
	for _, m := range regexp.MustCompile("(?m)^\\| `((?:coredns_)?meridian_[a-z0-9_]+)`").FindAllStringSubmatch(string(doc), -1) {
		documented[m[1]] = true
	}
	require.NotEmpty(t, documented)
	metric := regexp.MustCompile(`\b(?:coredns_)?meridian_[a-z0-9_]+\b`)
	for _, g := range readRules(t).Groups {
		for _, r := range g.Rules {
			for _, m := range metric.FindAllString(r.Expr, -1) {
				assert.True(t, documented[m], "alert %s uses %s, which docs/metrics.md does not list", r.Alert, m)
			}
		}
	}
}
