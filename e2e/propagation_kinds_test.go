//go:build e2e

package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/client-go/dynamic"
	"k8s.io/utils/ptr"

	"github.com/meridian-gslb/meridian/deploy/kustomize"
	"github.com/meridian-gslb/meridian/e2e/kubelab"
)

const propagationKindsConfig = `
zones:
  - apex: gslb.example.com
    nameservers: [{name: ns1.gslb.example.com, ipv4: [127.0.0.1]}]
health: {interval: 1s, timeout: 500ms}
ring: {enabled: true, node_name: solo, region: r1, bind: "127.0.0.1:%[1]d"}
clusters:
  - {name: hub, region: hub, kubernetes: {kubeconfig: "%[2]s"}}
  - {name: east, region: us-east, kubernetes: {kubeconfig: "%[3]s"}}
  - {name: west, region: us-west, kubernetes: {kubeconfig: "%[4]s"}}
kubernetes:
  retry_interval: 500ms
  connect_timeout: 2s
  propagation: {hub: hub, interval: 500ms}
`

// The test CRD, served by every cluster's kube-apiserver (apiextensions is
// built in); its instances have a status subresource with conditions.
const widgetCRD = `
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {name: widgets.example.meridian.io}
spec:
  group: example.meridian.io
  scope: Namespaced
  names: {plural: widgets, singular: widget, kind: Widget, listKind: WidgetList}
  versions:
    - name: v1
      served: true
      storage: true
      subresources: {status: {}}
      schema:
        openAPIV3Schema:
          type: object
          properties:
            spec:
              type: object
              properties:
                size: {type: string}
                workers: {type: integer}
            status:
              type: object
              properties:
                conditions:
                  type: array
                  items:
                    type: object
                    properties:
                      type: {type: string}
                      status: {type: string}
`

