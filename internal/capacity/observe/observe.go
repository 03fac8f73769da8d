// Package observe runs the capacity-aware weights of `meridian serve`: it
// reads each capacity-aware service's source (a member cluster's
// EndpointSlices, or a Prometheus query on its own interval and timeout),
// keeps the last good reading of every endpoint, runs capacity.Decide and
// publishes each State that changes what the engine draws. The decision is
// pure (package capacity); this package is its I/O edge, with the metrics.
package observe

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/meridian-gslb/meridian/internal/capacity"
	"github.com/meridian-gslb/meridian/internal/failover"
	"github.com/meridian-gslb/meridian/internal/kube"
	"github.com/meridian-gslb/meridian/internal/model"
)

// Kube is what the Observer needs of the Kubernetes sources (nil without
// member clusters).
type Kube interface {
	// EnableEndpointSlices starts the members' EndpointSlice watches.
	EnableEndpointSlices()
	// EndpointCounts are the counts of a Service in a member cluster; ok
	// is false when the member cannot tell now.
	EndpointCounts(cluster, namespace, name string) (kube.SliceCounts, bool)
	// Backends are, per Kubernetes-sourced capacity-aware service and
	// endpoint target, the Services behind it (kube.Result.Backends).
	Backends() map[string]map[string][]kube.Backend
}

// Options of an Observer.
type Options struct {
	// Desired returns the served desired state: configured weights after
	// the operators' overrides (never nil).
	Desired func() *model.Desired
	// Publish is called, one call at a time, with every State whose
	// Changed is true; it must not block for long.
	Publish func(*capacity.State)
	Kube    Kube // nil: no Kubernetes sources
	Logger  *slog.Logger
	// Registry takes the metrics (nil: not registered).
	Registry prometheus.Registerer
	// Tick is the decision period (default 1s); a poke decides sooner.
	Tick time.Duration
	// Transport sends the Prometheus queries (nil: a default with bounded
	// connect and header times). Tests use it.
	Transport http.RoundTripper
	// Now is the clock (nil: time.Now). Tests use it.
	Now func() time.Time
}

// Observer runs the capacity loop. Run it with Run; Poke asks for a
// decision soon (from any goroutine, never blocking).
type Observer struct {
	opts Options
	log  *slog.Logger
	m    *metrics
	poke chan struct{}

	mu      sync.Mutex
	good    map[capacity.Key]capacity.Reading // last good reading per endpoint
	missing map[capacity.Key]string           // why an endpoint has no fresh reading
	pollers map[string]*poller                // by service name
	prev    *capacity.State
	logged  map[string]string // service -> last logged source problem, logged once
}

// New returns an Observer.
func New(opts Options) *Observer {
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	if opts.Tick <= 0 {
		opts.Tick = time.Second
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	return &Observer{opts: opts, log: opts.Logger, m: newMetrics(opts.Registry), poke: make(chan struct{}, 1),
		good: map[capacity.Key]capacity.Reading{}, missing: map[capacity.Key]string{}, pollers: map[string]*poller{}, logged: map[string]string{}}
}

// Poke asks for a decision soon; it never blocks.
func (o *Observer) Poke() {
	select {
	case o.poke <- struct{}{}:
	default:
	}
}

// State is the last State decided (nil before the first).
func (o *Observer) State() *capacity.State {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.prev
}

// Run decides every Tick (and soon after a poke) until ctx ends, starting
// and stopping the Prometheus pollers as the services change.
func (o *Observer) Run(ctx context.Context) {
	defer o.stopPollers()
	t := time.NewTicker(o.opts.Tick)
	defer t.Stop()
	for {
		o.Step(ctx)
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		case <-o.poke:
			// A burst of EndpointSlice events becomes one decision.
			select {
			case <-ctx.Done():
				return
			case <-time.After(100 * time.Millisecond):
			}
		}
	}
}

// Step reads the sources once, decides and publishes a changed State. Run
// calls it; tests call it directly.
func (o *Observer) Step(ctx context.Context) *capacity.State {
	d := o.opts.Desired()
	o.syncPollers(ctx, d)
	return o.decide(d)
}

// decide reads the Kubernetes sources, decides from every last good
// reading and publishes a changed State.
func (o *Observer) decide(d *model.Desired) *capacity.State {
	svcs := capacity.Services(d)
	now := o.opts.Now()
	o.readKube(d, svcs, now)
	o.mu.Lock()
	readings, missing := o.snapshotLocked(svcs)
	prev := o.prev
	o.mu.Unlock()
	p := failover.ParamsFrom(d)
	st := capacity.Decide(capacity.Input{Services: svcs, Readings: readings, Missing: missing, Prev: prev, Now: now},
		capacity.Params{Brake: p.Brake, Interval: p.Interval})
	o.mu.Lock()
	o.prev = st
	o.mu.Unlock()
	o.m.observe(st)
	for _, c := range st.Changes {
		if c.From != c.To {
			o.log.Info("capacity: fraction changed", "service", c.Service, "endpoint", c.Target, "cluster", c.Cluster,
				"from_percent", c.From, "to_percent", c.To, "reason", c.Reason)
		} else {
			o.log.Info("capacity: change held", "service", c.Service, "endpoint", c.Target, "cluster", c.Cluster, "percent", c.From, "reason", c.Reason)
		}
	}
	if st.Changed && o.opts.Publish != nil && (len(st.Services) > 0 || prev != nil && len(prev.Services) > 0) {
		o.opts.Publish(st)
	}
	return st
}

