package propagation

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	jsonpatch "gopkg.in/evanphx/json-patch.v4"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// Render makes the copy of tmpl for one cluster: hub-only metadata, status
// and the fields each member allocates itself removed, our ownership label
// and template annotation added, the cluster's image-registry override and
// its RFC 6902 patch applied, then the replica count set at
// spec.ReplicasPath (when replicas is not nil). The hash covers
// everything but the replica count: a rollout compares it.
func Render(tmpl *unstructured.Unstructured, cluster string, replicas *int64, spec Spec) (*unstructured.Unstructured, string, error) {
	if err := propagatable(tmpl); err != nil {
		return nil, "", err
	}
	obj := baseCopy(tmpl)
	if reg := spec.Registry[cluster]; reg != "" {
		rewriteImages(obj, reg)
	}
	if p, ok := spec.Overrides[cluster]; ok {
		var err error
		if obj, err = applyOverride(obj, tmpl, cluster, p); err != nil {
			return nil, "", err
		}
	}
	if replicas != nil && spec.ReplicasPath != nil {
		if err := unstructured.SetNestedField(obj.Object, *replicas, spec.ReplicasPath...); err != nil {
			return nil, "", fmt.Errorf("setting the replica count at %s: %w", strings.Join(spec.ReplicasPath, "."), err)
		}
	}
	hash, err := specHash(obj, spec.ReplicasPath)
	if err != nil {
		return nil, "", err
	}
	a := obj.GetAnnotations()
	a[AnnoSpecHash] = hash
	obj.SetAnnotations(a)
	return obj, hash, nil
}

// propagatable refuses the templates that are never copied: a bootstrap
// token Secret lets nodes join the hub.
func propagatable(tmpl *unstructured.Unstructured) error {
	if tmpl.GroupVersionKind().GroupKind() == (schema.GroupKind{Kind: "Secret"}) {
		if typ, _, _ := unstructured.NestedString(tmpl.Object, "type"); typ == "bootstrap.kubernetes.io/token" {
			return fmt.Errorf("a bootstrap token Secret lets nodes join the hub: it is never propagated (allowed: make one per cluster)")
		}
	}
	return nil
}

// baseCopy is the copy every cluster starts from: the template's content
// without status, hub-only metadata and what each member allocates itself,
// with our ownership label and template annotation.
func baseCopy(tmpl *unstructured.Unstructured) *unstructured.Unstructured {
	meta := map[string]any{"name": tmpl.GetName()}
	if tmpl.GetNamespace() != "" {
		meta["namespace"] = tmpl.GetNamespace()
	}
	obj := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": tmpl.GetAPIVersion(),
		"kind":       tmpl.GetKind(),
		"metadata":   meta,
	}}
	for k, v := range tmpl.Object {
		switch k {
		case "apiVersion", "kind", "metadata", "status":
		default:
			obj.Object[k] = runtime.DeepCopyJSONValue(v)
		}
	}
	labels := map[string]string{}
	for k, v := range tmpl.GetLabels() {
		labels[k] = v
	}
	labels[LabelPropagated] = "true"
	obj.SetLabels(labels)
	annos := map[string]string{}
	for k, v := range tmpl.GetAnnotations() {
		if strings.HasPrefix(k, "meridian.io/") && k != "meridian.io/hostname" || hubOnlyAnnotations[k] {
			continue
		}
		annos[k] = v
	}
	annos[AnnoTemplate] = TemplateRef(tmpl)
	obj.SetAnnotations(annos)
	dropAllocated(obj)
	return obj
}

// rewriteImages points every container and init container image of the
// copy's pod spec at registry.
func rewriteImages(obj *unstructured.Unstructured, registry string) {
	for _, path := range podSpecs {
		for _, field := range []string{"containers", "initContainers"} {
			cs, ok, _ := unstructured.NestedSlice(obj.Object, append(slices.Clone(path), field)...)
			if !ok {
				continue
			}
			for _, c := range cs {
				if m, ok := c.(map[string]any); ok {
					if img, ok := m["image"].(string); ok {
						m["image"] = WithRegistry(img, registry)
					}
				}
			}
			_ = unstructured.SetNestedSlice(obj.Object, cs, append(slices.Clone(path), field)...)
		}
	}
}

// applyOverride applies a cluster's RFC 6902 patch to the copy. The patched
// copy must keep the template's identity and Meridian's ownership marks.
func applyOverride(obj, tmpl *unstructured.Unstructured, cluster string, p []byte) (*unstructured.Unstructured, error) {
	patch, err := jsonpatch.DecodePatch(p)
	if err != nil {
		return nil, fmt.Errorf("override for %s: %w", cluster, err)
	}
	doc, err := json.Marshal(obj.Object)
	if err != nil {
		return nil, err
	}
	out, err := patch.Apply(doc)
	if err != nil {
		return nil, fmt.Errorf("override for %s does not apply: %w", cluster, err)
	}
	patched := map[string]any{}
	if err := json.Unmarshal(out, &patched); err != nil {
		return nil, fmt.Errorf("override for %s: %w", cluster, err)
	}
	obj.Object = patched
	if err := keepsIdentity(obj, tmpl, cluster); err != nil {
		return nil, err
	}
	return obj, nil
}

