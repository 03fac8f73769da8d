//go:build e2e

package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/yaml"

	"github.com/meridian-gslb/meridian/e2e/kubelab"
)

// The modules whose CRDs the sources read, at the versions Meridian is
// tested with. Neither is in go.mod (Meridian reads them through shape
// structs): `go mod download -json MODULE@VERSION` fetches them from the
// module proxy into the module cache, on a fresh machine too, without
// changing go.mod or go.sum. ExternalDNS v0.22.0, not v0.23.0: v0.23.0
// needs go >= 1.27, and go mod download refuses it with our toolchain;
// its DNSEndpoint CRD is the same.
const (
	externalDNSModule = "sigs.k8s.io/external-dns@v0.22.0"
	mcsModule         = "sigs.k8s.io/mcs-api@v0.5.2"
)

var (
	dnsEndpointGVR   = schema.GroupVersionResource{Group: "externaldns.k8s.io", Version: "v1alpha1", Resource: "dnsendpoints"}
	serviceExportGVR = schema.GroupVersionResource{Group: "multicluster.x-k8s.io", Version: "v1alpha1", Resource: "serviceexports"}
	serviceImportGVR = schema.GroupVersionResource{Group: "multicluster.x-k8s.io", Version: "v1alpha1", Resource: "serviceimports"}
)

// moduleDir is the directory of module@version in the module cache,
// downloaded there if missing.
func moduleDir(t *testing.T, module string) string {
	t.Helper()
	out, err := exec.Command("go", "mod", "download", "-json", module).Output()
	require.NoError(t, err, "go mod download %s", module)
	var mod struct{ Dir, Error string }
	require.NoError(t, json.Unmarshal(out, &mod))
	require.NotEmpty(t, mod.Dir, "the module's directory: %s", out)
	return mod.Dir
}

// installCRDs creates the CRDs of files (relative to module's directory)
// on m and waits until they are Established.
func installCRDs(t *testing.T, m *kubelab.Member, module string, files ...string) {
	t.Helper()
	dir := moduleDir(t, module)
	dyn := dynClient(t, m)
	ctx := context.Background()
	var names []string
	for _, f := range files {
		b, err := os.ReadFile(filepath.Join(dir, f))
		require.NoError(t, err)
		var obj map[string]any
		require.NoError(t, yaml.Unmarshal(b, &obj), "%s: one CRD", f)
		u := &unstructured.Unstructured{Object: obj}
		_, err = dyn.Resource(crdGVR).Create(ctx, u, metav1.CreateOptions{})
		require.NoError(t, err, "CRD %s", u.GetName())
		names = append(names, u.GetName())
	}
	require.Eventually(t, func() bool {
		for _, n := range names {
			u, err := dyn.Resource(crdGVR).Get(ctx, n, metav1.GetOptions{})
			if err != nil || !hasCondition(u, "Established", "True") {
				return false
			}
		}
		return true
	}, 30*time.Second, 50*time.Millisecond, "the CRDs %v are established", names)
}

// hasCondition reports whether u's status has condition typ with status.
func hasCondition(u *unstructured.Unstructured, typ, status string) bool {
	conds, _, _ := unstructured.NestedSlice(u.Object, "status", "conditions")
	for _, c := range conds {
		if cm, _ := c.(map[string]any); cm["type"] == typ && cm["status"] == status {
			return true
		}
	}
	return false
}

// condition is u's status condition typ (nil: none).
func condition(u *unstructured.Unstructured, typ string) map[string]any {
	conds, _, _ := unstructured.NestedSlice(u.Object, "status", "conditions")
	for _, c := range conds {
		if cm, _ := c.(map[string]any); cm["type"] == typ {
			return cm
		}
	}
	return nil
}

