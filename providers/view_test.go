package providers_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	mconfig "github.com/meridian-gslb/meridian/internal/config"
	"github.com/meridian-gslb/meridian/internal/engine"
	"github.com/meridian-gslb/meridian/internal/model"
	"github.com/meridian-gslb/meridian/providers"
)

func TestServicesCarryHealthCheckAndNetworks(t *testing.T) {
	f, err := mconfig.Parse("view.yaml", []byte(`
zones:
  - apex: example.com
    nameservers:
      - {name: ns1.example.com, ipv4: [192.0.2.53]}
clusters:
  - {name: eu, country: DE, continent: EU, region: eu-central}
  - {name: us, country: US, continent: NA, region: us-east}
geo:
  networks:
    - {cidr: 10.1.0.0/16, region: office}
services:
  - name: geo.example.com
    strategy: geo
    health_check: {kind: http, path: /healthz, fall: 4}
    geo: {rules: [{continents: [EU], clusters: [eu]}]}
    endpoints:
      - {address: 192.0.2.1, cluster: eu}
      - {address: 192.0.2.2, cluster: us}
  - name: w.example.com
    endpoints:
      - {address: 192.0.2.3, cluster: eu}
`))
	require.NoError(t, err)
	views := providers.Services(&f.Desired, nil)
	require.Len(t, views, 2)
	geo, w := views[0], views[1]
	require.NotNil(t, geo.HealthCheck, "a probed service carries its health_check")
	assert.Equal(t, model.CheckHTTP, geo.HealthCheck.Kind)
	assert.Equal(t, "/healthz", geo.HealthCheck.Path)
	assert.Equal(t, 80, geo.HealthCheck.Port, "with its defaults filled")
	assert.Equal(t, 4, geo.HealthCheck.Fall)
	assert.Equal(t, []model.GeoNetwork{{CIDR: "10.1.0.0/16", Region: "office"}}, geo.Networks, "a geo service carries geo.networks")
	assert.Nil(t, w.Networks, "a weighted service does not")
}

// probedDown decides every endpoint down by its probes.
type probedDown struct{}

func (probedDown) Endpoint(string, string) engine.State { return engine.Down }
func (probedDown) Cluster(string) engine.State          { return engine.Unknown }

func TestFailOpenPublishesNoEndpointAnOperatorTookOut(t *testing.T) {
	f, err := mconfig.Parse("view.yaml", []byte(`
zones:
  - apex: example.com
    nameservers:
      - {name: ns1.example.com, ipv4: [192.0.2.53]}
clusters:
  - {name: east, region: us-east}
  - {name: west, region: us-west, state: down}
  - {name: eu, region: eu-west}
services:
  - name: app.example.com
    endpoints:
      - {address: 192.0.2.1, cluster: east, weight: 70}
      - {address: 192.0.2.2, cluster: east, state: down}
      - {address: 192.0.2.3, cluster: west}
      - {address: 192.0.2.4, cluster: eu, drain: true}
      - {address: 192.0.2.5, cluster: eu, weight: 30}
`))
	require.NoError(t, err)
	views := providers.Services(&f.Desired, probedDown{})
	require.Len(t, views, 1)
	v := views[0]
	assert.True(t, v.FailOpen, "every endpoint is down by its probes")
	got := map[string]int{}
	for _, e := range v.Endpoints {
		got[e.Target] = e.Effective
	}
	assert.Equal(t, map[string]int{"192.0.2.1": 70, "192.0.2.2": 0, "192.0.2.3": 0, "192.0.2.4": 0, "192.0.2.5": 30}, got,
		"fail-open publishes the probe-down endpoints with their weights, never a forced-down (endpoint or cluster) or drained one")
}
