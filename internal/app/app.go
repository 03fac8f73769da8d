// Package app is the composition root of `meridian serve`: it loads the
// config, builds the serving pipeline (internal/serving) and starts the
// parts around it — the ring and the prober, the Kubernetes sources and
// propagation, the provider sync, the DNS server and the HTTP API — each in
// one small start step that registers its cleanup. It holds no decisions of
// its own: answers, health decisions, overrides and merges live in the
// packages it wires.
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
	"runtime/debug"
	"sync"
	"sync/atomic"
	"syscall"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"

	"github.com/meridian-gslb/meridian/deploy/examples"
	"github.com/meridian-gslb/meridian/internal/api"
	"github.com/meridian-gslb/meridian/internal/capacity/observe"
	"github.com/meridian-gslb/meridian/internal/config"
	"github.com/meridian-gslb/meridian/internal/demo"
	"github.com/meridian-gslb/meridian/internal/follow"
	"github.com/meridian-gslb/meridian/internal/model"
	"github.com/meridian-gslb/meridian/internal/notify"
	"github.com/meridian-gslb/meridian/internal/secretfile"
	"github.com/meridian-gslb/meridian/internal/serving"
	"github.com/meridian-gslb/meridian/internal/shift/runner"
	"github.com/meridian-gslb/meridian/internal/whatif"
	"github.com/meridian-gslb/meridian/providers"
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

// App is one running `meridian serve`: the parts started so far.
type App struct {
	opts  Options
	log   *slog.Logger
	reg   *prometheus.Registry
	node  string // ring node name
	state string // state directory (StateDir)

	pipe          *serving.Pipeline
	tokens        *api.Tokens                          // admin API tokens (nil: changes refused)
	kube          *kubeParts                           // nil without Kubernetes sources
	ext           *extdnsParts                         // nil without server.externaldns
	shifts        *runner.Runner                       // steps progressive shifts (set with the pipeline)
	followMetrics *follow.Metrics                      // the ring followers' (registered with the pipeline's)
	simulator     *whatif.Simulator                    // GET /v1/simulate over the pipeline
	probing       atomic.Pointer[probing]              // nil with ring.enabled false (set while other goroutines read it)
	reconciler    atomic.Pointer[providers.Reconciler] // set once provider sync runs (status page)
	capacity      atomic.Pointer[observe.Observer]     // the capacity-aware weights loop (set once it runs)
	backends      *demo.Backends                       // nil without --demo-backends
	notifier      *notify.Notifier                     // nil without notifications.receivers (Notify is then a no-op)
	decided       *notify.Gate                         // the decided changes' notifications: sent by the ring's writer only (nil without receivers)
	writer        writerRole                           // the ring's writer election
	dnsAddrs      []string
	httpAddr      string
	dnsUp         atomic.Bool

	ctx      context.Context // background work; cancelled by the cleanup stack
	quit     chan string     // a reason to end Run with an error (restart): the process exits and its supervisor starts it again
	cleanup  []func()        // run in reverse order when Run returns
	reloadMu sync.Mutex      // one reload at a time: the file read last is the one served
}

// Run starts Meridian and blocks until ctx is cancelled or SIGINT/SIGTERM
// arrives; SIGHUP reloads the config.
func Run(ctx context.Context, opts Options) error {
	// A stop during a slow start (a ring join, a member cluster) ends the
	// start and runs the cleanup of the steps done so far.
	ctx, stop := signal.NotifyContext(ctx, os.Interrupt, syscall.SIGTERM)
	defer stop()
	a, loaded, err := newApp(opts)
	if err != nil {
		return err
	}
	defer a.stop()
	for _, step := range []func(*serving.Loaded) error{
		a.startExternalDNS,
		a.startKube,     // member clusters (before the pipeline: their objects are merged)
		a.startPipeline, // file → Kubernetes → overrides → health → signers/serials → store
		a.startDemo,     // local backends for the demo's endpoints
		a.startNotify,   // notification senders (before the follower that feeds them)
		a.startProbing,  // ring, prober, votes, decisions
		a.startWriter,   // the ring's one writer: provider pushes, notifications, shift steps
		a.startKubeLoops,
		a.startCapacity, // ready fractions of capacity-aware services (EndpointSlices, Prometheus)
		a.startProviders,
		a.startDNS,
		a.startHTTP,
		a.startExternalDNSListener,
	} {
		if err := step(loaded); err != nil {
			return err
		}
	}
	// SIGHUP is handled from here on, before the slow release below: /readyz
	// answers already, and a SIGHUP without a handler ends the process.
	a.watchReloads(ctx)
	releaseMemory()
	if a.opts.Started != nil {
		a.opts.Started(a.dnsAddrs, a.httpAddr)
	}
	select {
	case <-ctx.Done():
	case why := <-a.quit:
		a.log.Info("shutting down to restart", "reason", why)
		return fmt.Errorf("restart: %s", why)
	}
	a.log.Info("shutting down")
	return nil
}

