package join

import (
	"context"
	"fmt"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/dynamic"
)

// UnjoinOptions are what `meridian cluster unjoin` is asked for.
type UnjoinOptions struct {
	Name         string // the member's name, as given to join (required)
	Namespace    string // member namespace where a foreign ServiceAccount of Join's name is reported (default meridian)
	HubNamespace string // hub namespace where a foreign Secret member-NAME is reported (default meridian)
	DryRun       bool   // report what would be deleted; delete nothing
}

// Item is one object in a namespace (NamespaceContents).
type Item struct {
	Resource string // plural resource, with its group: configmaps, deployments.apps
	Name     string
	Labels   map[string]string
}

// Unjoin deletes every object Join made for the member (rule 3 of the
// package doc): in the member its ClusterRoleBindings, ClusterRoles,
// ServiceAccounts and, when it holds nothing else, its namespace; then the
// hub Secrets. Objects with Join's names that are not Join's for this
// member are left, and reported.
func Unjoin(ctx context.Context, c Clusters, o UnjoinOptions) ([]Action, error) {
	if err := CheckName(o.Name); err != nil {
		return nil, err
	}
	if o.Namespace == "" {
		o.Namespace = DefaultNamespace
	}
	if o.HubNamespace == "" {
		o.HubNamespace = DefaultNamespace
	}
	u := &unjoin{o: o, sel: metav1.ListOptions{LabelSelector: Selector(o.Name)}}
	if err := u.member(ctx, c); err != nil {
		return u.acts, fmt.Errorf("member: %w (the hub Secret is kept, so unjoin can run again)", err)
	}
	if err := u.hub(ctx, c); err != nil {
		return u.acts, fmt.Errorf("hub: %w", err)
	}
	return u.acts, nil
}

type unjoin struct {
	o    UnjoinOptions
	sel  metav1.ListOptions
	acts []Action
}

func (u *unjoin) add(cluster, verb, obj, note string) {
	if u.o.DryRun && verb == "deleted" {
		verb = "would delete"
	}
	u.acts = append(u.acts, Action{Cluster: cluster, Verb: verb, Object: obj, Note: note})
}

// del deletes (unless a dry run) and records it.
func (u *unjoin) del(ctx context.Context, cluster, obj string, del func(context.Context, string, metav1.DeleteOptions) error, name, note string) error {
	if !u.o.DryRun {
		if err := deleteIgnoringGone(ctx, del, name); err != nil {
			return fmt.Errorf("delete %s: %w", obj, err)
		}
	}
	u.add(cluster, "deleted", obj, note)
	return nil
}

// leftIfForeign reports an object of Join's name that is not Join's.
func (u *unjoin) leftIfForeign(cluster, obj string, o metav1.Object, err error) error {
	switch {
	case apierrors.IsNotFound(err):
		return nil
	case err != nil:
		return fmt.Errorf("get %s: %w", obj, err)
	case !Owned(o, u.o.Name):
		u.add(cluster, "left", obj, ownerNote(o, u.o.Name))
	}
	return nil
}

func (u *unjoin) member(ctx context.Context, c Clusters) error {
	rbac := c.Member.RbacV1()
	// The rights go first, then the identity (deleting it revokes every
	// token minted for it), then the namespace.
	crbs, err := rbac.ClusterRoleBindings().List(ctx, u.sel)
	if err != nil {
		return fmt.Errorf("list ClusterRoleBindings: %w", err)
	}
	for _, o := range crbs.Items {
		if err := u.del(ctx, "member", "ClusterRoleBinding/"+o.Name, rbac.ClusterRoleBindings().Delete, o.Name, ""); err != nil {
			return err
		}
	}
	crs, err := rbac.ClusterRoles().List(ctx, u.sel)
	if err != nil {
		return fmt.Errorf("list ClusterRoles: %w", err)
	}
	for _, o := range crs.Items {
		if err := u.del(ctx, "member", "ClusterRole/"+o.Name, rbac.ClusterRoles().Delete, o.Name, ""); err != nil {
			return err
		}
	}
	sas, err := c.Member.CoreV1().ServiceAccounts("").List(ctx, u.sel)
	if err != nil {
		return fmt.Errorf("list ServiceAccounts: %w", err)
	}
	for _, o := range sas.Items {
		if err := u.del(ctx, "member", "ServiceAccount/"+o.Namespace+"/"+o.Name, c.Member.CoreV1().ServiceAccounts(o.Namespace).Delete, o.Name, "every token minted for it stops working"); err != nil {
			return err
		}
	}
	nss, err := c.Member.CoreV1().Namespaces().List(ctx, u.sel)
	if err != nil {
		return fmt.Errorf("list Namespaces: %w", err)
	}
	if err := u.namespaces(ctx, c, nss.Items); err != nil {
		return err
	}
	return u.foreignNames(ctx, c)
}

