//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/miekg/dns"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/meridian-gslb/meridian/e2e/kubelab"
)

// Two members, no ring: every node decides ownership on its own, from the
// same objects. %[3]s adds lines to the kubernetes section.
const kubeClaimsConfig = `
# These loopback tests query far faster than the default RRL rate (200/s
# per /24), all from 127.0.0.1: raise the limit, keep RRL on.
server: {dns: {rrl: {responses_per_second: 1000000}}}
zones:
  - apex: gslb.example.com
    nameservers: [{name: ns1.gslb.example.com, ipv4: [127.0.0.1]}]
clusters:
  - {name: east, region: us-east, kubernetes: {kubeconfig: "%[1]s"}}
  - {name: west, region: us-west, kubernetes: {kubeconfig: "%[2]s"}}
kubernetes:
  retry_interval: 500ms
  connect_timeout: 2s
%[3]s`

// answerCounts sends n A queries for name to m over one UDP socket and
// counts the addresses in the answers and the response codes.
func answerCounts(t *testing.T, m *instance, name string, n int) (addrs map[string]int, rcodes map[string]int) {
	t.Helper()
	cl := &dns.Client{Net: "udp", Timeout: 2 * time.Second}
	conn, err := cl.Dial(m.dns)
	require.NoError(t, err)
	defer conn.Close()
	addrs, rcodes = map[string]int{}, map[string]int{}
	for range n {
		q := new(dns.Msg)
		q.SetQuestion(dns.Fqdn(name), dns.TypeA)
		r, _, err := cl.ExchangeWithConn(q, conn)
		require.NoError(t, err)
		rcodes[dns.RcodeToString[r.Rcode]]++
		for _, rr := range r.Answer {
			if a, ok := rr.(*dns.A); ok {
				addrs[a.A.String()]++
			}
		}
	}
	return addrs, rcodes
}

// answerCountsQuiet is answerCounts without a test: errors end the count.
func answerCountsQuiet(m *instance, name string, n int) (map[string]int, error) {
	cl := &dns.Client{Net: "udp", Timeout: 2 * time.Second}
	conn, err := cl.Dial(m.dns)
	if err != nil {
		return nil, err
	}
	defer conn.Close()
	addrs := map[string]int{}
	for range n {
		q := new(dns.Msg)
		q.SetQuestion(dns.Fqdn(name), dns.TypeA)
		r, _, err := cl.ExchangeWithConn(q, conn)
		if err != nil {
			return addrs, err
		}
		for _, rr := range r.Answer {
			if a, ok := rr.(*dns.A); ok {
				addrs[a.A.String()]++
			}
		}
	}
	return addrs, nil
}

// waitEvent waits for an Event with reason on object ns/name whose message
// has substr, and returns it.
func waitEvent(t *testing.T, m *kubelab.Member, ns, name, reason, substr string, within time.Duration) corev1.Event {
	t.Helper()
	var found corev1.Event
	require.Eventually(t, func() bool {
		evs, err := m.Client(t).CoreV1().Events(ns).List(context.Background(), metav1.ListOptions{})
		if err != nil {
			return false
		}
		for _, e := range evs.Items {
			if e.InvolvedObject.Name == name && e.Reason == reason && strings.Contains(e.Message, substr) {
				found = e
				return true
			}
		}
		return false
	}, within, 50*time.Millisecond, "an Event %s on %s/%s with %q", reason, ns, name, substr)
	return found
}

func seriesLine(metrics, prefix string) string {
	for l := range strings.SplitSeq(metrics, "\n") {
		if strings.HasPrefix(l, prefix) {
			return l
		}
	}
	return ""
}