// newApp loads the config, makes the logger and the state directory.
func newApp(opts Options) (*App, *serving.Loaded, error) {
	if opts.LogOutput == nil {
		opts.LogOutput = os.Stderr
	}
	name, data := opts.ConfigPath, []byte(nil)
	if name == "" {
		name, data = "embedded demo config (deploy/examples/demo.yaml)", examples.Demo
		opts.DemoBackends = true
	}
	loaded, err := serving.Load(name, data, "")
	if err != nil {
		return nil, nil, err
	}
	f := loaded.File
	applyOverrides(f, opts)
	log, err := newLogger(opts.LogOutput, f.Server.Log)
	if err != nil {
		return nil, nil, err
	}
	policy := secretfile.Refuse
	if opts.AllowReadableSecretFiles {
		policy = secretfile.Warn
	}
	secretfile.SetPolicy(policy, log)
	ctx, cancel := context.WithCancel(context.Background())
	a := &App{opts: opts, log: log, reg: prometheus.NewRegistry(), ctx: ctx, quit: make(chan string, 1)}
	a.defer_(cancel)
	a.registerMetrics()
	if opts.ConfigPath == "" {
		log.Warn("no --config given: serving the embedded demo config", "zones", len(f.Zones), "services", len(f.Services))
	}
	host, _ := os.Hostname()
	a.node = f.Ring.NodeNameFor(host)
	a.state = StateDir(f.Server.StateDir, a.node)
	if err := prepareStateDir(a.state, log); err != nil {
		a.stop()
		return nil, nil, fmt.Errorf("state directory %s (server.state_dir): %w: it must be writable (overrides, ring identity and keys are kept there)", a.state, err)
	}
	log.Info("state directory", "dir", a.state)
	return a, loaded, nil
}

// defer_ pushes f on the cleanup stack.
func (a *App) defer_(f func()) { a.cleanup = append(a.cleanup, f) }

// stop runs the cleanup stack, newest first.
func (a *App) stop() {
	for i := len(a.cleanup) - 1; i >= 0; i-- {
		a.cleanup[i]()
	}
	a.cleanup = nil
}

// goBackground runs f until the app stops, and pushes its stop on the
// cleanup stack: what started later stops first (providers before the ring
// they read, probing before the demo backends it probes). Only the start
// steps call it (the stack is not shared between goroutines).
func (a *App) goBackground(f func(ctx context.Context)) {
	ctx, cancel := context.WithCancel(a.ctx)
	done := make(chan struct{})
	go func() { defer close(done); f(ctx) }()
	a.defer_(func() { cancel(); <-done })
}

// startDemo starts local backends for the demo's endpoints.
func (a *App) startDemo(l *serving.Loaded) error {
	if !a.opts.DemoBackends {
		return nil
	}
	a.backends = demo.ForConfig(&l.File.Desired, a.log)
	if err := a.backends.StartAll(); err != nil {
		return fmt.Errorf("demo backends: %w", err)
	}
	a.defer_(a.backends.StopAll)
	a.log.Info("demo backends started: stop one with `meridian demo stop ADDR`", "backends", len(a.backends.List()))
	return nil
}

