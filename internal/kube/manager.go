package kube

import (
	"context"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/client-go/rest"

	"github.com/meridian-gslb/meridian/internal/model"
)

// Options configure a Manager.
type Options struct {
	Logger   *slog.Logger
	Registry prometheus.Registerer
	// OnChange is called (from any goroutine, never blocking the caller for
	// long) when watched objects or member states changed.
	OnChange func()
	// FieldManager names this node's meridian.io/status patches in
	// managedFields (default "meridian"; see StatusFieldManager).
	FieldManager string
	// OnEndpointSlices is called (from informer goroutines; it must not
	// block) when a watched EndpointSlice changed (see EnableEndpointSlices).
	OnEndpointSlices func()
}

// MemberStatus is one member's connection state.
type MemberStatus struct {
	Cluster string    `json:"cluster"`
	State   string    `json:"state"`  // Ready or NotReady (Offline is decided by the ring; see app)
	Reason  string    `json:"reason"` // why NotReady; empty when Ready
	Since   time.Time `json:"since"`
	Origin  string    `json:"origin"` // config or secret NAMESPACE/NAME
	Objects int       `json:"objects"`
}

// Manager connects to the member clusters and watches their annotated
// Services and Ingresses.
type Manager struct {
	opts    Options
	log     *slog.Logger
	m       *metrics
	ctx     context.Context
	mu      sync.Mutex
	kcfg    model.Kubernetes
	members map[string]*member
	seen    conflictLog // what Observe saw last
	// slicesOn: members watch EndpointSlices (EnableEndpointSlices).
	slicesOn bool
}

// NewManager returns a Manager; Configure starts and stops members.
func NewManager(ctx context.Context, opts Options) *Manager {
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	if opts.OnChange == nil {
		opts.OnChange = func() {}
	}
	if opts.FieldManager == "" {
		opts.FieldManager = "meridian"
	}
	if opts.OnEndpointSlices == nil {
		opts.OnEndpointSlices = func() {}
	}
	mg := &Manager{opts: opts, log: opts.Logger, ctx: ctx, members: map[string]*member{}}
	mg.m = newMetrics(opts.Registry, mg)
	return mg
}

// Configure makes the running members match srcs: new ones start, removed
// ones stop, changed ones restart. Unchanged members keep their watches.
func (mg *Manager) Configure(k model.Kubernetes, srcs []MemberSource) {
	mg.mu.Lock()
	defer mg.mu.Unlock()
	restartAll := !slices.Equal(k.Namespaces, mg.kcfg.Namespaces) || k.Resync != mg.kcfg.Resync ||
		k.ConnectTimeout != mg.kcfg.ConnectTimeout || k.RetryInterval != mg.kcfg.RetryInterval ||
		k.StatusQPS != mg.kcfg.StatusQPS || k.StatusBurst != mg.kcfg.StatusBurst || k.MCSZone() != mg.kcfg.MCSZone()
	mg.kcfg = k
	want := map[string]MemberSource{}
	for _, s := range srcs {
		want[s.Cluster] = s
	}
	changed := false
	for name, mem := range mg.members {
		if s, ok := want[name]; !ok || restartAll || !sameSource(s, mem.src) {
			mem.stop()
			delete(mg.members, name)
			changed = true
		}
	}
	for name, s := range want {
		if _, ok := mg.members[name]; ok {
			continue
		}
		mem := newMember(mg, s, k)
		mg.members[name] = mem
		mem.start(mg.ctx)
		changed = true
	}
	if changed {
		go mg.opts.OnChange()
	}
}

func sameSource(a, b MemberSource) bool {
	return a.Cluster == b.Cluster && a.Config == b.Config && string(a.Kubeconfig) == string(b.Kubeconfig) && a.Origin == b.Origin
}

// Stop ends every member.
func (mg *Manager) Stop() {
	mg.mu.Lock()
	defer mg.mu.Unlock()
	for name, mem := range mg.members {
		mem.stop()
		delete(mg.members, name)
	}
}

func (mg *Manager) list() []*member {
	mg.mu.Lock()
	defer mg.mu.Unlock()
	out := slices.Collect(maps.Values(mg.members))
	slices.SortFunc(out, func(a, b *member) int { return strings.Compare(a.src.Cluster, b.src.Cluster) })
	return out
}

// Objects returns every watched object of every member, including members
// that are NotReady now (their last known objects; the heartbeat decides
// whether their endpoints are answered).
func (mg *Manager) Objects() []Object {
	var out []Object
	for _, mem := range mg.list() {
		out = append(out, mem.objects()...)
	}
	return out
}

// Members returns the state of every member, sorted by cluster.
func (mg *Manager) Members() []MemberStatus {
	var out []MemberStatus
	for _, mem := range mg.list() {
		out = append(out, mem.status())
	}
	return out
}

// Poller returns the heartbeat poll of a member: GET /readyz with its
// credentials. Before the member has a client, the poll fails with the
// reason it has none.
func (mg *Manager) Poller(cluster string) func(ctx context.Context) error {
	return func(ctx context.Context) error {
		mg.mu.Lock()
		mem := mg.members[cluster]
		mg.mu.Unlock()
		if mem == nil {
			return fmt.Errorf("kubernetes member %s is not registered", cluster)
		}
		cs, err := mem.clientOrErr()
		if err != nil {
			return err
		}
		if err := readyz(ctx, cs); err != nil {
			return fmt.Errorf("member %s: %s", cluster, Reason(err))
		}
		return nil
	}
}

// Config returns the client configuration of a Ready member (verified TLS,
// its credentials) for other controllers; ok is false otherwise.
func (mg *Manager) Config(cluster string) (*rest.Config, bool) {
	mg.mu.Lock()
	mem := mg.members[cluster]
	mg.mu.Unlock()
	if mem == nil {
		return nil, false
	}
	mem.mu.Lock()
	defer mem.mu.Unlock()
	if mem.state != StateReady || mem.cfg == nil {
		return nil, false
	}
	return rest.CopyConfig(mem.cfg), true
}

// Ready lists the members that are Ready now.
func (mg *Manager) Ready() []string {
	var out []string
	for _, st := range mg.Members() {
		if st.State == StateReady {
			out = append(out, st.Cluster)
		}
	}
	return out
}

// WriteStatus records an Event on each object whose problems or serving
// changed (kubernetes.status_writeback) and, with
// kubernetes.status_annotation, sets its meridian.io/status annotation to
// its text where it differs. Members that are not Ready get nothing. It
// returns how many writes failed and are worth retrying (the caller
// retries later; a write the member forbids is not).
func (mg *Manager) WriteStatus(statuses map[ObjectRef]Status, problems map[ObjectRef][]string) int {
	mg.mu.Lock()
	on, annotation := mg.kcfg.StatusWritebackEnabled(), mg.kcfg.StatusAnnotationEnabled()
	mg.mu.Unlock()
	if !on {
		return 0
	}
	failed := 0
	for _, mem := range mg.list() {
		failed += mem.writeStatus(statuses, problems, annotation)
	}
	return failed
}
