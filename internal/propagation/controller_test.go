package propagation

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/client-go/discovery/cached/memory"
	discoveryfake "k8s.io/client-go/discovery/fake"
	dynamicfake "k8s.io/client-go/dynamic/fake"
	metadatafake "k8s.io/client-go/metadata/fake"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/restmapper"
	clienttesting "k8s.io/client-go/testing"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"

	"github.com/meridian-gslb/meridian/internal/placement"
)

// The fake clusters below stand in for the hub and the members: a dynamic
// client over an object tracker (server-side apply creates or replaces), a
// metadata client over the hub's templates and a discovery answer.

var (
	gvrNamespace  = schema.GroupVersionResource{Version: "v1", Resource: "namespaces"}
	gvrConfigMap  = schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}
	gvrDeployment = schema.GroupVersionResource{Group: "apps", Version: "v1", Resource: "deployments"}
	gvrReplicaSet = schema.GroupVersionResource{Group: "apps", Version: "v1", Resource: "replicasets"}
	gvrWidget     = schema.GroupVersionResource{Group: "example.meridian.io", Version: "v1", Resource: "widgets"}
	gvrHPA        = schema.GroupVersionResource{Group: "autoscaling", Version: "v2", Resource: "horizontalpodautoscalers"}
)

// servedKinds is the discovery answer of a fake cluster; widgetsScoped
// says whether it serves widgets, and with which scope.
func servedKinds(widgets string) []*metav1.APIResourceList {
	lists := []*metav1.APIResourceList{
		{GroupVersion: "v1", APIResources: []metav1.APIResource{
			{Name: "namespaces", Kind: "Namespace", Namespaced: false, Verbs: all},
			{Name: "configmaps", Kind: "ConfigMap", Namespaced: true, Verbs: all},
		}},
		{GroupVersion: "apps/v1", APIResources: []metav1.APIResource{
			{Name: "deployments", Kind: "Deployment", Namespaced: true, Verbs: all},
			{Name: "replicasets", Kind: "ReplicaSet", Namespaced: true, Verbs: all},
		}},
		{GroupVersion: "autoscaling/v2", APIResources: []metav1.APIResource{
			{Name: "horizontalpodautoscalers", Kind: "HorizontalPodAutoscaler", Namespaced: true, Verbs: all},
		}},
	}
	if widgets != "" {
		lists = append(lists, &metav1.APIResourceList{GroupVersion: "example.meridian.io/v1", APIResources: []metav1.APIResource{
			{Name: "widgets", Kind: "Widget", Namespaced: widgets == "namespaced", Verbs: all}}})
	}
	return lists
}

type fakeCluster struct {
	dyn  *dynamicfake.FakeDynamicClient
	meta *metadatafake.FakeMetadataClient
	disc *discoveryfake.FakeDiscovery
}

