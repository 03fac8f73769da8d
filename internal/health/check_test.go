package health

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/miekg/dns"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/meridian-gslb/meridian/internal/model"
)

var localhost = netip.MustParseAddr("127.0.0.1")

func probeOnce(t *testing.T, c *model.Check, addr netip.Addr, timeout time.Duration) error {
	t.Helper()
	ch, err := NewChecker(c)
	require.NoError(t, err)
	require.NotNil(t, ch)
	ctx, cancel := context.WithTimeout(t.Context(), timeout)
	defer cancel()
	return ch.Check(ctx, addr)
}

func TestHTTPCheck(t *testing.T) {
	noLeaks(t)
	release := make(chan struct{})
	var (
		mu   sync.Mutex
		seen *http.Request
	)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		seen = r.Clone(context.Background())
		mu.Unlock()
		switch r.URL.Path {
		case "/ok":
			io.WriteString(w, "all ok here")
		case "/broken":
			http.Error(w, "broken", http.StatusServiceUnavailable)
		case "/moved":
			http.Redirect(w, r, "/broken", http.StatusFound)
		case "/hang":
			select {
			case <-r.Context().Done():
			case <-release:
			}
		default:
			http.NotFound(w, r)
		}
	}))
	defer srv.Close()
	defer close(release)
	addr, port := serverAddr(t, srv)
	check := func(mod func(c *model.Check)) *model.Check {
		c := &model.Check{Kind: model.CheckHTTP, Port: port, Method: "GET", Path: "/ok", Host: "svc.example.com", ExpectStatus: []string{"200-399"}}
		if mod != nil {
			mod(c)
		}
		return c
	}
	tests := []struct {
		name    string
		check   *model.Check
		timeout time.Duration
		wantErr string // substring; "" = healthy
	}{
		{name: "a 200 answer passes", check: check(nil)},
		{
			name:    "a 503 answer fails naming the status and the expected range",
			check:   check(func(c *model.Check) { c.Path = "/broken" }),
			wantErr: "http " + srv.Listener.Addr().String() + " GET /broken: status 503 not in [200-399]",
		},
		{
			name:    "an answer outside every expected code fails listing them",
			check:   check(func(c *model.Check) { c.Path = "/moved"; c.ExpectStatus = []string{"200", "204"} }),
			wantErr: "status 302 not in [200, 204]",
		},
		{
			name:  "a redirect is not followed and passes as a 3xx",
			check: check(func(c *model.Check) { c.Path = "/moved" }),
		},
		{
			name:    "a redirect fails when only 200 is expected",
			check:   check(func(c *model.Check) { c.Path = "/moved"; c.ExpectStatus = []string{"200"} }),
			wantErr: "status 302 not in [200]",
		},
		{
			name:  "a body containing the substring passes",
			check: check(func(c *model.Check) { c.BodyContains = "ok" }),
		},
		{
			name:    "a body without the substring fails",
			check:   check(func(c *model.Check) { c.BodyContains = "healthy" }),
			wantErr: `GET /ok: body does not contain "healthy"`,
		},
		{
			name:    "a path that is not found fails",
			check:   check(func(c *model.Check) { c.Path = "/nope" }),
			wantErr: "status 404 not in [200-399]",
		},
		{
			name:    "a server that hangs times out",
			check:   check(func(c *model.Check) { c.Path = "/hang" }),
			timeout: 100 * time.Millisecond,
			wantErr: "GET /hang: context deadline exceeded",
		},
		{
			name:    "a closed port is refused",
			check:   check(func(c *model.Check) { c.Port = closedPort(t) }),
			wantErr: "connection refused",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			timeout := tt.timeout
			if timeout == 0 {
				timeout = 2 * time.Second
			}
			start := time.Now()
			err := probeOnce(t, tt.check, addr, timeout)
			if tt.wantErr == "" {
				assert.NoError(t, err)
				return
			}
			require.Error(t, err)
			assert.Contains(t, err.Error(), tt.wantErr)
			assert.Less(t, time.Since(start), timeout+time.Second, "the probe is bounded by its context")
		})
	}

	t.Run("the method, path, query and host header are sent as configured", func(t *testing.T) {
		err := probeOnce(t, check(func(c *model.Check) { c.Method = "HEAD"; c.Path = "/ok?probe=1" }), addr, 2*time.Second)
		require.NoError(t, err)
		mu.Lock()
		defer mu.Unlock()
		assert.Equal(t, "HEAD", seen.Method)
		assert.Equal(t, "/ok", seen.URL.Path)
		assert.Equal(t, "probe=1", seen.URL.RawQuery)
		assert.Equal(t, "svc.example.com", seen.Host)
	})

	t.Run("a timeout is a deadline error", func(t *testing.T) {
		err := probeOnce(t, check(func(c *model.Check) { c.Path = "/hang" }), addr, 50*time.Millisecond)
		assert.ErrorIs(t, err, context.DeadlineExceeded)
	})
}

