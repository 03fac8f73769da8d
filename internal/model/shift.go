package model

import "time"

// Defaults of the shift section.
const (
	DefaultShiftTick         = time.Second
	DefaultShiftGuardTimeout = 5 * time.Second
)

// ShiftConfig tunes progressive shifts (`meridian shift`).
type ShiftConfig struct {
	PrometheusURL string   `yaml:"prometheus_url"` // base URL of the Prometheus HTTP API that --abort-if guards query (default none: a shift with --abort-if is refused)
	Timeout       Duration `yaml:"timeout"`        // per guard query (default 5s; 1s..1m)
	Tick          Duration `yaml:"tick"`           // how often each shift is checked: a breach rolls back within one tick (default 1s; 100ms..1m)
}

// TickOr is the tick (default when unset).
func (s ShiftConfig) TickOr() time.Duration {
	if s.Tick.D() == 0 {
		return DefaultShiftTick
	}
	return s.Tick.D()
}

// TimeoutOr is the guard query timeout (default when unset).
func (s ShiftConfig) TimeoutOr() time.Duration {
	if s.Timeout.D() == 0 {
		return DefaultShiftGuardTimeout
	}
	return s.Timeout.D()
}

func (v *validator) shiftConfig(s ShiftConfig) {
	if s.PrometheusURL != "" {
		v.prometheusURL("shift.prometheus_url", s.PrometheusURL)
	}
	if t := s.Timeout.D(); t != 0 && (t < time.Second || t > time.Minute) {
		v.add("shift.timeout", "%s is out of range (allowed 1s..1m; default %s)", t, DefaultShiftGuardTimeout)
	}
	if t := s.Tick.D(); t != 0 && (t < 100*time.Millisecond || t > time.Minute) {
		v.add("shift.tick", "%s is out of range (allowed 100ms..1m; default %s)", t, DefaultShiftTick)
	}
}
