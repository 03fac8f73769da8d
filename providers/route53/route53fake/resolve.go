package route53fake

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"net/netip"
	"slices"
	"strings"

	"github.com/meridian-gslb/meridian/internal/model"
)

// Client is the client a simulated answer is for: its address (the EDNS
// client subnet or the resolver's address Route 53 would see) and where
// Route 53's geolocation database places it (ISO codes; Continent one of
// AF, AN, AS, EU, NA, OC, SA).
type Client struct {
	IP          netip.Addr
	Country     string
	Continent   string
	Subdivision string
	// Regions are the AWS regions in order of the client's latency to
	// them, nearest first, as Route 53's latency measurements would rank
	// them (the test's choice). Empty: ranked by Continent (LatencyOrder).
	Regions []string
}

// ErrNoAnswer is Resolve's error when Route 53 would answer without
// records: no set of that name and type, or no geolocation / IP-based set
// for the client and no default ("*") set.
var ErrNoAnswer = errors.New("route53fake: no answer")

// maxAliasDepth bounds alias chains (and breaks alias loops).
const maxAliasDepth = 8

// Resolve answers a query for name and type from zoneID the way Route 53's
// routing policies would answer client c, given the record sets and the
// current status of their health checks, and returns the chosen set's
// values. rnd draws the weighted and multivalue choices (required for
// those policies); the rules, from the Developer Guide ("Choosing a
// routing policy", "How Amazon Route 53 chooses records when health
// checking is configured") and the API reference (ResourceRecordSet):
//
//   - A set is healthy when it has no health check or its check is
//     healthy; a set whose health check no longer exists is unhealthy. An
//     alias to a name of the same zone with EvaluateTargetHealth is healthy
//     when at least one set of the target name and type is (and its own
//     health check, if any, too).
//   - simple: the values.
//   - weighted: one set drawn by weight among the healthy sets with a
//     non-zero weight; when those are all unhealthy or zero, one drawn with
//     equal chances among the healthy ones (weight-0 sets answer only
//     then); when every set is unhealthy, Route 53 considers them all
//     healthy.
//   - failover: PRIMARY when healthy, else SECONDARY when healthy, else
//     PRIMARY (a lone SECONDARY answers).
//   - geolocation: the most specific set matching the client (subdivision,
//     country, continent, then the "*" country), moving to the broader one
//     while the matched set is unhealthy; when none is healthy, the most
//     specific match.
//   - IP-based: the set of the location whose CIDR block holds c.IP (the
//     longest prefix), else the default "*" set; an unhealthy location set
//     falls back to "*" when that is healthy.
//   - multivalue: the values of up to eight healthy sets (up to eight
//     unhealthy ones when none is healthy), drawn at random beyond eight.
//   - latency: the set of the region nearest the client (Client.Regions,
//     else LatencyOrder), moving to the next nearest while it is
//     unhealthy; when none is healthy, the nearest.
//   - alias to a name of the same zone: that name and type, resolved by
//     the same rules. Aliases to other zones are not simulated (an error).
func (s *Server) Resolve(zoneID, name, typ string, c Client, rnd *rand.Rand) ([]string, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	z, aerr := s.zone(zoneID)
	if aerr != nil {
		return nil, aerr
	}
	r := resolver{s: s, z: z, c: c, rnd: rnd}
	return r.resolve(canonicalName(name), typ, 0)
}

type resolver struct {
	s   *Server
	z   *zone
	c   Client
	rnd *rand.Rand
}

// group returns the sets of name and type by identifier.
func (r *resolver) group(name, typ string) []RecordSet {
	var out []RecordSet
	for k, rs := range r.z.sets {
		if k.name == name && k.typ == typ {
			out = append(out, rs)
		}
	}
	slices.SortFunc(out, func(a, b RecordSet) int { return strings.Compare(a.SetID, b.SetID) })
	return out
}

