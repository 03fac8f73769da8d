package join

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/meridian-gslb/meridian/internal/kube"
)

// Clusters are the operator's clients of the hub and the member.
type Clusters struct {
	Hub    kubernetes.Interface
	Member kubernetes.Interface
	// Contents lists what namespace ns of the member holds, as
	// (Unjoin; see NamespaceContents). Nil: a namespace Join
	// made is never deleted.
	Contents func(ctx context.Context, ns string) ([]Item, error)
}

// Action is one change (or non-change) Join or Unjoin made.
type Action struct {
	Cluster string // "hub" or "member"
	Verb    string // created, updated, unchanged, kept, deleted, left (or "would …" in a dry run)
	Object  string // Kind/name or Kind/namespace/name
	Note    string
}

func (a Action) String() string {
	s := fmt.Sprintf("%-7s %-10s %s", a.Cluster, a.Verb, a.Object)
	if a.Note != "" {
		s += ": " + a.Note
	}
	return s
}

// Result is what Join did.
type Result struct {
	Actions      []Action
	TokenExpires time.Time     // as granted by the member's apiserver
	TokenAsked   time.Duration // Options.TokenExpiry
}

// Shortened reports whether the apiserver granted the token less than asked
// (its --service-account-max-token-expiration), by more than a minute.
func (r Result) Shortened(minted time.Time) bool {
	return r.TokenExpires.Sub(minted) < r.TokenAsked-time.Minute
}

// RefusedError lists the objects Join will not touch because they are not
// its own. Nothing was changed when it is returned.
type RefusedError struct{ Objects []string }

func (e *RefusedError) Error() string {
	return "refused, nothing was changed: " + strings.Join(e.Objects, "; ") +
		" (remove or rename them, or join under another --name or --namespace)"
}

// Join makes the plan's objects (rules 1 and 2 of the package doc), mints
// the token and writes the hub Secret. The endpoint is the member's as the
// hub reaches it. Before changing anything it checks every planned name in
// both clusters and returns a *RefusedError when one is taken.
func Join(ctx context.Context, c Clusters, p *Plan, ep Endpoint) (Result, error) {
	j := &joiner{c: c, p: p, name: p.Options.Name, res: Result{TokenAsked: p.Options.TokenExpiry}}
	if err := preflight(ctx, c, p); err != nil {
		return j.res, err
	}
	if err := j.member(ctx); err != nil {
		return j.res, fmt.Errorf("member: %w", err)
	}
	token, err := j.mint(ctx)
	if err != nil {
		return j.res, fmt.Errorf("member: %w", err)
	}
	if err := j.hub(ctx, ep, token); err != nil {
		return j.res, err
	}
	return j.res, nil
}

// joiner is one run of Join.
type joiner struct {
	c    Clusters
	p    *Plan
	name string
	res  Result
}

func (j *joiner) add(cluster, verb, obj, note string) {
	j.res.Actions = append(j.res.Actions, Action{Cluster: cluster, Verb: verb, Object: obj, Note: note})
}

// member makes the namespace (unless it exists), the ServiceAccount and
// the grants, and deletes the grants no longer planned.
func (j *joiner) member(ctx context.Context) error {
	p := j.p
	// The namespace: used as it is when it exists (never labelled, so never deleted).
	nsObj := "Namespace/" + p.Namespace.Name
	ns, err := j.c.Member.CoreV1().Namespaces().Get(ctx, p.Namespace.Name, metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
		if _, err := j.c.Member.CoreV1().Namespaces().Create(ctx, p.Namespace, metav1.CreateOptions{}); err != nil {
			return fmt.Errorf("create %s: %w", nsObj, err)
		}
		j.add("member", "created", nsObj, "")
	case err != nil:
		return fmt.Errorf("get %s: %w", nsObj, err)
	case Owned(ns, j.name):
		j.add("member", "unchanged", nsObj, "")
	default:
		j.add("member", "kept", nsObj, "it existed: used as it is, and unjoin leaves it")
	}

	sas := j.c.Member.CoreV1().ServiceAccounts(p.ServiceAccount.Namespace)
	verb, err := ensure(ctx, j.name, p.ServiceAccount, sas.Get, sas.Create, sas.Update, func(have, want *corev1.ServiceAccount) bool { return false })
	if err != nil {
		return err
	}
	j.add("member", verb, objName("ServiceAccount", p.ServiceAccount), "")

	crs := j.c.Member.RbacV1().ClusterRoles()
	for _, g := range p.Grants {
		verb, err := ensure(ctx, j.name, g.Role, crs.Get, crs.Create, crs.Update, func(have, want *rbacv1.ClusterRole) bool {
			same := equalRules(have.Rules, want.Rules) && have.AggregationRule == nil
			have.Rules, have.AggregationRule = want.Rules, nil
			return !same
		})
		if err != nil {
			return err
		}
		j.add("member", verb, objName("ClusterRole", g.Role), ruleNote(g))
		if verb, err = ensureBinding(ctx, j.c.Member, j.name, g.Binding); err != nil {
			return err
		}
		j.add("member", verb, objName("ClusterRoleBinding", g.Binding), "")
	}
	stale, err := deleteStale(ctx, j.c.Member, p)
	j.res.Actions = append(j.res.Actions, stale...)
	return err
}

