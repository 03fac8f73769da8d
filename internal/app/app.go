package app

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/signal"
	"reflect"
	"runtime"
	"sync"
	"syscall"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"

	"github.com/meridian-gslb/meridian/deploy/examples"
	"github.com/meridian-gslb/meridian/internal/api"
	"github.com/meridian-gslb/meridian/internal/config"
	"github.com/meridian-gslb/meridian/internal/dnsserver"
	"github.com/meridian-gslb/meridian/internal/engine"
)

// Version is the build's version, set by the linker (-X).
var Version = "dev"

// Options of `meridian serve`. Non-empty overrides win over the file.
type Options struct {
	ConfigPath string   // "" = the embedded demo config
	DNSListen  []string // override server.dns.listen
	HTTPListen string   // override server.http.listen
	LogFormat  string   // override server.log.format
	LogLevel   string   // override server.log.level
	LogOutput  io.Writer
	// Started, if set, is called once DNS and HTTP are listening.
	Started func(dns []string, http string)
}

// App is one running `meridian serve`.
type App struct {
	opts  Options
	log   *slog.Logger
	store engine.Store
	reg   *prometheus.Registry

	reloads    *prometheus.CounterVec
	lastOK     prometheus.Gauge
	mu         sync.Mutex
	cur        *config.File
	lastReload time.Time
	lastErr    string
	dnsUp      bool
}

// Run starts Meridian and blocks until ctx is cancelled or SIGINT/SIGTERM
// arrives; SIGHUP reloads the config.
func Run(ctx context.Context, opts Options) error {
	if opts.LogOutput == nil {
		opts.LogOutput = os.Stderr
	}
	name, data := opts.ConfigPath, []byte(nil)
	if name == "" {
		name, data = "embedded demo config (deploy/examples/demo.yaml)", examples.Demo
	}
	loaded, err := Load(name, data)
	if err != nil {
		return err
	}
	f := loaded.File
	applyOverrides(f, opts)
	log, err := newLogger(opts.LogOutput, f.Server.Log)
	if err != nil {
		return err
	}
	a := &App{opts: opts, log: log, reg: prometheus.NewRegistry(), cur: f}
	a.registerMetrics()
	if opts.ConfigPath == "" {
		log.Warn("no --config given: serving the embedded demo config", "zones", len(f.Zones), "services", len(f.Services))
	}
	if _, err := a.publish(loaded); err != nil {
		return err
	}
	a.lastOK.SetToCurrentTime()
	a.lastReload = time.Now()

	dnsSrv := dnsserver.New(dnsserver.Config{
		Listen:            f.Server.DNS.Listen,
		UDPSockets:        f.Server.DNS.UDPSockets,
		MaxTCPConnections: f.Server.DNS.MaxTCPConnections,
		TCPIdleTimeout:    f.Server.DNS.TCPIdleTimeout,
		UDPPayloadSize:    f.Server.DNS.UDPPayloadSize,
		Logger:            log,
		Metrics:           dnsserver.NewMetrics(a.reg),
	}, &a.store)
	if err := dnsSrv.Start(); err != nil {
		return err
	}
	a.mu.Lock()
	a.dnsUp = true
	a.mu.Unlock()
	var dnsAddrs []string
	for _, ap := range dnsSrv.Addrs() {
		dnsAddrs = append(dnsAddrs, ap.String())
	}

	var httpSrv *http.Server
	httpAddr := ""
	if f.Server.HTTP.Listen != "off" {
		ln, err := net.Listen("tcp", f.Server.HTTP.Listen)
		if err != nil {
			shutdownDNS(dnsSrv)
			return fmt.Errorf("http listen %s: %w", f.Server.HTTP.Listen, err)
		}
		httpAddr = ln.Addr().String()
		httpSrv = &http.Server{
			Handler:           api.Handler(&a.store, a.reg, a.ready, a.status, log),
			ReadHeaderTimeout: 5 * time.Second,
		}
		go func() {
			if err := httpSrv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
				log.Error("http server", "err", err)
			}
		}()
		log.Info("http listening", "addr", httpAddr, "paths", "/ /metrics /healthz /readyz")
	}
	if opts.Started != nil {
		opts.Started(dnsAddrs, httpAddr)
	}

	ctx, stop := signal.NotifyContext(ctx, os.Interrupt, syscall.SIGTERM)
	defer stop()
	hup := make(chan os.Signal, 1)
	signal.Notify(hup, syscall.SIGHUP)
	defer signal.Stop(hup)
	var wg sync.WaitGroup
	if opts.ConfigPath != "" {
		w, err := newWatcher(opts.ConfigPath, log)
		if err != nil {
			log.Warn("config file watching disabled; SIGHUP still reloads", "err", err)
		} else {
			wg.Add(1)
			go func() { defer wg.Done(); w.run(ctx, func() { a.Reload("file change") }) }()
		}
	}
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			select {
			case <-ctx.Done():
				return
			case <-hup:
				a.Reload("SIGHUP")
			}
		}
	}()

	<-ctx.Done()
	log.Info("shutting down")
	shutdownDNS(dnsSrv)
	if httpSrv != nil {
		sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		httpSrv.Shutdown(sctx)
		cancel()
	}
	wg.Wait()
	return nil
}

