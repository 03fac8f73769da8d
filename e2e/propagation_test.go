//go:build e2e

package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"

	"github.com/meridian-gslb/meridian/e2e/kubelab"
	"github.com/meridian-gslb/meridian/internal/propagation"
)

const propagationConfig = `
# These loopback tests query far faster than the default RRL rate (200/s
# per /24), all from 127.0.0.1: raise the limit, keep RRL on.
server: {dns: {rrl: {responses_per_second: 1000000}}}
zones:
  - apex: gslb.example.com
    nameservers: [{name: ns1.gslb.example.com, ipv4: [127.0.0.1]}]
health: {interval: 1s, timeout: 500ms}
ring: {enabled: true, node_name: solo, region: r1, bind: "127.0.0.1:%[1]d"}
decision: {hold_down: 2s}
clusters:
  - {name: hub, region: hub, kubernetes: {kubeconfig: "%[2]s"}, heartbeat: {interval: 500ms, grace: 2s}}
  - {name: east, region: us-east, labels: {tier: prod, meridian.io/cost: "5"}, kubernetes: {kubeconfig: "%[3]s"}, heartbeat: {interval: 500ms, grace: 2s}}
  - {name: west, region: us-west, labels: {tier: prod, meridian.io/cost: "1"}, kubernetes: {kubeconfig: "%[4]s"}, heartbeat: {interval: 500ms, grace: 2s}}
kubernetes:
  retry_interval: 500ms
  connect_timeout: 2s
  propagation: {hub: hub, interval: 500ms, toleration: 3s}
`

func deployment(name string, replicas int32, image string, anno map[string]string) *appsv1.Deployment {
	lbl := map[string]string{"app": name}
	return &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: name, Annotations: anno},
		Spec: appsv1.DeploymentSpec{
			Replicas: ptr.To(replicas),
			Selector: &metav1.LabelSelector{MatchLabels: lbl},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: lbl},
				Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: image}}},
			},
		},
	}
}

func adminClient(m *kubelab.Member) kubernetes.Interface {
	c, err := kubernetes.NewForConfig(m.AdminConfig())
	if err != nil {
		panic(err)
	}
	return c
}

func copyOf(m *kubelab.Member, ns, name string) (*appsv1.Deployment, error) {
	return adminClient(m).AppsV1().Deployments(ns).Get(context.Background(), name, metav1.GetOptions{})
}

func replicasIn(m *kubelab.Member, ns, name string) int32 {
	d, err := adminClient(m).AppsV1().Deployments(ns).Get(context.Background(), name, metav1.GetOptions{})
	if err != nil || d.Spec.Replicas == nil {
		return -1
	}
	return *d.Spec.Replicas
}

func annotateDeployment(t *testing.T, m *kubelab.Member, ns, name string, anno map[string]any) {
	t.Helper()
	patch, _ := json.Marshal(map[string]any{"metadata": map[string]any{"annotations": anno}})
	_, err := m.Client(t).AppsV1().Deployments(ns).Patch(context.Background(), name, types.MergePatchType, patch, metav1.PatchOptions{})
	require.NoError(t, err)
}

func placementOf(t *testing.T, m *instance, ref string) (propagation.Status, bool) {
	t.Helper()
	resp, err := http.Get(m.http + "/v1/placement")
	require.NoError(t, err)
	defer resp.Body.Close()
	var ps []propagation.Status
	require.NoError(t, json.NewDecoder(resp.Body).Decode(&ps))
	for _, p := range ps {
		if p.Template == ref {
			return p, true
		}
	}
	return propagation.Status{}, false
}

