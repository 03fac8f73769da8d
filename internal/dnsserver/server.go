// Package dnsserver is Meridian's embedded authoritative DNS server: UDP on
// several SO_REUSEPORT sockets per address and TCP with RFC 7766 framing,
// answering through engine.(*Snapshot).Respond.
package dnsserver

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/netip"
	"runtime"
	"runtime/debug"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/miekg/dns"
	"golang.org/x/sys/unix"

	"github.com/meridian-gslb/meridian/internal/engine"
)

// Source gives the current snapshot; *engine.Store implements it. Load is
// called once per query and must not block.
type Source interface {
	Load() *engine.Snapshot
}

// Config configures a Server.
type Config struct {
	Listen            []string      // IP:port addresses, UDP and TCP on each (required)
	UDPSockets        int           // SO_REUSEPORT UDP sockets (and reader goroutines) per address (default: number of CPUs)
	MaxTCPConnections int           // concurrent TCP connections per address (default 1024); when full the oldest idle one is closed for a new one
	MaxTCPPerClient   int           // concurrent TCP connections per client prefix, over all listen addresses (default 32)
	TCPIdleTimeout    time.Duration // close a TCP connection idle this long (default 10s)
	// TCPPressureIdleTimeout replaces TCPIdleTimeout for idle connections
	// while a listener holds more than half of MaxTCPConnections (default 2s).
	TCPPressureIdleTimeout time.Duration
	// MaxTCPPerSite caps the connections of one IPv6 site (TCPSiteIPv6Prefix)
	// over all listen addresses, so that the 256 /56s of one /48 cannot
	// take a listener (default 128).
	MaxTCPPerSite     int
	TCPSiteIPv6Prefix int          // default 48 (no site cap when not shorter than TCPClientIPv6Prefix)
	UDPPayloadSize    int          // our EDNS0 UDP payload size (default 1232)
	RRL               RRL          // response rate limiting on UDP (zero value: off)
	Logger            *slog.Logger // default slog.Default()
	Metrics           *Metrics     // default: unregistered metrics
	Transfers         Transfers    // AXFR/IXFR and TSIG-signed queries (nil: transfers REFUSED)

	// TCPClientIPv4Prefix and TCPClientIPv6Prefix are the prefix lengths
	// that count as one client for MaxTCPPerClient: a host easily holds a
	// whole IPv6 /64, so counting single addresses caps nothing.
	TCPClientIPv4Prefix int       // default 24
	TCPClientIPv6Prefix int       // default 56
	SignLimit           SignLimit // replies needing fresh signatures per client prefix, UDP and TCP (zero value: off)
}

// Server answers DNS over UDP and TCP. Create it with New, then Start.
type Server struct {
	cfg    Config
	src    Source
	log    *slog.Logger
	m      *Metrics
	udp    []*net.UDPConn
	tcp    []net.Listener
	wg     sync.WaitGroup
	closed atomic.Bool

	rrl *limiter // nil when RRL is off
	// signUDP and signTCP meter replies needing fresh signatures per client prefix,
	// one bucket per transport (nil when the signing limit is off).
	signUDP, signTCP engine.SignGate

	tcpConns *connTable // open TCP connections by listener, client prefix and IPv6 site
}

// Defaults of the TCP connection table.
const (
	DefaultMaxTCPPerSite          = 128
	DefaultTCPSiteIPv6Prefix      = 48
	DefaultTCPPressureIdleTimeout = 2 * time.Second
)

// New returns a server that answers from src.
func New(cfg Config, src Source) *Server {
	cfg = cfg.withDefaults()
	s := &Server{cfg: cfg, src: src, log: cfg.Logger, m: cfg.Metrics,
		tcpConns: newConnTable(tcpLimits{perListener: cfg.MaxTCPConnections, perClient: cfg.MaxTCPPerClient, perSite: cfg.MaxTCPPerSite,
			v4: cfg.TCPClientIPv4Prefix, v6: cfg.TCPClientIPv6Prefix, site: cfg.TCPSiteIPv6Prefix}, cfg.TCPPressureIdleTimeout)}
	if cfg.RRL.Enabled {
		s.cfg.RRL = cfg.RRL.withDefaults()
		s.rrl = newLimiter(s.cfg.RRL, time.Now())
	}
	if cfg.SignLimit.Enabled {
		s.cfg.SignLimit = cfg.SignLimit.withDefaults()
		s.signUDP, s.signTCP = newSignGates(s.cfg.SignLimit, time.Now())
	}
	return s
}

