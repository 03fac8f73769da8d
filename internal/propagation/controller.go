package propagation

import (
	"context"
	"log/slog"
	"maps"
	"runtime/debug"
	"slices"
	"sort"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/client-go/rest"

	"github.com/meridian-gslb/meridian/internal/placement"
)

// Env is what the controller needs from the rest of Meridian.
type Env interface {
	// Config returns the client configuration of a Ready member.
	Config(cluster string) (*rest.Config, bool)
	// Clusters lists the registered member clusters with their labels.
	Clusters() map[string]map[string]string
	// Health is the decided state of the clusters.
	Health() []placement.ClusterHealth
	// TrafficWeights returns each cluster's weight in a global service
	// (sum of its endpoints' weights); nil when the name is not served.
	TrafficWeights(hostname string) map[string]int
}

// Options configure a Controller.
type Options struct {
	Hub        string
	Namespaces []string
	Interval   time.Duration
	Toleration time.Duration
	Score      placement.ScoreWeights
	Logger     *slog.Logger
	Now        func() time.Time
	Registry   prometheus.Registerer // optional
}

// ClusterStatus is one cluster's part of a template's placement status.
type ClusterStatus struct {
	Desired    int64    `json:"desired"`              // replicas Meridian wants there (kinds with a replica count)
	Ready      int64    `json:"ready"`                // status.readyReplicas reported by the member
	Generation int64    `json:"generation,omitempty"` // metadata.generation of the copy
	Observed   int64    `json:"observed,omitempty"`   // status.observedGeneration of the copy
	Conditions []string `json:"conditions,omitempty"` // the copy's status.conditions as Type=Status (Available=True)
	Healthy    bool     `json:"healthy"`              // ready replicas reached, else Ready/Available conditions True, else applied
	SpecHash   string   `json:"specHash,omitempty"`   // template content applied there
	Waiting    string   `json:"waiting,omitempty"`    // why this cluster has not got the current content yet
	Error      string   `json:"error,omitempty"`      // override or apply error; the last good object stays
}

// Status is a template's placement status (meridian.io/placement-status).
type Status struct {
	Template string                   `json:"template"`
	Mode     string                   `json:"mode,omitempty"`
	Clusters map[string]ClusterStatus `json:"clusters"`
	Desired  int64                    `json:"desired,omitempty"`  // replicas over every cluster (kinds with a replica count)
	Ready    int64                    `json:"ready,omitempty"`    // ready replicas over every cluster
	Healthy  int                      `json:"healthy"`            // clusters whose copy is healthy
	ScaledBy string                   `json:"scaledBy,omitempty"` // the HPA template scaling it: copies keep the members' replica counts
	Excluded []string                 `json:"excluded,omitempty"` // failed past the toleration: share moved
	Scores   map[string]float64       `json:"scores,omitempty"`   // selector ranking
	Errors   []string                 `json:"errors,omitempty"`   // annotation errors: nothing changed
}

// Controller propagates templates from the hub into the members.
type Controller struct {
	opts Options
	env  Env
	log  *slog.Logger
	wake chan struct{}

	mu      sync.Mutex
	status  map[string]Status // template ref -> last status
	res     map[string]resCache
	clients map[string]*clients // cluster -> its clients, while its config is unchanged
	denied  []string            // kinds the hub identity may not list (logged when it changes)
	kinds   [2]int              // kinds readable, forbidden in the last pass
	pass    map[string]*clients // the members Ready when this pass began (Run's goroutine only)
	discErr string              // the last hub discovery problem (Run's goroutine only)
	// skipDenied: kinds the hub refused to list -> passes left before
	// asking again (Run's goroutine only).
	skipDenied map[string]int

	applies *prometheus.CounterVec
	panics  prometheus.Counter
}

type resCache struct {
	at  time.Time
	res placement.Resources
}

// New returns a controller; Run starts it.
func New(env Env, opts Options) *Controller {
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	c := &Controller{opts: opts, env: env, log: opts.Logger, wake: make(chan struct{}, 1), status: map[string]Status{},
		res: map[string]resCache{}, clients: map[string]*clients{}, skipDenied: map[string]int{}}
	c.applies = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "meridian_propagation_applies_total",
		Help: "Server-side applies of template copies into members, by cluster and result (success, failure).",
	}, []string{"cluster", "result"})
	c.panics = prometheus.NewCounter(prometheus.CounterOpts{
		Name: "meridian_propagation_panics_total",
		Help: "Templates whose reconcile panicked (an unexpected object shape); recovered, logged with the stack, retried next pass.",
	})
	if opts.Registry != nil {
		templates := prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Name: "meridian_propagation_templates",
			Help: "Templates the propagation controller manages.",
		}, func() float64 { return float64(len(c.Statuses())) })
		problems := prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Name: "meridian_propagation_cluster_errors",
			Help: "Template copies that could not be updated now (bad override, foreign object, apply error); the last good object stays.",
		}, func() float64 {
			n := 0
			for _, st := range c.Statuses() {
				for _, cs := range st.Clusters {
					if cs.Error != "" {
						n++
					}
				}
			}
			return float64(n)
		})
		kinds := prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "meridian_propagation_kinds",
			Help: "Kinds the hub serves that can hold templates, by access (readable: scanned for templates; forbidden: Meridian's identity may not list them, so they are skipped).",
		}, []string{"access"})
		opts.Registry.MustRegister(c.applies, c.panics, templates, problems, kindsCollector{c, kinds})
	}
	return c
}

// kindsCollector reports the last pass's kind counts.
type kindsCollector struct {
	c *Controller
	g *prometheus.GaugeVec
}

func (k kindsCollector) Describe(ch chan<- *prometheus.Desc) { k.g.Describe(ch) }
func (k kindsCollector) Collect(ch chan<- prometheus.Metric) {
	k.c.mu.Lock()
	n := k.c.kinds
	k.c.mu.Unlock()
	k.g.WithLabelValues("readable").Set(float64(n[0]))
	k.g.WithLabelValues("forbidden").Set(float64(n[1]))
	k.g.Collect(ch)
}

// Poke asks for a reconcile soon (weights or health changed).
func (c *Controller) Poke() {
	select {
	case c.wake <- struct{}{}:
	default:
	}
}

// Statuses returns the last status of every template, sorted by template.
func (c *Controller) Statuses() []Status {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := slices.Collect(maps.Values(c.status))
	sort.Slice(out, func(i, j int) bool { return out[i].Template < out[j].Template })
	return out
}

// Run reconciles every Interval and on Poke until ctx ends.
func (c *Controller) Run(ctx context.Context) {
	t := time.NewTicker(c.opts.Interval)
	defer t.Stop()
	for {
		c.reconcileAll(ctx)
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		case <-c.wake:
		}
	}
}

// safely runs one template's reconcile; a panic (an object shape nobody
// expected) is recovered, counted and logged with its stack.
func (c *Controller) safely(ref string, f func()) {
	defer func() {
		if r := recover(); r != nil {
			c.panics.Inc()
			c.log.Error("propagation: reconcile panicked; retried next pass", "template", ref, "panic", r, "stack", string(debug.Stack()))
		}
	}()
	f()
}
