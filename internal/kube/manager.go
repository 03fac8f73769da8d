package kube

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"maps"
	"runtime/debug"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"golang.org/x/time/rate"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/dynamic/dynamicinformer"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"
	gwv1 "sigs.k8s.io/gateway-api/apis/v1"

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
		k.StatusQPS != mg.kcfg.StatusQPS || k.StatusBurst != mg.kcfg.StatusBurst
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

// member is one member cluster: its client, informers and objects.
type member struct {
	mg   *Manager
	src  MemberSource
	kcfg model.Kubernetes

	cancel context.CancelFunc
	done   chan struct{}

	mu        sync.Mutex
	state     string
	reason    string
	since     time.Time
	cs        kubernetes.Interface // one-shot requests: connect_timeout bounds each
	cfg       *rest.Config
	watch     kubernetes.Interface // informers: no overall timeout (watchConfig)
	watchCfg  *rest.Config
	writer    kubernetes.Interface // status writes: watchConfig's, paced by limiter only
	limiter   *rate.Limiter        // status writes (Events, meridian.io/status): status_qps, status_burst
	events    *eventWriter
	objs      map[ObjectRef]*objState
	written   map[ObjectRef]string   // status text last written (or seen) per object
	evented   map[ObjectRef][]string // errors and problems last reported as Events per object
	served    map[ObjectRef]string   // serving last reported as an Event per object
	forbidden bool                   // a status patch was forbidden (logged once)

	// passed is, per object, what the last status pass was given for it
	// (statusPass): a pass given the same again has nothing to do for it.
	passed map[ObjectRef]statusPass

	// Gateway API (gatewaywatch.go): started once the member serves the CRDs.
	routeMu        sync.Mutex                                     // serialises route and Gateway events (before mu)
	gwFactories    []dynamicinformer.DynamicSharedInformerFactory // one per watched namespace
	gwAbsentLogged bool                                           // run's goroutine only
	dyn            dynamic.Interface
	gvrs           map[string]schema.GroupVersionResource // kind -> watched resource
	gateways       map[string]*gwv1.Gateway               // NAMESPACE/NAME -> last seen

	// EndpointSlices (endpointslices.go), watched for capacity-aware services.
	ctx           context.Context // the run's context, once connected (under mu)
	slicesStarted bool
	slicesSynced  func() bool                         // nil until started
	slices        map[sliceKey]map[string]SliceCounts // Service -> slice name -> counts
	sliceOwner    map[string]sliceKey                 // NAMESPACE/slice name -> its Service
}

// objState is one watched object with its last valid settings.
type objState struct {
	obj     Object
	uid     types.UID
	errs    []FieldError
	runtime runtime.Object // for Events
	status  string         // current meridian.io/status value on the object
}

func newMember(mg *Manager, s MemberSource, k model.Kubernetes) *member {
	qps, burst := k.StatusQPS, k.StatusBurst
	if qps <= 0 {
		qps = model.DefaultKubeStatusQPS
	}
	if burst <= 0 {
		burst = model.DefaultKubeStatusBurst
	}
	return &member{mg: mg, src: s, kcfg: k, state: StateNotReady, reason: "connecting", since: time.Now(), limiter: rate.NewLimiter(rate.Limit(qps), burst),
		objs: map[ObjectRef]*objState{}, written: map[ObjectRef]string{}, evented: map[ObjectRef][]string{}, served: map[ObjectRef]string{}, passed: map[ObjectRef]statusPass{}, gateways: map[string]*gwv1.Gateway{},
		gvrs: map[string]schema.GroupVersionResource{}, slices: map[sliceKey]map[string]SliceCounts{}, sliceOwner: map[string]sliceKey{}}
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
	return MemberStatus{Cluster: m.src.Cluster, State: m.state, Reason: m.reason, Since: m.since, Origin: m.src.Origin, Objects: len(m.objs)}
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
// informers, then keeps checking /readyz so the state follows the member.
func (m *member) run(ctx context.Context) {
	retry := m.kcfg.RetryInterval.D()
	if retry <= 0 {
		retry = model.DefaultKubeRetryInterval
	}
	timeout := m.kcfg.ConnectTimeout.D()
	if timeout <= 0 {
		timeout = model.DefaultKubeConnectTimeout
	}
	var cs kubernetes.Interface
	for cs == nil {
		var err error
		cs, err = m.connect(ctx, timeout)
		if err != nil {
			m.setState(StateNotReady, err.Error())
			select {
			case <-ctx.Done():
				return
			case <-time.After(retry):
			}
		}
	}
	m.mu.Lock()
	m.ctx = ctx
	watch := m.watch
	m.mu.Unlock()
	m.startInformers(ctx, watch)
	if m.mg.endpointSlicesOn() {
		m.startSlices(ctx, watch)
	}
	m.tryGateway(ctx, cs)
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
			m.tryGateway(ctx, cs)
		}
	}
}

