//go:build e2e

package e2e

import (
	"crypto/ed25519"
	"crypto/rand"
	"encoding/json"
	"fmt"
	"net/netip"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/meridian-gslb/meridian/internal/ringca"
	"github.com/meridian-gslb/meridian/internal/secretfile"
)

// The checks of TestTwoSites after the walkthrough, in the order it runs
// them, each leaving the ring whole for the next.

// slackTexts are the texts the Slack receiver got that name addr, by kind
// ("failover", "decided").
func (s *twoSite) slackTexts(addr string) map[string][]string {
	out := map[string][]string{}
	for _, c := range hookCalls(s.t, s.sink) {
		if !strings.HasPrefix(c.path, "/slack/") {
			continue
		}
		var b map[string]string
		require.NoError(s.t, json.Unmarshal(c.body, &b))
		text := b["text"]
		if !strings.Contains(text, addr) {
			continue
		}
		for _, kind := range []string{"failover", "decided"} {
			if strings.Contains(text, "*Meridian "+kind+"*") {
				out[kind] = append(out[kind], text)
			}
		}
	}
	return out
}

// inAnswers waits until addr is (or is not) in the answers of every pod
// and returns how long each pod took after t0, and the longest.
func (s *twoSite) inAnswers(what, addr string, want bool, t0 time.Time, pods []*tsPod) (map[string]time.Duration, time.Duration) {
	s.t.Helper()
	took := map[string]time.Duration{}
	s.until(what, 3*time.Minute, func() error {
		var pending []string
		for _, p := range pods {
			key := p.site + "/" + p.name
			if _, ok := took[key]; ok {
				continue
			}
			got, err := s.answerAddrs(p, "app.gslb.example.com")
			if err == nil && slices.Contains(got, addr) == want {
				took[key] = time.Since(t0)
				continue
			}
			pending = append(pending, fmt.Sprintf("%s: %v %v", key, got, err))
		}
		if len(pending) > 0 {
			return fmt.Errorf("%s", strings.Join(pending, "; "))
		}
		return nil
	})
	var longest time.Duration
	for _, d := range took {
		longest = max(longest, d)
	}
	return took, longest
}

func roundAllOf(m map[string]time.Duration) string {
	var parts []string
	for _, k := range slices.Sorted(func(yield func(string) bool) {
		for k := range m {
			if !yield(k) {
				return
			}
		}
	}) {
		parts = append(parts, fmt.Sprintf("%s %s", k, m[k].Round(100*time.Millisecond)))
	}
	return strings.Join(parts, ", ")
}

// slackGrace is how long the test waits after an event before it counts
// the Slack messages: every node decides within a few probe intervals, so
// a second copy would have arrived by then.
const slackGrace = 15 * time.Second

// checkFailover: east's backend is killed; eu-west confirms the down
// verdict, every site's answers drop it, and Slack hears of it once; then
// it comes back (once too).
func (s *twoSite) checkFailover(t *testing.T, victim netip.Addr) {
	s.t = t
	addr := victim.String()
	require.Empty(t, s.slackTexts(addr), "start-up verdicts are not notified")
	killed := time.Now()
	require.NoError(t, s.backends["east"].Stop())
	took, longest := s.inAnswers("east's web leaves every pod's answers", addr, false, killed, s.pods())
	t.Logf("FIGURE two sites: east's backend killed → out of every site's answers %s (%s)", longest.Round(100*time.Millisecond), roundAllOf(took))

	rep, err := s.health(s.pods()[0])
	require.NoError(t, err)
	found := false
	for _, e := range rep.Endpoints {
		if !strings.HasPrefix(e.Target, addr) {
			continue
		}
		found = true
		assert.Equal(t, "down", e.State, "%+v", e)
		assert.Equal(t, "confirmation", e.Reason, "a down verdict confirmed by another region: %+v", e)
		assert.Contains(t, e.Voters, "eu-west-meridian-0", "eu-west's vote is among the deciding ones: %+v", e)
		t.Logf("the decision on %s: %s, reason %s, voters %v", e.Target, e.State, e.Reason, e.Voters)
	}
	require.True(t, found, "endpoint %s in east's health report: %+v", addr, rep.Endpoints)

	var first time.Time
	s.until("the failover reaches Slack", time.Minute, func() error {
		if len(s.slackTexts(addr)["failover"]) == 0 {
			return errNotReady
		}
		first = time.Now()
		return nil
	})
	s.wait(slackGrace)
	msgs := s.slackTexts(addr)["failover"]
	t.Logf("FIGURE two sites: backend killed → Slack message %s (seen by the poll); %d message(s) %s after the first: %q",
		first.Sub(killed).Round(100*time.Millisecond), len(msgs), slackGrace, msgs)
	assert.Len(t, msgs, 1, "one Slack message for the failover, from the ring's one writer")

	// It comes back, for what follows: one message again.
	// Started for the whole test (the lab's root t), not for this check.
	addrPort := netip.AddrPortFrom(victim, 8080).String()
	s.backends["east"] = s.web.startHelper(s.root, "http "+addrPort, "http", addrPort, "/healthz")
	s.backends["east"].WaitFor(t, "ready", 10*time.Second)
	back := time.Now()
	_, longest = s.inAnswers("east's web back in every pod's answers", addr, true, back, s.pods())
	t.Logf("FIGURE two sites: east's backend restarted → back in every site's answers %s", longest.Round(100*time.Millisecond))
	s.wait(slackGrace)
	assert.Len(t, s.slackTexts(addr)["decided"], 1, "one Slack message for the recovery: %q", s.slackTexts(addr))
}

