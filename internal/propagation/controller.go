package propagation

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"runtime/debug"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/discovery/cached/memory"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/metadata"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/restmapper"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"

	"github.com/meridian-gslb/meridian/internal/kube"
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

// clients are one cluster's API clients: dynamic for objects, metadata for
// cheap template scans, discovery and a RESTMapper for kinds found at run
// time (a CRD installed after start is found on the next pass).
type clients struct {
	key    string
	cfg    *rest.Config
	dyn    dynamic.Interface
	meta   metadata.Interface
	disc   discovery.CachedDiscoveryInterface
	mapper *restmapper.DeferredDiscoveryRESTMapper
	reread bool  // the mapper re-read discovery this pass (Run's goroutine only)
	failed error // the member's discovery failed this pass: not asked again until the next
}

// member is a member's clients as of the start of this pass: a member that
// turns Ready mid-pass waits for the next one, so it gets every template in
// dependency order.
func (c *Controller) member(cluster string) (*clients, bool) {
	mc, ok := c.pass[cluster]
	return mc, ok
}

func (c *Controller) clientsFor(cluster string) (*clients, bool) {
	cfg, ok := c.env.Config(cluster)
	if !ok {
		return nil, false
	}
	key := configKey(cfg)
	c.mu.Lock()
	cl := c.clients[cluster]
	c.mu.Unlock()
	if cl != nil && cl.key == key {
		return cl, true
	}
	dyn, err := dynamic.NewForConfig(cfg)
	if err != nil {
		return nil, false
	}
	meta, err := metadata.NewForConfig(cfg)
	if err != nil {
		return nil, false
	}
	dc, err := discovery.NewDiscoveryClientForConfig(cfg)
	if err != nil {
		return nil, false
	}
	disc := memory.NewMemCacheClient(dc)
	cl = &clients{key: key, cfg: cfg, dyn: dyn, meta: meta, disc: disc, mapper: restmapper.NewDeferredDiscoveryRESTMapper(disc)}
	c.mu.Lock()
	c.clients[cluster] = cl
	c.mu.Unlock()
	return cl, true
}

// configKey identifies a member's connection: clients are rebuilt when it
// changes (a rotated token, a new endpoint, another identity: impersonation,
// basic auth, exec command or auth provider).
func configKey(cfg *rest.Config) string {
	id := struct {
		Host, APIPath, Token, TokenFile, User, Password string
		CertFile, KeyFile, CAFile, ServerName           string
		CertData, KeyData, CAData                       []byte
		Insecure                                        bool
		Impersonate                                     rest.ImpersonationConfig
		Exec                                            *clientcmdapi.ExecConfig
		AuthProvider                                    *clientcmdapi.AuthProviderConfig
	}{cfg.Host, cfg.APIPath, cfg.BearerToken, cfg.BearerTokenFile, cfg.Username, cfg.Password,
		cfg.CertFile, cfg.KeyFile, cfg.CAFile, cfg.ServerName, cfg.CertData, cfg.KeyData, cfg.CAData, cfg.Insecure,
		cfg.Impersonate, cfg.ExecProvider, cfg.AuthProvider}
	b, _ := json.Marshal(id) // strings, bytes, bools, maps and slices of them: cannot fail
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}

// notServed: the member does not serve the template's kind as the hub
// does, so it holds no copy of ours.
type notServed struct{ msg string }

func (e notServed) Error() string { return e.msg }

// resource maps a template's kind to the member's resource; a kind the
// member does not serve (its CRD is not installed there) is an error that
// says so. A miss re-reads the member's discovery, once per pass (not
// once per template).
func (cl *clients) resource(gvk schema.GroupVersionKind, ns string) (dynamic.ResourceInterface, error) {
	if cl.failed != nil {
		return nil, cl.failed
	}
	m, err := cl.mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
	if apimeta.IsNoMatchError(err) && !cl.reread {
		cl.reread = true
		cl.mapper.Reset()
		m, err = cl.mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
	}
	if apimeta.IsNoMatchError(err) {
		return nil, notServed{fmt.Sprintf("the cluster does not serve %s %s (install its CRD or API there)", kindName(gvk.GroupKind()), gvk.GroupVersion())}
	}
	if apimeta.IsAmbiguousError(err) {
		return nil, fmt.Errorf("mapping %s: %w", kindName(gvk.GroupKind()), err)
	}
	if err != nil {
		cl.failed = fmt.Errorf("reading the cluster's kinds: %w", err)
		return nil, cl.failed
	}
	// The scope must be the hub's: a namespaced template sent to a member
	// whose kind (another CRD of the same group and kind) is cluster-scoped
	// would be written outside any namespace (the API server drops the
	// namespace), out of reach of the rights that scoped the template.
	root := m.Scope.Name() == apimeta.RESTScopeNameRoot
	switch {
	case root && ns != "":
		return nil, notServed{fmt.Sprintf("the cluster serves %s cluster-scoped, the hub namespaced", kindName(gvk.GroupKind()))}
	case !root && ns == "":
		return nil, notServed{fmt.Sprintf("the cluster serves %s namespaced, the hub cluster-scoped", kindName(gvk.GroupKind()))}
	case root:
		return cl.dyn.Resource(m.Resource), nil
	}
	return cl.dyn.Resource(m.Resource).Namespace(ns), nil
}