// watchReloads reloads on SIGHUP and on changes of the config file.
func (a *App) watchReloads(ctx context.Context) {
	hup := make(chan os.Signal, 1)
	signal.Notify(hup, syscall.SIGHUP)
	a.defer_(func() { signal.Stop(hup) })
	if a.opts.ConfigPath != "" {
		a.watchFile(ctx, a.opts.ConfigPath, func() { a.Reload("file change") })
	}
	a.goBackground(func(bg context.Context) {
		for {
			select {
			case <-ctx.Done():
				return
			case <-bg.Done():
				return
			case <-hup:
				a.Reload("SIGHUP")
			}
		}
	})
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

// current is the config being served: the file's with the
// Kubernetes-sourced services merged in.
func (a *App) current() *config.File { return a.pipe.State().Effective }

// Reload loads the config file again. A valid file replaces the snapshot
// atomically; an invalid one is logged and counted, and the previous
// snapshot keeps serving.
func (a *App) Reload(trigger string) error {
	a.reloadMu.Lock()
	err := a.reload(trigger)
	a.reloadMu.Unlock()
	if err != nil {
		return err
	}
	// After the unlock: a reload that follows at once (a file written
	// twice) does not wait for this collection. Kubernetes merges and
	// admin changes never took reloadMu.
	releaseMemory()
	return nil
}

// releaseMemory hands the memory a config load freed back to the OS at
// once. A load allocates several times what it keeps (the decoder's node
// tree, the previous file and snapshot), and the runtime returns freed
// pages only gradually: without this the RSS after a start or a reload
// tracks the load's peak rather than what is served. It costs one garbage
// collection, once per start and per good reload.
func releaseMemory() { debug.FreeOSMemory() }

// loadConfig is serving.Load (a variable for the tests).
var loadConfig = serving.Load

// load reads the config file for a reload; a panic on the way (a decoder
// bug on an unexpected file) is an error like any bad file: the previous
// config keeps serving and the reload is counted as a failure.
func (a *App) load() (l *serving.Loaded, err error) {
	defer func() {
		if v := recover(); v != nil {
			a.log.Error("config reload panicked (recovered)", "panic", fmt.Sprint(v), "stack", string(debug.Stack()))
			l, err = nil, fmt.Errorf("config %s: loading it panicked (%v): the previous config keeps serving", a.opts.ConfigPath, v)
		}
	}()
	return loadConfig(a.opts.ConfigPath, nil, "")
}

func (a *App) reload(trigger string) error {
	l, err := a.load()
	if err == nil {
		applyOverrides(l.File, a.opts)
	}
	prev, err := a.pipe.Reload(l, err)
	if err != nil {
		a.log.Error("config reload failed: previous config keeps serving", "trigger", trigger, "err", err)
		return err
	}
	if !reflect.DeepEqual(l.File.Server, prev.Loaded.File.Server) {
		a.log.Warn("config reload: the server section changed; restart to apply it", "trigger", trigger)
	}
	if !reflect.DeepEqual(l.File.Notifications, prev.Loaded.File.Notifications) {
		a.log.Warn("config reload: the notifications section changed; restart to apply it", "trigger", trigger)
	}
	if !reflect.DeepEqual(l.File.Providers, prev.Loaded.File.Providers) {
		a.log.Warn("config reload: the providers section changed; restart to apply it", "trigger", trigger)
	}
	if ringChangedBeyondPeers(l.File.Ring, prev.Loaded.File.Ring) {
		a.log.Warn("config reload: the ring section changed; restart to apply it (ring.peers, ring.ca, ring.revoked and ring.credential are applied at once)", "trigger", trigger)
	}
	if a.kube == nil && l.File.Desired.KubeEnabled() {
		a.log.Warn("config reload: kubernetes members were added; restart to connect to them", "trigger", trigger)
	}
	a.log.Info("config reloaded", "trigger", trigger, "generation", a.pipe.State().Snapshot.Generation())
	return nil
}

// changed follows every new serving state: the prober follows the
// endpoints, and the Kubernetes status and placement follow the answers.
func (a *App) changed(prev, next *serving.State) {
	if p := a.probing.Load(); p != nil && prev.Effective != next.Effective {
		p.configure(&next.Effective.Desired)
	}
	if a.kube != nil {
		a.kube.statusSoon()
		if a.kube.prop != nil {
			a.kube.prop.Poke()
		}
	}
	if prev.Served != next.Served {
		a.pokeCapacity()
	}
}

func (a *App) ready() error {
	switch {
	case a.pipe == nil || a.pipe.State() == nil:
		return errors.New("no snapshot loaded")
	case !a.dnsUp.Load():
		return errors.New("dns listeners not started")
	}
	return nil
}

func (a *App) status() api.Status {
	st := a.pipe.State()
	return api.Status{ConfigPath: a.opts.ConfigPath, LastReload: st.ReloadedAt, LastReloadErr: st.ReloadErr}
}

// healthReport is GET /v1/health; without probing it shows the config's view.
func (a *App) healthReport() api.HealthReport {
	if p := a.probing.Load(); p != nil {
		return p.follower.Report()
	}
	return follow.ConfigReport(a.pipe.State())
}

// overview is GET /v1/overview and the data of the live status page.
func (a *App) overview() api.Overview {
	o := api.BuildOverview(a.pipe.Store().Load(), a.healthReport())
	o.Providers = a.providerZones()
	return o
}

func (a *App) registerMetrics() {
	info := prometheus.NewGauge(prometheus.GaugeOpts{
		Name:        "meridian_build_info",
		Help:        "Always 1; labels carry the version and Go version.",
		ConstLabels: prometheus.Labels{"version": Version, "goversion": runtime.Version()},
	})
	info.Set(1)
	a.reg.MustRegister(info, collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
}

// ringChangedBeyondPeers reports whether a reload changed the ring section
// in more than its peers (which apply without a restart).
func ringChangedBeyondPeers(a, b model.Ring) bool {
	a.Peers, b.Peers = nil, nil
	a.CA, b.CA = nil, nil
	a.Revoked, b.Revoked = nil, nil
	a.Credential, b.Credential = model.RingCredential{}, model.RingCredential{}
	return !reflect.DeepEqual(a, b)
}
