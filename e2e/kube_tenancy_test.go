//go:build e2e

package e2e

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/meridian-gslb/meridian/e2e/kubelab"
)

const kubeTenancyConfig = `
server: {state_dir: "%[2]s", dns: {rrl: {responses_per_second: 1000000}}}
zones:
  - apex: gslb.example.com
    nameservers: [{name: ns1.gslb.example.com, ipv4: [127.0.0.1]}]
clusters:
  - {name: east, region: us-east, kubernetes: {kubeconfig: "%[1]s"}}
kubernetes:
  retry_interval: 500ms
  connect_timeout: 2s
`

// TestKubernetesTenancy: on a real kube-apiserver, team-b's LoadBalancer
// Service, created before team-a's, is annotated with team-a's name after
// team-a claimed it: it gets no answer, before and after a restart of the
// node (the first claimant is kept in the state directory). Then an
// object whose meridian.io/hostname lists 10 000 names serves the first
// 100 and gets a HostnameLimit Event.
func TestKubernetesTenancy(t *testing.T) {
	lab := kubelab.Start(t, kubelab.Bins(t), "east")
	east := lab.Member("east")
	applyRBAC(t, east)
	kc := east.Kubeconfig(t, kubelab.TokenUser(east.ServiceAccountToken(t, "meridian", "meridian")))
	state := filepath.Join(t.TempDir(), "state")
	cfg := fmt.Sprintf(kubeTenancyConfig, kc, state)

	// team-b's Service exists first, without the annotation.
	lbService(t, east, "team-b", "legacy", map[string]string{"app": "legacy"}, "127.0.0.66")
	time.Sleep(1100 * time.Millisecond) // creationTimestamp has whole seconds
	lbService(t, east, "team-a", "web", map[string]string{"meridian.io/hostname": "app.gslb.example.com"}, "127.0.0.81")

	m := startMeridian(t, cfg)
	require.Eventually(t, func() bool {
		s, err := quickShare(m, "app.gslb.example.com.", "127.0.0.81", 10)
		return err == nil && s == 100
	}, 30*time.Second, 100*time.Millisecond, "team-a is served:\n%s", m.log())

	t.Run("an old Service annotated today does not take the first claimant's name", func(t *testing.T) {
		annotate(t, east, "team-b", "legacy", "meridian.io/hostname", "app.gslb.example.com")
		annotate(t, east, "team-b", "legacy", "meridian.io/weight", "1000")
		ev := waitEvent(t, east, "team-b", "legacy", "HostnameConflict", "belongs to namespace team-a, whose object claimed it first", 15*time.Second)
		t.Logf("squatter Event: %s", ev.Message)
		addrs, _ := answerCounts(t, m, "app.gslb.example.com", 2000)
		t.Logf("FIGURE kube tenancy: 2 000 queries for the first claimant's name with an older Service annotated later: squatter %d, owner %d", addrs["127.0.0.66"], addrs["127.0.0.81"])
		assert.Zero(t, addrs["127.0.0.66"], "the older Service annotated later gets no answer")
		assert.Equal(t, 2000, addrs["127.0.0.81"])
		rep := kubeReport(t, m)
		require.Contains(t, rep.FirstClaims, "app.gslb.example.com.")
		assert.Equal(t, "team-a", rep.FirstClaims["app.gslb.example.com."].Namespace, "GET /v1/kube shows the first claimant")
	})

	// The restart is not a subtest: the new node must outlive it.
	m.stop(t)
	b, err := os.ReadFile(filepath.Join(state, "first-claims.json"))
	require.NoError(t, err)
	assert.Contains(t, string(b), `"app.gslb.example.com.":{"namespace":"team-a"`, "the first claimant is in the state directory")
	fi, err := os.Stat(state)
	require.NoError(t, err)
	assert.Equal(t, os.FileMode(0o700), fi.Mode().Perm())
	m = startMeridian(t, cfg)
	require.Eventually(t, func() bool {
		s, err := quickShare(m, "app.gslb.example.com.", "127.0.0.81", 10)
		return err == nil && s == 100
	}, 30*time.Second, 100*time.Millisecond, "team-a is served again:\n%s", m.log())
	require.Eventually(t, func() bool {
		return len(kubeReport(t, m).Problems["east/service/team-b/legacy"]) > 0
	}, 10*time.Second, 50*time.Millisecond, "both objects are seen after the restart")
	addrs, _ := answerCounts(t, m, "app.gslb.example.com", 2000)
	t.Logf("FIGURE kube tenancy after a restart: squatter %d of 2000", addrs["127.0.0.66"])
	assert.Zero(t, addrs["127.0.0.66"], "after a restart the first claimant still holds the name")

	t.Run("an annotation with 10 000 names is capped with an Event and its first names serve", func(t *testing.T) {
		names := make([]string, 10000)
		for i := range names {
			names[i] = fmt.Sprintf("n%05d.gslb.example.com", i)
		}
		anno := strings.Join(names, ",")
		t.Logf("annotation: %d names, %d bytes", len(names), len(anno))
		created := time.Now()
		lbService(t, east, "team-c", "many", map[string]string{"meridian.io/hostname": anno}, "127.0.0.90")
		require.Eventually(t, func() bool {
			return len(kubeReport(t, m).Problems["east/service/team-c/many"]) > 0
		}, 30*time.Second, 100*time.Millisecond, "the node reports the limit:\n%s", m.log())
		t.Logf("FIGURE kube tenancy: 10 000-name Service created → problem on /v1/kube: %s", time.Since(created).Round(10*time.Millisecond))
		ev := waitEvent(t, east, "team-c", "many", "HostnameLimit", "lists 10000 names; an object serves at most 100", 30*time.Second)
		t.Logf("FIGURE kube tenancy: 10 000-name Service created → HostnameLimit Event: %s; Event: %s", time.Since(created).Round(10*time.Millisecond), ev.Message)
		require.Eventually(t, func() bool {
			s, err := quickShare(m, "n00099.gslb.example.com.", "127.0.0.90", 1)
			return err == nil && s == 100
		}, 15*time.Second, 100*time.Millisecond, "the 100th name serves")
		s, err := quickShare(m, "n00100.gslb.example.com.", "127.0.0.90", 5)
		require.NoError(t, err)
		assert.Zero(t, s, "the 101st name does not")
		s, err = quickShare(m, "app.gslb.example.com.", "127.0.0.81", 20)
		require.NoError(t, err)
		assert.Equal(t, 100.0, s, "other tenants keep serving")
		assert.Contains(t, m.metrics(t), `meridian_kube_hostnames_over_limit{limit="object"} 9900`)
	})
}
