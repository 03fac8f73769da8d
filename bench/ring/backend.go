package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"net/netip"
	"sync/atomic"
	"time"
)

// endpointAddr is the address of endpoint i: 127.1.(i/250).(i%250+1). All of
// 127.0.0.0/8 is local on Linux, so one listener on the wildcard address
// answers for every one of them.
func endpointAddr(i int) netip.Addr {
	return netip.AddrFrom4([4]byte{127, 1, byte(i / 250), byte(i%250 + 1)})
}

// failingSet picks percent% of n endpoints, spread evenly (with 10% of 10
// endpoints per service: the last endpoint of every service, so no
// service loses more than its share and the brake never holds a removal).
func failingSet(n, percent int) map[netip.Addr]bool {
	out := map[netip.Addr]bool{}
	for i := range n {
		if (i+1)*percent/100 > i*percent/100 {
			out[endpointAddr(i)] = true
		}
	}
	return out
}

// backend is the one HTTP server behind every endpoint: GET /healthz
// answers 200, or 503 for the addresses in the failing set. Only loopback
// clients are served (it listens on the wildcard address).
type backend struct {
	srv     *http.Server
	ln      net.Listener
	failing atomic.Pointer[map[netip.Addr]bool]
	ok      atomic.Uint64 // 200 answers
	failed  atomic.Uint64 // 503 answers
	done    chan error
}

func startBackend(port int) (*backend, error) {
	ln, err := net.Listen("tcp4", fmt.Sprintf("0.0.0.0:%d", port))
	if err != nil {
		return nil, fmt.Errorf("backend: listen on port %d (set BENCH_RING_BASE_PORT to move every port): %w", port, err)
	}
	b := &backend{ln: loopbackOnly{ln}, done: make(chan error, 1)}
	b.failing.Store(&map[netip.Addr]bool{})
	b.srv = &http.Server{
		Handler:           http.HandlerFunc(b.serve),
		ReadHeaderTimeout: 5 * time.Second,
		IdleTimeout:       10 * time.Second,
		ErrorLog:          log.New(io.Discard, "", 0),
	}
	go func() { b.done <- b.srv.Serve(b.ln) }()
	return b, nil
}

func (b *backend) serve(w http.ResponseWriter, r *http.Request) {
	if r.URL.Path != "/healthz" {
		http.NotFound(w, r)
		return
	}
	var addr netip.Addr
	if la, ok := r.Context().Value(http.LocalAddrContextKey).(*net.TCPAddr); ok {
		addr = la.AddrPort().Addr().Unmap()
	}
	w.Header().Set("Content-Type", "text/plain")
	if (*b.failing.Load())[addr] {
		b.failed.Add(1)
		w.WriteHeader(http.StatusServiceUnavailable)
		io.WriteString(w, "failing (bench churn)\n")
		return
	}
	b.ok.Add(1)
	io.WriteString(w, "ok\n")
}

// setFailing makes /healthz answer 503 on the given addresses (nil: none).
func (b *backend) setFailing(set map[netip.Addr]bool) {
	if set == nil {
		set = map[netip.Addr]bool{}
	}
	b.failing.Store(&set)
}

// check makes one request to the endpoint address, the way a prober would.
func (b *backend) check(ctx context.Context, addr netip.Addr, port int) error {
	ctx, cancel := context.WithTimeout(ctx, 3*time.Second)
	defer cancel()
	url := fmt.Sprintf("http://%s/healthz", netip.AddrPortFrom(addr, uint16(port)))
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return err
	}
	resp, err := (&http.Client{Transport: &http.Transport{DisableKeepAlives: true}}).Do(req)
	if err != nil {
		return fmt.Errorf("backend: GET %s: %w (is 127.0.0.0/8 routed to lo?)", url, err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("backend: GET %s: status %d", url, resp.StatusCode)
	}
	return nil
}

func (b *backend) close() {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	if err := b.srv.Shutdown(ctx); err != nil {
		b.srv.Close()
	}
	if err := <-b.done; err != nil && !errors.Is(err, http.ErrServerClosed) {
		logf("backend: %v", err)
	}
}

// loopbackOnly drops connections from outside 127.0.0.0/8.
type loopbackOnly struct{ net.Listener }

func (l loopbackOnly) Accept() (net.Conn, error) {
	for {
		c, err := l.Listener.Accept()
		if err != nil {
			return nil, err
		}
		if ra, ok := c.RemoteAddr().(*net.TCPAddr); ok && ra.IP.IsLoopback() {
			return c, nil
		}
		c.Close()
	}
}
