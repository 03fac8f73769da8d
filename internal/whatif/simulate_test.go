package whatif

import (
	"context"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/meridian-gslb/meridian/internal/admin"
	"github.com/meridian-gslb/meridian/internal/report"
	"github.com/meridian-gslb/meridian/internal/serving"
	"github.com/meridian-gslb/meridian/internal/serving/servingtest"
)

func TestSimulateBounds(t *testing.T) {
	ctx := context.Background()
	failEast := []Change{{Kind: Fail, Spec: "cluster=east"}}
	count := func(m *prometheus.CounterVec, result string) float64 {
		return testutil.ToFloat64(m.WithLabelValues(result))
	}

	t.Run("the same question asked again is answered from the last report without compiling", func(t *testing.T) {
		m := NewMetrics(prometheus.NewRegistry())
		pipe := newPipeline(t, memoryAdmin(t, "n1"))
		p := &Simulator{Source: pipe, Metrics: m}
		first, err := p.Simulate(ctx, []Change{{Kind: Weight, Spec: "app.gslb.test/192.0.2.2=0"}, {Kind: Fail, Spec: "cluster=east"}})
		require.NoError(t, err)
		again, err := p.Simulate(ctx, []Change{{Kind: Fail, Spec: " cluster=east"}, {Kind: Weight, Spec: "app.gslb.test/192.0.2.2=0"}})
		require.NoError(t, err)
		assert.Equal(t, first, again)
		assert.Equal(t, []string{"--fail cluster=east", "--weight app.gslb.test/192.0.2.2=0"}, again.Changes, "changes sorted by kind, then spec")
		assert.Equal(t, 1.0, count(m, "computed"))
		assert.Equal(t, 1.0, count(m, "cached"), "the same changes in another order are the same question")
	})

	t.Run("a new snapshot or another question is compiled again", func(t *testing.T) {
		m := NewMetrics(prometheus.NewRegistry())
		pipe := newPipeline(t, memoryAdmin(t, "n1"))
		p := &Simulator{Source: pipe, Metrics: m}
		before, err := p.Simulate(ctx, failEast)
		require.NoError(t, err)
		require.Len(t, before.Services, 1)
		_, err = p.Simulate(ctx, []Change{{Kind: Drain, Spec: "cluster=west"}})
		require.NoError(t, err)
		assert.Equal(t, 2.0, count(m, "computed"), "another question")
		_, err = pipe.AddOverride(admin.Request{Kind: admin.KindForceDown, Cluster: "east", Reason: "down for real", Force: true}, "alice")
		require.NoError(t, err)
		after, err := p.Simulate(ctx, failEast)
		require.NoError(t, err)
		assert.Equal(t, 3.0, count(m, "computed"), "the snapshot changed: compiled again")
		assert.Empty(t, after.Services, "east is already down: failing it changes nothing now")
		assert.Zero(t, count(m, "cached"))
	})

	t.Run("a simulation while another runs is refused as busy and a cached answer is still given", func(t *testing.T) {
		m := NewMetrics(prometheus.NewRegistry())
		p := &Simulator{Source: newPipeline(t, nil), Metrics: m}
		want, err := p.Simulate(ctx, failEast)
		require.NoError(t, err)
		p.run.Lock() // another simulation is compiling
		_, err = p.Simulate(ctx, []Change{{Kind: Drain, Spec: "cluster=west"}})
		assert.ErrorIs(t, err, report.ErrSimulationBusy)
		got, err := p.Simulate(ctx, failEast)
		p.run.Unlock()
		require.NoError(t, err)
		assert.Equal(t, want, got)
		assert.Equal(t, 1.0, count(m, "busy"))
		_, err = p.Simulate(ctx, []Change{{Kind: Drain, Spec: "cluster=west"}})
		require.NoError(t, err, "once the other is done the next one runs")
	})

	t.Run("an invalid change is refused before the limit, even while another simulation runs", func(t *testing.T) {
		m := NewMetrics(prometheus.NewRegistry())
		p := &Simulator{Source: newPipeline(t, nil), Metrics: m}
		p.run.Lock()
		defer p.run.Unlock()
		_, err := p.Simulate(ctx, []Change{{Kind: Fail, Spec: "cluster=mars"}})
		var fe admin.FieldError
		require.ErrorAs(t, err, &fe)
		assert.Equal(t, 1.0, count(m, "invalid"))
	})

	t.Run("a simulation whose client went away stops and keeps nothing", func(t *testing.T) {
		m := NewMetrics(prometheus.NewRegistry())
		p := &Simulator{Source: newPipeline(t, nil), Metrics: m}
		gone, cancel := context.WithCancel(ctx)
		cancel()
		_, err := p.Simulate(gone, failEast)
		require.ErrorIs(t, err, context.Canceled)
		assert.Equal(t, 1.0, count(m, "canceled"))
		_, err = p.Simulate(ctx, failEast)
		require.NoError(t, err)
		assert.Equal(t, 1.0, count(m, "computed"), "the canceled one was not cached")
	})
}

// newPipeline serves servingtest.BaseConfig, with the overrides of adm
// (nil: none).
func newPipeline(t *testing.T, adm *admin.Store) *serving.Pipeline {
	t.Helper()
	return servingtest.New(t, servingtest.Load(t, servingtest.BaseConfig), serving.Options{Admin: adm})
}

var memoryAdmin = servingtest.MemoryAdmin
