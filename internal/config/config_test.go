package config

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/meridian-gslb/meridian/internal/model"
)

const base = `
zones:
  - apex: example.test
    nameservers:
      - name: ns1.example.test
        ipv4: [192.0.2.53]
clusters:
  - {name: east, region: us-east, continent: NA, country: US}
  - {name: west, region: us-west}
services:
  - name: app.example.test
    endpoints:
      - {address: 192.0.2.1, cluster: east, weight: 700}
      - {address: 192.0.2.2, cluster: west, weight: 300}
`

func TestDemoConfigIsValid(t *testing.T) {
	f, err := Load("../../deploy/examples/demo.yaml")
	require.NoError(t, err)
	strategies := map[string]bool{}
	for _, s := range f.Services {
		strategies[s.Strategy] = true
	}
	for _, s := range model.Strategies {
		assert.True(t, strategies[s], "demo config has no %s service", s)
	}
	assert.GreaterOrEqual(t, len(f.Clusters), 3)
}

func TestParseFillsDefaults(t *testing.T) {
	f, err := Parse("t.yaml", []byte(base))
	require.NoError(t, err)
	z := f.Zones[0]
	assert.Equal(t, "example.test.", z.Apex)
	assert.Equal(t, model.DefaultTTL, z.TTL)
	assert.Equal(t, "ns1.example.test.", z.SOA.MName)
	assert.Equal(t, "hostmaster.example.test.", z.SOA.RName)
	assert.Equal(t, model.DefaultNegativeTTL, z.SOA.Minimum)
	s := f.Services[0]
	assert.Equal(t, "app.example.test.", s.Name)
	assert.Equal(t, model.StrategyWeighted, s.Strategy)
	assert.Equal(t, model.DefaultTTL, s.TTL)
	assert.Equal(t, 1, s.MaxAnswers)
	assert.Equal(t, model.WhenAllDownFailOpen, s.WhenAllDown)
	assert.Equal(t, model.StickyOff, s.Sticky)
	assert.Equal(t, []string{DefaultDNSListen}, f.Server.DNS.Listen)
	assert.Equal(t, DefaultHTTPListen, f.Server.HTTP.Listen)
	assert.Equal(t, 10*time.Second, f.Server.DNS.TCPIdleTimeout)
}

