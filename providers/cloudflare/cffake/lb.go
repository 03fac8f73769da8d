package cffake

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"time"
)

// Load Balancing objects as the fake stores and serves them. The JSON tags
// are Cloudflare's field names (cloudflare-go v6 load_balancers); the
// stored struct is what GET answers, so RawMonitor, RawPool and
// RawLoadBalancer return the exact bytes a client reads.

// Monitor is a health monitor (account level).
type Monitor struct {
	ID              string              `json:"id"`
	CreatedOn       time.Time           `json:"created_on"`
	ModifiedOn      time.Time           `json:"modified_on"`
	Type            string              `json:"type"` // http (default), https, tcp, udp_icmp, icmp_ping, smtp
	Description     string              `json:"description"`
	Method          string              `json:"method"` // http(s): GET (default) or HEAD; tcp: connection_established
	Path            string              `json:"path"`   // http(s): default "/"
	Header          map[string][]string `json:"header"`
	Port            int                 `json:"port"`     // required for tcp, udp_icmp, smtp; 0 for http(s): the origin's port in the fake, else 80/443
	Timeout         int                 `json:"timeout"`  // seconds (default 5)
	Retries         int                 `json:"retries"`  // immediate retries after a timeout (default 2)
	Interval        int                 `json:"interval"` // seconds between checks (default 60)
	ExpectedBody    string              `json:"expected_body"`
	ExpectedCodes   string              `json:"expected_codes"` // http(s): "200" (default) or a range "2xx"
	FollowRedirects bool                `json:"follow_redirects"`
	AllowInsecure   bool                `json:"allow_insecure"`
	ConsecutiveUp   int                 `json:"consecutive_up"`   // passes in a row to turn healthy (default 0, taken as 1)
	ConsecutiveDown int                 `json:"consecutive_down"` // failures in a row to turn unhealthy (default 0, taken as 1)
	ProbeZone       string              `json:"probe_zone"`
}

// UnmarshalJSON applies Cloudflare's defaults to the fields a body leaves out.
func (m *Monitor) UnmarshalJSON(b []byte) error {
	type plain Monitor
	p := plain{Type: "http", Timeout: 5, Retries: 2, Interval: 60}
	if err := json.Unmarshal(b, &p); err != nil {
		return err
	}
	*m = Monitor(p)
	return nil
}

// Pool is a pool of origins (account level).
type Pool struct {
	ID                 string          `json:"id"`
	CreatedOn          time.Time       `json:"created_on"`
	ModifiedOn         time.Time       `json:"modified_on"`
	Name               string          `json:"name"` // unique in the account; letters, digits, - and _
	Description        string          `json:"description"`
	Enabled            bool            `json:"enabled"` // default true
	DisabledAt         *time.Time      `json:"disabled_at,omitempty"`
	MinimumOrigins     int             `json:"minimum_origins"` // healthy origins needed for the pool to be healthy (default 1)
	Monitor            string          `json:"monitor,omitempty"`
	Origins            []Origin        `json:"origins"`
	CheckRegions       []string        `json:"check_regions"`
	Latitude           *float64        `json:"latitude,omitempty"`
	Longitude          *float64        `json:"longitude,omitempty"`
	NotificationEmail  string          `json:"notification_email"`
	OriginSteering     *OriginSteering `json:"origin_steering,omitempty"`
	Networks           []string        `json:"networks,omitempty"`
	LoadShedding       json.RawMessage `json:"load_shedding,omitempty"`       // stored, not interpreted
	NotificationFilter json.RawMessage `json:"notification_filter,omitempty"` // stored, not interpreted
}

// UnmarshalJSON applies Cloudflare's defaults to the fields a body leaves out.
func (p *Pool) UnmarshalJSON(b []byte) error {
	type plain Pool
	q := plain{Enabled: true, MinimumOrigins: 1}
	if err := json.Unmarshal(b, &q); err != nil {
		return err
	}
	*p = Pool(q)
	return nil
}

// Origin is one origin (endpoint) of a pool.
type Origin struct {
	Name             string        `json:"name"` // unique in the pool
	Address          string        `json:"address"`
	Enabled          bool          `json:"enabled"` // default true
	DisabledAt       *time.Time    `json:"disabled_at,omitempty"`
	Weight           float64       `json:"weight"` // 0..1 in steps of 0.01 (default 1)
	Port             int           `json:"port,omitempty"`
	Header           *OriginHeader `json:"header,omitempty"`
	VirtualNetworkID string        `json:"virtual_network_id,omitempty"`
	FlattenCNAME     bool          `json:"flatten_cname"` // default true
}

// UnmarshalJSON applies Cloudflare's defaults to the fields a body leaves out.
func (o *Origin) UnmarshalJSON(b []byte) error {
	type plain Origin
	p := plain{Enabled: true, Weight: 1, FlattenCNAME: true}
	if err := json.Unmarshal(b, &p); err != nil {
		return err
	}
	*o = Origin(p)
	return nil
}

// OriginHeader is an origin's request header override (Host only).
type OriginHeader struct {
	Host []string `json:"Host"`
}

