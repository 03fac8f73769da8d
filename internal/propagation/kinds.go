package propagation

import (
	"slices"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// Kind is a resource that can hold templates: every namespaced resource the
// hub serves (CRDs included, found by discovery at run time) that can be
// listed, read, patched, created and deleted, plus Namespace.
type Kind struct {
	GVK        schema.GroupVersionKind
	Resource   string
	Namespaced bool
}

// GVR is the kind's resource in the hub.
func (k Kind) GVR() schema.GroupVersionResource { return k.GVK.GroupVersion().WithResource(k.Resource) }

// Name is how logs, refs and errors spell the kind: Kind for the core group,
// Kind.group otherwise (StatefulSet.apps, Widget.example.com).
func (k Kind) Name() string { return kindName(k.GVK.GroupKind()) }

func kindName(gk schema.GroupKind) string {
	if gk.Group == "" {
		return gk.Kind
	}
	return gk.Kind + "." + gk.Group
}

// never holds resources that are never templates, even where the verbs
// allow it: objects the cluster itself makes or that only make sense where
// they were made (pods are made by workloads, leases by elections, events
// and endpoints by controllers).
var never = map[schema.GroupResource]bool{
	{Resource: "pods"}:                                          true,
	{Resource: "events"}:                                        true,
	{Group: "events.k8s.io", Resource: "events"}:                true,
	{Resource: "endpoints"}:                                     true,
	{Group: "discovery.k8s.io", Resource: "endpointslices"}:     true,
	{Group: "coordination.k8s.io", Resource: "leases"}:          true,
	{Group: "apps", Resource: "controllerrevisions"}:            true,
	{Resource: "bindings"}:                                      true,
	{Group: "storage.k8s.io", Resource: "csistoragecapacities"}: true,
}

var templateVerbs = []string{"get", "list", "patch", "create", "delete"}

// Kinds picks the template kinds from a discovery answer (preferred
// versions): namespaced resources with every verb propagation uses, no
// subresources, none of the never list, plus Namespace; sorted in apply
// order.
func Kinds(lists []*metav1.APIResourceList) []Kind {
	var out []Kind
	seen := map[schema.GroupKind]bool{}
	for _, l := range lists {
		gv, err := schema.ParseGroupVersion(l.GroupVersion)
		if err != nil {
			continue
		}
		for _, r := range l.APIResources {
			gr := schema.GroupResource{Group: gv.Group, Resource: r.Name}
			isNS := gv.Group == "" && r.Name == "namespaces"
			if strings.Contains(r.Name, "/") || never[gr] || !r.Namespaced && !isNS || r.Kind == "" {
				continue
			}
			if !hasVerbs(r.Verbs, templateVerbs) {
				continue
			}
			gk := schema.GroupKind{Group: gv.Group, Kind: r.Kind}
			if seen[gk] {
				continue
			}
			seen[gk] = true
			out = append(out, Kind{GVK: gv.WithKind(r.Kind), Resource: r.Name, Namespaced: r.Namespaced})
		}
	}
	slices.SortFunc(out, func(a, b Kind) int {
		if d := Order(a.GVK.GroupKind()) - Order(b.GVK.GroupKind()); d != 0 {
			return d
		}
		return strings.Compare(a.Name(), b.Name())
	})
	return out
}

func hasVerbs(have metav1.Verbs, want []string) bool {
	for _, v := range want {
		if !slices.Contains(have, v) {
			return false
		}
	}
	return true
}

// Order is a kind's place in the apply order: what others refer to comes
// first (Namespace; quotas and policies; ServiceAccount; ConfigMap and
// Secret; claims; Service), then workloads, then what refers to workloads
// (autoscalers, disruption budgets, ingresses and routes), then everything
// else (custom resources).
func Order(gk schema.GroupKind) int {
	switch gk {
	case schema.GroupKind{Kind: "Namespace"}:
		return 0
	case schema.GroupKind{Kind: "ResourceQuota"}, schema.GroupKind{Kind: "LimitRange"},
		schema.GroupKind{Group: "networking.k8s.io", Kind: "NetworkPolicy"}:
		return 1
	case schema.GroupKind{Kind: "ServiceAccount"}:
		return 2
	case schema.GroupKind{Kind: "ConfigMap"}, schema.GroupKind{Kind: "Secret"}:
		return 3
	case schema.GroupKind{Kind: "PersistentVolumeClaim"}:
		return 4
	case schema.GroupKind{Group: "rbac.authorization.k8s.io", Kind: "Role"},
		schema.GroupKind{Group: "rbac.authorization.k8s.io", Kind: "RoleBinding"}:
		return 5
	case schema.GroupKind{Kind: "Service"}:
		return 6
	case schema.GroupKind{Group: "apps", Kind: "DaemonSet"}, schema.GroupKind{Group: "apps", Kind: "ReplicaSet"},
		schema.GroupKind{Group: "apps", Kind: "Deployment"}, schema.GroupKind{Group: "apps", Kind: "StatefulSet"},
		schema.GroupKind{Kind: "ReplicationController"},
		schema.GroupKind{Group: "batch", Kind: "Job"}, schema.GroupKind{Group: "batch", Kind: "CronJob"}:
		return 7
	case schema.GroupKind{Group: "autoscaling", Kind: "HorizontalPodAutoscaler"},
		schema.GroupKind{Group: "policy", Kind: "PodDisruptionBudget"},
		schema.GroupKind{Group: "networking.k8s.io", Kind: "Ingress"},
		schema.GroupKind{Group: "gateway.networking.k8s.io", Kind: "HTTPRoute"},
		schema.GroupKind{Group: "gateway.networking.k8s.io", Kind: "GRPCRoute"},
		schema.GroupKind{Group: "gateway.networking.k8s.io", Kind: "TLSRoute"}:
		return 8
	}
	return 9
}

// TemplateRef names a template: KIND/NAMESPACE/NAME, KIND spelled as
// Kind.group outside the core group (StatefulSet.apps/shop/db), and
// KIND/NAME for a Namespace. Copies carry it in meridian.io/template.
func TemplateRef(u *unstructured.Unstructured) string {
	gk := u.GroupVersionKind().GroupKind()
	if u.GetNamespace() == "" {
		return kindName(gk) + "/" + u.GetName()
	}
	return kindName(gk) + "/" + u.GetNamespace() + "/" + u.GetName()
}

// legacyRef is the template annotation Meridian wrote on copies before
// kinds carried their group (Deployment/shop/web): still recognised as ours.
func legacyRef(u *unstructured.Unstructured) string {
	// Of the grouped kinds only apps Deployments were propagated then.
	if u.GroupVersionKind().GroupKind() != (schema.GroupKind{Group: "apps", Kind: "Deployment"}) {
		return ""
	}
	return u.GetKind() + "/" + u.GetNamespace() + "/" + u.GetName()
}

// adoptable tells whether a member's namespace is one Meridian made for a
// copy (ensureNamespace), which a Namespace template applied there takes
// over as its copy.
func adoptable(live, t *unstructured.Unstructured) bool {
	a := live.GetAnnotations()
	return t.GroupVersionKind().GroupKind() == schema.GroupKind{Kind: "Namespace"} && live.GetLabels()[LabelPropagated] == "true" &&
		a[AnnoTemplate] == "" && a[AnnoNamespaceFor] != ""
}

// owned tells whether a member's object is the copy of template t: our
// label and t's reference (or its pre-group spelling).
func owned(live, t *unstructured.Unstructured) bool {
	if live.GetLabels()[LabelPropagated] != "true" {
		return false
	}
	ref := live.GetAnnotations()[AnnoTemplate]
	return ref == TemplateRef(t) || ref != "" && ref == legacyRef(t)
}