// hubKinds discovers the kinds that can hold templates, afresh each pass.
func (c *Controller) hubKinds(hub *clients) []Kind {
	hub.disc.Invalidate()
	lists, err := discovery.ServerPreferredResources(hub.disc)
	// Partial answers (an aggregated API down) still list the rest; said
	// once per distinct problem.
	msg := ""
	if err != nil {
		msg = err.Error()
	}
	if msg != c.discErr && msg != "" {
		c.log.Warn("propagation: hub discovery incomplete; kinds of the failed groups are not scanned", "err", err)
	}
	c.discErr = msg
	return Kinds(lists)
}

type templateMeta struct {
	kind      Kind
	ns        string
	name      string
	ref       string
	owner     string // the ref of its controller in the hub, if any
	finalized bool   // holds our finalizer
	child     bool   // made by a hub controller from a template: not a template
}

func (c *Controller) reconcileAll(ctx context.Context) {
	hub, ok := c.clientsFor(c.opts.Hub)
	if !ok {
		c.log.Debug("propagation: hub not ready", "hub", c.opts.Hub)
		return
	}
	c.pass = map[string]*clients{}
	registered := c.env.Clusters()
	c.mu.Lock()
	for cl := range c.clients {
		if _, ok := registered[cl]; !ok && cl != c.opts.Hub {
			delete(c.clients, cl) // a member removed from the config or its Secret
		}
	}
	c.mu.Unlock()
	for cl := range registered {
		if mc, ok := c.clientsFor(cl); ok {
			mc.reread, mc.failed = false, nil
			c.pass[cl] = mc
		}
	}
	nss := c.opts.Namespaces
	if len(nss) == 0 {
		nss = []string{metav1.NamespaceAll}
	}
	var found []templateMeta
	var deniedKinds []string
	failedKinds := map[string]bool{} // listed with an error this pass: their statuses stay
	readable, forbidden := 0, 0
	kinds := c.hubKinds(hub)
	if len(kinds) == 0 {
		return // discovery failed: keep the last statuses, try next pass
	}
	for _, k := range kinds {
		denied := false
		scan := nss
		if !k.Namespaced {
			scan = []string{metav1.NamespaceAll}
		}
		if c.skipDenied[k.Name()] > 0 {
			// Refused lately: asked again every recheckForbidden passes,
			// not every pass (each refusal is a 403 in the hub's audit log).
			c.skipDenied[k.Name()]--
			forbidden++
			deniedKinds = append(deniedKinds, k.Name())
			continue
		}
		for _, ns := range scan {
			items, err := c.listMeta(ctx, hub, k, ns)
			if apierrors.IsForbidden(err) {
				denied = true
				continue
			}
			if err != nil {
				c.log.Warn("propagation: listing templates failed", "kind", k.Name(), "namespace", ns, "err", err)
				failedKinds[k.Name()] = true
				continue
			}
			for _, it := range items {
				if it.Annotations[AnnoPropagate] != "true" && !slices.Contains(it.Finalizers, Finalizer) {
					continue
				}
				if !k.Namespaced && len(c.opts.Namespaces) > 0 && !slices.Contains(c.opts.Namespaces, it.Name) {
					continue // a Namespace template outside the configured namespaces
				}
				u := &unstructured.Unstructured{}
				u.SetGroupVersionKind(k.GVK)
				u.SetNamespace(it.Namespace)
				u.SetName(it.Name)
				found = append(found, templateMeta{kind: k, ns: it.Namespace, name: it.Name, ref: TemplateRef(u), owner: controllerRef(it.ObjectMeta),
					finalized: slices.Contains(it.Finalizers, Finalizer)})
			}
		}
		if denied {
			forbidden++
			deniedKinds = append(deniedKinds, k.Name())
			c.skipDenied[k.Name()] = recheckForbidden
		} else {
			readable++
		}
	}
	found = withoutChildren(found)
	c.noteDenied(deniedKinds)
	c.mu.Lock()
	c.kinds = [2]int{readable, forbidden}
	c.mu.Unlock()
	// Kinds come in apply order already; keep it stable within a kind.
	sort.SliceStable(found, func(i, j int) bool {
		oi, oj := Order(found[i].kind.GVK.GroupKind()), Order(found[j].kind.GVK.GroupKind())
		if oi != oj {
			return oi < oj
		}
		return found[i].ref < found[j].ref
	})
	seen := map[string]bool{}
	objs := make([]*unstructured.Unstructured, len(found))
	for i, tm := range found {
		seen[tm.ref] = true
		t, err := hub.dyn.Resource(tm.kind.GVR()).Namespace(tm.ns).Get(ctx, tm.name, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			continue
		}
		if err != nil {
			c.log.Warn("propagation: reading a template failed", "template", tm.ref, "err", err)
			continue
		}
		t.SetGroupVersionKind(tm.kind.GVK)
		objs[i] = t
	}
	scaled := autoscaled(objs)
	for i, tm := range found {
		if t := objs[i]; t != nil {
			c.safely(tm.ref, func() { c.reconcile(ctx, hub, tm.kind, t, tm.child, scaled[tm.ref]) })
		}
	}
	c.mu.Lock()
	for ref := range c.status {
		kind, _, _ := strings.Cut(ref, "/")
		if !seen[ref] && !failedKinds[kind] {
			delete(c.status, ref)
		}
	}
	c.mu.Unlock()
}

