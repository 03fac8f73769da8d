package join

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"

	"github.com/meridian-gslb/meridian/internal/kube"
)

// fakeJWT is a token shaped like a service-account token, expiring at exp.
func fakeJWT(n int, exp time.Time) string {
	claims, _ := json.Marshal(map[string]any{"exp": exp.Unix(), "sub": "system:serviceaccount:meridian:meridian-hub", "n": n})
	return "eyJhbGciOiJSUzI1NiJ9." + base64.RawURLEncoding.EncodeToString(claims) + ".c2ln"
}

// memberFake is a fake member apiserver whose TokenRequest API behaves as a
// real one: the ServiceAccount must exist, the lifetime is at least 10
// minutes and at most maxExpiry (--service-account-max-token-expiration).
func memberFake(t *testing.T, maxExpiry time.Duration, objs ...runtime.Object) *fake.Clientset {
	t.Helper()
	cs := fake.NewClientset(objs...)
	n := 0
	cs.PrependReactor("create", "serviceaccounts", func(a k8stesting.Action) (bool, runtime.Object, error) {
		ca, ok := a.(k8stesting.CreateAction)
		if !ok || ca.GetSubresource() != "token" {
			return false, nil, nil
		}
		name := a.(k8stesting.CreateActionImpl).Name
		if _, err := cs.Tracker().Get(corev1.SchemeGroupVersion.WithResource("serviceaccounts"), a.GetNamespace(), name); err != nil {
			return true, nil, err
		}
		tr := ca.GetObject().(*authenticationv1.TokenRequest).DeepCopy()
		secs := *tr.Spec.ExpirationSeconds
		if secs < 600 {
			return true, nil, apierrors.NewBadRequest("spec.expirationSeconds: may not specify a duration less than 10 minutes")
		}
		d := min(time.Duration(secs)*time.Second, maxExpiry)
		n++
		exp := time.Now().Add(d)
		tr.Status = authenticationv1.TokenRequestStatus{Token: fakeJWT(n, exp), ExpirationTimestamp: metav1.NewTime(exp)}
		return true, tr, nil
	})
	return cs
}

func hubFake(objs ...runtime.Object) *fake.Clientset {
	return fake.NewClientset(append([]runtime.Object{&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "meridian"}}}, objs...)...)
}

var testEndpoint = Endpoint{Server: "https://10.0.0.1:6443", CAData: []byte(testCA)}

func plan(t *testing.T, name string, components ...string) *Plan {
	t.Helper()
	p, err := NewPlan(Options{Name: name, Region: "us-west", Components: components})
	require.NoError(t, err)
	return p
}

// inventory lists what a fake cluster holds of the kinds join makes.
func inventory(t *testing.T, cs *fake.Clientset) []string {
	t.Helper()
	ctx := context.Background()
	var out []string
	nss, err := cs.CoreV1().Namespaces().List(ctx, metav1.ListOptions{})
	require.NoError(t, err)
	for _, o := range nss.Items {
		out = append(out, "Namespace/"+o.Name)
	}
	sas, err := cs.CoreV1().ServiceAccounts("").List(ctx, metav1.ListOptions{})
	require.NoError(t, err)
	for _, o := range sas.Items {
		out = append(out, "ServiceAccount/"+o.Namespace+"/"+o.Name)
	}
	crs, err := cs.RbacV1().ClusterRoles().List(ctx, metav1.ListOptions{})
	require.NoError(t, err)
	for _, o := range crs.Items {
		out = append(out, "ClusterRole/"+o.Name)
	}
	crbs, err := cs.RbacV1().ClusterRoleBindings().List(ctx, metav1.ListOptions{})
	require.NoError(t, err)
	for _, o := range crbs.Items {
		out = append(out, "ClusterRoleBinding/"+o.Name)
	}
	secrets, err := cs.CoreV1().Secrets("").List(ctx, metav1.ListOptions{})
	require.NoError(t, err)
	for _, o := range secrets.Items {
		out = append(out, "Secret/"+o.Namespace+"/"+o.Name)
	}
	return out
}

func emptyContents(context.Context, string) ([]Item, error) { return nil, nil }

