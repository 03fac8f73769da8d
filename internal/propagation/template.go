// Package propagation places workloads from a hub cluster into member
// clusters: templates (objects of any namespaced kind the hub serves, CRDs
// included, and Namespaces) carry meridian.io/propagate: "true" and a
// placement in annotations; copies are server-side applied into the members with field
// manager "meridian" and an ownership label. The decisions (which clusters,
// how many replicas, failover, what happens to each copy) are pure: plan.go,
// render.go and template.go here, on top of internal/placement. The
// controller (scan.go, reconcile.go, clients.go, resources.go) reads the
// clusters, asks them, and writes what they decided.
package propagation

import (
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/meridian-gslb/meridian/internal/kube"
	"github.com/meridian-gslb/meridian/internal/placement"
)

// Template annotations (on the hub object) and the labels of copies.
const (
	AnnoPropagate     = "meridian.io/propagate"        // "true" marks a template
	AnnoClusters      = "meridian.io/clusters"         // explicit clusters, in rollout order: east,west
	AnnoSelector      = "meridian.io/cluster-selector" // label selector over member cluster labels: tier=prod
	AnnoMaxClusters   = "meridian.io/max-clusters"     // with a selector: keep the best N by score
	AnnoReplicas      = "meridian.io/replicas"         // duplicated (default) or divided (kinds with a replica count)
	AnnoReplicasPath  = "meridian.io/replicas-path"    // where a kind keeps its replica count: spec.workers.replicas (default spec.replicas)
	AnnoWeights       = "meridian.io/weights"          // east=3,west=1 (default: the traffic weights of meridian.io/hostname, else equal)
	AnnoReplicasMin   = "meridian.io/replicas-min"     // east=2
	AnnoReplicasMax   = "meridian.io/replicas-max"     // west=5
	AnnoOverrides     = "meridian.io/overrides"        // {"east":[RFC 6902 ops]}
	AnnoImageRegistry = "meridian.io/image-registry"   // east=registry.east.example.com
	AnnoRollout       = "meridian.io/rollout"          // all (default) or one-by-one
	AnnoStatus        = "meridian.io/placement-status" // written: per cluster desired/ready/generation/errors

	LabelPropagated = "meridian.io/propagated" // "true" on every copy Meridian owns
	AnnoTemplate    = "meridian.io/template"   // on copies: KIND/NAMESPACE/NAME of the template
	AnnoSpecHash    = "meridian.io/spec-hash"  // on copies: hash of the template content applied
	// AnnoNamespaceFor is on a namespace Meridian created in a member for a
	// copy: the template that needed it (no template's copy until a
	// Namespace template adopts it).
	AnnoNamespaceFor = "meridian.io/namespace-for"
	Finalizer        = "meridian.io/propagation"
	FieldManager     = "meridian"
)

// Replica modes.
const (
	ModeDuplicated = "duplicated"
	ModeDivided    = "divided"
)

// Rollout modes.
const (
	RolloutAll      = "all"
	RolloutOneByOne = "one-by-one"
)

// Spec is a template's placement, read from its annotations.
type Spec struct {
	Clusters    []string // explicit list (rollout order); nil with a selector
	Selector    string
	MaxClusters int
	Mode        string
	Weights     map[string]int // nil: follow Hostname's traffic weights, else equal
	Hostname    string         // meridian.io/hostname of the template, if any
	Min, Max    map[string]int
	Overrides   map[string]json.RawMessage // cluster -> JSON patch (array of operations)
	Registry    map[string]string
	Rollout     string
	// ReplicasPath is where the replica count lives (meridian.io/replicas-path);
	// reconcile fills in the kind's default (spec.replicas) when unset.
	ReplicasPath []string
}