// recheckForbidden is how many passes a kind the hub refused to list is
// skipped before it is asked again.
const recheckForbidden = 30

// listPage bounds one list answer; larger kinds are read in pages.
const listPage = 500

// listMeta lists a kind's objects (metadata only) in pages.
func (c *Controller) listMeta(ctx context.Context, hub *clients, k Kind, ns string) ([]metav1.PartialObjectMetadata, error) {
	var out []metav1.PartialObjectMetadata
	opts := metav1.ListOptions{Limit: listPage}
	for {
		list, err := hub.meta.Resource(k.GVR()).Namespace(ns).List(ctx, opts)
		if err != nil {
			return nil, err
		}
		out = append(out, list.Items...)
		if list.Continue == "" {
			return out, nil
		}
		opts.Continue = list.Continue
	}
}

// autoscaled maps the workloads an HPA template scales (by template ref) to
// that HPA's ref: their copies keep the replica count the member's HPA set,
// so Meridian and the autoscaler never take turns writing it.
func autoscaled(objs []*unstructured.Unstructured) map[string]string {
	out := map[string]string{}
	for _, t := range objs {
		if t == nil || t.GroupVersionKind().GroupKind() != (schema.GroupKind{Group: "autoscaling", Kind: "HorizontalPodAutoscaler"}) {
			continue
		}
		apiVersion, _, _ := unstructured.NestedString(t.Object, "spec", "scaleTargetRef", "apiVersion")
		kind, _, _ := unstructured.NestedString(t.Object, "spec", "scaleTargetRef", "kind")
		name, _, _ := unstructured.NestedString(t.Object, "spec", "scaleTargetRef", "name")
		gv, err := schema.ParseGroupVersion(apiVersion)
		if err != nil || kind == "" || name == "" {
			continue
		}
		out[kindName(gv.WithKind(kind).GroupKind())+"/"+t.GetNamespace()+"/"+name] = TemplateRef(t)
	}
	return out
}

// controllerRef is the template ref of an object's controller (same
// namespace), "" without one.
func controllerRef(m metav1.ObjectMeta) string {
	ref := metav1.GetControllerOfNoCopy(&m)
	if ref == nil {
		return ""
	}
	gv, err := schema.ParseGroupVersion(ref.APIVersion)
	if err != nil {
		return ""
	}
	return kindName(gv.WithKind(ref.Kind).GroupKind()) + "/" + m.Namespace + "/" + ref.Name
}

// withoutChildren drops the objects a hub controller made from a template:
// they inherit its annotations (a Deployment's ReplicaSets carry every one
// of them) but the members' own controllers make them from the copy. One
// that already holds our finalizer stays, marked, so its copies and the
// finalizer are removed.
func withoutChildren(found []templateMeta) []templateMeta {
	refs := map[string]bool{}
	for _, tm := range found {
		refs[tm.ref] = true
	}
	out := found[:0]
	for _, tm := range found {
		if tm.owner != "" && refs[tm.owner] {
			if !tm.finalized {
				continue
			}
			tm.child = true
		}
		out = append(out, tm)
	}
	return out
}