func newFakeCluster(t *testing.T, widgets string, objs ...*unstructured.Unstructured) *fakeCluster {
	t.Helper()
	listKinds := map[schema.GroupVersionResource]string{gvrNamespace: "NamespaceList", gvrConfigMap: "ConfigMapList",
		gvrDeployment: "DeploymentList", gvrReplicaSet: "ReplicaSetList", gvrWidget: "WidgetList", gvrHPA: "HorizontalPodAutoscalerList"}
	var robjs, mobjs []runtime.Object
	for _, o := range objs {
		robjs = append(robjs, o.DeepCopy())
		m := &metav1.PartialObjectMetadata{}
		m.SetGroupVersionKind(o.GroupVersionKind())
		m.ObjectMeta = metav1.ObjectMeta{Name: o.GetName(), Namespace: o.GetNamespace(), Labels: o.GetLabels(), Annotations: o.GetAnnotations(),
			Finalizers: o.GetFinalizers(), OwnerReferences: o.GetOwnerReferences()}
		mobjs = append(mobjs, m)
	}
	dyn := dynamicfake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(), listKinds, robjs...)
	dyn.PrependReactor("patch", "*", func(a clienttesting.Action) (bool, runtime.Object, error) {
		pa := a.(clienttesting.PatchActionImpl)
		if pa.GetPatchType() != types.ApplyPatchType {
			return false, nil, nil
		}
		u := &unstructured.Unstructured{}
		if err := yaml.Unmarshal(pa.GetPatch(), &u.Object); err != nil {
			return true, nil, err
		}
		tr := dyn.Tracker()
		_, err := tr.Get(pa.GetResource(), pa.GetNamespace(), pa.GetName())
		switch {
		case apierrors.IsNotFound(err):
			err = tr.Create(pa.GetResource(), u, pa.GetNamespace())
		case err == nil:
			err = tr.Update(pa.GetResource(), u, pa.GetNamespace())
		}
		if err != nil {
			return true, nil, err
		}
		got, err := tr.Get(pa.GetResource(), pa.GetNamespace(), pa.GetName())
		return true, got, err
	})
	scheme := metadatafake.NewTestScheme()
	require.NoError(t, metav1.AddMetaToScheme(scheme))
	meta := metadatafake.NewSimpleMetadataClient(scheme, mobjs...)
	disc := &discoveryfake.FakeDiscovery{Fake: &clienttesting.Fake{Resources: servedKinds(widgets)}}
	return &fakeCluster{dyn: dyn, meta: meta, disc: disc}
}

func (f *fakeCluster) get(gvr schema.GroupVersionResource, ns, name string) (*unstructured.Unstructured, bool) {
	u, err := f.dyn.Resource(gvr).Namespace(ns).Get(context.Background(), name, metav1.GetOptions{})
	if err != nil {
		return nil, false
	}
	return u, true
}

type fakeEnv struct{ clusters map[string]map[string]string }

func (e fakeEnv) Config(cl string) (*rest.Config, bool) {
	if _, ok := e.clusters[cl]; !ok {
		return nil, false
	}
	return &rest.Config{Host: "https://" + cl + ".invalid"}, true
}
func (e fakeEnv) Clusters() map[string]map[string]string { return e.clusters }
func (e fakeEnv) Health() []placement.ClusterHealth      { return nil }
func (e fakeEnv) TrafficWeights(string) map[string]int   { return nil }