// withDefaults returns cfg with the defaults of its sockets, TCP limits,
// payload size, logger and metrics filled in (those of RRL and SignLimit
// apply only when they are enabled: see their withDefaults).
func (cfg Config) withDefaults() Config {
	if cfg.UDPSockets <= 0 {
		cfg.UDPSockets = runtime.GOMAXPROCS(0)
	}
	if cfg.MaxTCPConnections <= 0 {
		cfg.MaxTCPConnections = 1024
	}
	if cfg.MaxTCPPerClient <= 0 {
		cfg.MaxTCPPerClient = 32
	}
	if cfg.TCPClientIPv4Prefix <= 0 || cfg.TCPClientIPv4Prefix > 32 {
		cfg.TCPClientIPv4Prefix = DefaultIPv4Prefix
	}
	if cfg.TCPClientIPv6Prefix <= 0 || cfg.TCPClientIPv6Prefix > 128 {
		cfg.TCPClientIPv6Prefix = DefaultIPv6Prefix
	}
	if cfg.TCPIdleTimeout <= 0 {
		cfg.TCPIdleTimeout = 10 * time.Second
	}
	if cfg.TCPPressureIdleTimeout <= 0 {
		cfg.TCPPressureIdleTimeout = DefaultTCPPressureIdleTimeout
	}
	if cfg.MaxTCPPerSite <= 0 {
		cfg.MaxTCPPerSite = DefaultMaxTCPPerSite
	}
	if cfg.TCPSiteIPv6Prefix <= 0 || cfg.TCPSiteIPv6Prefix > 128 {
		cfg.TCPSiteIPv6Prefix = DefaultTCPSiteIPv6Prefix
	}
	if cfg.UDPPayloadSize <= 0 {
		cfg.UDPPayloadSize = engine.DefaultUDPPayloadSize
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if cfg.Metrics == nil {
		cfg.Metrics = NewMetrics(nil)
	}
	return cfg
}

func reusePort(_, _ string, c syscall.RawConn) error {
	var serr error
	err := c.Control(func(fd uintptr) {
		serr = unix.SetsockoptInt(int(fd), unix.SOL_SOCKET, unix.SO_REUSEPORT, 1)
	})
	return errors.Join(err, serr)
}

// Start binds every address and starts serving. On error nothing is left
// listening.
//
// SO_REUSEPORT is set only on the UDP sockets and only when there are
// several per address: any socket of the same user that sets it too can
// join such a group and take a share of its queries, so a single socket
// (udp_sockets: 1) and the TCP listener leave the port to this process
// alone.
func (s *Server) Start() error {
	var ulc, tlc net.ListenConfig
	if s.cfg.UDPSockets > 1 {
		ulc.Control = reusePort
	}
	ctx := context.Background()
	for _, addr := range s.cfg.Listen {
		ap, err := netip.ParseAddrPort(addr)
		if err != nil {
			s.closeAll()
			return fmt.Errorf("dns listen %q: %w", addr, err)
		}
		udp, ln, err := s.listen(ctx, ulc, tlc, ap)
		if err != nil {
			s.closeAll()
			return err
		}
		s.udp = append(s.udp, udp...)
		s.tcp = append(s.tcp, ln)
		ap = ln.Addr().(*net.TCPAddr).AddrPort()
		s.log.Info("dns listening", "addr", ap.String(), "udp_sockets", s.cfg.UDPSockets, "rrl", s.rrlSummary(),
			"sign_limit", s.signLimitSummary(), "tcp_per_client", s.tcpPerClientSummary())
	}
	for _, uc := range s.udp {
		s.wg.Add(1)
		go s.serveUDPBatch(uc)
	}
	for _, ln := range s.tcp {
		s.wg.Add(1)
		go s.acceptTCP(ln)
	}
	return nil
}

// listenAttempts bounds the tries for port 0: the port the kernel picks for
// the first UDP socket can be in use for TCP (by another program's
// connection), and then another port is tried.
const listenAttempts = 8

// listen binds the UDP sockets and the TCP listener of one address. The
// first UDP socket fixes the port (which matters for port 0); the others
// join it through SO_REUSEPORT, and the TCP listener takes the same port.
func (s *Server) listen(ctx context.Context, ulc, tlc net.ListenConfig, ap netip.AddrPort) ([]*net.UDPConn, net.Listener, error) {
	for attempt := 1; ; attempt++ {
		var udp []*net.UDPConn
		closeUDP := func() {
			for _, uc := range udp {
				uc.Close()
			}
		}
		bound := ap
		for i := 0; i < s.cfg.UDPSockets; i++ {
			pc, err := ulc.ListenPacket(ctx, "udp", bound.String())
			if err != nil {
				closeUDP()
				return nil, nil, fmt.Errorf("dns listen udp %s: %w", bound, err)
			}
			uc := pc.(*net.UDPConn)
			udp = append(udp, uc)
			if i == 0 {
				bound = uc.LocalAddr().(*net.UDPAddr).AddrPort()
			}
		}
		ln, err := tlc.Listen(ctx, "tcp", bound.String())
		if err == nil {
			return udp, ln, nil
		}
		closeUDP()
		if ap.Port() != 0 || attempt == listenAttempts || !errors.Is(err, syscall.EADDRINUSE) {
			return nil, nil, fmt.Errorf("dns listen tcp %s: %w", bound, err)
		}
		s.log.Debug("dns listen: the port picked for UDP is in use for TCP, trying another", "addr", bound.String())
	}
}

// Addrs returns the bound address of every listen address (UDP and TCP share it).
func (s *Server) Addrs() []netip.AddrPort {
	var out []netip.AddrPort
	for _, ln := range s.tcp {
		out = append(out, ln.Addr().(*net.TCPAddr).AddrPort())
	}
	return out
}

func (s *Server) closeAll() {
	for _, uc := range s.udp {
		uc.Close()
	}
	for _, ln := range s.tcp {
		ln.Close()
	}
}

// Shutdown stops accepting queries, lets TCP connections finish the query
// they are on, and waits for every goroutine until ctx is done; then it
// closes what is left.
func (s *Server) Shutdown(ctx context.Context) error {
	s.closed.Store(true)
	s.closeAll()
	s.tcpConns.each(func(c net.Conn) {
		c.SetReadDeadline(time.Now()) // wake idle readers; a query in progress still gets its answer
	})
	done := make(chan struct{})
	go func() { s.wg.Wait(); close(done) }()
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		s.tcpConns.each(func(c net.Conn) { c.Close() })
		<-done
		return ctx.Err()
	}
}

