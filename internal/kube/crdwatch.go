package kube

import (
	"context"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"strings"
	"sync"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/dynamic/dynamicinformer"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"

	"github.com/meridian-gslb/meridian/internal/model"
)

// crdKind is one custom resource a crdWatch reads where its CRD is
// served.
type crdKind struct {
	kind, group, resource string
	versions              []string // the first one the member serves is read
}

// crdWatch discovers which of its kinds a member serves and keeps dynamic
// informers of them (slim copies, through transform), handing their
// events to handler. Like the Gateway API routes (gatewaywatch.go), a
// member without the CRDs is no error: try is called on every heartbeat,
// so CRDs installed later are picked up, and their absence is logged
// once. It is the shared part of the DNSEndpoint and MCS sources.
//
// Their objects are read into shape structs (the few fields Meridian
// reads), not the projects' Go types: sigs.k8s.io/external-dns needs a
// newer Go than ours (v0.23.0: go 1.27) and brings a large module graph
// for one struct, and sigs.k8s.io/mcs-api's types, though light, would be
// a dependency for three fields; a shape also reads every served version
// alike (v1alpha1 and v1beta1 of the MCS API).
type crdWatch struct {
	cluster   string
	log       *slog.Logger
	kcfg      model.Kubernetes
	what      string // what is watched, for the logs, e.g. "DNSEndpoints (ExternalDNS)"
	kinds     []crdKind
	transform cache.TransformFunc
	handler   cache.ResourceEventHandler

	absentLogged bool // try's goroutine only

	mu   sync.Mutex
	dyn  dynamic.Interface
	gvrs map[string]schema.GroupVersionResource // kind -> watched resource
}

// try starts the informers of the kinds the member serves and that are
// not watched yet. cfg is the member's watch configuration.
func (w *crdWatch) try(ctx context.Context, cs kubernetes.Interface, cfg *rest.Config) {
	w.mu.Lock()
	running := len(w.gvrs)
	w.mu.Unlock()
	if running == len(w.kinds) || cfg == nil {
		return
	}
	gvrs, err := discoverKinds(cs, w.kinds)
	if err != nil {
		w.log.Warn("kubernetes: discovery failed; retried", "cluster", w.cluster, "watch", w.what, "err", err)
		return
	}
	if len(gvrs) == 0 {
		if !w.absentLogged {
			w.absentLogged = true
			w.log.Info("kubernetes: the CRDs are not installed; not watched (checked again with each heartbeat)", "cluster", w.cluster, "watch", w.what)
		}
		return
	}
	dyn, kinds, err := w.claim(cfg, gvrs)
	if err != nil {
		w.log.Error("kubernetes: dynamic client", "cluster", w.cluster, "watch", w.what, "err", err)
		return
	}
	if len(kinds) > 0 {
		w.start(ctx, dyn, kinds, gvrs)
	}
}

// claim makes the dynamic client once and records as watched the kinds
// of gvrs not watched yet, in the order of w.kinds; it returns the client
// and those kinds.
func (w *crdWatch) claim(cfg *rest.Config, gvrs map[string]schema.GroupVersionResource) (dynamic.Interface, []string, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.dyn == nil {
		dyn, err := dynamic.NewForConfig(cfg)
		if err != nil {
			return nil, nil, err
		}
		w.dyn = dyn
	}
	if w.gvrs == nil {
		w.gvrs = map[string]schema.GroupVersionResource{}
	}
	var kinds []string
	for _, k := range w.kinds {
		if gvr, ok := gvrs[k.kind]; ok {
			if _, running := w.gvrs[k.kind]; !running {
				w.gvrs[k.kind] = gvr
				kinds = append(kinds, k.kind)
			}
		}
	}
	return w.dyn, kinds, nil
}

