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
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/meridian-gslb/meridian/e2e/kubelab"
	"github.com/meridian-gslb/meridian/internal/engine"
)

const capacityConfig = `
# These loopback tests query far faster than the default RRL rate (200/s
# per /24), all from 127.0.0.1: raise the limit, keep RRL on.
server: {dns: {rrl: {responses_per_second: 1000000}}}
zones:
  - apex: gslb.example.com
    nameservers: [{name: ns1.gslb.example.com, ipv4: [127.0.0.1]}]
clusters:
  - {name: east, region: us-east, kubernetes: {kubeconfig: "%[1]s"}}
  - {name: west, region: us-west, kubernetes: {kubeconfig: "%[2]s"}}
kubernetes: {retry_interval: 500ms, connect_timeout: 2s, status_annotation: true}
services:
  # A service of the config file reading the same EndpointSlices, with a
  # shorter minimum change interval.
  - name: file.gslb.example.com
    capacity: {source: kubernetes, kubernetes: {service: shop/web}, min_change_interval: 5s}
    endpoints:
      - {address: 127.0.0.91, cluster: east, weight: 50}
      - {address: 127.0.0.92, cluster: west, weight: 50}
`

// webSlice is the EndpointSlice of shop/web with ready and not ready
// endpoints, as the EndpointSlice controller would write it.
func webSlice(ready, notReady int) *discoveryv1.EndpointSlice {
	s := &discoveryv1.EndpointSlice{
		ObjectMeta:  metav1.ObjectMeta{Name: "web-x7k2p", Namespace: "shop", Labels: map[string]string{discoveryv1.LabelServiceName: "web"}},
		AddressType: discoveryv1.AddressTypeIPv4,
	}
	for i := range ready + notReady {
		s.Endpoints = append(s.Endpoints, discoveryv1.Endpoint{
			Addresses:  []string{fmt.Sprintf("10.1.0.%d", i+1)},
			Conditions: discoveryv1.EndpointConditions{Ready: new(i < ready), Serving: new(i < ready), Terminating: new(false)},
		})
	}
	return s
}

func setWebSlice(t *testing.T, m *kubelab.Member, ready, notReady int) {
	t.Helper()
	c := m.Client(t).DiscoveryV1().EndpointSlices("shop")
	cur, err := c.Get(context.Background(), "web-x7k2p", metav1.GetOptions{})
	if err != nil {
		_, err = c.Create(context.Background(), webSlice(ready, notReady), metav1.CreateOptions{})
		require.NoError(t, err)
		return
	}
	next := webSlice(ready, notReady)
	next.ResourceVersion = cur.ResourceVersion
	_, err = c.Update(context.Background(), next, metav1.UpdateOptions{})
	require.NoError(t, err)
}

func explainA(t *testing.T, m *instance, name string) engine.Explanation {
	t.Helper()
	resp, err := http.Get(m.http + "/v1/explain?name=" + name + "&type=A")
	require.NoError(t, err)
	defer resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode)
	var e engine.Explanation
	require.NoError(t, json.NewDecoder(resp.Body).Decode(&e))
	return e
}

func candidateOf(e engine.Explanation, target string) engine.ExplainCandidate {
	for _, c := range e.Candidates {
		if c.Target == target {
			return c
		}
	}
	return engine.ExplainCandidate{}
}

