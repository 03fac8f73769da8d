package promreg

import (
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestReuse(t *testing.T) {
	reg := prometheus.NewRegistry()
	opts := prometheus.CounterOpts{Name: "x_total", Help: "x"}
	a := Reuse(reg, prometheus.NewCounterVec(opts, []string{"l"}))
	b := Reuse(reg, prometheus.NewCounterVec(opts, []string{"l"}))
	assert.Same(t, a, b, "a second registration of the same metric gets the first collector")
	c := prometheus.NewCounter(opts)
	assert.Same(t, c, Reuse(nil, c), "a nil registry registers nothing")
	assert.Panics(t, func() { Reuse(reg, prometheus.NewCounterVec(opts, []string{"other"})) }, "the same name with other labels is a programming error")
}

func TestFactory(t *testing.T) {
	reg := prometheus.NewRegistry()
	counter := prometheus.CounterOpts{Name: "c_total", Help: "c"}
	gauge := prometheus.GaugeOpts{Name: "g", Help: "g"}
	hist := prometheus.HistogramOpts{Name: "h_seconds", Help: "h"}
	a, b := With(reg), With(reg)
	assert.Same(t, a.NewCounterVec(counter, []string{"l"}), b.NewCounterVec(counter, []string{"l"}), "a second instance shares the counter family")
	assert.Same(t, a.NewGaugeVec(gauge, []string{"l"}), b.NewGaugeVec(gauge, []string{"l"}), "a second instance shares the gauge family")
	assert.Same(t, a.NewHistogramVec(hist, []string{"l"}), b.NewHistogramVec(hist, []string{"l"}), "a second instance shares the histogram family")
	one := prometheus.CounterOpts{Name: "one_total", Help: "one"}
	assert.Same(t, a.NewCounter(one), b.NewCounter(one), "a second instance shares the counter")
	level := prometheus.GaugeOpts{Name: "level", Help: "level"}
	assert.Same(t, a.NewGauge(level), b.NewGauge(level), "a second instance shares the gauge")
	n, err := reg.Gather()
	require.NoError(t, err)
	assert.Len(t, n, 2, "the families without labels are gathered once each (the vectors have no series yet)")
	assert.NotPanics(t, func() { With(nil).NewCounter(one) }, "a nil registry registers nothing")
	assert.Panics(t, func() { b.NewCounterVec(counter, []string{"other"}) }, "the same name with other labels is a programming error")
}
