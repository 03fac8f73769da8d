package cloudflare

import (
	"context"
	"errors"
	"fmt"
	"net/http"

	"github.com/cloudflare/cloudflare-go/v6/load_balancers"
	"github.com/cloudflare/cloudflare-go/v6/option"
	"github.com/cloudflare/cloudflare-go/v6/zones"
)

// LBAPI is the part of the Cloudflare v4 API that Load Balancing needs:
// monitors and pools (account level) and load balancers (zone level). Each
// method is one HTTP request. Create and Update send the whole object (PUT);
// the adapter only ever writes objects it owns, so the fields it does not
// model are left to Cloudflare's defaults.
type LBAPI interface {
	// ZoneAccountID returns the id of the account that holds the zone.
	ZoneAccountID(ctx context.Context, zoneID string) (string, error)

	ListMonitors(ctx context.Context, accountID string) ([]Monitor, error)
	CreateMonitor(ctx context.Context, accountID string, m Monitor) (Monitor, error)
	UpdateMonitor(ctx context.Context, accountID string, m Monitor) (Monitor, error)
	DeleteMonitor(ctx context.Context, accountID, id string) error

	ListPools(ctx context.Context, accountID string) ([]Pool, error)
	CreatePool(ctx context.Context, accountID string, p Pool) (Pool, error)
	UpdatePool(ctx context.Context, accountID string, p Pool) (Pool, error)
	DeletePool(ctx context.Context, accountID, id string) error

	ListLoadBalancers(ctx context.Context, zoneID string) ([]LoadBalancer, error)
	CreateLoadBalancer(ctx context.Context, zoneID string, lb LoadBalancer) (LoadBalancer, error)
	UpdateLoadBalancer(ctx context.Context, zoneID string, lb LoadBalancer) (LoadBalancer, error)
	DeleteLoadBalancer(ctx context.Context, zoneID, id string) error
}

// Monitor is a Cloudflare health monitor, as far as the adapter uses it.
type Monitor struct {
	ID              string
	Type            string // http, https, tcp
	Description     string
	Method          string // GET, HEAD; tcp: connection_established
	Path            string
	Header          map[string][]string // Host only
	Port            int                 // 0: the scheme's
	Timeout         int                 // seconds
	Retries         int
	Interval        int // seconds
	ExpectedCodes   string
	ExpectedBody    string
	FollowRedirects bool
	AllowInsecure   bool
	ConsecutiveUp   int
	ConsecutiveDown int
}

// Pool is a Cloudflare origin pool, as far as the adapter uses it.
type Pool struct {
	ID             string
	Name           string // letters, digits, - and _; unique in the account
	Description    string
	Enabled        bool
	MinimumOrigins int
	Monitor        string // monitor id; "" none
	Origins        []Origin
}

// Origin is one origin of a Pool.
type Origin struct {
	Name    string
	Address string // IP address or host name (no trailing dot)
	Enabled bool
	Weight  float64 // 0..1 in steps of 0.01
}

// LoadBalancer is a Cloudflare load balancer, as far as the adapter uses it.
type LoadBalancer struct {
	ID             string
	Name           string // host name, no trailing dot
	Description    string
	Enabled        bool
	TTL            int
	Proxied        bool
	SteeringPolicy string // off, random, geo
	FallbackPool   string // pool id
	DefaultPools   []string
	RegionPools    map[string][]string
	CountryPools   map[string][]string
	PoolWeights    map[string]float64 // random_steering.pool_weights (steering random)
	DefaultWeight  float64            // random_steering.default_weight (steering random)
}

var _ LBAPI = (*sdkAPI)(nil)

func (a *sdkAPI) ZoneAccountID(ctx context.Context, zoneID string) (string, error) {
	var p zones.ZoneGetParams
	p.ZoneID.Value, p.ZoneID.Present = zoneID, true
	var raw *http.Response
	z, err := a.zones.Get(ctx, p, option.WithResponseInto(&raw))
	if err != nil {
		return "", apiError(err, raw)
	}
	return z.Account.ID, nil
}

