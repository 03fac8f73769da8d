//go:build e2e

package e2e

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/miekg/dns"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes/scheme"

	"github.com/meridian-gslb/meridian/deploy/kustomize"
	"github.com/meridian-gslb/meridian/e2e/kubelab"
	"github.com/meridian-gslb/meridian/internal/kube/merge"
	"github.com/meridian-gslb/meridian/providers/route53/route53fake"
)

const kubeConfig = `
# These loopback tests query far faster than the default RRL rate (200/s
# per /24), all from 127.0.0.1: raise the limit, keep RRL on.
server: {dns: {rrl: {responses_per_second: 1000000}}}
zones:
  - apex: gslb.example.com
    nameservers: [{name: ns1.gslb.example.com, ipv4: [127.0.0.1]}]
health: {interval: 1s, timeout: 500ms, fall: 2, rise: 2}
ring: {enabled: true, node_name: %[1]s, region: %[2]s, bind: "127.0.0.1:%[3]d", seeds: ["127.0.0.1:%[4]d"], %[10]s}
decision: {hold_down: 2s}
clusters:
  - {name: east, region: us-east, kubernetes: {kubeconfig: "%[5]s"}, heartbeat: {interval: 500ms, grace: 2s}}
  - {name: west, region: us-west, kubernetes: {kubeconfig: "%[6]s"}, heartbeat: {interval: 500ms, grace: 2s}}
  - {name: stale, region: us-east, kubernetes: {kubeconfig: "%[7]s"}}
  - {name: rogue, region: us-west, kubernetes: {kubeconfig: "%[8]s"}}
kubernetes: {retry_interval: 500ms, connect_timeout: 2s, status_annotation: true}
providers:
  owner_id: e2e-kube
  writers: [p1, p2]
  debounce: 200ms
  resync_interval: 1m
  route53:
    - {zone: example.com, endpoint: "%[9]s", requests_per_second: 20, sync_timeout: 5s}
`

// applyRBAC creates the ClusterRoles, Role and their bindings exactly as
// deploy/kustomize renders them (the base, plus the named opt-in
// components), so Meridian runs with those rules only.
func applyRBAC(t *testing.T, m *kubelab.Member, components ...string) {
	t.Helper()
	m.EnsureNamespace(t, "meridian")
	n := createRBAC(t, m, renderRBAC(t, components...), false)
	require.Equal(t, 4+2*len(components), n, "ClusterRole, ClusterRoleBinding, Role, RoleBinding, and a ClusterRole and binding per component")
}

// addRBACComponent adds the ClusterRole and binding of an opt-in component
// to a member that has the base already.
func addRBACComponent(t *testing.T, m *kubelab.Member, component string) {
	t.Helper()
	require.Equal(t, 2, createRBAC(t, m, renderRBAC(t, component), true), "a ClusterRole and its binding")
}

// renderRBAC renders the RBAC objects of the kustomize base with components.
func renderRBAC(t *testing.T, components ...string) []byte {
	t.Helper()
	dir := filepath.Join(kustomize.Dir(), "base")
	if len(components) > 0 {
		// kustomize loads bases by relative path only: a throw-away
		// overlay beside the shipped ones.
		var err error
		dir, err = os.MkdirTemp(filepath.Join(kustomize.Dir(), "overlays"), "e2e-")
		require.NoError(t, err)
		defer os.RemoveAll(dir)
		k := "apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\nresources: [../../base]\ncomponents:\n"
		for _, c := range components {
			k += "  - ../../components/" + c + "\n"
		}
		require.NoError(t, os.WriteFile(filepath.Join(dir, "kustomization.yaml"), []byte(k), 0o644))
	}
	out, err := kustomize.RenderRBAC(dir)
	require.NoError(t, err)
	return out
}