func (s *Server) serveUDP(uc *net.UDPConn) {
	defer s.wg.Done()
	w := s.newWorker()
	buf := make([]byte, maxUDPQuery)
	for {
		n, from, err := uc.ReadFromUDPAddrPort(buf)
		if err != nil {
			if s.stopped(err) {
				return
			}
			continue
		}
		start := time.Now()
		resp := w.serveUDP(buf[:n], from.Addr(), start)
		if resp == nil {
			continue
		}
		if _, err := uc.WriteToUDPAddrPort(resp, from); err != nil && !s.closed.Load() {
			s.log.Debug("dns udp write", "client", from.String(), "err", err)
		}
		w.udpDur.Observe(time.Since(start).Seconds())
	}
}

// acceptTCP serves the connections of one listener, counted in the
// connection table (tcpconns.go): a connection beyond a cap frees a slot by
// closing the oldest idle one of that cap's group, or is closed at once
// when none is idle.
func (s *Server) acceptTCP(ln net.Listener) {
	defer s.wg.Done()
	group := s.tcpConns.newListener()
	for {
		c, err := ln.Accept()
		if err != nil {
			if s.closed.Load() || errors.Is(err, net.ErrClosed) {
				return
			}
			s.log.Warn("dns tcp accept", "err", err)
			time.Sleep(10 * time.Millisecond)
			continue
		}
		tc, evicted, reasons, refused := s.tcpConns.admit(group, c, tcpClient(c), time.Now())
		for i, v := range evicted {
			s.m.TCPEvicted.WithLabelValues(reasons[i]).Inc()
			v.c.Close() // its goroutine ends on the read error; the table no longer counts it
		}
		switch refused {
		case "":
		case tcpReasonTotal:
			s.m.TCPRejected.Inc()
			c.Close()
			continue
		default:
			s.m.TCPClientRejected.Inc()
			c.Close()
			continue
		}
		s.m.TCPConns.Inc()
		s.wg.Add(1)
		go func() {
			defer s.wg.Done()
			s.serveTCP(tc)
			s.tcpConns.release(tc)
			c.Close()
			s.m.TCPConns.Dec()
		}()
	}
}

// tcpClient is the client address of a TCP connection (IPv4-mapped
// addresses unmapped, so one client counts once).
func tcpClient(c net.Conn) netip.Addr {
	if a, ok := c.RemoteAddr().(*net.TCPAddr); ok {
		return a.AddrPort().Addr().Unmap()
	}
	return netip.Addr{}
}

