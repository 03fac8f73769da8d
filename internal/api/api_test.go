package api

import (
	"errors"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/meridian-gslb/meridian/internal/config"
	"github.com/meridian-gslb/meridian/internal/engine"
)

func get(t *testing.T, h http.Handler, path string) (int, string) {
	t.Helper()
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, path, nil))
	body, err := io.ReadAll(rec.Body)
	require.NoError(t, err)
	return rec.Code, string(body)
}

func TestEndpoints(t *testing.T) {
	f, err := config.Load("../../deploy/examples/demo.yaml")
	require.NoError(t, err)
	st := &engine.Store{}
	reg := prometheus.NewRegistry()
	c := prometheus.NewCounter(prometheus.CounterOpts{Name: "meridian_test_total", Help: "test"})
	reg.MustRegister(c)
	c.Inc()
	var readyErr error = errors.New("dns listeners not started")
	h := Handler(st, reg, func() error { return readyErr }, func() Status {
		return Status{ConfigPath: "demo.yaml", LastReloadErr: "demo.yaml:3:1: bad"}
	}, slog.New(slog.DiscardHandler), Options{})

	code, body := get(t, h, "/healthz")
	assert.Equal(t, 200, code)
	assert.Equal(t, "ok\n", body)

	code, body = get(t, h, "/readyz")
	assert.Equal(t, 503, code, "not ready until the DNS listeners are up")
	assert.Contains(t, body, "dns listeners not started")

	code, _ = get(t, h, "/")
	assert.Equal(t, 503, code, "no snapshot yet")

	_, err = st.Publish(&f.Desired, engine.Options{})
	require.NoError(t, err)
	readyErr = nil
	code, _ = get(t, h, "/readyz")
	assert.Equal(t, 200, code)

	code, body = get(t, h, "/")
	assert.Equal(t, 200, code)
	assert.Contains(t, body, "app.demo.meridian.test.")
	assert.Contains(t, body, `class="down">down`, "shop's endpoint 192.0.2.60 is down in the config")
	assert.Contains(t, body, "(drained)")
	assert.Contains(t, body, "Last reload failed")

	code, body = get(t, h, "/metrics")
	assert.Equal(t, 200, code)
	assert.True(t, strings.Contains(body, "meridian_test_total 1"), body)

	code, _ = get(t, h, "/nope")
	assert.Equal(t, 404, code)
}

type fakeKeys struct {
	primary string
	all     []string
	ops     []string
}

func (f *fakeKeys) Keys() (string, []string) { return f.primary, f.all }
func (f *fakeKeys) KeyOp(op, key string) error {
	if op != "install" {
		return errors.New(`op "` + op + `" is not allowed`)
	}
	f.ops = append(f.ops, op+" "+key)
	f.all = append(f.all, key)
	return nil
}

func TestKeyEndpoints(t *testing.T) {
	const good = "0123456789abcdef0123"
	keys := &fakeKeys{primary: "k1", all: []string{"k1"}}
	h := Handler(&engine.Store{}, prometheus.NewRegistry(), func() error { return nil }, nil, slog.New(slog.DiscardHandler),
		Options{Keys: keys, Tokens: NewTokens(map[string]string{"ops": good})})
	post := func(remote, token, body string) (int, string) {
		req := httptest.NewRequest(http.MethodPost, "/v1/ring/keys", strings.NewReader(body))
		req.RemoteAddr = remote
		req.Header.Set("Content-Type", "application/json")
		if token != "" {
			req.Header.Set("Authorization", "Bearer "+token)
		}
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		return rec.Code, rec.Body.String()
	}
	tests := []struct {
		name, remote, token, body string
		code                      int
		want                      string
	}{
		{"an install with the token is applied", "192.0.2.9:5000", good, `{"op":"install","key":"k2"}`, 200, `"sha256:`},
		{"a loopback caller without a token is refused (a sidecar proxy connects from 127.0.0.6)", "127.0.0.6:5000", "", `{"op":"install","key":"k3"}`, 401, "missing bearer token"},
		{"a wrong token is refused", "127.0.0.1:5000", "not-the-token-0123456789", `{"op":"install","key":"k3"}`, 401, "invalid bearer token"},
		{"an unknown field is rejected with the allowed ones", "127.0.0.1:5000", good, `{"op":"install","key":"k3","force":true}`, 400, `unknown field \"force\" (allowed: op, key`},
		{"a bad op is rejected with the allowed ones", "127.0.0.1:5000", good, `{"op":"delete","key":"k3"}`, 400, `not allowed`},
		{"an oversized body is rejected", "127.0.0.1:5000", good, `{"op":"install","key":"` + strings.Repeat("A", 20000) + `"}`, 413, "larger than"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			code, body := post(tc.remote, tc.token, tc.body)
			assert.Equal(t, tc.code, code, body)
			assert.Contains(t, body, tc.want)
		})
	}
	assert.Equal(t, []string{"install k2"}, keys.ops, "only the request with the token changed anything")
	code, body := get(t, h, "/v1/ring/keys")
	assert.Equal(t, 200, code, "fingerprints are readable without a token: %s", body)
	assert.NotContains(t, body, `"k1"`, "the key itself is never shown")
	assert.Contains(t, body, fingerprint("k1"))
}
