package runner

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/meridian-gslb/meridian/internal/admin"
	"github.com/meridian-gslb/meridian/internal/serving"
	"github.com/meridian-gslb/meridian/internal/serving/servingtest"
	"github.com/meridian-gslb/meridian/internal/shift"
)

type events []shift.Event

func (e *events) ShiftEvent(ev shift.Event) { *e = append(*e, ev) }

func servedWeights(p *serving.Pipeline) map[string]int {
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
		p := newPipeline(t, load(t, baseConfig), serving.Options{Admin: memoryAdmin(t, "n1")})
		var got events
		r := &Runner{Pipeline: p, Metrics: m, Notify: &got}
		o, err := p.AddOverride(req, "alice")
		require.NoError(t, err)
		t0 := o.Shift.Progress.Since
		assert.Equal(t, map[string]int{"192.0.2.1": 990, "192.0.2.2": 10}, servedWeights(p))

		r.Step(context.Background(), t0.Add(time.Second))
		assert.Empty(t, got, "1% has not held 3s yet")
		r.Step(context.Background(), t0.Add(3*time.Second))
		r.Step(context.Background(), t0.Add(6*time.Second))
		require.Len(t, got, 2)
		assert.Equal(t, 25.0, testutil.ToFloat64(m.percent.WithLabelValues("app.gslb.test", "west")))
		assert.Equal(t, map[string]int{"192.0.2.1": 750, "192.0.2.2": 250}, servedWeights(p))

		_, err = p.AddOverride(admin.Request{Kind: admin.KindForceDown, Service: "app.gslb.test", Endpoint: "192.0.2.2", Reason: "inject failure"}, "chaos")
		require.NoError(t, err)
		r.Step(context.Background(), t0.Add(7*time.Second))
		require.Len(t, got, 3)
		assert.Equal(t, "rollback", got[2].Action)
		assert.Equal(t, 25, got[2].From)
		assert.Equal(t, 5, got[2].Percent)
		assert.Contains(t, got[2].Reason, "192.0.2.2")
		assert.Equal(t, 1.0, testutil.ToFloat64(m.rollbacks.WithLabelValues("app.gslb.test")))
		assert.Equal(t, 5.0, testutil.ToFloat64(m.percent.WithLabelValues("app.gslb.test", "west")))
		assert.Equal(t, map[string]int{"192.0.2.1": 950, "192.0.2.2": 50}, servedWeights(p), "the rollback is applied to the served weights")
		_, err = p.RemoveOverride(p.Overrides()[1].ID, "chaos") // the target back up: the answers show the rolled-back share
		require.NoError(t, err)
		shares := servingtest.Shares(t, p, "app.gslb.test.", 20000)
		assert.InDelta(t, 5, shares["192.0.2.2"], 1, "answers drawn through the engine give the target the rolled-back 5%%: %v", shares)
		r.Step(context.Background(), t0.Add(20*time.Second))
		assert.Len(t, got, 3, "a rolled-back shift stays paused")

		_, err = r.ResumeShift("app.gslb.test", "alice")
		require.NoError(t, err)
		assert.Equal(t, "resume", got[3].Action)
	})

	t.Run("a guard breach rolls back and guard errors hold until max failures", func(t *testing.T) {
		cfg := baseConfig + "shift: {prometheus_url: 'http://prom.test:9090'}\n"
		p := newPipeline(t, load(t, cfg), serving.Options{Admin: memoryAdmin(t, "n1")})
		var vals []float64
		var qerr error
		r := &Runner{Pipeline: p, Query: func(context.Context, string, string, time.Duration, time.Time) ([]float64, error) { return vals, qerr }}
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
		p := newPipeline(t, load(t, baseConfig), serving.Options{Admin: memoryAdmin(t, "n1")})
		_, err := (&Runner{Pipeline: p}).PauseShift("app.gslb.test", "alice", "")
		require.ErrorIs(t, err, ErrNoShift)
	})
}

// longCNAMEConfig is baseConfig with app a CNAME service: one endpoint in
// east and n long CNAME endpoints (about 240 bytes each) in west, all down.
func longCNAMEConfig(n int) string {
	var b strings.Builder
	b.WriteString("      - {cname: east.example.com., cluster: east}\n")
	for i := range n {
		fmt.Fprintf(&b, "      - {cname: ep%02d.%s.%s.%s.%s.example.com., cluster: west, state: down}\n", i,
			strings.Repeat("a", 60), strings.Repeat("b", 60), strings.Repeat("c", 60), strings.Repeat("d", 40))
	}
	eps := "      - {address: 192.0.2.1, cluster: east}\n      - {address: 192.0.2.2, cluster: west}\n"
	return strings.Replace(baseConfig, eps, b.String(), 1)
}

