package health

import (
	"encoding/pem"
	"log/slog"
	"net"
	"net/http/httptest"
	"net/netip"
	"os"
	"path/filepath"
	"testing"

	"go.uber.org/goleak"
)

// quiet is the logger of test probers.
var quiet = slog.New(slog.DiscardHandler)

// noLeaks checks, after every other cleanup of t (servers closed), that t
// left no goroutine running. Call it first in a test.
func noLeaks(t *testing.T) {
	t.Helper()
	t.Cleanup(func() { goleak.VerifyNone(t) })
}

// serverAddr returns the address and port a test server listens on.
func serverAddr(t *testing.T, srv *httptest.Server) (netip.Addr, int) {
	t.Helper()
	ap := netip.MustParseAddrPort(srv.Listener.Addr().String())
	return ap.Addr(), int(ap.Port())
}

// writeCA writes the TLS test server's certificate (self-signed, a CA) as
// PEM into a temporary file and returns its path.
func writeCA(t *testing.T, srv *httptest.Server) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "ca.pem")
	b := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw})
	if err := os.WriteFile(p, b, 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// closedPort returns a local TCP port that nothing listens on.
func closedPort(t *testing.T) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := l.Addr().(*net.TCPAddr).Port
	_ = l.Close()
	return port
}