// noteDenied logs the kinds the hub identity may not list, once each time
// that list changes.
func (c *Controller) noteDenied(denied []string) {
	c.mu.Lock()
	prev := c.denied
	c.denied = denied
	c.mu.Unlock()
	if slices.Equal(prev, denied) {
		return
	}
	if len(denied) == 0 {
		c.log.Info("propagation: every kind the hub serves is readable")
		return
	}
	c.log.Info("propagation: kinds skipped, Meridian's identity in the hub may not list them (to propagate one, grant get, list, watch, create, patch, update, delete on it in the hub and the members)",
		"count", len(denied), "kinds", strings.Join(denied, ","))
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

// reconcile brings the members in line with one template.
func (c *Controller) reconcile(ctx context.Context, hub *clients, k Kind, t *unstructured.Unstructured, child bool, scaledBy string) {
	ref := TemplateRef(t)
	var hubRes dynamic.ResourceInterface = hub.dyn.Resource(k.GVR())
	if k.Namespaced {
		hubRes = hub.dyn.Resource(k.GVR()).Namespace(t.GetNamespace())
	}
	if t.GetDeletionTimestamp() != nil || t.GetAnnotations()[AnnoPropagate] != "true" || child {
		if c.removeCopies(ctx, t, nil) {
			c.dropFinalizer(ctx, hubRes, t)
			c.mu.Lock()
			delete(c.status, ref)
			c.mu.Unlock()
		}
		return
	}
	if !slices.Contains(t.GetFinalizers(), Finalizer) {
		patch, _ := json.Marshal(map[string]any{"metadata": map[string]any{"finalizers": append(t.GetFinalizers(), Finalizer), "resourceVersion": t.GetResourceVersion()}})
		if _, err := hubRes.Patch(ctx, t.GetName(), types.MergePatchType, patch, metav1.PatchOptions{FieldManager: FieldManager}); err != nil {
			c.log.Warn("propagation: adding the finalizer failed", "template", ref, "err", err)
			return
		}
	}
	st := Status{Template: ref, Clusters: map[string]ClusterStatus{}, ScaledBy: scaledBy}
	spec, errs := ParseSpec(t.GetAnnotations())
	if len(errs) == 0 {
		spec.ReplicasPath, errs = replicasPath(t, spec)
	}
	if len(errs) > 0 {
		for _, e := range errs {
			st.Errors = append(st.Errors, e.Error())
		}
		st.Errors = append(st.Errors, "nothing was changed in the members until the annotations are fixed")
		c.finish(ctx, hubRes, t, st)
		return
	}
	st.Mode = spec.Mode
	registered := c.env.Clusters()
	var clusters []string
	if spec.Clusters != nil {
		for _, cl := range spec.Clusters {
			if cl == c.opts.Hub {
				st.Errors = append(st.Errors, fmt.Sprintf("%s: %q is the hub, which holds the templates and is never a target (skipped)", AnnoClusters, cl))
				continue
			}
			if _, ok := registered[cl]; !ok {
				st.Errors = append(st.Errors, fmt.Sprintf("%s: cluster %q is not a registered member (skipped)", AnnoClusters, cl))
				continue
			}
			clusters = append(clusters, cl)
		}
	} else {
		clusters, st.Scores = c.rank(ctx, spec, registered)
	}
	// Failover: a divided workload's share leaves a cluster failed for
	// longer than the toleration and returns once the decision clears it.
	keep := clusters
	if spec.Mode == ModeDivided {
		var wake time.Time
		keep, wake = placement.Survivors(clusters, c.env.Health(), c.opts.Toleration, c.opts.Now())
		for _, cl := range clusters {
			if !slices.Contains(keep, cl) {
				st.Excluded = append(st.Excluded, cl)
			}
		}
		if !wake.IsZero() {
			time.AfterFunc(time.Until(wake)+10*time.Millisecond, c.Poke)
		}
	}
	replicas := c.replicas(t, spec, keep, &st)
	prevReady := true
	for _, cl := range clusters {
		if slices.Contains(st.Excluded, cl) {
			cs := st.Clusters[cl]
			cs.Waiting = "failed over past the toleration: its share moved to the other clusters"
			st.Clusters[cl] = cs
			continue
		}
		cs := c.applyTo(ctx, t, cl, replicas[cl], spec, prevReady, scaledBy)
		st.Clusters[cl] = cs
		st.Desired += cs.Desired
		st.Ready += cs.Ready
		if cs.Healthy {
			st.Healthy++
		}
		if spec.Rollout == RolloutOneByOne && (cs.Error != "" || cs.Waiting != "" || !cs.Healthy) {
			prevReady = false
		}
	}
	// Copies in members that are no longer chosen are removed (only ours).
	c.removeCopies(ctx, t, clusters)
	c.finish(ctx, hubRes, t, st)
}

// replicasPath is where t keeps its replica count: meridian.io/replicas-path,
// else spec.replicas for the kinds that have it (Deployment, StatefulSet,
// ReplicaSet, ReplicationController) and for any kind whose template sets it
// (custom resources); nil for kinds without one. Divided replicas need one.
func replicasPath(t *unstructured.Unstructured, spec Spec) ([]string, []kube.FieldError) {
	path := spec.ReplicasPath
	if path != nil {
		if _, ok := intAt(t.Object, path); !ok {
			return nil, []kube.FieldError{{Annotation: AnnoReplicasPath, Value: t.GetAnnotations()[AnnoReplicasPath],
				Msg: "does not name an integer field of the template (allowed: the path of its replica count, e.g. spec.workers.replicas)"}}
		}
		return path, nil
	}
	if builtinReplicas(t.GroupVersionKind().GroupKind()) {
		return []string{"spec", "replicas"}, nil
	}
	if _, ok := intAt(t.Object, []string{"spec", "replicas"}); ok {
		return []string{"spec", "replicas"}, nil
	}
	if spec.Mode == ModeDivided {
		return nil, []kube.FieldError{{Annotation: AnnoReplicas, Value: ModeDivided,
			Msg: fmt.Sprintf("needs a replica count, and %s has no spec.replicas (allowed: duplicated, or name the count with %s)", kindName(t.GroupVersionKind().GroupKind()), AnnoReplicasPath)}}
	}
	return nil, nil
}

// builtinReplicas: the kinds with spec.replicas and status.readyReplicas
// (readyReplicas is left out of their status while it is 0).
func builtinReplicas(gk schema.GroupKind) bool {
	switch gk {
	case schema.GroupKind{Group: "apps", Kind: "Deployment"}, schema.GroupKind{Group: "apps", Kind: "StatefulSet"},
		schema.GroupKind{Group: "apps", Kind: "ReplicaSet"}, schema.GroupKind{Kind: "ReplicationController"}:
		return true
	}
	return false
}

// replicas decides each cluster's replica count (kinds with one).
func (c *Controller) replicas(t *unstructured.Unstructured, spec Spec, keep []string, st *Status) map[string]*int64 {
	out := map[string]*int64{}
	if spec.ReplicasPath == nil {
		return out
	}
	total, ok := intAt(t.Object, spec.ReplicasPath)
	if !ok {
		total = 1 // the API server's default for the built-in kinds
	}
	if spec.Mode == ModeDuplicated {
		for _, cl := range keep {
			out[cl] = &total
		}
		return out
	}
	weights := spec.Weights
	if weights == nil && spec.Hostname != "" {
		weights = c.env.TrafficWeights(spec.Hostname)
	}
	var shares []placement.Share
	for _, cl := range keep {
		w := 1
		if weights != nil {
			w = weights[cl]
		}
		shares = append(shares, placement.Share{Cluster: cl, Weight: w, Min: spec.Min[cl], Max: spec.Max[cl]})
	}
	alloc, unplaced, err := placement.Divide(int(total), shares)
	if err != nil {
		st.Errors = append(st.Errors, "dividing replicas: "+err.Error())
		return out
	}
	if unplaced > 0 {
		st.Errors = append(st.Errors, fmt.Sprintf("%d of %d replicas could not be placed (every cluster at its maximum or weight 0)", unplaced, total))
	}
	for cl, n := range alloc {
		v := int64(n)
		out[cl] = &v
	}
	return out
}

// applyTo server-side applies the copy into one member. With a one-by-one
// rollout, a cluster whose predecessor is not ready yet only gets its
// replica count, not new content.
func (c *Controller) applyTo(ctx context.Context, t *unstructured.Unstructured, cl string, replicas *int64, spec Spec, prevReady bool, scaledBy string) ClusterStatus {
	var cs ClusterStatus
	if replicas != nil {
		cs.Desired = *replicas
	}
	mc, ok := c.member(cl)
	if !ok {
		cs.Waiting = "member not ready: nothing sent"
		return cs
	}
	res, err := mc.resource(t.GroupVersionKind(), t.GetNamespace())
	if err != nil {
		cs.Error = err.Error() + "; nothing sent"
		return cs
	}
	obj, hash, err := Render(t, cl, replicas, spec)
	if err != nil {
		cs.Error = err.Error() + "; the last good object stays"
		c.fillLive(ctx, res, t.GetName(), spec, &cs)
		return cs
	}
	live, err := res.Get(ctx, t.GetName(), metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
		live = nil
		if t.GetNamespace() != "" {
			if err := ensureNamespace(ctx, mc, t.GetNamespace(), TemplateRef(t)); err != nil {
				cs.Error = err.Error()
				return cs
			}
		}
	case err != nil:
		cs.Error = fmt.Sprintf("reading the copy: %v", err)
		return cs
	case !owned(live, t) && !adoptable(live, t):
		cs.Error = fmt.Sprintf("%s exists in %s and is not Meridian's (no %s label and template annotation): not touched", TemplateRef(t), cl, LabelPropagated)
		return cs
	}
	// An autoscaled copy keeps the count the member's HPA gave it: the
	// template's (or the divided) count is only the starting point.
	if scaledBy != "" && live != nil && replicas != nil {
		if n, ok := intAt(live.Object, spec.ReplicasPath); ok && n != *replicas {
			replicas = &n
			cs.Desired = n
			if obj, hash, err = Render(t, cl, replicas, spec); err != nil {
				cs.Error = err.Error() + "; the last good object stays"
				return cs
			}
		}
	}
	if spec.Rollout == RolloutOneByOne && !prevReady && live != nil && live.GetAnnotations()[AnnoSpecHash] != hash {
		cs.Waiting = "rollout: waiting for the previous cluster to be ready"
		if replicas != nil {
			patch, _ := json.Marshal(nested(spec.ReplicasPath, *replicas))
			if _, err := res.Patch(ctx, t.GetName(), types.MergePatchType, patch, metav1.PatchOptions{FieldManager: FieldManager}); err != nil {
				cs.Error = fmt.Sprintf("setting replicas: %v", err)
			}
		}
		c.fillLive(ctx, res, t.GetName(), spec, &cs)
		return cs
	}
	if spec.Rollout == RolloutOneByOne && !prevReady && live == nil {
		cs.Waiting = "rollout: waiting for the previous cluster to be ready"
		return cs
	}
	data, err := json.Marshal(obj.Object)
	if err != nil {
		cs.Error = err.Error()
		return cs
	}
	force := true
	applied, err := res.Patch(ctx, t.GetName(), types.ApplyPatchType, data, metav1.PatchOptions{FieldManager: FieldManager, Force: &force})
	if err != nil {
		c.applies.WithLabelValues(cl, "failure").Inc()
		cs.Error = fmt.Sprintf("server-side apply: %v; the last good object stays", err)
		c.fillLive(ctx, res, t.GetName(), spec, &cs)
		return cs
	}
	c.applies.WithLabelValues(cl, "success").Inc()
	fillFrom(applied, spec, &cs)
	return cs
}

// intAt reads a whole number at path (int64 from the API's decoder, a
// whole float64 from plain JSON).
func intAt(obj map[string]any, path []string) (int64, bool) {
	v, ok, _ := unstructured.NestedFieldNoCopy(obj, path...)
	if !ok {
		return 0, false
	}
	switch n := v.(type) {
	case int64:
		return n, true
	case int:
		return int64(n), true
	case float64:
		if n == float64(int64(n)) {
			return int64(n), true
		}
	}
	return 0, false
}

// nested makes {"spec":{"replicas":n}} from a field path.
func nested(path []string, v int64) map[string]any {
	var out any = v
	for i := len(path) - 1; i >= 0; i-- {
		out = map[string]any{path[i]: out}
	}
	return out.(map[string]any)
}

func (c *Controller) fillLive(ctx context.Context, res dynamic.ResourceInterface, name string, spec Spec, cs *ClusterStatus) {
	if live, err := res.Get(ctx, name, metav1.GetOptions{}); err == nil {
		fillFrom(live, spec, cs)
	}
}

// fillFrom reads a copy's status: generation, ready replicas, conditions,
// and whether it is healthy — the desired replicas ready and the
// generation observed for the built-in kinds with replicas and any kind
// reporting status.readyReplicas; else its Ready or Available condition
// when it has one; else applied without error.
func fillFrom(u *unstructured.Unstructured, spec Spec, cs *ClusterStatus) {
	cs.Generation = u.GetGeneration()
	cs.SpecHash = u.GetAnnotations()[AnnoSpecHash]
	cs.Ready, _ = intAt(u.Object, []string{"status", "readyReplicas"})
	var observed bool
	cs.Observed, observed = intAt(u.Object, []string{"status", "observedGeneration"})
	cs.Conditions = nil
	health := ""
	conds, _, _ := unstructured.NestedSlice(u.Object, "status", "conditions")
	for _, x := range conds {
		m, ok := x.(map[string]any)
		if !ok {
			continue
		}
		typ, _ := m["type"].(string)
		stat, _ := m["status"].(string)
		if typ == "" {
			continue
		}
		if len(cs.Conditions) < 8 {
			cs.Conditions = append(cs.Conditions, typ+"="+stat)
		}
		if typ == "Ready" || typ == "Available" && health == "" {
			health = stat
		}
	}
	_, readyField, _ := unstructured.NestedFieldNoCopy(u.Object, "status", "readyReplicas")
	builtin := builtinReplicas(u.GroupVersionKind().GroupKind())
	switch {
	case cs.Error != "":
		cs.Healthy = false
	case spec.ReplicasPath != nil && (builtin || readyField):
		// A custom resource need not report observedGeneration.
		cs.Healthy = (cs.Observed >= cs.Generation || !builtin && !observed) && cs.Ready >= cs.Desired
	case health != "":
		cs.Healthy = health == "True"
	default:
		cs.Healthy = true
	}
}

// ensureNamespace creates a copy's namespace in a member that lacks it,
// labelled as Meridian's and marked with the template that needed it but
// with no template reference: it is no template's copy, so no template
// deletes it (that would take every object in it), until a Namespace
// template sent to that member adopts it.
func ensureNamespace(ctx context.Context, mc *clients, ns, forRef string) error {
	u := &unstructured.Unstructured{}
	u.SetAPIVersion("v1")
	u.SetKind("Namespace")
	u.SetName(ns)
	u.SetLabels(map[string]string{LabelPropagated: "true"})
	u.SetAnnotations(map[string]string{AnnoNamespaceFor: forRef})
	_, err := mc.dyn.Resource(corev1.SchemeGroupVersion.WithResource("namespaces")).Create(ctx, u, metav1.CreateOptions{FieldManager: FieldManager})
	if err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("creating namespace %s: %w", ns, err)
	}
	return nil
}