func (r *resolver) resolve(name, typ string, depth int) ([]string, error) {
	if depth > maxAliasDepth {
		return nil, fmt.Errorf("route53fake: alias chain longer than %d at %s %s", maxAliasDepth, name, typ)
	}
	sets := r.group(name, typ)
	if len(sets) == 0 {
		return nil, fmt.Errorf("%w: no %s record set at %s", ErrNoAnswer, typ, name)
	}
	if sets[0].policy() == "multivalue" {
		return r.multivalue(sets, depth)
	}
	chosen, err := r.choose(sets, depth)
	if err != nil {
		return nil, err
	}
	return r.values(chosen, depth)
}

func (r *resolver) choose(sets []RecordSet, depth int) (RecordSet, error) {
	switch p := sets[0].policy(); p {
	case "simple":
		return sets[0], nil
	case "weighted":
		return r.weighted(sets, depth)
	case "failover":
		var primary, secondary []RecordSet
		for _, rs := range sets {
			if rs.Failover == "PRIMARY" {
				primary = append(primary, rs)
			} else {
				secondary = append(secondary, rs)
			}
		}
		return r.first(append(primary, secondary...), depth)
	case "geolocation":
		return r.geolocation(sets, depth)
	case "IP-based":
		return r.ipBased(sets, depth)
	case "latency":
		return r.latency(sets, depth)
	default:
		return RecordSet{}, fmt.Errorf("route53fake: %s routing is not simulated (%s %s)", p, sets[0].Name, sets[0].Type)
	}
}

// first returns the first healthy set of chain, else the first one; an
// empty chain is no answer.
func (r *resolver) first(chain []RecordSet, depth int) (RecordSet, error) {
	if len(chain) == 0 {
		return RecordSet{}, fmt.Errorf("%w: no set matches the client", ErrNoAnswer)
	}
	for _, rs := range chain {
		if r.healthy(rs, depth) {
			return rs, nil
		}
	}
	return chain[0], nil
}

func (r *resolver) weighted(sets []RecordSet, depth int) (RecordSet, error) {
	if r.rnd == nil {
		return RecordSet{}, errors.New("route53fake: Resolve needs a *rand.Rand for weighted sets")
	}
	var healthy []RecordSet
	for _, rs := range sets {
		if r.healthy(rs, depth) {
			healthy = append(healthy, rs)
		}
	}
	if len(healthy) == 0 {
		healthy = sets // every set unhealthy: all are considered healthy
	}
	var total int64
	for _, rs := range healthy {
		total += max(deref(rs.Weight), 0)
	}
	if total == 0 {
		return healthy[r.rnd.IntN(len(healthy))], nil
	}
	x := r.rnd.Int64N(total)
	for _, rs := range healthy {
		w := max(deref(rs.Weight), 0)
		if x < w {
			return rs, nil
		}
		x -= w
	}
	return healthy[len(healthy)-1], nil // not reached
}

func (r *resolver) geolocation(sets []RecordSet, depth int) (RecordSet, error) {
	var keys []GeoLocation
	c := r.c
	if c.Country != "" && c.Subdivision != "" {
		keys = append(keys, GeoLocation{Country: c.Country, Subdivision: c.Subdivision})
	}
	if c.Country != "" {
		keys = append(keys, GeoLocation{Country: c.Country})
	}
	if c.Continent != "" {
		keys = append(keys, GeoLocation{Continent: c.Continent})
	}
	keys = append(keys, GeoLocation{Country: "*"})
	var chain []RecordSet
	for _, k := range keys {
		for _, rs := range sets {
			if rs.Geo != nil && *rs.Geo == k {
				chain = append(chain, rs)
			}
		}
	}
	return r.first(chain, depth)
}

func (r *resolver) ipBased(sets []RecordSet, depth int) (RecordSet, error) {
	location, best := "", -1
	if coll := r.s.collections[sets[0].Cidr.CollectionID]; coll != nil && r.c.IP.IsValid() {
		ip := r.c.IP.Unmap()
		for loc, blocks := range coll.locations {
			for _, b := range blocks {
				if b.Contains(ip) && (b.Bits() > best || (b.Bits() == best && loc < location)) {
					location, best = loc, b.Bits()
				}
			}
		}
	}
	var chain []RecordSet
	for _, want := range []string{location, "*"} {
		for _, rs := range sets {
			if want != "" && rs.Cidr.LocationName == want {
				chain = append(chain, rs)
			}
		}
	}
	return r.first(chain, depth)
}

