//go:build e2e

package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/miekg/dns"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/client-go/dynamic"

	"github.com/meridian-gslb/meridian/e2e/kubelab"
)

var (
	crdGVR     = schema.GroupVersionResource{Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions"}
	gatewayGVR = schema.GroupVersionResource{Group: "gateway.networking.k8s.io", Version: "v1", Resource: "gateways"}
	httpGVR    = schema.GroupVersionResource{Group: "gateway.networking.k8s.io", Version: "v1", Resource: "httproutes"}
)

// installGatewayCRDs creates the standard-channel CRDs of the
// sigs.k8s.io/gateway-api module in go.mod (read from the module cache,
// downloaded there if missing) and waits until they are Established.
func installGatewayCRDs(t *testing.T, m *kubelab.Member) {
	t.Helper()
	out, err := exec.Command("go", "mod", "download", "-json", "sigs.k8s.io/gateway-api").Output()
	require.NoError(t, err, "go mod download sigs.k8s.io/gateway-api")
	var mod struct{ Dir string }
	require.NoError(t, json.Unmarshal(out, &mod))
	require.NotEmpty(t, mod.Dir, "the module's directory: %s", out)
	dir := filepath.Join(mod.Dir, "config", "crd", "standard")
	dyn := dynClient(t, m)
	ctx := context.Background()
	var names []string
	for _, res := range []string{"gateways", "httproutes", "grpcroutes", "tlsroutes"} {
		b, err := os.ReadFile(filepath.Join(dir, "gateway.networking.k8s.io_"+res+".yaml"))
		require.NoError(t, err)
		dec := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(b), 4096)
		for {
			var obj map[string]any
			if err := dec.Decode(&obj); err == io.EOF {
				break
			} else {
				require.NoError(t, err)
			}
			if obj == nil {
				continue
			}
			u := &unstructured.Unstructured{Object: obj}
			_, err := dyn.Resource(crdGVR).Create(ctx, u, metav1.CreateOptions{})
			require.NoError(t, err, "CRD %s", u.GetName())
			names = append(names, u.GetName())
		}
	}
	require.Eventually(t, func() bool {
		for _, n := range names {
			u, err := dyn.Resource(crdGVR).Get(ctx, n, metav1.GetOptions{})
			if err != nil {
				return false
			}
			conds, _, _ := unstructured.NestedSlice(u.Object, "status", "conditions")
			ok := false
			for _, c := range conds {
				if cm, _ := c.(map[string]any); cm["type"] == "Established" && cm["status"] == "True" {
					ok = true
				}
			}
			if !ok {
				return false
			}
		}
		return true
	}, 30*time.Second, 100*time.Millisecond, "the Gateway API CRDs are established")
}

func dynClient(t *testing.T, m *kubelab.Member) dynamic.Interface {
	t.Helper()
	dyn, err := dynamic.NewForConfig(m.AdminConfig())
	require.NoError(t, err)
	return dyn
}

// gatewayWithAddress creates Gateway ns/name and sets its status.addresses
// as a Gateway controller would (none runs in the lab).
func gatewayWithAddress(t *testing.T, m *kubelab.Member, ns, name, ip string) {
	t.Helper()
	m.EnsureNamespace(t, ns)
	gw := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "gateway.networking.k8s.io/v1", "kind": "Gateway",
		"metadata": map[string]any{"name": name, "namespace": ns},
		"spec": map[string]any{"gatewayClassName": "lab",
			"listeners": []any{map[string]any{"name": "http", "port": int64(80), "protocol": "HTTP"}}},
	}}
	_, err := dynClient(t, m).Resource(gatewayGVR).Namespace(ns).Create(context.Background(), gw, metav1.CreateOptions{})
	require.NoError(t, err)
	setGatewayAddress(t, m, ns, name, ip)
}

