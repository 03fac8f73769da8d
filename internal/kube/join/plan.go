package join

import (
	"errors"
	"fmt"
	"net/url"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation"
	"sigs.k8s.io/yaml"

	"github.com/meridian-gslb/meridian/internal/kube"
	"github.com/meridian-gslb/meridian/internal/kube/grants"
)

// Names, labels and defaults.
const (
	DefaultNamespace   = "meridian"     // the member namespace of the ServiceAccount, and the hub's member_secrets namespace
	ServiceAccount     = "meridian-hub" // the hub's identity in the member; also the base ClusterRole and binding
	DefaultTokenExpiry = 8760 * time.Hour
	MinTokenExpiry     = 10 * time.Minute // the TokenRequest API's minimum
	LabelManagedBy     = "app.kubernetes.io/managed-by"
	ManagedBy          = "meridian-cluster-join"
	LabelJoinedAs      = "meridian.io/joined-as" // the member's name
	SecretPrefix       = "member-"               // the hub Secret is member-NAME
	tokenPlaceholder   = "MINTED-BY-JOIN"
)

// Options are what `meridian cluster join` is asked for. Zero values take
// the defaults (Normalize).
type Options struct {
	Name         string        // the member's cluster name in the hub (required)
	Region       string        // its region (required)
	Namespace    string        // member namespace of the ServiceAccount (default meridian)
	HubNamespace string        // the hub's kubernetes.member_secrets namespace (default meridian)
	Components   []string      // opt-in components (grants.Components), in any order
	Server       string        // the member's API URL as the hub reaches it (default: the operator's context's)
	TokenExpiry  time.Duration // asked lifetime of the token (default 8760h, at least 10m)
}

// Normalize fills in the defaults and checks every field, naming the flag
// and what is allowed.
func (o Options) Normalize() (Options, error) {
	if o.Namespace == "" {
		o.Namespace = DefaultNamespace
	}
	if o.HubNamespace == "" {
		o.HubNamespace = DefaultNamespace
	}
	if o.TokenExpiry == 0 {
		o.TokenExpiry = DefaultTokenExpiry
	}
	var errs []error
	if err := CheckName(o.Name); err != nil {
		errs = append(errs, err)
	}
	switch {
	case o.Region == "":
		errs = append(errs, errors.New("--region is required: the member's region, e.g. us-west (annotation meridian.io/region of the Secret)"))
	case strings.ContainsAny(o.Region, " \t\n"):
		errs = append(errs, fmt.Errorf("--region %q: contains white space (allowed: a region name such as us-west)", o.Region))
	}
	for _, f := range []struct{ flag, v string }{{"--namespace", o.Namespace}, {"--hub-namespace", o.HubNamespace}} {
		if msgs := validation.IsDNS1123Label(f.v); len(msgs) > 0 {
			errs = append(errs, fmt.Errorf("%s %q: %s (allowed: a namespace name)", f.flag, f.v, strings.Join(msgs, "; ")))
		}
	}
	var comps []string
	for _, c := range o.Components {
		c = strings.TrimSpace(c)
		if _, err := grants.Lookup(c); err != nil {
			errs = append(errs, fmt.Errorf("--components: %w", err))
			continue
		}
		if !slices.Contains(comps, c) {
			comps = append(comps, c)
		}
	}
	o.Components = nil
	for _, c := range grants.ComponentNames() { // grants' order, whatever the flag's
		if slices.Contains(comps, c) {
			o.Components = append(o.Components, c)
		}
	}
	if o.Server != "" {
		if u, err := url.Parse(o.Server); err != nil || u.Scheme != "https" || u.Host == "" {
			errs = append(errs, fmt.Errorf("--server %q: not an https:// URL (allowed: https://HOST[:PORT][/PATH], the member's API server as the hub reaches it)", o.Server))
		}
	}
	if o.TokenExpiry < MinTokenExpiry {
		errs = append(errs, fmt.Errorf("--token-expiry %s: shorter than %s, the TokenRequest API's minimum (default %s)", o.TokenExpiry, MinTokenExpiry, DefaultTokenExpiry))
	}
	return o, errors.Join(errs...)
}

// CheckName checks a member name (--name).
func CheckName(name string) error {
	if name == "" {
		return errors.New("--name is required: the member's cluster name in the hub, e.g. west")
	}
	if msgs := validation.IsDNS1123Label(name); len(msgs) > 0 {
		return fmt.Errorf("--name %q: %s (allowed: lower-case letters, digits and '-', at most 63 characters; it names Secret %s%s)", name, strings.Join(msgs, "; "), SecretPrefix, name)
	}
	return nil
}

// Labels are the labels of every object Join makes for member name.
func Labels(name string) map[string]string {
	return map[string]string{LabelManagedBy: ManagedBy, LabelJoinedAs: name}
}

// Selector selects the objects Join made for member name.
func Selector(name string) string {
	return LabelManagedBy + "=" + ManagedBy + "," + LabelJoinedAs + "=" + name
}

// Owned reports whether Join made the object for member name.
func Owned(o metav1.Object, name string) bool {
	l := o.GetLabels()
	return l[LabelManagedBy] == ManagedBy && l[LabelJoinedAs] == name
}

// ownerNote says why an object of a planned name is not name's.
func ownerNote(o metav1.Object, name string) string {
	l := o.GetLabels()
	if l[LabelManagedBy] == ManagedBy && l[LabelJoinedAs] != "" {
		return fmt.Sprintf("it was made by `meridian cluster join` for member %q, not %q", l[LabelJoinedAs], name)
	}
	return fmt.Sprintf("it was not made by `meridian cluster join --name %s` (no labels %s)", name, Selector(name))
}