// mint asks the member's TokenRequest API for a token of the
// ServiceAccount; the apiserver may grant a shorter lifetime than asked.
func (j *joiner) mint(ctx context.Context) (string, error) {
	sa := j.p.ServiceAccount
	secs := int64(j.p.Options.TokenExpiry / time.Second)
	tr, err := j.c.Member.CoreV1().ServiceAccounts(sa.Namespace).CreateToken(ctx, sa.Name, &authenticationv1.TokenRequest{
		Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: &secs}}, metav1.CreateOptions{})
	if err != nil {
		return "", fmt.Errorf("token request for ServiceAccount %s/%s: %w", sa.Namespace, sa.Name, err)
	}
	if tr.Status.Token == "" {
		return "", fmt.Errorf("token request for ServiceAccount %s/%s: the apiserver returned no token", sa.Namespace, sa.Name)
	}
	j.res.TokenExpires = tr.Status.ExpirationTimestamp.Time
	j.add("member", "minted", "token for ServiceAccount/"+sa.Namespace+"/"+sa.Name, "expires "+j.res.TokenExpires.UTC().Format(time.RFC3339))
	return tr.Status.Token, nil
}

// hub writes the member Secret holding the inline kubeconfig, once the
// hub's own check accepts it.
func (j *joiner) hub(ctx context.Context, ep Endpoint, token string) error {
	kc, err := Kubeconfig(j.name, ep, token)
	if err != nil {
		return err
	}
	secret, err := j.p.MemberSecret(kc)
	if err != nil {
		return err
	}
	hs := j.c.Hub.CoreV1().Secrets(secret.Namespace)
	verb, err := ensure(ctx, j.name, secret, hs.Get, hs.Create, hs.Update, func(have, want *corev1.Secret) bool {
		have.Data, have.Type = want.Data, want.Type
		if have.Annotations == nil {
			have.Annotations = map[string]string{}
		}
		maps.Copy(have.Annotations, want.Annotations)
		return true // a new token every time
	})
	if err != nil {
		return fmt.Errorf("hub: %w", err)
	}
	j.add("hub", verb, objName("Secret", secret), "registers cluster "+j.name+" (region "+j.p.Options.Region+") with "+ep.Server)
	return nil
}

