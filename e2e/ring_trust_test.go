//go:build e2e

package e2e

import (
	"crypto/rand"
	"encoding/json"
	"fmt"
	"io"
	"log"
	"math"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/memberlist"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/meridian-gslb/meridian/internal/api"
	"github.com/meridian-gslb/meridian/internal/ring"
)

const trustConfig = `
server:
  dns: {rrl: {responses_per_second: 1000000}}
  admin: {token_file: "%[1]s", state_file: "%[2]s"}
zones:
  - apex: gslb.example.com
    nameservers: [{name: ns1.gslb.example.com, ipv4: [127.0.0.1]}]
health: {interval: 1s, timeout: 500ms, fall: 2, rise: 2}
decision: {hold_down: 2s}
ring: {enabled: true, node_name: %[3]s, region: %[4]s, bind: "127.0.0.1:%[5]d", seeds: ["127.0.0.1:%[6]d"], %[7]s}
clusters:
  - {name: east, region: r1}
  - {name: west, region: r2}
services:
  - name: app.gslb.example.com
    health_check: {kind: http, port: %[8]d, path: /}
    endpoints:
      - {address: 127.0.0.131, cluster: east, weight: 700}
      - {address: 127.0.0.132, cluster: west, weight: 300}
`

// attacker is a plain memberlist node (what the reproduction used):
// it joins the ring and delivers bytes of its choosing to every node.
type attacker struct {
	ml *memberlist.Memberlist
}

func newAttacker(t *testing.T, seed string) *attacker {
	c := memberlist.DefaultLANConfig()
	c.Name = "mallory"
	c.BindAddr, c.BindPort = "127.0.0.1", freePort(t)
	c.AdvertiseAddr, c.AdvertisePort = c.BindAddr, c.BindPort
	c.Logger = log.New(io.Discard, "", 0)
	ml, err := memberlist.Create(c)
	require.NoError(t, err)
	t.Cleanup(func() { _ = ml.Shutdown() })
	_, err = ml.Join([]string{seed})
	require.NoError(t, err)
	return &attacker{ml: ml}
}

// send delivers msg to every other member.
func (a *attacker) send(t *testing.T, msg []byte) {
	for _, n := range a.ml.Members() {
		if n.Name != "mallory" {
			require.NoError(t, a.ml.SendReliable(n, msg))
		}
	}
}

// envelope builds a ring message by hand from its documented layout
// (internal/ring/envelope.go), signed by id, or with garbage when id is nil.
func envelope(typ byte, origin string, id *ring.Identity, payload any) []byte {
	p, _ := json.Marshal(payload)
	var sig []byte
	if id != nil {
		in := append([]byte("meridian-ring-v1\x00"), typ)
		in = append(append(append(in, origin...), 0), p...)
		sig = id.Sign(in)
	} else {
		sig = make([]byte, 64)
		_, _ = rand.Read(sig)
	}
	b := append([]byte{typ, 1, byte(len(origin))}, origin...)
	return append(append(b, sig...), p...)
}

var rejectedRe = regexp.MustCompile(`meridian_ring_messages_rejected_total\{reason="([^"]+)",type="([^"]+)"\} (\S+)`)

func rejections(t *testing.T, m *instance) map[string]float64 {
	out := map[string]float64{}
	for _, sm := range rejectedRe.FindAllStringSubmatch(m.metrics(t), -1) {
		v, _ := strconv.ParseFloat(sm[3], 64)
		out[sm[2]+"/"+sm[1]] = v
	}
	return out
}

func nodeHealth(t *testing.T, m *instance) api.HealthReport {
	resp, err := http.Get(m.http + "/v1/health")
	require.NoError(t, err)
	defer resp.Body.Close()
	var rep api.HealthReport
	require.NoError(t, decodeJSON(resp, &rep))
	return rep
}

