package propagation

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"

	"github.com/meridian-gslb/meridian/internal/placement"
)

// reconcile brings the members in line with one template.
func (c *Controller) reconcile(ctx context.Context, hub *clients, k Kind, t *unstructured.Unstructured, child bool, scaledBy string) {
	ref := TemplateRef(t)
	var hubRes dynamic.ResourceInterface = hub.dyn.Resource(k.GVR())
	if k.Namespaced {
		hubRes = hub.dyn.Resource(k.GVR()).Namespace(t.GetNamespace())
	}
	if withdrawn(t, child) {
		c.withdraw(ctx, hubRes, t)
		return
	}
	if !c.ensureFinalizer(ctx, hubRes, t) {
		return
	}
	st := Status{Template: ref, Clusters: map[string]ClusterStatus{}, ScaledBy: scaledBy}
	spec, errs := ParseSpec(t.GetAnnotations())
	if len(errs) == 0 {
		spec.ReplicasPath, errs = replicasPath(t, spec)
	}
	if len(errs) > 0 {
		st.Errors = append(st.Errors, specErrors(errs)...)
		c.finish(ctx, hubRes, t, st)
		return
	}
	st.Mode = spec.Mode
	clusters := c.chooseClusters(ctx, spec, &st)
	keep := c.survivors(spec, clusters, &st)
	replicas := c.replicas(t, spec, keep, &st)
	c.applyAll(ctx, t, clusters, replicas, spec, scaledBy, &st)
	// Copies in members that are no longer chosen are removed (only ours).
	c.removeCopies(ctx, t, clusters)
	c.finish(ctx, hubRes, t, st)
}

// withdraw removes a withdrawn template's copies from every member and,
// once every member could be checked, its finalizer and status.
func (c *Controller) withdraw(ctx context.Context, hubRes dynamic.ResourceInterface, t *unstructured.Unstructured) {
	if !c.removeCopies(ctx, t, nil) {
		return
	}
	c.dropFinalizer(ctx, hubRes, t)
	c.mu.Lock()
	delete(c.status, TemplateRef(t))
	c.mu.Unlock()
}

// ensureFinalizer adds our finalizer to a template that lacks it; false
// when that failed (logged) and the template waits for the next pass.
func (c *Controller) ensureFinalizer(ctx context.Context, hubRes dynamic.ResourceInterface, t *unstructured.Unstructured) bool {
	if slices.Contains(t.GetFinalizers(), Finalizer) {
		return true
	}
	patch, _ := json.Marshal(map[string]any{"metadata": map[string]any{"finalizers": append(t.GetFinalizers(), Finalizer), "resourceVersion": t.GetResourceVersion()}})
	if _, err := hubRes.Patch(ctx, t.GetName(), types.MergePatchType, patch, metav1.PatchOptions{FieldManager: FieldManager}); err != nil {
		c.log.Warn("propagation: adding the finalizer failed", "template", TemplateRef(t), "err", err)
		return false
	}
	return true
}

// chooseClusters is where a template goes: its explicit clusters (those
// that cannot be targets reported in the status), else the members its
// selector ranks best.
func (c *Controller) chooseClusters(ctx context.Context, spec Spec, st *Status) []string {
	registered := c.env.Clusters()
	if spec.Clusters != nil {
		clusters, errs := explicitClusters(spec.Clusters, c.opts.Hub, registered)
		st.Errors = append(st.Errors, errs...)
		return clusters
	}
	var clusters []string
	clusters, st.Scores = c.rank(ctx, spec, registered)
	return clusters
}

// survivors is failover for a divided workload: a cluster failed for
// longer than the toleration loses its share (listed as excluded) and gets
// it back once the decision clears it; a pass is due when the next
// toleration ends.
func (c *Controller) survivors(spec Spec, clusters []string, st *Status) []string {
	if spec.Mode != ModeDivided {
		return clusters
	}
	keep, wake := placement.Survivors(clusters, c.env.Health(), c.opts.Toleration, c.opts.Now())
	st.Excluded = excludedClusters(clusters, keep)
	if !wake.IsZero() {
		time.AfterFunc(time.Until(wake)+10*time.Millisecond, c.Poke)
	}
	return keep
}