// namespaces deletes the namespaces Join made that hold nothing else.
func (u *unjoin) namespaces(ctx context.Context, c Clusters, nss []corev1.Namespace) error {
	for _, ns := range nss {
		obj := "Namespace/" + ns.Name
		if ns.DeletionTimestamp != nil {
			u.add("member", "deleted", obj, "already being deleted")
			continue
		}
		foreign, err := u.foreign(ctx, c, ns.Name)
		if err != nil {
			u.add("member", "left", obj, "cannot tell what it holds ("+err.Error()+"); delete it yourself once empty")
			continue
		}
		if len(foreign) > 0 {
			u.add("member", "left", obj, "it holds objects join did not make: "+strings.Join(foreign, ", "))
			continue
		}
		if err := u.del(ctx, "member", obj, c.Member.CoreV1().Namespaces().Delete, ns.Name, "it held nothing else"); err != nil {
			return err
		}
	}
	return nil
}

// foreignNames reports the member's objects of Join's names that are not
// Join's for the member: they are left.
func (u *unjoin) foreignNames(ctx context.Context, c Clusters) error {
	rbac := c.Member.RbacV1()
	for _, n := range RoleNames() {
		cr, err := rbac.ClusterRoles().Get(ctx, n, metav1.GetOptions{})
		if err := u.leftIfForeign("member", "ClusterRole/"+n, cr, err); err != nil {
			return err
		}
		crb, err := rbac.ClusterRoleBindings().Get(ctx, n, metav1.GetOptions{})
		if err := u.leftIfForeign("member", "ClusterRoleBinding/"+n, crb, err); err != nil {
			return err
		}
	}
	sa, err := c.Member.CoreV1().ServiceAccounts(u.o.Namespace).Get(ctx, ServiceAccount, metav1.GetOptions{})
	return u.leftIfForeign("member", "ServiceAccount/"+u.o.Namespace+"/"+ServiceAccount, sa, err)
}

// foreign lists what namespace ns holds that Join did not make for the
// member and Kubernetes does not put in every namespace; at most 5, then a
// count.
func (u *unjoin) foreign(ctx context.Context, c Clusters, ns string) ([]string, error) {
	if c.Contents == nil {
		return nil, fmt.Errorf("no lister of the namespace's objects")
	}
	items, err := c.Contents(ctx, ns)
	if err != nil {
		return nil, err
	}
	var out []string
	for _, it := range items {
		l := metav1.ObjectMeta{Labels: it.Labels}
		if Owned(&l, u.o.Name) || automatic(it) {
			continue
		}
		out = append(out, it.Resource+"/"+it.Name)
	}
	slices.Sort(out)
	if len(out) > 5 {
		out = append(out[:5], fmt.Sprintf("and %d more", len(out)-5))
	}
	return out, nil
}

// automatic reports whether Kubernetes makes it in every namespace.
func automatic(it Item) bool {
	return it.Resource == "serviceaccounts" && it.Name == "default" ||
		it.Resource == "configmaps" && it.Name == "kube-root-ca.crt"
}

func (u *unjoin) hub(ctx context.Context, c Clusters) error {
	secrets, err := c.Hub.CoreV1().Secrets("").List(ctx, u.sel)
	if err != nil {
		return fmt.Errorf("list Secrets: %w", err)
	}
	for _, s := range secrets.Items {
		if err := u.del(ctx, "hub", "Secret/"+s.Namespace+"/"+s.Name, c.Hub.CoreV1().Secrets(s.Namespace).Delete, s.Name, "the hub stops following the member"); err != nil {
			return err
		}
	}
	s, err := c.Hub.CoreV1().Secrets(u.o.HubNamespace).Get(ctx, SecretPrefix+u.o.Name, metav1.GetOptions{})
	return u.leftIfForeign("hub", "Secret/"+u.o.HubNamespace+"/"+SecretPrefix+u.o.Name, s, err)
}

// NamespaceContents lists every object of every namespaced kind the member
// serves (discovery), but Events, in a namespace. An error (a kind that
// cannot be discovered or listed) means the namespace is left.
func NamespaceContents(disc discovery.DiscoveryInterface, dyn dynamic.Interface) func(ctx context.Context, ns string) ([]Item, error) {
	return func(ctx context.Context, ns string) ([]Item, error) {
		lists, err := disc.ServerPreferredNamespacedResources()
		if err != nil {
			return nil, fmt.Errorf("discovery: %w", err)
		}
		var out []Item
		for _, l := range lists {
			gv, err := schema.ParseGroupVersion(l.GroupVersion)
			if err != nil {
				return nil, fmt.Errorf("discovery: %w", err)
			}
			for _, r := range l.APIResources {
				if r.Name == "events" || strings.Contains(r.Name, "/") || !slices.Contains(r.Verbs, "list") {
					continue
				}
				res := r.Name
				if gv.Group != "" {
					res += "." + gv.Group
				}
				list, err := dyn.Resource(gv.WithResource(r.Name)).Namespace(ns).List(ctx, metav1.ListOptions{})
				if err != nil {
					return nil, fmt.Errorf("list %s: %w", res, err)
				}
				for _, it := range list.Items {
					out = append(out, Item{Resource: res, Name: it.GetName(), Labels: it.GetLabels()})
				}
			}
		}
		return out, nil
	}
}
