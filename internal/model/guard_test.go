package model

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestMinHealthyValidation(t *testing.T) {
	n := func(v int) *int { return &v }
	for _, tc := range []struct {
		name    string
		edit    func(d *Desired)
		path    string // "" = valid
		message string
	}{
		{"zero turns the global guard off and is accepted", func(d *Desired) { d.Decision.MinHealthy = n(0) }, "", ""},
		{"a negative global min_healthy is refused", func(d *Desired) { d.Decision.MinHealthy = n(-1) },
			"decision.min_healthy", "-1 is out of range (allowed 0..1000; 0 = no guard; default 1)"},
		{"a service's min_healthy over 1000 is refused", func(d *Desired) { d.Services[0].MinHealthy = n(1001) },
			"services[0].min_healthy", "1001 is out of range (allowed 0..1000"},
		{"a service's min_healthy of three is accepted", func(d *Desired) { d.Services[0].MinHealthy = n(3) }, "", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d := minimal()
			tc.edit(d)
			requireFieldError(t, Validate(d), tc.path, tc.message)
		})
	}
}

func TestMinHealthyOf(t *testing.T) {
	n := func(v int) *int { return &v }
	for _, tc := range []struct {
		name           string
		global, single *int
		want           int
	}{
		{"without either the default is one", nil, nil, 1},
		{"the global value applies to a service without its own", n(2), nil, 2},
		{"a service's own value wins, zero included", n(2), n(0), 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d := &Desired{Decision: Decision{MinHealthy: tc.global}}
			assert.Equal(t, tc.want, d.MinHealthyOf(&Service{MinHealthy: tc.single}))
		})
	}
}
