package meridian

import (
	"testing"

	"github.com/coredns/caddy"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestParse(t *testing.T) {
	tests := []struct {
		name    string
		input   string
		err     string // substring; "" = no error
		zones   []string
		config  string
		ring    bool
		geoip   string
		through string // a name fallthrough must cover
	}{
		{"a config file is all it needs", "meridian {\n config /etc/meridian.yaml\n}", "", []string{}, "/etc/meridian.yaml", false, "", ""},
		{"zones come from the arguments", "meridian gslb.example.com example.net {\n config m.yaml\n}", "", []string{"gslb.example.com.", "example.net."}, "m.yaml", false, "", ""},
		{"every property is read", "meridian {\n config m.yaml\n ring\n geoip /var/geo.mmdb\n fallthrough example.org\n}", "", []string{}, "m.yaml", true, "/var/geo.mmdb", "a.example.org."},
		{"the config property is required", "meridian {\n ring\n}", "Testfile:3 - Error during parsing: the config property is required", nil, "", false, "", ""},
		{"config takes exactly one file", "meridian {\n config a.yaml b.yaml\n}", "Testfile:2 - Error during parsing: config needs exactly one argument", nil, "", false, "", ""},
		{"ring takes no arguments", "meridian {\n config m.yaml\n ring 10.0.0.1:7946\n}", "Testfile:3 - Error during parsing: ring takes no arguments", nil, "", false, "", ""},
		{"geoip takes exactly one file", "meridian {\n config m.yaml\n geoip\n}", "Testfile:3 - Error during parsing: geoip needs exactly one argument", nil, "", false, "", ""},
		{"an unknown property names itself and the allowed ones", "meridian {\n config m.yaml\n upstream 8.8.8.8\n}", `Testfile:3 - Error during parsing: unknown property "upstream" (allowed: config, ring, geoip, fallthrough)`, nil, "", false, "", ""},
		{"the plugin may appear once", "meridian {\n config m.yaml\n}\nmeridian {\n config n.yaml\n}", "this plugin", nil, "", false, "", ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c := caddy.NewTestController("dns", tc.input)
			m, err := parse(c)
			if tc.err != "" {
				require.Error(t, err)
				assert.Contains(t, err.Error(), tc.err)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tc.zones, m.Zones)
			assert.Equal(t, tc.config, m.ConfigPath)
			assert.Equal(t, tc.ring, m.Ring)
			assert.Equal(t, tc.geoip, m.GeoIP)
			if tc.through != "" {
				assert.True(t, m.Fall.Through(tc.through))
			}
		})
	}
}
