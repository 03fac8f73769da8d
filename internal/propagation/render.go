package propagation

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"strings"

	jsonpatch "gopkg.in/evanphx/json-patch.v4"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
)

// TemplateRef names a template: KIND/NAMESPACE/NAME.
func TemplateRef(u *unstructured.Unstructured) string {
	return u.GetKind() + "/" + u.GetNamespace() + "/" + u.GetName()
}

// Render makes the copy of tmpl for one cluster: hub-only metadata and
// status removed, our ownership label and template annotation added, the
// replica count set (Deployments, when replicas is not nil), then the
// cluster's image-registry override and its RFC 6902 patch applied. The
// hash covers everything but the replica count: a rollout compares it.
func Render(tmpl *unstructured.Unstructured, cluster string, replicas *int64, spec Spec) (*unstructured.Unstructured, string, error) {
	obj := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": tmpl.GetAPIVersion(),
		"kind":       tmpl.GetKind(),
		"metadata":   map[string]any{"name": tmpl.GetName(), "namespace": tmpl.GetNamespace()},
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
		if strings.HasPrefix(k, "meridian.io/") && k != "meridian.io/hostname" || k == "kubectl.kubernetes.io/last-applied-configuration" || k == "deployment.kubernetes.io/revision" {
			continue
		}
		annos[k] = v
	}
	annos[AnnoTemplate] = TemplateRef(tmpl)
	obj.SetAnnotations(annos)
	if tmpl.GetKind() == "Service" {
		// Allocated by each member, never copied.
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
	}
	if reg := spec.Registry[cluster]; reg != "" {
		for _, path := range [][]string{{"spec", "template", "spec", "containers"}, {"spec", "template", "spec", "initContainers"}} {
			cs, ok, _ := unstructured.NestedSlice(obj.Object, path...)
			if !ok {
				continue
			}
			for _, c := range cs {
				if m, ok := c.(map[string]any); ok {
					if img, ok := m["image"].(string); ok {
						m["image"] = WithRegistry(img, reg)
					}
				}
			}
			_ = unstructured.SetNestedSlice(obj.Object, cs, path...)
		}
	}
	if p, ok := spec.Overrides[cluster]; ok {
		patch, err := jsonpatch.DecodePatch(p)
		if err != nil {
			return nil, "", fmt.Errorf("override for %s: %w", cluster, err)
		}
		doc, err := json.Marshal(obj.Object)
		if err != nil {
			return nil, "", err
		}
		out, err := patch.Apply(doc)
		if err != nil {
			return nil, "", fmt.Errorf("override for %s does not apply: %w", cluster, err)
		}
		patched := map[string]any{}
		if err := json.Unmarshal(out, &patched); err != nil {
			return nil, "", fmt.Errorf("override for %s: %w", cluster, err)
		}
		obj.Object = patched
		if obj.GetName() != tmpl.GetName() || obj.GetNamespace() != tmpl.GetNamespace() || obj.GetKind() != tmpl.GetKind() {
			return nil, "", fmt.Errorf("override for %s changes the kind, name or namespace (not allowed)", cluster)
		}
	}
	if replicas != nil && tmpl.GetKind() == "Deployment" {
		if err := unstructured.SetNestedField(obj.Object, *replicas, "spec", "replicas"); err != nil {
			return nil, "", err
		}
	}
	hash, err := specHash(obj)
	if err != nil {
		return nil, "", err
	}
	a := obj.GetAnnotations()
	a[AnnoSpecHash] = hash
	obj.SetAnnotations(a)
	return obj, hash, nil
}

// specHash hashes the copy without its replica count.
func specHash(obj *unstructured.Unstructured) (string, error) {
	c := obj.DeepCopy()
	unstructured.RemoveNestedField(c.Object, "spec", "replicas")
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
