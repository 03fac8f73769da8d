package propagation

// The pure decisions of a pass: which hub objects are templates and in
// which order they are reconciled, where a template's copies go and how
// many replicas each gets, and what happens to each member's copy. Nothing
// here calls a cluster: the controller reads the inputs, asks these
// functions, and acts on their answers.

import (
	"encoding/json"
	"fmt"
	"slices"
	"sort"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/meridian-gslb/meridian/internal/kube"
	"github.com/meridian-gslb/meridian/internal/placement"
)

// templateMeta is one template found in the hub, known by its metadata.
type templateMeta struct {
	kind      Kind
	ns        string
	name      string
	ref       string
	owner     string // the ref of its controller in the hub, if any
	finalized bool   // holds our finalizer
	child     bool   // made by a hub controller from a template: not a template
}

// newTemplateMeta describes a listed hub object of kind k.
func newTemplateMeta(k Kind, it metav1.PartialObjectMetadata) templateMeta {
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(k.GVK)
	u.SetNamespace(it.Namespace)
	u.SetName(it.Name)
	return templateMeta{kind: k, ns: it.Namespace, name: it.Name, ref: TemplateRef(u), owner: controllerRef(it.ObjectMeta),
		finalized: slices.Contains(it.Finalizers, Finalizer)}
}

// scanNamespaces lists where a kind's templates are looked for: the
// configured namespaces (all when none are) for a namespaced kind, all of
// them for a cluster-scoped one.
func scanNamespaces(k Kind, configured []string) []string {
	if !k.Namespaced || len(configured) == 0 {
		return []string{metav1.NamespaceAll}
	}
	return configured
}

