package cffake

import (
	"context"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// healthEnv: a fake with one monitored pool "eu" of one origin (eu-1,
// enabled unless named disabledOrigin), a plain pool "backup" and an
// off-steered load balancer eu → backup.
const disabledOrigin = "disabled"

type healthEnv struct {
	srv     *Server
	monitor Monitor
}

func newHealthEnv(t *testing.T, m Monitor, o Origin) *healthEnv {
	t.Helper()
	srv := New(token)
	t.Cleanup(srv.Close)
	mon, err := srv.PutMonitor(m)
	require.NoError(t, err)
	o.Name, o.Enabled, o.Weight = firstOf(o.Name, "eu-1"), o.Name != disabledOrigin, 1
	eu, err := srv.PutPool(Pool{Name: "eu", Enabled: true, MinimumOrigins: 1, Monitor: mon.ID, Origins: []Origin{o}})
	require.NoError(t, err)
	backup, err := srv.PutPool(Pool{Name: "backup", Enabled: true, MinimumOrigins: 1, Origins: []Origin{{Name: "b", Address: "192.0.2.9", Enabled: true, Weight: 1}}})
	require.NoError(t, err)
	_, err = srv.PutLoadBalancer(srv.AddZone("example.com"), LoadBalancer{Name: "app.example.com", Enabled: true, SteeringPolicy: "off",
		DefaultPools: []string{eu.ID, backup.ID}, FallbackPool: backup.ID})
	require.NoError(t, err)
	return &healthEnv{srv: srv, monitor: mon}
}

func (e *healthEnv) pool(t *testing.T) string {
	t.Helper()
	a, err := e.srv.Resolve("app.example.com", Client{}, rand.New(rand.NewPCG(1, 1)))
	require.NoError(t, err)
	return a.Pool
}

func (e *healthEnv) state(t *testing.T) HealthState {
	t.Helper()
	st, ok := e.srv.OriginHealth("eu", "eu-1")
	require.True(t, ok)
	return st
}

func hostPort(t *testing.T, u string) (string, int) {
	t.Helper()
	h, p, err := net.SplitHostPort(u)
	require.NoError(t, err)
	port, err := strconv.Atoi(p)
	require.NoError(t, err)
	return h, port
}

// restart serves h again at addr (a backend brought back on its port).
func restart(t *testing.T, addr string, h http.Handler) *httptest.Server {
	t.Helper()
	l, err := net.Listen("tcp", addr)
	require.NoError(t, err)
	s := httptest.NewUnstartedServer(h)
	s.Listener.Close()
	s.Listener = l
	s.Start()
	return s
}

func TestCheckHealthTakesAStoppedBackendOutAndBack(t *testing.T) {
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/healthz" {
			http.NotFound(w, r)
			return
		}
		_, _ = io.WriteString(w, "status: OK")
	})
	backend := httptest.NewServer(h)
	addr := backend.Listener.Addr().String()
	host, port := hostPort(t, addr)
	e := newHealthEnv(t, Monitor{Type: "http", Path: "/healthz", ExpectedCodes: "2xx", ExpectedBody: "ok", Interval: 5, Timeout: 1, Retries: 0,
		ConsecutiveDown: 2, ConsecutiveUp: 2}, Origin{Address: host, Port: port})
	ctx := context.Background()

	e.srv.CheckHealth(ctx)
	assert.Equal(t, HealthState{Up: true, Checks: 1, ConsecutiveUp: 1}, e.state(t))
	assert.Equal(t, "eu", e.pool(t))

	backend.Close()
	e.srv.CheckHealth(ctx)
	st := e.state(t)
	assert.True(t, st.Up, "one failure of consecutive_down 2")
	assert.Equal(t, 1, st.ConsecutiveDown)
	assert.Contains(t, st.LastError, "TCP connection failed")
	assert.Equal(t, "eu", e.pool(t))
	e.srv.CheckHealth(ctx)
	assert.False(t, e.state(t).Up, "down after consecutive_down failures")
	assert.Equal(t, "backup", e.pool(t), "the load balancer moves to the next pool")

	back := restart(t, addr, h)
	defer back.Close()
	e.srv.CheckHealth(ctx)
	assert.False(t, e.state(t).Up, "one pass of consecutive_up 2")
	assert.Equal(t, "backup", e.pool(t))
	e.srv.CheckHealth(ctx)
	assert.Equal(t, HealthState{Up: true, Checks: 5, ConsecutiveUp: 2}, e.state(t))
	assert.Equal(t, "eu", e.pool(t), "back after consecutive_up passes")
}