func TestParseRejectsBadConfig(t *testing.T) {
	tests := []struct {
		name string
		edit func(string) string
		want []string // substrings of the error, in order of appearance
		line int
	}{
		{
			name: "an unknown field names the field, its line and the allowed fields",
			edit: func(s string) string { return strings.Replace(s, "weight: 700", "wieght: 700", 1) },
			want: []string{`services[0].endpoints[0].wieght`, `unknown field "wieght"`, "allowed: address, cname, cluster, weight, priority, state, drain"},
			line: 13,
		},
		{
			name: "a name outside every zone is rejected with the zones listed",
			edit: func(s string) string { return strings.Replace(s, "app.example.test", "app.other.test", 1) },
			want: []string{"services[0].name", `"app.other.test." is outside every zone (zones: example.test.)`},
			line: 11,
		},
		{
			name: "a duplicate service name is rejected",
			edit: func(s string) string {
				return s + "  - name: APP.example.test.\n    endpoints: [{address: 192.0.2.3, cluster: east}]\n"
			},
			want: []string{"services[1].name", `duplicate name "app.example.test."`},
			line: 15,
		},
		{
			name: "a service that reuses a nameserver name is rejected",
			edit: func(s string) string {
				return s + "  - name: ns1.example.test\n    endpoints: [{address: 192.0.2.3, cluster: east}]\n"
			},
			want: []string{"services[1].name", `duplicate name "ns1.example.test." (already used by zones[0].nameservers[0].name)`},
		},
		{
			name: "a weight above 1000 is out of range",
			edit: func(s string) string { return strings.Replace(s, "weight: 700", "weight: 1200", 1) },
			want: []string{"services[0].endpoints[0].weight", "1200 is out of range (allowed 0..1000)"},
			line: 13,
		},
		{
			name: "a negative weight is out of range",
			edit: func(s string) string { return strings.Replace(s, "weight: 300", "weight: -1", 1) },
			want: []string{"services[0].endpoints[1].weight", "-1 is out of range (allowed 0..1000)"},
			line: 14,
		},
		{
			name: "a CNAME mixed with addresses at one name is rejected",
			edit: func(s string) string {
				return strings.Replace(s, "{address: 192.0.2.2,", "{cname: other.example.org,", 1)
			},
			want: []string{"services[0].endpoints", "a CNAME cannot be mixed with addresses at one name"},
		},
		{
			name: "an empty failover order is rejected",
			edit: func(s string) string {
				return strings.Replace(s, "  - name: app.example.test\n", "  - name: app.example.test\n    strategy: failover\n    failover: {order: []}\n", 1)
			},
			want: []string{"services[0].failover.order", "is empty"},
			line: 13,
		},
		{
			name: "a failover service without order or priorities is rejected",
			edit: func(s string) string {
				return strings.Replace(s, "  - name: app.example.test\n", "  - name: app.example.test\n    strategy: failover\n", 1)
			},
			want: []string{"services[0].failover.order", "is required"},
		},
		{
			name: "an unknown cluster is rejected with the known ones listed",
			edit: func(s string) string { return strings.Replace(s, "cluster: west", "cluster: north", 1) },
			want: []string{"services[0].endpoints[1].cluster", `unknown cluster "north" (known: east, west)`},
			line: 14,
		},
		{
			name: "an unknown strategy lists the allowed ones",
			edit: func(s string) string {
				return strings.Replace(s, "  - name: app.example.test\n", "  - name: app.example.test\n    strategy: nearest\n", 1)
			},
			want: []string{"services[0].strategy", `"nearest" is not allowed (allowed: weighted, failover, geo, roundrobin, latency)`},
			line: 12,
		},
		{
			name: "an unknown sticky mode lists the allowed ones",
			edit: func(s string) string {
				return strings.Replace(s, "  - name: app.example.test\n", "  - name: app.example.test\n    sticky: source\n", 1)
			},
			want: []string{"services[0].sticky", `"source" is not allowed (allowed: off, subnet)`},
			line: 12,
		},
		{
			name: "an address that is not an IP is rejected",
			edit: func(s string) string { return strings.Replace(s, "192.0.2.1,", "192.0.2.300,", 1) },
			want: []string{"services[0].endpoints[0].address", `"192.0.2.300" is not an IPv4 or IPv6 address`},
		},
		{
			name: "an in-zone nameserver without glue is rejected",
			edit: func(s string) string { return strings.Replace(s, "        ipv4: [192.0.2.53]\n", "", 1) },
			want: []string{"zones[0].nameservers[0]", "needs glue"},
		},
		{
			name: "a geo rule naming an unknown cluster is rejected",
			edit: func(s string) string {
				return strings.Replace(s, "  - name: app.example.test\n", "  - name: app.example.test\n    strategy: geo\n    geo: {rules: [{continents: [EU], clusters: [europe]}]}\n", 1)
			},
			want: []string{"services[0].geo.rules[0].clusters[0]", `unknown cluster "europe"`},
		},
		{
			name: "a bad listen address in the server section is rejected",
			edit: func(s string) string { return "server: {dns: {listen: [localhost]}}\n" + s },
			want: []string{"server.dns.listen[0]", `"localhost" is not an IP:port address`},
			line: 1,
		},
		{
			name: "a YAML syntax error carries its line",
			edit: func(s string) string { return s + "  - name: [unclosed\n" },
			want: []string{"t.yaml:"},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Parse("t.yaml", []byte(tc.edit(base)))
			require.Error(t, err)
			var le *LoadError
			require.ErrorAs(t, err, &le)
			msg := err.Error()
			for _, w := range tc.want {
				assert.Contains(t, msg, w)
			}
			if tc.line > 0 {
				assert.Equal(t, tc.line, le.Errors[0].Line, msg)
			}
			assert.True(t, strings.HasPrefix(msg, "t.yaml:"), msg)
		})
	}
}

func TestLoadNamesMissingFile(t *testing.T) {
	_, err := Load(filepath.Join(t.TempDir(), "missing.yaml"))
	require.Error(t, err)
	assert.ErrorIs(t, err, os.ErrNotExist)
	assert.Contains(t, err.Error(), "missing.yaml")
}