// TestCapacityAwareWeights runs one Meridian against two real
// kube-apiservers (east, west) with the RBAC of deploy/kustomize (which
// now lists and watches EndpointSlices). Each member has a LoadBalancer
// Service shop/web annotated meridian.io/capacity=true at weight 50, and an
// EndpointSlice the test writes (there is no controller manager): 10 ready
// endpoints in each. 8 of east's turn not ready: east's share falls to
// 50×0.2/(50×0.2+50) = 1/6; they turn ready again: it returns to 1/2, after
// the minimum change interval (30s by default for Kubernetes-sourced
// services).
func TestCapacityAwareWeights(t *testing.T) {
	lab := kubelab.Start(t, kubelab.Bins(t), "east", "west")
	east, west := lab.Member("east"), lab.Member("west")
	for _, m := range []*kubelab.Member{east, west} {
		applyRBAC(t, m, "status-annotation")
	}
	kcEast := east.Kubeconfig(t, kubelab.TokenUser(east.ServiceAccountToken(t, "meridian", "meridian")))
	kcWest := west.Kubeconfig(t, kubelab.TokenUser(west.ServiceAccountToken(t, "meridian", "meridian")))
	anno := map[string]string{"meridian.io/hostname": "app.gslb.example.com", "meridian.io/weight": "50", "meridian.io/capacity": "true"}
	lbService(t, east, "shop", "web", anno, "127.0.0.81")
	lbService(t, west, "shop", "web", anno, "127.0.0.82")
	setWebSlice(t, east, 10, 0)
	setWebSlice(t, west, 10, 0)

	m := startMeridian(t, fmt.Sprintf(capacityConfig, kcEast, kcWest))
	const app, eastIP = "app.gslb.example.com", "127.0.0.81"
	require.Eventually(t, func() bool {
		e := explainA(t, m, app)
		c := candidateOf(e, eastIP)
		return c.Capacity != nil && c.Capacity.Source == "kubernetes" && c.Capacity.Percent == 100 &&
			candidateOf(e, "127.0.0.82").Capacity != nil && candidateOf(e, "127.0.0.82").Capacity.Source == "kubernetes"
	}, 60*time.Second, 200*time.Millisecond, "both members' EndpointSlices are read:\n%s", m.log())
	sh := digShares(t, m, app, 2000)
	t.Logf("FIGURE capacity 10/10 ready in both, weights 50/50, over 2 000 dig queries: east %.2f%% west %.2f%%", sh[eastIP], sh["127.0.0.82"])
	assert.InDelta(t, 50, sh[eastIP], 4)

	// 8 of east's 10 endpoints fail readiness.
	setWebSlice(t, east, 2, 8)
	dropped := time.Now()
	require.Eventually(t, func() bool {
		s, err := quickShare(m, app+".", eastIP, 300)
		return err == nil && s < 30
	}, 30*time.Second, 50*time.Millisecond, "east's share falls:\n%s", m.log())
	fell := time.Since(dropped)
	t.Logf("FIGURE capacity 8 of 10 east endpoints not ready → east's share below 30%% (300-query window): %s", fell.Round(10*time.Millisecond))
	assert.Less(t, fell, 5*time.Second, "the first change of the service is not held; 50/50 → 10/50 moves a third of the answers, within the brake (0.5)")
	sh = digShares(t, m, app, 6000)
	t.Logf("FIGURE capacity east at 2/10 ready, over 6 000 dig queries: east %.2f%% west %.2f%% (expect 16.67/83.33)", sh[eastIP], sh["127.0.0.82"])
	assert.InDelta(t, 100.0/6, sh[eastIP], 2.5)

	e := explainA(t, m, app)
	c := candidateOf(e, eastIP)
	require.NotNil(t, c.Capacity)
	require.NotNil(t, c.EffectiveWeight)
	assert.Equal(t, 50, c.Weight, "the configured weight")
	assert.InDelta(t, 10, *c.EffectiveWeight, 1e-9)
	assert.Equal(t, 20, c.Capacity.Percent)
	assert.Contains(t, c.Why, "effective weight 10 = weight 50 × ready 20 % (kubernetes: 2 of 10 endpoints ready (shop/web in east))")
	t.Logf("explain east: %s", c.Why)
	metrics := m.metrics(t)
	assert.Contains(t, metrics, `meridian_capacity_ready_fraction{cluster="east",service="app.gslb.example.com."} 0.2`)
	assert.Contains(t, metrics, `meridian_capacity_changes_total{reason="reading",service="app.gslb.example.com."} 1`)
	assert.Contains(t, m.log(), `capacity: fraction changed" service=app.gslb.example.com. endpoint=127.0.0.81 cluster=east from_percent=100 to_percent=20 reason=reading`)
	// The object's meridian.io/status tells its share of the answers now.
	require.Eventually(t, func() bool {
		svc, err := east.Client(t).CoreV1().Services("shop").Get(context.Background(), "web", metav1.GetOptions{})
		return err == nil && strings.Contains(svc.Annotations["meridian.io/status"], `"share":"17%"`)
	}, 10*time.Second, 100*time.Millisecond, "east's status shows its share at 2/10 ready")
	// The config-file service reads the same slices.
	fc := candidateOf(explainA(t, m, "file.gslb.example.com"), "127.0.0.91")
	require.NotNil(t, fc.Capacity)
	assert.Equal(t, 20, fc.Capacity.Percent)

	// Back to 10 ready: the change waits for the minimum change interval
	// (30s since the last change).
	require.Eventually(t, func() bool {
		return strings.Contains(m.log(), "from_percent=100 to_percent=20")
	}, 5*time.Second, 50*time.Millisecond)
	setWebSlice(t, east, 10, 0)
	restored := time.Now()
	require.Eventually(t, func() bool {
		c := candidateOf(explainA(t, m, app), eastIP)
		return c.Capacity != nil && strings.Contains(c.Capacity.Why, "wants 100 %, held by min_change_interval until")
	}, 10*time.Second, 100*time.Millisecond, "the held change is shown")
	t.Logf("explain east while held: %s", candidateOf(explainA(t, m, app), eastIP).Capacity.Why)
	require.Eventually(t, func() bool {
		s, err := quickShare(m, app+".", eastIP, 300)
		return err == nil && s > 40
	}, 60*time.Second, 100*time.Millisecond, "east's share returns:\n%s", m.log())
	back := time.Since(restored)
	sinceDrop := time.Since(dropped)
	t.Logf("FIGURE capacity east ready again → share back above 40%%: %s after the update, %s after the drop (min_change_interval 30s)",
		back.Round(10*time.Millisecond), sinceDrop.Round(10*time.Millisecond))
	assert.Greater(t, sinceDrop, 29*time.Second, "not before the minimum change interval since the last change")
	sh = digShares(t, m, app, 4000)
	t.Logf("FIGURE capacity east 10/10 ready again, over 4 000 dig queries: east %.2f%% west %.2f%%", sh[eastIP], sh["127.0.0.82"])
	assert.InDelta(t, 50, sh[eastIP], 3)
	assert.Contains(t, m.metrics(t), `meridian_capacity_held_total{reason="interval",service="app.gslb.example.com."} 1`)
}