func TestHTTPCheckBodyIsReadUpTo64KiB(t *testing.T) {
	noLeaks(t)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, strings.Repeat("x", maxBody))
		io.WriteString(w, "marker")
	}))
	defer srv.Close()
	addr, port := serverAddr(t, srv)
	err := probeOnce(t, &model.Check{Kind: model.CheckHTTP, Port: port, BodyContains: "marker"}, addr, 2*time.Second)
	require.Error(t, err)
	assert.Contains(t, err.Error(), `body does not contain "marker" (first 65536 bytes read)`)
}

func TestHTTPSCheck(t *testing.T) {
	noLeaks(t)
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, "ok")
	}))
	srv.Config.ErrorLog = log.New(io.Discard, "", 0) // failed handshakes are the point
	srv.StartTLS()
	defer srv.Close()
	addr, port := serverAddr(t, srv)
	ca := writeCA(t, srv)
	tests := []struct {
		name     string
		sni      string
		caFile   string
		insecure bool
		wantErr  string
	}{
		{name: "an untrusted certificate fails by default", sni: "example.com", wantErr: "tls: failed to verify certificate"},
		{name: "the certificate passes with its CA in ca_file", sni: "example.com", caFile: ca},
		{name: "the certificate passes against its IP address without sni", caFile: ca},
		{name: "a name covered by the wildcard passes", sni: "www.example.com", caFile: ca},
		{name: "an untrusted certificate passes with insecure_skip_verify", sni: "example.com", insecure: true},
		{name: "a wrong sni fails even with the CA pinned", sni: "wrong.test", caFile: ca, wantErr: "not wrong.test"},
		{name: "a wrong sni passes with insecure_skip_verify", sni: "wrong.test", insecure: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := &model.Check{
				Kind: model.CheckHTTPS, Port: port, Path: "/", Host: "example.com", SNI: tt.sni,
				CAFile: tt.caFile, InsecureSkipVerify: tt.insecure, BodyContains: "ok",
			}
			err := probeOnce(t, c, addr, 2*time.Second)
			if tt.wantErr == "" {
				assert.NoError(t, err)
				return
			}
			require.Error(t, err)
			assert.Contains(t, err.Error(), "https "+srv.Listener.Addr().String()+" GET /: tls: ")
			assert.Contains(t, err.Error(), tt.wantErr)
		})
	}
}

