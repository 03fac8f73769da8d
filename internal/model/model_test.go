package model

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func ptr(i int) *int { return &i }

func minimal() *Desired {
	return &Desired{
		Zones:    []Zone{{Apex: "Example.TEST", Nameservers: []Nameserver{{Name: "ns1.example.test", IPv4: []string{"192.0.2.53"}}}}},
		Clusters: []Cluster{{Name: "east", Region: "us-east"}},
		Services: []Service{{Name: "App.example.test", Endpoints: []Endpoint{{Address: "2001:DB8::1", Cluster: "east"}}}},
	}
}

func TestNormalizeFillsDefaultsWithoutTouchingItsInput(t *testing.T) {
	in := minimal()
	out, err := Normalize(in)
	require.NoError(t, err)
	assert.Equal(t, "App.example.test", in.Services[0].Name, "input unchanged")
	assert.Nil(t, in.Services[0].Endpoints[0].Weight, "input unchanged")
	s := out.Services[0]
	assert.Equal(t, "app.example.test.", s.Name)
	assert.Equal(t, "2001:db8::1", s.Endpoints[0].Address)
	assert.Equal(t, DefaultWeight, *s.Endpoints[0].Weight)
	assert.Equal(t, DefaultFailOpenTTL, s.FailOpenTTL)
	assert.Equal(t, "example.test.", out.ZoneOf("app.example.test."))
}

func TestFailOpenTTLNeverExceedsTheServiceTTL(t *testing.T) {
	in := minimal()
	in.Services[0].TTL = 3
	out, err := Normalize(in)
	require.NoError(t, err)
	assert.Equal(t, 3, out.Services[0].FailOpenTTL)
}

func TestValidateCollectsEveryProblem(t *testing.T) {
	in := minimal()
	in.Services[0].Endpoints = append(in.Services[0].Endpoints,
		Endpoint{Address: "192.0.2.1", Cluster: "west", Weight: ptr(2000)},
		Endpoint{Cluster: "east"},
	)
	in.Clusters = append(in.Clusters, Cluster{Name: "east", Region: "x", Continent: "XX"})
	err := Validate(in)
	var verr *ValidationError
	require.ErrorAs(t, err, &verr)
	paths := map[string]bool{}
	for _, f := range verr.Fields {
		paths[f.Path] = true
	}
	for _, p := range []string{
		"clusters[1].name", "clusters[1].continent",
		"services[0].endpoints[1].cluster", "services[0].endpoints[1].weight", "services[0].endpoints[2]",
	} {
		assert.True(t, paths[p], "missing error for %s in %v", p, err)
	}
}

func TestStickyDefaultsToOffAndOnlyTakesItsModes(t *testing.T) {
	tests := []struct {
		name    string
		sticky  string
		want    string // normalized value ("" = rejected)
		wantErr string
	}{
		{name: "an unset sticky is off", sticky: "", want: StickyOff},
		{name: "off is accepted", sticky: "off", want: StickyOff},
		{name: "subnet is accepted", sticky: "subnet", want: StickySubnet},
		{name: "an unknown mode names the field, the value and the allowed modes", sticky: "cookie",
			wantErr: `services[0].sticky: "cookie" is not allowed (allowed: off, subnet)`},
		{name: "the mode is case sensitive like every other keyword", sticky: "Subnet",
			wantErr: `services[0].sticky: "Subnet" is not allowed (allowed: off, subnet)`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			in := minimal()
			in.Services[0].Sticky = tc.sticky
			out, err := Normalize(in)
			if tc.wantErr != "" {
				require.Error(t, err)
				assert.Contains(t, err.Error(), tc.wantErr)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tc.want, out.Services[0].Sticky)
		})
	}
}

func TestANonASCIINameIsRejectedWithThePunycodeHint(t *testing.T) {
	d := &Desired{Zones: []Zone{{Apex: "bücher.example", Nameservers: []Nameserver{{Name: "ns1.example.net"}}}}}
	err := Validate(d)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "punycode")
}

// TestValidateNamesThePathOfEveryServiceProblem: the service checks build
// a field's path only when it has a problem; each problem still names its
// own field, in the order of the checks.
func TestValidateNamesThePathOfEveryServiceProblem(t *testing.T) {
	in := minimal()
	in.Clusters = append(in.Clusters, Cluster{Name: "west", Region: "us-west"})
	in.Services = append(in.Services,
		Service{
			Name: "a.example.test", Strategy: "fastest", TTL: -1, FailOpenTTL: MaxTTL + 1, MaxAnswers: -1,
			WhenAllDown: "panic", Sticky: "always", MinHealthy: ptr(-1),
			Endpoints: []Endpoint{
				{Address: "192.0.2.1", Cluster: "east"},
				{Address: "192.0.2.1", Cluster: "west", State: "sideways"},
				{Address: "192.0.2.2", CNAME: "b.example.test", Cluster: "nowhere"},
			},
		},
		Service{
			Name: "f.example.test", Strategy: StrategyFailover,
			Endpoints: []Endpoint{{Address: "192.0.2.3", Cluster: "east", Priority: ptr(1)}, {Address: "192.0.2.4", Cluster: "west"}},
			Failover:  &FailoverPolicy{Order: []string{"east", "nowhere", "east"}},
		},
		Service{
			Name: "g.example.test", Strategy: StrategyGeo,
			Endpoints: []Endpoint{{Address: "192.0.2.5", Cluster: "east"}},
			Geo: &GeoPolicy{
				Rules:   []GeoRule{{Clusters: []string{"east"}}, {Continents: []string{"XX"}, Clusters: []string{"nowhere"}}},
				Default: []string{"east", "nowhere"},
			},
		},
	)
	var verr *ValidationError
	require.ErrorAs(t, Validate(in), &verr)
	var paths []string
	for _, f := range verr.Fields {
		paths = append(paths, f.Path)
	}
	assert.Equal(t, []string{
		"services[1].strategy", "services[1].ttl", "services[1].fail_open_ttl", "services[1].max_answers",
		"services[1].when_all_down", "services[1].sticky", "services[1].min_healthy",
		"services[1].endpoints[1].address", "services[1].endpoints[1].state",
		"services[1].endpoints[2]", "services[1].endpoints[2].cluster",
		"services[2].failover.order[1]", "services[2].failover.order[2]",
		"services[2].endpoints[0].priority", "services[2].endpoints[1].cluster",
		"services[3].geo.rules[0]", "services[3].geo.rules[1].continents[0]", "services[3].geo.rules[1].clusters[0]",
		"services[3].geo.default[1]",
	}, paths)
}

func TestAnEndpointsTargetAndWeight(t *testing.T) {
	w := 0
	for _, tc := range []struct {
		name   string
		e      Endpoint
		target string
		weight int
	}{
		{"an address endpoint answers with its address", Endpoint{Address: "192.0.2.1"}, "192.0.2.1", DefaultWeight},
		{"a CNAME endpoint answers with its CNAME", Endpoint{CNAME: "a.example.test."}, "a.example.test.", DefaultWeight},
		{"a weight of 0 is kept, not defaulted", Endpoint{Address: "192.0.2.1", Weight: &w}, "192.0.2.1", 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			assert.Equal(t, tc.target, tc.e.Target())
			assert.Equal(t, tc.weight, tc.e.WeightOr())
		})
	}
}
