package meridian

import (
	"context"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/coredns/coredns/plugin/pkg/dnstest"
	"github.com/coredns/coredns/plugin/test"
	"github.com/miekg/dns"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestServeDNSHonoursTheECSTrustList checks that geo.ecs_trusted, which
// the engine applies, holds inside CoreDNS too: ECS from 10.3.1.0/24 (eu)
// is used only when the query's source is trusted.
func TestServeDNSHonoursTheECSTrustList(t *testing.T) {
	for _, tc := range []struct {
		name   string
		source string
		answer string
		scope  uint8
	}{
		{"ECS from a trusted resolver picks the subnet's answer", "192.0.2.10", "203.0.113.3", 16},
		{"ECS from an untrusted source is ignored: source address, scope 0", "10.240.0.1", "203.0.113.1", 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m := newPlugin(t, func(m *Meridian) {
				require.NoError(t, os.WriteFile(m.ConfigPath, []byte(withTrustList("[192.0.2.0/24]")), 0o644))
			})
			req := new(dns.Msg)
			req.SetQuestion("www.gslb.test.", dns.TypeA)
			req.SetEdns0(1232, false)
			req.IsEdns0().Option = append(req.IsEdns0().Option, &dns.EDNS0_SUBNET{Code: dns.EDNS0SUBNET, Family: 1, SourceNetmask: 24, Address: net.ParseIP("10.3.1.0").To4()})
			rec := dnstest.NewRecorder(&test.ResponseWriter{RemoteIP: tc.source})
			_, err := m.ServeDNS(context.Background(), rec, req)
			require.NoError(t, err)
			require.Len(t, rec.Msg.Answer, 1)
			assert.Equal(t, tc.answer, rec.Msg.Answer[0].(*dns.A).A.String())
			var ecs *dns.EDNS0_SUBNET
			for _, o := range rec.Msg.IsEdns0().Option {
				ecs, _ = o.(*dns.EDNS0_SUBNET)
			}
			require.NotNil(t, ecs, "the ECS option is echoed either way")
			assert.Equal(t, tc.scope, ecs.SourceScope)
		})
	}
}

func TestAnInvalidECSTrustListStopsStartupWithItsLine(t *testing.T) {
	p := filepath.Join(t.TempDir(), "bad.yaml")
	require.NoError(t, os.WriteFile(p, []byte(withTrustList("[192.0.2.1/24]")), 0o644))
	err := (&Meridian{Zones: []string{"."}, ConfigPath: p}).Start()
	require.Error(t, err)
	assert.Contains(t, err.Error(), "bad.yaml:")
	assert.Contains(t, err.Error(), `geo.ecs_trusted[0]: "192.0.2.1/24" has host bits set (did you mean 192.0.2.0/24?)`)
}

// withTrustList is testConfig with geo.ecs_trusted set to list.
func withTrustList(list string) string {
	out := strings.Replace(testConfig, "geo:\n", "geo:\n  ecs_trusted: "+list+"\n", 1)
	if out == testConfig {
		panic("testConfig has no geo section")
	}
	return out
}
