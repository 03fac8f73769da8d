//go:build e2e

package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	authorizationv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/meridian-gslb/meridian/e2e/kubelab"
	"github.com/meridian-gslb/meridian/internal/kube/grants"
	"github.com/meridian-gslb/meridian/internal/kube/join"
)

// The hub Meridian: no member in its file, every member from Secrets.
const joinHubConfig = `
server: {dns: {rrl: {responses_per_second: 1000000}}}
zones:
  - apex: gslb.example.com
    nameservers: [{name: ns1.gslb.example.com, ipv4: [127.0.0.1]}]
kubernetes:
  retry_interval: %[2]s
  connect_timeout: 2s
  member_secrets: {namespace: meridian, kubeconfig: "%[1]s"}
`

// joinRetryInterval is the hub's kubernetes.retry_interval: a joined
// member must be Ready within one.
const joinRetryInterval = time.Second

// clusterCmd runs `meridian cluster ARGS` with the operator's kubeconfig
// (KUBECONFIG, both contexts) and returns its output and error.
func clusterCmd(t *testing.T, kubeconfig string, args ...string) (string, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, meridianBin, append([]string{"cluster"}, args...)...)
	cmd.Env = append(os.Environ(), "KUBECONFIG="+kubeconfig)
	start := time.Now()
	out, err := cmd.CombinedOutput()
	t.Logf("meridian cluster %s (%s):\n%s", strings.Join(args, " "), time.Since(start).Round(time.Millisecond), out)
	return string(out), err
}

// The member's ServiceAccount as the authorizer sees it.
var (
	joinSAUser   = "system:serviceaccount:" + join.DefaultNamespace + ":" + join.ServiceAccount
	joinSAGroups = []string{"system:serviceaccounts", "system:serviceaccounts:" + join.DefaultNamespace, "system:authenticated"}
)

// access is one resource request checked with a SubjectAccessReview.
type access struct{ verb, group, resource, subresource, namespace string }

func (a access) String() string {
	r := a.resource
	if a.group != "" {
		r += "." + a.group
	}
	if a.subresource != "" {
		r += "/" + a.subresource
	}
	return a.verb + " " + r + " ns=" + a.namespace
}

func sarAllowed(t *testing.T, m *kubelab.Member, a access) bool {
	t.Helper()
	sar, err := m.Client(t).AuthorizationV1().SubjectAccessReviews().Create(context.Background(), &authorizationv1.SubjectAccessReview{
		Spec: authorizationv1.SubjectAccessReviewSpec{User: joinSAUser, Groups: joinSAGroups,
			ResourceAttributes: &authorizationv1.ResourceAttributes{Verb: a.verb, Group: a.group, Resource: a.resource, Subresource: a.subresource, Namespace: a.namespace}},
	}, metav1.CreateOptions{})
	require.NoError(t, err)
	return sar.Status.Allowed
}

// tableAccesses expands rules into one access per group, resource and verb,
// cluster-wide and in namespace shop.
func tableAccesses(rules []rbacv1.PolicyRule) []access {
	var out []access
	for _, r := range rules {
		for _, g := range r.APIGroups {
			for _, res := range r.Resources {
				for _, v := range r.Verbs {
					out = append(out, access{verb: v, group: g, resource: res}, access{verb: v, group: g, resource: res, namespace: "shop"})
				}
			}
		}
	}
	return out
}

