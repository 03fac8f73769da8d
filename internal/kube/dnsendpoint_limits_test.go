package kube

import (
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

func manyTargets(n int, target func(int) string) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = target(i)
	}
	return out
}

func TestADNSEndpointIsReadWithinItsSizeLimits(t *testing.T) {
	bad := func(i int) string { return fmt.Sprintf("bad-%d", i) }
	tests := []struct {
		name     string
		eps      []externalEndpoint
		targets  int // of app.gslb.example.com.
		problems []string
	}{
		{name: "an endpoint with more targets than the limit is read up to the limit and says so",
			eps:     []externalEndpoint{xep("app.gslb.example.com", "A", manyTargets(100_000, distinctV4)...)},
			targets: MaxDNSEndpointTargets,
			problems: []string{fmt.Sprintf("not served: spec.endpoints[0] (app.gslb.example.com A) lists more than %d targets (an endpoint is read up to %d): the others are not read",
				MaxDNSEndpointTargets, MaxDNSEndpointTargets)}},
		{name: "an object with more endpoints than the limit is read up to the limit and says so",
			eps: func() []externalEndpoint {
				out := make([]externalEndpoint, MaxDNSEndpointEndpoints+5)
				for i := range out {
					out[i] = xep("app.gslb.example.com", "A", distinctV4(i))
				}
				return out
			}(),
			targets: MaxDNSEndpointEndpoints,
			problems: []string{fmt.Sprintf("not served: spec.endpoints lists more than %d entries (a DNSEndpoint is read up to %d): the others are not read (split the DNSEndpoint)",
				MaxDNSEndpointEndpoints, MaxDNSEndpointEndpoints)}},
		{name: "bad targets past the first few are counted in one problem",
			eps:     []externalEndpoint{xep("app.gslb.example.com", "A", append([]string{"198.51.100.1"}, manyTargets(MaxDNSEndpointTargets-1, bad)...)...)},
			targets: 1},
		{name: "a target repeated across endpoints of one name is served once",
			eps:     []externalEndpoint{xep("app.gslb.example.com", "A", "198.51.100.1", "198.51.100.1"), xep("app.gslb.example.com", "A", "198.51.100.1")},
			targets: 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := ReadDNSEndpoint(nil, tt.eps)
			assert.Len(t, r.Targets["app.gslb.example.com."], tt.targets)
			if tt.problems != nil {
				assert.Equal(t, tt.problems, r.Problems)
			}
			assert.LessOrEqual(t, len(r.Problems), maxDNSEndpointProblems+1, "the problems are bounded")
		})
	}
	t.Run("problems past the first few are counted in one", func(t *testing.T) {
		r := ReadDNSEndpoint(nil, []externalEndpoint{xep("app.gslb.example.com", "A", append([]string{"198.51.100.1"}, manyTargets(MaxDNSEndpointTargets-1, bad)...)...)})
		require.Len(t, r.Problems, maxDNSEndpointProblems+1)
		assert.Equal(t, `not served: spec.endpoints[0] (app.gslb.example.com A): target "bad-0" is not an IPv4 address`, r.Problems[0])
		assert.Equal(t, fmt.Sprintf("not served: %d more problems of spec.endpoints are not listed (the first %d are)", MaxDNSEndpointTargets-1-maxDNSEndpointProblems, maxDNSEndpointProblems),
			r.Problems[maxDNSEndpointProblems])
	})
}

func TestTheInformerKeepsOfABigDNSEndpointOnlyWhatIsRead(t *testing.T) {
	eps := make([]any, MaxDNSEndpointEndpoints+50)
	for i := range eps {
		ts := make([]any, 1000)
		for j := range ts {
			ts[j] = distinctV4(j)
		}
		eps[i] = map[string]any{"dnsName": "app.gslb.example.com", "recordType": "A", "targets": ts}
	}
	u := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "externaldns.k8s.io/v1alpha1", "kind": KindDNSEndpoint,
		"metadata": map[string]any{"namespace": "shop", "name": "big"},
		"spec":     map[string]any{"endpoints": eps},
	}}
	s, err := slimDNSEndpoint(u)
	require.NoError(t, err)
	kept, _, _ := unstructured.NestedSlice(s.(*unstructured.Unstructured).Object, "spec", "endpoints")
	require.Len(t, kept, MaxDNSEndpointEndpoints+1, "one past the limit, so the excess is reported")
	assert.Len(t, kept[0].(map[string]any)["targets"], MaxDNSEndpointTargets+1)

	m := gwMember(t)
	in, watched := m.dnsEndpoints.read(s.(*unstructured.Unstructured))
	require.True(t, watched)
	assert.Len(t, in.targets, MaxDNSEndpointTargets)
	assert.True(t, strings.HasPrefix(in.problems[0], "not served: spec.endpoints lists more than"), in.problems)
	assert.Len(t, in.problems, maxDNSEndpointProblems+1, "one problem per endpoint over the limit, but listed up to the first few")
}
