package api

import (
	"crypto/tls"
	"log/slog"
	"net"
	"net/http"
	"net/netip"
	"strconv"
	"sync"
	"sync/atomic"
	"time"
)

// Limits of every HTTP listener (documented in docs/operations.md, "HTTP endpoints").
// GET /v1/events streams are exempt from the read and write timeouts: they
// set a deadline per message instead (see events.go).
const (
	ReadHeaderTimeout = 10 * time.Second // request line and headers
	ReadTimeout       = 30 * time.Second // the whole request, body included
	WriteTimeout      = 30 * time.Second // from the end of the request headers to the end of the response
	IdleTimeout       = 60 * time.Second // a keep-alive connection between requests
	MaxHeaderBytes    = 64 << 10         // request line and headers

	// DefaultMaxConnections is the default of server.http.max_connections.
	DefaultMaxConnections = 1024
	// DefaultMaxPerClient is the default of server.http.max_connections_per_client.
	DefaultMaxPerClient = 64
)

// Limits are the connection caps of one listener.
type Limits struct {
	Max       int // open connections in all (0: DefaultMaxConnections)
	PerClient int // open connections per client address, IPv6 per /64 (0: DefaultMaxPerClient)
}

// NewServer returns an http.Server for h with the limits above; tlsConf
// (nil: plain HTTP) serves HTTPS; log (nil: discarded) gets the server's
// own errors at debug level.
func NewServer(h http.Handler, tlsConf *tls.Config, log *slog.Logger) *http.Server {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &http.Server{
		Handler:           h,
		TLSConfig:         tlsConf,
		ReadHeaderTimeout: ReadHeaderTimeout,
		ReadTimeout:       ReadTimeout,
		WriteTimeout:      WriteTimeout,
		IdleTimeout:       IdleTimeout,
		MaxHeaderBytes:    MaxHeaderBytes,
		ErrorLog:          slog.NewLogLogger(log.Handler(), slog.LevelDebug), // TLS handshake noise and the like
	}
}

// Listen wraps ln so that at most lim.Max connections are open at once,
// and at most lim.PerClient from one client (one address; one /64 for
// IPv6), so that one client cannot take every slot and starve the probes
// and the other clients. A connection beyond a limit is accepted and
// closed at once (a plain-HTTP listener first writes a short 503), so the
// kernel's queue never fills with clients that wait; the name labels the
// metrics (main, read_only). With tlsConf the result serves TLS, with the
// limits counted before the handshake.
func Listen(ln net.Listener, lim Limits, name string, tlsConf *tls.Config, m *Metrics) net.Listener {
	if lim.Max <= 0 {
		lim.Max = DefaultMaxConnections
	}
	if lim.PerClient <= 0 {
		lim.PerClient = DefaultMaxPerClient
	}
	l := &limitListener{Listener: ln, max: int64(lim.Max), perClient: lim.PerClient, clients: map[netip.Prefix]int{}, name: name, m: m, plain: tlsConf == nil}
	if tlsConf != nil {
		return tls.NewListener(l, tlsConf)
	}
	return l
}

// busyResponse is what a plain-HTTP client beyond a connection limit reads.
func busyResponse(setting string) []byte {
	body := `{"error": "too many connections (allowed: ` + setting + `); retry later"}` + "\n"
	return []byte("HTTP/1.1 503 Service Unavailable\r\nContent-Type: application/json\r\nConnection: close\r\nRetry-After: 5\r\n" +
		"Content-Length: " + strconv.Itoa(len(body)) + "\r\n\r\n" + body)
}

var (
	busyTotal  = busyResponse("server.http.max_connections")
	busyClient = busyResponse("server.http.max_connections_per_client")
)

type limitListener struct {
	net.Listener
	max       int64
	open      atomic.Int64
	perClient int
	mu        sync.Mutex
	clients   map[netip.Prefix]int // open connections per client (address, IPv6 /64)
	name      string
	m         *Metrics
	plain     bool
}

// clientKey is the client a connection counts for: its address, or its
// /64 for IPv6 (a host easily holds a whole /64).
func clientKey(a net.Addr) netip.Prefix {
	ap, err := netip.ParseAddrPort(a.String())
	if err != nil {
		return netip.Prefix{}
	}
	ip := ap.Addr().Unmap()
	bits := 32
	if ip.Is6() {
		bits = 64
	}
	p, _ := ip.Prefix(bits)
	return p
}

func (l *limitListener) Accept() (net.Conn, error) {
	for {
		c, err := l.Listener.Accept()
		if err != nil {
			return nil, err
		}
		key := clientKey(c.RemoteAddr())
		reason, busy := "", busyTotal
		l.mu.Lock()
		switch {
		case l.clients[key] >= l.perClient:
			reason, busy = "per-client", busyClient
		case l.open.Load() >= l.max:
			reason = "total"
		default:
			l.clients[key]++
			l.open.Add(1)
		}
		l.mu.Unlock()
		if reason != "" {
			if l.m != nil {
				l.m.ConnectionsRejected.WithLabelValues(l.name, reason).Inc()
			}
			if l.plain {
				_ = c.SetWriteDeadline(time.Now().Add(100 * time.Millisecond))
				_, _ = c.Write(busy)
			}
			c.Close()
			continue
		}
		if l.m != nil {
			l.m.Connections.WithLabelValues(l.name).Inc()
		}
		return &limitConn{Conn: c, l: l, key: key}, nil
	}
}

type limitConn struct {
	net.Conn
	l    *limitListener
	key  netip.Prefix
	once sync.Once
}

func (c *limitConn) Close() error {
	err := c.Conn.Close()
	c.once.Do(func() {
		c.l.mu.Lock()
		if c.l.clients[c.key]--; c.l.clients[c.key] <= 0 {
			delete(c.l.clients, c.key)
		}
		c.l.mu.Unlock()
		c.l.open.Add(-1)
		if c.l.m != nil {
			c.l.m.Connections.WithLabelValues(c.l.name).Dec()
		}
	})
	return err
}
