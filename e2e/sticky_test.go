//go:build e2e

package e2e

import (
	"fmt"
	"net/netip"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

const stickyConfig = `
zones:
  - apex: sticky.test
    nameservers: [{name: ns1.sticky.test, ipv4: [192.0.2.53]}]
clusters:
  - {name: east, region: us-east}
  - {name: west, region: us-west}
services:
  - name: app.sticky.test
    sticky: subnet
    endpoints:
      - {address: 192.0.2.1, cluster: east, weight: 700}
      - {address: 192.0.2.2, cluster: west, weight: 300}
      - {address: "2001:db8::1", cluster: east, weight: 700}
      - {address: "2001:db8::2", cluster: west, weight: 300}
`

// TestStickyAnswersWithDig asks two separately started meridian processes
// (two nodes) with dig for many client subnets: each subnet gets one answer,
// again and again and from both nodes, with ECS scope 24 (56), and the
// answer is the one `meridian explain --subnet` names.
func TestStickyAnswersWithDig(t *testing.T) {
	a, b := startMeridian(t, stickyConfig), startMeridian(t, stickyConfig)
	answer := func(m *instance, qtype, subnet string) (string, string) {
		out := m.dig(t, "app.sticky.test", qtype, "+subnet="+subnet)
		require.Equal(t, "NOERROR", status(out), out)
		ans := section(out, "ANSWER")
		require.Len(t, ans, 1, out)
		f := strings.Fields(ans[0])
		return f[len(f)-1], out
	}
	seen := map[string]int{}
	for i := range 20 {
		for _, q := range []struct{ qtype, subnet, scope string }{
			{"A", fmt.Sprintf("198.%d.%d.0/24", 18+i%2, 7*i), "/24"},
			{"AAAA", netip.MustParsePrefix(fmt.Sprintf("2001:db8:%x:%x00::/56", i+1, 3*i)).String(), "/56"},
		} {
			first, out := answer(a, q.qtype, q.subnet)
			assert.Contains(t, out, "CLIENT-SUBNET: "+q.subnet+"/"+strings.TrimPrefix(q.scope, "/"), "the reply's scope is the sticky network")
			seen[first]++
			for range 2 {
				again, _ := answer(a, q.qtype, q.subnet)
				assert.Equal(t, first, again, "%s keeps its answer on node a", q.subnet)
			}
			other, _ := answer(b, q.qtype, q.subnet)
			assert.Equal(t, first, other, "%s gets the same answer from node b", q.subnet)
			if i%10 == 0 {
				exp := run(t, meridianBin, "explain", "--http", a.http, "--type", q.qtype, "--subnet", q.subnet, "app.sticky.test")
				assert.Contains(t, exp, "sticky:   subnet "+q.subnet+" gets "+first, exp)
			}
		}
	}
	for _, target := range []string{"192.0.2.1", "192.0.2.2", "2001:db8::1", "2001:db8::2"} {
		assert.Positive(t, seen[target], "some subnet gets %s: %v", target, seen)
	}
	t.Logf("first answers over 20 IPv4 and 20 IPv6 subnets: %v", seen)
}