// snapshotLocked copies the readings and the reasons of missing ones of
// the services' endpoints (the rest is forgotten).
func (o *Observer) snapshotLocked(svcs []capacity.Service) (map[capacity.Key]capacity.Reading, map[capacity.Key]string) {
	keep := map[capacity.Key]bool{}
	readings, missing := map[capacity.Key]capacity.Reading{}, map[capacity.Key]string{}
	for _, s := range svcs {
		for _, e := range s.Endpoints {
			k := capacity.Key{Service: s.Name, Target: e.Target}
			keep[k] = true
			if r, ok := o.good[k]; ok {
				readings[k] = r
			}
			if why, ok := o.missing[k]; ok {
				missing[k] = why
			}
		}
	}
	for k := range o.good {
		if !keep[k] {
			delete(o.good, k)
		}
	}
	for k := range o.missing {
		if !keep[k] {
			delete(o.missing, k)
		}
	}
	return readings, missing
}

// record stores a good reading, or why there is none now (the last good
// reading stays until it is stale).
func (o *Observer) record(k capacity.Key, r capacity.Reading, ok bool, why string) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if ok {
		o.good[k] = r
		delete(o.missing, k)
		return
	}
	o.missing[k] = why
}

// readKube takes a reading of every endpoint of the services with source
// kubernetes from the members' EndpointSlices.
func (o *Observer) readKube(d *model.Desired, svcs []capacity.Service, now time.Time) {
	members := map[string]bool{}
	for _, c := range d.Clusters {
		members[c.Name] = c.Kubernetes != nil
	}
	byName := make(map[string]capacity.Service, len(svcs))
	for _, s := range svcs {
		byName[s.Name] = s
	}
	var backends map[string]map[string][]kube.Backend
	started := false
	for i := range d.Services {
		ms := &d.Services[i]
		if ms.Capacity == nil || ms.Capacity.Source != model.CapacitySourceKubernetes {
			continue
		}
		s := byName[ms.Name]
		if o.opts.Kube == nil {
			for _, e := range s.Endpoints {
				o.record(capacity.Key{Service: s.Name, Target: e.Target}, capacity.Reading{}, false, "no Kubernetes member clusters are configured")
			}
			continue
		}
		if !started {
			o.opts.Kube.EnableEndpointSlices()
			backends, started = o.opts.Kube.Backends(), true
		}
		for _, e := range s.Endpoints {
			k := capacity.Key{Service: s.Name, Target: e.Target}
			var refs []kube.Backend
			switch {
			case ms.Capacity.FromObjects:
				refs = backends[s.Name][e.Target]
			case !members[e.Cluster]:
				o.record(k, capacity.Reading{}, false, "cluster "+e.Cluster+" is not a Kubernetes member")
				continue
			default:
				ns, name, _ := model.SplitServiceRef(ms.Capacity.Kubernetes.Service)
				refs = []kube.Backend{{Cluster: e.Cluster, Namespace: ns, Name: name}}
			}
			r, ok, why := o.countBackends(refs, now)
			o.record(k, r, ok, why)
		}
	}
}

// countBackends is the reading of the Services behind one endpoint.
func (o *Observer) countBackends(refs []kube.Backend, now time.Time) (capacity.Reading, bool, string) {
	if len(refs) == 0 {
		return capacity.Reading{}, false, "no backend Service behind the endpoint's object"
	}
	var sum capacity.EndpointCounts
	var names string
	for i, b := range refs {
		c, ok := o.opts.Kube.EndpointCounts(b.Cluster, b.Namespace, b.Name)
		if !ok {
			return capacity.Reading{}, false, "member " + b.Cluster + " is not Ready or its EndpointSlices are not listed yet"
		}
		sum = sum.Add(capacity.EndpointCounts{Ready: c.Ready, NotReady: c.NotReady, Slices: c.Slices})
		if i > 0 {
			names += ", "
		}
		names += b.Namespace + "/" + b.Name
	}
	r, ok := capacity.FromEndpointCounts(sum, now)
	if !ok {
		return capacity.Reading{}, false, fmt.Sprintf("no EndpointSlices of %s in %s", names, refs[0].Cluster)
	}
	r.Detail += " (" + names + " in " + refs[0].Cluster + ")"
	return r, true, ""
}
