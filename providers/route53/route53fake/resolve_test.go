package route53fake

import (
	"math/rand/v2"
	"net/netip"
	"slices"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	r53 "github.com/aws/aws-sdk-go-v2/service/route53"
	"github.com/aws/aws-sdk-go-v2/service/route53/types"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// scene is a zone of seeded record sets whose health checks (ids hc-<x>)
// are healthy but for those in down. Alias targets in hosted zone "ZONE"
// point at the scene's zone.
func scene(t *testing.T, sets []RecordSet, down ...string) (*Server, string) {
	t.Helper()
	s := New(Options{})
	t.Cleanup(s.Close)
	zone := s.AddZone("example.com")
	seen := map[string]bool{}
	sets = slices.Clone(sets)
	for i, rs := range sets {
		if rs.Alias != nil && rs.Alias.HostedZoneID == "ZONE" {
			target := *rs.Alias
			target.HostedZoneID = zone
			sets[i].Alias = &target
		}
		if id := rs.HealthCheckID; id != "" && !seen[id] {
			seen[id] = true
			s.PutHealthCheck(HealthCheck{ID: id, Config: HealthCheckConfig{Type: "TCP", IPAddress: "198.51.99.1", Port: 80, FailureThreshold: 3}})
		}
	}
	s.Put(zone, sets...)
	for _, id := range down {
		s.SetHealth(id, false)
	}
	return s, zone
}

func w(id, value string, weight int64, check string) RecordSet {
	return RecordSet{Name: "svc.example.com.", Type: "A", TTL: 60, Values: []string{value}, SetID: id, Weight: aws.Int64(weight), HealthCheckID: check}
}

// shares resolves n times and returns each answer's share in percent.
func shares(t *testing.T, s *Server, zone string, n int) map[string]float64 {
	t.Helper()
	rnd := rand.New(rand.NewPCG(14, 14))
	counts := map[string]int{}
	for range n {
		got, err := s.Resolve(zone, "svc.example.com", "A", Client{}, rnd)
		require.NoError(t, err)
		require.Len(t, got, 1)
		counts[got[0]]++
	}
	out := map[string]float64{}
	for v, c := range counts {
		out[v] = 100 * float64(c) / float64(n)
	}
	return out
}

func TestResolveWeighted(t *testing.T) {
	cases := []struct {
		name string
		sets []RecordSet
		down []string
		want map[string]float64 // answer → share in percent, ±1.5 points
	}{
		{
			name: "weights 255 and 109 answer 70/30",
			sets: []RecordSet{w("a", "192.0.2.1", 255, "hc-a"), w("b", "192.0.2.2", 109, "hc-b")},
			want: map[string]float64{"192.0.2.1": 70.05, "192.0.2.2": 29.95},
		},
		{
			name: "a set whose health check is unhealthy gets nothing",
			sets: []RecordSet{w("a", "192.0.2.1", 255, "hc-a"), w("b", "192.0.2.2", 109, "hc-b")},
			down: []string{"hc-a"},
			want: map[string]float64{"192.0.2.2": 100},
		},
		{
			name: "when every set is unhealthy, all are answered by weight",
			sets: []RecordSet{w("a", "192.0.2.1", 255, "hc-a"), w("b", "192.0.2.2", 109, "hc-b")},
			down: []string{"hc-a", "hc-b"},
			want: map[string]float64{"192.0.2.1": 70.05, "192.0.2.2": 29.95},
		},
		{
			name: "a set without a health check is healthy",
			sets: []RecordSet{w("a", "192.0.2.1", 1, ""), w("b", "192.0.2.2", 1, "hc-b")},
			down: []string{"hc-b"},
			want: map[string]float64{"192.0.2.1": 100},
		},
		{
			name: "a zero-weight set gets nothing while a non-zero set is healthy",
			sets: []RecordSet{w("a", "192.0.2.1", 255, "hc-a"), w("z", "192.0.2.9", 0, "hc-z")},
			want: map[string]float64{"192.0.2.1": 100},
		},
		{
			name: "zero-weight sets answer, equally, once every non-zero set is unhealthy",
			sets: []RecordSet{w("a", "192.0.2.1", 255, "hc-a"), w("y", "192.0.2.8", 0, "hc-y"), w("z", "192.0.2.9", 0, "hc-z")},
			down: []string{"hc-a"},
			want: map[string]float64{"192.0.2.8": 50, "192.0.2.9": 50},
		},
		{
			name: "an unhealthy zero-weight set stays out then too",
			sets: []RecordSet{w("a", "192.0.2.1", 255, "hc-a"), w("y", "192.0.2.8", 0, "hc-y"), w("z", "192.0.2.9", 0, "hc-z")},
			down: []string{"hc-a", "hc-z"},
			want: map[string]float64{"192.0.2.8": 100},
		},
		{
			name: "all weights zero share equally",
			sets: []RecordSet{w("y", "192.0.2.8", 0, ""), w("z", "192.0.2.9", 0, "")},
			want: map[string]float64{"192.0.2.8": 50, "192.0.2.9": 50},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			s, zone := scene(t, tc.sets, tc.down...)
			got := shares(t, s, zone, 20000)
			t.Logf("shares over 20,000 answers: %v", got)
			require.Len(t, got, len(tc.want), "answers: %v", got)
			for v, share := range tc.want {
				assert.InDelta(t, share, got[v], 1.5, "share of %s", v)
			}
		})
	}
}

