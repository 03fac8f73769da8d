package promreg

import (
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/assert"
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