func (a *sdkAPI) ListMonitors(ctx context.Context, accountID string) ([]Monitor, error) {
	var p load_balancers.MonitorListParams
	p.AccountID.Value, p.AccountID.Present = accountID, true
	var raw *http.Response
	page, err := a.lb.Monitors.List(ctx, p, option.WithResponseInto(&raw))
	if err != nil {
		return nil, apiError(err, raw)
	}
	if page == nil || page.JSON.Result.IsNull() {
		return nil, noResult("list monitors of account " + accountID)
	}
	out := make([]Monitor, 0, len(page.Result))
	for i := range page.Result {
		out = append(out, monitorFromSDK(&page.Result[i]))
	}
	return out, nil
}

// monitorParams is the request body of a monitor's create, and (through
// sameFields) of its update: both send the whole monitor.
func monitorParams(accountID string, m Monitor) load_balancers.MonitorNewParams {
	var p load_balancers.MonitorNewParams
	p.AccountID.Value, p.AccountID.Present = accountID, true
	p.Type.Value, p.Type.Present = load_balancers.MonitorNewParamsType(m.Type), true
	p.Description.Value, p.Description.Present = m.Description, true
	p.Port.Value, p.Port.Present = int64(m.Port), true
	p.Timeout.Value, p.Timeout.Present = int64(m.Timeout), true
	p.Retries.Value, p.Retries.Present = int64(m.Retries), true
	p.Interval.Value, p.Interval.Present = int64(m.Interval), true
	p.ConsecutiveUp.Value, p.ConsecutiveUp.Present = int64(m.ConsecutiveUp), true
	p.ConsecutiveDown.Value, p.ConsecutiveDown.Present = int64(m.ConsecutiveDown), true
	if m.Type != "tcp" {
		p.Method.Value, p.Method.Present = m.Method, true
		p.Path.Value, p.Path.Present = m.Path, true
		p.Header.Value, p.Header.Present = m.Header, m.Header != nil
		p.ExpectedCodes.Value, p.ExpectedCodes.Present = m.ExpectedCodes, true
		p.ExpectedBody.Value, p.ExpectedBody.Present = m.ExpectedBody, true
		p.FollowRedirects.Value, p.FollowRedirects.Present = m.FollowRedirects, true
		p.AllowInsecure.Value, p.AllowInsecure.Present = m.AllowInsecure, true
	}
	return p
}

func (a *sdkAPI) CreateMonitor(ctx context.Context, accountID string, m Monitor) (Monitor, error) {
	var raw *http.Response
	res, err := a.lb.Monitors.New(ctx, monitorParams(accountID, m), option.WithResponseInto(&raw))
	return written(res, err, raw, monitorFromSDK, "create monitor")
}

func (a *sdkAPI) UpdateMonitor(ctx context.Context, accountID string, m Monitor) (Monitor, error) {
	p := sameFields[load_balancers.MonitorUpdateParams](monitorParams(accountID, m))
	var raw *http.Response
	res, err := a.lb.Monitors.Update(ctx, m.ID, p, option.WithResponseInto(&raw))
	return written(res, err, raw, monitorFromSDK, "update monitor "+m.ID)
}

func (a *sdkAPI) DeleteMonitor(ctx context.Context, accountID, id string) error {
	var p load_balancers.MonitorDeleteParams
	p.AccountID.Value, p.AccountID.Present = accountID, true
	var raw *http.Response
	if _, err := a.lb.Monitors.Delete(ctx, id, p, option.WithResponseInto(&raw)); err != nil {
		return apiError(err, raw)
	}
	return nil
}

func monitorFromSDK(m *load_balancers.Monitor) Monitor {
	return Monitor{ID: m.ID, Type: string(m.Type), Description: m.Description, Method: m.Method, Path: m.Path, Header: m.Header,
		Port: int(m.Port), Timeout: int(m.Timeout), Retries: int(m.Retries), Interval: int(m.Interval),
		ExpectedCodes: m.ExpectedCodes, ExpectedBody: m.ExpectedBody, FollowRedirects: m.FollowRedirects, AllowInsecure: m.AllowInsecure,
		ConsecutiveUp: int(m.ConsecutiveUp), ConsecutiveDown: int(m.ConsecutiveDown)}
}

