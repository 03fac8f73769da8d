package propagation

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"sort"
	"strconv"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/meridian-gslb/meridian/internal/placement"
)

// Kinds that can be templates, in apply order (what a Deployment needs first).
var kinds = []struct {
	Kind string
	GVR  schema.GroupVersionResource
}{
	{"ConfigMap", schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}},
	{"Secret", schema.GroupVersionResource{Version: "v1", Resource: "secrets"}},
	{"Service", schema.GroupVersionResource{Version: "v1", Resource: "services"}},
	{"Deployment", schema.GroupVersionResource{Group: "apps", Version: "v1", Resource: "deployments"}},
}

func gvrOf(kind string) (schema.GroupVersionResource, bool) {
	for _, k := range kinds {
		if k.Kind == kind {
			return k.GVR, true
		}
	}
	return schema.GroupVersionResource{}, false
}

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
	Desired    int64  `json:"desired"`              // replicas Meridian wants there (Deployments)
	Ready      int64  `json:"ready"`                // status.readyReplicas reported by the member
	Generation int64  `json:"generation,omitempty"` // metadata.generation of the copy
	Observed   int64  `json:"observed,omitempty"`   // status.observedGeneration of the copy
	SpecHash   string `json:"specHash,omitempty"`   // template content applied there
	Waiting    string `json:"waiting,omitempty"`    // why this cluster has not got the current content yet
	Error      string `json:"error,omitempty"`      // override or apply error; the last good object stays
}

// Status is a template's placement status (meridian.io/placement-status).
type Status struct {
	Template string                   `json:"template"`
	Mode     string                   `json:"mode,omitempty"`
	Clusters map[string]ClusterStatus `json:"clusters"`
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

	mu     sync.Mutex
	status map[string]Status // template ref -> last status
	res    map[string]resCache

	applies *prometheus.CounterVec
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
	c := &Controller{opts: opts, env: env, log: opts.Logger, wake: make(chan struct{}, 1), status: map[string]Status{}, res: map[string]resCache{}}
	c.applies = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "meridian_propagation_applies_total",
		Help: "Server-side applies of template copies into members, by cluster and result (success, failure).",
	}, []string{"cluster", "result"})
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
		opts.Registry.MustRegister(c.applies, templates, problems)
	}
	return c
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

func (c *Controller) dyn(cluster string) (dynamic.Interface, *rest.Config, bool) {
	cfg, ok := c.env.Config(cluster)
	if !ok {
		return nil, nil, false
	}
	d, err := dynamic.NewForConfig(cfg)
	if err != nil {
		return nil, nil, false
	}
	return d, cfg, true
}

func (c *Controller) reconcileAll(ctx context.Context) {
	hub, _, ok := c.dyn(c.opts.Hub)
	if !ok {
		c.log.Debug("propagation: hub not ready", "hub", c.opts.Hub)
		return
	}
	nss := c.opts.Namespaces
	if len(nss) == 0 {
		nss = []string{metav1.NamespaceAll}
	}
	seen := map[string]bool{}
	for _, k := range kinds {
		for _, ns := range nss {
			list, err := hub.Resource(k.GVR).Namespace(ns).List(ctx, metav1.ListOptions{})
			if err != nil {
				c.log.Warn("propagation: listing templates failed", "kind", k.Kind, "namespace", ns, "err", err)
				continue
			}
			for i := range list.Items {
				t := &list.Items[i]
				if t.GetAnnotations()[AnnoPropagate] != "true" && !slices.Contains(t.GetFinalizers(), Finalizer) {
					continue
				}
				if t.GetKind() == "" {
					t.SetKind(k.Kind)
				}
				seen[TemplateRef(t)] = true
				c.reconcile(ctx, hub, k.GVR, t)
			}
		}
	}
	c.mu.Lock()
	for ref := range c.status {
		if !seen[ref] {
			delete(c.status, ref)
		}
	}
	c.mu.Unlock()
}

// reconcile brings the members in line with one template.
func (c *Controller) reconcile(ctx context.Context, hub dynamic.Interface, gvr schema.GroupVersionResource, t *unstructured.Unstructured) {
	ref := TemplateRef(t)
	hubRes := hub.Resource(gvr).Namespace(t.GetNamespace())
	if t.GetDeletionTimestamp() != nil || t.GetAnnotations()[AnnoPropagate] != "true" {
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
	st := Status{Template: ref, Clusters: map[string]ClusterStatus{}}
	spec, errs := ParseSpec(t.GetAnnotations())
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
		cs := c.applyTo(ctx, gvr, t, cl, replicas[cl], spec, prevReady)
		st.Clusters[cl] = cs
		if spec.Rollout == RolloutOneByOne && (cs.Error != "" || cs.Waiting != "" || !copyReady(t.GetKind(), cs)) {
			prevReady = false
		}
	}
	// Copies in members that are no longer chosen are removed (only ours).
	c.removeCopies(ctx, t, clusters)
	c.finish(ctx, hubRes, t, st)
}