// start starts the informers of kinds in every watched namespace.
func (w *crdWatch) start(ctx context.Context, dyn dynamic.Interface, kinds []string, gvrs map[string]schema.GroupVersionResource) {
	var factories []dynamicinformer.DynamicSharedInformerFactory
	for _, ns := range watchedNamespaces(w.kcfg) {
		f := dynamicinformer.NewFilteredDynamicSharedInformerFactory(dyn, w.kcfg.Resync.D(), ns, nil)
		for _, k := range kinds {
			inf := f.ForResource(gvrs[k]).Informer()
			if err := inf.SetTransform(w.transform); err != nil {
				w.log.Error("kubernetes: informer", "cluster", w.cluster, "kind", k, "err", err)
			}
			if _, err := inf.AddEventHandler(w.handler); err != nil {
				w.log.Error("kubernetes: informer", "cluster", w.cluster, "kind", k, "err", err)
			}
		}
		f.Start(ctx.Done())
		factories = append(factories, f)
	}
	go func() {
		for _, f := range factories {
			f.WaitForCacheSync(ctx.Done())
		}
		w.log.Info("kubernetes: watching", "cluster", w.cluster, "watch", w.what, "namespaces", orAll(strings.Join(w.kcfg.Namespaces, ",")), "kinds", kinds)
	}()
}

// discoverKinds finds which of kinds the member serves, and in which
// version; an empty map means none (the CRDs are not installed).
func discoverKinds(cs kubernetes.Interface, kinds []crdKind) (map[string]schema.GroupVersionResource, error) {
	served := map[string][]string{} // group/version -> resources
	out := map[string]schema.GroupVersionResource{}
	for _, k := range kinds {
		for _, v := range k.versions {
			gv := k.group + "/" + v
			if _, asked := served[gv]; !asked {
				list, err := cs.Discovery().ServerResourcesForGroupVersion(gv)
				switch {
				case apierrors.IsNotFound(err):
					served[gv] = []string{}
					continue
				case err != nil:
					return nil, fmt.Errorf("discovery of %s: %w", gv, err)
				}
				served[gv] = []string{}
				for _, r := range list.APIResources {
					served[gv] = append(served[gv], r.Name)
				}
			}
			if slices.Contains(served[gv], k.resource) {
				out[k.kind] = schema.GroupVersionResource{Group: k.group, Version: v, Resource: k.resource}
				break
			}
		}
	}
	return out, nil
}

// resource is the client of one watched kind in one namespace; ok is
// false when the kind is not watched.
func (w *crdWatch) resource(kind, namespace string) (dynamic.ResourceInterface, schema.GroupVersionResource, bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	gvr, ok := w.gvrs[kind]
	if w.dyn == nil || !ok {
		return nil, gvr, false
	}
	return w.dyn.Resource(gvr).Namespace(namespace), gvr, true
}

// patchStatus writes meridian.io/status on a watched object.
func (w *crdWatch) patchStatus(ctx context.Context, ref ObjectRef, text, manager string) error {
	res, _, ok := w.resource(ref.Kind, ref.Namespace)
	if !ok {
		return fmt.Errorf("kind %s is not watched", ref.Kind)
	}
	return patchAnnotation(ctx, res, ref.Name, text, manager)
}

// patchAnnotation merge-patches meridian.io/status to text on object name
// of res.
func patchAnnotation(ctx context.Context, res dynamic.ResourceInterface, name, text, manager string) error {
	patch, err := statusPatch(text)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	_, err = res.Patch(ctx, name, types.MergePatchType, patch, metav1.PatchOptions{FieldManager: manager})
	return err
}

// applyStatus server-side applies status (a map of the status fields this
// manager owns) on the status subresource of a watched object: other
// managers' fields (another controller's conditions) are kept.
func (w *crdWatch) applyStatus(ctx context.Context, ref ObjectRef, status map[string]any, manager string) error {
	res, gvr, ok := w.resource(ref.Kind, ref.Namespace)
	if !ok {
		return fmt.Errorf("kind %s is not watched", ref.Kind)
	}
	u := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": gvr.GroupVersion().String(), "kind": ref.Kind,
		"metadata": map[string]any{"name": ref.Name, "namespace": ref.Namespace},
		"status":   status,
	}}
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	_, err := res.ApplyStatus(ctx, ref.Name, u, metav1.ApplyOptions{FieldManager: manager, Force: true})
	return err
}

// watching lists the kinds watched now, sorted.
func (w *crdWatch) watching() []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return slices.Sorted(maps.Keys(w.gvrs))
}
