package propagation

import (
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

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
