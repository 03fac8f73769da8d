package route53

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"math"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/meridian-gslb/meridian/internal/model"
	"github.com/meridian-gslb/meridian/providers"
	"github.com/meridian-gslb/meridian/providers/apicall"
	"github.com/meridian-gslb/meridian/providers/plan"
	"github.com/meridian-gslb/meridian/providers/route53/route53fake"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

const (
	testZone   = "example.com."
	testOwner  = "meridian-test"
	testSecret = "fake-secret-key-never-logged"
)

// env is a fake Route 53 with one hosted zone and a provider talking to it
// through the real SDK client.
type env struct {
	fake   *route53fake.Server
	zoneID string
	p      *Provider
	reg    *prometheus.Registry
	logs   *syncBuffer
}

func newEnv(t *testing.T, fo route53fake.Options, o Options) *env {
	t.Helper()
	fake := route53fake.New(fo)
	t.Cleanup(fake.Close)
	e := &env{fake: fake, zoneID: fake.AddZone(testZone), reg: prometheus.NewRegistry(), logs: &syncBuffer{}}
	e.p = e.provider(t, o)
	t.Cleanup(func() { assert.NotContains(t, e.logs.String(), testSecret, "credentials never reach the log") })
	return e
}

// provider returns a provider of the env's fake with test-speed defaults.
func (e *env) provider(t *testing.T, o Options) *Provider {
	t.Helper()
	if o.RequestsPerSecond == 0 {
		o.RequestsPerSecond = 1000
	}
	if o.PollInterval == 0 {
		o.PollInterval = 5 * time.Millisecond
	}
	if o.Backoff == 0 {
		o.Backoff, o.MaxBackoff = time.Millisecond, 5*time.Millisecond
	}
	if o.RequestTimeout == 0 {
		o.RequestTimeout = 5 * time.Second
	}
	o.Metrics = apicall.NewMetrics(e.reg)
	o.Logger = slog.New(slog.NewTextHandler(e.logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	p, err := NewFromConfig(context.Background(), model.Route53Zone{Zone: testZone, Region: "eu-west-1", Endpoint: e.fake.URL()}, o,
		config.WithCredentialsProvider(credentials.NewStaticCredentialsProvider("AKIDFAKE", testSecret, "")),
		config.WithSharedConfigFiles([]string{}), config.WithSharedCredentialsFiles([]string{}))
	require.NoError(t, err)
	return p
}

// sync runs one reconcile pass: read, plan against views, apply.
func (e *env) sync(t *testing.T, views []providers.ServiceView) (plan.Plan, providers.Result) {
	t.Helper()
	ctx := context.Background()
	cur, err := e.p.Records(ctx, testZone)
	require.NoError(t, err)
	pl := plan.Compute(plan.Input{Owner: testOwner, Desired: Translate(views, testZone), Current: cur})
	res, err := e.p.Apply(ctx, testZone, pl.Changes)
	require.NoError(t, err)
	require.Empty(t, res.Failed)
	require.Equal(t, pl.Changes.Len(), res.Applied)
	return pl, res
}

// sets returns the fake's sets of name as "TYPE set weight/failover values" lines.
func (e *env) sets(name string) []string {
	var out []string
	for _, s := range e.fake.Records(e.zoneID) {
		if s.Name != name {
			continue
		}
		line := s.Type + " " + s.SetID
		if s.Weight != nil {
			line += fmt.Sprintf(" w=%d", *s.Weight)
		}
		if s.Failover != "" {
			line += " " + s.Failover
		}
		out = append(out, line+" "+strings.Join(s.Values, ","))
	}
	return out
}

type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.String()
}

func a(name string, ttl int64, values ...string) route53fake.RecordSet {
	return route53fake.RecordSet{Name: name, Type: "A", TTL: ttl, Values: values}
}

func ownerTXT(name string, types ...string) route53fake.RecordSet {
	return route53fake.RecordSet{Name: plan.OwnerName(name), Type: "TXT", TTL: 300, Values: []string{`"` + plan.OwnerValue(testOwner, types) + `"`}}
}

func ptr[T any](v T) *T { return &v }

func TestRecordsPagesThroughTheZone(t *testing.T) {
	e := newEnv(t, route53fake.Options{}, Options{})
	for i := range 750 {
		e.fake.Put(e.zoneID, a(fmt.Sprintf("h%03d.example.com.", i), 60, fmt.Sprintf("10.0.%d.%d", i/250, i%250)))
	}
	e.fake.Put(e.zoneID,
		a("*.example.com.", 60, "192.0.2.1"),
		route53fake.RecordSet{Name: "txt.example.com.", Type: "TXT", TTL: 60, Values: []string{`"hello \"world\""`, `"a" "b"`}},
		route53fake.RecordSet{Name: "w.example.com.", Type: "A", TTL: 60, Values: []string{"192.0.2.2"}, SetID: "us/192.0.2.2", Weight: ptr(int64(200))},
		route53fake.RecordSet{Name: "g.example.com.", Type: "A", TTL: 60, Values: []string{"192.0.2.3"}, SetID: "geo-continent-EU", Geo: &route53fake.GeoLocation{Continent: "EU"}},
		route53fake.RecordSet{Name: "f.example.com.", Type: "A", TTL: 60, Values: []string{"192.0.2.4"}, SetID: "primary", Failover: "PRIMARY"},
		route53fake.RecordSet{Name: "alias.example.com.", Type: "A", Alias: &route53fake.AliasTarget{HostedZoneID: "Z2FDTNDATAQYW2", DNSName: "d111111abcdef8.cloudfront.net."}},
	)

	got, err := e.p.Records(context.Background(), testZone)
	require.NoError(t, err)
	require.Len(t, got, 758, "750 hosts, 6 others, the zone's SOA and NS")
	byKey := map[plan.Key]plan.Record{}
	for _, r := range got {
		byKey[r.Key()] = r
	}
	assert.Len(t, byKey, 758, "no set twice across pages")
	for i := range 750 {
		assert.Contains(t, byKey, plan.Key{Name: fmt.Sprintf("h%03d.example.com.", i), Type: "A"})
	}
	assert.Equal(t, "*.example.com. 60 A 192.0.2.1", byKey[plan.Key{Name: "*.example.com.", Type: "A"}].String(), "the \\052 escape is read as *")
	assert.Equal(t, []string{"ab", `hello "world"`}, byKey[plan.Key{Name: "txt.example.com.", Type: "TXT"}].Values, "TXT values unquoted")
	assert.Equal(t, "w.example.com. 60 A 192.0.2.2 set=us/192.0.2.2 weight=200", byKey[plan.Key{Name: "w.example.com.", Type: "A", SetID: "us/192.0.2.2"}].String())
	assert.Equal(t, "g.example.com. 60 A 192.0.2.3 set=geo-continent-EU geo=EU//", byKey[plan.Key{Name: "g.example.com.", Type: "A", SetID: "geo-continent-EU"}].String())
	assert.Equal(t, "f.example.com. 60 A 192.0.2.4 set=primary failover=PRIMARY", byKey[plan.Key{Name: "f.example.com.", Type: "A", SetID: "primary"}].String())
	assert.Empty(t, byKey[plan.Key{Name: "alias.example.com.", Type: "A"}].Values, "an alias set is listed with no values")

	calls := e.fake.Calls()
	assert.Equal(t, 3, calls[route53fake.OpListResourceRecordSets], "pages of 300")
	assert.Equal(t, 1, calls[route53fake.OpListHostedZonesByName])

	_, err = e.p.Records(context.Background(), testZone)
	require.NoError(t, err)
	assert.Equal(t, 1, e.fake.Calls()[route53fake.OpListHostedZonesByName], "the hosted zone id is looked up once")
}

func TestApplyFollowsHealth(t *testing.T) {
	e := newEnv(t, route53fake.Options{}, Options{})
	views := []providers.ServiceView{
		{Name: "app.example.com.", Strategy: model.StrategyWeighted, TTL: 30, Endpoints: []providers.EndpointView{
			ep("192.0.2.1", "A", "us", 700, true), ep("192.0.2.2", "A", "eu", 300, true),
		}},
		{Name: "api.example.com.", Strategy: model.StrategyFailover, TTL: 20, Failover: [][]int{{0}, {1}, {2}}, Endpoints: []providers.EndpointView{
			ep("192.0.2.11", "A", "us", 100, true), ep("192.0.2.12", "A", "eu", 100, true), ep("192.0.2.13", "A", "ap", 100, true),
		}},
		{Name: "rr.example.com.", Strategy: model.StrategyRoundRobin, TTL: 30, Endpoints: []providers.EndpointView{
			ep("192.0.2.21", "A", "us", 1, true),
		}},
	}

	pl, res := e.sync(t, views)
	assert.Len(t, pl.Changes.Creates, 8, "2 weighted + 2 failover + 1 simple sets and 3 ownership records")
	assert.Equal(t, 1, res.Calls, "one batch")
	assert.True(t, res.Synced)
	assert.Equal(t, []string{"A eu/192.0.2.2 w=109 192.0.2.2", "A us/192.0.2.1 w=255 192.0.2.1"}, e.sets("app.example.com."))
	assert.Equal(t, []string{`TXT  "heritage=meridian,owner=meridian-test,types=A"`}, e.sets("_meridian-owner.app.example.com."))

	pl, res = e.sync(t, views)
	assert.True(t, pl.Changes.Empty(), "a second pass has nothing to do: %+v", pl.Changes)
	assert.Zero(t, res.Calls)

	// us fails: app's us member goes to weight 0, api's primary moves to eu.
	views[0].Endpoints[0].Effective, views[0].Endpoints[0].Available = 0, false
	views[1].Endpoints[0].Effective, views[1].Endpoints[0].Available = 0, false
	pl, _ = e.sync(t, views)
	assert.Len(t, pl.Changes.Updates, 4, "UPSERTs only: app's two weights, api's primary and secondary")
	assert.Empty(t, pl.Changes.Creates)
	assert.Empty(t, pl.Changes.Deletes)
	assert.Equal(t, []string{"A eu/192.0.2.2 w=255 192.0.2.2", "A us/192.0.2.1 w=0 192.0.2.1"}, e.sets("app.example.com."))
	assert.Equal(t, []string{"A primary PRIMARY 192.0.2.12", "A secondary SECONDARY 192.0.2.13"}, e.sets("api.example.com."))

	// rr is removed from the config: its set and its ownership record go.
	views = views[:2]
	pl, _ = e.sync(t, views)
	assert.Len(t, pl.Changes.Deletes, 2)
	assert.Empty(t, e.sets("rr.example.com."))
	assert.Empty(t, e.sets("_meridian-owner.rr.example.com."))

	pl, _ = e.sync(t, views)
	assert.True(t, pl.Changes.Empty())
	assert.Equal(t, 1, e.fake.MaxConcurrentWrites())
}

func TestRoutingPolicyChangeIsOneBatch(t *testing.T) {
	t.Run("a simple set replaced by weighted sets goes in one batch", func(t *testing.T) {
		e := newEnv(t, route53fake.Options{}, Options{})
		e.fake.Put(e.zoneID, a("app.example.com.", 30, "192.0.2.1"), ownerTXT("app.example.com.", "A"))
		views := []providers.ServiceView{{Name: "app.example.com.", Strategy: model.StrategyWeighted, TTL: 30, Endpoints: []providers.EndpointView{
			ep("192.0.2.1", "A", "us", 100, true), ep("192.0.2.2", "A", "eu", 100, true),
		}}}
		pl, _ := e.sync(t, views)
		assert.Len(t, pl.Changes.Deletes, 1)
		assert.Len(t, pl.Changes.Creates, 2)
		batches := e.fake.Batches()
		require.Len(t, batches, 1, "a DELETE and CREATEs of one name never split")
		assert.Equal(t, 3, batches[0].Changes)
		assert.Equal(t, []string{"A eu/192.0.2.2 w=255 192.0.2.2", "A us/192.0.2.1 w=255 192.0.2.1"}, e.sets("app.example.com."))
	})
	t.Run("an update into another policy is a DELETE and a CREATE in one batch", func(t *testing.T) {
		e := newEnv(t, route53fake.Options{}, Options{})
		e.fake.Put(e.zoneID, route53fake.RecordSet{Name: "api.example.com.", Type: "A", TTL: 20, Values: []string{"192.0.2.1"}, SetID: "primary", Failover: "PRIMARY"})
		old := plan.Record{Name: "api.example.com.", Type: "A", TTL: 20, Values: []string{"192.0.2.1"}, SetID: "primary", Failover: "PRIMARY"}
		upd := plan.Record{Name: "api.example.com.", Type: "A", TTL: 20, Values: []string{"192.0.2.1"}, SetID: "primary", Weight: ptr(int64(10))}
		res, err := e.p.Apply(context.Background(), testZone, plan.Changes{Updates: []plan.Update{{Old: old, New: upd}}})
		require.NoError(t, err)
		assert.Equal(t, 1, res.Applied)
		assert.Empty(t, res.Failed)
		batches := e.fake.Batches()
		require.Len(t, batches, 1)
		assert.Equal(t, 2, batches[0].Changes)
		assert.Equal(t, []string{"A primary w=10 192.0.2.1"}, e.sets("api.example.com."))
	})
}

func TestDeleteCarriesTheLiveSet(t *testing.T) {
	e := newEnv(t, route53fake.Options{}, Options{})
	// A health check id is something plan.Record does not carry; the DELETE
	// must name it all the same.
	e.fake.Put(e.zoneID,
		route53fake.RecordSet{Name: "old.example.com.", Type: "A", TTL: 30, Values: []string{"192.0.2.1", "192.0.2.2"}, HealthCheckID: "hc-1"},
		ownerTXT("old.example.com.", "A"),
		a("moved.example.com.", 30, "192.0.2.9"), ownerTXT("moved.example.com.", "A"),
	)
	cur, err := e.p.Records(context.Background(), testZone)
	require.NoError(t, err)
	pl := plan.Compute(plan.Input{Owner: testOwner, Current: cur})
	require.Len(t, pl.Changes.Deletes, 4)

	// Meanwhile someone changes moved.example.com.: our DELETE no longer
	// matches and is refused, the rest goes through.
	e.fake.Put(e.zoneID, a("moved.example.com.", 30, "192.0.2.10"))
	res, err := e.p.Apply(context.Background(), testZone, pl.Changes)
	require.NoError(t, err)
	assert.Empty(t, e.sets("old.example.com."), "deleted with its live values")
	assert.Empty(t, e.sets("_meridian-owner.old.example.com."))
	assert.Equal(t, 2, res.Applied)
	require.Len(t, res.Failed, 2, "the stale DELETE and the ownership record of its name")
	var refused *RefusedError
	for _, f := range res.Failed {
		require.ErrorAs(t, f.Err, &refused)
		assert.Equal(t, "delete", f.Op)
		if f.Key.Type == "A" {
			assert.Contains(t, f.Err.Error(), "Tried to delete resource record set [name='moved.example.com.', type='A'] but the values provided do not match the current values")
			assert.False(t, refused.WithOthers)
		} else {
			assert.True(t, refused.WithOthers, "the ownership record is refused with its name: %v", f.Err)
		}
	}
	assert.Equal(t, []string{"A  192.0.2.10"}, e.sets("moved.example.com."))
}

func TestBatchesStayWithinRoute53Limits(t *testing.T) {
	e := newEnv(t, route53fake.Options{}, Options{})
	var cs plan.Changes
	for i := range 1000 { // 1000 UPSERTs: 2000 records counted
		name := fmt.Sprintf("u%04d.example.com.", i)
		e.fake.Put(e.zoneID, a(name, 60, "10.1.0.1"))
		old := plan.Record{Name: name, Type: "A", TTL: 60, Values: []string{"10.1.0.1"}}
		upd := old
		upd.Values = []string{"10.2.0.2"}
		cs.Updates = append(cs.Updates, plan.Update{Old: old, New: upd})
	}
	for i := range 500 {
		name := fmt.Sprintf("d%04d.example.com.", i)
		e.fake.Put(e.zoneID, a(name, 60, "10.3.0.3"))
		cs.Deletes = append(cs.Deletes, plan.Record{Name: name, Type: "A", TTL: 60, Values: []string{"10.3.0.3"}})
	}
	for i := range 1000 { // 1000 TXT values of 40 characters: the character limit binds too
		cs.Creates = append(cs.Creates, plan.Record{Name: fmt.Sprintf("c%04d.example.com.", i), Type: "TXT", TTL: 60, Values: []string{strings.Repeat("v", 40)}})
	}
	require.Equal(t, 2500, cs.Len())

	res, err := e.p.Apply(context.Background(), testZone, cs)
	require.NoError(t, err)
	assert.Equal(t, 2500, res.Applied)
	assert.Empty(t, res.Failed)

	batches := e.fake.Batches()
	total := 0
	for i, b := range batches {
		assert.Empty(t, b.Err, "batch %d accepted", i)
		assert.LessOrEqual(t, b.Changes, 1000, "batch %d changes", i)
		assert.LessOrEqual(t, b.Records, route53fake.MaxBatchRecords, "batch %d records as Route 53 counts them", i)
		assert.LessOrEqual(t, b.Chars, route53fake.MaxBatchChars, "batch %d characters as Route 53 counts them", i)
		total += b.Changes
		if i > 0 {
			assert.False(t, b.Start.Before(batches[i-1].End), "batch %d starts after batch %d ended", i, i-1)
		}
	}
	for i, b := range batches {
		t.Logf("batch %d: %d changes, %d records, %d characters, %s", i, b.Changes, b.Records, b.Chars, b.End.Sub(b.Start))
	}
	assert.Equal(t, 2500, total)
	assert.Len(t, batches, res.Calls)
	assert.LessOrEqual(t, len(batches), 6, "2000+500+1000 records and 42000+22000+5000 characters fit in few batches")
	assert.Equal(t, 1, e.fake.MaxConcurrentWrites(), "writes never overlap")
	assert.Len(t, e.fake.Records(e.zoneID), 2+1000+1000)
}

func TestRefusedChangeIsIsolated(t *testing.T) {
	cases := []struct {
		name  string
		seed  []route53fake.RecordSet
		bad   plan.Record
		want  string
		code  string
		calls int // at most
	}{
		{
			name:  "a CNAME where someone else's A lives is refused alone",
			seed:  []route53fake.RecordSet{a("taken.example.com.", 300, "198.51.100.1")},
			bad:   plan.Record{Name: "taken.example.com.", Type: "CNAME", TTL: 30, Values: []string{"elsewhere.example.net."}},
			want:  "RRSet of type CNAME with DNS name taken.example.com. is not permitted as it conflicts with other records with the same DNS name in zone example.com.",
			code:  "InvalidChangeBatch",
			calls: 2, // Route 53 names the set: the rest is resent at once
		},
		{
			name:  "a CREATE of a set that exists is refused alone",
			seed:  []route53fake.RecordSet{a("taken.example.com.", 300, "198.51.100.1")},
			bad:   plan.Record{Name: "taken.example.com.", Type: "A", TTL: 30, Values: []string{"192.0.2.1"}},
			want:  "Tried to create resource record set [name='taken.example.com.', type='A'] but it already exists",
			code:  "InvalidChangeBatch",
			calls: 2,
		},
		{
			name:  "a weight Route 53 does not accept is refused alone",
			bad:   plan.Record{Name: "heavy.example.com.", Type: "A", TTL: 30, Values: []string{"192.0.2.1"}, SetID: "x", Weight: ptr(int64(300))},
			want:  "Member must have value less than or equal to 255",
			code:  "InvalidInput",
			calls: 2, // the message names the change's position in the request
		},
		{
			name:  "a change Route 53's message does not point at is found by bisection",
			bad:   plan.Record{Name: "noid.example.com.", Type: "A", TTL: 30, Values: []string{"192.0.2.1"}, Weight: ptr(int64(1))},
			want:  "Missing field 'SetIdentifier'",
			code:  "InvalidInput",
			calls: 1 + 2*int(math.Ceil(math.Log2(301))), // one batch, then two halves per level down to one name
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t, route53fake.Options{}, Options{})
			e.fake.Put(e.zoneID, tc.seed...)
			var cs plan.Changes
			for i := range 300 {
				cs.Creates = append(cs.Creates, plan.Record{Name: fmt.Sprintf("n%03d.example.com.", i), Type: "A", TTL: 30, Values: []string{"192.0.2.1"}})
			}
			cs.Creates = append(cs.Creates, tc.bad)

			res, err := e.p.Apply(context.Background(), testZone, cs)
			require.NoError(t, err)
			assert.Equal(t, 300, res.Applied)
			require.Len(t, res.Failed, 1)
			assert.Equal(t, tc.bad.Key(), res.Failed[0].Key)
			assert.Equal(t, "create", res.Failed[0].Op)
			var refused *RefusedError
			require.ErrorAs(t, res.Failed[0].Err, &refused)
			assert.Equal(t, tc.code, refused.Code)
			assert.Contains(t, res.Failed[0].Err.Error(), tc.want)
			assert.Len(t, e.fake.Records(e.zoneID), 2+300+len(tc.seed))
			t.Logf("%d write calls for 301 changes with one refused", res.Calls)
			assert.LessOrEqual(t, res.Calls, tc.calls)
		})
	}
}