// keepsIdentity checks that an overridden copy is still the template's:
// same apiVersion, kind, name and namespace, with our label and reference.
func keepsIdentity(obj, tmpl *unstructured.Unstructured, cluster string) error {
	if obj.GetName() != tmpl.GetName() || obj.GetNamespace() != tmpl.GetNamespace() || obj.GetKind() != tmpl.GetKind() || obj.GetAPIVersion() != tmpl.GetAPIVersion() {
		return fmt.Errorf("override for %s changes the apiVersion, kind, name or namespace (not allowed)", cluster)
	}
	// A copy without our label or reference would be locked out of
	// Meridian's reach: never updated, never deleted with its template.
	l, _, lerr := unstructured.NestedStringMap(obj.Object, "metadata", "labels")
	a, _, aerr := unstructured.NestedStringMap(obj.Object, "metadata", "annotations")
	if lerr != nil || aerr != nil || l[LabelPropagated] != "true" || a[AnnoTemplate] != TemplateRef(tmpl) {
		return fmt.Errorf("override for %s changes Meridian's label %s or annotation %s, or makes labels or annotations other than strings (not allowed)",
			cluster, LabelPropagated, AnnoTemplate)
	}
	return nil
}

// hubOnlyAnnotations are written by the hub's own tools and controllers.
var hubOnlyAnnotations = map[string]bool{
	"kubectl.kubernetes.io/last-applied-configuration": true,
	"deployment.kubernetes.io/revision":                true,
	"pv.kubernetes.io/bind-completed":                  true,
	"pv.kubernetes.io/bound-by-controller":             true,
	"volume.beta.kubernetes.io/storage-provisioner":    true,
	"volume.kubernetes.io/storage-provisioner":         true,
	"volume.kubernetes.io/selected-node":               true,
}

// podSpecs are where kinds keep their pod spec (image registry rewrite).
var podSpecs = [][]string{
	{"spec", "template", "spec"},                        // Deployment, StatefulSet, ReplicaSet, DaemonSet, Job
	{"spec", "jobTemplate", "spec", "template", "spec"}, // CronJob
}

// dropAllocated removes what each member allocates for itself and the hub
// filled in: a copy carrying the hub's values would be refused or wrong.
func dropAllocated(obj *unstructured.Unstructured) {
	switch obj.GroupVersionKind().GroupKind() {
	case schema.GroupKind{Kind: "Service"}:
		unstructured.RemoveNestedField(obj.Object, "spec", "clusterIP")
		unstructured.RemoveNestedField(obj.Object, "spec", "clusterIPs")
		unstructured.RemoveNestedField(obj.Object, "spec", "healthCheckNodePort")
		if ports, ok, _ := unstructured.NestedSlice(obj.Object, "spec", "ports"); ok {
			for _, p := range ports {
				if m, ok := p.(map[string]any); ok {
					delete(m, "nodePort")
				}
			}
			_ = unstructured.SetNestedSlice(obj.Object, ports, "spec", "ports")
		}
	case schema.GroupKind{Group: "batch", Kind: "Job"}:
		// The selector and its labels carry the hub Job's uid.
		if manual, _, _ := unstructured.NestedBool(obj.Object, "spec", "manualSelector"); !manual {
			unstructured.RemoveNestedField(obj.Object, "spec", "selector")
			unstructured.RemoveNestedField(obj.Object, "spec", "template", "metadata", "labels", "controller-uid")
			unstructured.RemoveNestedField(obj.Object, "spec", "template", "metadata", "labels", "batch.kubernetes.io/controller-uid")
		}
	case schema.GroupKind{Kind: "PersistentVolumeClaim"}:
		unstructured.RemoveNestedField(obj.Object, "spec", "volumeName") // the hub's bound volume
	case schema.GroupKind{Kind: "Secret"}:
		// A service account token is the hub's credential, signed for the
		// hub, and names the hub's account uid (a member's token controller
		// deletes a Secret naming another uid): each member fills in its own.
		if t, _, _ := unstructured.NestedString(obj.Object, "type"); t == "kubernetes.io/service-account-token" {
			for _, k := range []string{"token", "ca.crt", "namespace"} {
				unstructured.RemoveNestedField(obj.Object, "data", k)
				unstructured.RemoveNestedField(obj.Object, "stringData", k)
			}
			unstructured.RemoveNestedField(obj.Object, "metadata", "annotations", "kubernetes.io/service-account.uid")
		}
	case schema.GroupKind{Kind: "ServiceAccount"}:
		unstructured.RemoveNestedField(obj.Object, "secrets") // the hub's token Secrets
	case schema.GroupKind{Kind: "Namespace"}:
		unstructured.RemoveNestedField(obj.Object, "spec") // finalizers, set by each cluster
	}
}

// specHash hashes the copy without its replica count.
func specHash(obj *unstructured.Unstructured, replicasPath []string) (string, error) {
	c := obj.DeepCopy()
	if replicasPath != nil {
		unstructured.RemoveNestedField(c.Object, replicasPath...)
	}
	b, err := json.Marshal(c.Object)
	if err != nil {
		return "", err
	}
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:8]), nil
}

// WithRegistry replaces (or adds) the registry of an image reference:
// "nginx:1.27" → "reg.example.com/nginx:1.27",
// "docker.io/library/nginx" → "reg.example.com/library/nginx".
func WithRegistry(image, registry string) string {
	first, rest, ok := strings.Cut(image, "/")
	if ok && (strings.ContainsAny(first, ".:") || first == "localhost") {
		return registry + "/" + rest
	}
	return registry + "/" + image
}
