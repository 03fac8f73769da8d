package demo

import (
	"errors"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/netip"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/meridian-gslb/meridian/internal/model"
)

// TestMain fails the package's tests when a backend's goroutine outlives
// them (a server not shut down, a connection left open).
func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// freePort returns a loopback TCP port nobody listens on right now.
func freePort(t *testing.T) int {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	port := ln.Addr().(*net.TCPAddr).Port
	require.NoError(t, ln.Close())
	return port
}

func desired(port int) *model.Desired {
	return &model.Desired{Services: []model.Service{
		{Name: "app.demo.test.", HealthCheck: &model.Check{Kind: model.CheckHTTP, Port: port, Path: "/healthz"},
			Endpoints: []model.Endpoint{{Address: "127.0.0.1"}, {Address: "192.0.2.1"}}},
		{Name: "dns.demo.test.", HealthCheck: &model.Check{Kind: model.CheckDNS, Port: 53},
			Endpoints: []model.Endpoint{{Address: "127.0.0.2"}}},
		{Name: "static.demo.test.", Endpoints: []model.Endpoint{{Address: "127.0.0.3"}}},
	}}
}

// get fetches url with a client that keeps no idle connection (none is
// left for the leak check).
func get(url string) (int, string, error) {
	c := &http.Client{Transport: &http.Transport{DisableKeepAlives: true}}
	resp, err := c.Get(url)
	if err != nil {
		return 0, "", err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b), err
}

func TestOnlyLoopbackEndpointsWithAnHTTPOrTCPCheckGetABackend(t *testing.T) {
	b := ForConfig(desired(8081), slog.New(slog.DiscardHandler))
	assert.Equal(t, []BackendStatus{{Addr: "127.0.0.1:8081", Path: "/healthz", Running: false}}, b.List())
}

func TestAStoppedBackendRefusesConnectionsAndAStartedOneAnswersItsPath(t *testing.T) {
	port := freePort(t)
	b := ForConfig(desired(port), slog.New(slog.DiscardHandler))
	t.Cleanup(b.StopAll)
	url := "http://" + netip.AddrPortFrom(netip.MustParseAddr("127.0.0.1"), uint16(port)).String() + "/healthz"

	require.NoError(t, b.StartAll())
	code, body, err := get(url)
	require.NoError(t, err)
	assert.Equal(t, http.StatusOK, code)
	assert.Contains(t, body, "ok: demo backend 127.0.0.1:")

	require.NoError(t, b.Stop("127.0.0.1"), "a bare ip names the only backend on it")
	assert.False(t, b.List()[0].Running)
	_, _, err = get(url)
	require.Error(t, err, "a stopped backend refuses connections")

	require.NoError(t, b.Start("127.0.0.1"))
	require.NoError(t, b.Start("127.0.0.1"), "starting a running backend does nothing")
	code, _, err = get(url)
	require.NoError(t, err)
	assert.Equal(t, http.StatusOK, code)
}

func TestAnAddressThatIsNoBackendIsUnknown(t *testing.T) {
	b := ForConfig(desired(8081), slog.New(slog.DiscardHandler))
	err := b.Start("127.0.0.9")
	require.Error(t, err)
	assert.True(t, errors.Is(err, ErrUnknown))
	assert.Contains(t, err.Error(), "127.0.0.1:8081", "the error lists the known backends")
}