func TestFaultsThatEndAreRiddenOut(t *testing.T) {
	cases := []struct {
		name   string
		faults route53fake.Faults
	}{
		{"half the calls throttled", route53fake.Faults{Throttle: 0.5}},
		{"a third of the calls failing with 500", route53fake.Faults{ServerError: 0.35}},
		{"throttles and server errors together", route53fake.Faults{Throttle: 0.3, ServerError: 0.2}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			const rps = 100
			e := newEnv(t, route53fake.Options{Faults: tc.faults, Seed: 7}, Options{RequestsPerSecond: rps, MaxAttempts: 20})
			for i := range 400 {
				e.fake.Put(e.zoneID, a(fmt.Sprintf("s%03d.example.com.", i), 60, "192.0.2.1"))
			}
			views := []providers.ServiceView{}
			for i := range 600 {
				views = append(views, providers.ServiceView{Name: fmt.Sprintf("w%03d.example.com.", i), Strategy: model.StrategyRoundRobin, TTL: 30,
					Endpoints: []providers.EndpointView{ep("192.0.2.1", "A", "us", 1, true)}})
			}
			start := time.Now()
			e.sync(t, views)
			pl, _ := e.sync(t, views)
			elapsed := time.Since(start)
			assert.True(t, pl.Changes.Empty(), "converged")

			calls := 0
			for _, n := range e.fake.Calls() {
				calls += n
			}
			faulted := e.fake.Throttled() + e.fake.ServerErrors()
			assert.Positive(t, faulted, "faults were injected")
			assert.Equal(t, float64(e.fake.Throttled()), testutil.ToFloat64(e.p.m.Throttles.WithLabelValues("route53")))
			assert.Equal(t, float64(faulted), testutil.ToFloat64(e.p.m.Retries.WithLabelValues("route53")), "every fault retried")
			assert.Equal(t, calls-faulted, int(sumCalls(e.p.m, apicall.OK.String())))
			t.Logf("%d calls (%d faulted) in %s: %v", calls, faulted, elapsed.Round(time.Millisecond), e.fake.Calls())
			// The budget holds over retries: a token bucket of rps with a
			// burst of 1 allows at most 1 + rps·elapsed calls.
			assert.LessOrEqual(t, float64(calls), 1+rps*elapsed.Seconds()*1.05, "%d calls in %s", calls, elapsed)
		})
	}
}

