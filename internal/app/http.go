package app

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"net/http"
	"time"

	"github.com/meridian-gslb/meridian/internal/api"
	"github.com/meridian-gslb/meridian/internal/config"
	"github.com/meridian-gslb/meridian/internal/demo"
	"github.com/meridian-gslb/meridian/internal/serving"
)

// httpServers are the running HTTP listeners.
type httpServers struct {
	main, readOnly, probe *http.Server
	addr                  string // the main listener's address ("" when off)
}

// shutdown stops both listeners, waiting up to 5 s for requests in flight.
func (s *httpServers) shutdown() {
	for _, srv := range []*http.Server{s.main, s.readOnly, s.probe} {
		if srv == nil {
			continue
		}
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		srv.Shutdown(ctx)
		cancel()
	}
}

// startHTTP serves the HTTP API on server.http.listen and, when set,
// server.http.read_only_listen, with the limits of package api, optional
// TLS, and the token file and certificate reloaded when their files change.
func (a *App) startHTTP(l *serving.Loaded) error {
	hc := l.File.Server.HTTP
	if hc.Listen == "off" {
		return nil
	}
	out := &httpServers{}
	metrics := api.NewMetrics(a.reg)
	apiOpts := a.apiOptions(hc, metrics)
	a.watchTokens(metrics)
	tlsConf, err := a.httpTLS(hc.TLS, metrics)
	if err != nil {
		return err
	}
	handler := api.Protect(api.Handler(a.pipe.Store(), a.reg, a.ready, a.status, a.log, apiOpts), api.NewHosts(hc.AllowedHosts), metrics, a.log)
	scheme := "http"
	if tlsConf != nil {
		scheme = "https"
	}
	serve := func(addr, name string, h http.Handler) (*http.Server, string, error) {
		return a.serveHTTP(hc, tlsConf, metrics, addr, name, h)
	}
	a.defer_(out.shutdown)
	if out.main, out.addr, err = serve(hc.Listen, "main", handler); err != nil {
		return fmt.Errorf("http listen %s: %w", hc.Listen, err)
	}
	a.httpAddr = out.addr
	a.log.Info("http listening", "addr", out.addr, "scheme", scheme, "paths", "/ /metrics /healthz /readyz /v1/...", "allowed_hosts", hostsSummary(hc.AllowedHosts),
		"max_connections", hc.MaxConnections, "max_connections_per_client", hc.MaxConnectionsPerClient, "max_event_streams", hc.MaxEventStreams)
	if ro := hc.ReadOnlyListen; ro != "" {
		var roAddr string
		if out.readOnly, roAddr, err = serve(ro, "read_only", api.ReadOnly(handler)); err != nil {
			return fmt.Errorf("http read_only_listen %s: %w", ro, err)
		}
		a.log.Info("read-only http listening: changes are refused there", "addr", roAddr, "scheme", scheme)
	}
	if pl := hc.ProbeListen; pl != "" {
		var probeAddr string
		if out.probe, probeAddr, err = serve(pl, "probe", nil); err != nil {
			return fmt.Errorf("http probe_listen %s: %w", pl, err)
		}
		a.log.Info("probe http listening: /healthz and /readyz only", "addr", probeAddr, "scheme", "http", "max_connections", api.ProbeMaxConnections)
	}
	return nil
}

// apiOptions are the API's options: what the app has to show and to change
// (Kubernetes, propagation, demo backends and ring keys when they run).
func (a *App) apiOptions(hc config.HTTP, metrics *api.Metrics) api.Options {
	apiOpts := api.Options{Health: a.healthReport, Admin: shiftControl{adminControl{a.pipe, a.shifts}}, Simulate: a.simulator, Tokens: a.tokens, Overview: a.overview,
		MaxEventStreams: hc.MaxEventStreams, Metrics: metrics}
	if a.kube != nil {
		apiOpts.Kube = a.kubeReport
		if pc := a.kube.prop; pc != nil {
			apiOpts.Place = func() any { return pc.Statuses() }
		}
	}
	if a.backends != nil {
		apiOpts.Demo = demoControl{a.backends}
	}
	if p := a.probing.Load(); p != nil {
		apiOpts.Keys = ringKeys{p.ring}
	}
	return apiOpts
}