// replicas decides each cluster's replica count (kinds with one); divided
// replicas follow the template's hostname's traffic weights when it names
// no weights.
func (c *Controller) replicas(t *unstructured.Unstructured, spec Spec, keep []string, st *Status) map[string]*int64 {
	if spec.ReplicasPath == nil {
		return map[string]*int64{}
	}
	weights := spec.Weights
	if spec.Mode != ModeDuplicated && weights == nil && spec.Hostname != "" {
		weights = c.env.TrafficWeights(spec.Hostname)
	}
	out, errs := divideReplicas(templateReplicas(t, spec), spec, keep, weights)
	st.Errors = append(st.Errors, errs...)
	return out
}

// applyAll sends the template to its clusters in order, recording each
// result; with a one-by-one rollout a cluster not ready holds back the
// content of the ones after it.
func (c *Controller) applyAll(ctx context.Context, t *unstructured.Unstructured, clusters []string, replicas map[string]*int64, spec Spec, scaledBy string, st *Status) {
	prevReady := true
	for _, cl := range clusters {
		if slices.Contains(st.Excluded, cl) {
			cs := st.Clusters[cl]
			cs.Waiting = "failed over past the toleration: its share moved to the other clusters"
			st.Clusters[cl] = cs
			continue
		}
		cs := c.applyTo(ctx, t, cl, replicas[cl], spec, prevReady, scaledBy)
		st.add(cl, cs)
		if blocksRollout(spec, cs) {
			prevReady = false
		}
	}
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
	live, ok := c.readCopy(ctx, mc, res, t, cl, &cs)
	if !ok {
		return cs
	}
	// An autoscaled copy keeps the count the member's HPA gave it: the
	// template's (or the divided) count is only the starting point.
	if n, ok := memberReplicas(live, spec, replicas, scaledBy); ok {
		replicas = &n
		cs.Desired = n
		if obj, hash, err = Render(t, cl, replicas, spec); err != nil {
			cs.Error = err.Error() + "; the last good object stays"
			return cs
		}
	}
	switch planCopy(spec, prevReady, live, hash) {
	case stepWait:
		cs.Waiting = "rollout: waiting for the previous cluster to be ready"
	case stepScaleOnly:
		cs.Waiting = "rollout: waiting for the previous cluster to be ready"
		c.scaleCopy(ctx, res, t, replicas, spec, &cs)
	case stepApply:
		c.applyCopy(ctx, res, obj, cl, spec, &cs)
	}
	return cs
}

// readCopy reads a member's copy (nil when there is none, after making
// sure its namespace exists); false, with the status error set, when it
// could not be read or the object there is not Meridian's.
func (c *Controller) readCopy(ctx context.Context, mc *clients, res dynamic.ResourceInterface, t *unstructured.Unstructured, cl string, cs *ClusterStatus) (*unstructured.Unstructured, bool) {
	live, err := res.Get(ctx, t.GetName(), metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
		if t.GetNamespace() != "" {
			if err := ensureNamespace(ctx, mc, t.GetNamespace(), TemplateRef(t)); err != nil {
				cs.Error = err.Error()
				return nil, false
			}
		}
		return nil, true
	case err != nil:
		cs.Error = fmt.Sprintf("reading the copy: %v", err)
		return nil, false
	case foreign(live, t):
		cs.Error = fmt.Sprintf("%s exists in %s and is not Meridian's (no %s label and template annotation): not touched", TemplateRef(t), cl, LabelPropagated)
		return nil, false
	}
	return live, true
}

// scaleCopy sets only the replica count of a member's copy (a rollout
// holds back its content) and reads its status.
func (c *Controller) scaleCopy(ctx context.Context, res dynamic.ResourceInterface, t *unstructured.Unstructured, replicas *int64, spec Spec, cs *ClusterStatus) {
	if replicas != nil {
		patch, _ := json.Marshal(nested(spec.ReplicasPath, *replicas))
		if _, err := res.Patch(ctx, t.GetName(), types.MergePatchType, patch, metav1.PatchOptions{FieldManager: FieldManager}); err != nil {
			cs.Error = fmt.Sprintf("setting replicas: %v", err)
		}
	}
	c.fillLive(ctx, res, t.GetName(), spec, cs)
}