func TestShiftRunnerSaves(t *testing.T) {
	req := admin.Request{Kind: admin.KindShift, Service: "app.gslb.test", To: "west", Every: "3s", Reason: "move to west"}

	t.Run("a rollback of a target with 60 long CNAME endpoints down is saved, naming three of them", func(t *testing.T) {
		m := NewMetrics(prometheus.NewRegistry())
		p := newPipeline(t, load(t, longCNAMEConfig(60)), serving.Options{Admin: memoryAdmin(t, "n1")})
		var got events
		r := &Runner{Pipeline: p, Metrics: m, Notify: &got}
		o, err := p.AddOverride(req, "alice")
		require.NoError(t, err)
		r.Step(context.Background(), o.Shift.Progress.Since.Add(time.Second))
		require.Len(t, got, 1, "the rollback is decided and reported")
		assert.Equal(t, "rollback", got[0].Action)
		stored := p.Overrides()[0].Shift.Progress
		assert.True(t, stored.Paused, "the rollback is saved: the shift is paused")
		assert.Equal(t, 1, stored.Rollbacks)
		assert.Equal(t, -1, stored.Step)
		assert.Contains(t, stored.Reason, "60 of 60 endpoints down (ep00.")
		assert.Contains(t, stored.Reason, "and 57 more)")
		assert.NotContains(t, stored.Reason, "ep03.")
		assert.LessOrEqual(t, len(stored.Reason), shift.MaxReason)
		assert.Zero(t, testutil.ToFloat64(m.notSaved.WithLabelValues("error")))
	})

	t.Run("a decision on a progress that another node replaced while the guard ran is not saved and is counted as stale", func(t *testing.T) {
		cfg := baseConfig + "shift: {prometheus_url: 'http://prom.test:9090'}\n"
		m := NewMetrics(prometheus.NewRegistry())
		st := memoryAdmin(t, "n1")
		p := newPipeline(t, load(t, cfg), serving.Options{Admin: st})
		var got events
		g := req
		g.AbortIf = "errors > 0"
		o, err := p.AddOverride(g, "alice")
		require.NoError(t, err)
		t0 := o.Shift.Progress.Since
		var other shift.Progress
		r := &Runner{Pipeline: p, Metrics: m, Notify: &got, Query: func(context.Context, string, string, time.Duration, time.Time) ([]float64, error) {
			// Meanwhile another node's version arrives: it advanced to 5%.
			cur, err := st.Update(o.ID, func(cur admin.Override) (admin.Override, error) {
				sh := *cur.Shift
				sh.Progress.Safe, sh.Progress.Step, sh.Progress.Since = 0, 1, t0.Add(3*time.Second)
				cur.Shift = &sh
				return cur, nil
			})
			require.NoError(t, err)
			other = cur.Shift.Progress
			return []float64{1}, nil // a breach, seen on the 1% step
		}}
		assert.Empty(t, r.Step(context.Background(), t0.Add(4*time.Second)))
		assert.Empty(t, got, "no rollback is reported for a state the store no longer holds")
		assert.True(t, p.Overrides()[0].Shift.Progress.Equal(other), "the other node's version stands")
		assert.Equal(t, 1.0, testutil.ToFloat64(m.notSaved.WithLabelValues("stale")))
		assert.Zero(t, testutil.ToFloat64(m.rollbacks.WithLabelValues("app.gslb.test")))
	})

	t.Run("a pause reason longer than the API's 512 characters is refused naming the limit", func(t *testing.T) {
		p := newPipeline(t, load(t, baseConfig), serving.Options{Admin: memoryAdmin(t, "n1")})
		_, err := p.AddOverride(req, "alice")
		require.NoError(t, err)
		r := &Runner{Pipeline: p}
		_, err = r.PauseShift("app.gslb.test", "alice", strings.Repeat("x", 513))
		var fe admin.FieldError
		require.ErrorAs(t, err, &fe)
		assert.Equal(t, "reason", fe.Field)
		assert.Contains(t, fe.Msg, "512")
		assert.False(t, p.Overrides()[0].Shift.Progress.Paused)
		_, err = r.PauseShift("app.gslb.test", "alice", strings.Repeat("x", 512))
		require.NoError(t, err)
		assert.True(t, p.Overrides()[0].Shift.Progress.Paused)
	})
}
