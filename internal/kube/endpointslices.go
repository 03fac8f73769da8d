package kube

import (
	"context"
	"log/slog"
	"slices"
	"sync"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	networkingv1 "k8s.io/api/networking/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"

	"github.com/meridian-gslb/meridian/internal/model"
)

// SliceCounts are the endpoints the EndpointSlices of one Service list,
// terminating endpoints left out.
type SliceCounts struct {
	Ready    int // conditions.ready true or unset (unset means ready)
	NotReady int // conditions.ready false
	Slices   int // EndpointSlices of the Service
}

// countSlice counts the endpoints of one EndpointSlice.
func countSlice(s *discoveryv1.EndpointSlice) SliceCounts {
	c := SliceCounts{Slices: 1}
	for _, e := range s.Endpoints {
		switch {
		case e.Conditions.Terminating != nil && *e.Conditions.Terminating:
		case e.Conditions.Ready == nil || *e.Conditions.Ready:
			c.Ready++
		default:
			c.NotReady++
		}
	}
	return c
}

// sliceKey names a Service: NAMESPACE/NAME.
type sliceKey struct{ namespace, service string }

// EnableEndpointSlices makes every member (and every member started later)
// watch EndpointSlices, for capacity-aware services (source kubernetes). It
// needs list and watch on discovery.k8s.io endpointslices; a member that
// forbids it has no readings, and its endpoints keep their configured
// weights. Once on, it stays on until the Manager stops.
func (mg *Manager) EnableEndpointSlices() {
	mg.mu.Lock()
	if mg.slicesOn {
		mg.mu.Unlock()
		return
	}
	mg.slicesOn = true
	mg.mu.Unlock()
	for _, mem := range mg.list() {
		mem.mu.Lock()
		ctx, cs := mem.ctx, mem.watch
		mem.mu.Unlock()
		if ctx != nil && cs != nil {
			mem.slices.start(ctx, cs)
		}
	}
}

func (mg *Manager) endpointSlicesOn() bool {
	mg.mu.Lock()
	defer mg.mu.Unlock()
	return mg.slicesOn
}

// EndpointCounts returns the counts of the Service namespace/name in a
// member cluster; ok is false when there is nothing to go by: no such
// member, the member is not Ready, or its EndpointSlices are not (yet)
// watched and listed.
func (mg *Manager) EndpointCounts(cluster, namespace, name string) (SliceCounts, bool) {
	mg.mu.Lock()
	mem := mg.members[cluster]
	mg.mu.Unlock()
	if mem == nil || !mem.ready() {
		return SliceCounts{}, false
	}
	return mem.slices.counts(namespace, name)
}

// sliceSource watches a member's EndpointSlices, for capacity-aware
// services, and counts the endpoints of each Service. Its informers keep
// slim copies (trimSlice).
type sliceSource struct {
	cluster  string
	log      *slog.Logger
	kcfg     model.Kubernetes
	sink     objectSink
	onChange func() // Options.OnEndpointSlices

	mu      sync.Mutex
	started bool
	synced  func() bool                         // nil until started
	slices  map[sliceKey]map[string]SliceCounts // Service -> slice name -> counts
	owner   map[string]sliceKey                 // NAMESPACE/slice name -> its Service
}

func newSliceSource(cluster string, log *slog.Logger, k model.Kubernetes, sink objectSink, onChange func()) *sliceSource {
	return &sliceSource{cluster: cluster, log: log, kcfg: k, sink: sink, onChange: onChange,
		slices: map[sliceKey]map[string]SliceCounts{}, owner: map[string]sliceKey{}}
}

// counts sums the counts of the Service namespace/name; ok is false until
// the slices are watched and listed.
func (s *sliceSource) counts(namespace, name string) (c SliceCounts, ok bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.synced == nil || !s.synced() {
		return SliceCounts{}, false
	}
	for _, sc := range s.slices[sliceKey{namespace, name}] {
		c.Ready += sc.Ready
		c.NotReady += sc.NotReady
		c.Slices += sc.Slices
	}
	return c, true
}

