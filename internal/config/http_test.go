package config

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestServerHTTPLimitsAndTLS(t *testing.T) {
	f, err := Parse("t.yaml", []byte(base))
	require.NoError(t, err)
	assert.Equal(t, DefaultHTTPMaxConns, f.Server.HTTP.MaxConnections, "max_connections defaults to 1024")
	assert.Equal(t, DefaultHTTPMaxStreams, f.Server.HTTP.MaxEventStreams, "max_event_streams defaults to 64")
	assert.Nil(t, f.Server.HTTP.TLS, "plain HTTP by default")

	f, err = Parse("t.yaml", []byte("server: {http: {max_connections: 50, max_event_streams: 5, tls: {cert_file: /c.pem, key_file: /k.pem}}}\n"+base))
	require.NoError(t, err)
	assert.Equal(t, 50, f.Server.HTTP.MaxConnections)
	assert.Equal(t, 5, f.Server.HTTP.MaxEventStreams)
	assert.Equal(t, &TLS{CertFile: "/c.pem", KeyFile: "/k.pem"}, f.Server.HTTP.TLS)

	tests := []struct{ name, server, want string }{
		{"a negative connection cap is refused", "{http: {max_connections: -1}}", "server.http.max_connections: -1 is out of range (allowed 1..1000000; 0 = default 1024)"},
		{"a negative stream cap is refused", "{http: {max_event_streams: -3}}", "server.http.max_event_streams: -3 is out of range"},
		{"tls without a key file is refused", "{http: {tls: {cert_file: /c.pem}}}", "server.http.tls.key_file: is required with server.http.tls"},
		{"tls without a certificate is refused", "{http: {tls: {key_file: /k.pem}}}", "server.http.tls.cert_file: is required"},
		{"an unknown tls field names the allowed ones", "{http: {tls: {cert: /c.pem}}}", "allowed: cert_file, key_file"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Parse("t.yaml", []byte("server: "+tc.server+"\n"+base))
			require.Error(t, err)
			assert.Contains(t, err.Error(), tc.want)
		})
	}
}