// watchTokens reloads the admin token file when it changes.
func (a *App) watchTokens(metrics *api.Metrics) {
	t := a.tokens
	if t == nil || t.Path() == "" {
		return
	}
	a.watchFile(a.ctx, t.Path(), func() {
		err := t.Reload()
		metrics.Reloaded("tokens", err)
		if err != nil {
			a.log.Error("admin token file reload failed: the last good tokens stay in force", "file", t.Path(), "err", err)
			return
		}
		a.log.Info("admin token file reloaded", "file", t.Path(), "tokens", t.Len())
	})
}

// serveHTTP listens on addr and serves h there in the background with the
// connection limits of the listener name ("probe": the probe server, which
// ignores h and TLS). It returns the server and the address it listens on.
func (a *App) serveHTTP(hc config.HTTP, tlsConf *tls.Config, metrics *api.Metrics, addr, name string, h http.Handler) (*http.Server, string, error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, "", err
	}
	srv := api.NewServer(h, tlsConf, a.log)
	lim := api.Limits{Max: hc.MaxConnections, PerClient: hc.MaxConnectionsPerClient}
	if name == "probe" {
		srv, lim = api.NewProbeServer(a.ready, metrics, a.log), api.ProbeLimits
	}
	go func() {
		if err := srv.Serve(api.Listen(srv, ln, lim, name, metrics)); err != nil && !errors.Is(err, http.ErrServerClosed) {
			a.log.Error("http server", "listener", name, "err", err)
		}
	}()
	return srv, ln.Addr().String(), nil
}

// hostsSummary describes the Host allow-list for the startup log.
func hostsSummary(names []string) string {
	if len(names) == 0 {
		return "IP addresses and localhost"
	}
	return fmt.Sprintf("IP addresses, localhost and %d names of server.http.allowed_hosts", len(names))
}

// demoControl adapts the demo backends to api.DemoControl.
type demoControl struct{ b *demo.Backends }

func (d demoControl) Start(addr string) error { return d.b.Start(addr) }
func (d demoControl) Stop(addr string) error  { return d.b.Stop(addr) }
func (d demoControl) List() any               { return d.b.List() }

// httpTLS loads server.http.tls (nil: plain HTTP) and reloads it when the
// certificate or the key file changes.
func (a *App) httpTLS(t *config.TLS, m *api.Metrics) (*tls.Config, error) {
	if t == nil {
		return nil, nil
	}
	cert, err := api.LoadCertificate(t.CertFile, t.KeyFile)
	if err != nil {
		return nil, err
	}
	reload := func() {
		err := cert.Reload()
		m.Reloaded("tls", err)
		if err != nil {
			a.log.Error("TLS certificate reload failed: the last good certificate keeps serving", "cert_file", t.CertFile, "key_file", t.KeyFile, "err", err)
			return
		}
		a.log.Info("TLS certificate reloaded: new connections get it", "cert_file", t.CertFile, "not_after", cert.NotAfter())
	}
	a.watchFile(a.ctx, t.CertFile, reload)
	if t.KeyFile != t.CertFile {
		a.watchFile(a.ctx, t.KeyFile, reload)
	}
	if time.Now().After(cert.NotAfter()) {
		a.log.Warn("TLS certificate has expired: clients will refuse it", "cert_file", t.CertFile, "not_after", cert.NotAfter())
	}
	return cert.TLSConfig(), nil
}

// watchFile calls fn after each change of path (atomic renames and
// Kubernetes Secret symlink swaps included) until ctx is done.
func (a *App) watchFile(ctx context.Context, path string, fn func()) {
	w, err := config.NewWatcher(path, a.log)
	if err != nil {
		a.log.Warn("file watching disabled: changes need a restart", "file", path, "err", err)
		return
	}
	a.goBackground(func(bg context.Context) {
		ctx, cancel := context.WithCancel(ctx)
		defer cancel()
		context.AfterFunc(bg, cancel)
		w.Run(ctx, fn)
	})
}
