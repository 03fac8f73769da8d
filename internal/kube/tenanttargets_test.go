package kube

import (
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/meridian-gslb/meridian/internal/model"
)

func TestTenantTargetsApplyToEveryAddressOfADNSEndpoint(t *testing.T) {
	const name = "app.gslb.example.com."
	tests := []struct {
		name      string
		loopback  bool // tenant_targets.allow_loopback
		eps       []externalEndpoint
		served    []string // the addresses answered for name; nil: name not served
		problems  []string // substrings, one per problem
		hostnames []string // the names the object serves, when it is narrowed
	}{
		{name: "a unicast address is served",
			eps: []externalEndpoint{xep("app.gslb.example.com", "A", "198.51.100.1")}, served: []string{"198.51.100.1"}},
		{name: "the metadata service's link-local address is refused and the name keeps its other targets",
			eps:      []externalEndpoint{xep("app.gslb.example.com", "A", "169.254.169.254", "198.51.100.1")},
			served:   []string{"198.51.100.1"},
			problems: []string{"not served: a target of app.gslb.example.com. (tenant_targets): 169.254.169.254 is a link-local address"}},
		{name: "unspecified, multicast and reserved addresses are refused",
			eps: []externalEndpoint{xep("app.gslb.example.com", "A", "0.0.0.0", "224.0.0.1", "240.0.0.1", "198.51.100.1"),
				xep("app.gslb.example.com", "AAAA", "::", "ff02::1", "fe80::1")},
			served: []string{"198.51.100.1"},
			problems: []string{"0.0.0.0 is an unspecified address", "224.0.0.1 is a multicast address", "240.0.0.1 is a reserved or broadcast address",
				":: is an unspecified address", "ff02::1 is a multicast address", "fe80::1 is a link-local address"}},
		{name: "a loopback address is refused by default",
			eps:      []externalEndpoint{xep("app.gslb.example.com", "A", "127.0.0.1"), xep("b.gslb.example.com", "AAAA", "::1", "2001:db8::1")},
			problems: []string{"127.0.0.1 is a loopback address (allowed only with tenant_targets.allow_loopback)", "::1 is a loopback address"},
			// app has no target left, so the object does not serve it.
			hostnames: []string{"b.gslb.example.com."}},
		{name: "a loopback address is served with allow_loopback",
			loopback: true,
			eps:      []externalEndpoint{xep("app.gslb.example.com", "A", "127.0.0.1")}, served: []string{"127.0.0.1"}},
		{name: "a CNAME target is a host name, not an address, and is kept",
			eps: []externalEndpoint{xep("app.gslb.example.com", "CNAME", "lb.example.net")}, served: []string{"lb.example.net."}},
		{name: "a name outside the served zones is another provider's and is not reported",
			eps:    []externalEndpoint{xep("app.gslb.example.com", "A", "198.51.100.1"), xep("app.other.example.org", "A", "169.254.169.254")},
			served: []string{"198.51.100.1"}, hostnames: []string{name}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			o := dnsEndpointObj(t, "east", "shop", "dns", 1, tt.eps...)
			b := base()
			b.TenantTargets = model.TenantTargets{AllowLoopback: tt.loopback}
			r := Build([]Object{o}, b)
			var served []string
			for _, s := range r.Services {
				if s.Name != name {
					continue
				}
				for _, e := range s.Endpoints {
					served = append(served, e.Target())
				}
			}
			assert.Equal(t, tt.served, served)
			require.Len(t, r.Problems[o.Ref], len(tt.problems), "%q", r.Problems[o.Ref])
			for _, p := range tt.problems {
				assert.True(t, slicesContainSub(r.Problems[o.Ref], p), "a problem says %q: %q", p, r.Problems[o.Ref])
			}
			if tt.hostnames != nil {
				assert.Equal(t, tt.hostnames, r.Scoped[o.Ref])
				assert.Equal(t, tt.hostnames, r.hostnamesOf(o))
			}
		})
	}
	t.Run("refused targets past the first few are counted in one problem", func(t *testing.T) {
		ts := make([]string, 40)
		for i := range ts {
			ts[i] = fmt.Sprintf("169.254.0.%d", i+1)
		}
		o := dnsEndpointObj(t, "east", "shop", "dns", 1, xep("app.gslb.example.com", "A", append(ts, "198.51.100.1")...))
		r := Build([]Object{o}, base())
		require.Len(t, r.Problems[o.Ref], maxDNSEndpointProblems+1)
		assert.True(t, slicesContainSub(r.Problems[o.Ref], "not served: 30 more targets refused by tenant_targets are not listed (the first 10 are)"), "%q", r.Problems[o.Ref])
	})
}

func slicesContainSub(list []string, sub string) bool {
	for _, s := range list {
		if strings.Contains(s, sub) {
			return true
		}
	}
	return false
}
