package model

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestFastFailoverValidation(t *testing.T) {
	ms := func(n int) Duration { return Duration(time.Duration(n) * time.Millisecond) }
	sec := func(n int) Duration { return Duration(time.Duration(n) * time.Second) }
	for _, tc := range []struct {
		name    string
		edit    func(d *Desired)
		path    string // "" = valid
		message string
	}{
		{"a re-probe cadence of 250ms is accepted", func(d *Desired) { d.Health.ReprobeInterval = ms(250) }, "", ""},
		{"a re-probe cadence shorter than 50ms is refused", func(d *Desired) { d.Health.ReprobeInterval = ms(10) },
			"health.reprobe_interval", "10ms is too short (at least 50ms)"},
		{"a re-probe cadence longer than the interval is refused", func(d *Desired) {
			d.Health.Interval, d.Health.ReprobeInterval = sec(1), sec(2)
		}, "health.reprobe_interval", "2s is longer than the interval 1s"},
		{"a service's re-probe cadence is checked like the default one", func(d *Desired) {
			d.Services[0].HealthCheck = &Check{Kind: CheckTCP, Port: 80, Interval: sec(2), ReprobeInterval: sec(3)}
		}, "services[0].health_check.reprobe_interval", "3s is longer than the interval 2s"},
		{"a hold_down_min of one second is accepted", func(d *Desired) { d.Decision.HoldDownMin = sec(1) }, "", ""},
		{"a hold_down_min longer than the default hold_down is refused", func(d *Desired) { d.Decision.HoldDownMin = sec(40) },
			"decision.hold_down_min", "40s is longer than hold_down 30s"},
		{"a hold_down_min up to a raised hold_down is accepted", func(d *Desired) {
			d.Decision.HoldDown, d.Decision.HoldDownMin = sec(60), sec(40)
		}, "", ""},
		{"a hold_down_min below 100ms is refused", func(d *Desired) { d.Decision.HoldDownMin = ms(10) },
			"decision.hold_down_min", "10ms is too short (at least 100ms; 0 = default 5s)"},
		{"a flap window shorter than a second is refused", func(d *Desired) { d.Decision.FlapWindow = ms(500) },
			"decision.flap_window", "500ms is out of range (allowed 1s..24h; 0 = default 1m0s)"},
		{"a flap window of two days is refused", func(d *Desired) { d.Decision.FlapWindow = Duration(48 * time.Hour) },
			"decision.flap_window", "out of range (allowed 1s..24h"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d := minimal()
			tc.edit(d)
			requireFieldError(t, Validate(d), tc.path, tc.message)
		})
	}
}

func TestFastFailoverDefaults(t *testing.T) {
	for _, tc := range []struct {
		name                          string
		edit                          func(d *Desired)
		reprobe, checkReprobe, holdMn time.Duration
		flap                          time.Duration
	}{
		{name: "the defaults are a 250ms re-probe, a 5s first hold-down and a 60s flap window",
			reprobe: 250 * time.Millisecond, checkReprobe: 250 * time.Millisecond, holdMn: 5 * time.Second, flap: time.Minute},
		{name: "the default re-probe cadence is at most the interval", edit: func(d *Desired) { d.Health.Interval = Duration(200 * time.Millisecond) },
			reprobe: 200 * time.Millisecond, checkReprobe: 200 * time.Millisecond, holdMn: 5 * time.Second, flap: time.Minute},
		{name: "a service with a shorter interval re-probes at most at its interval", edit: func(d *Desired) {
			d.Services[0].HealthCheck.Interval = Duration(200 * time.Millisecond)
		}, reprobe: 250 * time.Millisecond, checkReprobe: 200 * time.Millisecond, holdMn: 5 * time.Second, flap: time.Minute},
		{name: "a hold_down shorter than 5s is also the first hold-down", edit: func(d *Desired) { d.Decision.HoldDown = Duration(2 * time.Second) },
			reprobe: 250 * time.Millisecond, checkReprobe: 250 * time.Millisecond, holdMn: 2 * time.Second, flap: time.Minute},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d := minimal()
			d.Services[0].HealthCheck = &Check{Kind: CheckTCP, Port: 80}
			if tc.edit != nil {
				tc.edit(d)
			}
			out, err := Normalize(d)
			require.NoError(t, err)
			assert.Equal(t, tc.reprobe, out.Health.ReprobeInterval.D())
			assert.Equal(t, tc.checkReprobe, out.Services[0].HealthCheck.ReprobeInterval.D())
			assert.Equal(t, tc.holdMn, out.Decision.HoldDownMin.D())
			assert.Equal(t, tc.flap, out.Decision.FlapWindow.D())
		})
	}
}