func shutdownDNS(s *dnsserver.Server) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	s.Shutdown(ctx)
}

func applyOverrides(f *config.File, o Options) {
	if len(o.DNSListen) > 0 {
		f.Server.DNS.Listen = o.DNSListen
	}
	if o.HTTPListen != "" {
		f.Server.HTTP.Listen = o.HTTPListen
	}
	if o.LogFormat != "" {
		f.Server.Log.Format = o.LogFormat
	}
	if o.LogLevel != "" {
		f.Server.Log.Level = o.LogLevel
	}
}

func newLogger(w io.Writer, c config.Log) (*slog.Logger, error) {
	var level slog.Level
	if err := level.UnmarshalText([]byte(c.Level)); err != nil {
		return nil, fmt.Errorf("log level %q: %w (allowed: debug, info, warn, error)", c.Level, err)
	}
	opts := &slog.HandlerOptions{Level: level}
	switch c.Format {
	case "json":
		return slog.New(slog.NewJSONHandler(w, opts)), nil
	case "text", "":
		return slog.New(slog.NewTextHandler(w, opts)), nil
	}
	return nil, fmt.Errorf("log format %q is not allowed (allowed: text, json)", c.Format)
}

func (a *App) publish(l *Loaded) (*engine.Snapshot, error) {
	snap, err := a.store.Publish(&l.File.Desired, engine.Options{Locator: l.Locator})
	if err != nil {
		return nil, fmt.Errorf("compile: %w", err)
	}
	a.log.Info("snapshot published", "generation", snap.Generation(), "zones", len(l.File.Zones), "services", len(l.File.Services), "clusters", len(l.File.Clusters))
	return snap, nil
}

// Reload loads the config file again. A valid file replaces the snapshot
// atomically; an invalid one is logged and counted, and the previous
// snapshot keeps serving.
func (a *App) Reload(trigger string) error {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.lastReload = time.Now()
	loaded, err := Load(a.opts.ConfigPath, nil)
	if err == nil {
		applyOverrides(loaded.File, a.opts)
		_, err = a.publish(loaded)
	}
	if err != nil {
		a.reloads.WithLabelValues("failure").Inc()
		a.lastErr = err.Error()
		a.log.Error("config reload failed: previous config keeps serving", "trigger", trigger, "err", err)
		return err
	}
	a.reloads.WithLabelValues("success").Inc()
	a.lastOK.SetToCurrentTime()
	a.lastErr = ""
	if !reflect.DeepEqual(loaded.File.Server, a.cur.Server) {
		a.log.Warn("config reload: the server section changed; restart to apply it", "trigger", trigger)
	}
	a.cur = loaded.File
	a.log.Info("config reloaded", "trigger", trigger)
	return nil
}

func (a *App) ready() error {
	a.mu.Lock()
	defer a.mu.Unlock()
	switch {
	case a.store.Load() == nil:
		return errors.New("no snapshot loaded")
	case !a.dnsUp:
		return errors.New("dns listeners not started")
	}
	return nil
}

func (a *App) status() api.Status {
	a.mu.Lock()
	defer a.mu.Unlock()
	return api.Status{ConfigPath: a.opts.ConfigPath, LastReload: a.lastReload, LastReloadErr: a.lastErr}
}

func (a *App) registerMetrics() {
	a.reloads = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "meridian_config_reloads_total",
		Help: "Config reloads by result (success, failure). A failed reload keeps the previous snapshot serving.",
	}, []string{"result"})
	a.reloads.WithLabelValues("success")
	a.reloads.WithLabelValues("failure")
	a.lastOK = prometheus.NewGauge(prometheus.GaugeOpts{
		Name: "meridian_config_last_reload_success_timestamp_seconds",
		Help: "Unix time of the last successful config load.",
	})
	gen := prometheus.NewGaugeFunc(prometheus.GaugeOpts{
		Name: "meridian_snapshot_generation",
		Help: "Generation of the snapshot being served; increases by one with every publish.",
	}, func() float64 {
		if s := a.store.Load(); s != nil {
			return float64(s.Generation())
		}
		return 0
	})
	age := prometheus.NewGaugeFunc(prometheus.GaugeOpts{
		Name: "meridian_snapshot_age_seconds",
		Help: "Seconds since the snapshot being served was compiled.",
	}, func() float64 {
		if s := a.store.Load(); s != nil {
			return time.Since(s.Built()).Seconds()
		}
		return 0
	})
	info := prometheus.NewGauge(prometheus.GaugeOpts{
		Name:        "meridian_build_info",
		Help:        "Always 1; labels carry the version and Go version.",
		ConstLabels: prometheus.Labels{"version": Version, "goversion": runtime.Version()},
	})
	info.Set(1)
	a.reg.MustRegister(a.reloads, a.lastOK, gen, age, info,
		collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
}
