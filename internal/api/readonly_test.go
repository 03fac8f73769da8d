package api

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestReadOnlyRefusesEveryChange(t *testing.T) {
	called := 0
	h := ReadOnly(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { called++ }))
	for _, m := range []string{"POST", "PUT", "PATCH", "DELETE"} {
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest(m, "/v1/admin/overrides", strings.NewReader("{}")))
		assert.Equal(t, http.StatusMethodNotAllowed, rec.Code, m)
		assert.Contains(t, rec.Body.String(), "read-only")
	}
	assert.Zero(t, called, "no change reached the handler")
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest("GET", "/v1/admin/overrides", nil))
	assert.Equal(t, 1, called)
}