func (a *sdkAPI) ListPools(ctx context.Context, accountID string) ([]Pool, error) {
	var p load_balancers.PoolListParams
	p.AccountID.Value, p.AccountID.Present = accountID, true
	var raw *http.Response
	page, err := a.lb.Pools.List(ctx, p, option.WithResponseInto(&raw))
	if err != nil {
		return nil, apiError(err, raw)
	}
	if page == nil || page.JSON.Result.IsNull() {
		return nil, noResult("list pools of account " + accountID)
	}
	out := make([]Pool, 0, len(page.Result))
	for i := range page.Result {
		out = append(out, poolFromSDK(&page.Result[i]))
	}
	return out, nil
}

func originParams(os []Origin) []load_balancers.OriginParam {
	out := make([]load_balancers.OriginParam, len(os))
	for i, o := range os {
		var op load_balancers.OriginParam
		op.Name.Value, op.Name.Present = o.Name, true
		op.Address.Value, op.Address.Present = o.Address, true
		op.Enabled.Value, op.Enabled.Present = o.Enabled, true
		op.Weight.Value, op.Weight.Present = o.Weight, true
		out[i] = op
	}
	return out
}

// poolParams is the request body of a pool's create, and (through
// sameFields) of its update: both send the whole pool.
func poolParams(accountID string, pl Pool) load_balancers.PoolNewParams {
	var p load_balancers.PoolNewParams
	p.AccountID.Value, p.AccountID.Present = accountID, true
	p.Name.Value, p.Name.Present = pl.Name, true
	p.Description.Value, p.Description.Present = pl.Description, true
	p.Enabled.Value, p.Enabled.Present = pl.Enabled, true
	p.MinimumOrigins.Value, p.MinimumOrigins.Present = int64(pl.MinimumOrigins), true
	p.Monitor.Value, p.Monitor.Present = pl.Monitor, pl.Monitor != ""
	p.Origins.Value, p.Origins.Present = originParams(pl.Origins), true
	return p
}

func (a *sdkAPI) CreatePool(ctx context.Context, accountID string, pl Pool) (Pool, error) {
	var raw *http.Response
	res, err := a.lb.Pools.New(ctx, poolParams(accountID, pl), option.WithResponseInto(&raw))
	return written(res, err, raw, poolFromSDK, "create pool "+pl.Name)
}

func (a *sdkAPI) UpdatePool(ctx context.Context, accountID string, pl Pool) (Pool, error) {
	p := sameFields[load_balancers.PoolUpdateParams](poolParams(accountID, pl))
	var raw *http.Response
	res, err := a.lb.Pools.Update(ctx, pl.ID, p, option.WithResponseInto(&raw))
	return written(res, err, raw, poolFromSDK, "update pool "+pl.Name)
}

func (a *sdkAPI) DeletePool(ctx context.Context, accountID, id string) error {
	var p load_balancers.PoolDeleteParams
	p.AccountID.Value, p.AccountID.Present = accountID, true
	var raw *http.Response
	if _, err := a.lb.Pools.Delete(ctx, id, p, option.WithResponseInto(&raw)); err != nil {
		return apiError(err, raw)
	}
	return nil
}

func poolFromSDK(p *load_balancers.Pool) Pool {
	out := Pool{ID: p.ID, Name: p.Name, Description: p.Description, Enabled: p.Enabled, MinimumOrigins: int(p.MinimumOrigins), Monitor: p.Monitor}
	for _, o := range p.Origins {
		out.Origins = append(out.Origins, Origin{Name: o.Name, Address: o.Address, Enabled: o.Enabled, Weight: o.Weight})
	}
	return out
}

func (a *sdkAPI) ListLoadBalancers(ctx context.Context, zoneID string) ([]LoadBalancer, error) {
	var p load_balancers.LoadBalancerListParams
	p.ZoneID.Value, p.ZoneID.Present = zoneID, true
	var raw *http.Response
	page, err := a.lb.List(ctx, p, option.WithResponseInto(&raw))
	if err != nil {
		return nil, apiError(err, raw)
	}
	if page == nil || page.JSON.Result.IsNull() {
		return nil, noResult("list load balancers of zone " + zoneID)
	}
	out := make([]LoadBalancer, 0, len(page.Result))
	for i := range page.Result {
		out = append(out, lbFromSDK(&page.Result[i]))
	}
	return out, nil
}

