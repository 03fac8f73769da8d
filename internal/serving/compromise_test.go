package serving

import (
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/meridian-gslb/meridian/internal/admin"
	"github.com/meridian-gslb/meridian/internal/api"
)

// pipelineControl is api.AdminControl over a pipeline, as internal/app's.
type pipelineControl struct{ p *Pipeline }

func (c pipelineControl) List() []admin.Override { return c.p.Overrides() }
func (c pipelineControl) Add(req admin.Request, who string) (admin.Override, error) {
	return c.p.AddOverride(req, who)
}
func (c pipelineControl) Remove(id, who string) (admin.Override, error) {
	return c.p.RemoveOverride(id, who)
}

const operatorToken = "alice-token-0123456789"

// ringNode is one node of a two-node ring in memory: its pipeline, its
// metrics and its HTTP API (the path of `meridian drain`).
type ringNode struct {
	name string
	p    *Pipeline
	m    *Metrics
	srv  *httptest.Server
}

// twoNodes starts two serve nodes with the admin capability whose admin
// states reach each other as the ring delivers them (each broadcast to
// the other node's OnShared).
func twoNodes(t *testing.T, w *ringWorld) (*ringNode, *ringNode) {
	t.Helper()
	mk := func(name string) *ringNode {
		n := &ringNode{name: name, m: NewMetrics(prometheus.NewRegistry())}
		n.p = newPipeline(t, load(t, baseConfig), Options{Admin: memoryAdmin(t, name), Relay: true, Metrics: n.m})
		n.p.SetRing(w.node(name, true))
		h := api.Handler(n.p.Store(), prometheus.NewRegistry(), func() error { return nil }, nil, slog.New(slog.DiscardHandler),
			api.Options{Admin: pipelineControl{n.p}, Tokens: api.NewTokens(map[string]string{"alice": operatorToken})})
		n.srv = httptest.NewServer(h)
		t.Cleanup(n.srv.Close)
		return n
	}
	a, b := mk("east-0"), mk("west-0")
	var queue []func()
	delivering := false
	deliver := func(to *ringNode) func([]byte) {
		return func(data []byte) {
			queue = append(queue, func() { to.p.OnShared(data) })
			if delivering {
				return
			}
			delivering = true
			for len(queue) > 0 {
				f := queue[0]
				queue = queue[1:]
				f()
			}
			delivering = false
		}
	}
	a.p.SetBroadcast(deliver(b))
	b.p.SetBroadcast(deliver(a))
	return a, b
}

// drain is `meridian drain` through the node's API.
func (n *ringNode) drain(t *testing.T, body string) (int, string) {
	t.Helper()
	req, err := http.NewRequest("POST", n.srv.URL+"/v1/admin/overrides", strings.NewReader(body))
	require.NoError(t, err)
	req.Header.Set("Authorization", "Bearer "+operatorToken)
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return resp.StatusCode, string(b)
}

// ringMessageSize is what the node's shared state takes in the signed
// envelope peers accept at most 1 MiB of (internal/ring sharedMsg).
func ringMessageSize(p *Pipeline, node string) int {
	payload, _ := json.Marshal(struct {
		At    int64  `json:"a"`
		State []byte `json:"s"`
	}{time.Now().UnixMilli(), p.SharedState()})
	return 3 + len(node) + 64 + len(payload)
}

// forged is n entries written in the name of stampNode with who, signed
// by signer's key (a valid signature only when signer == stampNode).
func forged(w *ringWorld, signer, stampNode, who string, n int, mut func(i int, o *admin.Override)) admin.State {
	st := admin.State{Entries: map[string]admin.Entry{}}
	r := w.node(signer, signer != "probe-x" && signer != "") // probe-x is the plain prober
	at := time.Now().Add(-time.Second)
	for i := range n {
		id := fmt.Sprintf("%s-%s-%s-%04d", signer, stampNode, strings.NewReplacer("@", "-", "-", "").Replace(who), i)
		o := admin.Override{ID: id, Kind: admin.KindForceDown, Service: "app.gslb.test.", Endpoint: "192.0.2.1", Who: who, Reason: "x", At: at.Add(time.Duration(i)), Forced: "min_healthy: forged"}
		if mut != nil {
			mut(i, &o)
		}
		e := admin.Entry{Override: o, Stamp: admin.Stamp{At: o.At.UnixNano(), Node: stampNode}}
		e.Sig = r.SignEntry(admin.SigInput(id, e))
		st.Entries[id] = e
	}
	return st
}

func rejected(m *Metrics, reason string) float64 {
	return testutil.ToFloat64(m.rejected.WithLabelValues("ring", reason))
}

