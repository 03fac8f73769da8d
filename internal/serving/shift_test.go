package serving

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/meridian-gslb/meridian/internal/admin"
)

type events []ShiftEvent

func (e *events) ShiftEvent(ev ShiftEvent) { *e = append(*e, ev) }

func servedWeights(p *Pipeline) map[string]int {
	out := map[string]int{}
	for _, s := range p.State().Served.Services {
		for _, e := range s.Endpoints {
			if e.Weight != nil {
				out[e.Address] = *e.Weight
			}
		}
	}
	return out
}

func TestShiftRunner(t *testing.T) {
	req := admin.Request{Kind: admin.KindShift, Service: "app.gslb.test", To: "west", Every: "3s", Reason: "move to west"}

	t.Run("a shift advances each interval and a target failure at 25% rolls back to 5%, counted and notified", func(t *testing.T) {
		m := NewMetrics(prometheus.NewRegistry())
		p := newPipeline(t, load(t, baseConfig), Options{Admin: memoryAdmin(t, "n1"), Metrics: m})
		var got events
		r := &ShiftRunner{Pipeline: p, Notify: &got}
		o, err := p.AddOverride(req, "alice")
		require.NoError(t, err)
		t0 := o.Shift.Progress.Since
		assert.Equal(t, map[string]int{"192.0.2.1": 990, "192.0.2.2": 10}, servedWeights(p))

		r.Step(context.Background(), t0.Add(time.Second))
		assert.Empty(t, got, "1% has not held 3s yet")
		r.Step(context.Background(), t0.Add(3*time.Second))
		r.Step(context.Background(), t0.Add(6*time.Second))
		require.Len(t, got, 2)
		assert.Equal(t, 25.0, testutil.ToFloat64(m.shift.percent.WithLabelValues("app.gslb.test", "west")))
		assert.Equal(t, map[string]int{"192.0.2.1": 750, "192.0.2.2": 250}, servedWeights(p))

		_, err = p.AddOverride(admin.Request{Kind: admin.KindForceDown, Service: "app.gslb.test", Endpoint: "192.0.2.2", Reason: "inject failure"}, "chaos")
		require.NoError(t, err)
		r.Step(context.Background(), t0.Add(7*time.Second))
		require.Len(t, got, 3)
		assert.Equal(t, "rollback", got[2].Action)
		assert.Equal(t, 25, got[2].From)
		assert.Equal(t, 5, got[2].Percent)
		assert.Contains(t, got[2].Reason, "192.0.2.2")
		assert.Equal(t, 1.0, testutil.ToFloat64(m.shift.rollbacks.WithLabelValues("app.gslb.test")))
		assert.Equal(t, 5.0, testutil.ToFloat64(m.shift.percent.WithLabelValues("app.gslb.test", "west")))
		r.Step(context.Background(), t0.Add(20*time.Second))
		assert.Len(t, got, 3, "a rolled-back shift stays paused")

		_, err = r.ResumeShift("app.gslb.test", "alice")
		require.NoError(t, err)
		assert.Equal(t, "resume", got[3].Action)
	})

	t.Run("a guard breach rolls back and guard errors hold until max failures", func(t *testing.T) {
		cfg := baseConfig + "shift: {prometheus_url: 'http://prom.test:9090'}\n"
		p := newPipeline(t, load(t, cfg), Options{Admin: memoryAdmin(t, "n1")})
		var vals []float64
		var qerr error
		r := &ShiftRunner{Pipeline: p, Query: func(context.Context, string, string, time.Duration, time.Time) ([]float64, error) { return vals, qerr }}
		g := req
		g.AbortIf, g.MaxFailures = "errors > 0", new(1)
		o, err := p.AddOverride(g, "alice")
		require.NoError(t, err)
		t0 := o.Shift.Progress.Since
		r.Step(context.Background(), t0.Add(3*time.Second))
		assert.Equal(t, 5, p.Overrides()[0].Shift.Percent(), "an empty result holds")
		qerr = errors.New("connection refused")
		assert.Empty(t, r.Step(context.Background(), t0.Add(6*time.Second)), "one error is tolerated")
		assert.Equal(t, 5, p.Overrides()[0].Shift.Percent())
		qerr, vals = nil, []float64{0.3}
		ev := r.Step(context.Background(), t0.Add(7*time.Second))
		require.Len(t, ev, 1)
		assert.Equal(t, "rollback", ev[0].Action)
		assert.Equal(t, 1, ev[0].Percent)
		assert.Contains(t, ev[0].Reason, "errors > 0")
	})

	t.Run("pausing a service without a shift says so", func(t *testing.T) {
		p := newPipeline(t, load(t, baseConfig), Options{Admin: memoryAdmin(t, "n1")})
		_, err := (&ShiftRunner{Pipeline: p}).PauseShift("app.gslb.test", "alice", "")
		require.ErrorIs(t, err, ErrNoShift)
	})
}