// start starts the EndpointSlice informers once.
func (s *sliceSource) start(ctx context.Context, cs kubernetes.Interface) {
	s.mu.Lock()
	if s.started {
		s.mu.Unlock()
		return
	}
	s.started = true
	s.mu.Unlock()
	var synced []cache.InformerSynced
	for _, ns := range watchedNamespaces(s.kcfg) {
		f := informers.NewSharedInformerFactoryWithOptions(cs, s.kcfg.Resync.D(), informers.WithNamespace(ns),
			informers.WithTransform(trimSlice))
		inf := f.Discovery().V1().EndpointSlices().Informer()
		if _, err := inf.AddEventHandler(handlers(s.sink, s.upsert, s.remove)); err != nil {
			s.log.Error("kubernetes: endpointslice informer", "cluster", s.cluster, "err", err)
		}
		synced = append(synced, inf.HasSynced)
		f.Start(ctx.Done())
	}
	s.mu.Lock()
	s.synced = func() bool {
		for _, ok := range synced {
			if !ok() {
				return false
			}
		}
		return true
	}
	s.mu.Unlock()
	s.log.Info("kubernetes: watching EndpointSlices for capacity-aware services", "cluster", s.cluster)
}

func (s *sliceSource) upsert(o any) {
	sl, ok := o.(*discoveryv1.EndpointSlice)
	if !ok {
		return
	}
	svc := sl.Labels[discoveryv1.LabelServiceName]
	s.mu.Lock()
	s.dropLocked(sl.Namespace, sl.Name)
	if svc != "" {
		k := sliceKey{sl.Namespace, svc}
		if s.slices[k] == nil {
			s.slices[k] = map[string]SliceCounts{}
		}
		s.slices[k][sl.Name] = countSlice(sl)
		s.owner[sl.Namespace+"/"+sl.Name] = k
	}
	s.mu.Unlock()
	s.onChange()
}

func (s *sliceSource) remove(o any) {
	sl, ok := withoutTombstone(o).(*discoveryv1.EndpointSlice)
	if !ok {
		return
	}
	s.mu.Lock()
	s.dropLocked(sl.Namespace, sl.Name)
	s.mu.Unlock()
	s.onChange()
}

// dropLocked forgets a slice (its service label may have changed); s.mu
// is held.
func (s *sliceSource) dropLocked(namespace, name string) {
	id := namespace + "/" + name
	k, ok := s.owner[id]
	if !ok {
		return
	}
	delete(s.owner, id)
	delete(s.slices[k], name)
	if len(s.slices[k]) == 0 {
		delete(s.slices, k)
	}
}

// backendsOf lists the Services whose EndpointSlices measure a watched
// object's ready capacity: a Service itself; an Ingress's default backend
// and rule backends; a route's backendRefs of kind Service in its own
// namespace. Sorted, without duplicates.
func backendsOf(o any) []string {
	var out []string
	switch v := o.(type) {
	case *corev1.Service:
		out = []string{v.Name}
	case *networkingv1.Ingress:
		if b := v.Spec.DefaultBackend; b != nil && b.Service != nil {
			out = append(out, b.Service.Name)
		}
		for _, r := range v.Spec.Rules {
			if r.HTTP == nil {
				continue
			}
			for _, p := range r.HTTP.Paths {
				if p.Backend.Service != nil {
					out = append(out, p.Backend.Service.Name)
				}
			}
		}
	case *unstructured.Unstructured:
		out = routeBackends(v)
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// routeBackendShape is the part of a route's rules backendsOf reads.
type routeBackendShape struct {
	Spec struct {
		Rules []struct {
			BackendRefs []struct {
				Group     *string `json:"group"`
				Kind      *string `json:"kind"`
				Name      string  `json:"name"`
				Namespace *string `json:"namespace"`
			} `json:"backendRefs"`
		} `json:"rules"`
	} `json:"spec"`
}

func routeBackends(u *unstructured.Unstructured) []string {
	var s routeBackendShape
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, &s); err != nil {
		return nil
	}
	var out []string
	for _, r := range s.Spec.Rules {
		for _, b := range r.BackendRefs {
			switch {
			case b.Group != nil && *b.Group != "" && *b.Group != corev1.GroupName:
			case b.Kind != nil && *b.Kind != "Service":
			case b.Namespace != nil && *b.Namespace != u.GetNamespace():
				// Another namespace's Service (ReferenceGrant): not counted.
			case b.Name != "":
				out = append(out, b.Name)
			}
		}
	}
	return out
}