// createRBAC creates the rendered RBAC objects in m and returns how many it
// created; with skipExisting, objects that exist already are left alone.
func createRBAC(t *testing.T, m *kubelab.Member, out []byte, skipExisting bool) int {
	t.Helper()
	c := m.Client(t)
	ctx := context.Background()
	n := 0
	for doc := range strings.SplitSeq(string(out), "\n---\n") {
		if strings.TrimSpace(doc) == "" {
			continue
		}
		obj, _, err := scheme.Codecs.UniversalDeserializer().Decode([]byte(doc), nil, nil)
		require.NoError(t, err, doc)
		switch o := obj.(type) {
		case *rbacv1.ClusterRole:
			_, err = c.RbacV1().ClusterRoles().Create(ctx, o, metav1.CreateOptions{})
		case *rbacv1.ClusterRoleBinding:
			_, err = c.RbacV1().ClusterRoleBindings().Create(ctx, o, metav1.CreateOptions{})
		case *rbacv1.Role:
			_, err = c.RbacV1().Roles(o.Namespace).Create(ctx, o, metav1.CreateOptions{})
		case *rbacv1.RoleBinding:
			_, err = c.RbacV1().RoleBindings(o.Namespace).Create(ctx, o, metav1.CreateOptions{})
		default:
			t.Fatalf("unexpected RBAC object %T", obj)
		}
		if skipExisting && apierrors.IsAlreadyExists(err) {
			continue
		}
		require.NoError(t, err)
		n++
	}
	return n
}

// lbService creates a LoadBalancer Service with annotations and sets its
// load-balancer address as a cloud controller would.
func lbService(t *testing.T, m *kubelab.Member, ns, name string, anno map[string]string, ip string) {
	t.Helper()
	m.EnsureNamespace(t, ns)
	_, err := m.Client(t).CoreV1().Services(ns).Create(context.Background(), &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: name, Annotations: anno},
		Spec: corev1.ServiceSpec{Type: corev1.ServiceTypeLoadBalancer, Selector: map[string]string{"app": name},
			Ports: []corev1.ServicePort{{Name: "http", Port: 80}}},
	}, metav1.CreateOptions{})
	require.NoError(t, err)
	m.SetLoadBalancerIP(t, ns, name, ip)
}

func annotate(t *testing.T, m *kubelab.Member, ns, name, key, value string) {
	t.Helper()
	patch, _ := json.Marshal(map[string]any{"metadata": map[string]any{"annotations": map[string]string{key: value}}})
	_, err := m.Client(t).CoreV1().Services(ns).Patch(context.Background(), name, types.MergePatchType, patch, metav1.PatchOptions{})
	require.NoError(t, err)
}

// digShares sends n queries with one dig process (-f batch file) and
// returns the share of each address in the first place of the answers:
// the weighted pick (a reply may also carry a fallback address second,
// services[].fallback_answer).
func digShares(t *testing.T, m *instance, name string, n int) map[string]float64 {
	t.Helper()
	f := filepath.Join(t.TempDir(), "batch")
	var b strings.Builder
	for range n {
		fmt.Fprintf(&b, "%s A\n", name)
	}
	require.NoError(t, os.WriteFile(f, []byte(b.String()), 0o644))
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	// +cmd starts each query's output with its "; <<>> DiG" line.
	out, err := exec.CommandContext(ctx, "dig", "@127.0.0.1", "-p", fmt.Sprint(m.dnsPort), "+noall", "+answer", "+cmd", "+time=2", "+tries=2", "-f", f).Output()
	require.NoError(t, err)
	counts, total, first := map[string]int{}, 0, false
	sc := bufio.NewScanner(strings.NewReader(string(out)))
	for sc.Scan() {
		l := strings.TrimSpace(sc.Text())
		if strings.HasPrefix(l, "; <<>> DiG") {
			first = true
			continue
		}
		if f := strings.Fields(l); first && len(f) == 5 && f[3] == "A" {
			counts[f[4]]++
			total++
			first = false
		}
	}
	require.Equal(t, n, total, "one first address per query")
	shares := map[string]float64{}
	for k, v := range counts {
		shares[k] = 100 * float64(v) / float64(total)
	}
	return shares
}

