package serving

import (
	"context"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/meridian-gslb/meridian/internal/admin"
)

func TestShiftRunnerStepsOnlyWhileActive(t *testing.T) {
	m := NewMetrics(prometheus.NewRegistry())
	p := newPipeline(t, load(t, baseConfig), Options{Admin: memoryAdmin(t, "n1"), Metrics: m})
	var got events
	writer := false
	r := &ShiftRunner{Pipeline: p, Notify: &got, Active: func() bool { return writer }}
	o, err := p.AddOverride(admin.Request{Kind: admin.KindShift, Service: "app.gslb.test", To: "west", Every: "3s", Reason: "move to west"}, "alice")
	require.NoError(t, err)
	t0 := o.Shift.Progress.Since

	r.Step(context.Background(), t0.Add(3*time.Second))
	assert.Empty(t, got, "a node that is not the writer does not step")
	assert.Equal(t, map[string]int{"192.0.2.1": 990, "192.0.2.2": 10}, servedWeights(p), "the share stays where the writer left it")
	assert.Equal(t, 1.0, testutil.ToFloat64(m.shift.percent.WithLabelValues("app.gslb.test", "west")), "the share gauge still follows the stored shift")

	writer = true
	r.Step(context.Background(), t0.Add(3*time.Second))
	require.Len(t, got, 1, "the writer steps")
	assert.Equal(t, "advance", got[0].Action)
	assert.Equal(t, 5.0, testutil.ToFloat64(m.shift.percent.WithLabelValues("app.gslb.test", "west")))
}
