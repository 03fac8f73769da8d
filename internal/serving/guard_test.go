package serving

import (
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/meridian-gslb/meridian/internal/admin"
	"github.com/meridian-gslb/meridian/internal/model"
)

func TestPipelineMinHealthy(t *testing.T) {
	drain := func(ep string) admin.Request {
		return admin.Request{Kind: admin.KindDrain, Service: "app.gslb.test", Endpoint: ep, Reason: "maintenance"}
	}
	t.Run("draining the last answerable endpoint is refused naming the rule and counted; nothing is stored", func(t *testing.T) {
		m := NewMetrics(prometheus.NewRegistry())
		p := newPipeline(t, load(t, baseConfig), Options{Admin: memoryAdmin(t, "n1"), Metrics: m})
		_, err := p.AddOverride(drain("192.0.2.2"), "alice")
		require.NoError(t, err, "one endpoint remains: min_healthy 1 holds")
		_, err = p.AddOverride(drain("192.0.2.1"), "alice")
		require.ErrorIs(t, err, admin.ErrBelowMinHealthy)
		assert.Contains(t, err.Error(), "service app.gslb.test would keep 0 healthy endpoint(s), below min_healthy 1 (now 1)")
		assert.Len(t, p.Overrides(), 1)
		assert.Equal(t, map[string]bool{"192.0.2.1": true}, answers(t, p, "app.gslb.test."))
		assert.Equal(t, 1.0, testutil.ToFloat64(m.guard.WithLabelValues("refused")))
	})

	t.Run("with force the change is made and the override records what was forced", func(t *testing.T) {
		m := NewMetrics(prometheus.NewRegistry())
		p := newPipeline(t, load(t, baseConfig), Options{Admin: memoryAdmin(t, "n1"), Metrics: m})
		_, err := p.AddOverride(admin.Request{Kind: admin.KindForceDown, Cluster: "west", Reason: "move"}, "alice")
		require.NoError(t, err)
		req := admin.Request{Kind: admin.KindDrain, Cluster: "east", Reason: "rebuild", Force: true}
		o, err := p.AddOverride(req, "alice")
		require.NoError(t, err)
		assert.Equal(t, "min_healthy: service app.gslb.test would keep 0 healthy endpoint(s), below min_healthy 1 (now 1), set by the default", o.Forced)
		assert.Contains(t, p.Overrides()[1].Describe(), "[forced past min_healthy")
		assert.Equal(t, 1.0, testutil.ToFloat64(m.guard.WithLabelValues("forced")))
	})

	t.Run("force on a change the rule allows records nothing", func(t *testing.T) {
		p := newPipeline(t, load(t, baseConfig), Options{Admin: memoryAdmin(t, "n1")})
		req := drain("192.0.2.2")
		req.Force = true
		o, err := p.AddOverride(req, "alice")
		require.NoError(t, err)
		assert.Empty(t, o.Forced)
	})

	t.Run("a service's own min_healthy wins over decision.min_healthy", func(t *testing.T) {
		cfg := strings.Replace(baseConfig, "  - name: app.gslb.test\n", "  - name: app.gslb.test\n    min_healthy: 2\n", 1) + "decision: {min_healthy: 0}\n"
		p := newPipeline(t, load(t, cfg), Options{Admin: memoryAdmin(t, "n1")})
		_, err := p.AddOverride(drain("192.0.2.2"), "alice")
		require.ErrorContains(t, err, "would keep 1 healthy endpoint(s), below min_healthy 2 (now 2)")
	})

	t.Run("a refusal names where the service's min_healthy comes from", func(t *testing.T) {
		for _, c := range []struct{ cfg, from string }{
			{baseConfig, "set by the default"},
			{baseConfig + "decision: {min_healthy: 2}\n", "set by decision.min_healthy in the config"},
			{strings.Replace(baseConfig, "  - name: app.gslb.test\n", "  - name: app.gslb.test\n    min_healthy: 2\n", 1), "set by services[].min_healthy in the config"},
		} {
			p := newPipeline(t, load(t, c.cfg), Options{Admin: memoryAdmin(t, "n1")})
			_, err := p.AddOverride(admin.Request{Kind: admin.KindDrain, Cluster: "east", Reason: "r"}, "alice")
			if err == nil {
				_, err = p.AddOverride(admin.Request{Kind: admin.KindDrain, Cluster: "west", Reason: "r"}, "alice")
			}
			require.ErrorIs(t, err, admin.ErrBelowMinHealthy)
			assert.Contains(t, err.Error(), "service app.gslb.test would keep")
			assert.Contains(t, err.Error(), c.from)
		}
	})

	t.Run("a min_healthy above the service's endpoint count counts as all of them and the refusal says it was clamped", func(t *testing.T) {
		cfg := strings.Replace(baseConfig, "  - name: app.gslb.test\n", "  - name: app.gslb.test\n    min_healthy: 1000\n", 1)
		p := newPipeline(t, load(t, cfg), Options{Admin: memoryAdmin(t, "n1")})
		_, err := p.AddOverride(drain("192.0.2.2"), "alice")
		require.ErrorIs(t, err, admin.ErrBelowMinHealthy)
		assert.Contains(t, err.Error(), "would keep 1 healthy endpoint(s), below min_healthy 2 (now 2), set by services[].min_healthy in the config = 1000, clamped to the service's 2 endpoint(s)")
	})

	t.Run("a Kubernetes service's annotation is named with its object and namespace", func(t *testing.T) {
		n := 1000
		web := model.Service{Name: "web.gslb.test", MinHealthy: &n,
			MinHealthyFrom: "annotation meridian.io/min-healthy on service team-a/web in cluster east",
			Endpoints:      []model.Endpoint{{Address: "192.0.2.11", Cluster: "east"}, {Address: "192.0.2.12", Cluster: "west"}}}
		p := newPipeline(t, load(t, baseConfig), Options{Admin: memoryAdmin(t, "n1"), Kube: &fakeKube{add: []model.Service{web}}})
		_, err := p.AddOverride(admin.Request{Kind: admin.KindDrain, Cluster: "west", Reason: "r"}, "alice")
		require.ErrorIs(t, err, admin.ErrBelowMinHealthy)
		assert.Contains(t, err.Error(), "service web.gslb.test would keep 1 healthy endpoint(s), below min_healthy 2 (now 2), set by annotation meridian.io/min-healthy on service team-a/web in cluster east = 1000, clamped to the service's 2 endpoint(s)")
		assert.NotContains(t, err.Error(), "service app.gslb.test", "app keeps its one east endpoint: min_healthy 1 holds")
	})

	t.Run("decision.min_healthy 0 turns the guard off", func(t *testing.T) {
		p := newPipeline(t, load(t, baseConfig+"decision: {min_healthy: 0}\n"), Options{Admin: memoryAdmin(t, "n1")})
		_, err := p.AddOverride(admin.Request{Kind: admin.KindDrain, Cluster: "east", Reason: "r"}, "alice")
		require.NoError(t, err)
		_, err = p.AddOverride(admin.Request{Kind: admin.KindDrain, Cluster: "west", Reason: "r"}, "alice")
		require.NoError(t, err)
	})

	t.Run("weights and force-ups are not guarded", func(t *testing.T) {
		p := newPipeline(t, load(t, strings.Replace(baseConfig, "      - {address: 192.0.2.2, cluster: west}\n", "", 1)), Options{Admin: memoryAdmin(t, "n1")})
		w := 0
		_, err := p.AddOverride(admin.Request{Kind: admin.KindWeight, Service: "app.gslb.test", Endpoint: "192.0.2.1", Weight: &w, Reason: "r"}, "alice")
		require.NoError(t, err)
	})
}
