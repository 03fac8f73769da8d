package propagation

import (
	"fmt"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/meridian-gslb/meridian/internal/kube"
)

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