// connect builds the client and proves it works: local certificate check,
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
	// Status writes have their own budget (limiter): client-go's limiter,
	// shared with the informers' requests, would hold them at 20/s.
	wrcfg := rest.CopyConfig(wcfg)
	wrcfg.QPS = -1
	writer, err := kubernetes.NewForConfig(wrcfg)
	if err != nil {
		return nil, fmt.Errorf("status client: %w", err)
	}
	cctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	if err := readyz(cctx, cs); err != nil {
		return nil, fmt.Errorf("%s", Reason(err))
	}
	m.mu.Lock()
	m.cs, m.cfg, m.watch, m.watchCfg, m.writer = cs, cfg, watch, wcfg, writer
	m.events = newEventWriter(writer, func(result string) { m.mg.m.events.WithLabelValues(m.src.Cluster, result).Inc() })
	m.events.pace = m.limiter.Wait
	m.mu.Unlock()
	m.setState(StateReady, "")
	return cs, nil
}

func (m *member) startInformers(ctx context.Context, cs kubernetes.Interface) {
	resync := m.kcfg.Resync.D()
	nss := m.kcfg.Namespaces
	if len(nss) == 0 {
		nss = []string{metav1.NamespaceAll}
	}
	for _, ns := range nss {
		f := informers.NewSharedInformerFactoryWithOptions(cs, resync, informers.WithNamespace(ns))
		h := cache.ResourceEventHandlerFuncs{
			AddFunc:    func(o any) { m.safely(o, m.upsert) },
			UpdateFunc: func(_, o any) { m.safely(o, m.upsert) },
			DeleteFunc: func(o any) { m.safely(o, m.remove) },
		}
		if _, err := f.Core().V1().Services().Informer().AddEventHandler(h); err != nil {
			m.mg.log.Error("kubernetes: service informer", "cluster", m.src.Cluster, "err", err)
		}
		if _, err := f.Networking().V1().Ingresses().Informer().AddEventHandler(h); err != nil {
			m.mg.log.Error("kubernetes: ingress informer", "cluster", m.src.Cluster, "err", err)
		}
		f.Start(ctx.Done())
		go func() {
			f.WaitForCacheSync(ctx.Done())
			m.mg.log.Info("kubernetes: watching annotated Services and Ingresses", "cluster", m.src.Cluster, "namespace", orAll(ns))
		}()
	}
}

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

func orAll(ns string) string {
	if ns == "" {
		return "(all)"
	}
	return ns
}

// toObject reads a watched object; ok is false for objects Meridian ignores.
func (m *member) toObject(o any) (ref ObjectRef, meta metav1.Object, targets []string, ok bool) {
	var ingress []corev1.LoadBalancerIngress
	switch v := o.(type) {
	case *corev1.Service:
		if v.Spec.Type != corev1.ServiceTypeLoadBalancer {
			return ref, v, nil, false
		}
		ref, meta, ingress = ObjectRef{m.src.Cluster, KindService, v.Namespace, v.Name}, v, v.Status.LoadBalancer.Ingress
	case *networkingv1.Ingress:
		ref, meta = ObjectRef{m.src.Cluster, KindIngress, v.Namespace, v.Name}, v
		for _, i := range v.Status.LoadBalancer.Ingress {
			ingress = append(ingress, corev1.LoadBalancerIngress{IP: i.IP, Hostname: i.Hostname})
		}
	default:
		return ref, nil, nil, false
	}
	for _, i := range ingress {
		switch {
		case i.IP != "":
			targets = append(targets, i.IP)
		case i.Hostname != "":
			targets = append(targets, i.Hostname)
		}
	}
	return ref, meta, targets, Watched(meta.GetAnnotations())
}

func (m *member) upsert(o any) {
	if _, isU := o.(*unstructured.Unstructured); isU {
		// Routes and Gateways one at a time: a Gateway's change re-reads
		// the routes, and must not bring back an older or deleted one.
		m.routeMu.Lock()
		defer m.routeMu.Unlock()
	}
	m.upsertLocked(o)
}

