package kube

import (
	"context"
	"log/slog"

	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"

	"github.com/meridian-gslb/meridian/internal/model"
)

// serviceSource watches a member's LoadBalancer Services and Ingresses
// that carry meridian.io/hostname, and hands each to the sink. Its
// informers keep slim copies (slimServiceObject): what Meridian reads and
// nothing else.
type serviceSource struct {
	cluster string
	log     *slog.Logger
	kcfg    model.Kubernetes
	sink    objectSink
	// also is told of every Service (gone: deleted), for the MCS source;
	// nil: nobody. Set before start.
	also func(svc *corev1.Service, gone bool)
}

// start starts the informers of every watched namespace.
func (s *serviceSource) start(ctx context.Context, cs kubernetes.Interface) {
	h := handlers(s.sink, s.upsert, s.remove)
	for _, ns := range watchedNamespaces(s.kcfg) {
		f := informers.NewSharedInformerFactoryWithOptions(cs, s.kcfg.Resync.D(), informers.WithNamespace(ns),
			informers.WithTransform(slimServiceObject))
		if _, err := f.Core().V1().Services().Informer().AddEventHandler(h); err != nil {
			s.log.Error("kubernetes: service informer", "cluster", s.cluster, "err", err)
		}
		if _, err := f.Networking().V1().Ingresses().Informer().AddEventHandler(h); err != nil {
			s.log.Error("kubernetes: ingress informer", "cluster", s.cluster, "err", err)
		}
		f.Start(ctx.Done())
		go func() {
			f.WaitForCacheSync(ctx.Done())
			s.log.Info("kubernetes: watching annotated Services and Ingresses", "cluster", s.cluster, "namespace", orAll(ns))
		}()
	}
}

// upsert reads an added or changed Service or Ingress: a watched one is
// put, one that is no longer watched (an annotation removed, a type
// changed) is dropped.
func (s *serviceSource) upsert(o any) {
	if svc, isSvc := o.(*corev1.Service); isSvc && s.also != nil {
		s.also(svc, false)
	}
	in, meta, ok := s.read(o)
	switch {
	case meta == nil:
	case !ok:
		s.sink.drop(ObjectRef{s.cluster, kindOf(o), meta.GetNamespace(), meta.GetName()})
	default:
		s.sink.put(in)
	}
}

// remove drops a deleted Service or Ingress.
func (s *serviceSource) remove(o any) {
	o = withoutTombstone(o)
	if svc, isSvc := o.(*corev1.Service); isSvc && s.also != nil {
		s.also(svc, true)
	}
	if meta, ok := o.(metav1.Object); ok {
		s.sink.drop(ObjectRef{s.cluster, kindOf(o), meta.GetNamespace(), meta.GetName()})
	}
}

// read reads a Service or Ingress; meta is nil for other objects, ok is
// false for objects Meridian ignores (not a LoadBalancer Service, no
// meridian.io/hostname).
func (s *serviceSource) read(o any) (in objectRead, meta metav1.Object, ok bool) {
	var ingress []corev1.LoadBalancerIngress
	switch v := o.(type) {
	case *corev1.Service:
		if v.Spec.Type != corev1.ServiceTypeLoadBalancer {
			return in, v, false
		}
		in.ref, meta, ingress = ObjectRef{s.cluster, KindService, v.Namespace, v.Name}, v, v.Status.LoadBalancer.Ingress
	case *networkingv1.Ingress:
		in.ref, meta = ObjectRef{s.cluster, KindIngress, v.Namespace, v.Name}, v
		for _, i := range v.Status.LoadBalancer.Ingress {
			ingress = append(ingress, corev1.LoadBalancerIngress{IP: i.IP, Hostname: i.Hostname})
		}
	default:
		return in, nil, false
	}
	for _, i := range ingress {
		switch {
		case i.IP != "":
			in.targets = append(in.targets, i.IP)
		case i.Hostname != "":
			in.targets = append(in.targets, i.Hostname)
		}
	}
	in.anno, in.own = meta.GetAnnotations(), meta.GetAnnotations()
	in.uid, in.created, in.obj = meta.GetUID(), meta.GetCreationTimestamp().Time, o.(runtime.Object)
	in.backends = backendsOf(o)
	return in, meta, Watched(in.anno)
}

// kindOf is the kind of a Service or Ingress.
func kindOf(o any) string {
	if _, ok := o.(*networkingv1.Ingress); ok {
		return KindIngress
	}
	return KindService
}