// preflight checks every name Join would write: the hub namespace exists,
// no object of a planned name is someone else's, and no other Secret
// registers the cluster already.
func preflight(ctx context.Context, c Clusters, p *Plan) error {
	name := p.Options.Name
	hubNS := p.Secret.Namespace
	if _, err := c.Hub.CoreV1().Namespaces().Get(ctx, hubNS, metav1.GetOptions{}); err != nil {
		if apierrors.IsNotFound(err) {
			return fmt.Errorf("hub: namespace %q does not exist: --hub-namespace must be the hub Meridian's kubernetes.member_secrets namespace", hubNS)
		}
		return fmt.Errorf("hub: get Namespace/%s: %w", hubNS, err)
	}
	var refused []string
	check := func(cluster, obj string, o metav1.Object, err error) error {
		switch {
		case apierrors.IsNotFound(err):
			return nil
		case err != nil:
			return fmt.Errorf("%s: get %s: %w", cluster, obj, err)
		case !Owned(o, name):
			refused = append(refused, fmt.Sprintf("%s %s exists and %s", cluster, obj, ownerNote(o, name)))
		}
		return nil
	}
	s, err := c.Hub.CoreV1().Secrets(hubNS).Get(ctx, p.Secret.Name, metav1.GetOptions{})
	if err := check("hub", objName("Secret", p.Secret), s, err); err != nil {
		return err
	}
	others, err := c.Hub.CoreV1().Secrets(hubNS).List(ctx, metav1.ListOptions{LabelSelector: kube.LabelMember + "=true"})
	if err != nil {
		return fmt.Errorf("hub: list Secrets in %s: %w", hubNS, err)
	}
	for i := range others.Items {
		o := &others.Items[i]
		if o.Name != p.Secret.Name && registers(o) == name {
			refused = append(refused, fmt.Sprintf("hub Secret/%s/%s registers cluster %q already", hubNS, o.Name, name))
		}
	}
	sa, err := c.Member.CoreV1().ServiceAccounts(p.ServiceAccount.Namespace).Get(ctx, ServiceAccount, metav1.GetOptions{})
	if err := check("member", objName("ServiceAccount", p.ServiceAccount), sa, err); err != nil {
		return err
	}
	for _, g := range p.Grants {
		cr, err := c.Member.RbacV1().ClusterRoles().Get(ctx, g.Role.Name, metav1.GetOptions{})
		if err := check("member", objName("ClusterRole", g.Role), cr, err); err != nil {
			return err
		}
		crb, err := c.Member.RbacV1().ClusterRoleBindings().Get(ctx, g.Binding.Name, metav1.GetOptions{})
		if err := check("member", objName("ClusterRoleBinding", g.Binding), crb, err); err != nil {
			return err
		}
	}
	if len(refused) > 0 {
		return &RefusedError{Objects: refused}
	}
	return nil
}

// ensure creates want, or updates the existing object of its name when it
// is name's (fix changes have towards want and reports whether it did; the
// labels are set here). It returns the verb done.
func ensure[T interface {
	metav1.Object
	comparable
}](ctx context.Context, name string, want T,
	get func(context.Context, string, metav1.GetOptions) (T, error),
	create func(context.Context, T, metav1.CreateOptions) (T, error),
	update func(context.Context, T, metav1.UpdateOptions) (T, error),
	fix func(have, want T) bool,
) (string, error) {
	obj := want.GetName()
	if want.GetNamespace() != "" {
		obj = want.GetNamespace() + "/" + obj
	}
	have, err := get(ctx, want.GetName(), metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		if _, err := create(ctx, want, metav1.CreateOptions{}); err != nil {
			return "", fmt.Errorf("create %s: %w", obj, err)
		}
		return "created", nil
	}
	if err != nil {
		return "", fmt.Errorf("get %s: %w", obj, err)
	}
	if !Owned(have, name) {
		return "", &RefusedError{Objects: []string{obj + " " + ownerNote(have, name)}}
	}
	changed := fix(have, want)
	labels := have.GetLabels()
	for k, v := range want.GetLabels() {
		if labels[k] != v {
			labels[k], changed = v, true
		}
	}
	have.SetLabels(labels)
	if !changed {
		return "unchanged", nil
	}
	if _, err := update(ctx, have, metav1.UpdateOptions{}); err != nil {
		return "", fmt.Errorf("update %s: %w", obj, err)
	}
	return "updated", nil
}

// ensureBinding is ensure for a ClusterRoleBinding: its roleRef cannot be
// changed, so a binding to another role is deleted and made again.
func ensureBinding(ctx context.Context, cs kubernetes.Interface, name string, want *rbacv1.ClusterRoleBinding) (string, error) {
	crbs := cs.RbacV1().ClusterRoleBindings()
	have, err := crbs.Get(ctx, want.Name, metav1.GetOptions{})
	if err == nil && Owned(have, name) && have.RoleRef != want.RoleRef {
		if err := crbs.Delete(ctx, want.Name, metav1.DeleteOptions{}); err != nil {
			return "", fmt.Errorf("delete %s (to change its roleRef): %w", want.Name, err)
		}
	}
	return ensure(ctx, name, want, crbs.Get, crbs.Create, crbs.Update, func(have, want *rbacv1.ClusterRoleBinding) bool {
		same := slices.Equal(have.Subjects, want.Subjects)
		have.Subjects = want.Subjects
		return !same
	})
}

