package kube

import (
	"context"
	"fmt"
	"runtime/debug"
	"sync"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"

	"github.com/meridian-gslb/meridian/internal/model"
)

// member is one member cluster: its clients and lifecycle, and the
// objects its sources share. The work is done by its parts: one source per
// kind (services, routes, slices) and the status writer.
type member struct {
	mg   *Manager
	src  MemberSource
	kcfg model.Kubernetes

	cancel context.CancelFunc
	done   chan struct{}

	mu       sync.Mutex
	state    string
	reason   string
	since    time.Time
	cs       kubernetes.Interface // one-shot requests: connect_timeout bounds each
	cfg      *rest.Config
	watch    kubernetes.Interface // informers: no overall timeout (watchConfig)
	watchCfg *rest.Config
	ctx      context.Context // the run's context, once connected

	objs     *objectSet     // the watched objects: what the sources share
	services *serviceSource // Services and Ingresses (servicesource.go)
	routes   *routeSource   // Gateway API routes and Gateways (gatewaywatch.go)
	slices   *sliceSource   // EndpointSlices (endpointslices.go)
	writer   *statusWriter  // meridian.io/status and Events (status.go)
	// dnsEndpoints are ExternalDNS's DNSEndpoints (dnsendpoint.go).
	dnsEndpoints *dnsEndpointSource
	// mcs are the MCS API's ServiceExports and ServiceImports (mcs.go);
	// nil without kubernetes.mcs.
	mcs *mcsSource
}

// objectSink is where a source hands what it reads: the member, which
// parses the annotations and keeps the result in its objectSet.
type objectSink interface {
	// put stores a watched object; drop forgets one that is gone or no
	// longer watched. Both may be called from any informer goroutine.
	put(in objectRead)
	drop(ref ObjectRef)
	// safely handles o on an informer goroutine, recovering a panic.
	safely(o any, handle func(any))
	// watchedRoutes returns the cached objects of the watched routes.
	watchedRoutes() []any
}

var _ objectSink = (*member)(nil)

func newMember(mg *Manager, s MemberSource, k model.Kubernetes) *member {
	m := &member{mg: mg, src: s, kcfg: k, state: StateNotReady, reason: "connecting", since: time.Now(), objs: newObjectSet()}
	m.services = &serviceSource{cluster: s.Cluster, log: mg.log, kcfg: k, sink: m}
	m.routes = newRouteSource(s.Cluster, mg.log, k, m)
	m.slices = newSliceSource(s.Cluster, mg.log, k, m, mg.opts.OnEndpointSlices)
	m.writer = newStatusWriter(s.Cluster, mg, k, m.objs, m.routes)
	m.dnsEndpoints = newDNSEndpointSource(s.Cluster, mg.log, k, m)
	m.writer.kinds = map[string]routeStatusPatcher{KindDNSEndpoint: m.dnsEndpoints.watch}
	if zone := k.MCSZone(); zone != "" {
		m.mcs = newMCSSource(s.Cluster, zone, mg.log, k, m)
		m.services.also = m.mcs.serviceChanged
		m.writer.kinds[KindServiceExport] = m.mcs
	}
	return m
}

// crdKinds lists the DNSEndpoint and MCS kinds watched now.
func (m *member) crdKinds() []string {
	out := m.dnsEndpoints.watch.watching()
	if m.mcs != nil {
		out = append(out, m.mcs.watch.watching()...)
	}
	return out
}

// tryCRDs starts the informers of the custom resources the member serves
// and that are not watched yet (Gateway API, DNSEndpoint, MCS API).
func (m *member) tryCRDs(ctx context.Context, cs kubernetes.Interface, wcfg *rest.Config) {
	m.routes.try(ctx, cs, wcfg)
	m.dnsEndpoints.watch.try(ctx, cs, wcfg)
	if m.mcs != nil {
		m.mcs.watch.try(ctx, cs, wcfg)
	}
}