// tcpPerClientSummary describes the TCP cap per client prefix for the
// startup log.
func (s *Server) tcpPerClientSummary() string {
	sum := fmt.Sprintf("%d per /%d (IPv4) /%d (IPv6)", s.cfg.MaxTCPPerClient, s.cfg.TCPClientIPv4Prefix, s.cfg.TCPClientIPv6Prefix)
	if s.cfg.TCPSiteIPv6Prefix < s.cfg.TCPClientIPv6Prefix {
		sum += fmt.Sprintf(", %d per IPv6 /%d", s.cfg.MaxTCPPerSite, s.cfg.TCPSiteIPv6Prefix)
	}
	return sum
}

// rrlSummary describes the RRL settings for the startup log.
func (s *Server) rrlSummary() string {
	r := s.cfg.RRL
	if !r.Enabled {
		return "off"
	}
	return fmt.Sprintf("%d/s and %d bytes/s per /%d (IPv4) /%d (IPv6) and response identity, window %ds, slip %d", r.ResponsesPerSec, r.BytesPerSec, r.IPv4Prefix, r.IPv6Prefix, r.Window, r.Slip)
}

var workers = sync.Pool{}

// maxUDPQuery is the read buffer of a UDP socket: the largest datagram.
const maxUDPQuery = dns.MaxMsgSize

// serveTCP answers queries on one connection in order (RFC 7766 framing)
// until the client closes it, it idles past the timeout, it is evicted for
// a new connection while idle, or we shut down. Every read has a deadline
// (TCPIdleTimeout, or TCPPressureIdleTimeout while the listener is more
// than half full, for the length; TCPIdleTimeout for the message) and a
// message is at most 65535 bytes: the 2-byte length prefix cannot say
// more, and msg holds that much.
func (s *Server) serveTCP(tc *tcpConn) {
	c := tc.c
	w, _ := workers.Get().(*worker)
	if w == nil || w.s != s {
		w = s.newWorker()
	}
	defer workers.Put(w)
	from := c.RemoteAddr().(*net.TCPAddr).AddrPort().Addr()
	var lenBuf [2]byte
	msg := make([]byte, dns.MaxMsgSize)
	var xc *transferConn // adds the EDE of refused transfers (ede.go)
	if s.cfg.Transfers != nil {
		xc = &transferConn{Conn: c, w: w}
	}
	for first := true; !s.closed.Load(); first = false {
		now := time.Now()
		if !first {
			s.tcpConns.idle(tc, now) // admit marked it idle the first time
		}
		c.SetReadDeadline(now.Add(s.tcpConns.idleTimeout(tc, s.cfg.TCPIdleTimeout)))
		if _, err := io.ReadFull(c, lenBuf[:]); err != nil {
			return
		}
		if !s.tcpConns.busy(tc) {
			return // evicted while idle
		}
		n := int(binary.BigEndian.Uint16(lenBuf[:]))
		c.SetReadDeadline(time.Now().Add(s.cfg.TCPIdleTimeout))
		if _, err := io.ReadFull(c, msg[:n]); err != nil {
			return
		}
		if t := s.cfg.Transfers; t != nil {
			xc.query(msg[:n])
			if handled, err := s.serveTransferTCP(t, xc, msg[:n], from); handled {
				if err != nil {
					return
				}
				continue
			}
		}
		start := time.Now()
		resp := w.serve(msg[:n], from, true)
		if resp == nil {
			return // unparseable: close the connection (RFC 7766 6.2.3 allows it)
		}
		framed := w.frame[:2+len(resp)]
		binary.BigEndian.PutUint16(framed, uint16(len(resp)))
		copy(framed[2:], resp)
		c.SetWriteDeadline(time.Now().Add(s.cfg.TCPIdleTimeout))
		if _, err := c.Write(framed); err != nil {
			return
		}
		w.tcpDur.Observe(time.Since(start).Seconds())
	}
}

// stopped reports whether a read error means the socket was closed for
// shutdown; other errors are logged and the caller reads on.
func (s *Server) stopped(err error) bool {
	if s.closed.Load() || errors.Is(err, net.ErrClosed) {
		return true
	}
	s.log.Warn("dns udp read", "err", err)
	return false
}

// recoverPanic logs a panic with its stack and counts it.
func (s *Server) recoverPanic(v any) {
	s.m.Panics.Inc()
	s.log.Error("dns handler panic: answered SERVFAIL", "panic", fmt.Sprint(v), "stack", string(debug.Stack()))
}