// removeCopies deletes the template's copies from every Ready member not in
// keep (all with keep == nil) — only objects with our label and this
// template's annotation. It reports whether every registered member was
// reachable (so a finalizer can go).
func (c *Controller) removeCopies(ctx context.Context, t *unstructured.Unstructured, keep []string) bool {
	all := true
	for cl := range c.env.Clusters() {
		if cl == c.opts.Hub || keep != nil && slices.Contains(keep, cl) {
			continue
		}
		mc, ok := c.member(cl)
		if !ok {
			if keep == nil {
				all = false
			}
			continue
		}
		res, err := mc.resource(t.GroupVersionKind(), t.GetNamespace())
		if err != nil {
			if !errors.As(err, new(notServed)) {
				// Its discovery failed: a copy may be there.
				c.log.Debug("propagation: cannot check a member for a copy", "template", TemplateRef(t), "cluster", cl, "err", err)
				all = false
			}
			continue // the member does not serve the kind: no copy there
		}
		live, err := res.Get(ctx, t.GetName(), metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			continue
		}
		if err != nil {
			all = false
			continue
		}
		if !owned(live, t) {
			continue // not ours: never deleted
		}
		if t.GroupVersionKind().GroupKind() == (schema.GroupKind{Kind: "Namespace"}) {
			// Deleting a namespace deletes everything in it, Meridian's or
			// not: a Namespace copy is released (our label and reference
			// removed) and left to its owners.
			if err := c.release(ctx, res, live); err != nil {
				c.log.Warn("propagation: releasing a namespace failed", "template", TemplateRef(t), "cluster", cl, "err", err)
				all = false
				continue
			}
			c.log.Info("propagation: namespace released (not deleted: it may hold objects that are not Meridian's)", "template", TemplateRef(t), "cluster", cl)
			continue
		}
		// Only the object checked: one put there since is not deleted.
		uid := live.GetUID()
		if err := res.Delete(ctx, t.GetName(), metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &uid}}); err != nil && !apierrors.IsNotFound(err) {
			c.log.Warn("propagation: deleting a copy failed", "template", TemplateRef(t), "cluster", cl, "err", err)
			all = false
			continue
		}
		c.log.Info("propagation: copy removed", "template", TemplateRef(t), "cluster", cl)
	}
	return all
}