// newTestController runs against the fake clusters, "hub" among them.
func newTestController(t *testing.T, cls map[string]*fakeCluster) *Controller {
	t.Helper()
	env := fakeEnv{clusters: map[string]map[string]string{}}
	for name := range cls {
		env.clusters[name] = map[string]string{}
	}
	c := New(env, Options{Hub: "hub", Interval: time.Hour, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	for name, f := range cls {
		cfg, _ := env.Config(name)
		disc := memory.NewMemCacheClient(f.disc)
		c.clients[name] = &clients{key: configKey(cfg), cfg: cfg, dyn: f.dyn, meta: f.meta, disc: disc,
			mapper: restmapper.NewDeferredDiscoveryRESTMapper(disc)}
	}
	return c
}

func tmplWith(t *testing.T, text string, annos map[string]string) *unstructured.Unstructured {
	u := obj(t, text)
	a := map[string]string{AnnoPropagate: "true"}
	for k, v := range annos {
		a[k] = v
	}
	u.SetAnnotations(a)
	return u
}

func TestAHubControllersChildrenThatInheritATemplatesAnnotationsAreNotTemplates(t *testing.T) {
	annos := map[string]string{AnnoClusters: "east"}
	// The hub's deployment controller copies the Deployment's annotations
	// onto its ReplicaSets (k8s.io/kubernetes deployment_util.go,
	// copyDeploymentAnnotationsToReplicaSet).
	child := `{"apiVersion":"apps/v1","kind":"ReplicaSet","metadata":{"name":"web-5d8f","namespace":"shop",
		"ownerReferences":[{"apiVersion":"apps/v1","kind":"Deployment","name":"web","uid":"d-1","controller":true}]},"spec":{"replicas":2}}`
	tests := []struct {
		name      string
		finalizer bool // the child holds our finalizer (copied by a version without this rule)
		copied    bool // and its copy is in the member
	}{
		{"a ReplicaSet the hub's Deployment made is neither copied nor finalized", false, false},
		{"a ReplicaSet copied before loses its copy and our finalizer", true, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			deploy := tmplWith(t, `{"apiVersion":"apps/v1","kind":"Deployment","metadata":{"name":"web","namespace":"shop","uid":"d-1"},"spec":{"replicas":2}}`, annos)
			rs := tmplWith(t, child, annos)
			var memberObjs []*unstructured.Unstructured
			if tt.finalizer {
				rs.SetFinalizers([]string{Finalizer})
			}
			if tt.copied {
				cp, _, err := Render(rs, "east", nil, Spec{})
				require.NoError(t, err)
				memberObjs = append(memberObjs, cp)
			}
			hub := newFakeCluster(t, "", deploy, rs)
			east := newFakeCluster(t, "", memberObjs...)
			c := newTestController(t, map[string]*fakeCluster{"hub": hub, "east": east})

			c.reconcileAll(context.Background())

			_, ok := east.get(gvrDeployment, "shop", "web")
			assert.True(t, ok, "the Deployment is propagated")
			_, ok = east.get(gvrReplicaSet, "shop", "web-5d8f")
			assert.False(t, ok, "the member's own Deployment makes its ReplicaSets; the hub's are not copied")
			got, ok := hub.get(gvrReplicaSet, "shop", "web-5d8f")
			require.True(t, ok)
			assert.NotContains(t, got.GetFinalizers(), Finalizer, "no finalizer on the hub's ReplicaSet")
			for _, st := range c.Statuses() {
				assert.NotEqual(t, "ReplicaSet.apps/shop/web-5d8f", st.Template)
			}
		})
	}
}

func TestANamespaceMadeForACopyIsNeverAnotherTemplatesToDelete(t *testing.T) {
	nsTmpl := `{"apiVersion":"v1","kind":"Namespace","metadata":{"name":"shop","labels":{"team":"shop"}}}`
	deploy := `{"apiVersion":"apps/v1","kind":"Deployment","metadata":{"name":"web","namespace":"shop"},"spec":{"replicas":1}}`
	plain := obj(t, `{"apiVersion":"v1","kind":"Namespace","metadata":{"name":"shop"}}`)
	tests := []struct {
		name       string
		nsTargets  string // the Namespace template's clusters
		westBefore string // "made": the namespace Meridian made there for a copy; "plain": someone else's
		passes     int
		wantWest   bool   // shop still exists in west
		wantRef    string // its meridian.io/template afterwards
		wantErr    string // in the Namespace template's status for west
	}{
		{"a Namespace template kept to east leaves the namespace Meridian made in west for the Deployment's copy", "east", "", 3, true, "", ""},
		{"a Namespace template targeting west adopts the namespace Meridian made there", "east,west", "made", 1, true, "Namespace/shop", ""},
		{"a namespace someone else made is neither adopted nor deleted", "east,west", "plain", 2, true, "", "not Meridian's"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			hub := newFakeCluster(t, "", tmplWith(t, nsTmpl, map[string]string{AnnoClusters: tt.nsTargets}),
				tmplWith(t, deploy, map[string]string{AnnoClusters: "east,west"}))
			east, west := newFakeCluster(t, ""), newFakeCluster(t, "")
			if tt.westBefore == "plain" {
				west = newFakeCluster(t, "", plain)
			}
			c := newTestController(t, map[string]*fakeCluster{"hub": hub, "east": east, "west": west})
			if tt.westBefore == "made" {
				require.NoError(t, ensureNamespace(context.Background(), c.clients["west"], "shop", "Deployment.apps/shop/web"))
			}
			for range tt.passes {
				c.reconcileAll(context.Background())
			}
			_, ok := east.get(gvrNamespace, "", "shop")
			assert.True(t, ok, "east has the Namespace template's copy")
			ns, ok := west.get(gvrNamespace, "", "shop")
			require.Equal(t, tt.wantWest, ok, "west's namespace shop")
			assert.Equal(t, tt.wantRef, ns.GetAnnotations()[AnnoTemplate])
			for _, st := range c.Statuses() {
				if st.Template == "Namespace/shop" && tt.wantErr != "" {
					assert.Contains(t, st.Clusters["west"].Error, tt.wantErr)
				}
				if st.Template == "Namespace/shop" && tt.wantErr == "" {
					assert.Empty(t, st.Clusters["west"].Error)
				}
			}
		})
	}
}