// quickShare is the share of n answers through one UDP socket whose first
// address is addr (the weighted pick; a fallback address may follow).
func quickShare(m *instance, name, addr string, n int) (float64, error) {
	return shareAt(m.dns, name, addr, n)
}

// shareAt is quickShare against any DNS server address.
func shareAt(server, name, addr string, n int) (float64, error) {
	cl := &dns.Client{Net: "udp", Timeout: time.Second}
	conn, err := cl.Dial(server)
	if err != nil {
		return 0, err
	}
	defer conn.Close()
	hit := 0
	for range n {
		q := new(dns.Msg)
		q.SetQuestion(name, dns.TypeA)
		r, _, err := cl.ExchangeWithConn(q, conn)
		if err != nil {
			return 0, err
		}
		for _, rr := range r.Answer {
			if a, ok := rr.(*dns.A); ok {
				if a.A.String() == addr {
					hit++
				}
				break // the first address: the weighted pick (a fallback may follow)
			}
		}
	}
	return 100 * float64(hit) / float64(n), nil
}

func kubeReport(t *testing.T, m *instance) merge.KubeReport {
	t.Helper()
	resp, err := http.Get(m.http + "/v1/kube")
	require.NoError(t, err)
	defer resp.Body.Close()
	var rep merge.KubeReport
	require.NoError(t, json.NewDecoder(resp.Body).Decode(&rep))
	return rep
}

func memberOf(rep merge.KubeReport, cluster string) (state, reason string) {
	for _, m := range rep.Members {
		if m.Cluster == cluster {
			return m.State, m.Reason
		}
	}
	return "", ""
}

func r53Weights(recs []route53fake.RecordSet) map[string]int64 {
	out := map[string]int64{}
	for _, r := range recs {
		if r.Name == "app.gslb.example.com." && r.Type == "A" && r.Weight != nil && len(r.Values) == 1 {
			out[r.Values[0]] = *r.Weight
		}
	}
	return out
}