// createDNSEndpoint creates DNSEndpoint ns/name with one endpoint per
// "NAME TYPE TARGET" entry.
func createDNSEndpoint(t *testing.T, m *kubelab.Member, ns, name string, anno map[string]string, records ...string) {
	t.Helper()
	m.EnsureNamespace(t, ns)
	var eps []any
	for _, r := range records {
		f := strings.Fields(r)
		require.Len(t, f, 3, "NAME TYPE TARGET: %q", r)
		eps = append(eps, map[string]any{"dnsName": f[0], "recordType": f[1], "targets": []any{f[2]}, "recordTTL": int64(30)})
	}
	createUnstructured(t, m, dnsEndpointGVR, "DNSEndpoint", ns, name, anno, map[string]any{"endpoints": eps})
}

func createUnstructured(t *testing.T, m *kubelab.Member, gvr schema.GroupVersionResource, kind, ns, name string, anno map[string]string, spec map[string]any) {
	t.Helper()
	m.EnsureNamespace(t, ns)
	a := map[string]any{}
	for k, v := range anno {
		a[k] = v
	}
	u := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": gvr.GroupVersion().String(), "kind": kind,
		"metadata": map[string]any{"name": name, "namespace": ns, "annotations": a},
	}}
	if spec != nil {
		u.Object["spec"] = spec
	}
	_, err := dynClient(t, m).Resource(gvr).Namespace(ns).Create(context.Background(), u, metav1.CreateOptions{})
	require.NoError(t, err, "%s %s/%s", kind, ns, name)
}

// firstAnswer polls m for name until its answers hold addr (every answer
// when all), and returns how long that took since start.
func firstAnswer(t *testing.T, m *instance, name, addr string, all bool, start time.Time) time.Duration {
	t.Helper()
	for time.Since(start) < 15*time.Second {
		s, err := quickShare(m, name, addr, 1)
		if err == nil && (s == 100 || !all && s > 0) {
			return time.Since(start)
		}
		time.Sleep(5 * time.Millisecond)
	}
	t.Fatalf("%s never answered %s:\n%s", name, addr, m.log())
	return 0
}

// waitSeen waits until m's last build saw object ref (CLUSTER/KIND/NS/NAME)
// claim name: among the objects behind it, or with a problem.
func waitSeen(t *testing.T, m *instance, name, ref string) {
	t.Helper()
	require.Eventually(t, func() bool {
		rep := kubeReport(t, m)
		return len(rep.Problems[ref]) > 0 || slices.Contains(rep.Services[name], ref)
	}, 10*time.Second, 20*time.Millisecond, "the node sees %s:\n%s", ref, m.log())
}

// kubeSourcesKubernetes completes kubeClaimsConfig's kubernetes section:
// meridian.io/status and the Served condition, and the MCS source; then
// tenant_targets lets the DNSEndpoints' targets be loopback addresses
// (the lab's Services and DNSEndpoints all point at 127.0.0.x).
const kubeSourcesKubernetes = "  status_annotation: true\n  mcs: {zone: gslb.example.com}\ntenant_targets: {allow_loopback: true}\n"

