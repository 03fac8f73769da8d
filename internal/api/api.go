// Package api serves Meridian's HTTP surface: the live status page (/,
// /v1/overview, and /v1/events as server-sent events), liveness and
// readiness, Prometheus metrics, the JSON reads (/v1/health, /v1/explain,
// /v1/kube, /v1/placement, /v1/admin/overrides, /v1/ring/keys,
// /v1/demo/backends) and the changes: operator overrides, ring key
// rotation and the demo's backends. Routes lists every route; openapi.yaml
// describes each. Every change goes through one guard (bearer token from
// Tokens, JSON content type); NewServer and Listen cap connections per
// listener and per client, time out slow clients, serve TLS with a
// reloadable certificate (LoadCertificate), and ReadOnly refuses every change.
// What it shows and controls comes from the serving process through
// Options.
package api

import (
	"embed"
	"html/template"
	"log/slog"
	"net/http"
	"slices"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/meridian-gslb/meridian/internal/engine"
)

// Source gives the current snapshot (*engine.Store implements it).
type Source interface {
	Load() *engine.Snapshot
}

// Status is extra process state shown on the status page.
type Status struct {
	ConfigPath    string
	LastReload    time.Time
	LastReloadErr string
}

// Options are the optional parts of the HTTP surface.
type Options struct {
	Health func() HealthReport // GET /v1/health
	Demo   DemoControl         // POST /v1/demo/backends/{addr}/{start|stop}, GET /v1/demo/backends
	Keys   KeyControl          // GET/POST /v1/ring/keys
	Kube   func() any          // GET /v1/kube: member clusters and watched objects
	Place  func() any          // GET /v1/placement: propagated templates and their placement
	Admin  AdminControl        // GET/POST /v1/admin/overrides, DELETE /v1/admin/overrides/{id}
	// Simulate answers GET /v1/simulate (what-if; nil: not served).
	Simulate Simulator
	Tokens   *Tokens // bearer tokens for every change: admin, ring keys, demo (nil: changes refused)
	// Overview feeds the live status page at / (GET /v1/overview, GET
	// /v1/events); without it / is the static snapshot page.
	Overview func() Overview
	// MaxEventStreams caps concurrent GET /v1/events streams; beyond it a
	// stream request gets 503 (0: DefaultMaxEventStreams).
	MaxEventStreams int
	Metrics         *Metrics // nil: not recorded
}

// Handler returns the HTTP handler. ready reports nil when the process can
// serve DNS (snapshot loaded, listeners bound); status is optional.
func Handler(src Source, gatherer prometheus.Gatherer, ready func() error, status func() Status, log *slog.Logger, opts Options) http.Handler {
	return build(src, gatherer, ready, status, log, opts).mux
}

// Routes lists the route patterns ("METHOD /path") that Handler registers
// with opts, in registration order; openapi.yaml documents each of them.
func Routes(opts Options) []string {
	return build(nil, prometheus.NewRegistry(), nil, nil, slog.New(slog.DiscardHandler), opts).patterns
}

func build(src Source, gatherer prometheus.Gatherer, ready func() error, status func() Status, log *slog.Logger, opts Options) *router {
	mux := newRouter(opts.Tokens, opts.Metrics, log)
	mux.HandleFunc("GET /v1/openapi.yaml", OpenAPIHandler())
	mux.HandleFunc("GET /v1/explain", ExplainHandler(src))
	if opts.Health != nil {
		mux.HandleFunc("GET /v1/health", func(w http.ResponseWriter, _ *http.Request) { writeJSON(w, http.StatusOK, opts.Health()) })
	}
	if opts.Kube != nil {
		mux.HandleFunc("GET /v1/kube", func(w http.ResponseWriter, _ *http.Request) { writeJSON(w, http.StatusOK, opts.Kube()) })
	}
	if opts.Admin != nil {
		registerAdmin(mux, opts.Admin)
	}
	if opts.Simulate != nil {
		registerSimulate(mux, opts.Simulate)
	}
	if opts.Place != nil {
		mux.HandleFunc("GET /v1/placement", func(w http.ResponseWriter, _ *http.Request) { writeJSON(w, http.StatusOK, opts.Place()) })
	}
	if opts.Demo != nil {
		registerDemo(mux, opts.Demo)
	}
	if opts.Keys != nil {
		registerKeys(mux, opts.Keys)
	}
	mux.Handle("GET /metrics", promhttp.HandlerFor(gatherer, promhttp.HandlerOpts{ErrorLog: slog.NewLogLogger(log.Handler(), slog.LevelError)}))
	mux.HandleFunc("GET /healthz", healthz)
	mux.HandleFunc("GET /readyz", readyz(ready))
	if opts.Overview != nil {
		registerPage(mux, opts.Overview, status, opts.MaxEventStreams, opts.Metrics)
	} else {
		mux.HandleFunc("GET /{$}", func(w http.ResponseWriter, r *http.Request) {
			snap := src.Load()
			if snap == nil {
				http.Error(w, "no snapshot loaded yet", http.StatusServiceUnavailable)
				return
			}
			var st Status
			if status != nil {
				st = status()
			}
			zones := snap.Zones()
			slices.Sort(zones)
			data := page{
				Generation: snap.Generation(),
				Built:      snap.Built().UTC().Format(time.RFC3339),
				Age:        time.Since(snap.Built()).Round(time.Second).String(),
				Zones:      zones,
				Services:   snap.Services(),
				Status:     st,
			}
			if !st.LastReload.IsZero() {
				data.LastReload = st.LastReload.UTC().Format(time.RFC3339)
			}
			w.Header().Set("Content-Type", "text/html; charset=utf-8")
			if err := statusPage.Execute(w, data); err != nil {
				log.Warn("status page", "err", err)
			}
		})
	}
	return mux
}

// Changes lists the route patterns of Routes(opts) that change state: each
// is behind the bearer-token and JSON guard.
func Changes(opts Options) []string {
	return build(nil, prometheus.NewRegistry(), nil, nil, slog.New(slog.DiscardHandler), opts).changes
}

type page struct {
	Generation uint64
	Built, Age string
	LastReload string
	Zones      []string
	Services   []engine.ServiceStatus
	Status     Status
}

//go:embed status.html
var assets embed.FS

var statusPage = template.Must(template.New("status.html").Funcs(template.FuncMap{
	"share": func(eps []engine.EndpointStatus, i int) int {
		total := 0
		for _, e := range eps {
			total += e.DrawWeight()
		}
		if total == 0 {
			return 0
		}
		return 100 * eps[i].DrawWeight() / total
	},
}).ParseFS(assets, "status.html"))
