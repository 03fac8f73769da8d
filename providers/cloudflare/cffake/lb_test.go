package cffake

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/cloudflare/cloudflare-go/v6/load_balancers"
	"github.com/cloudflare/cloudflare-go/v6/option"
	"github.com/cloudflare/cloudflare-go/v6/zones"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// lbEnv drives the fake through cloudflare-go v6's load_balancers services,
// as the adapter does.
type lbEnv struct {
	srv      *Server
	zone     string // zone id of example.com
	acct     string
	lbs      *load_balancers.LoadBalancerService
	pools    *load_balancers.PoolService
	monitors *load_balancers.MonitorService
	zones    *zones.ZoneService
}

func startLB(t *testing.T) *lbEnv {
	srv := New(token)
	hc := &http.Client{Transport: &http.Transport{}}
	t.Cleanup(func() { hc.CloseIdleConnections(); srv.Close() })
	opts := []option.RequestOption{option.WithBaseURL(srv.URL), option.WithAPIToken(token), option.WithMaxRetries(0), option.WithHTTPClient(hc)}
	return &lbEnv{srv: srv, zone: srv.AddZone("example.com"), acct: srv.AccountID(),
		lbs: load_balancers.NewLoadBalancerService(opts...), pools: load_balancers.NewPoolService(opts...),
		monitors: load_balancers.NewMonitorService(opts...), zones: zones.NewZoneService(opts...)}
}

// The SDK's param.Field lives in an internal package: fields are set one
// by one, and the rule cases bend a valid body with option.WithJSONSet.

func (e *lbEnv) newMonitor(t *testing.T, opts ...option.RequestOption) (*load_balancers.Monitor, error) {
	t.Helper()
	var p load_balancers.MonitorNewParams
	p.AccountID.Value, p.AccountID.Present = e.acct, true
	p.Type.Value, p.Type.Present = load_balancers.MonitorNewParamsTypeHTTP, true
	p.Path.Value, p.Path.Present = "/health", true
	p.ExpectedCodes.Value, p.ExpectedCodes.Present = "2xx", true
	p.Description.Value, p.Description.Present = "meridian:test", true
	return e.monitors.New(context.Background(), p, opts...)
}

func origin(name, address string, weight float64) load_balancers.OriginParam {
	var o load_balancers.OriginParam
	o.Name.Value, o.Name.Present = name, true
	o.Address.Value, o.Address.Present = address, true
	o.Weight.Value, o.Weight.Present = weight, true
	return o
}

func (e *lbEnv) newPool(t *testing.T, name, monitor string, origins []load_balancers.OriginParam, opts ...option.RequestOption) (*load_balancers.Pool, error) {
	t.Helper()
	var p load_balancers.PoolNewParams
	p.AccountID.Value, p.AccountID.Present = e.acct, true
	p.Name.Value, p.Name.Present = name, true
	p.Origins.Value, p.Origins.Present = origins, true
	if monitor != "" {
		p.Monitor.Value, p.Monitor.Present = monitor, true
	}
	return e.pools.New(context.Background(), p, opts...)
}

func (e *lbEnv) mustPool(t *testing.T, name string, addrs ...string) string {
	t.Helper()
	var os []load_balancers.OriginParam
	for i, a := range addrs {
		os = append(os, origin(fmt.Sprintf("o%d", i), a, 1))
	}
	p, err := e.newPool(t, name, "", os)
	require.NoError(t, err)
	return p.ID
}

func (e *lbEnv) newLB(t *testing.T, name, fallback string, defaults []string, opts ...option.RequestOption) (*load_balancers.LoadBalancer, error) {
	t.Helper()
	var p load_balancers.LoadBalancerNewParams
	p.ZoneID.Value, p.ZoneID.Present = e.zone, true
	p.Name.Value, p.Name.Present = name, true
	p.FallbackPool.Value, p.FallbackPool.Present = fallback, true
	p.DefaultPools.Value, p.DefaultPools.Present = defaults, true
	return e.lbs.New(context.Background(), p, opts...)
}

