package app

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestTheWebhookWarnsWhenTokensCrossTheNetworkInClear(t *testing.T) {
	for _, tc := range []struct {
		name   string
		listen string
		tls    bool
		warn   bool
	}{
		{"plain HTTP on every address warns", "0.0.0.0:8888", false, true},
		{"plain HTTP on a routable address warns", "10.0.0.5:8888", false, true},
		{"plain HTTP on every IPv6 address warns", "[::]:8888", false, true},
		{"plain HTTP on IPv4 loopback does not warn", "127.0.0.1:8888", false, false},
		{"plain HTTP on IPv6 loopback does not warn", "[::1]:8888", false, false},
		{"TLS on every address does not warn", "0.0.0.0:8888", true, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			assert.Equal(t, tc.warn, tokensInClear(tc.listen, tc.tls))
		})
	}
}