func TestResolvePolicies(t *testing.T) {
	const name = "svc.example.com."
	a := func(id, value, check string) RecordSet {
		return RecordSet{Name: name, Type: "A", TTL: 60, Values: []string{value}, SetID: id, HealthCheckID: check}
	}
	failover := func(role, value, check string) RecordSet {
		rs := a(role, value, check)
		rs.Failover = role
		return rs
	}
	geo := func(id, value, check string, g GeoLocation) RecordSet {
		rs := a(id, value, check)
		rs.Geo = &g
		return rs
	}
	ip := func(loc, value, check string) RecordSet {
		rs := a(loc, value, check)
		rs.Cidr = &CidrRoutingConfig{CollectionID: "coll", LocationName: loc}
		return rs
	}
	alias := func(rs RecordSet, target string, evaluate bool) RecordSet {
		rs.Values, rs.TTL = nil, 0
		rs.Alias = &AliasTarget{HostedZoneID: "ZONE", DNSName: target, EvaluateTargetHealth: evaluate}
		return rs
	}
	de := Client{Country: "DE", Continent: "EU", IP: netip.MustParseAddr("198.51.99.7")}
	geoSets := []RecordSet{
		geo("us", "192.0.2.1", "hc-us", GeoLocation{Country: "US"}),
		geo("eu", "192.0.2.2", "hc-eu", GeoLocation{Continent: "EU"}),
		geo("default", "192.0.2.3", "hc-default", GeoLocation{Country: "*"}),
	}
	ipSets := []RecordSet{ip("office", "192.0.2.10", "hc-office"), ip("lab", "192.0.2.11", ""), ip("*", "192.0.2.12", "")}
	lat := func(region, value, check string) RecordSet {
		rs := a("latency-"+region, value, check)
		rs.Region = region
		return rs
	}
	latSets := []RecordSet{lat("us-east-1", "192.0.2.20", "hc-use1"), lat("eu-west-1", "192.0.2.21", "hc-euw1"), lat("ap-south-1", "192.0.2.22", "hc-aps1")}
	nearEU := Client{Regions: []string{"eu-west-1", "us-east-1", "ap-south-1"}}
	cases := []struct {
		name   string
		sets   []RecordSet
		down   []string
		client Client
		want   []string // nil = ErrNoAnswer
	}{
		{name: "a simple set answers its values", sets: []RecordSet{{Name: name, Type: "A", TTL: 60, Values: []string{"192.0.2.1", "192.0.2.2"}}}, want: []string{"192.0.2.1", "192.0.2.2"}},
		{name: "failover answers PRIMARY while it is healthy", sets: []RecordSet{failover("PRIMARY", "192.0.2.1", "hc-p"), failover("SECONDARY", "192.0.2.2", "hc-s")}, want: []string{"192.0.2.1"}},
		{name: "failover answers SECONDARY when PRIMARY's check fails", sets: []RecordSet{failover("PRIMARY", "192.0.2.1", "hc-p"), failover("SECONDARY", "192.0.2.2", "hc-s")}, down: []string{"hc-p"}, want: []string{"192.0.2.2"}},
		{name: "failover answers PRIMARY when both fail", sets: []RecordSet{failover("PRIMARY", "192.0.2.1", "hc-p"), failover("SECONDARY", "192.0.2.2", "hc-s")}, down: []string{"hc-p", "hc-s"}, want: []string{"192.0.2.1"}},
		{name: "a PRIMARY without a health check is always healthy", sets: []RecordSet{failover("PRIMARY", "192.0.2.1", ""), failover("SECONDARY", "192.0.2.2", "")}, want: []string{"192.0.2.1"}},
		{name: "a German client gets the EU continent set when there is no DE set", sets: geoSets, client: de, want: []string{"192.0.2.2"}},
		{name: "a German client gets the default set when the EU set is unhealthy", sets: geoSets, down: []string{"hc-eu"}, client: de, want: []string{"192.0.2.3"}},
		{name: "a country set wins over its continent's", sets: append(geoSets[:3:3], geo("de", "192.0.2.4", "", GeoLocation{Country: "DE"})), client: de, want: []string{"192.0.2.4"}},
		{name: "a subdivision set wins over its country's", sets: append(geoSets[:3:3], geo("us-ca", "192.0.2.5", "", GeoLocation{Country: "US", Subdivision: "CA"})),
			client: Client{Country: "US", Subdivision: "CA", Continent: "NA"}, want: []string{"192.0.2.5"}},
		{name: "a client no geolocation set matches gets the default", sets: geoSets, client: Client{Country: "JP", Continent: "AS"}, want: []string{"192.0.2.3"}},
		{name: "without a default set, an unmatched client gets no answer", sets: geoSets[:2], client: Client{Country: "JP", Continent: "AS"}},
		{name: "when every matching set is unhealthy, the most specific answers", sets: geoSets, down: []string{"hc-eu", "hc-default"}, client: de, want: []string{"192.0.2.2"}},
		{name: "a client inside a location's block gets that location's set", sets: ipSets, client: Client{IP: netip.MustParseAddr("203.0.113.77")}, want: []string{"192.0.2.10"}},
		{name: "the longest prefix wins", sets: ipSets, client: Client{IP: netip.MustParseAddr("203.0.113.200")}, want: []string{"192.0.2.11"}},
		{name: "an IPv4-mapped client address matches the IPv4 block", sets: ipSets, client: Client{IP: netip.MustParseAddr("::ffff:203.0.113.77")}, want: []string{"192.0.2.10"}},
		{name: "a client outside every block gets the default location", sets: ipSets, client: Client{IP: netip.MustParseAddr("198.51.99.1")}, want: []string{"192.0.2.12"}},
		{name: "an unhealthy location set falls back to the default", sets: ipSets, down: []string{"hc-office"}, client: Client{IP: netip.MustParseAddr("203.0.113.77")}, want: []string{"192.0.2.12"}},
		{
			name:   "an IP-based default aliased to geolocation sets answers by geolocation",
			sets:   append(slicesOf(geoSets, "geo.example.com."), ip("office", "192.0.2.10", ""), alias(ip("*", "", ""), "geo.example.com.", true)),
			client: de, want: []string{"192.0.2.2"},
		},
		{
			name: "an alias evaluating an all-unhealthy target fails over",
			sets: append(slicesOf([]RecordSet{w("a", "192.0.2.1", 1, "hc-a")}, "pool.example.com."),
				alias(failover("PRIMARY", "", ""), "pool.example.com.", true), failover("SECONDARY", "192.0.2.2", "")),
			down: []string{"hc-a"}, want: []string{"192.0.2.2"},
		},
		{
			name: "an alias that does not evaluate its target stays healthy",
			sets: append(slicesOf([]RecordSet{w("a", "192.0.2.1", 1, "hc-a")}, "pool.example.com."),
				alias(failover("PRIMARY", "", ""), "pool.example.com.", false), failover("SECONDARY", "192.0.2.2", "")),
			down: []string{"hc-a"}, want: []string{"192.0.2.1"},
		},
		{name: "latency answers the set of the region nearest the client", sets: latSets, client: nearEU, want: []string{"192.0.2.21"}},
		{name: "latency moves to the next nearest region while the nearest is unhealthy", sets: latSets, down: []string{"hc-euw1"}, client: nearEU, want: []string{"192.0.2.20"}},
		{name: "latency answers the nearest when every region is unhealthy", sets: latSets, down: []string{"hc-euw1", "hc-use1", "hc-aps1"}, client: nearEU, want: []string{"192.0.2.21"}},
		{name: "latency without the client's regions ranks them by its continent", sets: latSets, client: Client{Continent: "AS"}, want: []string{"192.0.2.22"}},
		{name: "a North American client is nearest us-east-1 among these", sets: latSets, client: Client{Continent: "NA"}, want: []string{"192.0.2.20"}},
		{
			name: "multivalue answers the healthy sets",
			sets: []RecordSet{multi(a("m1", "192.0.2.1", "hc-1")), multi(a("m2", "192.0.2.2", "hc-2")), multi(a("m3", "192.0.2.3", ""))},
			down: []string{"hc-2"}, want: []string{"192.0.2.1", "192.0.2.3"},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			s, zone := scene(t, tc.sets, tc.down...)
			s.PutCidrCollection(CidrCollection{ID: "coll", Name: "nets", Locations: map[string][]string{
				"office": {"203.0.113.0/24"}, "lab": {"203.0.113.128/25"},
			}})
			got, err := s.Resolve(zone, "SVC.example.com", "A", tc.client, rand.New(rand.NewPCG(1, 2)))
			if tc.want == nil {
				assert.ErrorIs(t, err, ErrNoAnswer)
				return
			}
			require.NoError(t, err)
			assert.ElementsMatch(t, tc.want, got)
		})
	}
}

