package model

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
)

func TestShiftConfig(t *testing.T) {
	cases := []struct {
		name string
		s    ShiftConfig
		want []string // field paths with an error
	}{
		{"an empty shift section is valid", ShiftConfig{}, nil},
		{"a Prometheus URL with credentials is refused", ShiftConfig{PrometheusURL: "http://u:p@prom:9090"}, []string{"shift.prometheus_url"}},
		{"a Prometheus URL that is not http is refused", ShiftConfig{PrometheusURL: "ftp://prom"}, []string{"shift.prometheus_url"}},
		{"a tick under 100ms and a timeout over a minute are refused", ShiftConfig{Tick: Duration(time.Millisecond), Timeout: Duration(time.Hour)}, []string{"shift.timeout", "shift.tick"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			v := &validator{}
			v.shiftConfig(c.s)
			var got []string
			for _, e := range v.errs {
				got = append(got, e.Path)
			}
			assert.Equal(t, c.want, got)
		})
	}
	t.Run("unset tick and timeout give the defaults", func(t *testing.T) {
		assert.Equal(t, DefaultShiftTick, ShiftConfig{}.TickOr())
		assert.Equal(t, DefaultShiftGuardTimeout, ShiftConfig{}.TimeoutOr())
	})
}