// deleteStale deletes what Join made for the member before and the plan no
// longer has: a component dropped from --components, a ServiceAccount in
// another --namespace.
func deleteStale(ctx context.Context, cs kubernetes.Interface, p *Plan) ([]Action, error) {
	var acts []Action
	sel := metav1.ListOptions{LabelSelector: Selector(p.Options.Name)}
	planned := map[string]bool{}
	for _, g := range p.Grants {
		planned[g.Role.Name] = true
	}
	crbs, err := cs.RbacV1().ClusterRoleBindings().List(ctx, sel)
	if err != nil {
		return acts, fmt.Errorf("list ClusterRoleBindings: %w", err)
	}
	for _, o := range crbs.Items {
		if !planned[o.Name] {
			if err := deleteIgnoringGone(ctx, cs.RbacV1().ClusterRoleBindings().Delete, o.Name); err != nil {
				return acts, fmt.Errorf("delete ClusterRoleBinding/%s: %w", o.Name, err)
			}
			acts = append(acts, Action{Cluster: "member", Verb: "deleted", Object: "ClusterRoleBinding/" + o.Name, Note: "no longer chosen"})
		}
	}
	crs, err := cs.RbacV1().ClusterRoles().List(ctx, sel)
	if err != nil {
		return acts, fmt.Errorf("list ClusterRoles: %w", err)
	}
	for _, o := range crs.Items {
		if !planned[o.Name] {
			if err := deleteIgnoringGone(ctx, cs.RbacV1().ClusterRoles().Delete, o.Name); err != nil {
				return acts, fmt.Errorf("delete ClusterRole/%s: %w", o.Name, err)
			}
			acts = append(acts, Action{Cluster: "member", Verb: "deleted", Object: "ClusterRole/" + o.Name, Note: "no longer chosen"})
		}
	}
	sas, err := cs.CoreV1().ServiceAccounts("").List(ctx, sel)
	if err != nil {
		return acts, fmt.Errorf("list ServiceAccounts: %w", err)
	}
	for _, o := range sas.Items {
		if o.Namespace != p.ServiceAccount.Namespace {
			if err := deleteIgnoringGone(ctx, cs.CoreV1().ServiceAccounts(o.Namespace).Delete, o.Name); err != nil {
				return acts, fmt.Errorf("delete ServiceAccount/%s/%s: %w", o.Namespace, o.Name, err)
			}
			acts = append(acts, Action{Cluster: "member", Verb: "deleted", Object: "ServiceAccount/" + o.Namespace + "/" + o.Name, Note: "--namespace changed"})
		}
	}
	return acts, nil
}

func deleteIgnoringGone(ctx context.Context, del func(context.Context, string, metav1.DeleteOptions) error, name string) error {
	if err := del(ctx, name, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
		return err
	}
	return nil
}

func objName(kind string, o metav1.Object) string {
	if o.GetNamespace() == "" {
		return kind + "/" + o.GetName()
	}
	return kind + "/" + o.GetNamespace() + "/" + o.GetName()
}

func ruleNote(g Grant) string {
	if g.Component == "" {
		return "the base's member rules"
	}
	return "component " + g.Component
}

func equalRules(a, b []rbacv1.PolicyRule) bool {
	return slices.EqualFunc(a, b, func(x, y rbacv1.PolicyRule) bool {
		return slices.Equal(x.APIGroups, y.APIGroups) && slices.Equal(x.Resources, y.Resources) && slices.Equal(x.Verbs, y.Verbs) &&
			slices.Equal(x.ResourceNames, y.ResourceNames) && slices.Equal(x.NonResourceURLs, y.NonResourceURLs)
	})
}

// registers is the cluster a member Secret registers.
func registers(s *corev1.Secret) string {
	if n := s.Annotations[kube.AnnoCluster]; n != "" {
		return n
	}
	return s.Name
}
