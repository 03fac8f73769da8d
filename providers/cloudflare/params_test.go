package cloudflare

import (
	"encoding/json"
	"testing"

	"github.com/cloudflare/cloudflare-go/v6/dns"
	"github.com/cloudflare/cloudflare-go/v6/load_balancers"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// jsonOf marshals a request body as the SDK sends it.
func jsonOf(t *testing.T, v json.Marshaler) map[string]any {
	t.Helper()
	b, err := v.MarshalJSON()
	require.NoError(t, err)
	var out map[string]any
	require.NoError(t, json.Unmarshal(b, &out))
	return out
}

func TestUpdateRequestsSendWhatCreatesSend(t *testing.T) {
	httpMonitor := Monitor{ID: "m1", Type: "https", Description: "d", Method: "GET", Path: "/healthz", Header: map[string][]string{"Host": {"a.example"}},
		Port: 8443, Timeout: 3, Retries: 1, Interval: 15, ExpectedCodes: "2xx", ExpectedBody: "ok", FollowRedirects: true, AllowInsecure: true,
		ConsecutiveUp: 2, ConsecutiveDown: 3}
	tcpMonitor := Monitor{ID: "m2", Type: "tcp", Description: "d", Port: 443, Timeout: 2, Retries: 0, Interval: 10, ConsecutiveUp: 1, ConsecutiveDown: 2}
	for _, tc := range []struct {
		name string
		m    Monitor
	}{{"an HTTPS monitor's update carries every field of its create", httpMonitor}, {"a TCP monitor's update leaves out the HTTP fields as its create does", tcpMonitor}} {
		t.Run(tc.name, func(t *testing.T) {
			create := monitorParams("acct", tc.m)
			update := sameFields[load_balancers.MonitorUpdateParams](create)
			assert.Equal(t, jsonOf(t, create), jsonOf(t, update))
			assert.Equal(t, "acct", update.AccountID.Value)
			assert.Equal(t, load_balancers.MonitorUpdateParamsType(tc.m.Type), update.Type.Value)
		})
	}
	t.Run("a pool's update carries every field of its create", func(t *testing.T) {
		create := poolParams("acct", Pool{ID: "p1", Name: "web-eu", Description: "d", Enabled: true, MinimumOrigins: 1, Monitor: "m1",
			Origins: []Origin{{Name: "a", Address: "192.0.2.1", Enabled: true, Weight: 0.5}}})
		update := sameFields[load_balancers.PoolUpdateParams](create)
		assert.Equal(t, jsonOf(t, create), jsonOf(t, update))
	})
	t.Run("a load balancer's update carries every field of its create", func(t *testing.T) {
		create := lbParams("zone", LoadBalancer{ID: "l1", Name: "www.example.com", Description: "d", Enabled: true, TTL: 30, SteeringPolicy: "random",
			FallbackPool: "p1", DefaultPools: []string{"p1", "p2"}, RegionPools: map[string][]string{"WEU": {"p1"}},
			PoolWeights: map[string]float64{"p1": 0.25, "p2": 0.75}, DefaultWeight: 0.5})
		update := sameFields[load_balancers.LoadBalancerUpdateParams](create)
		assert.Equal(t, jsonOf(t, create), jsonOf(t, update))
		assert.Equal(t, "zone", update.ZoneID.Value)
	})
	t.Run("a record's edit carries every field of its create", func(t *testing.T) {
		create, err := recordBody(DNSRecord{Name: "www.example.com", Type: "DS", Content: "2371 13 2 abcd", TTL: 60})
		require.NoError(t, err)
		edit := sameFields[dns.RecordEditParamsBody](create)
		assert.Equal(t, jsonOf(t, create), jsonOf(t, edit))
	})
	t.Run("a field the other request lacks is a programming error", func(t *testing.T) {
		assert.Panics(t, func() { sameFields[load_balancers.LoadBalancerNewParams](load_balancers.LoadBalancerUpdateParams{}) })
	})
}