var (
	gvrWidget = schema.GroupVersionResource{Group: "example.meridian.io", Version: "v1", Resource: "widgets"}
	gvrCRD    = schema.GroupVersionResource{Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions"}
)

func dynOf(m *kubelab.Member) dynamic.Interface {
	d, err := dynamic.NewForConfig(m.AdminConfig())
	if err != nil {
		panic(err)
	}
	return d
}

func installWidgetCRD(t *testing.T, m *kubelab.Member) {
	t.Helper()
	u := &unstructured.Unstructured{}
	require.NoError(t, yaml.Unmarshal([]byte(widgetCRD), &u.Object))
	_, err := dynOf(m).Resource(gvrCRD).Create(context.Background(), u, metav1.CreateOptions{})
	require.NoError(t, err)
	require.Eventually(t, func() bool {
		_, err := dynOf(m).Resource(gvrWidget).Namespace("data").List(context.Background(), metav1.ListOptions{})
		return err == nil
	}, 20*time.Second, 50*time.Millisecond, "widgets served by %s", m.Name)
}

// creationRV is the etcd revision an object was created at: a cluster's
// objects compare by it, so it shows the order Meridian created them in.
func creationRV(t *testing.T, m *kubelab.Member, gvr schema.GroupVersionResource, ns, name string) uint64 {
	t.Helper()
	// managedFields keep no revision; the object's first revision is its
	// resourceVersion as long as nothing else wrote it since — the test
	// reads before anything else touches the copies.
	u, err := dynOf(m).Resource(gvr).Namespace(ns).Get(context.Background(), name, metav1.GetOptions{})
	require.NoError(t, err, "%s %s/%s in %s", gvr.Resource, ns, name, m.Name)
	rv, err := strconv.ParseUint(u.GetResourceVersion(), 10, 64)
	require.NoError(t, err)
	return rv
}

func gone(m *kubelab.Member, gvr schema.GroupVersionResource, ns, name string) bool {
	_, err := dynOf(m).Resource(gvr).Namespace(ns).Get(context.Background(), name, metav1.GetOptions{})
	return apierrors.IsNotFound(err)
}

// TestPropagationOfAnyKind runs propagation as the opt-in component's
// service account (not admin) in a hub and two members: a Namespace, a
// ServiceAccount, a ConfigMap, a StatefulSet divided 7/3, an HPA and a PDB
// with per-cluster overrides, and an instance of a CRD installed after
// Meridian started.
func TestPropagationOfAnyKind(t *testing.T) {
	lab := kubelab.Start(t, kubelab.Bins(t), "hub", "east", "west")
	hub, east, west := lab.Member("hub"), lab.Member("east"), lab.Member("west")
	example, err := os.ReadFile(filepath.Join(kustomize.Dir(), "components", "propagation", "extra-kinds.example.yaml"))
	require.NoError(t, err)
	kcs := map[string]string{}
	for _, m := range []*kubelab.Member{hub, east, west} {
		applyRBAC(t, m, "propagation")
		// The documented way to grant a CRD: the example file, as shipped.
		require.Equal(t, 2, createRBAC(t, m, example, false), "the example's ClusterRole and binding")
		kcs[m.Name] = m.Kubeconfig(t, kubelab.TokenUser(m.ServiceAccountToken(t, "meridian", "meridian")))
	}
	ctx := context.Background()

	// Templates in the hub, created in reverse dependency order before
	// Meridian starts: the first pass must still create them in order.
	hub.EnsureNamespace(t, "data")
	place := func(extra map[string]string) map[string]string {
		a := map[string]string{"meridian.io/propagate": "true", "meridian.io/clusters": "east,west"}
		for k, v := range extra {
			a[k] = v
		}
		return a
	}
	lbl := map[string]string{"app": "db"}
	hc := hub.Client(t)
	_, err = hc.PolicyV1().PodDisruptionBudgets("data").Create(ctx, &policyv1.PodDisruptionBudget{
		ObjectMeta: metav1.ObjectMeta{Name: "db", Annotations: place(nil)},
		Spec:       policyv1.PodDisruptionBudgetSpec{MinAvailable: ptr.To(intstr.FromInt32(1)), Selector: &metav1.LabelSelector{MatchLabels: lbl}},
	}, metav1.CreateOptions{})
	require.NoError(t, err)
	_, err = hc.AutoscalingV2().HorizontalPodAutoscalers("data").Create(ctx, &autoscalingv2.HorizontalPodAutoscaler{
		ObjectMeta: metav1.ObjectMeta{Name: "db", Annotations: place(map[string]string{
			"meridian.io/overrides": `{"west":[{"op":"replace","path":"/spec/maxReplicas","value":5}]}`})},
		Spec: autoscalingv2.HorizontalPodAutoscalerSpec{MinReplicas: ptr.To(int32(2)), MaxReplicas: 10,
			ScaleTargetRef: autoscalingv2.CrossVersionObjectReference{APIVersion: "apps/v1", Kind: "StatefulSet", Name: "db"}},
	}, metav1.CreateOptions{})
	require.NoError(t, err)
	_, err = hc.AppsV1().StatefulSets("data").Create(ctx, &appsv1.StatefulSet{
		ObjectMeta: metav1.ObjectMeta{Name: "db", Annotations: place(map[string]string{
			"meridian.io/replicas": "divided", "meridian.io/weights": "east=7,west=3"})},
		Spec: appsv1.StatefulSetSpec{Replicas: ptr.To(int32(10)), ServiceName: "db", Selector: &metav1.LabelSelector{MatchLabels: lbl},
			Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: lbl},
				Spec: corev1.PodSpec{ServiceAccountName: "db", Containers: []corev1.Container{{Name: "db", Image: "postgres:17",
					EnvFrom: []corev1.EnvFromSource{{ConfigMapRef: &corev1.ConfigMapEnvSource{LocalObjectReference: corev1.LocalObjectReference{Name: "db-config"}}}}}}}}},
	}, metav1.CreateOptions{})
	require.NoError(t, err)
	_, err = hc.CoreV1().ConfigMaps("data").Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "db-config", Annotations: place(nil)},
		Data: map[string]string{"POSTGRES_DB": "shop"}}, metav1.CreateOptions{})
	require.NoError(t, err)
	_, err = hc.CoreV1().ServiceAccounts("data").Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "db", Annotations: place(nil)}}, metav1.CreateOptions{})
	require.NoError(t, err)
	nsPatch, _ := json.Marshal(map[string]any{"metadata": map[string]any{"labels": map[string]string{"team": "data"}, "annotations": place(nil)}})
	_, err = hc.CoreV1().Namespaces().Patch(ctx, "data", "application/merge-patch+json", nsPatch, metav1.PatchOptions{})
	require.NoError(t, err)

	m := startMeridian(t, fmt.Sprintf(propagationKindsConfig, freePort(t), kcs["hub"], kcs["east"], kcs["west"]))
	started := time.Now()

	gvrNS := schema.GroupVersionResource{Version: "v1", Resource: "namespaces"}
	gvrSA := schema.GroupVersionResource{Version: "v1", Resource: "serviceaccounts"}
	gvrCM := schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}
	gvrSTS := schema.GroupVersionResource{Group: "apps", Version: "v1", Resource: "statefulsets"}
	gvrHPA := schema.GroupVersionResource{Group: "autoscaling", Version: "v2", Resource: "horizontalpodautoscalers"}
	gvrPDB := schema.GroupVersionResource{Group: "policy", Version: "v1", Resource: "poddisruptionbudgets"}
	stsReplicas := func(mm *kubelab.Member) int32 {
		s, err := mm.Client(t).AppsV1().StatefulSets("data").Get(ctx, "db", metav1.GetOptions{})
		if err != nil || s.Spec.Replicas == nil {
			return -1
		}
		return *s.Spec.Replicas
	}

	t.Run("a StatefulSet's 10 replicas are divided 7/3; its HPA, PDB, ConfigMap, ServiceAccount and Namespace follow, in dependency order", func(t *testing.T) {
		require.Eventually(t, func() bool {
			_, e1 := east.Client(t).PolicyV1().PodDisruptionBudgets("data").Get(ctx, "db", metav1.GetOptions{})
			_, e2 := west.Client(t).PolicyV1().PodDisruptionBudgets("data").Get(ctx, "db", metav1.GetOptions{})
			return stsReplicas(east) == 7 && stsReplicas(west) == 3 && e1 == nil && e2 == nil
		}, 60*time.Second, 100*time.Millisecond, "7/3 and every kind placed:\n%s", m.log())
		t.Logf("FIGURE propagation (any kind): meridian started → Namespace, ServiceAccount, ConfigMap, StatefulSet 7/3, HPA, PDB in both members in %s",
			time.Since(started).Round(10*time.Millisecond))
		for _, mm := range []*kubelab.Member{east, west} {
			order := []struct {
				gvr      schema.GroupVersionResource
				ns, name string
			}{{gvrNS, "", "data"}, {gvrSA, "data", "db"}, {gvrCM, "data", "db-config"}, {gvrSTS, "data", "db"}, {gvrHPA, "data", "db"}, {gvrPDB, "data", "db"}}
			var rvs []uint64
			for _, o := range order {
				rvs = append(rvs, creationRV(t, mm, o.gvr, o.ns, o.name))
			}
			t.Logf("%s: creation revisions Namespace, ServiceAccount, ConfigMap, StatefulSet, HPA, PDB = %v", mm.Name, rvs)
			assert.Less(t, rvs[0], rvs[1], "%s: Namespace before ServiceAccount", mm.Name)
			assert.Less(t, rvs[1], rvs[2], "%s: ServiceAccount before ConfigMap", mm.Name)
			assert.Less(t, rvs[2], rvs[3], "%s: ConfigMap before the StatefulSet", mm.Name)
			assert.Less(t, rvs[3], rvs[4], "%s: the StatefulSet before its HPA", mm.Name)
			assert.Less(t, rvs[3], rvs[5], "%s: the StatefulSet before its PDB", mm.Name)
			ns, err := mm.Client(t).CoreV1().Namespaces().Get(ctx, "data", metav1.GetOptions{})
			require.NoError(t, err)
			assert.Equal(t, "data", ns.Labels["team"], "the Namespace template's labels")
			assert.Equal(t, "true", ns.Labels["meridian.io/propagated"])
			sts, err := mm.Client(t).AppsV1().StatefulSets("data").Get(ctx, "db", metav1.GetOptions{})
			require.NoError(t, err)
			assert.Equal(t, "StatefulSet.apps/data/db", sts.Annotations["meridian.io/template"])
		}
		hpaE, err := east.Client(t).AutoscalingV2().HorizontalPodAutoscalers("data").Get(ctx, "db", metav1.GetOptions{})
		require.NoError(t, err)
		hpaW, err := west.Client(t).AutoscalingV2().HorizontalPodAutoscalers("data").Get(ctx, "db", metav1.GetOptions{})
		require.NoError(t, err)
		assert.Equal(t, int32(10), hpaE.Spec.MaxReplicas)
		assert.Equal(t, int32(5), hpaW.Spec.MaxReplicas, "west's override")
	})

	t.Run("status is aggregated per cluster from readyReplicas", func(t *testing.T) {
		for _, mm := range []*kubelab.Member{east, west} {
			s, err := mm.Client(t).AppsV1().StatefulSets("data").Get(ctx, "db", metav1.GetOptions{})
			require.NoError(t, err)
			s.Status.ObservedGeneration, s.Status.Replicas, s.Status.ReadyReplicas = s.Generation, *s.Spec.Replicas, *s.Spec.Replicas
			_, err = mm.Client(t).AppsV1().StatefulSets("data").UpdateStatus(ctx, s, metav1.UpdateOptions{})
			require.NoError(t, err)
		}
		require.Eventually(t, func() bool {
			st, ok := placementOf(t, m, "StatefulSet.apps/data/db")
			return ok && st.Ready == 10 && st.Desired == 10 && st.Healthy == 2 && st.Clusters["east"].Ready == 7 && st.Clusters["west"].Ready == 3
		}, 20*time.Second, 100*time.Millisecond)
		tmpl, err := hub.Client(t).AppsV1().StatefulSets("data").Get(ctx, "db", metav1.GetOptions{})
		require.NoError(t, err)
		assert.Contains(t, tmpl.Annotations["meridian.io/placement-status"], `"ready":7`, "written on the template")
	})

	t.Run("a StatefulSet scaled by its HPA keeps the member's count", func(t *testing.T) {
		// No controller-manager here: the test scales east as its HPA would.
		s, err := east.Client(t).AppsV1().StatefulSets("data").Get(ctx, "db", metav1.GetOptions{})
		require.NoError(t, err)
		s.Spec.Replicas = ptr.To(int32(9))
		_, err = east.Client(t).AppsV1().StatefulSets("data").Update(ctx, s, metav1.UpdateOptions{FieldManager: "kube-controller-manager"})
		require.NoError(t, err)
		time.Sleep(2 * time.Second) // four passes
		assert.Equal(t, int32(9), stsReplicas(east), "Meridian does not set it back to 7")
		assert.Equal(t, int32(3), stsReplicas(west))
		st, ok := placementOf(t, m, "StatefulSet.apps/data/db")
		require.True(t, ok)
		assert.Equal(t, "HorizontalPodAutoscaler.autoscaling/data/db", st.ScaledBy)
		assert.Equal(t, int64(9), st.Clusters["east"].Desired)
	})

	t.Run("a CRD installed after start is discovered; its instance is placed with an override, divided at its replicas-path, and its conditions reported", func(t *testing.T) {
		installWidgetCRD(t, hub)
		installWidgetCRD(t, east) // west does not serve widgets yet
		w := &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": "example.meridian.io/v1", "kind": "Widget",
			"metadata": map[string]any{"name": "w1", "namespace": "data", "annotations": map[string]any{
				"meridian.io/propagate": "true", "meridian.io/clusters": "east,west",
				"meridian.io/replicas": "divided", "meridian.io/weights": "east=7,west=3", "meridian.io/replicas-path": "spec.workers",
				"meridian.io/overrides": `{"east":[{"op":"replace","path":"/spec/size","value":"large"}]}`}},
			"spec": map[string]any{"size": "small", "workers": int64(6)},
		}}
		_, err := dynOf(hub).Resource(gvrWidget).Namespace("data").Create(ctx, w, metav1.CreateOptions{})
		require.NoError(t, err)
		created := time.Now()
		spec := func(mm *kubelab.Member) (string, int64) {
			u, err := dynOf(mm).Resource(gvrWidget).Namespace("data").Get(ctx, "w1", metav1.GetOptions{})
			if err != nil {
				return "", -1
			}
			size, _, _ := unstructured.NestedString(u.Object, "spec", "size")
			n, _, _ := unstructured.NestedInt64(u.Object, "spec", "workers")
			return size, n
		}
		require.Eventually(t, func() bool { s, n := spec(east); return s == "large" && n == 4 }, 30*time.Second, 100*time.Millisecond, "%s", m.log())
		t.Logf("FIGURE propagation (any kind): Widget created in the hub → its copy in east in %s", time.Since(created).Round(10*time.Millisecond))
		require.Eventually(t, func() bool {
			st, ok := placementOf(t, m, "Widget.example.meridian.io/data/w1")
			return ok && strings.Contains(st.Clusters["west"].Error, "does not serve Widget.example.meridian.io")
		}, 20*time.Second, 100*time.Millisecond, "west's missing CRD is reported")

		installWidgetCRD(t, west)
		require.Eventually(t, func() bool { s, n := spec(west); return s == "small" && n == 2 }, 30*time.Second, 100*time.Millisecond,
			"west catches up once it serves the kind: %+v", func() any { st, _ := placementOf(t, m, "Widget.example.meridian.io/data/w1"); return st }())

		u, err := dynOf(east).Resource(gvrWidget).Namespace("data").Get(ctx, "w1", metav1.GetOptions{})
		require.NoError(t, err)
		require.NoError(t, unstructured.SetNestedSlice(u.Object, []any{map[string]any{"type": "Ready", "status": "True"}}, "status", "conditions"))
		_, err = dynOf(east).Resource(gvrWidget).Namespace("data").UpdateStatus(ctx, u, metav1.UpdateOptions{})
		require.NoError(t, err)
		require.Eventually(t, func() bool {
			st, ok := placementOf(t, m, "Widget.example.meridian.io/data/w1")
			return ok && st.Clusters["east"].Healthy && assert.ObjectsAreEqual([]string{"Ready=True"}, st.Clusters["east"].Conditions) && st.Desired == 6
		}, 20*time.Second, 100*time.Millisecond)
	})

	t.Run("kinds the identity may not list are skipped and counted", func(t *testing.T) {
		metrics := m.metrics(t)
		assert.Regexp(t, `meridian_propagation_kinds\{access="forbidden"\} [1-9]`, metrics, "e.g. LimitRanges: not in the component")
		assert.Regexp(t, `meridian_propagation_kinds\{access="readable"\} [1-9]`, metrics)
		assert.Contains(t, m.log(), "propagation: kinds skipped")
	})

	t.Run("deleting the templates removes every copy; the Namespace copies are released, not deleted", func(t *testing.T) {
		deleted := time.Now()
		require.NoError(t, dynOf(hub).Resource(gvrWidget).Namespace("data").Delete(ctx, "w1", metav1.DeleteOptions{}))
		for _, g := range []schema.GroupVersionResource{gvrPDB, gvrHPA, gvrSTS, gvrSA} {
			require.NoError(t, dynOf(hub).Resource(g).Namespace("data").Delete(ctx, "db", metav1.DeleteOptions{}))
		}
		require.NoError(t, dynOf(hub).Resource(gvrCM).Namespace("data").Delete(ctx, "db-config", metav1.DeleteOptions{}))
		require.Eventually(t, func() bool {
			for _, mm := range []*kubelab.Member{east, west} {
				if !gone(mm, gvrWidget, "data", "w1") || !gone(mm, gvrCM, "data", "db-config") {
					return false
				}
				for _, g := range []schema.GroupVersionResource{gvrPDB, gvrHPA, gvrSTS, gvrSA} {
					if !gone(mm, g, "data", "db") {
						return false
					}
				}
			}
			return gone(hub, gvrSTS, "data", "db") && gone(hub, gvrWidget, "data", "w1")
		}, 30*time.Second, 100*time.Millisecond, "copies, then the templates (finalizer) gone:\n%s", m.log())
		t.Logf("FIGURE propagation (any kind): 7 templates deleted → 14 copies removed and finalizers released in %s", time.Since(deleted).Round(10*time.Millisecond))

		// The Namespace template last: its copies are released, never
		// deleted (deleting a namespace deletes what others keep in it).
		require.NoError(t, hub.Client(t).CoreV1().Namespaces().Delete(ctx, "data", metav1.DeleteOptions{}))
		require.Eventually(t, func() bool {
			for _, mm := range []*kubelab.Member{east, west} {
				ns, err := mm.Client(t).CoreV1().Namespaces().Get(ctx, "data", metav1.GetOptions{})
				if err != nil || ns.DeletionTimestamp != nil || ns.Labels["meridian.io/propagated"] != "" {
					return false
				}
			}
			return true
		}, 30*time.Second, 100*time.Millisecond, "the member namespaces stay, released:\n%s", m.log())
	})
}