func TestCheckHealthProbes(t *testing.T) {
	closedPort := func(t *testing.T) int {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		require.NoError(t, err)
		_, port := hostPort(t, l.Addr().String())
		require.NoError(t, l.Close())
		return port
	}
	// http builds an http monitor (interval 5, timeout 2, no retries) and a
	// loopback origin on the backend's port.
	http1 := func(m Monitor) func(*testing.T, int) (Monitor, Origin) {
		return func(_ *testing.T, port int) (Monitor, Origin) {
			m.Type, m.Interval, m.Timeout = firstOf(m.Type, "http"), 5, 2
			return m, Origin{Address: "127.0.0.1", Port: port}
		}
	}
	tests := []struct {
		name    string
		handler http.HandlerFunc // nil: no backend
		setup   func(t *testing.T, backendPort int) (Monitor, Origin)
		up      bool
		checks  int
		errPart string
	}{
		{"a 2xx answer passes a 2xx monitor", status(200, "fine"), http1(Monitor{ExpectedCodes: "2xx"}), true, 1, ""},
		{"a 503 fails a 2xx monitor", status(503, ""), http1(Monitor{ExpectedCodes: "2xx"}), false, 1, "response code mismatch: 503"},
		{"an exact expected code must match", status(204, ""), http1(Monitor{ExpectedCodes: "200"}), false, 1, "response code mismatch: 204"},
		{"a body without the expected text fails", status(200, "nope"), http1(Monitor{ExpectedBody: "healthy"}), false, 1, "response body mismatch"},
		{"the expected body is matched case-insensitively", status(200, "all HEALTHY here"), http1(Monitor{ExpectedBody: "healthy"}), true, 1, ""},
		{"a HEAD check ignores the expected body", status(200, ""), http1(Monitor{Method: "HEAD", ExpectedBody: "healthy"}), true, 1, ""},
		{"a redirect fails a monitor that does not follow redirects", redirect, http1(Monitor{}), false, 1, "response code mismatch: 302"},
		{"a redirect is followed with follow_redirects", redirect, http1(Monitor{FollowRedirects: true}), true, 1, ""},
		{"the origin's Host header is sent", wantHost("app.example.com"), func(t *testing.T, port int) (Monitor, Origin) {
			m, o := http1(Monitor{Header: map[string][]string{"Host": {"monitor.example.com"}}})(t, port)
			o.Header = &OriginHeader{Host: []string{"app.example.com"}}
			return m, o
		}, true, 1, ""},
		{"the monitor's Host header is sent without an origin override", wantHost("monitor.example.com"),
			http1(Monitor{Header: map[string][]string{"Host": {"monitor.example.com"}}}), true, 1, ""},
		{"the monitor's port wins over the origin's", status(200, ""), func(t *testing.T, port int) (Monitor, Origin) {
			m, o := http1(Monitor{Port: port})(t, port)
			o.Port = closedPort(t)
			return m, o
		}, true, 1, ""},
		{"an open port passes a tcp monitor", status(200, ""), func(_ *testing.T, port int) (Monitor, Origin) {
			return Monitor{Type: "tcp", Port: port, Interval: 5, Timeout: 2}, Origin{Address: "127.0.0.1"}
		}, true, 1, ""},
		{"a closed port fails a tcp monitor", nil, func(t *testing.T, _ int) (Monitor, Origin) {
			return Monitor{Type: "tcp", Port: closedPort(t), Interval: 5, Timeout: 2}, Origin{Address: "127.0.0.1"}
		}, false, 1, "TCP connection failed"},
		{"an icmp monitor passes without a probe", nil, func(*testing.T, int) (Monitor, Origin) {
			return Monitor{Type: "icmp_ping", Interval: 5, Timeout: 2}, Origin{Address: "192.0.2.1"}
		}, true, 1, ""},
		{"an origin off loopback is not probed", nil, func(*testing.T, int) (Monitor, Origin) {
			return Monitor{Type: "http", Interval: 5, Timeout: 2}, Origin{Address: "192.0.2.1"}
		}, true, 0, ""},
		{"a disabled origin is not checked", status(503, ""), func(t *testing.T, port int) (Monitor, Origin) {
			m, o := http1(Monitor{})(t, port)
			o.Name = disabledOrigin
			return m, o
		}, true, 0, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			port := 0
			if tt.handler != nil {
				b := httptest.NewServer(tt.handler)
				t.Cleanup(b.Close)
				_, port = hostPort(t, b.Listener.Addr().String())
			}
			m, o := tt.setup(t, port)
			e := newHealthEnv(t, m, o)
			e.srv.CheckHealth(context.Background())
			st, ok := e.srv.OriginHealth("eu", o.Address)
			require.True(t, ok)
			assert.Equal(t, tt.up, st.Up, "%+v", st)
			assert.Equal(t, tt.checks, st.Checks)
			assert.Contains(t, st.LastError, tt.errPart)
			if tt.errPart == "" {
				assert.Empty(t, st.LastError)
			}
		})
	}
}

