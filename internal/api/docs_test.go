package api

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestOperationsDocumentsEveryRoute: every route Handler serves (with every
// option set, as in TestOpenAPIDocumentsEveryRoute) is named, as "`METHOD
// /path`", in the HTTP endpoints section of docs/operations.md.
func TestOperationsDocumentsEveryRoute(t *testing.T) {
	raw, err := os.ReadFile(filepath.Join("..", "..", "docs", "operations.md"))
	require.NoError(t, err)
	_, rest, ok := strings.Cut(string(raw), "\n## HTTP endpoints\n")
	require.True(t, ok, "docs/operations.md has a section \"HTTP endpoints\"")
	section, _, _ := strings.Cut(rest, "\n## ")
	routes := Routes(everyOption(t))
	require.Contains(t, routes, "POST /v1/admin/overrides", "every option is set, so the conditional routes are listed")
	for _, r := range routes {
		doc := strings.Replace(r, "{$}", "", 1) // "GET /{$}" is the page at "/" only
		assert.True(t, strings.Contains(section, "`"+doc+"`"), "route %s is in the HTTP endpoints table of docs/operations.md", r)
	}
}