// TestKubernetesHostnameOwnership: team-a serves app.gslb.example.com from
// two clusters (namespace team-a in east and in west is one tenant); a
// LoadBalancer Service in namespace team-b claims the same name with weight
// 1000 and strategy failover, another claims the zone apex. Two Meridian
// nodes run with the least-privilege RBAC of deploy/kustomize (read, and
// create Events).
func TestKubernetesHostnameOwnership(t *testing.T) {
	lab := kubelab.Start(t, kubelab.Bins(t), "east", "west")
	east, west := lab.Member("east"), lab.Member("west")
	for _, m := range []*kubelab.Member{east, west} {
		applyRBAC(t, m)
	}
	kcEast := east.Kubeconfig(t, kubelab.TokenUser(east.ServiceAccountToken(t, "meridian", "meridian")))
	kcWest := west.Kubeconfig(t, kubelab.TokenUser(west.ServiceAccountToken(t, "meridian", "meridian")))
	lbService(t, east, "team-a", "web", map[string]string{"meridian.io/hostname": "app.gslb.example.com", "meridian.io/weight": "70"}, "127.0.0.81")
	lbService(t, west, "team-a", "web", map[string]string{"meridian.io/hostname": "app.gslb.example.com", "meridian.io/weight": "30"}, "127.0.0.82")

	m1 := startMeridian(t, fmt.Sprintf(kubeClaimsConfig, kcEast, kcWest, ""))
	m2 := startMeridian(t, fmt.Sprintf(kubeClaimsConfig, kcEast, kcWest, ""))
	nodes := []*instance{m1, m2}
	for _, m := range nodes {
		require.Eventually(t, func() bool {
			s1, err1 := quickShare(m, "app.gslb.example.com.", "127.0.0.81", 50)
			s2, err2 := quickShare(m, "app.gslb.example.com.", "127.0.0.82", 50)
			return err1 == nil && err2 == nil && s1 > 0 && s2 > 0
		}, 30*time.Second, 100*time.Millisecond, "team-a is served from both clusters:\n%s", m.log())
	}
	before := digShares(t, m1, "app.gslb.example.com", 2000)
	t.Logf("FIGURE kube owner team-a before any squatter, 2 000 dig queries: east %.2f%% west %.2f%%", before["127.0.0.81"], before["127.0.0.82"])
	waitEvent(t, east, "team-a", "web", "MeridianStatus", "served for app.gslb.example.com.", 10*time.Second)

	t.Run("1: a squatter in another namespace gets no answers and a conflict Event; the owner's shares are unchanged", func(t *testing.T) {
		// Query without pause from before the squatters exist until after
		// their Events: not one answer may go to them, even at first.
		stop := make(chan struct{})
		during := make(chan [3]int, 1)
		go func() {
			total, squat, apex := 0, 0, 0
			for {
				select {
				case <-stop:
					during <- [3]int{total, squat, apex}
					return
				default:
				}
				a, _ := answerCountsQuiet(m1, "app.gslb.example.com", 20)
				b, _ := answerCountsQuiet(m1, "gslb.example.com", 20)
				total += 20
				squat += a["127.0.0.66"]
				apex += b["127.0.0.67"]
			}
		}()
		time.Sleep(200 * time.Millisecond)
		created := time.Now()
		lbService(t, west, "team-b", "squat", map[string]string{"meridian.io/hostname": "app.gslb.example.com",
			"meridian.io/weight": "1000", "meridian.io/strategy": "failover"}, "127.0.0.66")
		lbService(t, east, "team-b", "apex", map[string]string{"meridian.io/hostname": "gslb.example.com"}, "127.0.0.67")

		ev := waitEvent(t, west, "team-b", "squat", "HostnameConflict", "belongs to namespace team-a", 10*time.Second)
		t.Logf("FIGURE kube squatter created → HostnameConflict Event: %s", time.Since(created).Round(10*time.Millisecond))
		time.Sleep(time.Second)
		close(stop)
		d := <-during
		t.Logf("FIGURE kube node p1 while the squatters were created and for 1s after their Event: %d queries for each name; squatter answers %d (owned name), %d (apex)", d[0], d[1], d[2])
		assert.Positive(t, d[0])
		assert.Zero(t, d[1], "no answer went to the squatter, even at first")
		assert.Zero(t, d[2], "no answer went to the apex squatter, even at first")
		t.Logf("squatter Event (%s, %s): %s", ev.Type, ev.Source.Component, ev.Message)
		assert.Equal(t, corev1.EventTypeWarning, ev.Type)
		assert.NotContains(t, ev.Message, "east", "the owner's clusters are not disclosed")
		apexEv := waitEvent(t, east, "team-b", "apex", "HostnameConflict", "is the apex of zone gslb.example.com.", 10*time.Second)
		t.Logf("apex squatter Event: %s", apexEv.Message)

		// Both nodes have seen both squatters (the Events could come from either).
		for _, m := range nodes {
			require.Eventually(t, func() bool {
				rep := kubeReport(t, m)
				return len(rep.Problems["west/service/team-b/squat"]) > 0 && len(rep.Problems["east/service/team-b/apex"]) > 0
			}, 10*time.Second, 50*time.Millisecond)
		}
		for i, m := range nodes {
			sh := digShares(t, m, "app.gslb.example.com", 2000)
			squat := int(sh["127.0.0.66"] * 20) // of 2000
			t.Logf("FIGURE kube node p%d, 2 000 dig queries for the owned name with the squatter (weight 1000) present: squatter %d of 2000, east %.2f%% west %.2f%%",
				i+1, squat, sh["127.0.0.81"], sh["127.0.0.82"])
			assert.Zero(t, sh["127.0.0.66"], "the squatter gets no answer")
			// 2 000 draws of a 70 % share: σ ≈ 1 point, the difference of two
			// runs σ ≈ 1.45; 5 points is ~3.4σ, while a squatter with weight
			// 1000 merged in would leave the owner ~9 % (failover: east 100 %).
			assert.InDelta(t, before["127.0.0.81"], sh["127.0.0.81"], 5, "the owner's shares are unchanged (and its strategy: failover would give east 100%%)")
			assert.InDelta(t, 70, sh["127.0.0.81"], 5)
			assert.InDelta(t, 30, sh["127.0.0.82"], 5)

			addrs, rcodes := answerCounts(t, m, "gslb.example.com", 2000)
			t.Logf("FIGURE kube node p%d, 2 000 A queries for the zone apex with an apex squatter present: squatter %d of 2000 (rcodes %v)", i+1, addrs["127.0.0.67"], rcodes)
			assert.Zero(t, addrs["127.0.0.67"], "the apex squatter gets no answer")
			assert.Equal(t, 2000, rcodes["NOERROR"], "every apex query is answered (NODATA)")

			metrics := m.metrics(t)
			assert.Equal(t, `meridian_kube_hostname_conflicts{kind="taken"} 1`, seriesLine(metrics, `meridian_kube_hostname_conflicts{kind="taken"}`))
			assert.Equal(t, `meridian_kube_hostname_conflicts{kind="reserved"} 1`, seriesLine(metrics, `meridian_kube_hostname_conflicts{kind="reserved"}`))
			assert.Contains(t, m.log(), "hostname claim refused")
			// Least privilege: nothing was patched, nothing was refused.
			assert.Empty(t, seriesLine(metrics, "meridian_kube_status_writes_total"), "no status patch is attempted")
			assert.Empty(t, seriesLine(metrics, `meridian_kube_events_total{cluster="west",result="failed"}`))
			assert.NotContains(t, m.log(), "forbidden")
		}
		r1, r2 := kubeReport(t, m1), kubeReport(t, m2)
		assert.Equal(t, r1.Problems, r2.Problems, "both nodes decide the same owners")
		assert.Equal(t, r1.Services, r2.Services)
		assert.ElementsMatch(t, []string{"east/service/team-a/web", "west/service/team-a/web"}, r1.Services["app.gslb.example.com."])
		for ref, ps := range r1.Problems {
			t.Logf("problem %s: %s", ref, ps)
		}
	})

	t.Run("2: with the status-annotation component, the squatter's meridian.io/status names the owner namespace", func(t *testing.T) {
		addRBACComponent(t, west, "status-annotation")
		writeAtomic(t, m1.config, fmt.Sprintf(kubeClaimsConfig, kcEast, kcWest, "  status_annotation: true\n"))
		var status string
		require.Eventually(t, func() bool {
			svc, err := west.Client(t).CoreV1().Services("team-b").Get(context.Background(), "squat", metav1.GetOptions{})
			status = svc.Annotations["meridian.io/status"]
			return err == nil && status != ""
		}, 15*time.Second, 100*time.Millisecond, "m1 writes the annotation:\n%s", m1.log())
		t.Logf("squatter meridian.io/status: %s", status)
		assert.Contains(t, status, `"served":false`)
		assert.Contains(t, status, "belongs to namespace team-a")
		require.Eventually(t, func() bool {
			svc, err := west.Client(t).CoreV1().Services("team-a").Get(context.Background(), "web", metav1.GetOptions{})
			return err == nil && strings.Contains(svc.Annotations["meridian.io/status"], `"share":"30%"`)
		}, 15*time.Second, 100*time.Millisecond, "the owner's status in west shows its unchanged share")
	})

	t.Run("3: a claims policy serves the namespaces it allows, and pins ownership over the first claim", func(t *testing.T) {
		claims := `  claims:
    - {namespaces: [team-b], names: [gslb.example.com, app.gslb.example.com]}
`
		changed := time.Now()
		for _, m := range nodes {
			writeAtomic(t, m.config, fmt.Sprintf(kubeClaimsConfig, kcEast, kcWest, claims))
		}
		for _, m := range nodes {
			require.Eventually(t, func() bool {
				s, err := quickShare(m, "gslb.example.com.", "127.0.0.67", 20)
				return err == nil && s == 100
			}, 15*time.Second, 50*time.Millisecond, "the apex is served to the namespace a claim lists:\n%s", m.log())
		}
		t.Logf("FIGURE kube claims policy written → allowed namespace served on both nodes: %s", time.Since(changed).Round(10*time.Millisecond))
		for i, m := range nodes {
			apex, _ := answerCounts(t, m, "gslb.example.com", 2000)
			app, _ := answerCounts(t, m, "app.gslb.example.com", 2000)
			t.Logf("FIGURE kube node p%d with the claims policy, 2 000 queries each: apex → team-b %d of 2000; app → team-b %d, team-a %d of 2000",
				i+1, apex["127.0.0.67"], app["127.0.0.66"], app["127.0.0.81"]+app["127.0.0.82"])
			assert.Equal(t, 2000, apex["127.0.0.67"])
			assert.Equal(t, 2000, app["127.0.0.66"], "the policy gives the name to team-b only")
			assert.Zero(t, app["127.0.0.81"]+app["127.0.0.82"])
		}
		ev := waitEvent(t, east, "team-a", "web", "HostnameConflict", "kubernetes.claims gives app.gslb.example.com. to namespace team-b", 10*time.Second)
		t.Logf("former owner's Event: %s", ev.Message)
		assert.Contains(t, m1.log(), "the namespaces owning a name changed")
		assert.Regexp(t, `meridian_kube_hostname_owner_changes_total [1-9]`, m1.metrics(t))
	})
}

