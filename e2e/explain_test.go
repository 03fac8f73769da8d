//go:build e2e

package e2e

import (
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/meridian-gslb/meridian/internal/engine"
)

const explainConfig = `
zones:
  - apex: gslb.test
    nameservers: [{name: ns1.gslb.test, ipv4: [192.0.2.53]}]
clusters:
  - {name: east, region: us-east, continent: NA, country: US}
  - {name: eu, region: eu-west, continent: EU, country: DE}
geo:
  networks:
    - {cidr: 10.3.0.0/16, region: eu-west, country: DE, continent: EU}
services:
  - name: app.gslb.test
    endpoints:
      - {address: 192.0.2.1, cluster: east, weight: 700}
      - {address: 192.0.2.2, cluster: eu, weight: 300}
      - {address: 192.0.2.3, cluster: eu, drain: true}
  - name: www.gslb.test
    strategy: geo
    geo: {default: [east]}
    endpoints:
      - {address: 203.0.113.1, cluster: east}
      - {address: 203.0.113.3, cluster: eu}
`

// TestExplainCommand runs `meridian explain` against a running serve and
// checks the report names the path to the answer.
func TestExplainCommand(t *testing.T) {
	m := startMeridian(t, explainConfig)
	addr := strings.TrimPrefix(m.http, "http://")
	tests := []struct {
		name string
		args []string
		want []string
	}{
		{"a weighted name shows its zone, strategy and candidates with shares", []string{"app.gslb.test"}, []string{
			"zone:     gslb.test.", "strategy: weighted", "client:   none given",
			"192.0.2.1", "70%", "192.0.2.2", "30%", "192.0.2.3", "drained (drain: true)", "drawn by weight",
		}},
		{"a geo name with a subnet in a mapped network shows the location source and bucket", []string{"www.gslb.test", "--subnet", "10.3.4.0/24"}, []string{
			"zone:     gslb.test.", "strategy: geo", "10.3.4.0/24 (ECS subnet)",
			"located by custom map: region eu-west, country DE, continent EU", "scope:    /16",
			"203.0.113.3", "203.0.113.1", "not in the client's geo bucket [eu]", "www.gslb.test. 30 IN A 203.0.113.3",
		}},
		{"a geo name from an unmapped source address gets the default bucket", []string{"www.gslb.test", "--client", "100.64.0.1"}, []string{
			"100.64.0.1 (source address)", "location: not located", "default bucket", "www.gslb.test. 30 IN A 203.0.113.1",
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			out := run(t, meridianBin, append([]string{"explain", "--http", addr}, tc.args...)...)
			for _, w := range tc.want {
				assert.Contains(t, out, w)
			}
		})
	}

	t.Run("the JSON output decodes as an explanation", func(t *testing.T) {
		out := run(t, meridianBin, "explain", "--http", addr, "--json", "--subnet", "10.3.0.0/16", "www.gslb.test")
		var e engine.Explanation
		require.NoError(t, json.Unmarshal([]byte(out), &e), out)
		assert.Equal(t, "geo", e.Strategy)
		require.NotNil(t, e.Client)
		assert.Equal(t, "custom map", e.Client.LocatedBy)
	})

	t.Run("a bad parameter is a 400 naming it", func(t *testing.T) {
		resp, err := http.Get(m.http + "/v1/explain?name=app.gslb.test&subnet=not-a-cidr")
		require.NoError(t, err)
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		assert.Equal(t, http.StatusBadRequest, resp.StatusCode)
		assert.Contains(t, string(body), "parameter subnet")
		assert.Contains(t, string(body), "allowed:")
	})

	t.Run("the command reports the server's error", func(t *testing.T) {
		out := runNoFail(meridianBin, "explain", "--http", addr, "--type", "BOGUS", "app.gslb.test")
		assert.Contains(t, out, "parameter type")
	})
}
