// Package grants is the one list of the RBAC rules Meridian's identity is
// granted in a cluster. The manifests carry the same rules as YAML
// (deploy/kustomize/base/rbac.yaml and components/*/rbac.yaml, and the Helm
// chart, which deploy/helm's test compares with kustomize);
// deploy/kustomize's tests render them and compare them with these lists,
// so the YAML and this package cannot drift apart. `meridian cluster join`
// grants them to the hub's service account in a member cluster.
//
// Changing a rule is a decision: change it here, in the YAML (with the
// comment saying why) and in deploy/README.md's tables.
package grants

import (
	"fmt"
	"slices"
	"strings"

	rbacv1 "k8s.io/api/rbac/v1"
)

// Component is an opt-in set of rights (a kustomize component under
// deploy/kustomize/components/NAME, one ClusterRole and its binding).
type Component struct {
	Name        string // the component's directory and --components value, e.g. status-annotation
	ClusterRole string // the ClusterRole the component's manifests name, e.g. meridian-status
}

// The opt-in components, in the order --components lists them.
var (
	StatusAnnotation = Component{Name: "status-annotation", ClusterRole: "meridian-status"}
	Propagation      = Component{Name: "propagation", ClusterRole: "meridian-propagation"}
)

// Components returns every opt-in component.
func Components() []Component { return []Component{StatusAnnotation, Propagation} }

// ComponentNames returns the components' names, for messages.
func ComponentNames() []string {
	var out []string
	for _, c := range Components() {
		out = append(out, c.Name)
	}
	return out
}

// Lookup returns the component of that name.
func Lookup(name string) (Component, error) {
	for _, c := range Components() {
		if c.Name == name {
			return c, nil
		}
	}
	return Component{}, fmt.Errorf("unknown component %q (allowed: %s)", name, strings.Join(ComponentNames(), ", "))
}

func rule(group string, resources []string, verbs ...string) rbacv1.PolicyRule {
	return rbacv1.PolicyRule{APIGroups: []string{group}, Resources: resources, Verbs: verbs}
}

// Member is ClusterRole meridian of the base: what Meridian needs in every
// cluster it watches. It reads the sources (Services, Ingresses, Gateway
// API routes and their Gateways, ExternalDNS's DNSEndpoints, the MCS
// API's ServiceExports and ServiceImports, and the EndpointSlices of
// capacity-aware services) and reports with Events; it writes no tenant
// object.
func Member() []rbacv1.PolicyRule {
	return []rbacv1.PolicyRule{
		rule("", []string{"services"}, "get", "list", "watch"),
		rule("networking.k8s.io", []string{"ingresses"}, "get", "list", "watch"),
		rule("gateway.networking.k8s.io", []string{"httproutes", "grpcroutes", "tlsroutes", "gateways"}, "get", "list", "watch"),
		rule("discovery.k8s.io", []string{"endpointslices"}, "list", "watch"),
		rule("externaldns.k8s.io", []string{"dnsendpoints"}, "get", "list", "watch"),
		rule("multicluster.x-k8s.io", []string{"serviceexports", "serviceimports"}, "get", "list", "watch"),
		rule("", []string{"events"}, "create"),
	}
}

// Hub is Role meridian of the base, in Meridian's own namespace of the
// cluster it runs in: the writer election Lease and the member Secrets.
// `meridian cluster join` does not grant it: a member needs none of it.
func Hub() []rbacv1.PolicyRule {
	return []rbacv1.PolicyRule{
		rule("coordination.k8s.io", []string{"leases"}, "get", "create", "update"),
		rule("", []string{"secrets"}, "get", "list", "watch"),
	}
}

// propagationVerbs are the verbs propagation needs on every kind it
// propagates.
var propagationVerbs = []string{"get", "list", "watch", "create", "patch", "update", "delete"}

// Rules returns the rules of component c.
func (c Component) Rules() []rbacv1.PolicyRule {
	switch c.Name {
	case StatusAnnotation.Name:
		// Patch, only to write the meridian.io/status annotation (and, on
		// a ServiceExport's status, the meridian.io/Served condition);
		// RBAC cannot narrow it to one annotation, hence opt-in.
		return []rbacv1.PolicyRule{
			rule("", []string{"services"}, "patch"),
			rule("networking.k8s.io", []string{"ingresses"}, "patch"),
			rule("gateway.networking.k8s.io", []string{"httproutes", "grpcroutes", "tlsroutes"}, "patch"),
			rule("externaldns.k8s.io", []string{"dnsendpoints"}, "patch"),
			rule("multicluster.x-k8s.io", []string{"serviceexports", "serviceexports/status"}, "patch"),
		}
	case Propagation.Name:
		v := func() []string { return slices.Clone(propagationVerbs) }
		return []rbacv1.PolicyRule{
			rule("", []string{"configmaps", "secrets", "services", "serviceaccounts", "persistentvolumeclaims"}, v()...),
			rule("apps", []string{"deployments", "statefulsets", "replicasets", "daemonsets"}, v()...),
			rule("batch", []string{"jobs", "cronjobs"}, v()...),
			rule("autoscaling", []string{"horizontalpodautoscalers"}, v()...),
			rule("policy", []string{"poddisruptionbudgets"}, v()...),
			rule("networking.k8s.io", []string{"ingresses", "networkpolicies"}, v()...),
			rule("gateway.networking.k8s.io", []string{"httproutes", "grpcroutes", "tlsroutes"}, v()...),
			rule("", []string{"namespaces"}, "get", "list", "watch", "create", "patch"),
			rule("", []string{"nodes", "pods"}, "get", "list"),
		}
	}
	return nil
}

// PropagationVerbs returns the verbs propagation needs on a kind it
// propagates (a CRD granted by hand, say).
func PropagationVerbs() []string { return slices.Clone(propagationVerbs) }