// refusal returns the HTTP status and first Cloudflare code of an SDK error.
func refusal(t *testing.T, err error) (int, int, string) {
	t.Helper()
	require.Error(t, err)
	var ae *load_balancers.Error
	require.True(t, errors.As(err, &ae), "%v", err)
	require.NotEmpty(t, ae.Errors, "%v", err)
	return ae.StatusCode, int(ae.Errors[0].Code), ae.Errors[0].Message
}

func TestLoadBalancingCRUD(t *testing.T) {
	e := startLB(t)
	ctx := context.Background()
	mon, err := e.newMonitor(t)
	require.NoError(t, err)
	assert.Equal(t, load_balancers.MonitorTypeHTTP, mon.Type)
	assert.Equal(t, "GET", mon.Method, "GET by default")
	assert.Equal(t, int64(60), mon.Interval, "interval 60 by default")
	assert.Equal(t, int64(5), mon.Timeout)
	assert.Equal(t, int64(2), mon.Retries)

	pool, err := e.newPool(t, "meridian-eu", mon.ID, []load_balancers.OriginParam{origin("eu-1", "192.0.2.1", 0.7), origin("eu-2", "2001:DB8::2", 0.3)})
	require.NoError(t, err)
	assert.Equal(t, int64(1), pool.MinimumOrigins, "minimum_origins 1 by default")
	assert.True(t, pool.Enabled, "enabled by default")
	require.Len(t, pool.Origins, 2)
	assert.True(t, pool.Origins[0].Enabled, "origins are enabled by default")
	assert.Equal(t, "2001:db8::2", pool.Origins[1].Address, "addresses are stored canonical")
	assert.Equal(t, 0.3, pool.Origins[1].Weight)
	other := e.mustPool(t, "meridian-us", "192.0.2.9")

	lb, err := e.newLB(t, "app", other, []string{pool.ID, other})
	require.NoError(t, err)
	assert.Equal(t, "app.example.com", lb.Name, "a relative name is completed with the zone")
	assert.Equal(t, "example.com", lb.ZoneName)
	assert.Equal(t, 30.0, lb.TTL, "ttl 30 by default")
	assert.True(t, lb.Enabled)

	var lg load_balancers.LoadBalancerGetParams
	lg.ZoneID.Value, lg.ZoneID.Present = e.zone, true
	got, err := e.lbs.Get(ctx, lb.ID, lg)
	require.NoError(t, err)
	assert.Equal(t, []string{pool.ID, other}, got.DefaultPools)
	assert.JSONEq(t, got.JSON.RawJSON(), string(e.srv.RawLoadBalancer(lb.ID)), "RawLoadBalancer is what GET answers")

	var ll load_balancers.LoadBalancerListParams
	ll.ZoneID.Value, ll.ZoneID.Present = e.zone, true
	list, err := e.lbs.List(ctx, ll)
	require.NoError(t, err)
	require.Len(t, list.Result, 1)

	// PATCH changes the fields it names; PUT replaces the object.
	var le load_balancers.LoadBalancerEditParams
	le.ZoneID.Value, le.ZoneID.Present = e.zone, true
	le.SteeringPolicy.Value, le.SteeringPolicy.Present = load_balancers.SteeringPolicyRandom, true
	le.RandomSteering.Value, le.RandomSteering.Present = load_balancers.RandomSteeringParam{}, true
	edited, err := e.lbs.Edit(ctx, lb.ID, le, option.WithJSONSet("random_steering.pool_weights", map[string]float64{pool.ID: 0.7, other: 0.3}))
	require.NoError(t, err)
	assert.Equal(t, load_balancers.SteeringPolicyRandom, edited.SteeringPolicy)
	assert.Equal(t, 0.7, edited.RandomSteering.PoolWeights[pool.ID])
	assert.Equal(t, 1.0, edited.RandomSteering.DefaultWeight, "default_weight 1 by default")
	assert.Equal(t, []string{pool.ID, other}, edited.DefaultPools, "PATCH keeps what it does not name")

	var pu load_balancers.PoolUpdateParams
	pu.AccountID.Value, pu.AccountID.Present = e.acct, true
	pu.Name.Value, pu.Name.Present = "meridian-eu", true
	pu.Origins.Value, pu.Origins.Present = []load_balancers.OriginParam{origin("eu-1", "192.0.2.1", 1)}, true
	put, err := e.pools.Update(ctx, pool.ID, pu)
	require.NoError(t, err)
	assert.Empty(t, put.Monitor, "PUT drops the monitor it does not name")
	assert.Len(t, put.Origins, 1)

	var pe load_balancers.PoolEditParams
	pe.AccountID.Value, pe.AccountID.Present = e.acct, true
	pe.Enabled.Value, pe.Enabled.Present = false, true
	patched, err := e.pools.Edit(ctx, pool.ID, pe)
	require.NoError(t, err)
	assert.False(t, patched.Enabled)
	assert.False(t, patched.DisabledAt.IsZero(), "disabled_at shows while the pool is disabled")
	assert.Equal(t, "192.0.2.1", patched.Origins[0].Address)

	var pl load_balancers.PoolListParams
	pl.AccountID.Value, pl.AccountID.Present = e.acct, true
	pools, err := e.pools.List(ctx, pl)
	require.NoError(t, err)
	assert.Len(t, pools.Result, 2)

	// Deleting in dependency order.
	var ld load_balancers.LoadBalancerDeleteParams
	ld.ZoneID.Value, ld.ZoneID.Present = e.zone, true
	_, err = e.lbs.Delete(ctx, lb.ID, ld)
	require.NoError(t, err)
	var pd load_balancers.PoolDeleteParams
	pd.AccountID.Value, pd.AccountID.Present = e.acct, true
	_, err = e.pools.Delete(ctx, pool.ID, pd)
	require.NoError(t, err)
	var md load_balancers.MonitorDeleteParams
	md.AccountID.Value, md.AccountID.Present = e.acct, true
	_, err = e.monitors.Delete(ctx, mon.ID, md)
	require.NoError(t, err)
	assert.Empty(t, e.srv.Monitors())
	assert.Len(t, e.srv.Pools(), 1)
	assert.Empty(t, e.srv.LoadBalancers(e.zone))

	assert.Equal(t, 1, e.srv.Calls(http.MethodPost, routeLBs))
	assert.Equal(t, 1, e.srv.Calls(http.MethodPatch, routeLB))
	assert.Equal(t, 2, e.srv.Calls(http.MethodPost, routePools))
	assert.Equal(t, 1, e.srv.Calls(http.MethodPut, routePool))
	assert.Equal(t, 1, e.srv.Calls(http.MethodDelete, routeMonitor))
	assert.Equal(t, 10, e.srv.WriteCalls(), "4 creates, a PATCH of the load balancer, a PUT and a PATCH of a pool, 3 deletes")
}