// isTemplate tells whether a listed hub object is a template to reconcile:
// marked for propagation or still holding our finalizer, and for a
// Namespace template, one of the configured namespaces (any when none are).
func isTemplate(it metav1.PartialObjectMetadata, k Kind, configured []string) bool {
	if it.Annotations[AnnoPropagate] != "true" && !slices.Contains(it.Finalizers, Finalizer) {
		return false
	}
	return k.Namespaced || len(configured) == 0 || slices.Contains(configured, it.Name)
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

// sortTemplates puts templates in apply order: by their kind's dependency
// order, then by ref.
func sortTemplates(found []templateMeta) {
	sort.SliceStable(found, func(i, j int) bool {
		oi, oj := Order(found[i].kind.GVK.GroupKind()), Order(found[j].kind.GVK.GroupKind())
		if oi != oj {
			return oi < oj
		}
		return found[i].ref < found[j].ref
	})
}

// staleStatuses lists, sorted, the template refs whose status is forgotten
// after a pass: those not found, except in kinds whose listing failed.
func staleStatuses(status map[string]Status, seen, failedKinds map[string]bool) []string {
	var out []string
	for ref := range status {
		kind, _, _ := strings.Cut(ref, "/")
		if !seen[ref] && !failedKinds[kind] {
			out = append(out, ref)
		}
	}
	sort.Strings(out)
	return out
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

// withdrawn tells whether every copy of a template goes: it is being
// deleted, no longer marked for propagation, or a hub controller's child.
func withdrawn(t *unstructured.Unstructured, child bool) bool {
	return t.GetDeletionTimestamp() != nil || t.GetAnnotations()[AnnoPropagate] != "true" || child
}

// specErrors are the status errors of a template whose annotations are
// wrong: each problem, then what it means for the members.
func specErrors(errs []kube.FieldError) []string {
	out := make([]string, 0, len(errs)+1)
	for _, e := range errs {
		out = append(out, e.Error())
	}
	return append(out, "nothing was changed in the members until the annotations are fixed")
}

// explicitClusters keeps, in order, the named clusters that are registered
// members other than the hub; every name dropped is reported.
func explicitClusters(names []string, hub string, registered map[string]map[string]string) (clusters, errs []string) {
	for _, cl := range names {
		if cl == hub {
			errs = append(errs, fmt.Sprintf("%s: %q is the hub, which holds the templates and is never a target (skipped)", AnnoClusters, cl))
			continue
		}
		if _, ok := registered[cl]; !ok {
			errs = append(errs, fmt.Sprintf("%s: cluster %q is not a registered member (skipped)", AnnoClusters, cl))
			continue
		}
		clusters = append(clusters, cl)
	}
	return clusters, errs
}

// excludedClusters lists, in the chosen order, the clusters failover left
// out of keep.
func excludedClusters(chosen, keep []string) []string {
	var out []string
	for _, cl := range chosen {
		if !slices.Contains(keep, cl) {
			out = append(out, cl)
		}
	}
	return out
}

// templateReplicas is a template's total replica count at spec.ReplicasPath,
// 1 (the API server's default for the built-in kinds) when it is unset.
func templateReplicas(t *unstructured.Unstructured, spec Spec) int64 {
	total, ok := intAt(t.Object, spec.ReplicasPath)
	if !ok {
		return 1
	}
	return total
}

// divideReplicas decides each kept cluster's replica count: the whole total
// everywhere when duplicated; else the total divided by weight (equal
// without weights) within each cluster's min and max. Replicas that could
// not be placed and a failed division come back as status errors.
func divideReplicas(total int64, spec Spec, keep []string, weights map[string]int) (map[string]*int64, []string) {
	out := map[string]*int64{}
	if spec.Mode == ModeDuplicated {
		for _, cl := range keep {
			out[cl] = &total
		}
		return out, nil
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
		return out, []string{"dividing replicas: " + err.Error()}
	}
	var errs []string
	if unplaced > 0 {
		errs = append(errs, fmt.Sprintf("%d of %d replicas could not be placed (every cluster at its maximum or weight 0)", unplaced, total))
	}
	for cl, n := range alloc {
		v := int64(n)
		out[cl] = &v
	}
	return out, errs
}

// foreign tells whether a member's object in a copy's place is someone
// else's: neither the template's copy nor a namespace Meridian made for a
// copy. It is never touched.
func foreign(live, t *unstructured.Unstructured) bool {
	return !owned(live, t) && !adoptable(live, t)
}

// memberReplicas is the replica count an autoscaled copy keeps: the one
// the member's HPA set on the live copy, when it differs from the planned
// count; false when the planned count stands.
func memberReplicas(live *unstructured.Unstructured, spec Spec, planned *int64, scaledBy string) (int64, bool) {
	if scaledBy == "" || live == nil || planned == nil {
		return 0, false
	}
	n, ok := intAt(live.Object, spec.ReplicasPath)
	if !ok || n == *planned {
		return 0, false
	}
	return n, true
}

// copyStep is what happens to one member's copy of a template.
type copyStep int

const (
	stepApply     copyStep = iota // server-side apply the rendered copy
	stepScaleOnly                 // the rollout waits: only the replica count of the copy is set
	stepWait                      // the rollout waits and the member has no copy: nothing is sent
)

// planCopy decides a member's step. A one-by-one rollout whose previous
// cluster is not ready holds back new content: an existing copy with other
// content only gets its replica count, a missing copy waits. Everything
// else is applied.
func planCopy(spec Spec, prevReady bool, live *unstructured.Unstructured, hash string) copyStep {
	switch {
	case spec.Rollout != RolloutOneByOne || prevReady:
		return stepApply
	case live == nil:
		return stepWait
	case live.GetAnnotations()[AnnoSpecHash] != hash:
		return stepScaleOnly
	}
	return stepApply
}

// blocksRollout tells whether a cluster's result holds back the next
// cluster of a one-by-one rollout: an error, a wait, or a copy not healthy.
func blocksRollout(spec Spec, cs ClusterStatus) bool {
	return spec.Rollout == RolloutOneByOne && (cs.Error != "" || cs.Waiting != "" || !cs.Healthy)
}

// add records a cluster's result in the status and its totals.
func (st *Status) add(cl string, cs ClusterStatus) {
	st.Clusters[cl] = cs
	st.Desired += cs.Desired
	st.Ready += cs.Ready
	if cs.Healthy {
		st.Healthy++
	}
}

// leavesMember tells whether removing a template's copies looks at member
// cl: every member but the hub and those in keep (all of them when keep is
// nil).
func leavesMember(cl, hub string, keep []string) bool {
	return cl != hub && (keep == nil || !slices.Contains(keep, cl))
}

// removal is what happens to a member's object when a template's copy
// leaves that member.
type removal int

const (
	removeNothing removal = iota // not the template's copy: never deleted
	removeRelease                // a Namespace copy: our label and reference removed, the namespace kept
	removeDelete                 // the copy is deleted
)

// planRemoval decides a removal. Deleting a namespace deletes everything in
// it, Meridian's or not: a Namespace copy is released and left to its owners.
func planRemoval(live, t *unstructured.Unstructured) removal {
	switch {
	case !owned(live, t):
		return removeNothing
	case t.GroupVersionKind().GroupKind() == (schema.GroupKind{Kind: "Namespace"}):
		return removeRelease
	}
	return removeDelete
}

// equalStatus compares two statuses as they are written.
func equalStatus(a, b Status) bool {
	ja, _ := json.Marshal(a)
	jb, _ := json.Marshal(b)
	return string(ja) == string(jb)
}