func TestJoinMakesThePlannedObjectsAndASecretTheHubAccepts(t *testing.T) {
	hub, member := hubFake(), memberFake(t, 8760*time.Hour)
	res, err := Join(context.Background(), Clusters{Hub: hub, Member: member}, plan(t, "west", "status-annotation"), testEndpoint)
	require.NoError(t, err)
	assert.ElementsMatch(t, []string{"Namespace/meridian", "ServiceAccount/meridian/meridian-hub", "ClusterRole/meridian-hub", "ClusterRole/meridian-hub-status-annotation",
		"ClusterRoleBinding/meridian-hub", "ClusterRoleBinding/meridian-hub-status-annotation"}, inventory(t, member))
	assert.ElementsMatch(t, []string{"Namespace/meridian", "Secret/meridian/member-west"}, inventory(t, hub))

	s, err := hub.CoreV1().Secrets("meridian").Get(context.Background(), "member-west", metav1.GetOptions{})
	require.NoError(t, err)
	m, err := kube.MemberFromSecret(s)
	require.NoError(t, err)
	assert.Equal(t, "west", m.Cluster.Name)
	for _, a := range res.Actions {
		assert.NotContains(t, a.String(), "eyJ", "no token in what join reports")
	}
	assert.False(t, res.Shortened(time.Now().Add(-time.Minute)))
}

func TestJoinAgainRenewsTheTokenAndDropsComponentsNoLongerChosen(t *testing.T) {
	hub, member := hubFake(), memberFake(t, 8760*time.Hour)
	c := Clusters{Hub: hub, Member: member}
	_, err := Join(context.Background(), c, plan(t, "west", "status-annotation", "propagation"), testEndpoint)
	require.NoError(t, err)
	first, err := hub.CoreV1().Secrets("meridian").Get(context.Background(), "member-west", metav1.GetOptions{})
	require.NoError(t, err)

	res, err := Join(context.Background(), c, plan(t, "west", "propagation"), testEndpoint)
	require.NoError(t, err)
	second, err := hub.CoreV1().Secrets("meridian").Get(context.Background(), "member-west", metav1.GetOptions{})
	require.NoError(t, err)
	assert.NotEqual(t, first.Data[kube.SecretKubeconfig], second.Data[kube.SecretKubeconfig], "a new token")
	assert.ElementsMatch(t, []string{"Namespace/meridian", "ServiceAccount/meridian/meridian-hub", "ClusterRole/meridian-hub", "ClusterRole/meridian-hub-propagation",
		"ClusterRoleBinding/meridian-hub", "ClusterRoleBinding/meridian-hub-propagation"}, inventory(t, member))
	verbs := map[string]string{}
	for _, a := range res.Actions {
		verbs[a.Object] = a.Verb
	}
	assert.Equal(t, "unchanged", verbs["ServiceAccount/meridian/meridian-hub"])
	assert.Equal(t, "unchanged", verbs["ClusterRole/meridian-hub"])
	assert.Equal(t, "deleted", verbs["ClusterRole/meridian-hub-status-annotation"])
	assert.Equal(t, "deleted", verbs["ClusterRoleBinding/meridian-hub-status-annotation"])
	assert.Equal(t, "updated", verbs["Secret/meridian/member-west"])
}

func TestJoinPutsBackRulesSomeoneWidened(t *testing.T) {
	hub, member := hubFake(), memberFake(t, 8760*time.Hour)
	c := Clusters{Hub: hub, Member: member}
	_, err := Join(context.Background(), c, plan(t, "west"), testEndpoint)
	require.NoError(t, err)
	cr, err := member.RbacV1().ClusterRoles().Get(context.Background(), "meridian-hub", metav1.GetOptions{})
	require.NoError(t, err)
	cr.Rules = append(cr.Rules, rbacv1.PolicyRule{APIGroups: []string{""}, Resources: []string{"secrets"}, Verbs: []string{"get"}})
	_, err = member.RbacV1().ClusterRoles().Update(context.Background(), cr, metav1.UpdateOptions{})
	require.NoError(t, err)

	_, err = Join(context.Background(), c, plan(t, "west"), testEndpoint)
	require.NoError(t, err)
	cr, err = member.RbacV1().ClusterRoles().Get(context.Background(), "meridian-hub", metav1.GetOptions{})
	require.NoError(t, err)
	assert.Equal(t, plan(t, "west").Grants[0].Role.Rules, cr.Rules)
}

