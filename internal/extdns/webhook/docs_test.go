package webhook

import (
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestTheDocsListEveryRoute: every route in Routes is served, and named as
// "`METHOD /path`" in the "Webhook routes" section of docs/externaldns.md.
func TestTheDocsListEveryRoute(t *testing.T) {
	raw, err := os.ReadFile(filepath.Join("..", "..", "..", "docs", "externaldns.md"))
	require.NoError(t, err)
	_, rest, ok := strings.Cut(string(raw), "\n## Webhook routes\n")
	require.True(t, ok, "docs/externaldns.md has a section \"Webhook routes\"")
	section, _, _ := strings.Cut(rest, "\n## ")
	fx := newFixture(t)
	for _, r := range Routes {
		assert.Contains(t, section, "`"+r+"`", "route %s is in the table of docs/externaldns.md", r)
		method, path, _ := strings.Cut(r, " ")
		body := ""
		if method == "POST" {
			body = "[]"
			if path == "/records" {
				body = "{}"
			}
		}
		code, _, _ := fx.do(t, method, path, "east", eastToken, body)
		assert.Contains(t, []int{http.StatusOK, http.StatusNoContent}, code, "route %s is served", r)
	}
}
