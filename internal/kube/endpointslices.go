package kube

import (
	"context"
	"slices"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
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

// trimSlice keeps what countSlice and the cache need of an EndpointSlice:
// names, labels and each endpoint's conditions (no addresses, topology or
// managed fields), so a large cluster's slices cost little memory.
func trimSlice(o any) (any, error) {
	s, ok := o.(*discoveryv1.EndpointSlice)
	if !ok {
		return o, nil
	}
	out := &discoveryv1.EndpointSlice{
		ObjectMeta: metav1.ObjectMeta{Name: s.Name, Namespace: s.Namespace, UID: s.UID, ResourceVersion: s.ResourceVersion,
			Labels: map[string]string{discoveryv1.LabelServiceName: s.Labels[discoveryv1.LabelServiceName]}},
		AddressType: s.AddressType,
		Endpoints:   make([]discoveryv1.Endpoint, len(s.Endpoints)),
	}
	for i, e := range s.Endpoints {
		out.Endpoints[i].Conditions = e.Conditions
	}
	return out, nil
}

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
			mem.startSlices(ctx, cs)
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
	if mem == nil {
		return SliceCounts{}, false
	}
	mem.mu.Lock()
	defer mem.mu.Unlock()
	if mem.state != StateReady || mem.slicesSynced == nil || !mem.slicesSynced() {
		return SliceCounts{}, false
	}
	var c SliceCounts
	for _, sc := range mem.slices[sliceKey{namespace, name}] {
		c.Ready += sc.Ready
		c.NotReady += sc.NotReady
		c.Slices += sc.Slices
	}
	return c, true
}

// startSlices starts the EndpointSlice informers of a member once.
func (m *member) startSlices(ctx context.Context, cs kubernetes.Interface) {
	m.mu.Lock()
	if m.slicesStarted {
		m.mu.Unlock()
		return
	}
	m.slicesStarted = true
	m.mu.Unlock()
	nss := m.kcfg.Namespaces
	if len(nss) == 0 {
		nss = []string{metav1.NamespaceAll}
	}
	var synced []cache.InformerSynced
	for _, ns := range nss {
		f := informers.NewSharedInformerFactoryWithOptions(cs, m.kcfg.Resync.D(), informers.WithNamespace(ns),
			informers.WithTransform(trimSlice))
		inf := f.Discovery().V1().EndpointSlices().Informer()
		if _, err := inf.AddEventHandler(cache.ResourceEventHandlerFuncs{
			AddFunc:    func(o any) { m.safely(o, m.sliceUpsert) },
			UpdateFunc: func(_, o any) { m.safely(o, m.sliceUpsert) },
			DeleteFunc: func(o any) { m.safely(o, m.sliceRemove) },
		}); err != nil {
			m.mg.log.Error("kubernetes: endpointslice informer", "cluster", m.src.Cluster, "err", err)
		}
		synced = append(synced, inf.HasSynced)
		f.Start(ctx.Done())
	}
	m.mu.Lock()
	m.slicesSynced = func() bool {
		for _, s := range synced {
			if !s() {
				return false
			}
		}
		return true
	}
	m.mu.Unlock()
	m.mg.log.Info("kubernetes: watching EndpointSlices for capacity-aware services", "cluster", m.src.Cluster)
}

func (m *member) sliceUpsert(o any) {
	s, ok := o.(*discoveryv1.EndpointSlice)
	if !ok {
		return
	}
	svc := s.Labels[discoveryv1.LabelServiceName]
	m.mu.Lock()
	m.dropSliceLocked(s.Namespace, s.Name)
	if svc != "" {
		k := sliceKey{s.Namespace, svc}
		if m.slices[k] == nil {
			m.slices[k] = map[string]SliceCounts{}
		}
		m.slices[k][s.Name] = countSlice(s)
		m.sliceOwner[s.Namespace+"/"+s.Name] = k
	}
	m.mu.Unlock()
	m.mg.opts.OnEndpointSlices()
}

func (m *member) sliceRemove(o any) {
	if d, ok := o.(cache.DeletedFinalStateUnknown); ok {
		o = d.Obj
	}
	s, ok := o.(*discoveryv1.EndpointSlice)
	if !ok {
		return
	}
	m.mu.Lock()
	m.dropSliceLocked(s.Namespace, s.Name)
	m.mu.Unlock()
	m.mg.opts.OnEndpointSlices()
}

// dropSliceLocked forgets a slice (its service label may have changed).
func (m *member) dropSliceLocked(namespace, name string) {
	id := namespace + "/" + name
	k, ok := m.sliceOwner[id]
	if !ok {
		return
	}
	delete(m.sliceOwner, id)
	delete(m.slices[k], name)
	if len(m.slices[k]) == 0 {
		delete(m.slices, k)
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