func TestJoinRefusesObjectsItDidNotMakeAndChangesNothing(t *testing.T) {
	foreignSA := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: "meridian", Name: "meridian-hub"}}
	otherMember := &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: "meridian-hub", Labels: Labels("east")}}
	foreignSecret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "meridian", Name: "member-west"}}
	sameCluster := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "meridian", Name: "west-by-hand",
		Labels: map[string]string{kube.LabelMember: "true"}, Annotations: map[string]string{kube.AnnoCluster: "west"}}}
	for _, c := range []struct {
		name          string
		hub, member   []runtime.Object
		wantRefusedOf []string
	}{
		{name: "a ServiceAccount of join's name made by someone else is refused", member: []runtime.Object{foreignSA},
			wantRefusedOf: []string{"member ServiceAccount/meridian/meridian-hub exists and it was not made by `meridian cluster join --name west`"}},
		{name: "a ClusterRole joined for another member is refused", member: []runtime.Object{otherMember},
			wantRefusedOf: []string{`member ClusterRole/meridian-hub exists and it was made by ` + "`meridian cluster join`" + ` for member "east", not "west"`}},
		{name: "a hub Secret of join's name made by hand is refused", hub: []runtime.Object{foreignSecret},
			wantRefusedOf: []string{"hub Secret/meridian/member-west exists and it was not made by"}},
		{name: "another Secret registering the same cluster is refused", hub: []runtime.Object{sameCluster},
			wantRefusedOf: []string{`hub Secret/meridian/west-by-hand registers cluster "west" already`}},
		{name: "every refusal is reported at once", member: []runtime.Object{foreignSA, otherMember}, hub: []runtime.Object{foreignSecret},
			wantRefusedOf: []string{"ServiceAccount/meridian/meridian-hub", "ClusterRole/meridian-hub", "Secret/meridian/member-west"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			hub, member := hubFake(c.hub...), memberFake(t, 8760*time.Hour, c.member...)
			hubBefore, memberBefore := inventory(t, hub), inventory(t, member)
			_, err := Join(context.Background(), Clusters{Hub: hub, Member: member}, plan(t, "west"), testEndpoint)
			var refused *RefusedError
			require.ErrorAs(t, err, &refused)
			for _, w := range c.wantRefusedOf {
				assert.Contains(t, err.Error(), w)
			}
			assert.Contains(t, err.Error(), "nothing was changed")
			assert.ElementsMatch(t, hubBefore, inventory(t, hub), "the hub is unchanged")
			assert.ElementsMatch(t, memberBefore, inventory(t, member), "the member is unchanged")
		})
	}
}

func TestJoinUsesANamespaceThatExistsWithoutTakingIt(t *testing.T) {
	hub := hubFake()
	member := memberFake(t, 8760*time.Hour, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "meridian"}})
	c := Clusters{Hub: hub, Member: member, Contents: emptyContents}
	res, err := Join(context.Background(), c, plan(t, "west"), testEndpoint)
	require.NoError(t, err)
	assert.Contains(t, res.Actions, Action{Cluster: "member", Verb: "kept", Object: "Namespace/meridian", Note: "it existed: used as it is, and unjoin leaves it"})
	ns, err := member.CoreV1().Namespaces().Get(context.Background(), "meridian", metav1.GetOptions{})
	require.NoError(t, err)
	assert.Empty(t, ns.Labels, "not labelled: unjoin will not delete it")

	_, err = Unjoin(context.Background(), c, UnjoinOptions{Name: "west"})
	require.NoError(t, err)
	assert.Equal(t, []string{"Namespace/meridian"}, inventory(t, member), "the namespace stays, all else is gone")
}

func TestTheTokenLifetimeTheApiserverGrantsIsReported(t *testing.T) {
	hub, member := hubFake(), memberFake(t, 48*time.Hour)
	minted := time.Now()
	res, err := Join(context.Background(), Clusters{Hub: hub, Member: member}, plan(t, "west"), testEndpoint)
	require.NoError(t, err)
	assert.True(t, res.Shortened(minted), "asked a year, granted 48h")
	assert.WithinDuration(t, minted.Add(48*time.Hour), res.TokenExpires, time.Minute)
}

