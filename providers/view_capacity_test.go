package providers_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	mconfig "github.com/meridian-gslb/meridian/internal/config"
	"github.com/meridian-gslb/meridian/internal/engine"
	"github.com/meridian-gslb/meridian/providers"
)

// readyPercent is an engine.Capacity with fixed percents by target.
type readyPercent map[string]int

func (r readyPercent) Endpoint(_, target string) (engine.CapacityState, bool) {
	p, ok := r[target]
	return engine.CapacityState{Percent: p, Source: "kubernetes"}, ok
}

func TestServicesCarryTheEffectiveWeightsOfCapacityAwareServices(t *testing.T) {
	f, err := mconfig.Parse("view.yaml", []byte(`
zones:
  - apex: example.com
    nameservers: [{name: ns1.example.com, ipv4: [192.0.2.53]}]
clusters:
  - {name: east, region: us-east}
  - {name: west, region: us-west}
services:
  - name: cap.example.com
    capacity: {source: kubernetes, kubernetes: {service: shop/web}}
    endpoints:
      - {address: 192.0.2.1, cluster: east, weight: 50}
      - {address: 192.0.2.2, cluster: west, weight: 50}
  - name: plain.example.com
    endpoints:
      - {address: 192.0.2.3, cluster: east, weight: 50}
`))
	require.NoError(t, err)
	effective := func(v providers.ServiceView) []int {
		var out []int
		for _, e := range v.Endpoints {
			out = append(out, e.Effective)
		}
		return out
	}
	cases := []struct {
		name   string
		ready  readyPercent
		health engine.Health
		want   []int
		ready0 int
	}{
		{"without fractions both carry their weight, scaled alike", nil, nil, []int{5000, 5000}, 100},
		{"east at 20 % ready carries a fifth of its weight", readyPercent{"192.0.2.1": 20}, nil, []int{1000, 5000}, 20},
		{"east at 0 % ready carries nothing while west is available", readyPercent{"192.0.2.1": 0}, nil, []int{0, 5000}, 0},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var c engine.Capacity
			if tc.ready != nil {
				c = tc.ready
			}
			views := providers.ServicesWithCapacity(&f.Desired, tc.health, c)
			assert.Equal(t, tc.want, effective(views[0]))
			assert.Equal(t, tc.ready0, views[0].Endpoints[0].Ready)
			assert.Equal(t, 50, views[0].Endpoints[0].Weight, "the configured weight")
			assert.Equal(t, []int{50}, effective(views[1]), "a service without capacity is not scaled")
		})
	}
	assert.Equal(t, providers.Services(&f.Desired, nil), providers.ServicesWithCapacity(&f.Desired, nil, nil))
}