// podNamed returns the running pod of a site.
func (s *twoSite) podNamed(site, name string) *tsPod {
	for _, p := range s.pods() {
		if p.site == site && p.name == name {
			return p
		}
	}
	s.t.Fatalf("no pod %s/%s", site, name)
	return nil
}

// checkRenewal: eu-west's credential is issued again and applied to its
// Secret, as in the walkthrough; the pod takes it without a restart.
func (s *twoSite) checkRenewal(t *testing.T, issueLine string, all []string) {
	s.t = t
	w := s.podNamed("eu-west", "meridian-0")
	before := strings.Count(w.proc.Output(), "credential renewed")
	out, err := s.runBlock("eu-west's credential issued again", issueLine, time.Minute)
	require.NoError(t, err, out)
	applied := time.Now()
	s.until("eu-west's pod takes the renewed credential", 90*time.Second, func() error {
		if strings.Count(w.proc.Output(), "credential renewed") > before {
			return nil
		}
		return errNotReady
	})
	t.Logf("FIGURE two sites: renewed credential applied → \"credential renewed\" on eu-west's pod %s (kubelet sync here ~1 s, Meridian follows the files every 10 s)", time.Since(applied).Round(100*time.Millisecond))
	select {
	case <-w.proc.Exited():
		t.Fatalf("eu-west's pod exited: %v", w.proc.Err())
	default:
	}
	s.until("the ring stays whole", time.Minute, func() error { return s.ringWhole(all) })
}

// runNode starts `meridian serve` on the x host with config, for the trust
// checks.
func (s *twoSite) runNode(t *testing.T, name, config string) *Proc {
	t.Helper()
	dir := filepath.Join(s.dir, "nodes", name)
	require.NoError(t, os.MkdirAll(filepath.Join(dir, "state"), 0o700))
	path := filepath.Join(dir, "config.yaml")
	require.NoError(t, os.WriteFile(path, []byte(strings.ReplaceAll(config, "STATE", filepath.Join(dir, "state"))), 0o600))
	return s.x.Start(t, "node "+name, meridianBin, "serve", "--config", path)
}

// trustNodeConfig is a node of the ring outside the chart, on the x host:
// the walkthrough's zone, gossip key and seeds (east's first pod), and the
// credential given.
const trustNodeConfig = `
server:
  dns: {listen: ["%[1]s:%[2]d"]}
  http: {listen: "%[1]s:%[3]d"}
  state_dir: STATE
zones:
  - apex: gslb.example.com
    nameservers: [{name: ns1.gslb.example.com, ipv4: [%[1]s]}]
ring:
  enabled: true
  node_name: %[4]s
  region: %[5]s
  bind: "%[1]s:%[6]d"
  seeds: ["%[7]s:7946"]
  key_file: %[8]s
  require_encryption: true
  ca: [%[9]s]
  credential: {cert_file: %[10]s, key_file: %[11]s}
`