// applyCopy server-side applies the rendered copy, counts the result and
// reads the copy's status (the live one when the apply failed).
func (c *Controller) applyCopy(ctx context.Context, res dynamic.ResourceInterface, obj *unstructured.Unstructured, cl string, spec Spec, cs *ClusterStatus) {
	data, err := json.Marshal(obj.Object)
	if err != nil {
		cs.Error = err.Error()
		return
	}
	force := true
	applied, err := res.Patch(ctx, obj.GetName(), types.ApplyPatchType, data, metav1.PatchOptions{FieldManager: FieldManager, Force: &force})
	if err != nil {
		c.applies.WithLabelValues(cl, "failure").Inc()
		cs.Error = fmt.Sprintf("server-side apply: %v; the last good object stays", err)
		c.fillLive(ctx, res, obj.GetName(), spec, cs)
		return
	}
	c.applies.WithLabelValues(cl, "success").Inc()
	fillFrom(applied, spec, cs)
}

// fillLive reads the status of a member's live copy, if it can be read.
func (c *Controller) fillLive(ctx context.Context, res dynamic.ResourceInterface, name string, spec Spec, cs *ClusterStatus) {
	if live, err := res.Get(ctx, name, metav1.GetOptions{}); err == nil {
		fillFrom(live, spec, cs)
	}
}

// removeCopies deletes the template's copies from every Ready member not in
// keep (all with keep == nil) — only objects with our label and this
// template's annotation. It reports whether every registered member was
// reachable (so a finalizer can go).
func (c *Controller) removeCopies(ctx context.Context, t *unstructured.Unstructured, keep []string) bool {
	all := true
	for cl := range c.env.Clusters() {
		if !leavesMember(cl, c.opts.Hub, keep) {
			continue
		}
		mc, ok := c.member(cl)
		if !ok {
			if keep == nil {
				all = false
			}
			continue
		}
		if !c.removeCopy(ctx, mc, t, cl) {
			all = false
		}
	}
	return all
}

// removeCopy removes the template's copy from one member: deleted, or
// released for a Namespace. It reports whether the member could be
// checked and left without a copy of ours.
func (c *Controller) removeCopy(ctx context.Context, mc *clients, t *unstructured.Unstructured, cl string) bool {
	res, err := mc.resource(t.GroupVersionKind(), t.GetNamespace())
	if err != nil {
		if !errors.As(err, new(notServed)) {
			// Its discovery failed: a copy may be there.
			c.log.Debug("propagation: cannot check a member for a copy", "template", TemplateRef(t), "cluster", cl, "err", err)
			return false
		}
		return true // the member does not serve the kind: no copy there
	}
	live, err := res.Get(ctx, t.GetName(), metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return true
	}
	if err != nil {
		return false
	}
	switch planRemoval(live, t) {
	case removeRelease:
		if err := c.release(ctx, res, live); err != nil {
			c.log.Warn("propagation: releasing a namespace failed", "template", TemplateRef(t), "cluster", cl, "err", err)
			return false
		}
		c.log.Info("propagation: namespace released (not deleted: it may hold objects that are not Meridian's)", "template", TemplateRef(t), "cluster", cl)
	case removeDelete:
		// Only the object checked: one put there since is not deleted.
		uid := live.GetUID()
		if err := res.Delete(ctx, t.GetName(), metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &uid}}); err != nil && !apierrors.IsNotFound(err) {
			c.log.Warn("propagation: deleting a copy failed", "template", TemplateRef(t), "cluster", cl, "err", err)
			return false
		}
		c.log.Info("propagation: copy removed", "template", TemplateRef(t), "cluster", cl)
	case removeNothing:
		// not ours: never deleted
	}
	return true
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

// dropFinalizer removes our finalizer from a template whose copies are gone.
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