func TestZoneCarriesTheAccount(t *testing.T) {
	e := startLB(t)
	var p zones.ZoneGetParams
	p.ZoneID.Value, p.ZoneID.Present = e.zone, true
	z, err := e.zones.Get(context.Background(), p)
	require.NoError(t, err)
	assert.Equal(t, e.srv.AccountID(), z.Account.ID)
	assert.Len(t, e.srv.AccountID(), 32, "a Cloudflare-shaped id")
	assert.Equal(t, 1, e.srv.Calls(http.MethodGet, "/zones/{zone}"))
	p.ZoneID.Value = "0123456789abcdef0123456789abcdef"
	_, err = e.zones.Get(context.Background(), p)
	_, code, _ := refusal(t, err)
	assert.Equal(t, CodeNoRoute, code)
}

func TestLoadBalancingRules(t *testing.T) {
	type fixture struct {
		e                  *lbEnv
		monitor, eu, us, x string // ids: a monitor, pools meridian-eu/us/x, lb app.example.com (x: used only in region_pools)
		lb                 string
	}
	setup := func(t *testing.T) fixture {
		e := startLB(t)
		m, err := e.newMonitor(t)
		require.NoError(t, err)
		f := fixture{e: e, monitor: m.ID}
		p, err := e.newPool(t, "meridian-eu", m.ID, []load_balancers.OriginParam{origin("eu-1", "192.0.2.1", 1)})
		require.NoError(t, err)
		f.eu = p.ID
		f.us = e.mustPool(t, "meridian-us", "192.0.2.2")
		f.x = e.mustPool(t, "meridian-x", "192.0.2.3")
		lb, err := e.newLB(t, "app.example.com", f.us, []string{f.eu, f.us}, option.WithJSONSet("region_pools", map[string][]string{"WEU": {f.x}}))
		require.NoError(t, err)
		f.lb = lb.ID
		return f
	}
	set := option.WithJSONSet
	pool := func(mods ...option.RequestOption) func(f fixture, t *testing.T) error {
		return func(f fixture, t *testing.T) error {
			_, err := f.e.newPool(t, "meridian-new", "", []load_balancers.OriginParam{origin("a", "192.0.2.10", 0.5), origin("b", "origin.example.net", 0.5)}, mods...)
			return err
		}
	}
	monitor := func(mods ...option.RequestOption) func(f fixture, t *testing.T) error {
		return func(f fixture, t *testing.T) error { _, err := f.e.newMonitor(t, mods...); return err }
	}
	lb := func(mods ...option.RequestOption) func(f fixture, t *testing.T) error {
		return func(f fixture, t *testing.T) error {
			_, err := f.e.newLB(t, "www.example.com", f.us, []string{f.eu, f.us}, mods...)
			return err
		}
	}
	manyOrigins := make([]map[string]any, 21)
	for i := range manyOrigins {
		manyOrigins[i] = map[string]any{"name": fmt.Sprint("o", i), "address": fmt.Sprintf("192.0.2.%d", i+1)}
	}
	tests := []struct {
		name   string
		call   func(f fixture, t *testing.T) error
		status int // 0: accepted
		code   int
		msg    string // a part of the message
	}{
		{"a valid pool is accepted", pool(), 0, 0, ""},
		{"an origin weight of 1.5 is refused", pool(set("origins.0.weight", 1.5)), 400, CodeLBValidation, "weight 1.5"},
		{"an origin weight finer than 0.01 is refused", pool(set("origins.0.weight", 0.705)), 400, CodeLBValidation, "steps of 0.01"},
		{"an origin weight of 0 is accepted", pool(set("origins.0.weight", 0)), 0, 0, ""},
		{"a pool without origins is refused", pool(set("origins", []any{})), 400, CodeLBValidation, "origin list length must be in range [1, 20]"},
		{"a pool of 21 origins is refused", pool(set("origins", manyOrigins)), 400, CodeLBValidation, "origin list length"},
		{"two origins with one name are refused", pool(set("origins.1.name", "a")), 400, CodeLBValidation, "used twice"},
		{"one address twice on the same port is refused", pool(set("origins.1.address", "192.0.2.10")), 400, CodeLBValidation, "used twice"},
		{"one address twice on two ports is accepted", pool(set("origins.1.address", "192.0.2.10"), set("origins.1.port", 8080)), 0, 0, ""},
		{"an origin address that is no IP nor host name is refused", pool(set("origins.0.address", "not an address")), 400, CodeLBValidation, "neither an IP address nor a host name"},
		{"an origin without a name is refused", pool(set("origins.0.name", "")), 400, CodeLBValidation, "origin name is required"},
		{"a pool name with a dot is refused", pool(set("name", "meridian.eu")), 400, CodeLBValidation, "may only contain"},
		{"a second pool with the same name is refused", pool(set("name", "meridian-eu")), 400, CodeLBValidation, "already exists"},
		{"minimum_origins 0 is refused", pool(set("minimum_origins", 0)), 400, CodeLBValidation, "minimum_origins"},
		{"a pool with an unknown monitor is refused", pool(set("monitor", "0123456789abcdef0123456789abcdef")), 400, CodeLBValidation, "monitor"},
		{"an unknown check region is refused", pool(set("check_regions", []string{"EU"})), 400, CodeLBValidation, "check_regions"},
		{"a valid monitor is accepted", monitor(), 0, 0, ""},
		{"an unknown monitor type is refused", monitor(set("type", "grpc")), 400, CodeLBValidation, "type"},
		{"an interval over an hour is refused", monitor(set("interval", 3601)), 400, CodeLBValidation, "interval is not in range"},
		{"an interval under 5 seconds is refused", monitor(set("interval", 4), set("timeout", 2)), 400, CodeLBValidation, "interval is not in range"},
		{"a timeout not under the interval is refused", monitor(set("interval", 5), set("timeout", 5)), 400, CodeLBValidation, "less than interval"},
		{"a timeout over 10 seconds is refused", monitor(set("timeout", 11)), 400, CodeLBValidation, "timeout"},
		{"more than 5 retries are refused", monitor(set("retries", 6)), 400, CodeLBValidation, "retries"},
		{"expected codes like 2x0 are refused", monitor(set("expected_codes", "2x0")), 400, CodeLBValidation, "expected_codes"},
		{"a path without a leading slash is refused", monitor(set("path", "health")), 400, CodeLBValidation, "path"},
		{"a POST health check is refused", monitor(set("method", "POST")), 400, CodeLBValidation, "method"},
		{"a tcp monitor without a port is refused", monitor(set("type", "tcp")), 400, CodeLBValidation, "port is required"},
		{"a tcp monitor with a port is accepted", monitor(set("type", "tcp"), set("port", 443)), 0, 0, ""},
		{"a description over 1024 characters is refused", monitor(set("description", strings.Repeat("x", 1025))), 400, CodeLBValidation, "description"},
		{"a User-Agent header is refused", monitor(set("header", map[string][]string{"User-Agent": {"x"}})), 400, CodeLBValidation, "User-Agent"},
		{"a valid load balancer is accepted", lb(), 0, 0, ""},
		{"a load balancer at the name of a DNS record is accepted (it takes precedence)", func(f fixture, t *testing.T) error {
			_, err := f.e.srv.Put(f.e.zone, Record{Name: "www.example.com", Type: "A", Content: "192.0.2.99", TTL: 300})
			require.NoError(t, err)
			return lb()(f, t)
		}, 0, 0, ""},
		{"an unknown region code is refused", lb(set("region_pools", map[string][]string{"EU": {"x"}})), 400, CodeLBValidation, `"EU" is not a Cloudflare region code`},
		{"a lower-case country code is refused", lb(set("country_pools", map[string][]string{"de": {"x"}})), 400, CodeLBValidation, "upper case"},
		{"an unknown country code is refused", lb(set("country_pools", map[string][]string{"ZZ": {"x"}})), 400, CodeLBValidation, "country code"},
		{"a PoP code of four letters is refused", lb(set("pop_pools", map[string][]string{"LAXX": {"x"}})), 400, CodeLBValidation, "PoP"},
		{"a load balancer without default pools is refused", lb(set("default_pools", []string{})), 400, CodeLBValidation, "default_pools"},
		{"a load balancer with an unknown pool is refused", lb(set("default_pools", []string{"0123456789abcdef0123456789abcdef"})), 400, CodeLBValidation, "does not exist"},
		{"a load balancer without a fallback pool is refused", lb(set("fallback_pool", "")), 400, CodeLBValidation, "fallback_pool"},
		{"an unknown steering policy is refused", lb(set("steering_policy", "round_robin")), 400, CodeLBValidation, "steering_policy"},
		{"a random steering weight above 1 is refused", func(f fixture, t *testing.T) error {
			return lb(set("random_steering", map[string]any{"pool_weights": map[string]float64{f.eu: 1.5}}))(f, t)
		}, 400, CodeLBValidation, "pool_weights"},
		{"random steering weights of a pool the load balancer does not use are refused", func(f fixture, t *testing.T) error {
			return lb(set("random_steering", map[string]any{"pool_weights": map[string]float64{f.x: 0.5}}))(f, t)
		}, 400, CodeLBValidation, "not a pool of this load balancer"},
		{"a default_weight not in steps of 0.1 is refused", lb(set("random_steering", map[string]any{"default_weight": 0.25})), 400, CodeLBValidation, "default_weight"},
		{"a ttl under 30 is refused", lb(set("ttl", 10)), 400, CodeLBValidation, "ttl"},
		{"a name outside the zone is refused", lb(set("name", "www.example.org")), 400, CodeLBValidation, "not a host name in zone"},
		{"a second load balancer with the same name is refused", lb(set("name", "app.example.com")), 400, CodeLBValidation, "already exists"},
		{"a pool used by a load balancer cannot be deleted", func(f fixture, t *testing.T) error {
			var p load_balancers.PoolDeleteParams
			p.AccountID.Value, p.AccountID.Present = f.e.acct, true
			_, err := f.e.pools.Delete(context.Background(), f.eu, p)
			return err
		}, 412, CodeLBInUse, "referenced by other objects"},
		{"a pool used only in region_pools cannot be deleted", func(f fixture, t *testing.T) error {
			var p load_balancers.PoolDeleteParams
			p.AccountID.Value, p.AccountID.Present = f.e.acct, true
			_, err := f.e.pools.Delete(context.Background(), f.x, p)
			return err
		}, 412, CodeLBInUse, "load balancer app.example.com"},
		{"a monitor used by a pool cannot be deleted", func(f fixture, t *testing.T) error {
			var p load_balancers.MonitorDeleteParams
			p.AccountID.Value, p.AccountID.Present = f.e.acct, true
			_, err := f.e.monitors.Delete(context.Background(), f.monitor, p)
			return err
		}, 412, CodeLBInUse, "pool meridian-eu"},
		{"an unknown pool is not found", func(f fixture, t *testing.T) error {
			var p load_balancers.PoolGetParams
			p.AccountID.Value, p.AccountID.Present = f.e.acct, true
			_, err := f.e.pools.Get(context.Background(), "0123456789abcdef0123456789abcdef", p)
			return err
		}, 404, CodeLBNotFound, "not found"},
		{"another account's pools are refused", func(f fixture, t *testing.T) error {
			var p load_balancers.PoolListParams
			p.AccountID.Value, p.AccountID.Present = "0123456789abcdef0123456789abcdef", true
			_, err := f.e.pools.List(context.Background(), p)
			return err
		}, 400, CodeNoRoute, "Could not route"},
		{"a zone without Load Balancing answers the entitlement error", func(f fixture, t *testing.T) error {
			f.e.srv.DisableLoadBalancing()
			return lb()(f, t)
		}, 403, CodeLBNotEntitled, "load balancing not enabled for zone"},
		{"an account without Load Balancing answers the entitlement error", func(f fixture, t *testing.T) error {
			f.e.srv.DisableLoadBalancing()
			var p load_balancers.MonitorListParams
			p.AccountID.Value, p.AccountID.Present = f.e.acct, true
			_, err := f.e.monitors.List(context.Background(), p)
			return err
		}, 403, CodeLBNotEntitled, "load balancing not enabled for account"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := setup(t)
			pools, lbs, monitors := len(f.e.srv.Pools()), len(f.e.srv.LoadBalancers(f.e.zone)), len(f.e.srv.Monitors())
			err := tt.call(f, t)
			if tt.status == 0 {
				require.NoError(t, err)
				return
			}
			status, code, msg := refusal(t, err)
			assert.Equal(t, tt.status, status)
			assert.Equal(t, tt.code, code)
			assert.Contains(t, msg, tt.msg)
			assert.Len(t, f.e.srv.Pools(), pools, "nothing changed")
			assert.Len(t, f.e.srv.LoadBalancers(f.e.zone), lbs, "nothing changed")
			assert.Len(t, f.e.srv.Monitors(), monitors, "nothing changed")
		})
	}
}

