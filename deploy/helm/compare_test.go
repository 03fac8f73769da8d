package helm

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"reflect"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/util/yaml"
)

// objects parses multi-document YAML into objects keyed "Kind/name".
func objects(manifests []byte) (map[string]map[string]any, error) {
	out := map[string]map[string]any{}
	dec := yaml.NewYAMLOrJSONDecoder(bytes.NewReader(manifests), 4096)
	for {
		var o map[string]any
		err := dec.Decode(&o)
		if errors.Is(err, io.EOF) {
			return out, nil
		}
		if err != nil {
			return nil, err
		}
		if len(o) == 0 {
			continue
		}
		kind, _ := o["kind"].(string)
		name, _ := get(o, "metadata", "name").(string)
		key := kind + "/" + name
		if _, dup := out[key]; dup {
			return nil, fmt.Errorf("%s rendered twice", key)
		}
		out[key] = o
	}
}

// get follows keys (string) and indexes (int) into a decoded object.
func get(v any, path ...any) any {
	for _, p := range path {
		switch k := p.(type) {
		case string:
			m, ok := v.(map[string]any)
			if !ok {
				return nil
			}
			v = m[k]
		case int:
			l, ok := v.([]any)
			if !ok || k >= len(l) {
				return nil
			}
			v = l[k]
		}
	}
	return v
}

// instanceLabel is the selector label the chart adds to kustomize's
// app.kubernetes.io/name: several releases may share a namespace.
const instanceLabel = "app.kubernetes.io/instance"

// normalize drops what is meant to differ between the chart and kustomize
// from a deep copy of o: labels (checked on their own), the instance label
// in selectors, and the container image and pull policy (kustomize leaves
// :latest to overlays; the chart pins its appVersion). A ConfigMap's YAML
// files are parsed, so that the config is compared field by field: the
// kustomize file has comments and its own key order, the chart's is toYaml.
func normalize(o map[string]any) map[string]any {
	c := deepCopy(o).(map[string]any)
	if data, ok := get(c, "data").(map[string]any); ok && c["kind"] == "ConfigMap" {
		for k, v := range data {
			s, ok := v.(string)
			if !ok || !strings.HasSuffix(k, ".yaml") {
				continue
			}
			var parsed any
			if err := yaml.Unmarshal([]byte(s), &parsed); err == nil {
				data[k] = parsed
			}
		}
	}
	del := func(key string, path ...any) {
		if m, ok := get(c, path...).(map[string]any); ok {
			delete(m, key)
		}
	}
	del("labels", "metadata")
	del("labels", "spec", "template", "metadata")
	del(instanceLabel, "spec", "selector")
	del(instanceLabel, "spec", "selector", "matchLabels")
	if l, ok := get(c, "spec", "template", "spec", "topologySpreadConstraints").([]any); ok {
		for i := range l {
			del(instanceLabel, "spec", "template", "spec", "topologySpreadConstraints", i, "labelSelector", "matchLabels")
		}
	}
	if l, ok := get(c, "spec", "template", "spec", "containers").([]any); ok {
		for i := range l {
			del("image", "spec", "template", "spec", "containers", i)
			del("imagePullPolicy", "spec", "template", "spec", "containers", i)
		}
	}
	return c
}

func deepCopy(v any) any {
	switch t := v.(type) {
	case map[string]any:
		m := make(map[string]any, len(t))
		for k, x := range t {
			m[k] = deepCopy(x)
		}
		return m
	case []any:
		l := make([]any, len(t))
		for i, x := range t {
			l[i] = deepCopy(x)
		}
		return l
	default:
		return v
	}
}

// diffObjects compares two sets of objects and returns one line per
// difference, each naming the object and the field path, e.g.
//
//	Role/meridian .rules[2]: only in kustomize: {"apiGroups":["coordination.k8s.io"],...}
//	Deployment/meridian .spec.template.spec.containers[0].ports[1].protocol: helm "UDP", kustomize "TCP"
func diffObjects(helm, kust map[string]map[string]any) []string {
	var out []string
	for _, key := range slices.Sorted(maps.Keys(kust)) {
		h, ok := helm[key]
		if !ok {
			out = append(out, key+": only in kustomize")
			continue
		}
		out = append(out, diff(key+" ", normalize(h), normalize(kust[key]))...)
	}
	for _, key := range slices.Sorted(maps.Keys(helm)) {
		if _, ok := kust[key]; !ok {
			out = append(out, key+": only in helm")
		}
	}
	return out
}

// diff compares h (helm) and k (kustomize) below path.
func diff(path string, h, k any) []string {
	hm, hIsMap := h.(map[string]any)
	km, kIsMap := k.(map[string]any)
	if hIsMap && kIsMap {
		var out []string
		keys := slices.Sorted(maps.Keys(km))
		for _, key := range slices.Sorted(maps.Keys(hm)) {
			if _, ok := km[key]; !ok {
				keys = append(keys, key)
			}
		}
		for _, key := range keys {
			p := path + "." + key
			hv, hok := hm[key]
			kv, kok := km[key]
			switch {
			case !hok:
				out = append(out, fmt.Sprintf("%s: only in kustomize: %s", p, short(kv)))
			case !kok:
				out = append(out, fmt.Sprintf("%s: only in helm: %s", p, short(hv)))
			default:
				out = append(out, diff(p, hv, kv)...)
			}
		}
		return out
	}
	hl, hIsList := h.([]any)
	kl, kIsList := k.([]any)
	if hIsList && kIsList {
		var out []string
		for i := range max(len(hl), len(kl)) {
			p := fmt.Sprintf("%s[%d]", path, i)
			switch {
			case i >= len(hl):
				out = append(out, fmt.Sprintf("%s: only in kustomize: %s", p, short(kl[i])))
			case i >= len(kl):
				out = append(out, fmt.Sprintf("%s: only in helm: %s", p, short(hl[i])))
			default:
				out = append(out, diff(p, hl[i], kl[i])...)
			}
		}
		return out
	}
	if !reflect.DeepEqual(h, k) {
		return []string{fmt.Sprintf("%s: helm %s, kustomize %s", path, short(h), short(k))}
	}
	return nil
}

// short is v as one line of JSON.
func short(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Sprint(v)
	}
	return string(b)
}