func TestACompromisedProberCannotLockOperatorsOut(t *testing.T) {
	const drainEast = `{"kind":"drain","cluster":"east","reason":"maintenance"}`

	t.Run("4200 validly signed entries with forged who from a prober: drain works on every node, the state stays under 1 MiB, none of them is in force", func(t *testing.T) {
		w := newRingWorld()
		a, b := twoNodes(t, w)
		w.node("probe-x", false) // a listed prober without the admin capability
		attack := []admin.State{
			forged(w, "probe-x", "probe-x", "alice-oncall", 1050, nil),       // its own name, who not bound to any node
			forged(w, "probe-x", "probe-x", "alice@probe-x", 1050, nil),      // its own name: no capability
			forged(w, "probe-x", "east-0", "alice@east-0", 1050, nil),        // an operator node's name, not its signature
			forged(w, "probe-x", "west-0", "alice-oncall@west-0", 1050, nil), // the same
		}
		all := admin.State{Entries: map[string]admin.Entry{}}
		for _, st := range attack {
			for id, e := range st.Entries {
				all.Entries[id] = e
			}
		}
		require.Equal(t, 4200, len(all.Entries))
		data := all.Marshal()
		for _, n := range []*ringNode{a, b} {
			start := time.Now()
			n.p.OnShared(data) // as if an operator node relayed it: the worst case past the ring's own check
			t.Logf("FIGURE %s: a %d-byte state of 4200 forged entries refused in %s", n.name, len(data), time.Since(start).Round(time.Millisecond))
			n.p.OnShared(data) // twice, as two merged states did
		}
		for _, n := range []*ringNode{a, b} {
			assert.Equal(t, 0, len(n.p.Overrides()), "%s: no override of the prober is in force", n.name)
			total := rejected(n.m, admin.RejectOrigin) + rejected(n.m, admin.RejectCapability) + rejected(n.m, admin.RejectSignature)
			assert.Equal(t, 2*4200.0, total, "%s: every entry is refused and counted", n.name)
			assert.Equal(t, 2*1050.0, rejected(n.m, admin.RejectCapability), n.name)
		}
		code, body := a.drain(t, drainEast)
		require.Equal(t, http.StatusCreated, code, body)
		for _, n := range []*ringNode{a, b} {
			ovs := n.p.Overrides()
			require.Len(t, ovs, 1, "%s: the operator's drain is in force on every node", n.name)
			assert.Equal(t, "alice@east-0", ovs[0].Who)
			assert.Equal(t, map[string]bool{"192.0.2.2": true}, answers(t, n.p, "app.gslb.test."), n.name)
			assert.Less(t, ringMessageSize(n.p, n.name), 1<<20, "%s: the shared state fits what peers accept", n.name)
			t.Logf("FIGURE %s: ring message %d bytes after the attack and the drain", n.name, ringMessageSize(n.p, n.name))
		}
		code, body = b.drain(t, `{"kind":"drain","cluster":"west","reason":"maintenance","force":true}`)
		require.Equal(t, http.StatusCreated, code, "and from the other node: %s", body)
	})

	t.Run("4200 valid entries from a compromised operator node: its share is capped, drain works on every node, the state stays under 1 MiB", func(t *testing.T) {
		w := newRingWorld()
		a, b := twoNodes(t, w)
		flood := forged(w, "rogue-0", "rogue-0", "mallory@rogue-0", 4200, func(i int, o *admin.Override) {
			o.Kind, o.Forced = admin.KindForceUp, ""
			o.Reason = strings.Repeat("r", admin.MaxReason)
		})
		for _, n := range []*ringNode{a, b} {
			start := time.Now()
			n.p.OnShared(flood.Marshal())
			t.Logf("FIGURE %s: 4200 valid entries of one writer merged within its cap in %s: %d kept, %.0f refused, ring message %d bytes",
				n.name, time.Since(start).Round(time.Millisecond), len(n.p.Overrides()), rejected(n.m, admin.RejectCapOrigin), ringMessageSize(n.p, n.name))
			assert.Positive(t, rejected(n.m, admin.RejectCapOrigin), n.name)
			assert.Less(t, ringMessageSize(n.p, n.name), 1<<20, n.name)
		}
		code, body := a.drain(t, drainEast)
		require.Equal(t, http.StatusCreated, code, body)
		code, body = b.drain(t, `{"kind":"drain","service":"app.gslb.test","endpoint":"192.0.2.1","reason":"maintenance","force":true}`)
		require.Equal(t, http.StatusCreated, code, body)
		for _, n := range []*ringNode{a, b} {
			var mine int
			for _, o := range n.p.Overrides() {
				if strings.HasPrefix(o.Who, "alice@") {
					mine++
				}
			}
			assert.Equal(t, 2, mine, "%s: both operators' drains are in force", n.name)
			assert.Less(t, ringMessageSize(n.p, n.name), 1<<20, n.name)
		}
	})

	t.Run("a ring force-down of every endpoint is refused by the min_healthy guard and counted", func(t *testing.T) {
		w := newRingWorld()
		a, _ := twoNodes(t, w)
		st := admin.State{Entries: map[string]admin.Entry{}}
		for _, ep := range []string{"192.0.2.1", "192.0.2.2"} {
			s := forged(w, "west-0", "west-0", "alice@west-0", 1, func(_ int, o *admin.Override) { o.Endpoint, o.Forced = ep, "" })
			for id, e := range s.Entries {
				st.Entries[id+ep] = e
				e.Override.ID = id + ep
				e.Sig = w.node("west-0", true).SignEntry(admin.SigInput(id+ep, e))
				st.Entries[id+ep] = e
				delete(st.Entries, id)
			}
		}
		a.p.OnShared(st.Marshal())
		assert.Empty(t, a.p.Overrides())
		assert.Equal(t, 2.0, rejected(a.m, admin.RejectMinHealthy))
		assert.Equal(t, map[string]bool{"192.0.2.1": true, "192.0.2.2": true}, answers(t, a.p, "app.gslb.test."))
	})

	t.Run("a node without the capability refuses the change naming it", func(t *testing.T) {
		w := newRingWorld()
		a, _ := twoNodes(t, w)
		w.node("east-0", false)
		code, body := a.drain(t, drainEast)
		assert.Equal(t, http.StatusForbidden, code)
		assert.Contains(t, body, "no admin capability")
		assert.Empty(t, a.p.Overrides())
	})
}
