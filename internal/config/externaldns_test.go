package config

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestExternalDNSSection(t *testing.T) {
	for _, tc := range []struct {
		name    string
		section string
		want    []string // substrings of the error ("": accepted)
	}{
		{"a listener with one client per cluster is accepted",
			`{listen: 127.0.0.1:8888, clients: [{cluster: east, token_file: /run/east}, {cluster: west, token_file: /run/west}], health_check: {kind: tcp, port: 443}}`, nil},
		{"a listen address that is no IP:port is refused",
			`{listen: localhost, clients: [{cluster: east, token_file: /run/east}]}`, []string{"server.externaldns.listen", `"localhost" is not an IP:port address`}},
		{"a listener without clients is refused",
			`{listen: 127.0.0.1:8888}`, []string{"server.externaldns.clients", "is empty"}},
		{"a client without a token file is refused",
			`{listen: 127.0.0.1:8888, clients: [{cluster: east}]}`, []string{"server.externaldns.clients[0].token_file", "is required"}},
		{"two clients of one cluster are refused",
			`{listen: 127.0.0.1:8888, clients: [{cluster: east, token_file: /a}, {cluster: east, token_file: /b}]}`, []string{"server.externaldns.clients[1].cluster", "one token per cluster"}},
		{"a record limit out of range is refused",
			`{listen: 127.0.0.1:8888, clients: [{cluster: east, token_file: /a}], max_records: -1}`, []string{"server.externaldns.max_records", "out of range"}},
		{"an unknown health check kind is refused",
			`{listen: 127.0.0.1:8888, clients: [{cluster: east, token_file: /a}], health_check: {kind: icmp}}`, []string{"server.externaldns.health_check.kind", `"icmp" is not allowed`}},
		{"a certificate without its key is refused",
			`{listen: 127.0.0.1:8888, clients: [{cluster: east, token_file: /a}], tls: {cert_file: /tls.crt}}`, []string{"server.externaldns.tls.key_file", "is required with server.externaldns.tls"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f, err := Parse("x.yaml", []byte("server:\n  externaldns: "+tc.section+"\n"+base))
			if tc.want == nil {
				require.NoError(t, err)
				require.NotNil(t, f.Server.ExternalDNS)
				assert.Len(t, f.Server.ExternalDNS.Clients, 2)
				return
			}
			require.Error(t, err)
			for _, w := range tc.want {
				assert.Contains(t, err.Error(), w)
			}
		})
	}
}