func sumCalls(m *Metrics, result string) float64 {
	total := 0.0
	for _, op := range []string{opListZones, opList, opChange, opGetChange} {
		total += testutil.ToFloat64(m.APICalls.WithLabelValues("route53", op, result))
	}
	return total
}

func TestFaultsThatLastGiveUpAsTransient(t *testing.T) {
	cases := []struct {
		name   string
		faults route53fake.Faults
		opts   Options
	}{
		{"throttling that never ends", route53fake.Faults{Throttle: 1}, Options{MaxAttempts: 3}},
		{"server errors that never end", route53fake.Faults{ServerError: 1}, Options{MaxAttempts: 3}},
		{"requests that hang past the request timeout", route53fake.Faults{Delay: time.Minute}, Options{MaxAttempts: 3, RequestTimeout: 30 * time.Millisecond}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t, route53fake.Options{Faults: tc.faults}, tc.opts)
			start := time.Now()
			_, err := e.p.Records(context.Background(), testZone)
			require.ErrorIs(t, err, providers.ErrTransient)
			assert.Contains(t, err.Error(), "gave up after 3 attempts")
			assert.Equal(t, 3, e.fake.Calls()[route53fake.OpListHostedZonesByName])
			assert.Less(t, time.Since(start), 20*time.Second, "bounded")

			e.fake.SetFaults(route53fake.Faults{})
			_, err = e.p.Records(context.Background(), testZone)
			require.NoError(t, err, "a later pass works once the faults end")
		})
	}
}

