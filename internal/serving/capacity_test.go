package serving

import (
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/meridian-gslb/meridian/internal/capacity"
)

const capacityConfig = `
zones:
  - apex: gslb.test
    nameservers: [{name: ns1.gslb.test, ipv4: [192.0.2.53]}]
clusters:
  - {name: east, region: us-east}
  - {name: west, region: us-west}
services:
  - name: app.gslb.test
    capacity: {source: prometheus, prometheus: {url: "http://prometheus.test:9090", query: ready}}
    endpoints:
      - {address: 192.0.2.1, cluster: east, weight: 50}
      - {address: 192.0.2.2, cluster: west, weight: 50}
`

func TestPipelineCapacity(t *testing.T) {
	p := newPipeline(t, load(t, capacityConfig), Options{})
	gen := p.State().Snapshot.Generation()
	now := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
	st := capacity.Decide(capacity.Input{Services: capacity.Services(p.State().Served), Now: now,
		Readings: map[capacity.Key]capacity.Reading{{Service: "app.gslb.test.", Target: "192.0.2.1"}: {Fraction: 0.2, At: now, Detail: "east reads 0.2"}}}, capacity.Params{})
	require.NoError(t, p.SetCapacity(st))
	assert.Equal(t, gen+1, p.State().Snapshot.Generation())
	assert.Same(t, st, p.State().Capacity)

	eps := p.State().Snapshot.Services()[0].Endpoints
	assert.Equal(t, 50, eps[0].Weight, "the configured weight")
	assert.InDelta(t, 10, eps[0].EffectiveWeight(), 1e-9, "× 20 % ready")
	assert.InDelta(t, 50, eps[1].EffectiveWeight(), 1e-9)

	// Replica division (internal/app's trafficWeights) reads the
	// configured weights of the effective state, which the fractions leave
	// as they are: the loop cannot chase itself (fewer replicas, fewer
	// ready, a lower weight, fewer replicas).
	for _, ep := range p.State().Effective.Desired.Services[0].Endpoints {
		assert.Equal(t, 50, ep.WeightOr(), ep.Address)
	}

	// A reload keeps the fractions.
	_, err := p.Reload(load(t, strings.Replace(capacityConfig, "weight: 50}\n      - {address: 192.0.2.2", "weight: 60}\n      - {address: 192.0.2.2", 1)), nil)
	require.NoError(t, err)
	eps = p.State().Snapshot.Services()[0].Endpoints
	assert.InDelta(t, 12, eps[0].EffectiveWeight(), 1e-9)
}