// OriginSteering chooses origins within a pool.
type OriginSteering struct {
	Policy string `json:"policy"` // random, hash, least_outstanding_requests, least_connections
}

// LoadBalancer is a load balancer (zone level).
type LoadBalancer struct {
	ID                        string              `json:"id"`
	CreatedOn                 time.Time           `json:"created_on"`
	ModifiedOn                time.Time           `json:"modified_on"`
	ZoneName                  string              `json:"zone_name"`
	Name                      string              `json:"name"` // a host name in the zone, unique in the zone
	Description               string              `json:"description"`
	Enabled                   bool                `json:"enabled"` // default true
	TTL                       int                 `json:"ttl"`     // DNS-only answers' TTL, 30..86400 (default 30)
	Proxied                   bool                `json:"proxied"`
	FallbackPool              string              `json:"fallback_pool"`
	DefaultPools              []string            `json:"default_pools"`
	RegionPools               map[string][]string `json:"region_pools"`
	CountryPools              map[string][]string `json:"country_pools"`
	PopPools                  map[string][]string `json:"pop_pools"`
	SteeringPolicy            string              `json:"steering_policy"` // "", off, geo, random, dynamic_latency, proximity, least_outstanding_requests, least_connections
	RandomSteering            *RandomSteering     `json:"random_steering,omitempty"`
	LocationStrategy          *LocationStrategy   `json:"location_strategy,omitempty"`
	SessionAffinity           string              `json:"session_affinity"` // none (default), cookie, ip_cookie, header
	SessionAffinityTTL        float64             `json:"session_affinity_ttl,omitempty"`
	SessionAffinityAttributes json.RawMessage     `json:"session_affinity_attributes,omitempty"` // stored, not interpreted
	AdaptiveRouting           json.RawMessage     `json:"adaptive_routing,omitempty"`            // stored, not interpreted
	Rules                     json.RawMessage     `json:"rules,omitempty"`                       // stored, not interpreted
	Networks                  []string            `json:"networks,omitempty"`
}

// UnmarshalJSON applies Cloudflare's defaults to the fields a body leaves out.
func (lb *LoadBalancer) UnmarshalJSON(b []byte) error {
	type plain LoadBalancer
	p := plain{Enabled: true, TTL: 30, SessionAffinity: "none"}
	if err := json.Unmarshal(b, &p); err != nil {
		return err
	}
	*lb = LoadBalancer(p)
	return nil
}

// RandomSteering weighs pools for the random steering policy.
type RandomSteering struct {
	DefaultWeight float64            `json:"default_weight"`         // for pools not in PoolWeights: 0..1 in steps of 0.1 (default 1)
	PoolWeights   map[string]float64 `json:"pool_weights,omitempty"` // pool id → weight 0..1
}

// UnmarshalJSON applies Cloudflare's defaults to the fields a body leaves out.
func (r *RandomSteering) UnmarshalJSON(b []byte) error {
	type plain RandomSteering
	p := plain{DefaultWeight: 1}
	if err := json.Unmarshal(b, &p); err != nil {
		return err
	}
	*r = RandomSteering(p)
	return nil
}

// LocationStrategy says how a DNS-only load balancer locates its client.
type LocationStrategy struct {
	Mode      string `json:"mode,omitempty"`       // pop, resolver_ip
	PreferECS string `json:"prefer_ecs,omitempty"` // always, never, proximity, geo
}

// account holds the account-level Load Balancing objects. The fake has
// one account; every zone belongs to it.
type account struct {
	id       string
	monitors map[string]*Monitor // by id
	pools    map[string]*Pool    // by id
}

// AccountID returns the id of the fake's one account, the one every zone
// belongs to (GET /zones/{id} → result.account.id).
func (s *Server) AccountID() string { return s.acct.id }

// DisableLoadBalancing makes every load_balancers route (monitors, pools,
// load balancers) answer Cloudflare's entitlement error, as for an account
// or zone without Load Balancing: HTTP 403, code CodeLBNotEntitled,
// "load balancing not enabled for zone" (zone routes) or "… for account".
// Objects already stored are kept (and still steer Resolve).
func (s *Server) DisableLoadBalancing() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.lbOff = true
}

// EnableLoadBalancing undoes DisableLoadBalancing (the default).
func (s *Server) EnableLoadBalancing() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.lbOff = false
}

// PutMonitor stores a monitor as a POST would, with the same validation,
// and returns it as stored. It is for seeding objects "created by someone
// else": the fields are taken as given (zero values are not replaced by
// Cloudflare's defaults, except an empty Type, Method, Path or
// ExpectedCodes). An ID given is kept if unused, else a new one is made.
func (s *Server) PutMonitor(m Monitor) (Monitor, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.seedID(m.ID); err != nil {
		return Monitor{}, err
	}
	out, aerr := s.storeMonitor(nil, m)
	if aerr != nil {
		return Monitor{}, aerr
	}
	return cloneJSON(*out), nil
}