// TestKubernetesMembers runs two Meridian probers (regions r1, r2) against
// two real kube-apiservers (east, west) with the RBAC of deploy/kustomize
// and its status-annotation component (kubernetes.status_annotation: true),
// plus two members that must be NotReady (an expired client certificate and
// a wrong CA), and a Route53 fake.
func TestKubernetesMembers(t *testing.T) {
	lab := kubelab.Start(t, kubelab.Bins(t), "east", "west")
	east, west := lab.Member("east"), lab.Member("west")
	t.Logf("FIGURE kube lab start (etcd + 2 kube-apiservers): %s", lab.StartDuration.Round(time.Millisecond))
	for _, m := range []*kubelab.Member{east, west} {
		applyRBAC(t, m, "status-annotation")
	}
	kcEast := east.Kubeconfig(t, kubelab.TokenUser(east.ServiceAccountToken(t, "meridian", "meridian")))
	kcWest := west.Kubeconfig(t, kubelab.TokenUser(west.ServiceAccountToken(t, "meridian", "meridian")))
	kcStale := east.Kubeconfig(t, kubelab.ExpiredAdminUser)
	kcRogue := west.Kubeconfig(t, kubelab.WrongCAAdminUser)

	lbService(t, east, "shop", "web", map[string]string{"meridian.io/hostname": "app.gslb.example.com", "meridian.io/weight": "70"}, "127.0.0.81")
	lbService(t, west, "shop", "web", map[string]string{"meridian.io/hostname": "app.gslb.example.com", "meridian.io/weight": "30"}, "127.0.0.82")
	// An Ingress is watched too.
	west.EnsureNamespace(t, "docs")
	_, err := west.Client(t).NetworkingV1().Ingresses("docs").Create(context.Background(), &networkingv1.Ingress{
		ObjectMeta: metav1.ObjectMeta{Name: "docs", Annotations: map[string]string{"meridian.io/hostname": "docs.gslb.example.com"}},
		Spec: networkingv1.IngressSpec{DefaultBackend: &networkingv1.IngressBackend{
			Service: &networkingv1.IngressServiceBackend{Name: "docs", Port: networkingv1.ServiceBackendPort{Number: 80}}}},
	}, metav1.CreateOptions{})
	require.NoError(t, err)
	west.SetIngressLoadBalancerIP(t, "docs", "docs", "127.0.0.83")

	t.Setenv("AWS_ACCESS_KEY_ID", "AKIDE2E")
	t.Setenv("AWS_SECRET_ACCESS_KEY", "e2e-secret")
	t.Setenv("AWS_EC2_METADATA_DISABLED", "true")
	r53 := route53fake.New(route53fake.Options{})
	defer r53.Close()
	zid := r53.AddZone("example.com")

	g1, g2 := freePort(t), freePort(t)
	tr := newTestRing(t, t.TempDir(), "p1@r1", "p2@r2")
	m1 := startMeridian(t, fmt.Sprintf(kubeConfig, "p1", "r1", g1, g2, kcEast, kcWest, kcStale, kcRogue, r53.URL(), tr.Ring("p1")))
	m2 := startMeridian(t, fmt.Sprintf(kubeConfig, "p2", "r2", g2, g1, kcEast, kcWest, kcStale, kcRogue, r53.URL(), tr.Ring("p2")))
	nodes := []*instance{m1, m2}

	require.Eventually(t, func() bool {
		s1, err1 := quickShare(m1, "app.gslb.example.com.", "127.0.0.82", 50)
		s2, err2 := quickShare(m2, "app.gslb.example.com.", "127.0.0.82", 50)
		return err1 == nil && err2 == nil && s1 > 0 && s2 > 0
	}, 60*time.Second, 200*time.Millisecond, "both nodes serve the annotated services:\n%s", m1.log())

	t.Run("1: annotated weights 70/30 are served, and a changed annotation within 2s", func(t *testing.T) {
		sh := digShares(t, m1, "app.gslb.example.com", 10000)
		t.Logf("FIGURE kube weights 70/30 over 10 000 dig queries: east %.2f%% west %.2f%%", sh["127.0.0.81"], sh["127.0.0.82"])
		assert.InDelta(t, 70, sh["127.0.0.81"], 2.5)
		assert.InDelta(t, 30, sh["127.0.0.82"], 2.5)
		assert.Contains(t, m1.dig(t, "+short", "docs.gslb.example.com", "A"), "127.0.0.83", "the Ingress is served")

		annotate(t, east, "shop", "web", "meridian.io/weight", "10")
		changed := time.Now()
		var seen [2]time.Duration
		for i, m := range nodes {
			require.Eventually(t, func() bool {
				s, err := quickShare(m, "app.gslb.example.com.", "127.0.0.81", 200)
				return err == nil && s < 50
			}, 10*time.Second, 20*time.Millisecond)
			seen[i] = time.Since(changed)
		}
		t.Logf("FIGURE kube annotation change 70→10 served (200-query window below 50%%): node p1 %s, node p2 %s",
			seen[0].Round(10*time.Millisecond), seen[1].Round(10*time.Millisecond))
		assert.Less(t, seen[1], 2*time.Second)
		sh = digShares(t, m2, "app.gslb.example.com", 10000)
		t.Logf("FIGURE kube weights 10/30 over 10 000 dig queries: east %.2f%% west %.2f%% (expect 25/75)", sh["127.0.0.81"], sh["127.0.0.82"])
		assert.InDelta(t, 25, sh["127.0.0.81"], 2.5)

		// Status write-back on the object.
		require.Eventually(t, func() bool {
			svc, err := east.Client(t).CoreV1().Services("shop").Get(context.Background(), "web", metav1.GetOptions{})
			return err == nil && strings.Contains(svc.Annotations["meridian.io/status"], `"share":"25%"`)
		}, 10*time.Second, 100*time.Millisecond)
		svc, _ := east.Client(t).CoreV1().Services("shop").Get(context.Background(), "web", metav1.GetOptions{})
		t.Logf("east shop/web meridian.io/status: %s", svc.Annotations["meridian.io/status"])

		// Scenario 5, first half: Route53 holds the 10:30 split.
		require.Eventually(t, func() bool {
			w := r53Weights(r53.Records(zid))
			return w["127.0.0.81"] > 0 && w["127.0.0.82"] > 0 && w["127.0.0.82"] == 3*w["127.0.0.81"] ||
				w["127.0.0.82"] > 0 && float64(w["127.0.0.82"])/float64(max(w["127.0.0.81"], 1)) > 2.8 && float64(w["127.0.0.82"])/float64(max(w["127.0.0.81"], 1)) < 3.2
		}, 15*time.Second, 100*time.Millisecond, "route53: %v", r53Weights(r53.Records(zid)))
		t.Logf("FIGURE kube route53 weighted after the change: %v", r53Weights(r53.Records(zid)))
	})

	t.Run("2: an invalid annotation is reported and the previous settings keep serving", func(t *testing.T) {
		annotate(t, east, "shop", "web", "meridian.io/weight", "lots")
		var status string
		require.Eventually(t, func() bool {
			svc, err := east.Client(t).CoreV1().Services("shop").Get(context.Background(), "web", metav1.GetOptions{})
			status = svc.Annotations["meridian.io/status"]
			return err == nil && strings.Contains(status, "meridian.io/weight")
		}, 10*time.Second, 100*time.Millisecond)
		t.Logf("status with an invalid weight: %s", status)
		assert.Contains(t, status, `\"lots\" is not a weight (allowed: an integer 0..1000`)
		require.Eventually(t, func() bool {
			evs, err := east.Client(t).CoreV1().Events("shop").List(context.Background(), metav1.ListOptions{})
			if err != nil {
				return false
			}
			for _, e := range evs.Items {
				if e.Reason == "InvalidAnnotation" && e.InvolvedObject.Name == "web" && strings.Contains(e.Message, "meridian.io/weight") {
					return true
				}
			}
			return false
		}, 10*time.Second, 100*time.Millisecond, "an InvalidAnnotation Event on shop/web")
		sh := digShares(t, m1, "app.gslb.example.com", 2000)
		assert.InDelta(t, 25, sh["127.0.0.81"], 4, "the last valid weight (10) still serves")
		assert.Contains(t, m1.metrics(t), `meridian_kube_invalid_objects{cluster="east"} 1`)
		assert.Contains(t, m1.metrics(t), `meridian_kube_annotation_errors_total{annotation="meridian.io/weight",cluster="east"}`)
		annotate(t, east, "shop", "web", "meridian.io/weight", "70")
		require.Eventually(t, func() bool {
			s, err := quickShare(m1, "app.gslb.example.com.", "127.0.0.81", 200)
			return err == nil && s > 55
		}, 10*time.Second, 50*time.Millisecond, "a fixed annotation serves again")
	})

	t.Run("3: a stopped kube-apiserver fails its cluster over, and it returns after the hold-down", func(t *testing.T) {
		// SIGKILL: the member's API disappears at once (a crash or a cut
		// link), so the figure starts when the outage starts.
		stopped := time.Now()
		require.NoError(t, west.Kill())
		var gone [2]time.Duration
		for i, m := range nodes {
			require.Eventually(t, func() bool {
				s, err := quickShare(m, "app.gslb.example.com.", "127.0.0.82", 40)
				return err == nil && s == 0
			}, 30*time.Second, 50*time.Millisecond, "west leaves the answers of %s:\n%s", m.http, m.log())
			gone[i] = time.Since(stopped)
		}
		t.Logf("FIGURE kube member apiserver killed → out of the answers: p1 %s, p2 %s (heartbeat interval 500ms, grace 2s, 2 regions confirm)",
			gone[0].Round(10*time.Millisecond), gone[1].Round(10*time.Millisecond))
		// The last good poll can precede the kill by one interval (500ms).
		assert.Greater(t, gone[0], 1500*time.Millisecond, "not before the grace minus one heartbeat interval")
		assert.Less(t, gone[1], 8*time.Second, "grace + confirmation + a decision tick")
		st, reason := memberOf(kubeReport(t, m1), "west")
		assert.Equal(t, "Offline", st, reason)
		t.Logf("west while stopped: %s (%s)", st, reason)
		require.Eventually(t, func() bool {
			w := r53Weights(r53.Records(zid))
			return w["127.0.0.81"] > 0 && w["127.0.0.82"] == 0
		}, 15*time.Second, 100*time.Millisecond, "route53 follows the failover: %v", r53Weights(r53.Records(zid)))
		t.Logf("FIGURE kube route53 after the failover: %v (0 = failed over)", r53Weights(r53.Records(zid)))

		require.NoError(t, west.Start())
		restarted := time.Now()
		for _, m := range nodes {
			require.Eventually(t, func() bool {
				s, err := quickShare(m, "app.gslb.example.com.", "127.0.0.82", 40)
				return err == nil && s > 0
			}, 40*time.Second, 100*time.Millisecond, "west returns:\n%s", m.log())
		}
		back := time.Since(restarted)
		t.Logf("FIGURE kube member apiserver restarted → back in the answers: %s (hold-down 2s)", back.Round(10*time.Millisecond))
		assert.Greater(t, back, 2*time.Second, "not before the hold-down")
		require.Eventually(t, func() bool { return r53Weights(r53.Records(zid))["127.0.0.82"] > 0 }, 15*time.Second, 100*time.Millisecond)
		require.Eventually(t, func() bool {
			svc, err := west.Client(t).CoreV1().Services("shop").Get(context.Background(), "web", metav1.GetOptions{})
			return err == nil && strings.Contains(svc.Annotations["meridian.io/status"], `"share":"30%"`)
		}, 15*time.Second, 100*time.Millisecond, "west's status is written again after its return")
	})

	t.Run("4: an expired client certificate and a wrong CA make members NotReady with that reason", func(t *testing.T) {
		var rep merge.KubeReport
		require.Eventually(t, func() bool {
			rep = kubeReport(t, m1)
			s1, _ := memberOf(rep, "stale")
			s2, _ := memberOf(rep, "rogue")
			return s1 == "NotReady" && s2 == "NotReady"
		}, 10*time.Second, 100*time.Millisecond)
		_, r1 := memberOf(rep, "stale")
		_, r2 := memberOf(rep, "rogue")
		t.Logf("stale: %s", r1)
		t.Logf("rogue: %s", r2)
		assert.Contains(t, r1, "client certificate expired at")
		assert.Contains(t, r2, "untrusted server certificate")
		st, _ := memberOf(rep, "east")
		assert.Equal(t, "Ready", st)
		assert.Contains(t, m1.metrics(t), `meridian_kube_member_ready{cluster="stale"} 0`)
		assert.Contains(t, m1.metrics(t), `meridian_kube_member_ready{cluster="east"} 1`)
	})

	// The rules of deploy/kustomize with the status-annotation component
	// were enough: every status patch went through (Events were checked in
	// scenario 2). Only the writer Lease's holder (in east, which stayed
	// up) wrote: the other node has no status write at all.
	// (Writes to west while it was being killed may fail; they are retried.)
	wrote := regexp.MustCompile(`meridian_kube_status_writes_total\{cluster="east",result="success"\} [1-9]`)
	writers := 0
	for _, m := range nodes {
		assert.NotContains(t, m.log(), `status failed; retried" object=east/`, "no write to east failed")
		if wrote.MatchString(m.metrics(t)) {
			writers++
			assert.True(t, kubeReport(t, m).Writer.Leading, "the node that wrote leads")
		}
	}
	assert.Equal(t, 1, writers, "one node wrote status")
}