func TestApplyWaitsForInSync(t *testing.T) {
	t.Run("polls GetChange until INSYNC and observes the propagation time", func(t *testing.T) {
		const pending = 150 * time.Millisecond
		e := newEnv(t, route53fake.Options{PendingFor: pending}, Options{PollInterval: 10 * time.Millisecond})
		res, err := e.p.Apply(context.Background(), testZone, plan.Changes{Creates: []plan.Record{{Name: "a.example.com.", Type: "A", TTL: 30, Values: []string{"192.0.2.1"}}}})
		require.NoError(t, err)
		assert.True(t, res.Synced)
		assert.GreaterOrEqual(t, e.fake.Calls()[route53fake.OpGetChange], 1)
		count, sum := histogram(t, e.reg, "meridian_provider_propagation_seconds")
		assert.Equal(t, uint64(1), count)
		assert.GreaterOrEqual(t, sum, pending.Seconds(), "submit → INSYNC is at least the time the fake stayed PENDING")
	})
	t.Run("stops waiting at SyncTimeout without failing the changes", func(t *testing.T) {
		e := newEnv(t, route53fake.Options{PendingFor: time.Hour}, Options{PollInterval: 10 * time.Millisecond, SyncTimeout: 60 * time.Millisecond})
		res, err := e.p.Apply(context.Background(), testZone, plan.Changes{Creates: []plan.Record{{Name: "a.example.com.", Type: "A", TTL: 30, Values: []string{"192.0.2.1"}}}})
		require.NoError(t, err)
		assert.False(t, res.Synced)
		assert.Equal(t, 1, res.Applied)
		count, _ := histogram(t, e.reg, "meridian_provider_propagation_seconds")
		assert.Zero(t, count)
	})
}