// TestPropagation places Deployments from a hub kube-apiserver into two
// members (east, west), all real API servers.
func TestPropagation(t *testing.T) {
	lab := kubelab.Start(t, kubelab.Bins(t), "hub", "east", "west")
	hub, east, west := lab.Member("hub"), lab.Member("east"), lab.Member("west")
	hub.EnsureNamespace(t, "meridian") // the writer Lease lives where Meridian runs
	m := startMeridian(t, fmt.Sprintf(propagationConfig, freePort(t),
		hub.Kubeconfig(t, kubelab.AdminUser), east.Kubeconfig(t, kubelab.AdminUser), west.Kubeconfig(t, kubelab.AdminUser)))
	ctx := context.Background()

	// The traffic side: the same global service in both members, 3:1.
	lbService(t, east, "shop", "web", map[string]string{"meridian.io/hostname": "app.gslb.example.com", "meridian.io/weight": "3"}, "127.0.0.101")
	lbService(t, west, "shop", "web", map[string]string{"meridian.io/hostname": "app.gslb.example.com", "meridian.io/weight": "1"}, "127.0.0.102")
	hub.EnsureNamespace(t, "shop")
	_, err := hub.Client(t).AppsV1().Deployments("shop").Create(ctx, deployment("web", 10, "nginx:1.27", map[string]string{
		"meridian.io/propagate": "true", "meridian.io/clusters": "east,west", "meridian.io/replicas": "divided",
		"meridian.io/hostname": "app.gslb.example.com"}), metav1.CreateOptions{})
	require.NoError(t, err)
	created := time.Now()

	t.Run("1: 10 replicas at 3:1 become 7 and 3, and follow the traffic weight with the DNS split", func(t *testing.T) {
		require.Eventually(t, func() bool { return replicasIn(east, "shop", "web") == 7 && replicasIn(west, "shop", "web") == 3 },
			30*time.Second, 50*time.Millisecond, "7/3:\n%s", m.log())
		t.Logf("FIGURE propagation: template created → 7/3 in the members in %s", time.Since(created).Round(10*time.Millisecond))
		d, err := copyOf(east, "shop", "web")
		require.NoError(t, err)
		assert.Equal(t, "true", d.Labels["meridian.io/propagated"])
		assert.Equal(t, "Deployment.apps/shop/web", d.Annotations["meridian.io/template"])
		for _, mf := range d.ManagedFields {
			if mf.Operation == metav1.ManagedFieldsOperationApply {
				assert.Equal(t, "meridian", mf.Manager, "server-side applied by field manager meridian")
			}
		}

		annotate(t, east, "shop", "web", "meridian.io/weight", "1")
		changed := time.Now()
		require.Eventually(t, func() bool { return replicasIn(east, "shop", "web") == 5 && replicasIn(west, "shop", "web") == 5 },
			20*time.Second, 20*time.Millisecond)
		replicasAt := time.Since(changed)
		require.Eventually(t, func() bool {
			s, err := quickShare(m, "app.gslb.example.com.", "127.0.0.101", 200)
			return err == nil && s > 40 && s < 60
		}, 20*time.Second, 20*time.Millisecond)
		dnsAt := time.Since(changed)
		t.Logf("FIGURE propagation: weight 3:1 → 1:1 on the Service: replicas 5/5 in %s, DNS split ~50%% in %s",
			replicasAt.Round(10*time.Millisecond), dnsAt.Round(10*time.Millisecond))
		annotate(t, east, "shop", "web", "meridian.io/weight", "3")
		require.Eventually(t, func() bool { return replicasIn(east, "shop", "web") == 7 && replicasIn(west, "shop", "web") == 3 },
			20*time.Second, 50*time.Millisecond)
	})

	t.Run("2: an image-registry override for one cluster; a bad patch is reported and breaks nothing else", func(t *testing.T) {
		annotateDeployment(t, hub, "shop", "web", map[string]any{"meridian.io/image-registry": "west=registry.west.example.com"})
		require.Eventually(t, func() bool {
			w, err1 := copyOf(west, "shop", "web")
			e, err2 := copyOf(east, "shop", "web")
			return err1 == nil && err2 == nil && w.Spec.Template.Spec.Containers[0].Image == "registry.west.example.com/nginx:1.27" &&
				e.Spec.Template.Spec.Containers[0].Image == "nginx:1.27"
		}, 20*time.Second, 50*time.Millisecond)
		before, err := copyOf(east, "shop", "web")
		require.NoError(t, err)

		// A patch that cannot apply for east, and a new image for everyone.
		annotateDeployment(t, hub, "shop", "web", map[string]any{"meridian.io/overrides": `{"east":[{"op":"replace","path":"/spec/template/spec/nosuchfield/x","value":1}]}`})
		patch := []byte(`{"spec":{"template":{"spec":{"containers":[{"name":"app","image":"nginx:1.28"}]}}}}`)
		_, err = hub.Client(t).AppsV1().Deployments("shop").Patch(ctx, "web", types.StrategicMergePatchType, patch, metav1.PatchOptions{})
		require.NoError(t, err)
		require.Eventually(t, func() bool {
			w, err := copyOf(west, "shop", "web")
			return err == nil && w.Spec.Template.Spec.Containers[0].Image == "registry.west.example.com/nginx:1.28"
		}, 20*time.Second, 50*time.Millisecond, "west still follows the template")
		var st propagation.Status
		require.Eventually(t, func() bool {
			var ok bool
			st, ok = placementOf(t, m, "Deployment.apps/shop/web")
			return ok && strings.Contains(st.Clusters["east"].Error, "does not apply")
		}, 20*time.Second, 50*time.Millisecond)
		t.Logf("east's status: %+v", st.Clusters["east"])
		after, err := copyOf(east, "shop", "web")
		require.NoError(t, err)
		assert.Equal(t, "nginx:1.27", after.Spec.Template.Spec.Containers[0].Image, "east keeps its last good object")
		assert.Equal(t, before.Generation, after.Generation)
		tmpl, err := hub.Client(t).AppsV1().Deployments("shop").Get(ctx, "web", metav1.GetOptions{})
		require.NoError(t, err)
		assert.Contains(t, tmpl.Annotations["meridian.io/placement-status"], "does not apply", "reported on the template")
		assert.Contains(t, m.metrics(t), "meridian_propagation_cluster_errors 1")
		// Fixed: east catches up.
		annotateDeployment(t, hub, "shop", "web", map[string]any{"meridian.io/overrides": nil})
		require.Eventually(t, func() bool {
			e, err := copyOf(east, "shop", "web")
			return err == nil && e.Spec.Template.Spec.Containers[0].Image == "nginx:1.28"
		}, 20*time.Second, 50*time.Millisecond)
	})

	t.Run("3: a stopped member's share moves to the survivor after the toleration, and returns after the hold-down", func(t *testing.T) {
		killed := time.Now()
		require.NoError(t, west.Kill())
		require.Eventually(t, func() bool { return replicasIn(east, "shop", "web") == 10 }, 40*time.Second, 50*time.Millisecond, "%s", m.log())
		moved := time.Since(killed)
		t.Logf("FIGURE propagation: west killed → east carries 10 in %s (heartbeat grace 2s + decision + toleration 3s)", moved.Round(10*time.Millisecond))
		assert.Greater(t, moved, 4*time.Second, "not before grace + toleration")
		require.NoError(t, west.Start())
		restarted := time.Now()
		require.Eventually(t, func() bool { return replicasIn(east, "shop", "web") == 7 && replicasIn(west, "shop", "web") == 3 },
			40*time.Second, 50*time.Millisecond, "%s", m.log())
		back := time.Since(restarted)
		t.Logf("FIGURE propagation: west restarted → 7/3 again in %s (hold-down 2s)", back.Round(10*time.Millisecond))
		assert.Greater(t, back, 2*time.Second, "not before the hold-down")
	})

	t.Run("4 and 5: a foreign Deployment is never touched; deleting templates removes only our copies", func(t *testing.T) {
		west.EnsureNamespace(t, "shop")
		_, err := west.Client(t).AppsV1().Deployments("shop").Create(ctx, deployment("legacy", 2, "legacy:1", nil), metav1.CreateOptions{})
		require.NoError(t, err)
		_, err = hub.Client(t).AppsV1().Deployments("shop").Create(ctx, deployment("legacy", 4, "legacy:2", map[string]string{
			"meridian.io/propagate": "true", "meridian.io/clusters": "east,west"}), metav1.CreateOptions{})
		require.NoError(t, err)
		require.Eventually(t, func() bool {
			st, ok := placementOf(t, m, "Deployment.apps/shop/legacy")
			return ok && strings.Contains(st.Clusters["west"].Error, "is not Meridian's") && replicasIn(east, "shop", "legacy") == 4
		}, 20*time.Second, 50*time.Millisecond)
		foreign, err := copyOf(west, "shop", "legacy")
		require.NoError(t, err)
		assert.Equal(t, "legacy:1", foreign.Spec.Template.Spec.Containers[0].Image)
		assert.Equal(t, int32(2), *foreign.Spec.Replicas)
		assert.Empty(t, foreign.Labels["meridian.io/propagated"])

		for _, name := range []string{"legacy", "web"} {
			require.NoError(t, hub.Client(t).AppsV1().Deployments("shop").Delete(ctx, name, metav1.DeleteOptions{}))
		}
		deleted := time.Now()
		require.Eventually(t, func() bool {
			_, e1 := copyOf(east, "shop", "legacy")
			_, e2 := copyOf(east, "shop", "web")
			_, w2 := copyOf(west, "shop", "web")
			_, h1 := hub.Client(t).AppsV1().Deployments("shop").Get(ctx, "web", metav1.GetOptions{})
			return apierrors.IsNotFound(e1) && apierrors.IsNotFound(e2) && apierrors.IsNotFound(w2) && apierrors.IsNotFound(h1)
		}, 20*time.Second, 50*time.Millisecond, "copies and then the templates (finalizer) are gone")
		t.Logf("FIGURE propagation: templates deleted → copies removed and finalizers released in %s", time.Since(deleted).Round(10*time.Millisecond))
		still, err := copyOf(west, "shop", "legacy")
		require.NoError(t, err, "the foreign Deployment survives")
		assert.Equal(t, "legacy:1", still.Spec.Template.Spec.Containers[0].Image)
	})

	t.Run("rollout one cluster at a time: the next cluster waits until the previous reports ready", func(t *testing.T) {
		_, err := hub.Client(t).AppsV1().Deployments("shop").Create(ctx, deployment("canary", 1, "app:1", map[string]string{
			"meridian.io/propagate": "true", "meridian.io/clusters": "east,west", "meridian.io/rollout": "one-by-one"}), metav1.CreateOptions{})
		require.NoError(t, err)
		// No kube-controller-manager here: the test reports readiness as it would.
		ready := func(mm *kubelab.Member) {
			d, err := copyOf(mm, "shop", "canary")
			require.NoError(t, err)
			d.Status.ObservedGeneration, d.Status.Replicas, d.Status.ReadyReplicas = d.Generation, 1, 1
			_, err = mm.Client(t).AppsV1().Deployments("shop").UpdateStatus(ctx, d, metav1.UpdateOptions{})
			require.NoError(t, err)
		}
		require.Eventually(t, func() bool { _, err := copyOf(east, "shop", "canary"); return err == nil }, 20*time.Second, 50*time.Millisecond)
		ready(east)
		require.Eventually(t, func() bool { _, err := copyOf(west, "shop", "canary"); return err == nil }, 20*time.Second, 50*time.Millisecond)
		ready(west)
		patch := []byte(`{"spec":{"template":{"spec":{"containers":[{"name":"app","image":"app:2"}]}}}}`)
		_, err = hub.Client(t).AppsV1().Deployments("shop").Patch(ctx, "canary", types.StrategicMergePatchType, patch, metav1.PatchOptions{})
		require.NoError(t, err)
		image := func(mm *kubelab.Member) string {
			d, err := copyOf(mm, "shop", "canary")
			if err != nil {
				return ""
			}
			return d.Spec.Template.Spec.Containers[0].Image
		}
		require.Eventually(t, func() bool { return image(east) == "app:2" }, 20*time.Second, 50*time.Millisecond, "the canary cluster first")
		time.Sleep(2 * time.Second) // four reconcile periods
		assert.Equal(t, "app:1", image(west), "west waits while east is not ready with the new generation")
		ready(east)
		require.Eventually(t, func() bool { return image(west) == "app:2" }, 20*time.Second, 50*time.Millisecond, "then west")
	})

	t.Run("a selector ranks clusters by free resources, health and cost", func(t *testing.T) {
		for _, n := range []struct {
			m   *kubelab.Member
			cpu string
		}{{east, "4"}, {west, "16"}} {
			_, err := n.m.Client(t).CoreV1().Nodes().Create(ctx, &corev1.Node{
				ObjectMeta: metav1.ObjectMeta{Name: "node-1"},
				Status: corev1.NodeStatus{Allocatable: corev1.ResourceList{
					corev1.ResourceCPU: resource.MustParse(n.cpu), corev1.ResourceMemory: resource.MustParse("32Gi")}},
			}, metav1.CreateOptions{})
			require.NoError(t, err)
		}
		_, err := hub.Client(t).AppsV1().Deployments("shop").Create(ctx, deployment("batch", 2, "batch:1", map[string]string{
			"meridian.io/propagate": "true", "meridian.io/cluster-selector": "tier=prod", "meridian.io/max-clusters": "1"}), metav1.CreateOptions{})
		require.NoError(t, err)
		require.Eventually(t, func() bool { return replicasIn(west, "shop", "batch") == 2 }, 20*time.Second, 50*time.Millisecond)
		_, err = copyOf(east, "shop", "batch")
		assert.True(t, apierrors.IsNotFound(err), "only the best cluster")
		st, _ := placementOf(t, m, "Deployment.apps/shop/batch")
		t.Logf("selector scores: %v", st.Scores)
		assert.Greater(t, st.Scores["west"], st.Scores["east"])
	})
}
