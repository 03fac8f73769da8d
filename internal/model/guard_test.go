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
	three := []Endpoint{{Address: "192.0.2.1"}, {Address: "192.0.2.2"}, {Address: "192.0.2.3"}}
	for _, tc := range []struct {
		name           string
		global, single *int
		annotation     string // MinHealthyFrom of a Kubernetes-sourced service
		want           int
		from           string
	}{
		{"without either the default is one", nil, nil, "", 1, "the default"},
		{"the global value applies to a service without its own", n(2), nil, "", 2, "decision.min_healthy in the config"},
		{"a service's own value wins, zero included", n(2), n(0), "", 0, "services[].min_healthy in the config"},
		{"an annotation's value is named with its object", nil, n(2), "annotation meridian.io/min-healthy on service team-a/app in cluster east", 2,
			"annotation meridian.io/min-healthy on service team-a/app in cluster east"},
		{"a value above the service's endpoints counts as all of them and says so", nil, n(1000), "annotation meridian.io/min-healthy on service team-a/app in cluster east", 3,
			"annotation meridian.io/min-healthy on service team-a/app in cluster east = 1000, clamped to the service's 3 endpoint(s)"},
		{"a global value above the service's endpoints is clamped too", n(5), nil, "", 3, "decision.min_healthy in the config = 5, clamped to the service's 3 endpoint(s)"},
		{"a value equal to the endpoints is kept as it is", nil, n(3), "", 3, "services[].min_healthy in the config"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d := &Desired{Decision: Decision{MinHealthy: tc.global}}
			s := &Service{MinHealthy: tc.single, MinHealthyFrom: tc.annotation, Endpoints: three}
			assert.Equal(t, tc.want, d.MinHealthyOf(s))
			got, from := d.MinHealthyRule(s)
			assert.Equal(t, tc.want, got)
			assert.Equal(t, tc.from, from)
		})
	}
}
