package cffake

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
)

// The simulated client. Resolve answers a name as Cloudflare's DNS would
// for a DNS-only (grey-cloud) load balancer — one origin address per
// answer — so a test can draw many answers and measure the shares. For a
// proxied load balancer it answers with the origin the proxy would pick.
//
// Which record answers (Cloudflare's "DNS records for load balancing"):
// an enabled load balancer takes precedence over DNS records of the same
// name; a more specific record beats a wildcard load balancer; a disabled
// load balancer leaves the name to its records (none: NXDOMAIN). So: the
// exact name's enabled LB, else its A/AAAA/CNAME records, else the same
// for the wildcard "*.<parent>".
//
// Steering (steering_policy; "" is geo when region, country or PoP pools
// are set, else off):
//
//   - off (and dynamic_latency, proximity, which need latency or
//     coordinates the fake does not have): the first healthy pool of
//     default_pools.
//   - random (and least_outstanding_requests, least_connections, which
//     scale random_steering weights by load the fake does not have): a
//     healthy pool of default_pools drawn with probability proportional to
//     random_steering.pool_weights[pool] (absent: default_weight, 1 when
//     random_steering is unset). Weight 0 pools are drawn only when every
//     healthy pool weighs 0 (then the first healthy one).
//   - geo: the first healthy pool of country_pools[client country], then of
//     region_pools[client region] (RegionOf), then of default_pools.
//     pop_pools are not used (a DNS-only answer has no PoP here).
//
// A pool is healthy when it is enabled and at least minimum_origins of its
// enabled origins are healthy (see health.go). With no healthy pool the
// fallback_pool answers whatever its health (FromFallback). Within the
// pool an origin is drawn with probability proportional to its weight
// among the enabled healthy origins; the fallback pool falls back to its
// enabled origins, then to all, when none is healthy.
//
// An origin of weight 0 gets no traffic (Cloudflare: "An endpoint with a
// weight of 0 should not receive any traffic sent to that pool", endpoint
// steering, Weights). What Cloudflare does with a pool whose enabled
// healthy origins all weigh 0 is not documented; the fake's choice: such a
// pool is not healthy (steering moves on, as it would for a pool with
// nothing to answer), and as the fallback pool it answers from its other
// tiers' weighted origins, else Resolve fails (no answer). A host-name origin is answered as its name (the fake does not
// flatten CNAMEs).

// ErrNXDomain is returned (wrapped) by Resolve when nothing answers a name.
var ErrNXDomain = errors.New("cffake: no load balancer and no A, AAAA or CNAME record at that name")

// Answer is one simulated answer.
type Answer struct {
	LoadBalancer string   // id of the load balancer that answered ("" for plain records)
	Pool         string   // name of the pool the address came from ("" for plain records)
	Origin       string   // name of the origin ("" for plain records)
	Address      string   // the address the client uses: the origin's, or one plain value drawn evenly (resolvers rotate)
	Addresses    []string // every address in the answer: the one origin, or all plain values sorted
	Type         string   // "LB", or the plain records' type (A, AAAA, "A+AAAA" or CNAME)
	TTL          int      // the load balancer's ttl, or the records' (the smallest)
	FromFallback bool     // no pool was healthy and the fallback pool answered
}

// Resolve answers hostname for client c, drawing with rnd (nil: the
// math/rand/v2 global source). Safe for concurrent use.
func (s *Server) Resolve(hostname string, c Client, rnd *rand.Rand) (Answer, error) {
	name := strings.TrimSuffix(strings.ToLower(strings.TrimSpace(hostname)), ".")
	s.mu.Lock()
	defer s.mu.Unlock()
	z := s.zoneOf(name)
	if z == nil {
		return Answer{}, fmt.Errorf("resolve %s: no zone: %w", name, ErrNXDomain)
	}
	names := []string{name}
	if _, parent, ok := strings.Cut(name, "."); ok && name != z.name && (parent == z.name || strings.HasSuffix(parent, "."+z.name)) {
		names = append(names, "*."+parent)
	}
	for _, n := range names {
		for _, lb := range z.lbs {
			if lb.Name == n && lb.Enabled {
				a, err := s.steer(lb, c, rnd)
				if err != nil {
					return Answer{}, fmt.Errorf("resolve %s: load balancer %s: %w", name, lb.ID, err)
				}
				return a, nil
			}
		}
		if a, ok := plainAnswer(z, n, rnd); ok {
			return a, nil
		}
	}
	return Answer{}, fmt.Errorf("resolve %s: %w", name, ErrNXDomain)
}

// zoneOf is the zone holding name (the longest match). Callers hold s.mu.
func (s *Server) zoneOf(name string) *zone {
	var best *zone
	for _, z := range s.zones {
		if (name == z.name || strings.HasSuffix(name, "."+z.name)) && (best == nil || len(z.name) > len(best.name)) {
			best = z
		}
	}
	return best
}

func plainAnswer(z *zone, name string, rnd *rand.Rand) (Answer, bool) {
	var vals, types []string
	ttl := 0
	for _, r := range z.sorted() {
		if r.Name != name || (r.Type != "A" && r.Type != "AAAA" && r.Type != "CNAME") {
			continue
		}
		vals = append(vals, r.Content)
		if !slices.Contains(types, r.Type) {
			types = append(types, r.Type)
		}
		if ttl == 0 || r.TTL < ttl {
			ttl = r.TTL
		}
	}
	if len(vals) == 0 {
		return Answer{}, false
	}
	slices.Sort(vals)
	return Answer{Address: vals[intN(rnd, len(vals))], Addresses: vals, Type: strings.Join(types, "+"), TTL: ttl}, true
}