func TestACopyIsSentOnlyWhereItsKindHasTheHubsScope(t *testing.T) {
	widget := `{"apiVersion":"example.meridian.io/v1","kind":"Widget","metadata":{"name":"w1","namespace":"team-a"},"spec":{"size":"l"}}`
	tests := []struct {
		name    string
		served  string // how west serves widgets: "namespaced", "cluster" or "" (not at all)
		sent    bool
		wantErr string
	}{
		{"a member serving the kind namespaced gets the copy", "namespaced", true, ""},
		{"a member serving the kind cluster-scoped gets nothing: a namespace's tenant would write outside it", "cluster", false, "cluster-scoped"},
		{"a member not serving the kind gets nothing", "", false, "does not serve"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			hub := newFakeCluster(t, "namespaced", tmplWith(t, widget, map[string]string{AnnoClusters: "west"}))
			west := newFakeCluster(t, tt.served)
			c := newTestController(t, map[string]*fakeCluster{"hub": hub, "west": west})

			c.reconcileAll(context.Background())

			var writes []string
			for _, a := range west.dyn.Actions() {
				if a.GetVerb() != "get" && a.GetResource() == gvrWidget {
					writes = append(writes, a.GetVerb()+" namespace="+a.GetNamespace())
				}
			}
			st := c.Statuses()
			require.Len(t, st, 1)
			if tt.sent {
				assert.Equal(t, []string{"patch namespace=team-a"}, writes)
				assert.Empty(t, st[0].Clusters["west"].Error)
				return
			}
			assert.Empty(t, writes, "nothing written to west")
			assert.Contains(t, st[0].Clusters["west"].Error, tt.wantErr)
		})
	}
}

func TestAFinalizerStaysUntilEveryMemberCouldBeChecked(t *testing.T) {
	deploy := `{"apiVersion":"apps/v1","kind":"Deployment","metadata":{"name":"web","namespace":"shop","deletionTimestamp":"2026-01-01T00:00:00Z",
		"finalizers":["meridian.io/propagation"]},"spec":{"replicas":1}}`
	tests := []struct {
		name          string
		discoveryErr  error
		served        bool
		wantFinalizer bool
		wantCopy      bool
	}{
		{"with the member's kinds known the copy goes, then the finalizer", nil, true, false, false},
		{"a member that does not serve the kind has no copy: the finalizer goes", nil, false, false, false},
		{"a member whose discovery fails may still hold the copy: the finalizer stays", errors.New("the server is currently unable to handle the request"), true, true, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tmpl := tmplWith(t, deploy, map[string]string{AnnoClusters: "west"})
			hub := newFakeCluster(t, "", tmpl)
			var memberObjs []*unstructured.Unstructured
			if tt.served {
				cp, _, err := Render(tmpl, "west", nil, Spec{})
				require.NoError(t, err)
				memberObjs = append(memberObjs, cp)
			}
			west := newFakeCluster(t, "", memberObjs...)
			if !tt.served {
				west.disc.Resources = west.disc.Resources[:1] // no apps/v1
			}
			if tt.discoveryErr != nil {
				west.disc.PrependReactor("get", "*", func(clienttesting.Action) (bool, runtime.Object, error) { return true, nil, tt.discoveryErr })
			}
			c := newTestController(t, map[string]*fakeCluster{"hub": hub, "west": west})

			c.reconcileAll(context.Background())

			got, ok := hub.get(gvrDeployment, "shop", "web")
			require.True(t, ok)
			assert.Equal(t, tt.wantFinalizer, slices.Contains(got.GetFinalizers(), Finalizer), "finalizer")
			if tt.served {
				_, ok = west.get(gvrDeployment, "shop", "web")
				assert.Equal(t, tt.wantCopy, ok, "copy in west")
			}
		})
	}
}