func TestNewChecker(t *testing.T) {
	dir := t.TempDir()
	empty := filepath.Join(dir, "empty.pem")
	require.NoError(t, os.WriteFile(empty, []byte("not a certificate\n"), 0o600))
	missing := filepath.Join(dir, "missing.pem")
	tests := []struct {
		name    string
		check   *model.Check
		wantNil bool
		wantErr string
	}{
		{name: "kind none has no checker", check: &model.Check{Kind: model.CheckNone}, wantNil: true},
		{name: "no check has no checker", check: nil, wantNil: true},
		{name: "an http check with defaults builds", check: &model.Check{Kind: model.CheckHTTP}},
		{name: "a dns check with defaults builds", check: &model.Check{Kind: model.CheckDNS, QueryName: "example.com"}},
		{name: "an unknown kind is an error", check: &model.Check{Kind: "icmp"}, wantErr: `check kind "icmp" is unknown`},
		{name: "a tcp check without a port is an error", check: &model.Check{Kind: model.CheckTCP}, wantErr: "tcp check: port 0 is out of range"},
		{name: "a bad expected status is an error", check: &model.Check{Kind: model.CheckHTTP, ExpectStatus: []string{"2xx"}}, wantErr: `expect_status "2xx"`},
		{name: "a relative path is an error", check: &model.Check{Kind: model.CheckHTTP, Path: "healthz"}, wantErr: `path "healthz" is not an absolute path`},
		{name: "an unreadable ca_file is named in the error", check: &model.Check{Kind: model.CheckHTTPS, CAFile: missing}, wantErr: "https check: ca_file: open " + missing},
		{name: "a ca_file without certificates is named in the error", check: &model.Check{Kind: model.CheckHTTPS, CAFile: empty}, wantErr: "https check: ca_file " + empty + ": no PEM certificates found"},
		{name: "an unknown query type is an error", check: &model.Check{Kind: model.CheckDNS, QueryName: "a.test", QueryType: "BOGUS"}, wantErr: `query_type "BOGUS"`},
		{name: "an unknown rcode is an error", check: &model.Check{Kind: model.CheckDNS, QueryName: "a.test", ExpectRcode: "FINE"}, wantErr: `expect_rcode "FINE"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ch, err := NewChecker(tt.check)
			if tt.wantErr != "" {
				require.Error(t, err)
				assert.Contains(t, err.Error(), tt.wantErr)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tt.wantNil, ch == nil)
		})
	}
}

func TestTCPCheck(t *testing.T) {
	noLeaks(t)
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer l.Close()
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			c.Close()
		}
	}()
	tests := []struct {
		name    string
		port    int
		wantErr string
	}{
		{name: "a listening port passes", port: l.Addr().(*net.TCPAddr).Port},
		{name: "a closed port is refused", port: closedPort(t), wantErr: "connection refused"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := probeOnce(t, &model.Check{Kind: model.CheckTCP, Port: tt.port}, localhost, 2*time.Second)
			if tt.wantErr == "" {
				assert.NoError(t, err)
				return
			}
			require.Error(t, err)
			assert.Contains(t, err.Error(), "tcp 127.0.0.1:")
			assert.Contains(t, err.Error(), tt.wantErr)
		})
	}
}

// dnsServer answers A queries for ok.test. with NOERROR and everything else
// with NXDOMAIN, on 127.0.0.1 over UDP.
func dnsServer(t *testing.T) int {
	t.Helper()
	pc, err := net.ListenPacket("udp", "127.0.0.1:0")
	require.NoError(t, err)
	srv := &dns.Server{PacketConn: pc, Handler: dns.HandlerFunc(func(w dns.ResponseWriter, r *dns.Msg) {
		m := new(dns.Msg)
		m.SetReply(r)
		if r.Question[0].Name == "ok.test." {
			m.Answer = append(m.Answer, &dns.A{
				Hdr: dns.RR_Header{Name: "ok.test.", Rrtype: dns.TypeA, Class: dns.ClassINET, Ttl: 30},
				A:   net.IPv4(192, 0, 2, 1),
			})
		} else {
			m.Rcode = dns.RcodeNameError
		}
		_ = w.WriteMsg(m)
	})}
	started := make(chan struct{})
	srv.NotifyStartedFunc = func() { close(started) }
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = srv.ActivateAndServe()
	}()
	<-started
	t.Cleanup(func() {
		_ = srv.Shutdown()
		<-done
	})
	return pc.LocalAddr().(*net.UDPAddr).Port
}

func TestDNSCheck(t *testing.T) {
	noLeaks(t)
	port := dnsServer(t)
	silent, err := net.ListenPacket("udp", "127.0.0.1:0")
	require.NoError(t, err)
	t.Cleanup(func() { silent.Close() })
	silentPort := silent.LocalAddr().(*net.UDPAddr).Port
	tests := []struct {
		name    string
		check   model.Check
		wantErr string
	}{
		{name: "the expected rcode passes", check: model.Check{QueryName: "ok.test", QueryType: "A", ExpectRcode: "NOERROR"}},
		{
			name:    "a wrong rcode fails naming both rcodes",
			check:   model.Check{QueryName: "missing.test", QueryType: "A", ExpectRcode: "NOERROR"},
			wantErr: "missing.test. A: rcode NXDOMAIN, want NOERROR",
		},
		{name: "an expected nxdomain passes", check: model.Check{QueryName: "missing.test", QueryType: "aaaa", ExpectRcode: "nxdomain"}},
		{
			name:    "a server that never answers times out",
			check:   model.Check{Port: silentPort, QueryName: "ok.test"},
			wantErr: "context deadline exceeded",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := tt.check
			c.Kind = model.CheckDNS
			if c.Port == 0 {
				c.Port = port
			}
			start := time.Now()
			err := probeOnce(t, &c, localhost, 200*time.Millisecond)
			if tt.wantErr == "" {
				assert.NoError(t, err)
				return
			}
			require.Error(t, err)
			assert.Contains(t, err.Error(), "dns 127.0.0.1:")
			assert.Contains(t, err.Error(), tt.wantErr)
			assert.Less(t, time.Since(start), time.Second)
		})
	}
}

func TestErrCheckerFailsWithItsError(t *testing.T) {
	want := errors.New("https check: ca_file: missing")
	assert.ErrorIs(t, errChecker{want}.Check(t.Context(), localhost), want)
}

func TestHTTPCheckIPv6(t *testing.T) {
	noLeaks(t)
	l, err := net.Listen("tcp", "[::1]:0")
	if err != nil {
		t.Skipf("no IPv6 loopback: %v", err)
	}
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Error(w, "down", http.StatusServiceUnavailable)
	}))
	srv.Listener = l
	srv.Start()
	defer srv.Close()
	addr, port := serverAddr(t, srv)
	err = probeOnce(t, &model.Check{Kind: model.CheckHTTP, Port: port, Path: "/healthz"}, addr, 2*time.Second)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "http "+srv.Listener.Addr().String()+" GET /healthz: status 503 not in [200-399]")
}

// fullListener returns the port of a loopback listener whose accept queue
// is full and never drained: the kernel drops further SYNs, so a connect
// to it hangs as it does to a blackholed endpoint.
func fullListener(t *testing.T) int {
	t.Helper()
	fd, err := syscall.Socket(syscall.AF_INET, syscall.SOCK_STREAM, 0)
	require.NoError(t, err)
	t.Cleanup(func() { _ = syscall.Close(fd) })
	require.NoError(t, syscall.Bind(fd, &syscall.SockaddrInet4{Addr: [4]byte{127, 0, 0, 1}}))
	require.NoError(t, syscall.Listen(fd, 0))
	sa, err := syscall.Getsockname(fd)
	require.NoError(t, err)
	port := sa.(*syscall.SockaddrInet4).Port
	for i := range 8 { // fill the queue until a connect hangs
		c, err := net.DialTimeout("tcp", fmt.Sprintf("127.0.0.1:%d", port), 300*time.Millisecond)
		if err != nil {
			require.Positive(t, i, "the first connect must fill the queue, not fail: %v", err)
			return port
		}
		t.Cleanup(func() { c.Close() })
	}
	t.Fatalf("the accept queue of port %d never filled", port)
	return 0
}

// synSent counts this machine's IPv4 sockets still trying to connect to
// 127.0.0.1:port.
func synSent(t *testing.T, port int) int {
	t.Helper()
	b, err := os.ReadFile("/proc/net/tcp")
	require.NoError(t, err)
	want := fmt.Sprintf("0100007F:%04X", port)
	n := 0
	for _, line := range strings.Split(string(b), "\n")[1:] {
		f := strings.Fields(line)
		if len(f) > 3 && f[2] == want && f[3] == "02" { // TCP_SYN_SENT
			n++
		}
	}
	return n
}

func TestTimedOutProbesLeaveNoDialOrHandshakeBehind(t *testing.T) {
	if _, err := os.Stat("/proc/net/tcp"); err != nil {
		t.Skip("needs /proc/net/tcp")
	}
	t.Run("an HTTP probe of an endpoint that drops SYNs stops connecting when it times out", func(t *testing.T) {
		port := fullListener(t)
		err := probeOnce(t, &model.Check{Kind: model.CheckHTTP, Port: port, Timeout: model.Duration(200 * time.Millisecond)}, localhost, 5*time.Second)
		require.Error(t, err)
		// Without a bound, net/http's dial goes on (SYN retries for about
		// two minutes) after the request has given up.
		assert.Eventually(t, func() bool { return synSent(t, port) == 0 }, 3*time.Second, 50*time.Millisecond,
			"a connect to port %d is still pending after the probe timed out", port)
	})
	t.Run("an HTTPS probe of an endpoint that never answers the handshake closes its connection when it times out", func(t *testing.T) {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		require.NoError(t, err)
		defer l.Close()
		closed := make(chan struct{})
		go func() {
			c, err := l.Accept()
			if err != nil {
				return
			}
			defer c.Close()
			_, _ = io.Copy(io.Discard, c) // returns when the client closes
			close(closed)
		}()
		port := l.Addr().(*net.TCPAddr).Port
		err = probeOnce(t, &model.Check{Kind: model.CheckHTTPS, Port: port, Timeout: model.Duration(200 * time.Millisecond), InsecureSkipVerify: true}, localhost, 5*time.Second)
		require.Error(t, err)
		select {
		case <-closed:
		case <-time.After(3 * time.Second):
			t.Fatal("the probe's TLS handshake still holds its connection after the probe timed out")
		}
	})
}
