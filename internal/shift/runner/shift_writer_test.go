package runner

import (
	"context"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/meridian-gslb/meridian/internal/admin"
	"github.com/meridian-gslb/meridian/internal/serving"
)

func TestShiftRunnerStepsOnlyWhileActive(t *testing.T) {
	m := NewMetrics(prometheus.NewRegistry())
	p := newPipeline(t, load(t, baseConfig), serving.Options{Admin: memoryAdmin(t, "n1")})
	var got events
	writer := false
	r := &Runner{Pipeline: p, Metrics: m, Notify: &got, Active: func() bool { return writer }}
	o, err := p.AddOverride(admin.Request{Kind: admin.KindShift, Service: "app.gslb.test", To: "west", Every: "3s", Reason: "move to west"}, "alice")
	require.NoError(t, err)
	t0 := o.Shift.Progress.Since

	r.Step(context.Background(), t0.Add(3*time.Second))
	assert.Empty(t, got, "a node that is not the writer does not step")
	assert.Equal(t, map[string]int{"192.0.2.1": 990, "192.0.2.2": 10}, servedWeights(p), "the share stays where the writer left it")
	assert.Equal(t, 1.0, testutil.ToFloat64(m.percent.WithLabelValues("app.gslb.test", "west")), "the share gauge still follows the stored shift")

	writer = true
	r.Step(context.Background(), t0.Add(3*time.Second))
	require.Len(t, got, 1, "the writer steps")
	assert.Equal(t, "advance", got[0].Action)
	assert.Equal(t, 5.0, testutil.ToFloat64(m.percent.WithLabelValues("app.gslb.test", "west")))
}

func TestShiftRunnerPutsOtherNodesStepsOnTheTimeline(t *testing.T) {
	m := NewMetrics(prometheus.NewRegistry())
	p := newPipeline(t, load(t, baseConfig), serving.Options{Admin: memoryAdmin(t, "n2")})
	var got events
	r := &Runner{Pipeline: p, Metrics: m, Notify: &got, Active: func() bool { return false }}
	o, err := p.AddOverride(admin.Request{Kind: admin.KindShift, Service: "app.gslb.test", To: "west", Every: "3s", Reason: "move to west"}, "alice")
	require.NoError(t, err)
	t0 := o.Shift.Progress.Since
	r.Step(context.Background(), t0.Add(time.Second))
	require.Empty(t, got, "the first tick only learns where the shift stands")

	// The writer's rollback arrives as the override's new version.
	_, err = p.Admin().Update(o.ID, func(cur admin.Override) (admin.Override, error) {
		sh := *cur.Shift
		sh.Progress.Step, sh.Progress.Paused, sh.Progress.Rollbacks, sh.Progress.Since = -1, true, 1, t0.Add(2*time.Second)
		sh.Progress.Reason = "rolled back from 1% to 0%: target west unhealthy"
		cur.Shift = &sh
		return cur, nil
	})
	require.NoError(t, err)
	r.Step(context.Background(), t0.Add(3*time.Second))
	require.Len(t, got, 1, "the step another node took is on this node's timeline")
	ev := got[0]
	assert.True(t, ev.Observed)
	assert.Equal(t, "rollback", ev.Action)
	assert.Equal(t, 1, ev.From)
	assert.Equal(t, 0, ev.Percent)
	assert.Equal(t, t0.Add(2*time.Second), ev.At, "at the time the writer took it")
	assert.Contains(t, ev.Reason, "target west unhealthy")
	assert.Zero(t, testutil.ToFloat64(m.rollbacks.WithLabelValues("app.gslb.test")), "counted by the node that took it, not here")

	r.Step(context.Background(), t0.Add(4*time.Second))
	assert.Len(t, got, 1, "a step is put on the timeline once")

	_, err = r.ResumeShift("app.gslb.test", "bob")
	require.NoError(t, err)
	r.Step(context.Background(), t0.Add(5*time.Second))
	require.Len(t, got, 2, "a resume asked of this node is its own event, not observed again")
	assert.False(t, got[1].Observed)
	assert.Equal(t, "resume", got[1].Action)
}
