package app

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
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
	"github.com/meridian-gslb/meridian/internal/demo"
	"github.com/meridian-gslb/meridian/internal/dnsserver"
	"github.com/meridian-gslb/meridian/internal/engine"
	"github.com/meridian-gslb/meridian/internal/failover"
	"github.com/meridian-gslb/meridian/internal/model"
	"github.com/meridian-gslb/meridian/internal/secretfile"
)

// Version is the build's version, set by the linker (-X).
var Version = "dev"

// Options of `meridian serve`. Non-empty overrides win over the file.
type Options struct {
	ConfigPath        string   // "" = the embedded demo config
	DNSListen         []string // override server.dns.listen
	HTTPListen        string   // override server.http.listen
	LogFormat         string   // override server.log.format
	LogLevel          string   // override server.log.level
	RequireEncryption bool     // refuse to start the ring without a gossip key
	DemoBackends      bool     // start local HTTP backends for the demo's loopback endpoints
	LogOutput         io.Writer
	// Started, if set, is called once DNS and HTTP are listening.
	Started func(dns []string, http string)
	// AllowReadableSecretFiles reads secret files that group or other may
	// access, with a warning, instead of refusing to start (package secretfile).
	AllowReadableSecretFiles bool
}

// App is one running `meridian serve`.
type App struct {
	opts  Options
	log   *slog.Logger
	node  string // ring node name (default: the host name)
	state string // state directory (see stateDir)
	store engine.Store
	reg   *prometheus.Registry

	reloads    *prometheus.CounterVec
	lastOK     prometheus.Gauge
	reloadMu   sync.Mutex     // serializes reloads
	mu         sync.Mutex     // guards the fields below
	cur        *Loaded        // the config file as loaded
	eff        *config.File   // cur with the Kubernetes sources merged in: what is served
	kube       *kubeState     // nil without Kubernetes sources
	admin      *adminState    // operators' overrides
	served     *model.Desired // eff with the overrides applied: what the snapshot and providers use
	decision   *failover.Decision
	lastReload time.Time
	lastErr    string
	dnsUp      bool
	health     *healthLoop
	xfr        xfrState // zone transfers and serials (xfr.go)
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
		opts.DemoBackends = true
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
	policy := secretfile.Refuse
	if opts.AllowReadableSecretFiles {
		policy = secretfile.Warn
	}
	secretfile.SetPolicy(policy, log)
	a := &App{opts: opts, log: log, reg: prometheus.NewRegistry(), cur: loaded, eff: loaded.File}
	a.registerMetrics()
	if opts.ConfigPath == "" {
		log.Warn("no --config given: serving the embedded demo config", "zones", len(f.Zones), "services", len(f.Services))
	}
	host, _ := os.Hostname()
	a.node = f.Ring.NodeNameFor(host)
	a.state = StateDir(f.Server.StateDir, a.node)
	if err := os.MkdirAll(a.state, 0o700); err != nil {
		return fmt.Errorf("state directory %s (server.state_dir): %w: it must be writable (overrides, ring identity and keys are kept there)", a.state, err)
	}
	log.Info("state directory", "dir", a.state)
	if err := a.openAdmin(a.node); err != nil {
		return err
	}
	if err := a.publish(); err != nil {
		return err
	}
	a.lastOK.SetToCurrentTime()
	a.lastReload = time.Now()

	var backends *demo.Backends
	if opts.DemoBackends {
		backends = demo.ForConfig(&f.Desired, log)
		if err := backends.StartAll(); err != nil {
			return fmt.Errorf("demo backends: %w", err)
		}
		defer backends.StopAll()
		log.Info("demo backends started: stop one with `meridian demo stop ADDR`", "backends", len(backends.List()))
	}

	ctx, stop := signal.NotifyContext(ctx, os.Interrupt, syscall.SIGTERM)
	defer stop()
	var wg sync.WaitGroup
	hctx, hcancel := context.WithCancel(context.Background())
	a.startKube(hctx, &wg)
	h, err := a.startHealth(hctx, &wg)
	if err != nil {
		hcancel()
		return err
	}
	a.mu.Lock()
	a.health = h
	a.mu.Unlock()
	defer func() { hcancel(); wg.Wait() }()
	wg.Add(1)
	go func() { defer wg.Done(); a.adminLoop(hctx.Done()) }()
	a.startProviders(hctx, &wg, h)

	dnsSrv := dnsserver.New(dnsserver.Config{
		Listen:            f.Server.DNS.Listen,
		UDPSockets:        f.Server.DNS.UDPSockets,
		MaxTCPConnections: f.Server.DNS.MaxTCPConnections,
		TCPIdleTimeout:    f.Server.DNS.TCPIdleTimeout,
		UDPPayloadSize:    f.Server.DNS.UDPPayloadSize,
		MaxTCPPerClient:   f.Server.DNS.MaxTCPPerClient,

		// Per client prefix: the TCP cap above and the signing limit.
		TCPClientIPv4Prefix: f.Server.DNS.TCPClientIPv4Prefix,
		TCPClientIPv6Prefix: f.Server.DNS.TCPClientIPv6Prefix,
		SignLimit: dnsserver.SignLimit{
			Enabled:          f.Server.DNS.SignLimit.Enabled == nil || *f.Server.DNS.SignLimit.Enabled,
			SignaturesPerSec: f.Server.DNS.SignLimit.SignaturesPerSec,
			Window:           f.Server.DNS.SignLimit.Window,
			IPv4Prefix:       f.Server.DNS.SignLimit.IPv4Prefix,
			IPv6Prefix:       f.Server.DNS.SignLimit.IPv6Prefix,
		},

		RRL: dnsserver.RRL{
			Enabled:         f.Server.DNS.RRL.Enabled == nil || *f.Server.DNS.RRL.Enabled,
			ResponsesPerSec: f.Server.DNS.RRL.ResponsesPerSec,
			Window:          f.Server.DNS.RRL.Window,
			Slip: func() int { // set by the config's defaults; the fallback is for a File built by hand
				if p := f.Server.DNS.RRL.Slip; p != nil {
					return *p
				}
				return config.DefaultRRLSlip
			}(),
			IPv4Prefix: f.Server.DNS.RRL.IPv4Prefix,
			IPv6Prefix: f.Server.DNS.RRL.IPv6Prefix,
		},
		Logger:    log,
		Metrics:   dnsserver.NewMetrics(a.reg),
		Transfers: a.transfers(),
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

	httpSrv, err := a.startHTTP(hctx, &wg, h, backends)
	if err != nil {
		shutdownDNS(dnsSrv)
		return err
	}
	defer httpSrv.shutdown()
	httpAddr := httpSrv.addr
	if opts.Started != nil {
		opts.Started(dnsAddrs, httpAddr)
	}

	hup := make(chan os.Signal, 1)
	signal.Notify(hup, syscall.SIGHUP)
	defer signal.Stop(hup)
	if opts.ConfigPath != "" {
		w, err := config.NewWatcher(opts.ConfigPath, log)
		if err != nil {
			log.Warn("config file watching disabled; SIGHUP still reloads", "err", err)
		} else {
			wg.Add(1)
			go func() { defer wg.Done(); w.Run(ctx, func() { a.Reload("file change") }) }()
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
	httpSrv.shutdown()
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

// current returns the config being served: the file's with the
// Kubernetes-sourced services merged in.
func (a *App) current() *config.File {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.eff
}

// loaded returns the config file as loaded.
func (a *App) loaded() *Loaded {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.cur
}

// publish compiles the current config with the current decision and swaps
// the snapshot in.
func (a *App) publish() error {
	a.mu.Lock()
	l, eff, d := a.cur, a.eff, a.decision
	a.mu.Unlock()
	var h engine.Health = engine.NoHealth{}
	if d != nil {
		h = d
	}
	ap, h := a.applyAdmin(eff, h)
	snap, err := a.publishSnapshot(ap.Desired, engine.Options{Locator: l.Locator, Health: h, Notes: ap.Notes})
	if err != nil {
		return fmt.Errorf("compile: %w", err)
	}
	a.mu.Lock()
	a.served = ap.Desired
	a.mu.Unlock()
	a.log.Debug("snapshot published", "generation", snap.Generation())
	return nil
}

// setDecision stores a new decision and republishes when states changed.
func (a *App) setDecision(d *failover.Decision) {
	a.mu.Lock()
	a.decision = d
	a.mu.Unlock()
	if d.StatesChanged {
		if err := a.publish(); err != nil {
			a.log.Error("republish after a health change failed: previous snapshot keeps serving", "err", err)
		}
		a.kubeStatusSoon()
		if pc := a.propagation(); pc != nil {
			pc.Poke()
		}
	}
}

// Reload loads the config file again. A valid file replaces the snapshot
// atomically; an invalid one is logged and counted, and the previous
// snapshot keeps serving.
func (a *App) Reload(trigger string) error {
	a.reloadMu.Lock()
	defer a.reloadMu.Unlock()
	loaded, err := Load(a.opts.ConfigPath, nil)
	var eff *config.File
	if err == nil {
		applyOverrides(loaded.File, a.opts)
		eff, err = a.merge(loaded)
	}
	a.mu.Lock()
	prev, prevEff := a.cur, a.eff
	a.lastReload = time.Now()
	if err == nil {
		a.cur, a.eff = loaded, eff
	}
	k := a.kube
	a.mu.Unlock()
	if err == nil {
		if err = a.publish(); err != nil {
			a.mu.Lock()
			a.cur, a.eff = prev, prevEff
			a.mu.Unlock()
		}
	}
	if err != nil {
		a.reloads.WithLabelValues("failure").Inc()
		a.mu.Lock()
		a.lastErr = err.Error()
		a.mu.Unlock()
		a.log.Error("config reload failed: previous config keeps serving", "trigger", trigger, "err", err)
		return err
	}
	a.reloads.WithLabelValues("success").Inc()
	a.lastOK.SetToCurrentTime()
	a.mu.Lock()
	a.lastErr = ""
	h := a.health
	a.mu.Unlock()
	if !reflect.DeepEqual(loaded.File.Server, prev.File.Server) {
		a.log.Warn("config reload: the server section changed; restart to apply it", "trigger", trigger)
	}
	if ringChangedBeyondPeers(loaded.File.Ring, prev.File.Ring) {
		a.log.Warn("config reload: the ring section changed; restart to apply it (ring.peers is applied at once)", "trigger", trigger)
	}
	if h != nil {
		h.configure(&eff.Desired)
	}
	if k != nil {
		k.mgr.Configure(loaded.File.Kubernetes, kubeSources(&loaded.File.Desired, k.secrets.Members()))
	} else if loaded.File.Desired.KubeEnabled() {
		a.log.Warn("config reload: kubernetes members were added; restart to connect to them", "trigger", trigger)
	}
	a.kubeStatusSoon()
	a.log.Info("config reloaded", "trigger", trigger, "generation", a.store.Load().Generation())
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

// healthReport is GET /v1/health; without probing it shows the config's view.
func (a *App) healthReport() api.HealthReport {
	a.mu.Lock()
	h := a.health
	a.mu.Unlock()
	if h != nil {
		return h.report()
	}
	rep := api.HealthReport{Probing: false}
	if snap := a.store.Load(); snap != nil {
		rep.DecidedAt = snap.Built()
		for _, s := range snap.Services() {
			for _, e := range s.Endpoints {
				st := e.State.String()
				reason := "config"
				if e.Drained {
					reason = "drained"
				}
				rep.Endpoints = append(rep.Endpoints, api.EndpointHealth{Service: s.Name, Target: e.Target, Cluster: e.Cluster, State: st, Reason: reason, Since: snap.Built()})
			}
		}
	}
	return rep
}

// demoControl adapts the demo backends to api.DemoControl.
type demoControl struct{ b *demo.Backends }

func (d demoControl) Start(addr string) error { return d.b.Start(addr) }
func (d demoControl) Stop(addr string) error  { return d.b.Stop(addr) }
func (d demoControl) List() any               { return d.b.List() }

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

// ringChangedBeyondPeers reports whether a reload changed the ring section
// in more than its peers (which apply without a restart).
func ringChangedBeyondPeers(a, b model.Ring) bool {
	a.Peers, b.Peers = nil, nil
	return !reflect.DeepEqual(a, b)
}