// kubeconfigWith returns the member's inline kubeconfig for user with the
// user section replaced by fields (YAML at the user's indentation).
func kubeconfigWith(t *testing.T, m *kubelab.Member, user kubelab.KubeUser, fields string) []byte {
	t.Helper()
	b, err := os.ReadFile(m.Kubeconfig(t, user))
	require.NoError(t, err)
	s := string(b)
	i := strings.Index(s, "    token: ")
	require.GreaterOrEqual(t, i, 0, "a token user:\n%s", s)
	j := strings.Index(s[i:], "\n")
	return []byte(s[:i] + fields + s[i+j:])
}

// TestKubernetesMemberSecretRefusals: member Secrets whose kubeconfig
// would run a command or read a file inside Meridian are refused with the
// reason and an Event on the Secret; the command never runs (its marker
// file is never created, though a run would even have produced valid
// credentials); the same Secret with an inline token then registers.
func TestKubernetesMemberSecretRefusals(t *testing.T) {
	lab := kubelab.Start(t, kubelab.Bins(t), "east", "west")
	east, west := lab.Member("east"), lab.Member("west")
	for _, m := range []*kubelab.Member{east, west} {
		applyRBAC(t, m)
	}
	kcEast := east.Kubeconfig(t, kubelab.TokenUser(east.ServiceAccountToken(t, "meridian", "meridian")))
	westToken := west.ServiceAccountToken(t, "meridian", "meridian")
	lbService(t, east, "shop", "web", map[string]string{"meridian.io/hostname": "app.gslb.example.com"}, "127.0.0.91")
	lbService(t, west, "shop", "web", map[string]string{"meridian.io/hostname": "app.gslb.example.com"}, "127.0.0.92")
	m := startMeridian(t, fmt.Sprintf(kubeSecretsConfig, kcEast, kcEast))
	require.Eventually(t, func() bool {
		s, err := quickShare(m, "app.gslb.example.com.", "127.0.0.91", 20)
		return err == nil && s == 100
	}, 20*time.Second, 100*time.Millisecond)

	marker := filepath.Join(t.TempDir(), "exec-ran")
	cred := `{"apiVersion":"client.authentication.k8s.io/v1","kind":"ExecCredential","status":{"token":"` + westToken + `"}}`
	execUser := "    exec:\n      apiVersion: client.authentication.k8s.io/v1\n      command: /bin/sh\n      args:\n      - -c\n      - " +
		strconv.Quote("touch "+marker+"; echo '"+cred+"'") + "\n      interactiveMode: Never"
	tokenFile := filepath.Join(t.TempDir(), "token")
	require.NoError(t, os.WriteFile(tokenFile, []byte(westToken), 0o600))

	secrets := east.Client(t).CoreV1().Secrets("meridian")
	put := func(kubeconfig []byte) {
		t.Helper()
		s := &corev1.Secret{
			ObjectMeta: metav1.ObjectMeta{Name: "member-west", Labels: map[string]string{"meridian.io/member": "true"},
				Annotations: map[string]string{"meridian.io/cluster": "west", "meridian.io/region": "us-west"}},
			Data: map[string][]byte{"kubeconfig": kubeconfig},
		}
		if _, err := secrets.Get(context.Background(), s.Name, metav1.GetOptions{}); err == nil {
			_, err = secrets.Update(context.Background(), s, metav1.UpdateOptions{})
			require.NoError(t, err)
			return
		}
		_, err := secrets.Create(context.Background(), s, metav1.CreateOptions{})
		require.NoError(t, err)
	}
	westAbsent := func() {
		t.Helper()
		st, _ := memberOf(kubeReport(t, m), "west")
		assert.Empty(t, st, "west is not a member")
		s, err := quickShare(m, "app.gslb.example.com.", "127.0.0.91", 50)
		require.NoError(t, err)
		assert.Equal(t, 100.0, s, "east alone serves")
	}

	for _, c := range []struct {
		name, fields, want string
	}{
		{"an exec plugin", execUser, "exec plugins are refused: command \"/bin/sh\" would run inside Meridian"},
		{"a token file", "    tokenFile: " + tokenFile, "users[west].tokenFile: file \"" + tokenFile + "\" is refused"},
	} {
		t.Run(c.name+" is refused with an Event on the Secret, and nothing from it is used", func(t *testing.T) {
			put(kubeconfigWith(t, west, kubelab.TokenUser(westToken), c.fields))
			created := time.Now()
			ev := waitEvent(t, east, "meridian", "member-west", "InvalidMemberSecret", c.want, 10*time.Second)
			t.Logf("FIGURE kube member Secret with %s → InvalidMemberSecret Event: %s", c.name, time.Since(created).Round(10*time.Millisecond))
			t.Logf("Event: %s", ev.Message)
			assert.NotContains(t, ev.Message, westToken, "the token is not quoted")
			assert.Contains(t, m.log(), "member Secret refused")
			// Several connect attempts (retry_interval 500ms) would have run
			// the command by now.
			time.Sleep(3 * time.Second)
			westAbsent()
			_, err := os.Stat(marker)
			assert.True(t, os.IsNotExist(err), "the exec command never ran (%s does not exist)", marker)
		})
	}
	assert.Regexp(t, `meridian_kube_events_total\{cluster="member_secrets",result="created"\} [1-9]`, m.metrics(t))

	t.Run("the same Secret with an inline token registers west", func(t *testing.T) {
		b, err := os.ReadFile(west.Kubeconfig(t, kubelab.TokenUser(westToken)))
		require.NoError(t, err)
		put(b)
		require.Eventually(t, func() bool {
			s, err := quickShare(m, "app.gslb.example.com.", "127.0.0.92", 100)
			return err == nil && s > 30 && s < 70
		}, 20*time.Second, 50*time.Millisecond, "west registered:\n%s", m.log())
		_, err = os.Stat(marker)
		assert.True(t, os.IsNotExist(err), "the exec command never ran")
	})
}