// ParseSpec reads the placement annotations; every error names the
// annotation, the value and what is allowed.
func ParseSpec(a map[string]string) (Spec, []kube.FieldError) {
	p := specParser{a: a}
	s := Spec{Mode: ModeDuplicated, Rollout: RolloutAll}
	p.targets(&s)
	p.replicas(&s)
	p.overrides(&s)
	p.registries(&s)
	p.rollout(&s)
	p.countPath(&s)
	if h, ok := a[kube.AnnoHostname]; ok {
		s.Hostname = strings.TrimSpace(h)
	}
	return s, p.errs
}

// specParser reads one template's annotations and collects their errors.
type specParser struct {
	a    map[string]string
	errs []kube.FieldError
}

// bad records an error for annotation anno, naming its value.
func (p *specParser) bad(anno, format string, args ...any) {
	p.errs = append(p.errs, kube.FieldError{Annotation: anno, Value: p.a[anno], Msg: fmt.Sprintf(format, args...)})
}

// targets reads where the copies go: an explicit cluster list or a
// selector (exactly one of them) and the selector's cluster limit.
func (p *specParser) targets(s *Spec) {
	if v, ok := p.a[AnnoClusters]; ok {
		cs := splitList(v)
		if len(cs) == 0 || slices.Contains(cs, "") {
			p.bad(AnnoClusters, "is not a cluster list (allowed: cluster names separated by commas, e.g. east,west)")
		} else {
			s.Clusters = cs
		}
	}
	if v, ok := p.a[AnnoSelector]; ok {
		if _, err := placement.ParseSelector(v); err != nil {
			p.bad(AnnoSelector, "is not a label selector (allowed: e.g. tier=prod,region!=eu): %v", err)
		} else {
			s.Selector = v
		}
	}
	if s.Clusters == nil && s.Selector == "" && !hasErr(p.errs, AnnoClusters, AnnoSelector) {
		p.bad(AnnoClusters, "is missing (allowed: meridian.io/clusters or meridian.io/cluster-selector)")
	}
	if s.Clusters != nil && s.Selector != "" {
		p.bad(AnnoSelector, "cannot be combined with meridian.io/clusters (allowed: one of them)")
	}
	if v, ok := p.a[AnnoMaxClusters]; ok {
		n, err := strconv.Atoi(strings.TrimSpace(v))
		if err != nil || n < 1 {
			p.bad(AnnoMaxClusters, "is not a positive integer")
		} else {
			s.MaxClusters = n
		}
	}
}

// replicas reads the replica mode, the weights and the per-cluster bounds.
func (p *specParser) replicas(s *Spec) {
	if v, ok := p.a[AnnoReplicas]; ok {
		switch v = strings.TrimSpace(v); v {
		case ModeDuplicated, ModeDivided:
			s.Mode = v
		default:
			p.bad(AnnoReplicas, "is not a replica mode (allowed: duplicated, divided)")
		}
	}
	var err error
	if v, ok := p.a[AnnoWeights]; ok {
		if s.Weights, err = parseMap(v, 0, 1000); err != nil {
			p.bad(AnnoWeights, "%v (allowed: cluster=weight pairs, weights 0..1000, e.g. east=3,west=1)", err)
		}
	}
	if v, ok := p.a[AnnoReplicasMin]; ok {
		if s.Min, err = parseMap(v, 0, 100000); err != nil {
			p.bad(AnnoReplicasMin, "%v (allowed: cluster=count pairs, e.g. east=2)", err)
		}
	}
	if v, ok := p.a[AnnoReplicasMax]; ok {
		if s.Max, err = parseMap(v, 1, 100000); err != nil {
			p.bad(AnnoReplicasMax, "%v (allowed: cluster=count pairs, counts at least 1, e.g. west=5)", err)
		}
	}
	for c, lo := range s.Min {
		if hi, ok := s.Max[c]; ok && hi < lo {
			p.bad(AnnoReplicasMax, "cluster %s: max %d is below min %d", c, hi, lo)
		}
	}
}