func setGatewayAddress(t *testing.T, m *kubelab.Member, ns, name, ip string) {
	t.Helper()
	patch, _ := json.Marshal(map[string]any{"status": map[string]any{"addresses": []any{map[string]any{"type": "IPAddress", "value": ip}}}})
	_, err := dynClient(t, m).Resource(gatewayGVR).Namespace(ns).Patch(context.Background(), name, types.MergePatchType, patch, metav1.PatchOptions{}, "status")
	require.NoError(t, err)
}

// httpRoute creates HTTPRoute ns/name under Gateway gw with annotations and
// spec.hostnames, and writes status.parents with Accepted=accepted (reason
// reason) as the Gateway's controller would.
func httpRoute(t *testing.T, m *kubelab.Member, ns, name, gw string, anno map[string]string, hostnames []string, accepted bool, reason string) {
	t.Helper()
	gwRoute(t, m, "HTTPRoute", ns, name, gw, anno, hostnames, accepted, reason)
}

// gwRoute is httpRoute for any route kind (HTTPRoute, GRPCRoute, TLSRoute).
func gwRoute(t *testing.T, m *kubelab.Member, kind, ns, name, gw string, anno map[string]string, hostnames []string, accepted bool, reason string) {
	t.Helper()
	gvr := schema.GroupVersionResource{Group: "gateway.networking.k8s.io", Version: "v1", Resource: strings.ToLower(kind) + "s"}
	annos := map[string]any{}
	for k, v := range anno {
		annos[k] = v
	}
	hs := []any{}
	for _, h := range hostnames {
		hs = append(hs, h)
	}
	r := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "gateway.networking.k8s.io/v1", "kind": kind,
		"metadata": map[string]any{"name": name, "namespace": ns, "annotations": annos},
		"spec":     map[string]any{"parentRefs": []any{map[string]any{"name": gw}}, "hostnames": hs},
	}}
	if kind == "TLSRoute" {
		r.Object["spec"].(map[string]any)["rules"] = []any{map[string]any{"backendRefs": []any{map[string]any{"name": name, "port": int64(443)}}}}
	}
	_, err := dynClient(t, m).Resource(gvr).Namespace(ns).Create(context.Background(), r, metav1.CreateOptions{})
	require.NoError(t, err)
	setRouteAccepted(t, m, kind, ns, name, gw, accepted, reason)
}

// setRouteAccepted writes the route's status.parents for Gateway gw.
func setRouteAccepted(t *testing.T, m *kubelab.Member, kind, ns, name, gw string, accepted bool, reason string) {
	t.Helper()
	gvr := schema.GroupVersionResource{Group: "gateway.networking.k8s.io", Version: "v1", Resource: strings.ToLower(kind) + "s"}
	status := "False"
	if accepted {
		status = "True"
	}
	patch, _ := json.Marshal(map[string]any{"status": map[string]any{"parents": []any{map[string]any{
		"parentRef": map[string]any{"name": gw}, "controllerName": "lab.example.com/gateway",
		"conditions": []any{map[string]any{"type": "Accepted", "status": status, "reason": reason, "message": "set by the e2e test",
			"lastTransitionTime": time.Now().UTC().Format(time.RFC3339)}},
	}}}})
	_, err := dynClient(t, m).Resource(gvr).Namespace(ns).Patch(context.Background(), name, types.MergePatchType, patch, metav1.PatchOptions{}, "status")
	require.NoError(t, err)
}

const gatewayConfig = `
server: {dns: {rrl: {responses_per_second: 1000000}}}
zones:
  - apex: gslb.example.com
    nameservers: [{name: ns1.gslb.example.com, ipv4: [127.0.0.1]}]
clusters:
  - {name: east, region: us-east, kubernetes: {kubeconfig: "%[1]s"}}
  - {name: west, region: us-west, kubernetes: {kubeconfig: "%[2]s"}}
kubernetes: {retry_interval: 500ms, connect_timeout: 2s, status_annotation: true}
`