func (m *member) start(parent context.Context) {
	ctx, cancel := context.WithCancel(parent)
	m.cancel, m.done = cancel, make(chan struct{})
	go func() { defer close(m.done); m.run(ctx) }()
}

func (m *member) stop() {
	if m.cancel != nil {
		m.cancel()
		<-m.done
	}
}

func (m *member) setState(state, reason string) {
	m.mu.Lock()
	changed := m.state != state || m.reason != reason
	if changed {
		m.state, m.reason, m.since = state, reason, time.Now()
	}
	m.mu.Unlock()
	if !changed {
		return
	}
	if state == StateReady {
		m.mg.log.Info("kubernetes member ready", "cluster", m.src.Cluster, "origin", m.src.Origin)
	} else {
		m.mg.log.Warn("kubernetes member not ready: nothing is sent to it", "cluster", m.src.Cluster, "reason", reason, "origin", m.src.Origin)
	}
	m.mg.m.transitions.WithLabelValues(m.src.Cluster, state).Inc()
	go m.mg.opts.OnChange()
}

func (m *member) status() MemberStatus {
	m.mu.Lock()
	defer m.mu.Unlock()
	return MemberStatus{Cluster: m.src.Cluster, State: m.state, Reason: m.reason, Since: m.since, Origin: m.src.Origin, Objects: m.objs.len()}
}

// ready reports whether the member is Ready now.
func (m *member) ready() bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.state == StateReady
}

func (m *member) clientOrErr() (kubernetes.Interface, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.cs == nil {
		return nil, fmt.Errorf("member %s: %s", m.src.Cluster, m.reason)
	}
	return m.cs, nil
}

// run connects (retrying every retry_interval until it works), starts the
// sources, then keeps checking /readyz so the state follows the member.
func (m *member) run(ctx context.Context) {
	retry := m.kcfg.RetryInterval.D()
	if retry <= 0 {
		retry = model.DefaultKubeRetryInterval
	}
	timeout := m.kcfg.ConnectTimeout.D()
	if timeout <= 0 {
		timeout = model.DefaultKubeConnectTimeout
	}
	cs := m.connectUntilDone(ctx, retry, timeout)
	if cs == nil {
		return
	}
	m.mu.Lock()
	m.ctx = ctx
	watch, wcfg := m.watch, m.watchCfg
	m.mu.Unlock()
	m.services.start(ctx, watch)
	if m.mg.endpointSlicesOn() {
		m.slices.start(ctx, watch)
	}
	m.tryCRDs(ctx, cs, wcfg)
	t := time.NewTicker(retry)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		cctx, cancel := context.WithTimeout(ctx, timeout)
		err := readyz(cctx, cs)
		cancel()
		if ctx.Err() != nil {
			return
		}
		if err != nil {
			m.setState(StateNotReady, Reason(err))
		} else {
			m.setState(StateReady, "")
			m.tryCRDs(ctx, cs, wcfg)
		}
	}
}

// connectUntilDone calls connect every retry until it works; nil when ctx
// ended first.
func (m *member) connectUntilDone(ctx context.Context, retry, timeout time.Duration) kubernetes.Interface {
	for {
		cs, err := m.connect(ctx, timeout)
		if err == nil {
			return cs
		}
		m.setState(StateNotReady, err.Error())
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(retry):
		}
	}
}

// connect builds the clients and proves them: local certificate check,
// then /readyz through verified TLS with the member's credentials.
func (m *member) connect(ctx context.Context, timeout time.Duration) (kubernetes.Interface, error) {
	cfg, err := m.src.restConfig(timeout)
	if err != nil {
		return nil, err
	}
	if err := clientCertProblem(cfg, time.Now()); err != nil {
		return nil, err
	}
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return nil, fmt.Errorf("client: %w", err)
	}
	wcfg, err := watchConfig(cfg, timeout)
	if err != nil {
		return nil, err
	}
	watch, err := kubernetes.NewForConfig(wcfg)
	if err != nil {
		return nil, fmt.Errorf("watch client: %w", err)
	}
	writer, err := statusClient(wcfg)
	if err != nil {
		return nil, err
	}
	cctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	if err := readyz(cctx, cs); err != nil {
		return nil, fmt.Errorf("%s", Reason(err))
	}
	m.mu.Lock()
	m.cs, m.cfg, m.watch, m.watchCfg = cs, cfg, watch, wcfg
	m.mu.Unlock()
	m.writer.connect(writer)
	m.setState(StateReady, "")
	return cs, nil
}

