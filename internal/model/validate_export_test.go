package model

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestCheckHostNameIsTheCheckOfServiceNames(t *testing.T) {
	for _, tc := range []struct {
		name, in string
		ok       bool
	}{
		{"a host name is valid", "app.gslb.example.com", true},
		{"punycode is valid", "xn--bcher-kva.gslb.example.com", true},
		{"a name that is not ASCII is refused", "bücher.gslb.example.com", false},
		{"a wildcard is refused", "*.gslb.example.com", false},
		{"an empty name is refused", " ", false},
		{"a label longer than 63 bytes is refused", strings.Repeat("a", 64) + ".example.com", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := CheckHostName(tc.in)
			if tc.ok {
				require.NoError(t, err)
				return
			}
			require.Error(t, err)
		})
	}
}

func TestValidateHealthCheckIsTheCheckOfAServicesHealthCheck(t *testing.T) {
	require.NoError(t, ValidateHealthCheck(&Check{Kind: CheckHTTP, Port: 8080, Path: "/healthz"}, false))
	require.NoError(t, ValidateHealthCheck(&Check{Kind: CheckNone}, true))
	assert.ErrorContains(t, ValidateHealthCheck(&Check{Kind: CheckHTTP}, true), "CNAME endpoints cannot be probed")
	assert.ErrorContains(t, ValidateHealthCheck(&Check{Kind: CheckTCP}, false), "health_check.port: is required for tcp checks")
}
