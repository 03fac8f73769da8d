package api

import (
	"bytes"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestHostsAllowList(t *testing.T) {
	hosts := NewHosts([]string{"Status.Example.com", "*.gslb.example.net", " "})
	for _, tc := range []struct {
		name, host string
		want       bool
	}{
		{"the kubelet's probe with the pod IP and port is allowed", "10.244.1.7:8080", true},
		{"an IPv6 literal with a port is allowed", "[fd00::7]:8080", true},
		{"an IPv6 literal without a port is allowed", "[fd00::7]", true},
		{"loopback is allowed", "127.0.0.1:8080", true},
		{"localhost is allowed", "localhost:8080", true},
		{"a name under .localhost is allowed", "meridian.localhost", true},
		{"a request without Host is allowed", "", true},
		{"a configured name is allowed whatever its case and port", "status.example.COM:443", true},
		{"a configured name with a trailing dot is allowed", "status.example.com.", true},
		{"a name under a wildcard is allowed", "east.gslb.example.net:8080", true},
		{"the wildcard's own apex is not", "gslb.example.net", false},
		{"a rebinding attacker's name is refused", "attacker.example:8080", false},
		{"a name that only ends like a configured one is refused", "evilstatus.example.com", false},
		{"localhost as a label of another name is refused", "localhost.attacker.example", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			assert.Equal(t, tc.want, hosts.Allows(tc.host))
		})
	}
	t.Run("a star allows every name", func(t *testing.T) {
		assert.True(t, NewHosts([]string{"*"}).Allows("anything.example"))
	})
	t.Run("with no list only addresses and localhost are allowed", func(t *testing.T) {
		assert.False(t, NewHosts(nil).Allows("meridian.meridian.svc"))
		assert.True(t, NewHosts(nil).Allows("10.0.0.1"))
	})
}

func TestProtect(t *testing.T) {
	m := NewMetrics(prometheus.NewRegistry())
	var logs bytes.Buffer
	log := slog.New(slog.NewTextHandler(&logs, nil))
	h := Protect(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/boom" {
			panic("nil map somewhere")
		}
		w.Write([]byte("ok"))
	}), NewHosts(nil), m, log)
	serve := func(host, path string) *httptest.ResponseRecorder {
		req := httptest.NewRequest(http.MethodGet, path, nil)
		req.Host = host
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		return rec
	}
	t.Run("a request to an address is served", func(t *testing.T) {
		assert.Equal(t, http.StatusOK, serve("10.0.0.1:8080", "/v1/admin/overrides").Code)
	})
	t.Run("a request with another Host gets 421 naming the setting, and is counted", func(t *testing.T) {
		rec := serve("attacker.example", "/v1/admin/overrides")
		assert.Equal(t, http.StatusMisdirectedRequest, rec.Code)
		assert.Contains(t, rec.Body.String(), `Host \"attacker.example\" is not served here`)
		assert.Contains(t, rec.Body.String(), "server.http.allowed_hosts")
		assert.Equal(t, 1.0, testutil.ToFloat64(m.HostRefused))
	})
	t.Run("a panic in a handler is answered 500, logged with its stack and counted", func(t *testing.T) {
		rec := serve("127.0.0.1", "/boom")
		assert.Equal(t, http.StatusInternalServerError, rec.Code)
		assert.Contains(t, rec.Body.String(), "meridian_http_panics_total")
		assert.Equal(t, 1.0, testutil.ToFloat64(m.Panics))
		assert.Contains(t, logs.String(), "http handler panic")
		assert.Contains(t, logs.String(), "nil map somewhere")
		assert.Contains(t, logs.String(), "protect_test.go", "the stack is logged")
	})
	t.Run("net/http's ErrAbortHandler still cuts the response", func(t *testing.T) {
		abort := Protect(http.HandlerFunc(func(http.ResponseWriter, *http.Request) { panic(http.ErrAbortHandler) }), nil, m, log)
		require.PanicsWithValue(t, http.ErrAbortHandler, func() {
			abort.ServeHTTP(httptest.NewRecorder(), httptest.NewRequest(http.MethodGet, "/", nil))
		})
		assert.Equal(t, 1.0, testutil.ToFloat64(m.Panics), "not counted as a panic")
	})
}

func TestProbeHandlerServesOnlyTheProbes(t *testing.T) {
	ready := func() error { return nil }
	h := ProbeHandler(ready)
	for path, want := range map[string]int{"/healthz": 200, "/readyz": 200, "/metrics": 404, "/v1/admin/overrides": 404, "/": 404} {
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, path, nil))
		assert.Equal(t, want, rec.Code, path)
	}
}
