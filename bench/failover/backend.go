package main

import (
	"errors"
	"fmt"
	"io"
	"log"
	"math/rand/v2"
	"net"
	"net/http"
	"net/netip"
	"os/exec"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/sys/unix"
)

// holdMax bounds how long a blackholed or "lost" request is held open
// without an answer (both checkers time out long before: 2 s and 3 s).
const holdMax = 30 * time.Second

// backend is one loopback HTTP server the benchmark controls; both DNS
// servers health-check it with GET /healthz. Its faults:
//
//   - kill: the listener and every connection are closed, so a new
//     connection is refused (RST), like a crashed process;
//   - blackhole: connections are accepted but no request is ever answered,
//     so an HTTP check times out (a TCP-connect check would still pass);
//   - loss: each request, with the given probability, is held like under
//     blackhole, so that check times out. This is loss emulated at the
//     application level: every lost request is a failed check, where real
//     packet loss of that rate would mostly cost TCP retransmits.
type backend struct {
	name string
	addr netip.AddrPort

	mu      sync.Mutex
	srv     *http.Server  // nil while killed
	release chan struct{} // closed to end every held request (abort it without an answer)

	// vanished: a listening socket on the port that never accepts, its
	// queue filled by filler (vanish); -1 when not vanished.
	hole   int
	filler net.Conn

	blackhole atomic.Bool
	lossPct   atomic.Int32
	answered  atomic.Uint64 // 200 answers
	held      atomic.Uint64 // requests held without an answer (blackhole or loss)
}

func newBackend(name string, addr netip.AddrPort) *backend {
	return &backend{name: name, addr: addr, release: make(chan struct{}), hole: -1}
}

// start listens and serves (again, after kill). It is a no-op when the
// backend is already serving.
func (b *backend) start() error {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.srv != nil {
		return nil
	}
	b.closeHole()
	ln, err := net.Listen("tcp4", b.addr.String())
	if err != nil {
		return fmt.Errorf("backend %s: listen on %s: %w", b.name, b.addr, err)
	}
	srv := &http.Server{
		Handler:           http.HandlerFunc(b.serve),
		ReadHeaderTimeout: 5 * time.Second,
		IdleTimeout:       30 * time.Second,
		ErrorLog:          log.New(io.Discard, "", 0),
	}
	b.srv = srv
	go func() {
		if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			logf("backend %s: serve: %v", b.name, err)
		}
	}()
	return nil
}

// kill closes the listener and every open connection: the next connection
// is refused. Held requests are aborted.
func (b *backend) kill() {
	b.mu.Lock()
	srv := b.srv
	b.srv = nil
	close(b.release)
	b.release = make(chan struct{})
	b.mu.Unlock()
	if srv != nil {
		srv.Close()
	}
}

// vanish kills the backend and keeps its port in a listening socket that
// never accepts, its one-place queue filled: the kernel drops every new
// SYN, so a connection attempt times out as to a host that is gone (a
// blackhole at the TCP level, for clients and checkers alike; setBlackhole
// is one at the HTTP level). start ends it.
func (b *backend) vanish() error {
	b.kill()
	b.mu.Lock()
	defer b.mu.Unlock()
	fd, err := unix.Socket(unix.AF_INET, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return fmt.Errorf("backend %s: vanish: socket: %w", b.name, err)
	}
	b.hole = fd
	if err := unix.SetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_REUSEADDR, 1); err != nil {
		b.closeHole()
		return fmt.Errorf("backend %s: vanish: SO_REUSEADDR: %w", b.name, err)
	}
	// The closed server's connections may hold the port for a moment
	// (EADDRINUSE): try for up to 5 s.
	sa := &unix.SockaddrInet4{Port: int(b.addr.Port()), Addr: b.addr.Addr().As4()}
	for deadline := time.Now().Add(5 * time.Second); ; {
		err = unix.Bind(fd, sa)
		if err == nil {
			break
		}
		if !errors.Is(err, unix.EADDRINUSE) || time.Now().After(deadline) {
			b.closeHole()
			ss, _ := exec.Command("ss", "-tano", fmt.Sprintf("sport = :%d", b.addr.Port())).Output()
			return fmt.Errorf("backend %s: vanish: bind %s: %w; sockets on the port:\n%s", b.name, b.addr, err, ss)
		}
		time.Sleep(50 * time.Millisecond)
	}
	if err := unix.Listen(fd, 0); err != nil { // a queue of one
		b.closeHole()
		return fmt.Errorf("backend %s: vanish: listen: %w", b.name, err)
	}
	c, err := net.DialTimeout("tcp4", b.addr.String(), time.Second)
	if err != nil {
		b.closeHole()
		return fmt.Errorf("backend %s: vanish: filling the queue: %w", b.name, err)
	}
	b.filler = c
	if c2, err := net.DialTimeout("tcp4", b.addr.String(), 300*time.Millisecond); err == nil {
		c2.Close()
		b.closeHole()
		return fmt.Errorf("backend %s: vanish: a connection still completes with the queue full", b.name)
	}
	return nil
}

// closeHole ends vanish. b.mu is held.
func (b *backend) closeHole() {
	if b.filler != nil {
		b.filler.Close()
		b.filler = nil
	}
	if b.hole >= 0 {
		unix.Close(b.hole)
		b.hole = -1
	}
}

// setBlackhole turns the blackhole on or off; off aborts the held requests
// (their checkers have given up long before).
func (b *backend) setBlackhole(on bool) {
	b.blackhole.Store(on)
	if !on {
		b.releaseHeld()
	}
}

// setLoss sets the share of requests (0..100 %) held without an answer.
func (b *backend) setLoss(pct int) {
	b.lossPct.Store(int32(pct))
	if pct == 0 {
		b.releaseHeld()
	}
}

func (b *backend) releaseHeld() {
	b.mu.Lock()
	close(b.release)
	b.release = make(chan struct{})
	b.mu.Unlock()
}

func (b *backend) serve(w http.ResponseWriter, r *http.Request) {
	if r.URL.Path != "/healthz" {
		http.NotFound(w, r)
		return
	}
	if b.blackhole.Load() || (b.lossPct.Load() > 0 && rand.IntN(100) < int(b.lossPct.Load())) {
		b.held.Add(1)
		b.mu.Lock()
		rel := b.release
		b.mu.Unlock()
		t := time.NewTimer(holdMax)
		defer t.Stop()
		select {
		case <-r.Context().Done(): // the checker gave up and closed the connection
		case <-rel:
		case <-t.C:
		}
		// Close the connection without writing a response.
		panic(http.ErrAbortHandler)
	}
	b.answered.Add(1)
	w.Header().Set("Content-Type", "text/plain")
	io.WriteString(w, "ok\n")
}

// check makes one request, the way a checker would.
func (b *backend) check() error {
	c := &http.Client{Timeout: 2 * time.Second, Transport: &http.Transport{DisableKeepAlives: true}}
	resp, err := c.Get("http://" + b.addr.String() + "/healthz")
	if err != nil {
		return fmt.Errorf("backend %s: GET /healthz: %w (is 127.0.0.0/8 routed to lo?)", b.name, err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("backend %s: GET /healthz: status %d", b.name, resp.StatusCode)
	}
	return nil
}