// release removes our label and template reference from a copy (guarded by
// its resourceVersion: a changed object is looked at again next pass).
func (c *Controller) release(ctx context.Context, res dynamic.ResourceInterface, live *unstructured.Unstructured) error {
	patch, _ := json.Marshal(map[string]any{"metadata": map[string]any{
		"resourceVersion": live.GetResourceVersion(),
		"labels":          map[string]any{LabelPropagated: nil},
		"annotations":     map[string]any{AnnoTemplate: nil, AnnoSpecHash: nil, AnnoNamespaceFor: nil},
	}})
	_, err := res.Patch(ctx, live.GetName(), types.MergePatchType, patch, metav1.PatchOptions{FieldManager: FieldManager})
	return err
}

func (c *Controller) dropFinalizer(ctx context.Context, hubRes dynamic.ResourceInterface, t *unstructured.Unstructured) {
	if !slices.Contains(t.GetFinalizers(), Finalizer) {
		return
	}
	fs := slices.DeleteFunc(slices.Clone(t.GetFinalizers()), func(f string) bool { return f == Finalizer })
	patch, _ := json.Marshal(map[string]any{"metadata": map[string]any{"finalizers": fs, "resourceVersion": t.GetResourceVersion()}})
	if _, err := hubRes.Patch(ctx, t.GetName(), types.MergePatchType, patch, metav1.PatchOptions{FieldManager: FieldManager}); err != nil && !apierrors.IsNotFound(err) {
		c.log.Warn("propagation: removing the finalizer failed", "template", TemplateRef(t), "err", err)
	}
}

