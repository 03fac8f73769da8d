package route53fake

import (
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	r53 "github.com/aws/aws-sdk-go-v2/service/route53"
	"github.com/aws/aws-sdk-go-v2/service/route53/types"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func calculated(ref string, threshold int32, children ...string) *r53.CreateHealthCheckInput {
	return &r53.CreateHealthCheckInput{CallerReference: aws.String(ref), HealthCheckConfig: &types.HealthCheckConfig{
		Type: types.HealthCheckTypeCalculated, HealthThreshold: aws.Int32(threshold), ChildHealthChecks: children,
	}}
}

func TestCalculatedHealthChecks(t *testing.T) {
	s := New(Options{})
	defer s.Close()
	c := client(s)
	a, err := c.CreateHealthCheck(ctx, httpCheck("a", "198.51.99.10", 80))
	require.NoError(t, err)
	b, err := c.CreateHealthCheck(ctx, httpCheck("b", "198.51.99.11", 80))
	require.NoError(t, err)
	ida, idb := aws.ToString(a.HealthCheck.Id), aws.ToString(b.HealthCheck.Id)

	any1, err := c.CreateHealthCheck(ctx, calculated("any", 1, ida, idb))
	require.NoError(t, err)
	all2, err := c.CreateHealthCheck(ctx, calculated("all", 2, ida, idb))
	require.NoError(t, err)
	anyID, allID := aws.ToString(any1.HealthCheck.Id), aws.ToString(all2.HealthCheck.Id)
	assert.Equal(t, []string{ida, idb}, any1.HealthCheck.HealthCheckConfig.ChildHealthChecks)

	cases := []struct {
		name         string
		upA, upB     bool
		wantAny, all bool
	}{
		{name: "both children healthy: both healthy", upA: true, upB: true, wantAny: true, all: true},
		{name: "one child down: threshold 1 stays healthy, threshold 2 does not", upA: false, upB: true, wantAny: true, all: false},
		{name: "both children down: both unhealthy", upA: false, upB: false, wantAny: false, all: false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			s.SetHealth(ida, tc.upA)
			s.SetHealth(idb, tc.upB)
			assert.Equal(t, tc.wantAny, s.Healthy(anyID))
			assert.Equal(t, tc.all, s.Healthy(allID))
		})
	}

	t.Run("a deleted child counts as unhealthy", func(t *testing.T) {
		s.SetHealth(ida, true)
		s.SetHealth(idb, true)
		_, err := c.DeleteHealthCheck(ctx, &r53.DeleteHealthCheckInput{HealthCheckId: aws.String(idb)})
		require.NoError(t, err)
		assert.True(t, s.Healthy(anyID))
		assert.False(t, s.Healthy(allID))
	})
	t.Run("children can be replaced by an update", func(t *testing.T) {
		out, err := c.UpdateHealthCheck(ctx, &r53.UpdateHealthCheckInput{HealthCheckId: aws.String(allID), ChildHealthChecks: []string{ida}, HealthThreshold: aws.Int32(1)})
		require.NoError(t, err)
		assert.Equal(t, []string{ida}, out.HealthCheck.HealthCheckConfig.ChildHealthChecks)
		assert.True(t, s.Healthy(allID))
	})
	t.Run("a CALCULATED check with an endpoint is refused", func(t *testing.T) {
		in := calculated("bad", 1, ida)
		in.HealthCheckConfig.IPAddress = aws.String("198.51.99.12")
		_, err := c.CreateHealthCheck(ctx, in)
		assert.Equal(t, "InvalidInput", apiCode(t, err))
	})
	t.Run("more than 256 children are refused", func(t *testing.T) {
		kids := make([]string, 257)
		for i := range kids {
			kids[i] = aws.ToString(a.HealthCheck.Id) + string(rune('a'+i%26)) + string(rune('a'+i/26))
		}
		_, err := c.CreateHealthCheck(ctx, calculated("many", 1, kids...))
		assert.Equal(t, "InvalidInput", apiCode(t, err))
	})
}
