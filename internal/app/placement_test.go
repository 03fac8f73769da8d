package app

import (
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/meridian-gslb/meridian/internal/model"
)

func TestTrafficWeights(t *testing.T) {
	w := func(n int) *int { return &n }
	d := &model.Desired{Services: []model.Service{{Name: "app.gslb.test.", Endpoints: []model.Endpoint{
		{Address: "192.0.2.1", Cluster: "east", Weight: w(30)},
		{Address: "192.0.2.2", Cluster: "east", Weight: w(20)},
		{Address: "192.0.2.3", Cluster: "west"},
	}}}}
	for _, tc := range []struct {
		name, host string
		want       map[string]int
	}{
		{"the configured weights of a cluster's endpoints add up, the default weight counting for an endpoint without one", "APP.gslb.test", map[string]int{"east": 50, "west": model.DefaultWeight}},
		{"a name that is not a service has no weights", "other.gslb.test", nil},
	} {
		t.Run(tc.name, func(t *testing.T) { assert.Equal(t, tc.want, trafficWeights(d, tc.host)) })
	}
}
