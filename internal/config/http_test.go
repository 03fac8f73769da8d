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

	f, err = Parse("t.yaml", []byte("server: {http: {probe_listen: \"0.0.0.0:8081\", allowed_hosts: [status.example.com, \"*.gslb.example.com\", \"*\"]}}\n"+base))
	require.NoError(t, err, "a probe listener, names, a wildcard and a star are accepted")
	assert.Equal(t, "0.0.0.0:8081", f.Server.HTTP.ProbeListen)

	tests := []struct{ name, server, want string }{
		{"a negative connection cap is refused", "{http: {max_connections: -1}}", "server.http.max_connections: -1 is out of range (allowed 1..1000000; 0 = default 1024)"},
		{"a negative stream cap is refused", "{http: {max_event_streams: -3}}", "server.http.max_event_streams: -3 is out of range"},
		{"tls without a key file is refused", "{http: {tls: {cert_file: /c.pem}}}", "server.http.tls.key_file: is required with server.http.tls"},
		{"tls without a certificate is refused", "{http: {tls: {key_file: /k.pem}}}", "server.http.tls.cert_file: is required"},
		{"an unknown tls field names the allowed ones", "{http: {tls: {cert: /c.pem}}}", "allowed: cert_file, key_file"},
		{"a probe listener that is not IP:port is refused", "{http: {probe_listen: \"probes\"}}", `server.http.probe_listen: "probes" is not an IP:port address`},
		{"a probe listener on the main address is refused", "{http: {listen: \"0.0.0.0:8080\", probe_listen: \"0.0.0.0:8080\"}}", "is also server.http.listen or read_only_listen"},
		{"an allowed host with a port is refused", "{http: {allowed_hosts: [\"status.example.com:8080\"]}}", `server.http.allowed_hosts[0]: "status.example.com:8080" is not a host name`},
		{"an allowed host with a scheme is refused", "{http: {allowed_hosts: [ok.example, \"https://x.example\"]}}", `server.http.allowed_hosts[1]: "https://x.example" is not a host name`},
		{"an allowed host that is an address is refused as needless", "{http: {allowed_hosts: [10.0.0.1]}}", "is an IP address: addresses are always allowed"},
		{"an empty allowed host is refused", "{http: {allowed_hosts: [\"\"]}}", "server.http.allowed_hosts[0]: \"\" is empty"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Parse("t.yaml", []byte("server: "+tc.server+"\n"+base))
			require.Error(t, err)
			assert.Contains(t, err.Error(), tc.want)
		})
	}
}