func TestLoadBalancingFaults(t *testing.T) {
	e := startLB(t)
	e.srv.Inject(Fault{Path: "/load_balancers/pools", Status: http.StatusTooManyRequests, RetryAfter: 2 * time.Second, Times: 1})
	_, err := e.newPool(t, "meridian-eu", "", []load_balancers.OriginParam{origin("a", "192.0.2.1", 1)})
	status, _, _ := refusal(t, err)
	assert.Equal(t, http.StatusTooManyRequests, status, "faults reach the Load Balancing routes")
	assert.Empty(t, e.srv.Pools())
	_, err = e.newPool(t, "meridian-eu", "", []load_balancers.OriginParam{origin("a", "192.0.2.1", 1)})
	require.NoError(t, err)
	assert.Equal(t, 2, e.srv.Calls(http.MethodPost, routePools), "the refused request is counted too")
	assert.Equal(t, 2, e.srv.WriteCalls())

	e.srv.RateLimit(1, time.Minute)
	var p load_balancers.PoolListParams
	p.AccountID.Value, p.AccountID.Present = e.acct, true
	_, err = e.pools.List(context.Background(), p)
	require.NoError(t, err)
	_, err = e.pools.List(context.Background(), p)
	status, code, _ := refusal(t, err)
	assert.Equal(t, http.StatusTooManyRequests, status, "Cloudflare's own 429 past the rate limit")
	assert.Equal(t, 971, code)
}