func histogram(t *testing.T, reg *prometheus.Registry, name string) (uint64, float64) {
	t.Helper()
	mfs, err := reg.Gather()
	require.NoError(t, err)
	for _, mf := range mfs {
		if mf.GetName() == name {
			for _, m := range mf.GetMetric() {
				return m.GetHistogram().GetSampleCount(), m.GetHistogram().GetSampleSum()
			}
		}
	}
	return 0, 0
}

func TestEmptyPlanMakesNoCalls(t *testing.T) {
	e := newEnv(t, route53fake.Options{}, Options{})
	res, err := e.p.Apply(context.Background(), testZone, plan.Changes{})
	require.NoError(t, err)
	assert.Equal(t, providers.Result{Synced: true}, res)
	assert.Empty(t, e.fake.Calls(), "not even the zone lookup")
}

func TestHostedZoneLookup(t *testing.T) {
	cases := []struct {
		name    string
		zones   []string // created after example.com.
		zone    string
		zoneID  bool // configure the id
		wantErr string
		lookups int
	}{
		{name: "a zone is found by name among its neighbours", zones: []string{"a.example.com.", "example.org.", "b.example.com."}, zone: "a.example.com.", lookups: 1},
		{name: "two hosted zones of one name need zone_id", zones: []string{"example.com."}, zone: "example.com.", wantErr: "2 hosted zones of that name", lookups: 1},
		{name: "an unknown zone is an error", zones: []string{"example.org."}, zone: "example.net.", wantErr: "no hosted zone of that name", lookups: 1},
		{name: "a configured zone id skips the lookup", zones: []string{"example.com."}, zone: "example.com.", zoneID: true, lookups: 0},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t, route53fake.Options{}, Options{})
			var id string
			for _, z := range tc.zones {
				id = e.fake.AddZone(z)
			}
			p := e.p
			if tc.zoneID {
				p = e.provider(t, Options{ZoneID: "/hostedzone/" + id})
			}
			_, err := p.Records(context.Background(), tc.zone)
			if tc.wantErr != "" {
				require.ErrorContains(t, err, tc.wantErr)
				assert.NotErrorIs(t, err, providers.ErrTransient, "a configuration problem, not worth retrying")
			} else {
				require.NoError(t, err)
			}
			assert.Equal(t, tc.lookups, e.fake.Calls()[route53fake.OpListHostedZonesByName])
		})
	}
}

func TestBudgetThatCannotFitTheDeadlineIsTransient(t *testing.T) {
	e := newEnv(t, route53fake.Options{}, Options{RequestsPerSecond: 0.5})
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	// The lookup takes the one token; the listing would wait 2s.
	_, err := e.p.Records(ctx, testZone)
	require.ErrorIs(t, err, providers.ErrTransient)
	assert.Contains(t, err.Error(), "waiting for the request budget")
	assert.Equal(t, 1, e.fake.Calls()[route53fake.OpListHostedZonesByName])
	assert.Zero(t, e.fake.Calls()[route53fake.OpListResourceRecordSets])
}