// secretCopy copies a file the walkthrough made to a file for a node of
// the trust checks (owner-only).
func (s *twoSite) secretCopy(t *testing.T, src, name string) string {
	t.Helper()
	b, err := os.ReadFile(src)
	require.NoError(t, err)
	dst := filepath.Join(s.dir, "nodes", name)
	require.NoError(t, os.MkdirAll(filepath.Dir(dst), 0o700))
	require.NoError(t, os.WriteFile(dst, b, 0o600))
	return dst
}

// credentialFiles reads a site's credential Secret into owner-only files.
func (s *twoSite) credentialFiles(t *testing.T, c *tsCluster, prefix string) (cert, key, ca string) {
	t.Helper()
	ctx, cancel := tsCtx()
	defer cancel()
	sec, err := c.cs.CoreV1().Secrets(tsNamespace).Get(ctx, "meridian-ring-credential", metav1.GetOptions{})
	require.NoError(t, err)
	dir := filepath.Join(s.dir, "nodes")
	require.NoError(t, os.MkdirAll(dir, 0o700))
	for name, key := range map[string]string{"tls.crt": "tls.crt", "tls.key": "tls.key", "ca.crt": "ca.crt"} {
		require.NoError(t, os.WriteFile(filepath.Join(dir, prefix+"-"+name), sec.Data[key], 0o600))
	}
	return filepath.Join(dir, prefix+"-tls.crt"), filepath.Join(dir, prefix+"-tls.key"), filepath.Join(dir, prefix+"-ca.crt")
}

// refusesToStart waits for a node to exit and returns its output.
func refusesToStart(t *testing.T, p *Proc) string {
	t.Helper()
	select {
	case <-p.Exited():
	case <-time.After(30 * time.Second):
		t.Fatalf("%s still runs after 30 s:\n%s", p.Name, p.Output())
	}
	require.Error(t, p.Err(), "%s exits with an error:\n%s", p.Name, p.Output())
	return p.Output()
}

