package docs

import (
	"fmt"
	"math"
	"os"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// defaultFailoverMedians reads the medians of performance.md's "Failover
// at the default settings" table: killed, blackholed (hanging), restart.
func defaultFailoverMedians(t *testing.T) (killed, hanging, back float64) {
	t.Helper()
	b, err := os.ReadFile("performance.md")
	require.NoError(t, err)
	_, sec, ok := strings.Cut(string(b), "## Failover at the default settings")
	require.True(t, ok)
	median := func(row string) float64 {
		m := regexp.MustCompile(`(?m)^\| ` + regexp.QuoteMeta(row) + `[^|]*\| ([0-9.]+) s \|`).FindStringSubmatch(sec)
		require.NotNil(t, m, "performance.md has the row %q", row)
		v, err := strconv.ParseFloat(m[1], 64)
		require.NoError(t, err)
		return v
	}
	return median("backend killed"), median("backend blackholed"), median("restart after a single failure")
}

// about is how the docs quote a median: "about 2–3 s" (the whole seconds
// around it).
func about(v float64) string {
	return fmt.Sprintf("%d–%d s", int(math.Floor(v)), int(math.Ceil(v)))
}

func TestTheFailoverTimingsQuotedComeFromPerformanceMD(t *testing.T) {
	killed, hanging, back := defaultFailoverMedians(t)
	space := regexp.MustCompile(`\s+`)
	for _, page := range []string{"../README.md", "operations.md"} {
		b, err := os.ReadFile(page)
		require.NoError(t, err)
		text := space.ReplaceAllString(string(b), " ")
		for what, v := range map[string]float64{
			"a killed endpoint leaves every node's answers in about ": killed,
			"a hanging one in about ":                                 hanging,
			"a recovered one is back about ":                          back,
		} {
			assert.Contains(t, text, what+about(v), "%s: %q must quote performance.md's median %.2f s as %q", page, what, v, about(v))
		}
	}
}