// steer picks a pool and an origin. Callers hold s.mu.
func (s *Server) steer(lb *LoadBalancer, c Client, rnd *rand.Rand) (Answer, error) {
	policy := lb.SteeringPolicy
	if policy == "" {
		policy = "off"
		if len(lb.RegionPools)+len(lb.CountryPools)+len(lb.PopPools) > 0 {
			policy = "geo"
		}
	}
	var pool *Pool
	switch policy {
	case "random", "least_outstanding_requests", "least_connections":
		pool = s.randomPool(lb, rnd)
	case "geo":
		for _, list := range [][]string{lb.CountryPools[strings.ToUpper(c.Country)], lb.RegionPools[RegionOf(c)], lb.DefaultPools} {
			if pool = s.firstHealthy(list); pool != nil {
				break
			}
		}
	default:
		pool = s.firstHealthy(lb.DefaultPools)
	}
	fallback := pool == nil
	if fallback {
		pool = s.acct.pools[lb.FallbackPool]
		if pool == nil {
			return Answer{}, fmt.Errorf("fallback pool %s does not exist", lb.FallbackPool)
		}
	}
	o, err := s.pickOrigin(pool, fallback, rnd)
	if err != nil {
		return Answer{}, err
	}
	return Answer{LoadBalancer: lb.ID, Pool: pool.Name, Origin: o.Name, Address: o.Address, Addresses: []string{o.Address},
		Type: "LB", TTL: lb.TTL, FromFallback: fallback}, nil
}

// originUp is the monitor's verdict on an origin (enabled or not): healthy
// when the pool has no monitor or the last results say up. Callers hold
// s.mu.
func (s *Server) originUp(p *Pool, o Origin) bool {
	if p.Monitor == "" {
		return true
	}
	st := s.health[healthKey{p.ID, o.Name}]
	return st == nil || !st.down
}

// poolHealthy: enabled, with at least minimum_origins healthy enabled
// origins, one of which weighs more than 0. Callers hold s.mu.
func (s *Server) poolHealthy(p *Pool) bool {
	if p == nil || !p.Enabled {
		return false
	}
	n, weighted := 0, false
	for _, o := range p.Origins {
		if o.Enabled && s.originUp(p, o) {
			n++
			weighted = weighted || o.Weight > 0
		}
	}
	return weighted && n >= max(1, p.MinimumOrigins)
}

func (s *Server) firstHealthy(ids []string) *Pool {
	for _, id := range ids {
		if p := s.acct.pools[id]; s.poolHealthy(p) {
			return p
		}
	}
	return nil
}

func (s *Server) randomPool(lb *LoadBalancer, rnd *rand.Rand) *Pool {
	var pools []*Pool
	var weights []float64
	for _, id := range lb.DefaultPools {
		p := s.acct.pools[id]
		if !s.poolHealthy(p) || slices.Contains(pools, p) {
			continue
		}
		w := 1.0
		if rs := lb.RandomSteering; rs != nil {
			w = rs.DefaultWeight
			if pw, ok := rs.PoolWeights[id]; ok {
				w = pw
			}
		}
		pools, weights = append(pools, p), append(weights, w)
	}
	if len(pools) == 0 {
		return nil
	}
	if i := weighted(weights, rnd); i >= 0 {
		return pools[i]
	}
	return pools[0]
}

// pickOrigin draws an origin of p by weight among its enabled healthy
// origins; for the fallback pool, then among the enabled ones, then all.
// Origins of weight 0 are never drawn.
func (s *Server) pickOrigin(p *Pool, fallback bool, rnd *rand.Rand) (Origin, error) {
	tiers := []func(Origin) bool{func(o Origin) bool { return o.Enabled && s.originUp(p, o) }}
	if fallback {
		tiers = append(tiers, func(o Origin) bool { return o.Enabled }, func(Origin) bool { return true })
	}
	for _, keep := range tiers {
		var cands []Origin
		var weights []float64
		for _, o := range p.Origins {
			if keep(o) && o.Weight > 0 {
				cands, weights = append(cands, o), append(weights, o.Weight)
			}
		}
		if i := weighted(weights, rnd); i >= 0 {
			return cands[i], nil
		}
	}
	return Origin{}, fmt.Errorf("pool %s has no healthy enabled origin of weight above 0", p.Name)
}

// weighted draws an index with probability proportional to its weight; -1
// when every weight is 0.
func weighted(weights []float64, rnd *rand.Rand) int {
	total := 0.0
	for _, w := range weights {
		total += w
	}
	if total <= 0 {
		return -1
	}
	x := total * float(rnd)
	for i, w := range weights {
		if x < w {
			return i
		}
		x -= w
	}
	for i := len(weights) - 1; i >= 0; i-- { // rounding at the top end
		if weights[i] > 0 {
			return i
		}
	}
	return -1
}

func float(rnd *rand.Rand) float64 {
	if rnd == nil {
		return rand.Float64()
	}
	return rnd.Float64()
}

func intN(rnd *rand.Rand, n int) int {
	if rnd == nil {
		return rand.IntN(n)
	}
	return rnd.IntN(n)
}