// slicesOf renames sets.
func slicesOf(sets []RecordSet, name string) []RecordSet {
	var out []RecordSet
	for _, rs := range sets {
		rs.Name = name
		out = append(out, rs)
	}
	return out
}

func multi(rs RecordSet) RecordSet {
	rs.MultiValue = aws.Bool(true)
	return rs
}

func TestResolveErrors(t *testing.T) {
	s, zone := scene(t, []RecordSet{w("a", "192.0.2.1", 1, "")})
	_, err := s.Resolve(zone, "nothing.example.com", "A", Client{}, nil)
	assert.ErrorIs(t, err, ErrNoAnswer)
	_, err = s.Resolve(zone, "svc.example.com", "A", Client{}, nil)
	assert.ErrorContains(t, err, "needs a *rand.Rand")
	_, err = s.Resolve("ZNOPE", "svc.example.com", "A", Client{}, nil)
	assert.ErrorContains(t, err, "NoSuchHostedZone")
}

func TestResolveFollowsTheHealthChecker(t *testing.T) {
	s := New(Options{AllowPrivateIPs: true})
	defer s.Close()
	c := client(s)
	zone := s.AddZone("example.com")
	east, west := newHTTPBackend(t), newHTTPBackend(t)
	defer west.stop()
	check := func(ref string, b *httpBackend) *string {
		out, err := c.CreateHealthCheck(ctx, &r53.CreateHealthCheckInput{CallerReference: aws.String(ref), HealthCheckConfig: &types.HealthCheckConfig{
			Type: types.HealthCheckTypeHttp, IPAddress: aws.String("127.0.0.1"), Port: aws.Int32(b.port()), FailureThreshold: aws.Int32(2)}})
		require.NoError(t, err)
		return out.HealthCheck.Id
	}
	coll := collection(t, c, "nets", put("office", "203.0.113.0/24"))
	sets := []*types.ResourceRecordSet{
		weighted(set("svc.example.com.", "A", 60, "192.0.2.1"), "east", 255),
		weighted(set("svc.example.com.", "A", 60, "192.0.2.2"), "west", 109),
		ipSet("ip.example.com.", "office", coll, "office", "192.0.2.1"),
		ipSet("ip.example.com.", "default", coll, "*", "192.0.2.2"),
	}
	sets[0].HealthCheckId, sets[1].HealthCheckId = check("east", east), check("west", west)
	sets[2].HealthCheckId = sets[0].HealthCheckId
	var changes []types.Change
	for _, rs := range sets {
		changes = append(changes, change(create, rs))
	}
	require.NoError(t, changeSets(c, zone, changes...))

	office := Client{IP: netip.MustParseAddr("203.0.113.9")}
	got, err := s.Resolve(zone, "ip.example.com", "A", office, nil)
	require.NoError(t, err)
	assert.Equal(t, []string{"192.0.2.1"}, got)
	assert.InDelta(t, 70.05, shares(t, s, zone, 20000)["192.0.2.1"], 1.5)

	east.stop()
	s.CheckHealth(ctx)
	s.CheckHealth(ctx)
	assert.Equal(t, map[string]float64{"192.0.2.2": 100}, shares(t, s, zone, 1000), "east's backend is down: its set is out")
	got, err = s.Resolve(zone, "ip.example.com", "A", office, nil)
	require.NoError(t, err)
	assert.Equal(t, []string{"192.0.2.2"}, got, "the office location's set is unhealthy: the default answers")
}