func (r *resolver) multivalue(sets []RecordSet, depth int) ([]string, error) {
	var healthy []RecordSet
	for _, rs := range sets {
		if r.healthy(rs, depth) {
			healthy = append(healthy, rs)
		}
	}
	if len(healthy) == 0 {
		healthy = sets
	}
	if len(healthy) > 8 {
		if r.rnd == nil {
			return nil, errors.New("route53fake: Resolve needs a *rand.Rand for more than eight multivalue sets")
		}
		r.rnd.Shuffle(len(healthy), func(i, j int) { healthy[i], healthy[j] = healthy[j], healthy[i] })
		healthy = healthy[:8]
	}
	var out []string
	for _, rs := range healthy {
		out = append(out, rs.Values...)
	}
	return out, nil
}

// values are the answer of a chosen set: its values, or an alias target's
// answer.
func (r *resolver) values(rs RecordSet, depth int) ([]string, error) {
	if rs.Alias == nil {
		return slices.Clone(rs.Values), nil
	}
	if !r.sameZone(rs.Alias) {
		return nil, fmt.Errorf("route53fake: aliases to other hosted zones (%s %s) are not simulated", rs.Alias.HostedZoneID, rs.Alias.DNSName)
	}
	return r.resolve(rs.Alias.DNSName, rs.Type, depth+1)
}

func (r *resolver) sameZone(a *AliasTarget) bool {
	return strings.TrimPrefix(a.HostedZoneID, "/hostedzone/") == r.z.id
}

// healthy reports whether Route 53 would consider rs healthy.
func (r *resolver) healthy(rs RecordSet, depth int) bool {
	if rs.HealthCheckID != "" {
		h, ok := r.s.checks[rs.HealthCheckID]
		if !ok || !r.s.statusOf(h, 0) {
			return false
		}
	}
	if rs.Alias == nil || !rs.Alias.EvaluateTargetHealth || !r.sameZone(rs.Alias) {
		return true
	}
	if depth >= maxAliasDepth {
		return false
	}
	for _, t := range r.group(rs.Alias.DNSName, rs.Type) {
		if r.healthy(t, depth+1) {
			return true
		}
	}
	return false
}

// latency orders the latency sets by the client's region order and takes
// the first healthy one.
func (r *resolver) latency(sets []RecordSet, depth int) (RecordSet, error) {
	order := r.c.Regions
	if len(order) == 0 {
		order = LatencyOrder(r.c.Continent)
	}
	rank := func(region string) int {
		if i := slices.Index(order, region); i >= 0 {
			return i
		}
		return len(order)
	}
	chain := slices.Clone(sets)
	slices.SortStableFunc(chain, func(a, b RecordSet) int {
		if ra, rb := rank(a.Region), rank(b.Region); ra != rb {
			return ra - rb
		}
		return strings.Compare(a.Region, b.Region)
	})
	return r.first(chain, depth)
}

// latencyPrefixes rank AWS regions for a client on each continent: the
// regions starting with the first prefix are nearest, then the second's…;
// the rest follow by name. A coarse stand-in for Route 53's latency data,
// enough to tell which set a client of a continent gets.
var latencyPrefixes = map[string][]string{
	"NA": {"us-", "ca-", "mx-"},
	"SA": {"sa-", "us-east-"},
	"EU": {"eu-", "il-", "me-"},
	"AF": {"af-", "eu-south-", "me-"},
	"AS": {"ap-", "me-", "il-", "cn-"},
	"OC": {"ap-southeast-2", "ap-southeast-4", "ap-southeast-6", "ap-"},
}

// LatencyOrder returns every AWS region of Route 53 latency records,
// nearest first for a client on continent (an ISO continent code; "" or
// an unknown code: by name).
func LatencyOrder(continent string) []string {
	prefixes := latencyPrefixes[continent]
	rank := func(region string) int {
		for i, p := range prefixes {
			if strings.HasPrefix(region, p) {
				return i
			}
		}
		return len(prefixes)
	}
	out := slices.Clone(model.AWSRegions)
	slices.SortStableFunc(out, func(a, b string) int { return rank(a) - rank(b) })
	return out
}