// finish records the status and writes it onto the template when it changed.
func (c *Controller) finish(ctx context.Context, hubRes dynamic.ResourceInterface, t *unstructured.Unstructured, st Status) {
	c.mu.Lock()
	prev, had := c.status[st.Template]
	c.status[st.Template] = st
	c.mu.Unlock()
	text, _ := json.Marshal(st)
	if t.GetAnnotations()[AnnoStatus] == string(text) {
		return
	}
	if !had || !equalStatus(prev, st) {
		for cl, cs := range st.Clusters {
			if cs.Error != "" {
				c.log.Warn("propagation: cluster not updated", "template", st.Template, "cluster", cl, "err", cs.Error)
			}
		}
		if len(st.Errors) > 0 {
			c.log.Warn("propagation: template problems", "template", st.Template, "errors", st.Errors)
		}
	}
	patch, _ := json.Marshal(map[string]any{"metadata": map[string]any{"annotations": map[string]string{AnnoStatus: string(text)}}})
	if _, err := hubRes.Patch(ctx, t.GetName(), types.MergePatchType, patch, metav1.PatchOptions{FieldManager: FieldManager}); err != nil && !apierrors.IsNotFound(err) {
		c.log.Warn("propagation: writing the status failed", "template", st.Template, "err", err)
	}
}

