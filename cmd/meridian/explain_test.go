package main

import (
	"bytes"
	"net/netip"
	"testing"

	"github.com/miekg/dns"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/meridian-gslb/meridian/internal/config"
	"github.com/meridian-gslb/meridian/internal/engine"
)

const stickyConfig = `
zones:
  - apex: s.test
    nameservers: [{name: ns1.s.test, ipv4: [192.0.2.53]}]
clusters:
  - {name: east, region: us-east}
  - {name: west, region: us-west}
services:
  - name: w.s.test
    sticky: subnet
    endpoints:
      - {address: 192.0.2.1, cluster: east, weight: 700}
      - {address: 192.0.2.2, cluster: west, weight: 300}
  - name: p.s.test
    endpoints:
      - {address: 192.0.2.1, cluster: east, weight: 700}
      - {address: 192.0.2.2, cluster: west, weight: 300}
`

func TestPrintExplanation(t *testing.T) {
	f, err := config.Parse("s.yaml", []byte(stickyConfig))
	require.NoError(t, err)
	s, err := engine.Compile(&f.Desired, engine.Options{})
	require.NoError(t, err)
	sub := netip.MustParsePrefix("203.0.113.0/24")
	client := engine.Client{Addr: sub.Addr(), Bits: 24, HasECS: true}
	tests := []struct {
		name    string
		qname   string
		want    []string
		notWant []string
	}{
		{"a sticky answer names the network, what it gets, the scores and ranks", "w.s.test.",
			[]string{"  sticky:   subnet 203.0.113.0/24 gets 192.0.2.", "SCORE", "RANK", "  scope:    /24",
				"answer (sticky: each network gets its highest-ranked one of these):", "weighted rendezvous hashing"}, nil},
		{"a plain weighted answer has no sticky line and no score column", "p.s.test.",
			[]string{"answer (each query gets 1 of these, drawn by weight):"}, []string{"sticky:", "SCORE"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var out bytes.Buffer
			printExplanation(&out, s.Explain(tc.qname, dns.TypeA, client, true), "")
			for _, w := range tc.want {
				assert.Contains(t, out.String(), w)
			}
			for _, w := range tc.notWant {
				assert.NotContains(t, out.String(), w)
			}
		})
	}
}