func TestACopyIsDeletedOnlyIfItIsStillTheObjectChecked(t *testing.T) {
	tmpl := tmplWith(t, `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"cfg","namespace":"shop"},"data":{"a":"b"}}`,
		map[string]string{AnnoClusters: "east"})
	cp, _, err := Render(tmpl, "west", nil, Spec{})
	require.NoError(t, err)
	cp.SetUID("uid-west-1")
	hub, east, west := newFakeCluster(t, "", tmpl), newFakeCluster(t, ""), newFakeCluster(t, "", cp)
	c := newTestController(t, map[string]*fakeCluster{"hub": hub, "east": east, "west": west})

	c.reconcileAll(context.Background())

	var deletes []clienttesting.DeleteActionImpl
	for _, a := range west.dyn.Actions() {
		if d, ok := a.(clienttesting.DeleteActionImpl); ok {
			deletes = append(deletes, d)
		}
	}
	require.Len(t, deletes, 1, "west is no longer chosen: its copy goes")
	pre := deletes[0].DeleteOptions.Preconditions
	require.NotNil(t, pre, "a precondition, so an object put there since the check is not deleted")
	require.NotNil(t, pre.UID)
	assert.Equal(t, types.UID("uid-west-1"), *pre.UID)
}

func TestAMemberMissingAKindIsRediscoveredOncePerPassNotOncePerTemplate(t *testing.T) {
	var tmpls []*unstructured.Unstructured
	for _, name := range []string{"w1", "w2", "w3", "w4"} {
		tmpls = append(tmpls, tmplWith(t, `{"apiVersion":"example.meridian.io/v1","kind":"Widget","metadata":{"name":"`+name+`","namespace":"shop"}}`,
			map[string]string{AnnoClusters: "east"}))
	}
	hub, east, west := newFakeCluster(t, "namespaced", tmpls...), newFakeCluster(t, ""), newFakeCluster(t, "")
	c := newTestController(t, map[string]*fakeCluster{"hub": hub, "east": east, "west": west})
	groupReads := func(f *fakeCluster) int {
		n := 0
		for _, a := range f.disc.Actions() {
			if a.GetResource().Resource == "group" {
				n++
			}
		}
		return n
	}
	for pass := 1; pass <= 2; pass++ {
		c.reconcileAll(context.Background())
		// One read to know the member, one more when a kind is missing.
		assert.LessOrEqual(t, groupReads(east), 2*pass, "east (the target) after pass %d", pass)
		assert.LessOrEqual(t, groupReads(west), 2*pass, "west (checked for stale copies) after pass %d", pass)
	}
	for _, st := range c.Statuses() {
		assert.Contains(t, st.Clusters["east"].Error, "does not serve")
	}
}