// PutPool stores a pool as a POST would (see PutMonitor). Set Enabled,
// MinimumOrigins and each origin's Enabled and Weight yourself: the zero
// values mean disabled, 0 and weight 0.
func (s *Server) PutPool(p Pool) (Pool, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.seedID(p.ID); err != nil {
		return Pool{}, err
	}
	out, aerr := s.storePool(nil, p)
	if aerr != nil {
		return Pool{}, aerr
	}
	return cloneJSON(*out), nil
}

// PutLoadBalancer stores a load balancer in a zone as a POST would (see
// PutMonitor; set Enabled yourself, a zero TTL becomes 30).
func (s *Server) PutLoadBalancer(zoneID string, lb LoadBalancer) (LoadBalancer, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	z, ok := s.zones[zoneID]
	if !ok {
		return LoadBalancer{}, fmt.Errorf("cffake: no zone %s", zoneID)
	}
	if err := s.seedID(lb.ID); err != nil {
		return LoadBalancer{}, err
	}
	out, aerr := s.storeLB(z, nil, lb)
	if aerr != nil {
		return LoadBalancer{}, aerr
	}
	return cloneJSON(*out), nil
}

// seedID refuses an ID already used by any Load Balancing object.
func (s *Server) seedID(id string) error {
	if id == "" {
		return nil
	}
	if s.acct.monitors[id] != nil || s.acct.pools[id] != nil || s.findLB(id) != nil {
		return fmt.Errorf("cffake: id %s is in use", id)
	}
	return nil
}

// Monitors returns copies of the account's monitors, oldest first.
func (s *Server) Monitors() []Monitor {
	s.mu.Lock()
	defer s.mu.Unlock()
	return sortedCopies(s.acct.monitors, func(m *Monitor) (time.Time, string) { return m.CreatedOn, m.ID })
}

// Pools returns copies of the account's pools, sorted by name.
func (s *Server) Pools() []Pool {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := sortedCopies(s.acct.pools, func(p *Pool) (time.Time, string) { return time.Time{}, p.Name })
	return out
}

// LoadBalancers returns copies of a zone's load balancers, sorted by name.
func (s *Server) LoadBalancers(zoneID string) []LoadBalancer {
	s.mu.Lock()
	defer s.mu.Unlock()
	z, ok := s.zones[zoneID]
	if !ok {
		return nil
	}
	return sortedCopies(z.lbs, func(lb *LoadBalancer) (time.Time, string) { return time.Time{}, lb.Name })
}

// RawMonitor returns the stored JSON of a monitor (nil when there is none):
// the bytes GET answers as result. Compare them before and after a sync to
// prove an object was not touched (a write changes at least modified_on).
func (s *Server) RawMonitor(id string) []byte {
	s.mu.Lock()
	defer s.mu.Unlock()
	if m := s.acct.monitors[id]; m != nil {
		return mustJSON(m)
	}
	return nil
}

// RawPool returns the stored JSON of a pool (nil when there is none).
func (s *Server) RawPool(id string) []byte {
	s.mu.Lock()
	defer s.mu.Unlock()
	if p := s.acct.pools[id]; p != nil {
		return mustJSON(p)
	}
	return nil
}

// RawLoadBalancer returns the stored JSON of a load balancer of any zone
// (nil when there is none).
func (s *Server) RawLoadBalancer(id string) []byte {
	s.mu.Lock()
	defer s.mu.Unlock()
	if lb := s.findLB(id); lb != nil {
		return mustJSON(lb)
	}
	return nil
}

// findLB looks a load balancer up in every zone. Callers hold s.mu.
func (s *Server) findLB(id string) *LoadBalancer {
	for _, z := range s.zones {
		if lb := z.lbs[id]; lb != nil {
			return lb
		}
	}
	return nil
}

// poolByName finds a pool by name. Callers hold s.mu.
func (s *Server) poolByName(name string) *Pool {
	for _, p := range s.acct.pools {
		if p.Name == name {
			return p
		}
	}
	return nil
}

func sortedCopies[T any](m map[string]*T, key func(*T) (time.Time, string)) []T {
	ptrs := make([]*T, 0, len(m))
	for _, v := range m {
		ptrs = append(ptrs, v)
	}
	slices.SortFunc(ptrs, func(a, b *T) int {
		ta, sa := key(a)
		tb, sb := key(b)
		if c := ta.Compare(tb); c != 0 {
			return c
		}
		return strings.Compare(sa, sb)
	})
	out := make([]T, len(ptrs))
	for i, p := range ptrs {
		out[i] = cloneJSON(*p)
	}
	return out
}

// cloneJSON deep-copies a stored object through its JSON form (every field
// is serialized, so the defaults of UnmarshalJSON do not apply).
func cloneJSON[T any](v T) T {
	var out T
	if err := json.Unmarshal(mustJSON(v), &out); err != nil {
		panic(fmt.Sprintf("cffake: copy %T: %v", v, err)) // a stored object always round-trips
	}
	return out
}

func mustJSON(v any) []byte {
	b, err := json.Marshal(v)
	if err != nil {
		panic(fmt.Sprintf("cffake: encode %T: %v", v, err)) // stored objects are plain data
	}
	return b
}
