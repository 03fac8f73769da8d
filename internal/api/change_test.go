package api

import (
	"encoding/json"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Every route that is not a GET, of every option, refuses a request without
// a token, with a wrong token, and with a content type other than JSON, and
// says what is missing and what is allowed. The list comes from the routes
// Handler registers, so a new route is checked without touching this test.
func TestEveryChangingRouteNeedsATokenAndJSON(t *testing.T) {
	opts := everyOption(t)
	var changing []string
	for _, p := range Routes(opts) {
		method, _, _ := strings.Cut(p, " ")
		if method != http.MethodGet {
			changing = append(changing, p)
		}
	}
	require.NotEmpty(t, changing)
	assert.ElementsMatch(t, changing, Changes(opts), "every non-GET route is registered as a change (behind the guard)")
	for _, want := range []string{"POST /v1/admin/overrides", "DELETE /v1/admin/overrides/{id}", "POST /v1/ring/keys", "POST /v1/demo/backends/{addr}/{action}"} {
		assert.Contains(t, changing, want)
	}

	body := map[string]string{
		"POST /v1/admin/overrides": `{"kind":"drain","cluster":"east","reason":"x"}`,
		"POST /v1/ring/keys":       `{"op":"install","key":"k9"}`,
	}
	cases := []struct {
		name, token, contentType, remote string
		code                             int
		says                             []string
		reason                           string
	}{
		{name: "a request without a token is refused", contentType: "application/json", code: 401,
			says: []string{"missing bearer token", "Authorization: Bearer TOKEN", "server.admin.token_file"}, reason: RefusedMissingToken},
		{name: "a request from a loopback sidecar without a token is refused", contentType: "application/json", remote: "127.0.0.6:15001", code: 401,
			says: []string{"missing bearer token"}, reason: RefusedMissingToken},
		{name: "a request with a wrong token is refused", token: "not-the-token-0123456789", contentType: "application/json", code: 401,
			says: []string{"invalid bearer token"}, reason: RefusedInvalidToken},
		{name: "a text/plain request with the token is refused (a web page can send one)", token: oaToken, contentType: "text/plain", code: 415,
			says: []string{`Content-Type "text/plain" is not allowed`, "allowed: application/json"}, reason: RefusedContentType},
		{name: "a form with the token is refused", token: oaToken, contentType: "application/x-www-form-urlencoded", code: 415,
			says: []string{"allowed: application/json"}, reason: RefusedContentType},
		{name: "a request with the token and no content type is refused", token: oaToken, code: 415,
			says: []string{"Content-Type is missing", "allowed: application/json"}, reason: RefusedContentType},
	}
	param := regexp.MustCompile(`\{[^}]+\}`)
	for _, pattern := range changing {
		method, path, _ := strings.Cut(pattern, " ")
		for _, tc := range cases {
			t.Run(pattern+": "+tc.name, func(t *testing.T) {
				reg := prometheus.NewRegistry()
				fa := &fakeAdmin{}
				keys := &fakeKeys{primary: "k1", all: []string{"k1"}}
				demo := &fakeDemo{running: map[string]bool{"127.0.0.1:18081": false}}
				o := opts
				o.Admin, o.Keys, o.Demo, o.Metrics = fa, keys, demo, NewMetrics(reg)
				h := Handler(explainSource(t), reg, func() error { return nil }, nil, slog.New(slog.DiscardHandler), o)
				target := param.ReplaceAllString(path, "x")
				if strings.HasPrefix(path, "/v1/demo/") {
					target = "/v1/demo/backends/127.0.0.1:18081/start"
				}
				req := httptest.NewRequest(method, target, strings.NewReader(body[pattern]))
				if tc.remote != "" {
					req.RemoteAddr = tc.remote
				}
				if tc.token != "" {
					req.Header.Set("Authorization", "Bearer "+tc.token)
				}
				if tc.contentType != "" {
					req.Header.Set("Content-Type", tc.contentType)
				}
				rec := httptest.NewRecorder()
				h.ServeHTTP(rec, req)
				require.Equal(t, tc.code, rec.Code, rec.Body.String())
				var e ErrorBody
				require.NoError(t, json.Unmarshal(rec.Body.Bytes(), &e), "a JSON error body")
				for _, s := range tc.says {
					assert.Contains(t, e.Error, s)
				}
				assert.Equal(t, 1.0, testutil.ToFloat64(o.Metrics.ChangesRefused.WithLabelValues(tc.reason)))
				assert.Empty(t, fa.ovs, "no override was added")
				assert.Empty(t, keys.ops, "no key operation ran")
				assert.False(t, demo.running["127.0.0.1:18081"], "the demo backend was not started")
			})
		}
		t.Run(pattern+": with the token and JSON the request reaches its handler", func(t *testing.T) {
			mux, _ := oaServer(t, nil)
			target := param.ReplaceAllString(path, "x")
			if strings.HasPrefix(path, "/v1/demo/") {
				target = "/v1/demo/backends/127.0.0.1:18081/stop"
			}
			req := httptest.NewRequest(method, target, strings.NewReader(body[pattern]))
			req.Header.Set("Authorization", "Bearer "+oaToken)
			req.Header.Set("Content-Type", "application/json; charset=utf-8")
			rec := httptest.NewRecorder()
			mux.ServeHTTP(rec, req)
			assert.NotContains(t, []int{401, 403, 415}, rec.Code, rec.Body.String())
		})
	}
}

func TestChangesAreDisabledWithoutTokens(t *testing.T) {
	opts := everyOption(t)
	opts.Tokens = nil
	h := Handler(explainSource(t), prometheus.NewRegistry(), func() error { return nil }, nil, slog.New(slog.DiscardHandler), opts)
	for _, pattern := range Changes(opts) {
		method, path, _ := strings.Cut(pattern, " ")
		req := httptest.NewRequest(method, regexp.MustCompile(`\{[^}]+\}`).ReplaceAllString(path, "x"), strings.NewReader("{}"))
		req.Header.Set("Authorization", "Bearer "+oaToken)
		req.Header.Set("Content-Type", "application/json")
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		assert.Equal(t, http.StatusForbidden, rec.Code, pattern)
		assert.Contains(t, rec.Body.String(), "server.admin.token_file", pattern)
	}
}

func TestAChangingRouteCannotBeRegisteredWithoutTheGuard(t *testing.T) {
	for _, pattern := range []string{"POST /v1/x", "DELETE /v1/x/{id}", "PUT /v1/x", "PATCH /v1/x", "/v1/any-method"} {
		r := newRouter(nil, nil, nil)
		assert.Panics(t, func() { r.HandleFunc(pattern, func(http.ResponseWriter, *http.Request) {}) }, pattern)
	}
	r := newRouter(nil, nil, nil)
	assert.Panics(t, func() { r.change("GET /v1/x", func(http.ResponseWriter, *http.Request, string) {}) }, "a change needs a changing method")
	assert.NotPanics(t, func() { r.HandleFunc("GET /v1/x", func(http.ResponseWriter, *http.Request) {}) })
}

// openapi.yaml says of every change that it needs the token and JSON.
func TestOpenAPIDocumentsTheGuardOfEveryChange(t *testing.T) {
	s := loadSpec(t)
	ops := s.operations()
	for _, pattern := range Changes(everyOption(t)) {
		op := ops[routeKey(pattern)]
		require.NotNil(t, op, pattern)
		assert.NotEmpty(t, op["security"], "%s names the adminToken security scheme", pattern)
		responses := asMap(op["responses"])
		for _, code := range []string{"401", "403", "415"} {
			assert.Contains(t, responses, code, "%s documents %s", pattern, code)
		}
	}
}