// replicas decides each cluster's replica count (Deployments).
func (c *Controller) replicas(t *unstructured.Unstructured, spec Spec, keep []string, st *Status) map[string]*int64 {
	out := map[string]*int64{}
	if t.GetKind() != "Deployment" {
		return out
	}
	total, ok, _ := unstructured.NestedInt64(t.Object, "spec", "replicas")
	if !ok {
		total = 1
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
func (c *Controller) applyTo(ctx context.Context, gvr schema.GroupVersionResource, t *unstructured.Unstructured, cl string, replicas *int64, spec Spec, prevReady bool) ClusterStatus {
	var cs ClusterStatus
	if replicas != nil {
		cs.Desired = *replicas
	}
	d, cfg, ok := c.dyn(cl)
	if !ok {
		cs.Waiting = "member not ready: nothing sent"
		return cs
	}
	obj, hash, err := Render(t, cl, replicas, spec)
	if err != nil {
		cs.Error = err.Error() + "; the last good object stays"
		c.fillLive(ctx, d.Resource(gvr).Namespace(t.GetNamespace()), t.GetName(), &cs)
		return cs
	}
	res := d.Resource(gvr).Namespace(t.GetNamespace())
	live, err := res.Get(ctx, t.GetName(), metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
		live = nil
		if err := ensureNamespace(ctx, cfg, t.GetNamespace()); err != nil {
			cs.Error = err.Error()
			return cs
		}
	case err != nil:
		cs.Error = fmt.Sprintf("reading the copy: %v", err)
		return cs
	case live.GetLabels()[LabelPropagated] != "true" || live.GetAnnotations()[AnnoTemplate] != TemplateRef(t):
		cs.Error = fmt.Sprintf("%s %s/%s exists in %s and is not Meridian's (no %s label): not touched", t.GetKind(), t.GetNamespace(), t.GetName(), cl, LabelPropagated)
		return cs
	}
	if spec.Rollout == RolloutOneByOne && !prevReady && live != nil && live.GetAnnotations()[AnnoSpecHash] != hash {
		cs.Waiting = "rollout: waiting for the previous cluster to be ready"
		if replicas != nil {
			patch := fmt.Appendf(nil, `{"spec":{"replicas":%d}}`, *replicas)
			if _, err := res.Patch(ctx, t.GetName(), types.MergePatchType, patch, metav1.PatchOptions{FieldManager: FieldManager}); err != nil {
				cs.Error = fmt.Sprintf("setting replicas: %v", err)
			}
		}
		c.fillLive(ctx, res, t.GetName(), &cs)
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
		c.fillLive(ctx, res, t.GetName(), &cs)
		return cs
	}
	c.applies.WithLabelValues(cl, "success").Inc()
	fillFrom(applied, &cs)
	return cs
}

func (c *Controller) fillLive(ctx context.Context, res dynamic.ResourceInterface, name string, cs *ClusterStatus) {
	if live, err := res.Get(ctx, name, metav1.GetOptions{}); err == nil {
		fillFrom(live, cs)
	}
}

func fillFrom(u *unstructured.Unstructured, cs *ClusterStatus) {
	cs.Generation = u.GetGeneration()
	cs.SpecHash = u.GetAnnotations()[AnnoSpecHash]
	cs.Ready, _, _ = unstructured.NestedInt64(u.Object, "status", "readyReplicas")
	cs.Observed, _, _ = unstructured.NestedInt64(u.Object, "status", "observedGeneration")
}

// copyReady: a Deployment copy is ready when the member observed its
// generation and has the desired replicas ready; other kinds once applied.
func copyReady(kind string, cs ClusterStatus) bool {
	if kind != "Deployment" {
		return cs.Error == ""
	}
	return cs.Observed >= cs.Generation && cs.Ready >= cs.Desired
}

func ensureNamespace(ctx context.Context, cfg *rest.Config, ns string) error {
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return err
	}
	_, err = cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{FieldManager: FieldManager})
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
	gvr, ok := gvrOf(t.GetKind())
	if !ok {
		return true
	}
	all := true
	for cl := range c.env.Clusters() {
		if cl == c.opts.Hub || keep != nil && slices.Contains(keep, cl) {
			continue
		}
		d, _, ok := c.dyn(cl)
		if !ok {
			if keep == nil {
				all = false
			}
			continue
		}
		res := d.Resource(gvr).Namespace(t.GetNamespace())
		live, err := res.Get(ctx, t.GetName(), metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			continue
		}
		if err != nil {
			all = false
			continue
		}
		if live.GetLabels()[LabelPropagated] != "true" || live.GetAnnotations()[AnnoTemplate] != TemplateRef(t) {
			continue // not ours: never deleted
		}
		if err := res.Delete(ctx, t.GetName(), metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
			c.log.Warn("propagation: deleting a copy failed", "template", TemplateRef(t), "cluster", cl, "err", err)
			all = false
			continue
		}
		c.log.Info("propagation: copy removed", "template", TemplateRef(t), "cluster", cl)
	}
	return all
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