// TestKubernetesGatewayAPI serves HTTPRoutes behind Gateways on two real
// kube-apiservers, read with the RBAC of deploy/kustomize (base and
// status-annotation). West has no Gateway API CRDs at first: Meridian says
// so once and keeps serving east, then picks them up when installed.
func TestKubernetesGatewayAPI(t *testing.T) {
	lab := kubelab.Start(t, kubelab.Bins(t), "east", "west")
	east, west := lab.Member("east"), lab.Member("west")
	for _, m := range []*kubelab.Member{east, west} {
		applyRBAC(t, m, "status-annotation")
	}
	kcEast := east.Kubeconfig(t, kubelab.TokenUser(east.ServiceAccountToken(t, "meridian", "meridian")))
	kcWest := west.Kubeconfig(t, kubelab.TokenUser(west.ServiceAccountToken(t, "meridian", "meridian")))
	const name = "app.gslb.example.com."

	installGatewayCRDs(t, east)
	gatewayWithAddress(t, east, "shop", "gw", "127.0.0.81")
	httpRoute(t, east, "shop", "web", "gw", map[string]string{"meridian.io/hostname": "app.gslb.example.com", "meridian.io/weight": "70"}, nil, true, "Accepted")
	httpRoute(t, east, "shop", "rejected", "gw", map[string]string{"meridian.io/hostname": "rejected.gslb.example.com"}, nil, false, "NotAllowedByListeners")

	m := startMeridian(t, fmt.Sprintf(gatewayConfig, kcEast, kcWest))
	require.Eventually(t, func() bool {
		s, err := quickShare(m, name, "127.0.0.81", 20)
		return err == nil && s == 100
	}, 20*time.Second, 100*time.Millisecond, "east's HTTPRoute is served from its Gateway's address:\n%s", m.log())
	noCRDs := func() int {
		n := 0
		for l := range strings.SplitSeq(m.log(), "\n") {
			if strings.Contains(l, "the Gateway API CRDs are not installed") && strings.Contains(l, "west") {
				n++
			}
		}
		return n
	}
	require.Eventually(t, func() bool { return noCRDs() > 0 }, 10*time.Second, 100*time.Millisecond, "west without the CRDs is reported:\n%s", m.log())
	time.Sleep(2 * time.Second) // four heartbeats: still one message
	assert.Equal(t, 1, noCRDs(), "the absence is logged once")
	st, _ := memberOf(kubeReport(t, m), "west")
	assert.Equal(t, "Ready", st, "a member without the CRDs keeps working")
	metrics := m.metrics(t)
	assert.Equal(t, 1.0, metricValue(t, metrics, `meridian_kube_gateway_api_kinds{cluster="east",kind="HTTPRoute"}`))
	assert.NotContains(t, metrics, `meridian_kube_gateway_api_kinds{cluster="west"`, "west has no Gateway API kinds")

	// West gets the CRDs; its route takes its name from spec.hostnames.
	installGatewayCRDs(t, west)
	gatewayWithAddress(t, west, "shop", "gw", "127.0.0.82")
	httpRoute(t, west, "shop", "web", "gw", map[string]string{"meridian.io/hostnames-from-spec": "true", "meridian.io/weight": "30"},
		[]string{"app.gslb.example.com"}, true, "Accepted")
	require.Eventually(t, func() bool {
		s, err := quickShare(m, name, "127.0.0.82", 100)
		return err == nil && s > 10 && s < 50
	}, 20*time.Second, 100*time.Millisecond, "west's HTTPRoute joins once its CRDs exist:\n%s", m.log())

	shares := digShares(t, m, name, 10000)
	t.Logf("FIGURE gateway api weighted 70/30 over 10000 queries: east %.2f%%, west %.2f%%", shares["127.0.0.81"], shares["127.0.0.82"])
	assert.InDelta(t, 70, shares["127.0.0.81"], 1.5)
	assert.InDelta(t, 30, shares["127.0.0.82"], 1.5)
	assert.ElementsMatch(t, []string{"east/httproute/shop/web", "west/httproute/shop/web"}, kubeReport(t, m).Services[name])

	// GRPCRoute and TLSRoute take the same path.
	gwRoute(t, east, "GRPCRoute", "shop", "api", "gw", map[string]string{"meridian.io/hostname": "grpc.gslb.example.com"}, nil, true, "Accepted")
	gwRoute(t, west, "TLSRoute", "shop", "tls", "gw", map[string]string{"meridian.io/hostnames-from-spec": "true"}, []string{"tls.gslb.example.com"}, true, "Accepted")
	for host, ip := range map[string]string{"grpc.gslb.example.com.": "127.0.0.81", "tls.gslb.example.com.": "127.0.0.82"} {
		require.Eventually(t, func() bool {
			s, err := quickShare(m, host, ip, 10)
			return err == nil && s == 100
		}, 10*time.Second, 50*time.Millisecond, "%s is served from %s:\n%s", host, ip, m.log())
	}

	// The route its Gateway did not accept is not served, and says why.
	q := new(dns.Msg)
	q.SetQuestion("rejected.gslb.example.com.", dns.TypeA)
	r, err := dns.Exchange(q, m.dns)
	require.NoError(t, err)
	assert.Empty(t, r.Answer, "a route no parent accepted is not served")
	var status string
	require.Eventually(t, func() bool {
		u, err := dynClient(t, east).Resource(httpGVR).Namespace("shop").Get(context.Background(), "rejected", metav1.GetOptions{})
		if err != nil {
			return false
		}
		status = u.GetAnnotations()["meridian.io/status"]
		return status != ""
	}, 10*time.Second, 100*time.Millisecond, "meridian.io/status is written on the route")
	assert.Contains(t, status, `"served":false`)
	assert.Contains(t, status, "no parent Gateway accepted the route: Gateway shop/gw did not accept the route (Accepted=False, reason NotAllowedByListeners")
	require.Eventually(t, func() bool {
		evs, err := east.Client(t).CoreV1().Events("shop").List(context.Background(), metav1.ListOptions{})
		if err != nil {
			return false
		}
		for _, e := range evs.Items {
			if e.InvolvedObject.Kind == "HTTPRoute" && e.InvolvedObject.Name == "rejected" && e.Reason == "RouteNotAccepted" {
				return true
			}
		}
		return false
	}, 10*time.Second, 100*time.Millisecond, "a RouteNotAccepted Event is recorded on the route")
	u, err := dynClient(t, east).Resource(httpGVR).Namespace("shop").Get(context.Background(), "web", metav1.GetOptions{})
	require.NoError(t, err)
	assert.Contains(t, u.GetAnnotations()["meridian.io/status"], `"served":true`)

	// A Gateway address change is served at once.
	start := time.Now()
	setGatewayAddress(t, east, "shop", "gw", "127.0.0.83")
	var took time.Duration
	for time.Since(start) < 10*time.Second {
		s83, err1 := quickShare(m, name, "127.0.0.83", 10)
		s81, err2 := quickShare(m, name, "127.0.0.81", 10)
		if err1 == nil && err2 == nil && s83 > 0 && s81 == 0 {
			took = time.Since(start)
			break
		}
		time.Sleep(5 * time.Millisecond)
	}
	require.NotZero(t, took, "the new Gateway address is served:\n%s", m.log())
	t.Logf("FIGURE gateway api address change served in %s", took.Round(time.Millisecond))
	assert.Less(t, took, time.Second, "a Gateway address change is served in under a second")

	// The Gateway accepts the rejected route after all: it is served.
	setRouteAccepted(t, east, "HTTPRoute", "shop", "rejected", "gw", true, "Accepted")
	require.Eventually(t, func() bool {
		s, err := quickShare(m, "rejected.gslb.example.com.", "127.0.0.83", 10)
		return err == nil && s == 100
	}, 10*time.Second, 50*time.Millisecond, "a route accepted later is served:\n%s", m.log())
}