// overrides reads the per-cluster RFC 6902 patches.
func (p *specParser) overrides(s *Spec) {
	v, ok := p.a[AnnoOverrides]
	if !ok {
		return
	}
	var ov map[string]json.RawMessage
	if err := json.Unmarshal([]byte(v), &ov); err != nil {
		p.bad(AnnoOverrides, "is not a JSON object of cluster -> RFC 6902 patch (allowed: e.g. {\"east\":[{\"op\":\"replace\",\"path\":\"/spec/template/spec/nodeSelector\",\"value\":{\"zone\":\"a\"}}]}): %v", err)
		return
	}
	for c, patch := range ov {
		var ops []map[string]any
		if err := json.Unmarshal(patch, &ops); err != nil {
			p.bad(AnnoOverrides, "cluster %s: the patch is not an array of RFC 6902 operations: %v", c, err)
		}
	}
	s.Overrides = ov
}

// registries reads the per-cluster image registries.
func (p *specParser) registries(s *Spec) {
	v, ok := p.a[AnnoImageRegistry]
	if !ok {
		return
	}
	m := map[string]string{}
	for _, kv := range splitList(v) {
		c, reg, ok := strings.Cut(kv, "=")
		if !ok || c == "" || reg == "" || strings.ContainsAny(reg, " @") {
			p.bad(AnnoImageRegistry, "is not a cluster=registry list (allowed: e.g. east=registry.east.example.com)")
			m = nil
			break
		}
		m[c] = strings.TrimSuffix(reg, "/")
	}
	s.Registry = m
}

// rollout reads the rollout mode.
func (p *specParser) rollout(s *Spec) {
	if v, ok := p.a[AnnoRollout]; ok {
		switch v = strings.TrimSpace(v); v {
		case RolloutAll, RolloutOneByOne:
			s.Rollout = v
		default:
			p.bad(AnnoRollout, "is not a rollout mode (allowed: all, one-by-one)")
		}
	}
}

// countPath reads where the template keeps its replica count.
func (p *specParser) countPath(s *Spec) {
	if v, ok := p.a[AnnoReplicasPath]; ok {
		if path, err := ParseFieldPath(v); err != nil {
			p.bad(AnnoReplicasPath, "%v (allowed: a field path under spec, e.g. spec.workers.replicas or /spec/workers/replicas)", err)
		} else {
			s.ReplicasPath = path
		}
	}
}

func hasErr(errs []kube.FieldError, annos ...string) bool {
	return slices.ContainsFunc(errs, func(e kube.FieldError) bool { return slices.Contains(annos, e.Annotation) })
}

func splitList(v string) []string {
	var out []string
	for it := range strings.SplitSeq(v, ",") {
		out = append(out, strings.TrimSpace(it))
	}
	if len(out) == 1 && out[0] == "" {
		return nil
	}
	return out
}

func parseMap(v string, lo, hi int) (map[string]int, error) {
	m := map[string]int{}
	for _, kv := range splitList(v) {
		c, n, ok := strings.Cut(kv, "=")
		x, err := strconv.Atoi(strings.TrimSpace(n))
		if !ok || c == "" || err != nil || x < lo || x > hi {
			return nil, fmt.Errorf("has %q", kv)
		}
		m[strings.TrimSpace(c)] = x
	}
	if len(m) == 0 {
		return nil, fmt.Errorf("is empty")
	}
	return m, nil
}

// ParseFieldPath reads a field path in dotted (spec.workers.replicas) or
// JSON pointer (/spec/workers/replicas) form. It must lie under spec.
func ParseFieldPath(v string) ([]string, error) {
	v = strings.TrimSpace(v)
	var parts []string
	if strings.HasPrefix(v, "/") {
		for _, p := range strings.Split(v[1:], "/") {
			parts = append(parts, strings.NewReplacer("~1", "/", "~0", "~").Replace(p))
		}
	} else {
		parts = strings.Split(v, ".")
	}
	if len(parts) < 2 || parts[0] != "spec" {
		return nil, fmt.Errorf("is not a field under spec")
	}
	if slices.Contains(parts, "") {
		return nil, fmt.Errorf("has an empty field name")
	}
	return parts, nil
}
