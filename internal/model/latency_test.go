package model

import (
	"slices"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func pct(v float64) *Percent { p := Percent(v); return &p }

func latencyDesired() *Desired {
	d := minimal()
	key := FormatPeerKey(make([]byte, 32))
	d.Ring = Ring{Region: "us-east", Peers: []RingPeer{{Name: "west-1", Role: PeerProber, Region: "us-west", PublicKey: key}, {Name: "agent", Role: PeerAgent, Cluster: "east", PublicKey: key}}}
	d.Services[0].Strategy = StrategyLatency
	d.Services[0].HealthCheck = &Check{Kind: CheckTCP, Port: 443}
	return d
}

func TestLatencyValidation(t *testing.T) {
	for _, tc := range []struct {
		name    string
		change  func(d *Desired)
		path    string // "" = valid
		message string
	}{
		{"a latency service with a health check and no policy is accepted", func(*Desired) {}, "", ""},
		{"a tolerance inside 0%..500% is accepted", func(d *Desired) { d.Services[0].Latency = &LatencyPolicy{Tolerance: pct(0)} }, "", ""},
		{"a tolerance above 500% is refused with the range", func(d *Desired) { d.Services[0].Latency = &LatencyPolicy{Tolerance: pct(501)} },
			"services[0].latency.tolerance", "501% is out of range (allowed 0%..500%"},
		{"a negative tolerance is refused", func(d *Desired) { d.Services[0].Latency = &LatencyPolicy{Tolerance: pct(-1)} },
			"services[0].latency.tolerance", "out of range"},
		{"a latency service without a health check is refused: probes measure RTT", func(d *Desired) { d.Services[0].HealthCheck = nil },
			"services[0].health_check", "is required with strategy latency"},
		{"a latency service whose check is none is refused", func(d *Desired) { d.Services[0].HealthCheck = &Check{Kind: CheckNone} },
			"services[0].health_check", "is required with strategy latency"},
		{"a latency block on a weighted service is refused", func(d *Desired) {
			d.Services[0].Strategy = ""
			d.Services[0].Latency = &LatencyPolicy{}
		}, "services[0].latency", "is only allowed with strategy latency (strategy is weighted)"},
		{"a region mapping to a listed prober region is accepted", func(d *Desired) {
			d.Services[0].Latency = &LatencyPolicy{Regions: []LatencyRegion{{Region: "us-west", Countries: []string{"MX"}, Continents: []string{"SA"}}}}
		}, "", ""},
		{"a region mapping to a region no prober is in is refused naming the prober regions", func(d *Desired) {
			d.Services[0].Latency = &LatencyPolicy{Regions: []LatencyRegion{{Region: "eu-west", Continents: []string{"EU"}}}}
		}, "services[0].latency.regions[0].region", `"eu-west" is not a prober region (prober regions: us-east, us-west)`},
		{"a region mapping without places is refused", func(d *Desired) {
			d.Services[0].Latency = &LatencyPolicy{Regions: []LatencyRegion{{Region: "us-west"}}}
		}, "services[0].latency.regions[0]", "needs at least one of countries, continents"},
		{"a region mapping with a bad country is refused", func(d *Desired) {
			d.Services[0].Latency = &LatencyPolicy{Regions: []LatencyRegion{{Region: "us-west", Countries: []string{"UK"}}}}
		}, "services[0].latency.regions[0].countries[0]", "did you mean GB"},
		{"a region mapping without a region is refused", func(d *Desired) {
			d.Services[0].Latency = &LatencyPolicy{Regions: []LatencyRegion{{Continents: []string{"EU"}}}}
		}, "services[0].latency.regions[0].region", "is required"},
		{"without a ring any region name is accepted (nothing to check it against)", func(d *Desired) {
			d.Ring = Ring{}
			d.Services[0].Latency = &LatencyPolicy{Regions: []LatencyRegion{{Region: "anywhere", Continents: []string{"EU"}}}}
		}, "", ""},
		{"a cloud_region that is an AWS region code is accepted", func(d *Desired) { d.Clusters[0].CloudRegion = "eu-west-1" }, "", ""},
		{"a cloud_region that is not an AWS region code is refused", func(d *Desired) { d.Clusters[0].CloudRegion = "europe-west1" },
			"clusters[0].cloud_region", `"europe-west1" is not an AWS region code`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d := latencyDesired()
			tc.change(d)
			requireFieldError(t, Validate(d), tc.path, tc.message)
		})
	}
}

func TestRoute53LatencyNeedsAnAWSRegionPerCluster(t *testing.T) {
	for _, tc := range []struct {
		name    string
		cluster Cluster
		path    string
		message string
	}{
		{name: "a cluster whose region is an AWS region code is accepted", cluster: Cluster{Name: "east", Region: "us-east-1"}},
		{name: "a cluster with a cloud_region is accepted", cluster: Cluster{Name: "east", Region: "dc1", CloudRegion: "us-east-2"}},
		{name: "a cluster without an AWS region is refused naming the cluster and the zone", cluster: Cluster{Name: "east", Region: "dc1"},
			path: "services[0].endpoints", message: `cluster "east" names no AWS region, which Route 53 latency records need (providers.route53[0], zone example.test.)`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d := latencyDesired()
			d.Ring = Ring{}
			d.Clusters[0] = tc.cluster
			d.Providers = Providers{OwnerID: "t", Route53: []Route53Zone{{Zone: "example.test"}}}
			requireFieldError(t, Validate(d), tc.path, tc.message)
		})
	}
}

func TestLatencyDefaults(t *testing.T) {
	d := latencyDesired()
	out, err := Normalize(d)
	require.NoError(t, err)
	require.NotNil(t, out.Services[0].Latency)
	assert.Equal(t, Percent(20), *out.Services[0].Latency.Tolerance, "the default tolerance is 20%")
	assert.InDelta(t, 0.2, out.Services[0].Latency.ToleranceOr(), 1e-9)
	assert.Nil(t, d.Services[0].Latency, "the input is not modified")

	d.Services[0].Latency = &LatencyPolicy{Tolerance: pct(0)}
	out, err = Normalize(d)
	require.NoError(t, err)
	assert.Equal(t, Percent(0), *out.Services[0].Latency.Tolerance, "an explicit 0% stays 0%")
	assert.NotSame(t, d.Services[0].Latency.Tolerance, out.Services[0].Latency.Tolerance, "the result shares nothing with the input")
}

func TestPercentReadsBothForms(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want Percent
		ok   bool
	}{{"20%", 20, true}, {"20", 20, true}, {" 7.5 % ", 7.5, true}, {"twenty", 0, false}, {"NaN", 0, false}, {"%", 0, false}} {
		var p Percent
		err := p.UnmarshalText([]byte(tc.in))
		if !tc.ok {
			assert.Error(t, err, tc.in)
			continue
		}
		require.NoError(t, err, tc.in)
		assert.Equal(t, tc.want, p, tc.in)
	}
	assert.Equal(t, "20%", Percent(20).String())
}

func TestAWSRegionsAreSortedForTheLookup(t *testing.T) {
	assert.True(t, slices.IsSorted(AWSRegions))
	assert.True(t, IsAWSRegion("us-east-1"))
	assert.False(t, IsAWSRegion("us-east"))
	assert.Equal(t, "us-east-1", Cluster{Region: "us-east-1"}.AWSRegion())
	assert.Equal(t, "eu-west-1", Cluster{Region: "us-east-1", CloudRegion: "eu-west-1"}.AWSRegion())
	assert.Empty(t, Cluster{Region: "dc1"}.AWSRegion())
}