func TestSeededObjectsStayByteIdentical(t *testing.T) {
	e := startLB(t)
	m, err := e.srv.PutMonitor(Monitor{Type: "https", Description: "someone else's", Interval: 60, Timeout: 5, ExpectedCodes: "2xx"})
	require.NoError(t, err)
	p, err := e.srv.PutPool(Pool{Name: "foreign", Enabled: true, MinimumOrigins: 1, Monitor: m.ID,
		Origins: []Origin{{Name: "a", Address: "192.0.2.1", Enabled: true, Weight: 1}}})
	require.NoError(t, err)
	lb, err := e.srv.PutLoadBalancer(e.zone, LoadBalancer{Name: "foreign.example.com", Enabled: true, DefaultPools: []string{p.ID}, FallbackPool: p.ID})
	require.NoError(t, err)
	assert.Equal(t, 30, lb.TTL, "a zero TTL becomes 30")
	_, err = e.srv.PutPool(Pool{Name: "bad", MinimumOrigins: 1, Origins: []Origin{{Name: "a", Address: "192.0.2.1", Weight: 2}}})
	require.Error(t, err, "seeds are validated like requests")

	rawM, rawP, rawLB := e.srv.RawMonitor(m.ID), e.srv.RawPool(p.ID), e.srv.RawLoadBalancer(lb.ID)
	var pg load_balancers.PoolGetParams
	pg.AccountID.Value, pg.AccountID.Present = e.acct, true
	got, err := e.pools.Get(context.Background(), p.ID, pg)
	require.NoError(t, err)
	assert.JSONEq(t, got.JSON.RawJSON(), string(rawP), "RawPool is what GET answers")

	// The inspection helpers hand out copies.
	pools := e.srv.Pools()
	pools[0].Origins[0].Address = "192.0.2.200"
	lbs := e.srv.LoadBalancers(e.zone)
	lbs[0].DefaultPools[0] = "x"
	assert.Equal(t, rawP, e.srv.RawPool(p.ID))
	assert.Equal(t, rawLB, e.srv.RawLoadBalancer(lb.ID))

	// Any write shows in the bytes, even one that changes nothing else.
	e.srv.SetClock(func() time.Time { return time.Now().Add(time.Hour) })
	var pe load_balancers.PoolEditParams
	pe.AccountID.Value, pe.AccountID.Present = e.acct, true
	pe.Description.Value, pe.Description.Present = "", true
	_, err = e.pools.Edit(context.Background(), p.ID, pe)
	require.NoError(t, err)
	assert.NotEqual(t, rawP, e.srv.RawPool(p.ID), "modified_on moved")
	assert.Equal(t, rawM, e.srv.RawMonitor(m.ID))
	var stored map[string]json.RawMessage
	require.NoError(t, json.Unmarshal(e.srv.RawPool(p.ID), &stored))
	assert.Contains(t, stored, "origins")
	assert.Nil(t, e.srv.RawPool("nope"))
}