// put parses the annotations of a watched object a source read and keeps
// the result; a rejected annotation is logged and counted, and the object
// keeps its last valid settings.
func (m *member) put(in objectRead) {
	settings, errs := ParseAnnotations(in.anno)
	errs = routeErrors(in.anno, in.own, in.annoErr, errs)
	changed := m.objs.put(in, settings, errs)
	if len(errs) > 0 {
		for _, e := range errs {
			m.mg.m.annotationErrors.WithLabelValues(m.src.Cluster, e.Annotation).Inc()
		}
		m.mg.log.Warn("kubernetes: invalid annotation; the object keeps its last valid settings",
			"object", in.ref.String(), "errors", joinErrs(errs))
	}
	if changed {
		go m.mg.opts.OnChange()
	}
}

// drop forgets an object and what the status writer reported on it.
func (m *member) drop(ref ObjectRef) {
	had := m.objs.remove(ref)
	m.writer.forget(ref)
	if had {
		go m.mg.opts.OnChange()
	}
}

func (m *member) watchedRoutes() []any { return m.objs.routes() }

// safely handles a watched object on the informer's goroutine: a tenant's
// object is input, and a panic while reading it skips that object (logged
// and counted) instead of stopping the process (client-go re-panics).
func (m *member) safely(o any, handle func(any)) {
	defer func() {
		if r := recover(); r != nil {
			m.mg.m.panics.WithLabelValues(m.src.Cluster).Inc()
			name := "?"
			if mo, ok := o.(metav1.Object); ok {
				name = mo.GetNamespace() + "/" + mo.GetName()
			}
			m.mg.log.Error("kubernetes: recovered from a panic while handling an object; it is skipped", "cluster", m.src.Cluster, "object", name, "panic", fmt.Sprint(r), "stack", string(debug.Stack()))
		}
	}()
	handle(o)
}

func (m *member) objects() []Object { return m.objs.list() }

// invalid counts objects whose current annotations are rejected.
func (m *member) invalid() int { return m.objs.invalid() }

// writeStatus is the status writer's pass over the member's objects; a
// member that is not Ready gets nothing.
func (m *member) writeStatus(statuses map[ObjectRef]Status, problems map[ObjectRef][]string, annotation bool) (failed int) {
	m.mu.Lock()
	ready, ctx := m.state == StateReady, m.ctx
	m.mu.Unlock()
	if !ready {
		return 0
	}
	if ctx == nil {
		ctx = context.Background()
	}
	return m.writer.write(ctx, statuses, problems, annotation)
}

// handlers are a source's informer event handlers: each object is handled
// through sink.safely.
func handlers(sink objectSink, upsert, remove func(any)) cache.ResourceEventHandlerFuncs {
	return cache.ResourceEventHandlerFuncs{
		AddFunc:    func(o any) { sink.safely(o, upsert) },
		UpdateFunc: func(_, o any) { sink.safely(o, upsert) },
		DeleteFunc: func(o any) { sink.safely(o, remove) },
	}
}

// withoutTombstone is the object of a deletion the informer missed (a
// tombstone), else o.
func withoutTombstone(o any) any {
	if d, ok := o.(cache.DeletedFinalStateUnknown); ok {
		return d.Obj
	}
	return o
}

// watchedNamespaces are the namespaces the informers watch: each of
// kubernetes.namespaces, or all.
func watchedNamespaces(k model.Kubernetes) []string {
	if len(k.Namespaces) == 0 {
		return []string{metav1.NamespaceAll}
	}
	return k.Namespaces
}

func orAll(ns string) string {
	if ns == "" {
		return "(all)"
	}
	return ns
}