// upsertLocked is upsert; for Gateway API objects m.routeMu is held.
func (m *member) upsertLocked(o any) {
	var (
		ref      ObjectRef
		meta     metav1.Object
		anno     map[string]string
		targets  []string
		problems []string
		annoErr  *FieldError
		ok       bool
	)
	if u, isU := o.(*unstructured.Unstructured); isU {
		if u.GetKind() == KindGateway {
			m.gatewayChanged(GatewayKey(u.GetNamespace(), u.GetName()), u)
			return
		}
		meta = u
		ref, anno, targets, problems, annoErr, ok = m.routeObject(u)
	} else {
		ref, meta, targets, ok = m.toObject(o)
		if meta != nil {
			anno = meta.GetAnnotations()
		}
	}
	if meta == nil {
		return
	}
	if !ok {
		// Not (or no longer) ours: an annotation removed or a type changed.
		m.removeRef(ObjectRef{m.src.Cluster, kindOf(o), meta.GetNamespace(), meta.GetName()})
		return
	}
	settings, errs := ParseAnnotations(anno)
	errs = routeErrors(anno, meta.GetAnnotations(), annoErr, errs)
	m.mu.Lock()
	st := m.objs[ref]
	if st == nil || st.uid != meta.GetUID() {
		st = &objState{uid: meta.GetUID()}
		m.objs[ref] = st
	}
	before, beforeErrs := st.obj, joinErrs(st.errs)
	st.obj.Ref, st.obj.Created, st.obj.Targets, st.obj.Problems = ref, meta.GetCreationTimestamp().Time, targets, problems
	st.obj.Backends = backendsOf(o)
	if len(errs) == 0 {
		st.obj.Settings, st.obj.Valid = settings, true
	}
	st.errs = errs
	st.runtime = o.(runtime.Object)
	st.status = meta.GetAnnotations()[AnnoStatus]
	changed := !equalObject(before, st.obj) || beforeErrs != joinErrs(errs)
	m.mu.Unlock()
	if len(errs) > 0 {
		for _, e := range errs {
			m.mg.m.annotationErrors.WithLabelValues(m.src.Cluster, e.Annotation).Inc()
		}
		m.mg.log.Warn("kubernetes: invalid annotation; the object keeps its last valid settings",
			"object", ref.String(), "errors", joinErrs(errs))
	}
	if changed {
		go m.mg.opts.OnChange()
	}
}

func kindOf(o any) string {
	if u, ok := o.(*unstructured.Unstructured); ok {
		return u.GetKind()
	}
	if _, ok := o.(*networkingv1.Ingress); ok {
		return KindIngress
	}
	return KindService
}

func (m *member) remove(o any) {
	if d, ok := o.(cache.DeletedFinalStateUnknown); ok {
		o = d.Obj
	}
	if u, ok := o.(*unstructured.Unstructured); ok {
		m.routeMu.Lock()
		defer m.routeMu.Unlock()
		if u.GetKind() == KindGateway {
			m.gatewayChanged(GatewayKey(u.GetNamespace(), u.GetName()), nil)
			return
		}
	}
	if meta, ok := o.(metav1.Object); ok {
		m.removeRef(ObjectRef{m.src.Cluster, kindOf(o), meta.GetNamespace(), meta.GetName()})
	}
}

func (m *member) removeRef(ref ObjectRef) {
	m.mu.Lock()
	_, had := m.objs[ref]
	delete(m.objs, ref)
	delete(m.written, ref)
	delete(m.evented, ref)
	delete(m.served, ref)
	delete(m.passed, ref)
	if m.events != nil {
		m.events.forget(ref.String())
	}
	m.mu.Unlock()
	if had {
		go m.mg.opts.OnChange()
	}
}

func equalObject(a, b Object) bool {
	ja, _ := json.Marshal(a)
	jb, _ := json.Marshal(b)
	return string(ja) == string(jb)
}

func joinErrs(errs []FieldError) string {
	s := ""
	for i, e := range errs {
		if i > 0 {
			s += "; "
		}
		s += e.Error()
	}
	return s
}

func (m *member) objects() []Object {
	m.mu.Lock()
	defer m.mu.Unlock()
	out := make([]Object, 0, len(m.objs))
	for _, st := range m.objs {
		out = append(out, st.obj)
	}
	return out
}

// invalid counts objects whose current annotations are rejected.
func (m *member) invalid() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	n := 0
	for _, st := range m.objs {
		if len(st.errs) > 0 {
			n++
		}
	}
	return n
}