func TestAMembersClientsAreRebuiltWhenItsIdentityChanges(t *testing.T) {
	base := func() *rest.Config { return &rest.Config{Host: "https://east.example", BearerToken: "t"} }
	tests := []struct {
		name   string
		change func(*rest.Config)
	}{
		{"another token", func(c *rest.Config) { c.BearerToken = "u" }},
		{"another impersonated user", func(c *rest.Config) { c.Impersonate.UserName = "system:serviceaccount:meridian:meridian" }},
		{"other impersonated groups", func(c *rest.Config) { c.Impersonate.Groups = []string{"readers"} }},
		{"another basic-auth user", func(c *rest.Config) { c.Username = "other" }},
		{"another basic-auth password", func(c *rest.Config) { c.Password = "other" }},
		{"another exec command", func(c *rest.Config) {
			c.ExecProvider = &clientcmdapi.ExecConfig{Command: "aws", Args: []string{"eks", "get-token", "--cluster-name", "b"}}
		}},
		{"another auth provider", func(c *rest.Config) {
			c.AuthProvider = &clientcmdapi.AuthProviderConfig{Name: "oidc", Config: map[string]string{"client-id": "x"}}
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name+" rebuilds them", func(t *testing.T) {
			changed := base()
			tt.change(changed)
			assert.NotEqual(t, configKey(base()), configKey(changed))
		})
	}
	t.Run("an exec command with other arguments rebuilds them", func(t *testing.T) {
		a, b := base(), base()
		a.ExecProvider = &clientcmdapi.ExecConfig{Command: "aws", Args: []string{"--cluster-name", "a"}}
		b.ExecProvider = &clientcmdapi.ExecConfig{Command: "aws", Args: []string{"--cluster-name", "b"}}
		assert.NotEqual(t, configKey(a), configKey(b))
	})
	t.Run("the same configuration keeps them", func(t *testing.T) { assert.Equal(t, configKey(base()), configKey(base())) })
}

func TestAMemberWhoseDiscoveryFailsIsAskedOncePerPass(t *testing.T) {
	var tmpls []*unstructured.Unstructured
	for _, name := range []string{"c1", "c2", "c3", "c4"} {
		tmpls = append(tmpls, tmplWith(t, `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"`+name+`","namespace":"shop"}}`,
			map[string]string{AnnoClusters: "east"}))
	}
	hub, east := newFakeCluster(t, "", tmpls...), newFakeCluster(t, "")
	east.disc.PrependReactor("get", "*", func(clienttesting.Action) (bool, runtime.Object, error) {
		return true, nil, errors.New("the server is currently unable to handle the request")
	})
	c := newTestController(t, map[string]*fakeCluster{"hub": hub, "east": east})
	for pass := 1; pass <= 2; pass++ {
		c.reconcileAll(context.Background())
		assert.Len(t, east.disc.Actions(), pass, "one discovery read per pass")
	}
	st := c.Statuses()
	require.Len(t, st, 4)
	for _, s := range st {
		assert.Contains(t, s.Clusters["east"].Error, "unable to handle the request", s.Template)
	}
}

func TestDeletingANamespaceTemplateReleasesTheMembersNamespacesInsteadOfDeletingThem(t *testing.T) {
	ns := tmplWith(t, `{"apiVersion":"v1","kind":"Namespace","metadata":{"name":"shop"}}`, map[string]string{AnnoClusters: "east"})
	hub, east := newFakeCluster(t, "", ns), newFakeCluster(t, "")
	c := newTestController(t, map[string]*fakeCluster{"hub": hub, "east": east})
	c.reconcileAll(context.Background())
	cp, ok := east.get(gvrNamespace, "", "shop")
	require.True(t, ok)
	require.Equal(t, "true", cp.GetLabels()[LabelPropagated])

	// The template loses its annotation (as when it is deleted): the copy,
	// which may hold objects that are not Meridian's, stays, released.
	gone := ns.DeepCopy()
	gone.SetAnnotations(nil)
	gone.SetFinalizers([]string{Finalizer})
	hub2 := newFakeCluster(t, "", gone)
	c2 := newTestController(t, map[string]*fakeCluster{"hub": hub2, "east": east})
	c2.reconcileAll(context.Background())
	cp, ok = east.get(gvrNamespace, "", "shop")
	require.True(t, ok, "the namespace is not deleted")
	assert.NotContains(t, cp.GetLabels(), LabelPropagated, "released")
	assert.NotContains(t, cp.GetAnnotations(), AnnoTemplate)
	got, _ := hub2.get(gvrNamespace, "", "shop")
	assert.NotContains(t, got.GetFinalizers(), Finalizer, "the template's finalizer goes once released")
}

func TestAnAutoscaledWorkloadKeepsTheReplicaCountTheMembersHPASet(t *testing.T) {
	deploy := tmplWith(t, `{"apiVersion":"apps/v1","kind":"Deployment","metadata":{"name":"web","namespace":"shop"},"spec":{"replicas":4}}`,
		map[string]string{AnnoClusters: "east"})
	hpa := tmplWith(t, `{"apiVersion":"autoscaling/v2","kind":"HorizontalPodAutoscaler","metadata":{"name":"web","namespace":"shop"},
		"spec":{"scaleTargetRef":{"apiVersion":"apps/v1","kind":"Deployment","name":"web"},"minReplicas":2,"maxReplicas":10}}`,
		map[string]string{AnnoClusters: "east"})
	tests := []struct {
		name     string
		withHPA  bool
		memberAt int64 // the copy's replicas in the member before the pass (0: no copy yet)
		want     int64
	}{
		{"a new copy starts at the template's count", true, 0, 4},
		{"an existing copy keeps the count its HPA set", true, 9, 9},
		{"without an HPA template the template's count wins", false, 9, 4},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			objs := []*unstructured.Unstructured{deploy}
			if tt.withHPA {
				objs = append(objs, hpa)
			}
			hub := newFakeCluster(t, "", objs...)
			var memberObjs []*unstructured.Unstructured
			if tt.memberAt > 0 {
				n := int64(4)
				cp, _, err := Render(deploy, "east", &n, Spec{ReplicasPath: []string{"spec", "replicas"}})
				require.NoError(t, err)
				require.NoError(t, unstructured.SetNestedField(cp.Object, tt.memberAt, "spec", "replicas"))
				memberObjs = append(memberObjs, cp)
			}
			east := newFakeCluster(t, "", memberObjs...)
			c := newTestController(t, map[string]*fakeCluster{"hub": hub, "east": east})
			c.reconcileAll(context.Background())
			got, ok := east.get(gvrDeployment, "shop", "web")
			require.True(t, ok)
			n, _, _ := unstructured.NestedInt64(got.Object, "spec", "replicas")
			assert.Equal(t, tt.want, n)
			for _, st := range c.Statuses() {
				if st.Template == "Deployment.apps/shop/web" && tt.withHPA {
					assert.Equal(t, "HorizontalPodAutoscaler.autoscaling/shop/web", st.ScaledBy)
				}
			}
		})
	}
}

