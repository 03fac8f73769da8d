// Package demo runs small local HTTP backends for the demo config, so that
// `make run` shows health checks, failover and recovery for real. A backend
// can be stopped (its listener closes: probes get "connection refused") and
// started again, from the CLI or the HTTP API.
package demo

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/netip"
	"slices"
	"sync"
	"time"

	"github.com/meridian-gslb/meridian/internal/model"
)

// Backends is a set of demo HTTP servers keyed by "ip:port".
type Backends struct {
	log *slog.Logger
	mu  sync.Mutex
	srv map[string]*backend
}

type backend struct {
	addr    string
	path    string
	server  *http.Server
	running bool
}

// BackendStatus is one backend as shown by the API.
type BackendStatus struct {
	Addr    string `json:"addr"`
	Path    string `json:"path"`
	Running bool   `json:"running"`
}

// ForConfig returns backends for every endpoint of d that has an http or tcp
// check and a loopback address (the demo's endpoints). Nothing is started yet.
func ForConfig(d *model.Desired, log *slog.Logger) *Backends {
	b := &Backends{log: log, srv: map[string]*backend{}}
	for _, s := range d.Services {
		c := s.HealthCheck
		if c == nil || (c.Kind != model.CheckHTTP && c.Kind != model.CheckTCP) {
			continue
		}
		for _, e := range s.Endpoints {
			ip, err := netip.ParseAddr(e.Address)
			if err != nil || !ip.IsLoopback() {
				continue
			}
			addr := netip.AddrPortFrom(ip, uint16(c.Port)).String()
			path := c.Path
			if path == "" {
				path = "/"
			}
			b.srv[addr] = &backend{addr: addr, path: path}
		}
	}
	return b
}

// StartAll starts every backend; it fails if one cannot listen.
func (b *Backends) StartAll() error {
	for _, addr := range b.addrs() {
		if err := b.Start(addr); err != nil {
			b.StopAll()
			return err
		}
	}
	return nil
}

// StopAll stops every backend.
func (b *Backends) StopAll() {
	for _, addr := range b.addrs() {
		_ = b.Stop(addr)
	}
}

func (b *Backends) addrs() []string {
	b.mu.Lock()
	defer b.mu.Unlock()
	out := make([]string, 0, len(b.srv))
	for a := range b.srv {
		out = append(out, a)
	}
	slices.Sort(out)
	return out
}

// ErrUnknown is returned for an address that is not a demo backend.
var ErrUnknown = errors.New("not a demo backend")

// Start starts the backend at addr (ip:port, or just the ip when only one
// backend has it). Starting a running backend does nothing.
func (b *Backends) Start(addr string) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	be, err := b.find(addr)
	if err != nil {
		return err
	}
	if be.running {
		return nil
	}
	ln, err := net.Listen("tcp", be.addr)
	if err != nil {
		return fmt.Errorf("demo backend %s: %w", be.addr, err)
	}
	mux := http.NewServeMux()
	mux.HandleFunc(be.path, func(w http.ResponseWriter, _ *http.Request) {
		fmt.Fprintf(w, "ok: demo backend %s\n", be.addr)
	})
	be.server = &http.Server{Handler: mux, ReadHeaderTimeout: 2 * time.Second}
	be.running = true
	go be.server.Serve(ln)
	b.log.Info("demo backend started", "endpoint", be.addr)
	return nil
}

// Stop stops the backend at addr; probes then fail with connection refused.
func (b *Backends) Stop(addr string) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	be, err := b.find(addr)
	if err != nil {
		return err
	}
	if !be.running {
		return nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	_ = be.server.Shutdown(ctx)
	be.running = false
	b.log.Info("demo backend stopped", "endpoint", be.addr)
	return nil
}

// find resolves "ip:port" or a bare "ip". The caller holds b.mu.
func (b *Backends) find(addr string) (*backend, error) {
	if be, ok := b.srv[addr]; ok {
		return be, nil
	}
	var found *backend
	for a, be := range b.srv {
		if ap, err := netip.ParseAddrPort(a); err == nil && ap.Addr().String() == addr {
			if found != nil {
				return nil, fmt.Errorf("%q matches several demo backends: give ip:port", addr)
			}
			found = be
		}
	}
	if found == nil {
		return nil, fmt.Errorf("%q: %w (known: %v)", addr, ErrUnknown, b.knownLocked())
	}
	return found, nil
}

func (b *Backends) knownLocked() []string {
	out := make([]string, 0, len(b.srv))
	for a := range b.srv {
		out = append(out, a)
	}
	slices.Sort(out)
	return out
}

// List returns every backend and whether it runs.
func (b *Backends) List() []BackendStatus {
	b.mu.Lock()
	defer b.mu.Unlock()
	out := make([]BackendStatus, 0, len(b.srv))
	for _, be := range b.srv {
		out = append(out, BackendStatus{Addr: be.addr, Path: be.path, Running: be.running})
	}
	slices.SortFunc(out, func(x, y BackendStatus) int {
		switch {
		case x.Addr < y.Addr:
			return -1
		case x.Addr > y.Addr:
			return 1
		}
		return 0
	})
	return out
}