func equalStatus(a, b Status) bool {
	ja, _ := json.Marshal(a)
	jb, _ := json.Marshal(b)
	return string(ja) == string(jb)
}

// rank chooses clusters by selector and score.
func (c *Controller) rank(ctx context.Context, spec Spec, registered map[string]map[string]string) ([]string, map[string]float64) {
	sel, err := placement.ParseSelector(spec.Selector)
	if err != nil {
		return nil, nil
	}
	health := map[string]bool{}
	for _, h := range c.env.Health() {
		health[h.Cluster] = h.Failed
	}
	var cands []placement.Candidate
	for cl, lbls := range registered {
		if cl == c.opts.Hub || !sel.Matches(labels.Set(lbls)) {
			continue
		}
		cost, _ := strconv.ParseFloat(lbls["meridian.io/cost"], 64)
		_, ready := c.env.Config(cl)
		cands = append(cands, placement.Candidate{Cluster: cl, Labels: lbls, Resources: c.resources(ctx, cl),
			Available: ready && !health[cl], Cost: max(cost, 0)})
	}
	return placement.Rank(cands, c.opts.Score, spec.MaxClusters)
}

// resources reads a member's free CPU, memory and GPUs: node allocatable
// minus the requests of its scheduled, non-terminal pods (cached 30s).
func (c *Controller) resources(ctx context.Context, cl string) placement.Resources {
	c.mu.Lock()
	if rc, ok := c.res[cl]; ok && c.opts.Now().Sub(rc.at) < 30*time.Second {
		c.mu.Unlock()
		return rc.res
	}
	c.mu.Unlock()
	var r placement.Resources
	cfg, ok := c.env.Config(cl)
	if !ok {
		return r
	}
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return r
	}
	nodes, err := cs.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
	if err != nil {
		c.log.Debug("propagation: listing nodes failed", "cluster", cl, "err", err)
		return r
	}
	for _, n := range nodes.Items {
		r.FreeMilliCPU += n.Status.Allocatable.Cpu().MilliValue()
		r.FreeMemory += n.Status.Allocatable.Memory().Value()
		r.FreeGPU += gpus(n.Status.Allocatable)
	}
	pods, err := cs.CoreV1().Pods(metav1.NamespaceAll).List(ctx, metav1.ListOptions{FieldSelector: "status.phase!=Succeeded,status.phase!=Failed"})
	if err == nil {
		for _, p := range pods.Items {
			if p.Spec.NodeName == "" {
				continue
			}
			for _, ctr := range p.Spec.Containers {
				r.FreeMilliCPU -= ctr.Resources.Requests.Cpu().MilliValue()
				r.FreeMemory -= ctr.Resources.Requests.Memory().Value()
				r.FreeGPU -= gpus(ctr.Resources.Requests)
			}
		}
	}
	c.mu.Lock()
	c.res[cl] = resCache{at: c.opts.Now(), res: r}
	c.mu.Unlock()
	return r
}

func gpus(l corev1.ResourceList) int64 {
	var n int64
	for name, q := range l {
		if name == "nvidia.com/gpu" || name == "amd.com/gpu" || name == "gpu.intel.com/i915" {
			n += q.Value()
		}
	}
	return n
}