// checkTrust: (a) an east credential with region eu-west, and an expired
// one, refuse to start; (b) a node with a credential from a foreign CA
// joins memberlist but is never trusted, counted as foreign-ca; (c) an
// agent credential is an agent, not a prober; (d) a revoked credential
// (helm upgrade --set ring.revoked, the ConfigMap hot-reloaded) drops that
// site from the others' trusted probers, counted as revoked, until the
// revocation is lifted.
func (s *twoSite) checkTrust(t *testing.T, all []string) {
	s.t = t
	e0 := s.podNamed("east", "meridian-0")
	gossipKey := s.secretCopy(t, filepath.Join(s.dir, "keys", "key"), "gossip.key")
	cert, key, ca := s.credentialFiles(t, s.east, "east")
	x := s.x.IP.String()
	node := func(name, region string, port int, cert, key, ca string) string {
		return fmt.Sprintf(trustNodeConfig, x, 5300+port, 8000+port, name, region, 7900+port, e0.host.IP, gossipKey, ca, cert, key)
	}

	t.Run("a: east's credential as eu-west, and an expired one, refuse to start", func(t *testing.T) {
		s.t = t
		out := refusesToStart(t, s.runNode(t, "east-as-eu", node("east-rogue", "eu-west", 1, cert, key, ca)))
		assert.Contains(t, out, "is for us-east, but the node's is eu-west", out)
		t.Logf("east's credential as eu-west:\n%s", tail(out, 2))

		a := loadRingCA(t, filepath.Join(s.dir, "ring-ca"))
		pub, priv, err := ed25519.GenerateKey(rand.Reader)
		require.NoError(t, err)
		der, err := a.Issue(ringca.Scope{TrustDomain: a.TrustDomain(), Name: "east-*", Role: ringca.RoleProber, Region: "us-east", MaxNodes: 2},
			pub, time.Hour, time.Now().Add(-3*time.Hour))
		require.NoError(t, err)
		keyPEM, err := ringca.EncodeKey(priv)
		require.NoError(t, err)
		dir := filepath.Join(s.dir, "nodes")
		expCert, expKey := filepath.Join(dir, "expired.crt"), filepath.Join(dir, "expired.key")
		require.NoError(t, os.WriteFile(expCert, ringca.EncodeCert(der), 0o600))
		require.NoError(t, os.WriteFile(expKey, keyPEM, 0o600))
		out = refusesToStart(t, s.runNode(t, "expired", node("east-expired", "us-east", 2, expCert, expKey, ca)))
		assert.Contains(t, out, "expired", out)
		t.Logf("an expired credential:\n%s", tail(out, 2))
	})

	t.Run("b: a credential from a foreign CA joins memberlist but is never trusted", func(t *testing.T) {
		s.t = t
		out, err := s.runBlock("a foreign CA", "meridian ring ca init --ring gslb.example.com --dir foreign-ca\n"+
			"meridian ring ca issue --ca-dir foreign-ca --name 'east-*' --role prober --region us-east --max-nodes 2 --out foreign.pem", time.Minute)
		require.NoError(t, err, out)
		fcert := filepath.Join(s.dir, "foreign.pem")
		p := s.runNode(t, "foreign", node("east-foreign", "us-east", 3, fcert, "", filepath.Join(s.dir, "foreign-ca", "ca.crt")))
		s.until("east's pod counts the foreign credential as refused", time.Minute, func() error {
			n, err := s.metric(e0, "meridian_ring_messages_rejected_total", `type="credential"`, `reason="foreign-ca"`)
			if err != nil {
				return err
			}
			if n == 0 {
				return errNotReady
			}
			_, untrusted, err := s.trusted(e0)
			if err != nil {
				return err
			}
			if !slices.Contains(untrusted, "east-foreign") {
				return fmt.Errorf("untrusted %v", untrusted)
			}
			return nil
		})
		s.wait(5 * time.Second)
		require.NoError(t, s.ringWhole(all), "the foreign node never counts")
		select {
		case <-p.Exited():
			t.Fatalf("the foreign node trusts its own CA and runs: %v\n%s", p.Err(), p.Output())
		default:
		}
		require.NoError(t, p.Stop())
	})

	t.Run("c: an agent credential is an agent, not a prober", func(t *testing.T) {
		s.t = t
		out, err := s.runBlock("an agent credential", "meridian ring ca issue --ca-dir ring-ca --name agent-east --role agent --cluster east --out agent-east.pem", time.Minute)
		require.NoError(t, err, out)
		agentCred := s.secretCopy(t, filepath.Join(s.dir, "agent-east.pem"), "agent-east.pem")
		caCopy := s.secretCopy(t, filepath.Join(s.dir, "ring-ca", "ca.crt"), "ring-ca.crt")
		p := s.x.Start(t, "agent", meridianBin, "agent", "--cluster", "east", "--node-name", "agent-east",
			"--ca", caCopy, "--credential", agentCred, "--ring", "gslb.example.com",
			"--seed", e0.host.IP.String()+":7946", "--key-file", gossipKey, "--require-encryption",
			"--bind", x+":7947", "--interval", "1s")
		s.until("every pod lists agent-east as an agent", time.Minute, func() error {
			for _, pod := range s.pods() {
				rep, err := s.health(pod)
				if err != nil {
					return err
				}
				role := ""
				for _, pr := range rep.Probers {
					if pr.Name == "agent-east" {
						role = pr.Role
					}
				}
				if role != "agent" {
					return fmt.Errorf("%s/%s: agent-east role %q", pod.site, pod.name, role)
				}
				n, err := s.metric(pod, "meridian_ring_members", `role="agent"`)
				if err != nil || n != 1 {
					return fmt.Errorf("%s/%s: meridian_ring_members{role=\"agent\"} %v %v", pod.site, pod.name, n, err)
				}
			}
			return nil
		})
		require.NoError(t, s.ringWhole(all), "probers stay 3: the agent does not count as one")
		rep, err := s.health(e0)
		require.NoError(t, err)
		for _, e := range rep.Endpoints {
			for _, v := range e.Votes {
				assert.NotEqual(t, "agent-east", v.Prober, "no vote of the agent on %s", e.Target)
			}
		}
		require.NoError(t, p.Stop())
	})

	t.Run("d: revoking eu-west's credential at east drops it from east's trusted probers", func(t *testing.T) {
		s.t = t
		ctx, cancel := tsCtx()
		defer cancel()
		sec, err := s.west.cs.CoreV1().Secrets(tsNamespace).Get(ctx, "meridian-ring-credential", metav1.GetOptions{})
		require.NoError(t, err)
		certs, err := ringca.ParseCertificates(sec.Data["tls.crt"])
		require.NoError(t, err)
		info, err := ringca.Describe(certs[0].Raw)
		require.NoError(t, err)
		upgrade := "helm --kube-context east upgrade meridian deploy/helm/meridian -n meridian -f deploy/helm/examples/common.yaml -f deploy/helm/examples/east.yaml"
		out, err := s.runBlock("revoke eu-west's credential at east", upgrade+" --set 'ring.revoked={"+info.Serial+"}'", 2*time.Minute)
		require.NoError(t, err, out)
		revoked := time.Now()
		east := []string{"east-meridian-0", "east-meridian-1"}
		s.until("east's pods drop eu-west", 2*time.Minute, func() error {
			for _, p := range s.pods() {
				if p.site != "east" {
					continue
				}
				got, _, err := s.trusted(p)
				if err != nil {
					return err
				}
				if !slices.Equal(got, east) {
					return fmt.Errorf("%s counts %v", p.name, got)
				}
				n, err := s.metric(p, "meridian_ring_messages_rejected_total", `type="credential"`, `reason="revoked"`)
				if err != nil {
					return err
				}
				if n == 0 {
					return fmt.Errorf("%s: no credential refused as revoked", p.name)
				}
			}
			return nil
		})
		t.Logf("FIGURE two sites: helm upgrade --set ring.revoked → eu-west out of east's trusted probers %s", time.Since(revoked).Round(100*time.Millisecond))
		for _, p := range s.pods() {
			select {
			case <-p.proc.Exited():
				t.Fatalf("%s/%s exited: the revocation is a hot reload, not a restart: %v", p.site, p.name, p.proc.Err())
			default:
			}
		}

		out, err = s.runBlock("lift the revocation", upgrade, 2*time.Minute)
		require.NoError(t, err, out)
		lifted := time.Now()
		s.until("the ring is whole again", 2*time.Minute, func() error { return s.ringWhole(all) })
		t.Logf("FIGURE two sites: revocation lifted → ring whole again %s", time.Since(lifted).Round(100*time.Millisecond))
	})
}