func status(code int, body string) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(code)
		_, _ = io.WriteString(w, body)
	}
}

func redirect(w http.ResponseWriter, r *http.Request) {
	if r.URL.Path == "/ok" {
		_, _ = io.WriteString(w, "ok")
		return
	}
	http.Redirect(w, r, "/ok", http.StatusFound)
}

func wantHost(host string) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if r.Host != host {
			http.Error(w, fmt.Sprintf("Host %q, want %q", r.Host, host), http.StatusMisdirectedRequest)
		}
	}
}

func TestCheckHealthRetriesATimeoutAtOnce(t *testing.T) {
	t.Parallel()
	var hits atomic.Int32
	b := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
		<-r.Context().Done() // never answers: every attempt times out
	}))
	defer b.Close()
	_, port := hostPort(t, b.Listener.Addr().String())
	e := newHealthEnv(t, Monitor{Type: "http", Interval: 5, Timeout: 1, Retries: 1}, Origin{Address: "127.0.0.1", Port: port})
	e.srv.CheckHealth(context.Background())
	st := e.state(t)
	assert.False(t, st.Up)
	assert.Equal(t, int32(2), hits.Load(), "the attempt and one retry")
	assert.Contains(t, st.LastError, "HTTP timeout occurred")
}

func TestStartHealthChecksRunsUntilStopped(t *testing.T) {
	b := httptest.NewServer(status(200, ""))
	_, port := hostPort(t, b.Listener.Addr().String())
	e := newHealthEnv(t, Monitor{Type: "tcp", Port: port, Interval: 5, Timeout: 1}, Origin{Address: "127.0.0.1"})
	stop := e.srv.StartHealthChecks(context.Background(), 10*time.Millisecond)
	require.Eventually(t, func() bool { return e.state(t).Checks >= 2 }, 10*time.Second, 5*time.Millisecond)
	assert.Equal(t, "eu", e.pool(t))
	b.Close()
	require.Eventually(t, func() bool { return !e.state(t).Up }, 10*time.Second, 5*time.Millisecond)
	assert.Equal(t, "backup", e.pool(t))
	stop()

	// A loop still running when the Server closes is stopped by Close
	// (goleak checks it ended).
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	e.srv.StartHealthChecks(ctx, time.Hour)
}

func TestSetOriginHealth(t *testing.T) {
	e := newHealthEnv(t, Monitor{Type: "http", Interval: 60, Timeout: 5}, Origin{Address: "192.0.2.1", Port: 8080})
	require.NoError(t, e.srv.SetOriginHealth("eu", "192.0.2.1:8080", false))
	assert.Equal(t, HealthState{Up: false, Checks: 1, ConsecutiveDown: 1, LastError: "set down by SetOriginHealth"}, e.state(t))
	assert.Equal(t, "backup", e.pool(t))
	require.NoError(t, e.srv.SetOriginHealth("eu", "eu-1", true))
	assert.Equal(t, "eu", e.pool(t))
	assert.Error(t, e.srv.SetOriginHealth("eu", "192.0.2.7", false), "no such origin")
	assert.Error(t, e.srv.SetOriginHealth("nope", "eu-1", false), "no such pool")
	assert.ErrorContains(t, e.srv.SetOriginHealth("backup", "b", false), "has no monitor")
	_, ok := e.srv.OriginHealth("eu", "192.0.2.7")
	assert.False(t, ok)
}