// lbRandom is the random_steering field of a load balancer's request.
func lbRandom(lb LoadBalancer) (load_balancers.RandomSteeringParam, bool) {
	var rs load_balancers.RandomSteeringParam
	if lb.SteeringPolicy != "random" {
		return rs, false
	}
	rs.DefaultWeight.Value, rs.DefaultWeight.Present = lb.DefaultWeight, true
	rs.PoolWeights.Value, rs.PoolWeights.Present = lb.PoolWeights, true
	return rs, true
}

// lbParams is the request body of a load balancer's create, and (through
// sameFields, with enabled added) of its update: both send the whole load
// balancer.
func lbParams(zoneID string, lb LoadBalancer) load_balancers.LoadBalancerNewParams {
	var p load_balancers.LoadBalancerNewParams
	p.ZoneID.Value, p.ZoneID.Present = zoneID, true
	p.Name.Value, p.Name.Present = lb.Name, true
	p.Description.Value, p.Description.Present = lb.Description, true
	p.TTL.Value, p.TTL.Present = float64(lb.TTL), lb.TTL > 0
	p.Proxied.Value, p.Proxied.Present = lb.Proxied, true
	p.SteeringPolicy.Value, p.SteeringPolicy.Present = load_balancers.SteeringPolicy(lb.SteeringPolicy), true
	p.FallbackPool.Value, p.FallbackPool.Present = lb.FallbackPool, true
	p.DefaultPools.Value, p.DefaultPools.Present = lb.DefaultPools, true
	p.RegionPools.Value, p.RegionPools.Present = orEmptyMap(lb.RegionPools), true
	p.CountryPools.Value, p.CountryPools.Present = orEmptyMap(lb.CountryPools), true
	p.RandomSteering.Value, p.RandomSteering.Present = lbRandom(lb)
	return p
}

func (a *sdkAPI) CreateLoadBalancer(ctx context.Context, zoneID string, lb LoadBalancer) (LoadBalancer, error) {
	var raw *http.Response
	res, err := a.lb.New(ctx, lbParams(zoneID, lb), option.WithResponseInto(&raw))
	return written(res, err, raw, lbFromSDK, "create load balancer "+lb.Name)
}

func (a *sdkAPI) UpdateLoadBalancer(ctx context.Context, zoneID string, lb LoadBalancer) (LoadBalancer, error) {
	p := sameFields[load_balancers.LoadBalancerUpdateParams](lbParams(zoneID, lb))
	p.Enabled.Value, p.Enabled.Present = lb.Enabled, true
	var raw *http.Response
	res, err := a.lb.Update(ctx, lb.ID, p, option.WithResponseInto(&raw))
	return written(res, err, raw, lbFromSDK, "update load balancer "+lb.Name)
}

func (a *sdkAPI) DeleteLoadBalancer(ctx context.Context, zoneID, id string) error {
	var p load_balancers.LoadBalancerDeleteParams
	p.ZoneID.Value, p.ZoneID.Present = zoneID, true
	var raw *http.Response
	if _, err := a.lb.Delete(ctx, id, p, option.WithResponseInto(&raw)); err != nil {
		return apiError(err, raw)
	}
	return nil
}

func lbFromSDK(lb *load_balancers.LoadBalancer) LoadBalancer {
	return LoadBalancer{ID: lb.ID, Name: lb.Name, Description: lb.Description, Enabled: lb.Enabled, TTL: int(lb.TTL), Proxied: lb.Proxied,
		SteeringPolicy: string(lb.SteeringPolicy), FallbackPool: lb.FallbackPool, DefaultPools: lb.DefaultPools,
		RegionPools: lb.RegionPools, CountryPools: lb.CountryPools,
		PoolWeights: lb.RandomSteering.PoolWeights, DefaultWeight: lb.RandomSteering.DefaultWeight}
}

func orEmptyMap(m map[string][]string) map[string][]string {
	if m == nil {
		return map[string][]string{}
	}
	return m
}

// errNoResult is a success answer that lacks what the call returns (a
// result of null, an object without an id): an error naming the call, so
// that the pass stops instead of writing references to nothing.
var errNoResult = errors.New("a success answer without a result")

func noResult(call string) error { return fmt.Errorf("%s: %w", call, errNoResult) }
