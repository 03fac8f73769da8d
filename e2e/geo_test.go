//go:build e2e

package e2e

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestGeoFromABuiltDatabase builds an .mmdb with `meridian geo build`, points
// the config at it and checks the answers dig gets for clients (ECS) from
// several places.
func TestGeoFromABuiltDatabase(t *testing.T) {
	dir := t.TempDir()
	csv := filepath.Join(dir, "nets.csv")
	db := filepath.Join(dir, "nets.mmdb")
	require.NoError(t, os.WriteFile(csv, []byte(`network,country,continent,region
# documentation ranges standing in for real country blocks
198.51.100.0/24,FR,EU
203.0.113.0/24,JP,AS
192.0.2.0/25,US,NA,us-west
2001:db8:aa::/48,DE,EU
`), 0o644))
	out := run(t, meridianBin, "geo", "build", csv, db)
	assert.Contains(t, out, "(4 networks)")

	cfg := fmt.Sprintf(`
zones:
  - apex: geo.test
    nameservers: [{name: ns1.geo.test, ipv4: [192.0.2.53]}]
clusters:
  - {name: us-east, region: us-east, continent: NA, country: US}
  - {name: us-west, region: us-west, continent: NA, country: US}
  - {name: eu, region: eu-central, continent: EU, country: DE}
  - {name: ap, region: ap-northeast, continent: AS, country: JP}
geo:
  mmdb: %s
  networks:
    - {cidr: 192.0.2.0/26, region: us-east, country: US, continent: NA}
services:
  - name: www.geo.test
    strategy: geo
    geo:
      rules: [{countries: [FR], clusters: [eu]}]
      default: [us-east]
    endpoints:
      - {address: 10.0.0.1, cluster: us-east}
      - {address: 10.0.0.2, cluster: us-west}
      - {address: 10.0.0.3, cluster: eu}
      - {address: 10.0.0.4, cluster: ap}
`, db)
	m := startMeridian(t, cfg)
	tests := []struct {
		name, subnet, want, scope string
	}{
		{"a French client follows the country rule to eu", "198.51.100.0/24", "10.0.0.3", "24"},
		{"a Japanese client goes to the cluster tagged JP", "203.0.113.0/24", "10.0.0.4", "24"},
		{"the custom network wins over the database", "192.0.2.0/26", "10.0.0.1", "26"},
		{"the database region places a client in us-west", "192.0.2.64/26", "10.0.0.2", "26"},
		{"a German IPv6 client goes to eu", "2001:db8:aa::/48", "10.0.0.3", "48"},
		{"an unknown client gets the default", "100.64.0.0/24", "10.0.0.1", ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			out := m.dig(t, "www.geo.test", "A", "+subnet="+tc.subnet)
			assert.Equal(t, []string{"www.geo.test. 30 IN A " + tc.want}, section(out, "ANSWER"))
			if tc.scope != "" {
				assert.Contains(t, out, "CLIENT-SUBNET: "+tc.subnet+"/"+tc.scope)
			}
		})
	}
}