func TestUnjoin(t *testing.T) {
	foreignCR := &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: "meridian-hub-propagation"}}
	foreignSecret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "meridian", Name: "member-east", Labels: map[string]string{kube.LabelMember: "true"}}}
	for _, c := range []struct {
		name        string
		dryRun      bool
		contents    func(context.Context, string) ([]Item, error)
		extraMember []runtime.Object
		wantMember  []string // left in the member after unjoin
		wantHub     []string
		wantActions []string // substrings of the report
	}{
		{name: "unjoin removes everything join made in both clusters", contents: emptyContents,
			wantHub:     []string{"Namespace/meridian"},
			wantActions: []string{"member  deleted    ClusterRoleBinding/meridian-hub", "member  deleted    Namespace/meridian: it held nothing else", "hub     deleted    Secret/meridian/member-west"}},
		{name: "a dry run deletes nothing and says what it would", dryRun: true, contents: emptyContents,
			wantMember: []string{"Namespace/meridian", "ServiceAccount/meridian/meridian-hub", "ClusterRole/meridian-hub", "ClusterRoleBinding/meridian-hub"},
			wantHub:    []string{"Namespace/meridian", "Secret/meridian/member-west"},
			wantActions: []string{"member  would delete ClusterRole/meridian-hub", "member  would delete ServiceAccount/meridian/meridian-hub",
				"member  would delete Namespace/meridian", "hub     would delete Secret/meridian/member-west"}},
		{name: "a namespace holding someone else's object is left, naming it",
			contents: func(context.Context, string) ([]Item, error) {
				return []Item{{Resource: "configmaps", Name: "theirs"}, {Resource: "configmaps", Name: "kube-root-ca.crt"}, {Resource: "serviceaccounts", Name: "default"},
					{Resource: "serviceaccounts", Name: "meridian-hub", Labels: Labels("west")}}, nil
			},
			wantMember: []string{"Namespace/meridian"}, wantHub: []string{"Namespace/meridian"},
			wantActions: []string{"member  left       Namespace/meridian: it holds objects join did not make: configmaps/theirs"}},
		{name: "a namespace whose objects cannot be listed is left",
			contents:   func(context.Context, string) ([]Item, error) { return nil, fmt.Errorf("discovery: unavailable") },
			wantMember: []string{"Namespace/meridian"}, wantHub: []string{"Namespace/meridian"},
			wantActions: []string{"left       Namespace/meridian: cannot tell what it holds (discovery: unavailable)"}},
		{name: "objects of join's names that join did not make are left and reported", contents: emptyContents,
			extraMember: []runtime.Object{foreignCR},
			wantMember:  []string{"ClusterRole/meridian-hub-propagation"}, wantHub: []string{"Namespace/meridian"},
			wantActions: []string{"member  left       ClusterRole/meridian-hub-propagation: it was not made by"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			hub, member := hubFake(foreignSecret), memberFake(t, 8760*time.Hour)
			_, err := Join(context.Background(), Clusters{Hub: hub, Member: member}, plan(t, "west"), testEndpoint)
			require.NoError(t, err)
			for _, o := range c.extraMember {
				require.NoError(t, member.Tracker().Add(o))
			}
			acts, err := Unjoin(context.Background(), Clusters{Hub: hub, Member: member, Contents: c.contents}, UnjoinOptions{Name: "west", DryRun: c.dryRun})
			require.NoError(t, err)
			var report []string
			for _, a := range acts {
				report = append(report, a.String())
			}
			for _, w := range c.wantActions {
				assert.Contains(t, strings.Join(report, "\n"), w)
			}
			assert.ElementsMatch(t, c.wantMember, inventory(t, member))
			assert.ElementsMatch(t, append(c.wantHub, "Secret/meridian/member-east"), inventory(t, hub), "another member's Secret is never touched")
		})
	}
}

func TestUnjoinOfANameNothingCarriesRemovesNothing(t *testing.T) {
	hub, member := hubFake(), memberFake(t, 8760*time.Hour)
	c := Clusters{Hub: hub, Member: member, Contents: emptyContents}
	_, err := Join(context.Background(), c, plan(t, "west"), testEndpoint)
	require.NoError(t, err)
	before := inventory(t, member)
	acts, err := Unjoin(context.Background(), c, UnjoinOptions{Name: "east"})
	require.NoError(t, err)
	var verbs []string
	for _, a := range acts {
		verbs = append(verbs, a.Verb)
	}
	assert.NotContains(t, verbs, "deleted")
	assert.ElementsMatch(t, before, inventory(t, member))
	_, err = Unjoin(context.Background(), c, UnjoinOptions{Name: "East"})
	assert.ErrorContains(t, err, `--name "East"`)
}