// Grant is one ClusterRole and the binding of the ServiceAccount to it.
type Grant struct {
	Component string // "" for the base
	Role      *rbacv1.ClusterRole
	Binding   *rbacv1.ClusterRoleBinding
}

// Plan is every object Join makes, before the token exists.
type Plan struct {
	Options        Options
	Namespace      *corev1.Namespace
	ServiceAccount *corev1.ServiceAccount
	Grants         []Grant
	Secret         *corev1.Secret // in the hub; Data is set by MemberSecret
}

// RoleName is the ClusterRole (and binding) of a component; "" is the base.
func RoleName(component string) string {
	if component == "" {
		return ServiceAccount
	}
	return ServiceAccount + "-" + component
}

// RoleNames are the names of every ClusterRole Join can make.
func RoleNames() []string {
	out := []string{RoleName("")}
	for _, c := range grants.ComponentNames() {
		out = append(out, RoleName(c))
	}
	return out
}

// NewPlan returns the objects for o (normalized first). It is pure.
func NewPlan(o Options) (*Plan, error) {
	o, err := o.Normalize()
	if err != nil {
		return nil, err
	}
	meta := func(ns, name string) metav1.ObjectMeta {
		return metav1.ObjectMeta{Namespace: ns, Name: name, Labels: Labels(o.Name)}
	}
	p := &Plan{
		Options:        o,
		Namespace:      &corev1.Namespace{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Namespace"}, ObjectMeta: meta("", o.Namespace)},
		ServiceAccount: &corev1.ServiceAccount{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "ServiceAccount"}, ObjectMeta: meta(o.Namespace, ServiceAccount)},
	}
	grant := func(component string, rules []rbacv1.PolicyRule) Grant {
		name := RoleName(component)
		return Grant{
			Component: component,
			Role: &rbacv1.ClusterRole{TypeMeta: metav1.TypeMeta{APIVersion: rbacv1.SchemeGroupVersion.String(), Kind: "ClusterRole"},
				ObjectMeta: meta("", name), Rules: rules},
			Binding: &rbacv1.ClusterRoleBinding{TypeMeta: metav1.TypeMeta{APIVersion: rbacv1.SchemeGroupVersion.String(), Kind: "ClusterRoleBinding"},
				ObjectMeta: meta("", name),
				RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: name},
				Subjects:   []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Namespace: o.Namespace, Name: ServiceAccount}}},
		}
	}
	p.Grants = append(p.Grants, grant("", grants.Member()))
	for _, name := range o.Components {
		c, _ := grants.Lookup(name) // checked by Normalize
		p.Grants = append(p.Grants, grant(c.Name, c.Rules()))
	}
	labels := Labels(o.Name)
	labels[kube.LabelMember] = "true"
	p.Secret = &corev1.Secret{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Secret"},
		ObjectMeta: metav1.ObjectMeta{Namespace: o.HubNamespace, Name: SecretPrefix + o.Name, Labels: labels,
			Annotations: map[string]string{kube.AnnoCluster: o.Name, kube.AnnoRegion: o.Region}},
		Type: corev1.SecretTypeOpaque}
	return p, nil
}

// MemberSecret returns the hub Secret holding kubeconfig, checked exactly
// as the hub checks member Secrets (kube.MemberFromSecret): a Secret the hub
// would refuse is never written.
func (p *Plan) MemberSecret(kubeconfig []byte) (*corev1.Secret, error) {
	s := p.Secret.DeepCopy()
	s.Data = map[string][]byte{kube.SecretKubeconfig: kubeconfig}
	m, err := kube.MemberFromSecret(s)
	if err != nil {
		return nil, fmt.Errorf("the member Secret would be refused by the hub, so it is not written: %w", err)
	}
	if m.Cluster.Name != p.Options.Name || m.Cluster.Region != p.Options.Region {
		return nil, fmt.Errorf("the member Secret registers cluster %q in region %q, not %q in %q", m.Cluster.Name, m.Cluster.Region, p.Options.Name, p.Options.Region)
	}
	return s, nil
}

// Manifests renders the plan as multi-document YAML, for --dry-run: the
// member's objects, then the hub Secret with its kubeconfig, whose token is
// a placeholder (a dry run mints none). It is pure.
func (p *Plan) Manifests(ep Endpoint) ([]byte, error) {
	kc, err := Kubeconfig(p.Options.Name, ep, tokenPlaceholder)
	if err != nil {
		return nil, err
	}
	secret, err := p.MemberSecret(kc)
	if err != nil {
		return nil, err
	}
	secret.StringData = map[string]string{kube.SecretKubeconfig: string(kc)}
	secret.Data = nil
	objs := []any{p.Namespace, p.ServiceAccount}
	for _, g := range p.Grants {
		objs = append(objs, g.Role, g.Binding)
	}
	var b strings.Builder
	for i, o := range objs {
		y, err := yaml.Marshal(o)
		if err != nil {
			return nil, fmt.Errorf("render: %w", err)
		}
		if i == 0 {
			b.WriteString("# in the member cluster\n")
		}
		b.Write(y)
		b.WriteString("---\n")
	}
	y, err := yaml.Marshal(secret)
	if err != nil {
		return nil, fmt.Errorf("render: %w", err)
	}
	b.WriteString("# in the hub cluster; the token is minted by join\n")
	b.Write(y)
	return []byte(b.String()), nil
}