const kubeSecretsConfig = `
# These loopback tests query far faster than the default RRL rate (200/s
# per /24), all from 127.0.0.1: raise the limit, keep RRL on.
server: {dns: {rrl: {responses_per_second: 1000000}}}
zones:
  - apex: gslb.example.com
    nameservers: [{name: ns1.gslb.example.com, ipv4: [127.0.0.1]}]
clusters:
  - {name: east, region: us-east, kubernetes: {kubeconfig: "%[1]s"}}
kubernetes:
  retry_interval: 500ms
  connect_timeout: 2s
  member_secrets: {namespace: meridian, kubeconfig: "%[2]s"}
`

// TestKubernetesMemberSecrets registers a member from a Secret in the hub
// (east), read with the service account and Role of deploy/kustomize.
func TestKubernetesMemberSecrets(t *testing.T) {
	lab := kubelab.Start(t, kubelab.Bins(t), "east", "west")
	east, west := lab.Member("east"), lab.Member("west")
	for _, m := range []*kubelab.Member{east, west} {
		applyRBAC(t, m)
	}
	kcEast := east.Kubeconfig(t, kubelab.TokenUser(east.ServiceAccountToken(t, "meridian", "meridian")))
	kcWest := west.Kubeconfig(t, kubelab.TokenUser(west.ServiceAccountToken(t, "meridian", "meridian")))
	westKubeconfig, err := os.ReadFile(kcWest)
	require.NoError(t, err)
	lbService(t, east, "shop", "web", map[string]string{"meridian.io/hostname": "app.gslb.example.com"}, "127.0.0.91")
	lbService(t, west, "shop", "web", map[string]string{"meridian.io/hostname": "app.gslb.example.com"}, "127.0.0.92")

	m := startMeridian(t, fmt.Sprintf(kubeSecretsConfig, kcEast, kcEast))
	require.Eventually(t, func() bool {
		s, err := quickShare(m, "app.gslb.example.com.", "127.0.0.91", 20)
		return err == nil && s == 100
	}, 20*time.Second, 100*time.Millisecond, "east alone serves: west is not a member yet")

	// A Secret without the region annotation is rejected with the reason.
	_, err = east.Client(t).CoreV1().Secrets("meridian").Create(context.Background(), &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: "member-west", Labels: map[string]string{"meridian.io/member": "true"},
			Annotations: map[string]string{"meridian.io/cluster": "west"}},
		Data: map[string][]byte{"kubeconfig": westKubeconfig},
	}, metav1.CreateOptions{})
	require.NoError(t, err)
	require.Eventually(t, func() bool {
		return strings.Contains(m.log(), "annotation meridian.io/region is required for cluster west")
	}, 10*time.Second, 100*time.Millisecond, "the missing region is reported:\n%s", m.log())

	patch := []byte(`{"metadata":{"annotations":{"meridian.io/region":"us-west"}}}`)
	_, err = east.Client(t).CoreV1().Secrets("meridian").Patch(context.Background(), "member-west", types.MergePatchType, patch, metav1.PatchOptions{})
	require.NoError(t, err)
	start := time.Now()
	require.Eventually(t, func() bool {
		s, err := quickShare(m, "app.gslb.example.com.", "127.0.0.92", 100)
		return err == nil && s > 30 && s < 70
	}, 20*time.Second, 50*time.Millisecond, "west registered by its Secret shares the answers:\n%s", m.log())
	t.Logf("FIGURE kube member registered from a Secret and serving in %s", time.Since(start).Round(10*time.Millisecond))
	rep := kubeReport(t, m)
	st, _ := memberOf(rep, "west")
	assert.Equal(t, "Ready", st)
	assert.ElementsMatch(t, []string{"east/service/shop/web", "west/service/shop/web"}, rep.Services["app.gslb.example.com."])
	for _, mem := range rep.Members {
		if mem.Cluster == "west" {
			assert.Equal(t, "secret meridian/member-west", mem.Origin)
		}
	}

	// Deleting the Secret removes the member and its endpoints.
	require.NoError(t, east.Client(t).CoreV1().Secrets("meridian").Delete(context.Background(), "member-west", metav1.DeleteOptions{}))
	require.Eventually(t, func() bool {
		s, err := quickShare(m, "app.gslb.example.com.", "127.0.0.92", 40)
		return err == nil && s == 0 && len(kubeReport(t, m).Services["app.gslb.example.com."]) == 1
	}, 10*time.Second, 100*time.Millisecond)
}