// TestForgedGossipChangesNothing replays the attacks on a running
// two-node ring: a plain memberlist client sends forged votes (in a node's
// own name too), forged and invalid admin state, messages of a listed
// agent and of a compromised listed prober beyond what they may say. Both
// nodes stay up and answering with unchanged shares and decisions, nothing
// lands in the state files, and each rejection is counted by its reason.
func TestForgedGossipChangesNothing(t *testing.T) {
	dir := t.TempDir()
	tokens := filepath.Join(dir, "tokens")
	require.NoError(t, os.WriteFile(tokens, []byte("alice "+adminToken+"\n"), 0o600))
	port := freePort(t)
	for _, a := range []string{"127.0.0.131", "127.0.0.132"} {
		startBackend(t, fmt.Sprintf("%s:%d", a, port))
	}
	tr := newTestRing(t, dir, "n1@r1", "n2@r2", "evil@r1", "agent-x>east")
	evil, err := ring.LoadIdentity(tr.files["evil"])
	require.NoError(t, err)
	agent, err := ring.LoadIdentity(tr.files["agent-x"])
	require.NoError(t, err)
	g1, g2 := freePort(t), freePort(t)
	state1, state2 := filepath.Join(dir, "n1.json"), filepath.Join(dir, "n2.json")
	m1 := startMeridian(t, fmt.Sprintf(trustConfig, tokens, state1, "n1", "r1", g1, g2, tr.Ring("n1"), port))
	m2 := startMeridian(t, fmt.Sprintf(trustConfig, tokens, state2, "n2", "r2", g2, g1, tr.Ring("n2"), port))
	share := func(m *instance) float64 {
		s, err := quickShare(m, "app.gslb.example.com.", "127.0.0.131", 400)
		require.NoError(t, err)
		return s
	}
	settled := func(m *instance) bool {
		rep := nodeHealth(t, m)
		if len(rep.Probers) != 2 {
			return false
		}
		for _, e := range rep.Endpoints {
			if e.State != "up" || len(e.Votes) != 2 {
				return false
			}
		}
		return true
	}
	require.Eventually(t, func() bool { return settled(m1) && settled(m2) }, 20*time.Second, 200*time.Millisecond, "both nodes decided from both nodes' votes")
	before1, before2 := nodeHealth(t, m1), nodeHealth(t, m2)
	share1, share2 := share(m1), share(m2)
	t.Logf("before: 127.0.0.131 (weight 700) gets %.0f%% on n1, %.0f%% on n2", share1, share2)

	a := newAttacker(t, fmt.Sprintf("127.0.0.1:%d", g1))
	now := time.Now()
	down := func(prober, region string, seq uint64) map[string]any {
		return map[string]any{"s": "app.gslb.example.com.", "t": "127.0.0.131", "p": prober, "r": region, "d": true, "a": now.UnixMilli(), "q": seq}
	}
	weightless := `{"entries":{"x1":{"o":{"id":"x1","kind":"weight","service":"app.gslb.example.com.","endpoint":"127.0.0.131","who":"eve","reason":"x","at":"` + now.UTC().Format(time.RFC3339) + `"},"s":{"t":` + strconv.FormatInt(now.UnixNano(), 10) + `,"n":"evil"}},` +
		`"x2":{"o":{"id":"x2","kind":"drain","cluster":"east","who":"eve","reason":"x","at":"` + now.UTC().Format(time.RFC3339) + `"},"s":{"t":` + strconv.FormatInt(math.MaxInt64, 10) + `,"n":"evil"}}}}`
	seq := uint64(now.UnixNano())
	shared := map[string]any{"a": now.UnixMilli(), "s": []byte(weightless)} // an admin-state snapshot, stamped
	attacks := []struct {
		what string
		msg  []byte
		want string // type/reason counted
	}{
		{"a vote in n1's own name, not signed by n1", envelope(1, "n1", nil, down("n1", "r1", seq)), "vote/bad-signature"},
		{"a vote from a node not in ring.peers", envelope(1, "mallory", nil, down("mallory", "r1", seq)), "vote/unknown-origin"},
		{"admin state in n1's name, not signed by n1", envelope(7, "n1", nil, shared), "shared/bad-signature"},
		{"admin state from the listed agent", envelope(7, "agent-x", &agent, shared), "shared/role"},
		{"a vote from the listed agent", envelope(1, "agent-x", &agent, down("agent-x", "r1", seq)), "vote/role"},
		{"the agent's heartbeat for another cluster", envelope(4, "agent-x", &agent, map[string]any{"c": "west", "f": "agent-x", "a": now.UnixMilli(), "q": seq}), "heartbeat/cluster"},
		{"the agent's heartbeat from the future", envelope(4, "agent-x", &agent, map[string]any{"c": "east", "f": "agent-x", "a": now.Add(time.Hour).UnixMilli(), "q": seq}), "heartbeat/future"},
		{"a compromised prober's vote with sequence MaxUint64", envelope(1, "evil", &evil, down("evil", "r1", math.MaxUint64)), "vote/future"},
		{"a compromised prober's vote in n2's name", envelope(1, "evil", &evil, down("n2", "r2", seq)), "vote/impersonation"},
		{"a compromised prober's vote for another region", envelope(1, "evil", &evil, down("evil", "r2", seq)), "vote/region"},
		{"a compromised prober's admin state from ten minutes ago (a replay)", envelope(7, "evil", &evil, map[string]any{"a": now.Add(-10 * time.Minute).UnixMilli(), "s": []byte(weightless)}), "shared/stale"},
		{"bytes that are no envelope", []byte{1, 2, 3}, "vote/malformed"},
		{"a 64 KiB message", envelope(1, "evil", &evil, strings.Repeat("x", 64<<10)), "vote/oversized"},
	}
	for _, at := range attacks {
		a.send(t, at.msg)
	}
	// The compromised prober's signed admin state is taken apart entry by
	// entry: the weight without a value and the MaxInt64 stamp are skipped.
	a.send(t, envelope(7, "evil", &evil, shared))

	for _, m := range []*instance{m1, m2} {
		require.Eventually(t, func() bool {
			got := rejections(t, m)
			for _, at := range attacks {
				if got[at.want] < 1 {
					return false
				}
			}
			return true
		}, 10*time.Second, 100*time.Millisecond, "every attack counted on %s: %v", m.http, rejections(t, m))
		met := m.metrics(t)
		assert.Contains(t, met, `meridian_admin_entries_rejected_total{reason="invalid",source="ring"} 1`)
		assert.Contains(t, met, `meridian_admin_entries_rejected_total{reason="future",source="ring"} 1`)
	}
	got := rejections(t, m1)
	for _, at := range attacks {
		t.Logf("n1 rejected %-55s as %s (%v)", at.what, at.want, got[at.want])
	}
	time.Sleep(3 * time.Second) // a few decision rounds
	for i, m := range []*instance{m1, m2} {
		select {
		case <-m.exited:
			t.Fatalf("node %d exited:\n%s", i+1, m.log())
		default:
		}
		after := nodeHealth(t, m)
		before := []api.HealthReport{before1, before2}[i]
		assert.Equal(t, len(before.Changes), len(after.Changes), "no decision changed on node %d", i+1)
		for _, e := range after.Endpoints {
			assert.Equal(t, "up", e.State, "%s on node %d", e.Target, i+1)
		}
		assert.Len(t, after.Probers, 2, "the attacker counts for nothing on node %d", i+1)
		var untrusted []string
		for _, u := range after.Untrusted {
			untrusted = append(untrusted, u.Name)
		}
		assert.Contains(t, untrusted, "mallory", "and is shown as untrusted on node %d", i+1)
		assert.NotEmpty(t, after.PublicKey)
		resp, err := http.Get(m.http + "/v1/admin/overrides")
		require.NoError(t, err)
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		assert.NotContains(t, string(body), "eve", "no forged override is in force on node %d", i+1)
	}
	after1, after2 := share(m1), share(m2)
	t.Logf("FIGURE forged gossip: %d kinds of attack rejected on both nodes; 127.0.0.131 (weight 700) before %.0f%%/%.0f%%, after %.0f%%/%.0f%%; 0 decision changes", len(attacks)+1, share1, share2, after1, after2)
	assert.InDelta(t, 70, after1, 12)
	assert.InDelta(t, 70, after2, 12)
	for _, p := range []string{state1, state2} {
		b, err := os.ReadFile(p)
		if err == nil {
			assert.NotContains(t, string(b), "eve", "nothing forged was saved in %s", p)
		}
	}
}
