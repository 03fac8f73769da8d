package main

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/meridian-gslb/meridian/internal/config"
)

func TestConfig(t *testing.T) {
	for _, tc := range []struct {
		name   string
		exempt bool
		want   []string
	}{
		{"the config with the exempt scenario exempts its source /24", true, []string{"127.0.9.0/24"}},
		{"the config without it has no exempt list, for older binaries", false, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f, err := config.Parse("rrl.yaml", []byte(meridianConfig("127.0.0.1:5397", 50, tc.exempt)))
			require.NoError(t, err)
			assert.Len(t, f.Services, 50)
			assert.Equal(t, []string{"127.0.0.1:5397"}, f.Server.DNS.Listen)
			assert.True(t, *f.Server.DNS.RRL.Enabled, "RRL at its defaults")
			assert.Equal(t, config.DefaultRRLResponsesPerSec, f.Server.DNS.RRL.ResponsesPerSec)
			assert.Equal(t, tc.want, f.Server.DNS.RRL.Exempt)
		})
	}
}