// loadRingCA reads the walkthrough's ring CA (ring-ca/ca.crt, ca.key).
func loadRingCA(t *testing.T, dir string) ringca.Authority {
	t.Helper()
	certPEM, err := os.ReadFile(filepath.Join(dir, "ca.crt"))
	require.NoError(t, err)
	keyPEM, err := secretfile.Read(filepath.Join(dir, "ca.key"))
	require.NoError(t, err)
	a, err := ringca.ParseAuthority(certPEM, keyPEM)
	require.NoError(t, err)
	return a
}

// checkRegionLoss: eu-west's pod and its backend die together; east's
// answers drop eu-west's endpoint (east decides alone: one region left)
// and the parent's delegation (the parent of the time) drops ns-eu-west.
func (s *twoSite) checkRegionLoss(t *testing.T, westWeb netip.Addr) {
	s.t = t
	w := s.podNamed("eu-west", "meridian-0")
	lost := time.Now()
	w.stopped = true
	// SIGKILL, as when a region goes: no graceful leave of the ring, the
	// others find out by their failure detection.
	w.proc.Kill()
	s.backends["eu-west"].Kill()
	var east []*tsPod
	for _, p := range s.pods() {
		if p.site == "east" {
			east = append(east, p)
		}
	}
	took, longest := s.inAnswers("eu-west's web leaves east's answers", westWeb.String(), false, lost, east)
	var nsGone time.Duration
	s.until("the delegation drops ns-eu-west", 3*time.Minute, func() error {
		ns, glue, _, err := s.delegation()
		if err != nil {
			return err
		}
		if slices.Contains(ns, "ns-eu-west.gslb.example.com.") || len(ns) != 1 {
			return fmt.Errorf("NS %v, glue %v", ns, glue)
		}
		nsGone = time.Since(lost)
		return nil
	})
	t.Logf("FIGURE two sites, losing a region: eu-west's pod and backend stopped → eu-west's endpoint out of east's answers %s (%s); ns-eu-west out of the parent's delegation (%s) %s",
		longest.Round(100*time.Millisecond), roundAllOf(took), s.parentName, nsGone.Round(100*time.Millisecond))
	rep, err := s.health(east[0])
	require.NoError(t, err)
	for _, e := range rep.Endpoints {
		if strings.HasPrefix(e.Target, westWeb.String()) {
			t.Logf("east's decision on eu-west's endpoint: %s, reason %s, voters %v", e.State, e.Reason, e.Voters)
		}
	}
}