// triples normalizes rules to sorted "group/resource:verb" strings.
func triples(rules []rbacv1.PolicyRule) []string {
	var out []string
	for _, r := range rules {
		for _, g := range r.APIGroups {
			for _, res := range r.Resources {
				for _, v := range r.Verbs {
					out = append(out, g+"/"+res+":"+v)
				}
			}
		}
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// memberSecretClient is a client of the member built from the hub's member
// Secret, exactly the credentials the hub uses.
func memberSecretClient(t *testing.T, hub *kubelab.Member, name string) (kubernetes.Interface, string) {
	t.Helper()
	s, err := hub.Client(t).CoreV1().Secrets("meridian").Get(context.Background(), join.SecretPrefix+name, metav1.GetOptions{})
	require.NoError(t, err)
	kc := s.Data["kubeconfig"]
	cfg, err := clientcmd.RESTConfigFromKubeConfig(kc)
	require.NoError(t, err)
	require.NotEmpty(t, cfg.BearerToken)
	cs, err := kubernetes.NewForConfig(cfg)
	require.NoError(t, err)
	return cs, cfg.BearerToken
}

// rulesIn lists what cs's identity may do in namespace shop
// (SelfSubjectRulesReview, as that identity).
func rulesIn(t *testing.T, cs kubernetes.Interface) []string {
	t.Helper()
	r, err := cs.AuthorizationV1().SelfSubjectRulesReviews().Create(context.Background(), &authorizationv1.SelfSubjectRulesReview{
		Spec: authorizationv1.SelfSubjectRulesReviewSpec{Namespace: "shop"}}, metav1.CreateOptions{})
	require.NoError(t, err)
	require.False(t, r.Status.Incomplete, r.Status.EvaluationError)
	var rules []rbacv1.PolicyRule
	for _, rr := range r.Status.ResourceRules {
		rules = append(rules, rbacv1.PolicyRule{APIGroups: rr.APIGroups, Resources: rr.Resources, Verbs: rr.Verbs})
	}
	return triples(rules)
}

// everyoneRights are the rights of a ServiceAccount bound to nothing: what
// the built-in roles give every authenticated identity (reviews of itself,
// reading ClusterTrustBundles, …).
func everyoneRights(t *testing.T, m *kubelab.Member) []string {
	t.Helper()
	cfg, err := m.RESTConfig(kubelab.TokenUser(m.ServiceAccountToken(t, "control", "nobody")))
	require.NoError(t, err)
	cs, err := kubernetes.NewForConfig(cfg)
	require.NoError(t, err)
	return rulesIn(t, cs)
}

// listedRights lists what the member Secret's credentials may do in
// namespace shop beyond what every authenticated identity may.
func listedRights(t *testing.T, cs kubernetes.Interface, everyone []string) []string {
	t.Helper()
	var out []string
	for _, r := range rulesIn(t, cs) {
		if !slices.Contains(everyone, r) {
			out = append(out, r)
		}
	}
	return out
}

func waitMemberState(t *testing.T, m *instance, cluster, state string, within time.Duration) time.Duration {
	t.Helper()
	start := time.Now()
	for {
		got, reason := memberOf(kubeReport(t, m), cluster)
		if got == state {
			return time.Since(start)
		}
		if time.Since(start) > within {
			t.Fatalf("member %s is not %s after %s (is %q: %s):\n%s", cluster, state, within, got, reason, m.log())
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// TestClusterJoin runs the real binary's `meridian cluster join`, `list`
// and `unjoin` against two real kube-apiservers (hub and member), with a
// hub `meridian serve` that reads member Secrets with the base RBAC only.
func TestClusterJoin(t *testing.T) {
	lab := kubelab.Start(t, kubelab.Bins(t), "hub", "member")
	hub, member := lab.Member("hub"), lab.Member("member")
	applyRBAC(t, hub)
	hubKC := hub.Kubeconfig(t, kubelab.TokenUser(hub.ServiceAccountToken(t, "meridian", "meridian")))
	operator := hub.Kubeconfig(t, kubelab.AdminUser) + string(os.PathListSeparator) + member.Kubeconfig(t, kubelab.AdminUser)
	lbService(t, member, "shop", "web", map[string]string{"meridian.io/hostname": "app.gslb.example.com"}, "127.0.0.93")
	m := startMeridian(t, fmt.Sprintf(joinHubConfig, hubKC, joinRetryInterval))
	everyone := everyoneRights(t, member)
	t.Logf("rights of every authenticated identity in the member: %s", strings.Join(everyone, " "))

	joinArgs := []string{"join", "--hub-context", "hub", "--member-context", "member", "--name", "west", "--region", "us-west"}

	t.Run("1: join makes the member Ready in the hub within one retry interval, and it serves", func(t *testing.T) {
		out, err := clusterCmd(t, operator, joinArgs...)
		require.NoError(t, err)
		took := waitMemberState(t, m, "west", "Ready", 10*time.Second)
		t.Logf("FIGURE cluster join returned → member Ready in the hub: %s (retry_interval %s)", took.Round(time.Millisecond), joinRetryInterval)
		assert.LessOrEqual(t, took, joinRetryInterval, "Ready within one retry interval")
		_, token := memberSecretClient(t, hub, "west")
		assert.NotContains(t, out, token, "the token is never printed")
		for _, want := range []string{"created    Namespace/meridian", "created    ServiceAccount/meridian/meridian-hub", "created    ClusterRole/meridian-hub", "created    ClusterRoleBinding/meridian-hub", "created    Secret/meridian/member-west"} {
			assert.Contains(t, out, want)
		}
		require.Eventually(t, func() bool {
			s, err := quickShare(m, "app.gslb.example.com.", "127.0.0.93", 10)
			return err == nil && s == 100
		}, 10*time.Second, 50*time.Millisecond, "the member's annotated Service is served:\n%s", m.log())
	})

	// Denied to the base: what is beyond its table.
	baseDenied := []access{
		{verb: "get", resource: "secrets", namespace: "shop"}, {verb: "list", resource: "secrets"},
		{verb: "patch", resource: "services", namespace: "shop"}, {verb: "update", resource: "services", namespace: "shop"}, {verb: "delete", resource: "services", namespace: "shop"},
		{verb: "patch", group: "networking.k8s.io", resource: "ingresses", namespace: "shop"},
		{verb: "get", group: "discovery.k8s.io", resource: "endpointslices", namespace: "shop"},
		{verb: "update", resource: "events", namespace: "shop"}, {verb: "patch", resource: "events", namespace: "shop"},
		{verb: "list", resource: "pods"}, {verb: "list", resource: "nodes"}, {verb: "create", group: "apps", resource: "deployments", namespace: "shop"},
		{verb: "create", resource: "serviceaccounts", subresource: "token", namespace: "meridian"},
		{verb: "create", group: "rbac.authorization.k8s.io", resource: "clusterrolebindings"}, {verb: "bind", group: "rbac.authorization.k8s.io", resource: "clusterroles"},
		{verb: "impersonate", resource: "users"}, {verb: "delete", resource: "namespaces"},
	}
	// Denied with both components too.
	fullDenied := []access{
		{verb: "get", group: "discovery.k8s.io", resource: "endpointslices", namespace: "shop"},
		{verb: "update", resource: "events", namespace: "shop"},
		{verb: "create", resource: "pods", namespace: "shop"}, {verb: "create", resource: "pods", subresource: "exec", namespace: "shop"}, {verb: "delete", resource: "nodes"},
		{verb: "create", resource: "serviceaccounts", subresource: "token", namespace: "meridian"},
		{verb: "create", group: "rbac.authorization.k8s.io", resource: "clusterrolebindings"}, {verb: "escalate", group: "rbac.authorization.k8s.io", resource: "clusterroles"},
		{verb: "impersonate", resource: "users"}, {verb: "delete", resource: "namespaces"},
	}
	checkRights := func(t *testing.T, want []rbacv1.PolicyRule, denied []access) {
		t.Helper()
		for _, a := range tableAccesses(want) {
			assert.True(t, sarAllowed(t, member, a), "allowed: %s", a)
		}
		for _, a := range denied {
			assert.False(t, sarAllowed(t, member, a), "denied: %s", a)
		}
		cs, _ := memberSecretClient(t, hub, "west")
		got := listedRights(t, cs, everyone)
		t.Logf("the member Secret's rights in namespace shop: %s", strings.Join(got, " "))
		assert.Equal(t, triples(want), got, "the Secret's identity holds exactly the table's rules")
	}

	t.Run("2: the member ServiceAccount holds the base's member rules and nothing beyond them", func(t *testing.T) {
		checkRights(t, grants.Member(), baseDenied)
	})

	t.Run("3: cluster list shows the member, its server, token expiry and readiness", func(t *testing.T) {
		out, err := clusterCmd(t, operator, "list", "--hub-context", "hub", "--http", m.http)
		require.NoError(t, err)
		assert.Regexp(t, `west\s+us-west\s+Ready\s+`+member.URL+`\s+\S+\s+yes\s+meridian/member-west`, out)
		out, err = clusterCmd(t, operator, "list", "--hub-context", "hub", "--http", m.http, "-o", "json")
		require.NoError(t, err)
		var l struct {
			Members []join.Row `json:"members"`
		}
		require.NoError(t, json.Unmarshal([]byte(out), &l))
		require.Len(t, l.Members, 1)
		r := l.Members[0]
		assert.Equal(t, "Ready", r.State)
		assert.Equal(t, member.URL, r.Server)
		require.NotNil(t, r.Expires)
		assert.WithinDuration(t, time.Now().Add(join.DefaultTokenExpiry), *r.Expires, 10*time.Minute)
		_, token := memberSecretClient(t, hub, "west")
		assert.NotContains(t, out, token)
	})

	t.Run("4: join again with components adds exactly their rules and re-mints the token", func(t *testing.T) {
		_, before := memberSecretClient(t, hub, "west")
		out, err := clusterCmd(t, operator, append(joinArgs, "--components", "propagation,status-annotation", "--token-expiry", "2h")...)
		require.NoError(t, err)
		assert.Contains(t, out, "unchanged  ServiceAccount/meridian/meridian-hub")
		assert.Contains(t, out, "created    ClusterRole/meridian-hub-status-annotation")
		assert.Contains(t, out, "created    ClusterRole/meridian-hub-propagation")
		_, after := memberSecretClient(t, hub, "west")
		assert.NotEqual(t, before, after, "a new token")
		want := grants.Member()
		for _, c := range grants.Components() {
			want = append(want, c.Rules()...)
		}
		checkRights(t, want, fullDenied)
		waitMemberState(t, m, "west", "Ready", 10*time.Second)

		// And back to the base: the components' roles go.
		out, err = clusterCmd(t, operator, joinArgs...)
		require.NoError(t, err)
		assert.Contains(t, out, "deleted    ClusterRole/meridian-hub-propagation")
		checkRights(t, grants.Member(), baseDenied)
	})

	t.Run("5: objects that join did not make are refused, and nothing changes", func(t *testing.T) {
		out, err := clusterCmd(t, operator, "join", "--hub-context", "hub", "--member-context", "member", "--name", "west2", "--region", "us-west")
		require.Error(t, err)
		assert.Contains(t, out, "refused, nothing was changed")
		assert.Contains(t, out, `made by `+"`meridian cluster join`"+` for member "west", not "west2"`)
		_, err = hub.Client(t).CoreV1().Secrets("meridian").Get(context.Background(), "member-west2", metav1.GetOptions{})
		assert.True(t, apierrors.IsNotFound(err), "no Secret for west2: %v", err)

		out, err = clusterCmd(t, operator, "join", "--hub-context", "hub", "--member-context", "member", "--name", "west", "--region", "us-west", "--token-expiry", "5m")
		require.Error(t, err)
		assert.Contains(t, out, "--token-expiry 5m0s: shorter than 10m0s")
	})

	t.Run("6: dry run prints the objects and no token", func(t *testing.T) {
		out, err := clusterCmd(t, operator, append(joinArgs, "--dry-run", "--components", "status-annotation", "--server", "https://member.example:6443")...)
		require.NoError(t, err)
		assert.Contains(t, out, "name: meridian-hub-status-annotation")
		assert.Contains(t, out, "server: https://member.example:6443")
		assert.Contains(t, out, "token: MINTED-BY-JOIN")
		_, err = member.Client(t).RbacV1().ClusterRoles().Get(context.Background(), "meridian-hub-status-annotation", metav1.GetOptions{})
		assert.True(t, apierrors.IsNotFound(err), "a dry run creates nothing")
	})

	t.Run("7: unjoin leaves a namespace holding someone else's object, then removes everything join made", func(t *testing.T) {
		_, err := member.Client(t).CoreV1().ConfigMaps("meridian").Create(context.Background(), &corev1.ConfigMap{
			ObjectMeta: metav1.ObjectMeta{Name: "someone-elses"}}, metav1.CreateOptions{})
		require.NoError(t, err)
		out, err := clusterCmd(t, operator, "unjoin", "--hub-context", "hub", "--member-context", "member", "--name", "west")
		require.NoError(t, err)
		assert.Contains(t, out, "left       Namespace/meridian: it holds objects join did not make: configmaps/someone-elses")
		for _, want := range []string{"deleted    ClusterRoleBinding/meridian-hub", "deleted    ClusterRole/meridian-hub", "deleted    ServiceAccount/meridian/meridian-hub", "deleted    Secret/meridian/member-west"} {
			assert.Contains(t, out, want)
		}
		require.Eventually(t, func() bool { st, _ := memberOf(kubeReport(t, m), "west"); return st == "" }, 10*time.Second, 50*time.Millisecond, "the hub drops the member")

		require.NoError(t, member.Client(t).CoreV1().ConfigMaps("meridian").Delete(context.Background(), "someone-elses", metav1.DeleteOptions{}))
		out, err = clusterCmd(t, operator, "unjoin", "--hub-context", "hub", "--member-context", "member", "--name", "west")
		require.NoError(t, err)
		assert.Contains(t, out, "deleted    Namespace/meridian: it held nothing else")

		// The lab runs no namespace controller: finish the deletion as it
		// would, now that the namespace is empty.
		ns, err := member.Client(t).CoreV1().Namespaces().Get(context.Background(), join.DefaultNamespace, metav1.GetOptions{})
		require.NoError(t, err)
		require.NotNil(t, ns.DeletionTimestamp, "unjoin deleted the namespace join made")
		ns.Spec.Finalizers = nil
		_, err = member.Client(t).CoreV1().Namespaces().Finalize(context.Background(), ns, metav1.UpdateOptions{})
		require.NoError(t, err)

		assertNothingJoined(t, hub, member, "west")
	})
}

// assertNothingJoined lists every kind join could have made, in both
// clusters, by label and by name: none may remain.
func assertNothingJoined(t *testing.T, hub, member *kubelab.Member, name string) {
	t.Helper()
	ctx := context.Background()
	for _, c := range []*kubelab.Member{hub, member} {
		cs := c.Client(t)
		for _, sel := range []string{join.LabelJoinedAs, join.LabelManagedBy + "=" + join.ManagedBy} {
			opts := metav1.ListOptions{LabelSelector: sel}
			nss, err := cs.CoreV1().Namespaces().List(ctx, opts)
			require.NoError(t, err)
			assert.Empty(t, nss.Items, "%s: Namespaces labelled %s", c.Name, sel)
			sas, err := cs.CoreV1().ServiceAccounts("").List(ctx, opts)
			require.NoError(t, err)
			assert.Empty(t, sas.Items, "%s: ServiceAccounts labelled %s", c.Name, sel)
			secrets, err := cs.CoreV1().Secrets("").List(ctx, opts)
			require.NoError(t, err)
			assert.Empty(t, secrets.Items, "%s: Secrets labelled %s", c.Name, sel)
			crs, err := cs.RbacV1().ClusterRoles().List(ctx, opts)
			require.NoError(t, err)
			assert.Empty(t, crs.Items, "%s: ClusterRoles labelled %s", c.Name, sel)
			crbs, err := cs.RbacV1().ClusterRoleBindings().List(ctx, opts)
			require.NoError(t, err)
			assert.Empty(t, crbs.Items, "%s: ClusterRoleBindings labelled %s", c.Name, sel)
			roles, err := cs.RbacV1().Roles("").List(ctx, opts)
			require.NoError(t, err)
			assert.Empty(t, roles.Items, "%s: Roles labelled %s", c.Name, sel)
			rbs, err := cs.RbacV1().RoleBindings("").List(ctx, opts)
			require.NoError(t, err)
			assert.Empty(t, rbs.Items, "%s: RoleBindings labelled %s", c.Name, sel)
			cms, err := cs.CoreV1().ConfigMaps("").List(ctx, opts)
			require.NoError(t, err)
			assert.Empty(t, cms.Items, "%s: ConfigMaps labelled %s", c.Name, sel)
		}
		for _, n := range join.RoleNames() {
			_, err := cs.RbacV1().ClusterRoles().Get(ctx, n, metav1.GetOptions{})
			assert.True(t, apierrors.IsNotFound(err), "%s: ClusterRole %s: %v", c.Name, n, err)
			_, err = cs.RbacV1().ClusterRoleBindings().Get(ctx, n, metav1.GetOptions{})
			assert.True(t, apierrors.IsNotFound(err), "%s: ClusterRoleBinding %s: %v", c.Name, n, err)
		}
		_, err := cs.CoreV1().ServiceAccounts(join.DefaultNamespace).Get(ctx, join.ServiceAccount, metav1.GetOptions{})
		assert.True(t, apierrors.IsNotFound(err), "%s: ServiceAccount %s: %v", c.Name, join.ServiceAccount, err)
		_, err = cs.CoreV1().Secrets(join.DefaultNamespace).Get(ctx, join.SecretPrefix+name, metav1.GetOptions{})
		assert.True(t, apierrors.IsNotFound(err), "%s: Secret %s%s: %v", c.Name, join.SecretPrefix, name, err)
	}
	_, err := member.Client(t).CoreV1().Namespaces().Get(ctx, join.DefaultNamespace, metav1.GetOptions{})
	assert.True(t, apierrors.IsNotFound(err), "the namespace join made is gone: %v", err)
}