func TestLatencyRecordsNeedAnAWSRegion(t *testing.T) {
	s := New(Options{})
	defer s.Close()
	c := client(s)
	zone := s.AddZone("example.com")
	change := func(region string) error {
		_, err := c.ChangeResourceRecordSets(t.Context(), &r53.ChangeResourceRecordSetsInput{HostedZoneId: aws.String(zone), ChangeBatch: &types.ChangeBatch{
			Changes: []types.Change{{Action: types.ChangeActionCreate, ResourceRecordSet: &types.ResourceRecordSet{
				Name: aws.String("svc.example.com"), Type: types.RRTypeA, TTL: aws.Int64(60), SetIdentifier: aws.String("latency-" + region),
				Region: types.ResourceRecordSetRegion(region), ResourceRecords: []types.ResourceRecord{{Value: aws.String("192.0.2.1")}}}}}}})
		return err
	}
	require.NoError(t, change("eu-west-1"))
	err := change("europe-west1")
	require.Error(t, err)
	assert.Contains(t, err.Error(), "Member must satisfy enum value set")
	got, err := s.Resolve(zone, "svc.example.com", "A", Client{Continent: "EU"}, nil)
	require.NoError(t, err)
	assert.Equal(t, []string{"192.0.2.1"}, got)
}

func TestLatencyOrder(t *testing.T) {
	eu := LatencyOrder("EU")
	assert.True(t, strings.HasPrefix(eu[0], "eu-"), eu[0])
	assert.Len(t, eu, len(LatencyOrder("")), "every region, in some order")
	assert.Equal(t, "ap-southeast-2", LatencyOrder("OC")[0])
}
