// Package promreg registers Prometheus collectors that several instances in
// one process share (two probers, a provider per zone, the pipeline of each
// CoreDNS server block).
//
// A package whose metrics are made once per registry creates them with
// promauto.With(reg) (a second registration panics); a package whose
// instances share one registry creates them with With(reg), the same
// calls, which reuse the collectors an earlier instance registered.
package promreg

import (
	"errors"

	"github.com/prometheus/client_golang/prometheus"
)

// Reuse registers c with reg, or returns the equal collector already
// registered there (nil reg: c, registered nowhere). Any other registration
// error (the same name with other labels or help) is a programming error
// and panics, as MustRegister does.
func Reuse[C prometheus.Collector](reg prometheus.Registerer, c C) C {
	if reg == nil {
		return c
	}
	if err := reg.Register(c); err != nil {
		var are prometheus.AlreadyRegisteredError
		if errors.As(err, &are) {
			if existing, ok := are.ExistingCollector.(C); ok {
				return existing
			}
		}
		panic(err)
	}
	return c
}

// Factory creates collectors and registers them with its registry, as
// promauto.Factory does, except that a collector already registered there
// is reused (Reuse) instead of panicking.
type Factory struct{ reg prometheus.Registerer }

// With returns a Factory that registers with reg (nil: nowhere).
func With(reg prometheus.Registerer) Factory { return Factory{reg: reg} }

// NewCounter is prometheus.NewCounter, registered with Reuse.
func (f Factory) NewCounter(opts prometheus.CounterOpts) prometheus.Counter {
	return Reuse(f.reg, prometheus.NewCounter(opts))
}

// NewCounterVec is prometheus.NewCounterVec, registered with Reuse.
func (f Factory) NewCounterVec(opts prometheus.CounterOpts, labels []string) *prometheus.CounterVec {
	return Reuse(f.reg, prometheus.NewCounterVec(opts, labels))
}

// NewGauge is prometheus.NewGauge, registered with Reuse.
func (f Factory) NewGauge(opts prometheus.GaugeOpts) prometheus.Gauge {
	return Reuse(f.reg, prometheus.NewGauge(opts))
}

// NewGaugeVec is prometheus.NewGaugeVec, registered with Reuse.
func (f Factory) NewGaugeVec(opts prometheus.GaugeOpts, labels []string) *prometheus.GaugeVec {
	return Reuse(f.reg, prometheus.NewGaugeVec(opts, labels))
}

// NewHistogramVec is prometheus.NewHistogramVec, registered with Reuse.
func (f Factory) NewHistogramVec(opts prometheus.HistogramOpts, labels []string) *prometheus.HistogramVec {
	return Reuse(f.reg, prometheus.NewHistogramVec(opts, labels))
}