func TestAKindTheHubRefusesIsAskedAgainOnlyEveryFewPasses(t *testing.T) {
	hub := newFakeCluster(t, "", tmplWith(t, `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"c","namespace":"shop"}}`, map[string]string{AnnoClusters: "east"}))
	lists := 0
	hub.meta.PrependReactor("list", "configmaps", func(clienttesting.Action) (bool, runtime.Object, error) {
		lists++
		return true, nil, apierrors.NewForbidden(schema.GroupResource{Resource: "configmaps"}, "", errors.New("no"))
	})
	c := newTestController(t, map[string]*fakeCluster{"hub": hub, "east": newFakeCluster(t, "")})
	for range recheckForbidden + 2 {
		c.reconcileAll(context.Background())
	}
	assert.Equal(t, 2, lists, "asked on the first pass and once more after recheckForbidden passes")
	assert.Equal(t, 1, c.kinds[1], "still counted as forbidden while skipped")
}

func TestAKindThatFailsToListKeepsItsTemplatesStatuses(t *testing.T) {
	hub := newFakeCluster(t, "", tmplWith(t, `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"c","namespace":"shop"}}`, map[string]string{AnnoClusters: "east"}))
	c := newTestController(t, map[string]*fakeCluster{"hub": hub, "east": newFakeCluster(t, "")})
	c.reconcileAll(context.Background())
	require.Len(t, c.Statuses(), 1)
	hub.meta.PrependReactor("list", "configmaps", func(clienttesting.Action) (bool, runtime.Object, error) {
		return true, nil, errors.New("etcdserver: request timed out")
	})
	c.reconcileAll(context.Background())
	assert.Len(t, c.Statuses(), 1, "a failed list is not a deleted template")
}
