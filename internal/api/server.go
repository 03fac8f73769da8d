package api

import (
	"crypto/tls"
	"log/slog"
	"net"
	"net/http"
	"strconv"
	"sync"
	"sync/atomic"
	"time"
)

// Limits of every HTTP listener (documented in README.md, "HTTP endpoints").
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
)

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

// Listen wraps ln so that at most max connections are open at once (0:
// DefaultMaxConnections). A connection beyond the limit is accepted and
// closed at once (a plain-HTTP listener first writes a short 503), so the
// kernel's queue never fills with clients that wait; the name labels the
// metrics (main, read_only). With tlsConf the result serves TLS, with the
// limit counted before the handshake.
func Listen(ln net.Listener, max int, name string, tlsConf *tls.Config, m *Metrics) net.Listener {
	if max <= 0 {
		max = DefaultMaxConnections
	}
	l := &limitListener{Listener: ln, max: int64(max), name: name, m: m, plain: tlsConf == nil}
	if tlsConf != nil {
		return tls.NewListener(l, tlsConf)
	}
	return l
}

// busy is what a plain-HTTP client beyond the connection limit reads.
var busy = func() []byte {
	body := `{"error": "too many connections (allowed: server.http.max_connections); retry later"}` + "\n"
	return []byte("HTTP/1.1 503 Service Unavailable\r\nContent-Type: application/json\r\nConnection: close\r\nRetry-After: 5\r\n" +
		"Content-Length: " + strconv.Itoa(len(body)) + "\r\n\r\n" + body)
}()

type limitListener struct {
	net.Listener
	max   int64
	open  atomic.Int64
	name  string
	m     *Metrics
	plain bool
}

func (l *limitListener) Accept() (net.Conn, error) {
	for {
		c, err := l.Listener.Accept()
		if err != nil {
			return nil, err
		}
		if l.open.Add(1) > l.max {
			l.open.Add(-1)
			if l.m != nil {
				l.m.ConnectionsRejected.WithLabelValues(l.name).Inc()
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
		return &limitConn{Conn: c, l: l}, nil
	}
}

type limitConn struct {
	net.Conn
	l    *limitListener
	once sync.Once
}

func (c *limitConn) Close() error {
	err := c.Conn.Close()
	c.once.Do(func() {
		c.l.open.Add(-1)
		if c.l.m != nil {
			c.l.m.Connections.WithLabelValues(c.l.name).Dec()
		}
	})
	return err
}
