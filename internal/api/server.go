package api

import (
	"container/list"
	"crypto/tls"
	"log/slog"
	"net"
	"net/http"
	"net/netip"
	"strconv"
	"sync"
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

// Limits of the probe listener (server.http.probe_listen): the kubelet's
// probes send a whole request at once and read an answer of a few bytes.
const (
	ProbeTimeout        = 2 * time.Second // request headers, whole request, response
	ProbeIdleTimeout    = 5 * time.Second // a keep-alive connection between requests
	ProbeMaxConnections = 64              // open connections, per client network as well; when full the oldest is shed
)

// NewProbeServer returns the server of the probe listener: GET /healthz
// and GET /readyz only (ProbeHandler, with Protect's recover), plain HTTP,
// the probe timeouts. Serve it on Listen(srv, ln, ProbeLimits, "probe", m).
func NewProbeServer(ready func() error, m *Metrics, log *slog.Logger) *http.Server {
	srv := NewServer(Protect(ProbeHandler(ready), nil, m, log), nil, log)
	srv.ReadHeaderTimeout, srv.ReadTimeout, srv.WriteTimeout, srv.IdleTimeout = ProbeTimeout, ProbeTimeout, ProbeTimeout, ProbeIdleTimeout
	return srv
}

// ProbeLimits are the connection caps of the probe listener.
var ProbeLimits = Limits{Max: ProbeMaxConnections, PerClient: ProbeMaxConnections, ShedActive: true}

// Limits are the connection caps of one listener.
type Limits struct {
	Max       int // open connections in all (0: DefaultMaxConnections)
	PerClient int // open connections per client network: IPv4 /24, IPv6 /64 (0: DefaultMaxPerClient)
	// ShedActive lets a full listener shed its oldest connection even while
	// a request is in progress (the probe listener, whose requests take
	// microseconds: a connection still busy there after the others is a
	// slow client, not a probe). Otherwise only idle connections are shed.
	ShedActive bool
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

// Listen wraps ln for srv so that at most lim.Max connections are open at
// once, and at most lim.PerClient from one client network (an IPv4 /24, an
// IPv6 /64), so that no client — nor one network of them — can take every
// slot and starve the probes and the others. When a new connection would
// exceed a cap, the oldest idle connection counted by that cap (one whose
// request headers are not complete yet — nothing sent, or a slow client —
// or a keep-alive connection between requests; see Limits.ShedActive) is
// closed to make room: an idle connection costs its
// client a reconnect, a refused one costs a probe. Only when every
// connection of the cap is busy is the new one accepted and closed at
// once (a plain-HTTP listener first writes a short 503), so the kernel's
// queue never fills with clients that wait. Listen sets srv.ConnState to
// follow which connections are idle; the name labels the metrics (main,
// read_only, probe). With srv.TLSConfig the result serves TLS, with the
// limits counted before the handshake.
func Listen(srv *http.Server, ln net.Listener, lim Limits, name string, m *Metrics) net.Listener {
	if lim.Max <= 0 {
		lim.Max = DefaultMaxConnections
	}
	if lim.PerClient <= 0 {
		lim.PerClient = DefaultMaxPerClient
	}
	l := &limitListener{Listener: ln, lim: lim, clients: map[netip.Prefix]*shedGroup{}, name: name, m: m, plain: srv.TLSConfig == nil}
	prev := srv.ConnState
	srv.ConnState = func(c net.Conn, st http.ConnState) {
		l.connState(c, st)
		if prev != nil {
			prev(c, st)
		}
	}
	if srv.TLSConfig != nil {
		return tls.NewListener(l, srv.TLSConfig)
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

// Reasons a connection is rejected or shed (label values).
const (
	reasonTotal     = "total"
	reasonPerClient = "per-client"
)

// shedGroup is the connections one cap counts, with the sheddable ones
// oldest first.
type shedGroup struct {
	n    int
	idle list.List // *limitConn
}

type limitListener struct {
	net.Listener
	lim     Limits
	name    string
	m       *Metrics
	plain   bool
	mu      sync.Mutex
	all     shedGroup
	clients map[netip.Prefix]*shedGroup // by client network (IPv4 /24, IPv6 /64)
}

// clientKey is the client network a connection counts for: its IPv4 /24
// or its IPv6 /64 (a host easily holds a whole /64, and a /24 of addresses
// costs an attacker little more than one).
func clientKey(a net.Addr) netip.Prefix {
	ap, err := netip.ParseAddrPort(a.String())
	if err != nil {
		return netip.Prefix{}
	}
	ip := ap.Addr().Unmap().WithZone("")
	bits := 24
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
		lc, shed, reasons, refused := l.admit(c, time.Now())
		for i, v := range shed {
			if l.m != nil {
				l.m.ConnectionsShed.WithLabelValues(l.name, reasons[i]).Inc()
			}
			v.Conn.Close() // its server goroutine ends on the error; the cap no longer counts it
		}
		if refused != "" {
			if l.m != nil {
				l.m.ConnectionsRejected.WithLabelValues(l.name, refused).Inc()
			}
			if l.plain {
				busy := busyTotal
				if refused == reasonPerClient {
					busy = busyClient
				}
				_ = c.SetWriteDeadline(time.Now().Add(100 * time.Millisecond))
				_, _ = c.Write(busy)
			}
			c.Close()
			continue
		}
		if l.m != nil {
			l.m.Connections.WithLabelValues(l.name).Inc()
		}
		return lc, nil
	}
}

// admit counts c, shedding the oldest sheddable connections of the caps it
// would exceed (returned, already uncounted, for the caller to close), or
// refuses it when a full cap has none: refused names the cap.
func (l *limitListener) admit(c net.Conn, now time.Time) (lc *limitConn, shed []*limitConn, reasons []string, refused string) {
	key := clientKey(c.RemoteAddr())
	l.mu.Lock()
	defer l.mu.Unlock()
	cg := l.clients[key]
	if cg == nil {
		cg = &shedGroup{}
	}
	for _, g := range []struct {
		g      *shedGroup
		max    int
		reason string
	}{{cg, l.lim.PerClient, reasonPerClient}, {&l.all, l.lim.Max, reasonTotal}} {
		for g.g.n >= g.max {
			front := g.g.idle.Front()
			if front == nil {
				return nil, shed, reasons, g.reason
			}
			victim := front.Value.(*limitConn)
			l.forget(victim)
			shed = append(shed, victim)
			reasons = append(reasons, g.reason)
		}
	}
	l.clients[key] = cg
	lc = &limitConn{Conn: c, l: l, key: key, group: cg}
	cg.n++
	l.all.n++
	l.markIdle(lc) // nothing read yet: sheddable
	return lc, shed, reasons, ""
}

// connState follows the server's view of each connection: New (request
// headers not complete) and Idle ones may be shed, Active ones (a request
// in its handler) are kept unless ShedActive. c is a *limitConn, or the *tls.Conn around one.
func (l *limitListener) connState(c net.Conn, st http.ConnState) {
	if tc, ok := c.(*tls.Conn); ok {
		c = tc.NetConn()
	}
	lc, ok := c.(*limitConn)
	if !ok || lc.l != l {
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if lc.gone {
		return
	}
	switch st {
	case http.StateIdle:
		l.unmarkIdle(lc) // to the back: idle since now
		l.markIdle(lc)
	case http.StateActive, http.StateHijacked:
		if !l.lim.ShedActive || st == http.StateHijacked {
			l.unmarkIdle(lc)
		}
	}
}

func (l *limitListener) markIdle(lc *limitConn) {
	if lc.elems[0] != nil {
		return
	}
	lc.elems[0] = l.all.idle.PushBack(lc)
	lc.elems[1] = lc.group.idle.PushBack(lc)
}

func (l *limitListener) unmarkIdle(lc *limitConn) {
	if lc.elems[0] == nil {
		return
	}
	l.all.idle.Remove(lc.elems[0])
	lc.group.idle.Remove(lc.elems[1])
	lc.elems = [2]*list.Element{}
}

// forget uncounts lc (the caller holds l.mu).
func (l *limitListener) forget(lc *limitConn) {
	l.unmarkIdle(lc)
	lc.gone = true
	l.all.n--
	if lc.group.n--; lc.group.n <= 0 {
		delete(l.clients, lc.key)
	}
	if l.m != nil {
		l.m.Connections.WithLabelValues(l.name).Dec()
	}
}

type limitConn struct {
	net.Conn
	l     *limitListener
	key   netip.Prefix
	group *shedGroup
	// Under l.mu:
	elems [2]*list.Element // in l.all.idle and group.idle while sheddable
	gone  bool             // uncounted: closed or shed
}

func (c *limitConn) Close() error {
	err := c.Conn.Close()
	c.l.mu.Lock()
	if !c.gone {
		c.l.forget(c)
	}
	c.l.mu.Unlock()
	return err
}
