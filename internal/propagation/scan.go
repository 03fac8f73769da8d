package propagation

import (
	"context"
	"slices"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// reconcileAll runs one pass: it finds the templates in the hub and
// reconciles each, in dependency order.
func (c *Controller) reconcileAll(ctx context.Context) {
	hub, ok := c.clientsFor(c.opts.Hub)
	if !ok {
		c.log.Debug("propagation: hub not ready", "hub", c.opts.Hub)
		return
	}
	c.beginPass()
	kinds := c.hubKinds(hub)
	if len(kinds) == 0 {
		return // discovery failed: keep the last statuses, try next pass
	}
	sc := c.scanTemplates(ctx, hub, kinds)
	found := withoutChildren(sc.found)
	c.noteDenied(sc.denied)
	c.mu.Lock()
	c.kinds = [2]int{sc.readable, len(sc.denied)}
	c.mu.Unlock()
	// Kinds come in apply order already; keep it stable within a kind.
	sortTemplates(found)
	seen := map[string]bool{}
	for _, tm := range found {
		seen[tm.ref] = true
	}
	objs := c.readTemplates(ctx, hub, found)
	scaled := autoscaled(objs)
	for i, tm := range found {
		if t := objs[i]; t != nil {
			c.safely(tm.ref, func() { c.reconcile(ctx, hub, tm.kind, t, tm.child, scaled[tm.ref]) })
		}
	}
	c.mu.Lock()
	for _, ref := range staleStatuses(c.status, seen, sc.failed) {
		delete(c.status, ref)
	}
	c.mu.Unlock()
}

// beginPass drops the clients of members no longer registered and takes
// the members Ready now as this pass's members, their per-pass discovery
// state reset.
func (c *Controller) beginPass() {
	c.pass = map[string]*clients{}
	registered := c.env.Clusters()
	c.mu.Lock()
	for cl := range c.clients {
		if _, ok := registered[cl]; !ok && cl != c.opts.Hub {
			delete(c.clients, cl) // a member removed from the config or its Secret
		}
	}
	c.mu.Unlock()
	for cl := range registered {
		if mc, ok := c.clientsFor(cl); ok {
			mc.reread, mc.failed = false, nil
			c.pass[cl] = mc
		}
	}
}

// scan is what one pass found in the hub.
type scan struct {
	found    []templateMeta
	denied   []string        // kinds the hub identity may not list (refused now or lately)
	failed   map[string]bool // kinds listed with an error this pass: their statuses stay
	readable int             // kinds listed without a refusal
}

// scanTemplates lists every kind's templates. A kind the hub refuses is
// skipped for recheckForbidden passes before it is asked again.
func (c *Controller) scanTemplates(ctx context.Context, hub *clients, kinds []Kind) scan {
	sc := scan{failed: map[string]bool{}}
	for _, k := range kinds {
		if c.skipDenied[k.Name()] > 0 {
			// Refused lately: asked again every recheckForbidden passes,
			// not every pass (each refusal is a 403 in the hub's audit log).
			c.skipDenied[k.Name()]--
			sc.denied = append(sc.denied, k.Name())
			continue
		}
		found, denied, failed := c.scanKind(ctx, hub, k)
		sc.found = append(sc.found, found...)
		if failed {
			sc.failed[k.Name()] = true
		}
		if denied {
			sc.denied = append(sc.denied, k.Name())
			c.skipDenied[k.Name()] = recheckForbidden
		} else {
			sc.readable++
		}
	}
	return sc
}

// scanKind lists one kind's templates in every namespace scanned; denied:
// the hub refused a list, failed: a list failed otherwise (logged).
func (c *Controller) scanKind(ctx context.Context, hub *clients, k Kind) (found []templateMeta, denied, failed bool) {
	for _, ns := range scanNamespaces(k, c.opts.Namespaces) {
		items, err := c.listMeta(ctx, hub, k, ns)
		if apierrors.IsForbidden(err) {
			denied = true
			continue
		}
		if err != nil {
			c.log.Warn("propagation: listing templates failed", "kind", k.Name(), "namespace", ns, "err", err)
			failed = true
			continue
		}
		for _, it := range items {
			if isTemplate(it, k, c.opts.Namespaces) {
				found = append(found, newTemplateMeta(k, it))
			}
		}
	}
	return found, denied, failed
}

// readTemplates reads the found templates in full, in the same order; nil
// where one is gone or could not be read (logged).
func (c *Controller) readTemplates(ctx context.Context, hub *clients, found []templateMeta) []*unstructured.Unstructured {
	objs := make([]*unstructured.Unstructured, len(found))
	for i, tm := range found {
		t, err := hub.dyn.Resource(tm.kind.GVR()).Namespace(tm.ns).Get(ctx, tm.name, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			continue
		}
		if err != nil {
			c.log.Warn("propagation: reading a template failed", "template", tm.ref, "err", err)
			continue
		}
		t.SetGroupVersionKind(tm.kind.GVK)
		objs[i] = t
	}
	return objs
}

// recheckForbidden is how many passes a kind the hub refused to list is
// skipped before it is asked again.
const recheckForbidden = 30

// listPage bounds one list answer; larger kinds are read in pages.
const listPage = 500

// listMeta lists a kind's objects (metadata only) in pages.
func (c *Controller) listMeta(ctx context.Context, hub *clients, k Kind, ns string) ([]metav1.PartialObjectMetadata, error) {
	var out []metav1.PartialObjectMetadata
	opts := metav1.ListOptions{Limit: listPage}
	for {
		list, err := hub.meta.Resource(k.GVR()).Namespace(ns).List(ctx, opts)
		if err != nil {
			return nil, err
		}
		out = append(out, list.Items...)
		if list.Continue == "" {
			return out, nil
		}
		opts.Continue = list.Continue
	}
}

// noteDenied logs the kinds the hub identity may not list, once each time
// that list changes.
func (c *Controller) noteDenied(denied []string) {
	c.mu.Lock()
	prev := c.denied
	c.denied = denied
	c.mu.Unlock()
	if slices.Equal(prev, denied) {
		return
	}
	if len(denied) == 0 {
		c.log.Info("propagation: every kind the hub serves is readable")
		return
	}
	c.log.Info("propagation: kinds skipped, Meridian's identity in the hub may not list them (to propagate one, grant get, list, watch, create, patch, update, delete on it in the hub and the members)",
		"count", len(denied), "kinds", strings.Join(denied, ","))
}