// TestKubernetesDNSEndpointAndMCSSources: on two real kube-apiservers,
// read with the RBAC of deploy/kustomize (base and status-annotation),
// ExternalDNS's DNSEndpoints and the MCS API's ServiceExports are served
// within 1 s of their creation, and follow the tenancy rules: a
// DNSEndpoint in another namespace claiming a name another namespace
// claimed first (a DNSEndpoint's, an export's) gets no answer. West has
// no DNSEndpoint CRD: it is no error. The exports get the
// meridian.io/Served condition on their status.
func TestKubernetesDNSEndpointAndMCSSources(t *testing.T) {
	lab := kubelab.Start(t, kubelab.Bins(t), "east", "west")
	east, west := lab.Member("east"), lab.Member("west")
	for _, m := range []*kubelab.Member{east, west} {
		applyRBAC(t, m, "status-annotation")
		installCRDs(t, m, mcsModule, "config/crd/multicluster.x-k8s.io_serviceexports.yaml", "config/crd/multicluster.x-k8s.io_serviceimports.yaml")
	}
	installCRDs(t, east, externalDNSModule, "config/crd/standard/dnsendpoints.externaldns.k8s.io.yaml")
	kcEast := east.Kubeconfig(t, kubelab.TokenUser(east.ServiceAccountToken(t, "meridian", "meridian")))
	kcWest := west.Kubeconfig(t, kubelab.TokenUser(west.ServiceAccountToken(t, "meridian", "meridian")))

	m := startMeridian(t, fmt.Sprintf(kubeClaimsConfig, kcEast, kcWest, kubeSourcesKubernetes))
	require.Eventually(t, func() bool {
		mt := m.metrics(t)
		return strings.Contains(mt, `meridian_kube_crd_kinds{cluster="east",kind="DNSEndpoint"} 1`) &&
			strings.Contains(mt, `meridian_kube_crd_kinds{cluster="west",kind="ServiceExport"} 1`)
	}, 20*time.Second, 50*time.Millisecond, "the sources watch where the CRDs are served:\n%s", m.log())
	assert.NotContains(t, m.metrics(t), `meridian_kube_crd_kinds{cluster="west",kind="DNSEndpoint"}`, "west serves no DNSEndpoint CRD")
	st, _ := memberOf(kubeReport(t, m), "west")
	assert.Equal(t, "Ready", st, "a member without the DNSEndpoint CRD keeps working")
	// The node is warm (both clusters up in its decisions) before the
	// figures: an annotated Service in each cluster is answered.
	lbService(t, east, "warm", "web", map[string]string{"meridian.io/hostname": "warm.gslb.example.com"}, "127.0.0.71")
	lbService(t, west, "warm", "web", map[string]string{"meridian.io/hostname": "warm.gslb.example.com"}, "127.0.0.72")
	require.Eventually(t, func() bool {
		s, err := quickShare(m, "warm.gslb.example.com.", "127.0.0.71", 50)
		return err == nil && s > 0 && s < 100
	}, 20*time.Second, 50*time.Millisecond, "both clusters answer:\n%s", m.log())

	t.Run("a DNSEndpoint is served within a second and a squatter in another namespace gets nothing", func(t *testing.T) {
		east.EnsureNamespace(t, "team-a")
		call := time.Now()
		createDNSEndpoint(t, east, "team-a", "app", map[string]string{"meridian.io/weight": "100"},
			"app.gslb.example.com A 127.0.0.81", "app.gslb.example.com TXT heritage=external-dns", "app.other.example.org A 127.0.0.99")
		start := time.Now() // created: the API server answered the create
		took := firstAnswer(t, m, "app.gslb.example.com.", "127.0.0.81", true, start)
		t.Logf("FIGURE kube sources: DNSEndpoint created → first correct answer: %s (the create call itself took %s in the API server)",
			took.Round(time.Millisecond), start.Sub(call).Round(time.Millisecond))
		assert.Less(t, took, time.Second, "served within 1 s")

		createDNSEndpoint(t, east, "team-b", "squat", nil, "app.gslb.example.com A 127.0.0.66")
		waitSeen(t, m, "app.gslb.example.com.", "east/dnsendpoint/team-b/squat")
		addrs, _ := answerCounts(t, m, "app.gslb.example.com", 2000)
		t.Logf("FIGURE kube sources: 2 000 queries for a DNSEndpoint's name with a squatting DNSEndpoint: squatter %d, owner %d", addrs["127.0.0.66"], addrs["127.0.0.81"])
		assert.Zero(t, addrs["127.0.0.66"], "the squatter gets no answer")
		assert.Equal(t, 2000, addrs["127.0.0.81"])
		ev := waitEvent(t, east, "team-b", "squat", "HostnameConflict", "belongs to namespace team-a", 15*time.Second)
		t.Logf("squatter Event: %s", ev.Message)

		require.Eventually(t, func() bool {
			u, err := dynClient(t, east).Resource(dnsEndpointGVR).Namespace("team-a").Get(context.Background(), "app", metav1.GetOptions{})
			return err == nil && strings.Contains(u.GetAnnotations()["meridian.io/status"], `"served":true`)
		}, 10*time.Second, 50*time.Millisecond, "meridian.io/status on the DNSEndpoint:\n%s", m.log())
		assert.NotContains(t, kubeReport(t, m).Services, "app.other.example.org.", "a name outside the zones is another provider's")
	})

	t.Run("a ServiceExport is served within a second from both clusters and a squatter gets nothing", func(t *testing.T) {
		lbService(t, east, "shop", "web", nil, "127.0.0.91")
		lbService(t, west, "shop", "web", nil, "127.0.0.92")
		createUnstructured(t, east, serviceImportGVR, "ServiceImport", "shop", "web", nil,
			map[string]any{"type": "ClusterSetIP", "ips": []any{"10.96.0.10"}, "ports": []any{map[string]any{"port": int64(80), "protocol": "TCP"}}})
		call := time.Now()
		createUnstructured(t, east, serviceExportGVR, "ServiceExport", "shop", "web", map[string]string{"meridian.io/weight": "70"}, nil)
		start := time.Now()
		t.Logf("the ServiceExport create call took %s", start.Sub(call).Round(time.Millisecond))
		took := firstAnswer(t, m, "web.shop.gslb.example.com.", "127.0.0.91", true, start)
		t.Logf("FIGURE kube sources: ServiceExport created → first correct answer: %s", took.Round(time.Millisecond))
		assert.Less(t, took, time.Second, "served within 1 s")

		createUnstructured(t, west, serviceExportGVR, "ServiceExport", "shop", "web", map[string]string{"meridian.io/weight": "30"}, nil)
		start = time.Now()
		took = firstAnswer(t, m, "web.shop.gslb.example.com.", "127.0.0.92", false, start)
		t.Logf("FIGURE kube sources: second cluster's ServiceExport created → first answer from it: %s", took.Round(time.Millisecond))
		assert.Less(t, took, time.Second, "served within 1 s")
		addrs, _ := answerCounts(t, m, "web.shop.gslb.example.com", 2000)
		t.Logf("FIGURE kube sources: exports weighted 70/30 over 2 000 queries: east %d, west %d", addrs["127.0.0.91"], addrs["127.0.0.92"])
		assert.InDelta(t, 1400, addrs["127.0.0.91"], 100)

		createDNSEndpoint(t, east, "team-b", "squat-web", nil, "web.shop.gslb.example.com A 127.0.0.67")
		waitSeen(t, m, "web.shop.gslb.example.com.", "east/dnsendpoint/team-b/squat-web")
		addrs, _ = answerCounts(t, m, "web.shop.gslb.example.com", 2000)
		t.Logf("FIGURE kube sources: 2 000 queries for an export's name with a squatting DNSEndpoint: squatter %d", addrs["127.0.0.67"])
		assert.Zero(t, addrs["127.0.0.67"], "the squatter gets no answer")
		waitEvent(t, east, "team-b", "squat-web", "HostnameConflict", "belongs to namespace shop", 15*time.Second)
	})

	t.Run("each export carries the meridian.io/Served condition", func(t *testing.T) {
		var cond map[string]any
		require.Eventually(t, func() bool {
			u, err := dynClient(t, east).Resource(serviceExportGVR).Namespace("shop").Get(context.Background(), "web", metav1.GetOptions{})
			if err != nil {
				return false
			}
			cond = condition(u, "meridian.io/Served")
			return cond != nil && cond["status"] == "True"
		}, 10*time.Second, 50*time.Millisecond, "the condition on east's export:\n%s", m.log())
		t.Logf("condition: %v", cond)
		assert.Equal(t, "Served", cond["reason"])
		assert.Contains(t, cond["message"], "served for web.shop.gslb.example.com.")
		assert.Contains(t, cond["message"], "ServiceImport is ClusterSetIP 10.96.0.10", "the cluster's import is reported")
		require.Eventually(t, func() bool {
			u, err := dynClient(t, west).Resource(serviceExportGVR).Namespace("shop").Get(context.Background(), "web", metav1.GetOptions{})
			return err == nil && hasCondition(u, "meridian.io/Served", "True")
		}, 10*time.Second, 50*time.Millisecond, "and on west's")
	})
}
