package cloudflare

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/meridian-gslb/meridian/internal/model"
	"github.com/meridian-gslb/meridian/providers"
	"github.com/meridian-gslb/meridian/providers/apicall"
	"github.com/meridian-gslb/meridian/providers/cloudflare/cffake"
	"github.com/meridian-gslb/meridian/providers/plan"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

const (
	testToken = "tok-3f9a1c0e5d7b" // what the fake accepts
	zoneName  = "example.com."
	ownerID   = "m1"
)

// clock is a fake clock: Sleep advances it at once and remembers the wait.
type clock struct {
	mu     sync.Mutex
	t      time.Time
	sleeps []time.Duration
}

func (c *clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *clock) Sleep(ctx context.Context, d time.Duration) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.sleeps = append(c.sleeps, d)
	c.t = c.t.Add(d)
	return ctx.Err()
}

func (c *clock) Sleeps() []time.Duration {
	c.mu.Lock()
	defer c.mu.Unlock()
	return slices.Clone(c.sleeps)
}

// env is a Provider calling the fake through the real cloudflare-go client.
type env struct {
	srv   *cffake.Server
	zone  string // zone id
	p     *Provider
	clock *clock
	reg   *prometheus.Registry
	logs  *bytes.Buffer
	hc    *http.Client
}

func newEnv(t *testing.T, opts Options) *env {
	t.Helper()
	srv := cffake.New(testToken)
	c := &clock{t: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)}
	srv.SetClock(c.Now)
	hc := &http.Client{Transport: &http.Transport{}}
	t.Cleanup(func() { hc.CloseIdleConnections(); srv.Close() })
	e := &env{srv: srv, zone: srv.AddZone(zoneName), clock: c, reg: prometheus.NewRegistry(), logs: &bytes.Buffer{}}
	opts.Now, opts.Sleep = c.Now, c.Sleep
	opts.Metrics = apicall.NewMetrics(e.reg)
	opts.Logger = slog.New(slog.NewTextHandler(e.logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	e.p = New(NewAPI(testToken, APIOptions{BaseURL: srv.URL, HTTPClient: hc}), opts)
	e.hc = hc
	return e
}

func (e *env) put(t *testing.T, name, typ, content string, ttl int) cffake.Record {
	t.Helper()
	r, err := e.srv.Put(e.zone, cffake.Record{Name: name, Type: typ, Content: content, TTL: ttl})
	require.NoError(t, err)
	return r
}

// sync reads the zone, plans desired against it and applies the plan.
func (e *env) sync(t *testing.T, desired ...plan.Record) (plan.Plan, providers.Result) {
	t.Helper()
	ctx := context.Background()
	cur, err := e.p.Records(ctx, zoneName)
	require.NoError(t, err)
	pl := plan.Compute(plan.Input{Owner: ownerID, Desired: desired, Current: cur})
	res, err := e.p.Apply(ctx, zoneName, pl.Changes)
	require.NoError(t, err)
	return pl, res
}

// contents lists the fake's records as "name type content ttl".
func (e *env) contents() []string {
	var out []string
	for _, r := range e.srv.Records(e.zone) {
		out = append(out, fmt.Sprintf("%s %s %s %d", r.Name, r.Type, r.Content, r.TTL))
	}
	slices.Sort(out)
	return out
}

func (e *env) counter(name string, labels ...string) float64 {
	switch name {
	case "calls":
		return testutil.ToFloat64(e.p.metrics.APICalls.WithLabelValues(append([]string{providerLabel}, labels...)...))
	case "throttles":
		return testutil.ToFloat64(e.p.metrics.Throttles.WithLabelValues(providerLabel))
	}
	return testutil.ToFloat64(e.p.metrics.Retries.WithLabelValues(providerLabel))
}

func TestRecordsReadsEveryPage(t *testing.T) {
	e := newEnv(t, Options{PageSize: 100})
	for i := range 125 {
		e.put(t, fmt.Sprintf("h%03d.example.com", i), "A", fmt.Sprintf("10.0.%d.1", i), 60)
		e.put(t, fmt.Sprintf("h%03d.example.com", i), "A", fmt.Sprintf("10.0.%d.2", i), 60)
	}
	e.put(t, "docs.example.com", "CNAME", "docs.cdn.net", 300)
	e.put(t, "_meridian-owner.docs.example.com", "TXT", `"heritage=meridian,owner=m1,types=CNAME"`, 300)

	got, err := e.p.Records(context.Background(), zoneName)
	require.NoError(t, err)
	assert.Equal(t, 3, e.srv.Calls(http.MethodGet, "/zones/{zone}/dns_records"), "252 records at 100 a page")
	assert.Equal(t, 1, e.srv.Calls(http.MethodGet, "/zones"), "the zone id is looked up once")
	require.Len(t, got, 127)

	ids := map[string]string{}
	for _, r := range e.srv.Records(e.zone) {
		ids[r.Name+" "+r.Content] = r.ID
	}
	for _, r := range got {
		require.Len(t, r.IDs, len(r.Values), r.Key())
		for i, v := range r.Values {
			content := encode(r.Type, v)
			assert.Equal(t, ids[cfName(r.Name)+" "+content], r.IDs[i], "id of %s %s", r.Name, v)
		}
	}
	assert.Contains(t, got, plan.Record{Name: "h007.example.com.", Type: "A", TTL: 60, Values: []string{"10.0.7.1", "10.0.7.2"}, IDs: r2ids(ids, "h007.example.com", "10.0.7.1", "10.0.7.2")})
	assert.Contains(t, got, plan.Record{Name: "docs.example.com.", Type: "CNAME", TTL: 300, Values: []string{"docs.cdn.net."}, IDs: r2ids(ids, "docs.example.com", "docs.cdn.net")})
	assert.Contains(t, got, plan.Record{Name: "_meridian-owner.docs.example.com.", Type: "TXT", TTL: 300,
		Values: []string{"heritage=meridian,owner=m1,types=CNAME"}, IDs: r2ids(ids, "_meridian-owner.docs.example.com", `"heritage=meridian,owner=m1,types=CNAME"`)})

	_, err = e.p.Records(context.Background(), zoneName)
	require.NoError(t, err)
	assert.Equal(t, 1, e.srv.Calls(http.MethodGet, "/zones"), "the zone id is cached")
}

func r2ids(ids map[string]string, name string, contents ...string) []string {
	var out []string
	for _, c := range contents {
		out = append(out, ids[name+" "+c])
	}
	return out
}

func TestApplyCreatesUpdatesAndDeletes(t *testing.T) {
	e := newEnv(t, Options{})
	_, res := e.sync(t,
		rec("app.example.com.", "A", 60, "10.0.0.1", "10.0.0.2"),
		rec("app.example.com.", "AAAA", 60, "2001:db8::1"),
		rec("docs.example.com.", "CNAME", 300, "docs.cdn.net."),
	)
	assert.Empty(t, res.Failed)
	assert.Equal(t, 5, res.Applied, "three sets and two ownership records")
	assert.Equal(t, 6, res.Calls)
	assert.True(t, res.Synced)
	assert.Equal(t, []string{
		`_meridian-owner.app.example.com TXT "heritage=meridian,owner=m1,types=A+AAAA" 300`,
		`_meridian-owner.docs.example.com TXT "heritage=meridian,owner=m1,types=CNAME" 300`,
		"app.example.com A 10.0.0.1 60",
		"app.example.com A 10.0.0.2 60",
		"app.example.com AAAA 2001:db8::1 60",
		"docs.example.com CNAME docs.cdn.net 300",
	}, e.contents())

	_, res = e.sync(t,
		rec("app.example.com.", "A", 60, "10.0.0.1", "10.0.0.3"),
		rec("docs.example.com.", "CNAME", 120, "docs2.cdn.net."),
	)
	assert.Empty(t, res.Failed)
	assert.Equal(t, []string{
		`_meridian-owner.app.example.com TXT "heritage=meridian,owner=m1,types=A" 300`,
		`_meridian-owner.docs.example.com TXT "heritage=meridian,owner=m1,types=CNAME" 300`,
		"app.example.com A 10.0.0.1 60",
		"app.example.com A 10.0.0.3 60",
		"docs.example.com CNAME docs2.cdn.net 120",
	}, e.contents())

	_, res = e.sync(t)
	assert.Empty(t, res.Failed)
	assert.Empty(t, e.contents(), "an empty desired state removes everything Meridian owns")
	assert.Empty(t, e.srv.Gaps(), "no name went empty between writes")
	assert.Equal(t, float64(0), e.counter("calls", opCreate, "error"))
}

func TestApplyChangesRecordsInPlace(t *testing.T) {
	tests := []struct {
		name          string
		before, after []string // A values of app.example.com
		patches       int
		posts         int
		deletes       int
	}{
		{"one address replacing another is one PATCH", []string{"10.0.0.1"}, []string{"10.0.0.2"}, 1, 0, 0},
		{"replacing one of two addresses patches only that record", []string{"10.0.0.1", "10.0.0.2"}, []string{"10.0.0.1", "10.0.0.9"}, 1, 0, 0},
		{"replacing every address patches every record", []string{"10.0.0.1", "10.0.0.2"}, []string{"10.0.0.8", "10.0.0.9"}, 2, 0, 0},
		{"shrinking to a new address patches one record and deletes the other", []string{"10.0.0.1", "10.0.0.2"}, []string{"10.0.0.9"}, 1, 0, 1},
		{"growing to new addresses patches one record and creates the other", []string{"10.0.0.1"}, []string{"10.0.0.8", "10.0.0.9"}, 1, 1, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := newEnv(t, Options{})
			e.sync(t, rec("app.example.com.", "A", 60, tt.before...))
			before := e.srv.Records(e.zone)
			posts, patches := e.srv.Calls(http.MethodPost, "/zones/{zone}/dns_records"), e.srv.Calls(http.MethodPatch, "/zones/{zone}/dns_records/{id}")

			_, res := e.sync(t, rec("app.example.com.", "A", 60, tt.after...))
			assert.Empty(t, res.Failed)
			assert.Equal(t, 1, res.Applied)
			assert.Equal(t, tt.patches, e.srv.Calls(http.MethodPatch, "/zones/{zone}/dns_records/{id}")-patches, "PATCH")
			assert.Equal(t, tt.posts, e.srv.Calls(http.MethodPost, "/zones/{zone}/dns_records")-posts, "POST")
			assert.Equal(t, tt.deletes, e.srv.Calls(http.MethodDelete, "/zones/{zone}/dns_records/{id}"), "DELETE")
			assert.Empty(t, e.srv.Gaps(), "the name never went without an A record")

			var got []string
			kept := 0
			for _, r := range e.srv.Records(e.zone) {
				if r.Type == "A" {
					got = append(got, r.Content)
					if slices.ContainsFunc(before, func(b cffake.Record) bool { return b.ID == r.ID }) {
						kept++
					}
				}
			}
			assert.ElementsMatch(t, tt.after, got)
			assert.Equal(t, min(len(tt.before), len(tt.after)), kept, "records kept their ids")
		})
	}
}

func TestFakeSeesDeleteThenCreate(t *testing.T) {
	// The control: what the adapter avoids is visible in the fake's log.
	e := newEnv(t, Options{})
	old := e.put(t, "app.example.com", "A", "10.0.0.1", 60)
	require.NoError(t, e.p.api.DeleteDNSRecord(context.Background(), e.zone, old.ID))
	_, err := e.p.api.CreateDNSRecord(context.Background(), e.zone, DNSRecord{Name: "app.example.com", Type: "A", Content: "10.0.0.2", TTL: 60})
	require.NoError(t, err)
	gaps := e.srv.Gaps()
	require.Len(t, gaps, 1)
	assert.Equal(t, "app.example.com", gaps[0].Name)
	assert.Equal(t, "A", gaps[0].Type)
	assert.Equal(t, "DELETE", gaps[0].FromOp)
	assert.Equal(t, "POST", gaps[0].ToOp)
}

func TestApplyReportsRefusalsAndGoesOn(t *testing.T) {
	e := newEnv(t, Options{})
	e.put(t, "www.example.com", "CNAME", "www.cdn.net", 300) // not Meridian's
	changes := plan.Changes{Creates: []plan.Record{
		rec("api.example.com.", "A", 60, "10.0.0.1"),
		rec("bad.example.com.", "A", 60, "not-an-address"),
		rec("www.example.com.", "A", 60, "10.0.0.2"),
		rec("zzz.example.com.", "A", 60, "10.0.0.3"),
	}}
	res, err := e.p.Apply(context.Background(), zoneName, changes)
	require.NoError(t, err)
	assert.Equal(t, 2, res.Applied)
	require.Len(t, res.Failed, 2)

	assert.Equal(t, plan.Key{Name: "bad.example.com.", Type: "A"}, res.Failed[0].Key)
	assert.Equal(t, "create", res.Failed[0].Op)
	var ae *APIError
	require.ErrorAs(t, res.Failed[0].Err, &ae)
	assert.True(t, ae.HasCode(cffake.CodeBadContentA), ae.Error())

	assert.Equal(t, plan.Key{Name: "www.example.com.", Type: "A"}, res.Failed[1].Key)
	require.ErrorAs(t, res.Failed[1].Err, &ae)
	assert.Equal(t, []ErrorDetail{{Code: CodeHostConflict, Message: "An A, AAAA, or CNAME record with that host already exists."}}, ae.Errors)
	assert.Contains(t, res.Failed[1].Err.Error(), "81053")
	assert.False(t, errors.Is(res.Failed[1].Err, providers.ErrTransient))

	assert.Equal(t, []string{
		"api.example.com A 10.0.0.1 60",
		"www.example.com CNAME www.cdn.net 300",
		"zzz.example.com A 10.0.0.3 60",
	}, e.contents())
	assert.Equal(t, float64(2), e.counter("calls", opCreate, "error"))
	assert.Equal(t, float64(2), e.counter("calls", opCreate, "ok"))
}

func TestApplyTurnsAnAddressNameIntoACNAME(t *testing.T) {
	e := newEnv(t, Options{})
	e.sync(t, rec("app.example.com.", "A", 60, "10.0.0.1"))
	_, res := e.sync(t, rec("app.example.com.", "CNAME", 60, "app.cdn.net."))
	assert.Empty(t, res.Failed)
	assert.Equal(t, []string{
		`_meridian-owner.app.example.com TXT "heritage=meridian,owner=m1,types=CNAME" 300`,
		"app.example.com CNAME app.cdn.net 60",
	}, e.contents())
}

func TestApplyIsIdempotent(t *testing.T) {
	e := newEnv(t, Options{})
	desired := []plan.Record{
		rec("app.example.com.", "A", 60, "10.0.0.1", "10.0.0.2"),
		rec("docs.example.com.", "CNAME", 1, "docs.cdn.net."),
		func() plan.Record {
			r := rec("p.example.com.", "AAAA", 1, "2001:db8::1")
			r.Proxied = ptr(true)
			return r
		}(),
	}
	e.sync(t, desired...)
	writes := e.srv.WriteCalls()

	pl, res := e.sync(t, desired...)
	assert.True(t, pl.Changes.Empty(), "%+v", pl.Changes)
	assert.Equal(t, 0, res.Calls)
	assert.Equal(t, writes, e.srv.WriteCalls(), "no write request for an empty plan")
}

func TestThrottlingWaitsRetryAfter(t *testing.T) {
	e := newEnv(t, Options{})
	e.srv.Inject(cffake.Fault{Path: "/dns_records", Status: http.StatusTooManyRequests, RetryAfter: 7 * time.Second, Times: 2})
	_, err := e.p.Records(context.Background(), zoneName)
	require.NoError(t, err)
	assert.Equal(t, []time.Duration{7 * time.Second, 7 * time.Second}, e.clock.Sleeps(), "exactly Retry-After, twice")
	assert.Equal(t, float64(2), e.counter("throttles"))
	assert.Equal(t, float64(2), e.counter("retries"))
	assert.Equal(t, float64(2), e.counter("calls", "list_records", "throttled"))
	assert.Equal(t, float64(1), e.counter("calls", "list_records", "ok"))
}

func TestThrottlingWithoutRetryAfterBacksOff(t *testing.T) {
	e := newEnv(t, Options{})
	e.srv.Inject(cffake.Fault{Path: "/dns_records", Status: http.StatusTooManyRequests, Times: 3})
	_, err := e.p.Records(context.Background(), zoneName)
	require.NoError(t, err)
	sleeps := e.clock.Sleeps()
	require.Len(t, sleeps, 3)
	for i, d := range sleeps {
		hi := apicall.DefaultBackoff << i
		assert.True(t, d >= hi/2 && d <= hi, "backoff %d: %v not in [%v, %v]", i, d, hi/2, hi)
	}
}

func TestRequestBudgetHoldsAcrossReadsAndWrites(t *testing.T) {
	const budget = 10
	e := newEnv(t, Options{RequestBudget: budget, PageSize: 5})
	e.srv.RateLimit(budget, 5*time.Minute) // Cloudflare would answer 429 past the budget
	var desired []plan.Record
	for i := range 12 {
		desired = append(desired, rec(fmt.Sprintf("h%02d.example.com.", i), "A", 60, "10.0.0.1"))
	}
	e.sync(t, desired...) // 1 zone lookup + 1 list + 24 creates
	e.sync(t, desired...) // 5 lists (24 records, 5 a page; the zone id is cached), nothing to write
	assert.Len(t, e.srv.Records(e.zone), 24)

	times := e.srv.CallTimes()
	assert.Len(t, times, 31)
	for i := range times {
		n := 0
		for _, u := range times[i:] {
			if u.Sub(times[i]) < 5*time.Minute {
				n++
			}
		}
		assert.LessOrEqual(t, n, budget, "requests in the 5 minutes from request %d", i)
	}
	assert.Equal(t, float64(0), e.counter("throttles"), "the fake never had to throttle")
	assert.GreaterOrEqual(t, e.clock.Now().Sub(times[0]), 15*time.Minute, "31 requests at 10 per 5 minutes")
}

func TestServerErrorsAreRetriedThenTransient(t *testing.T) {
	e := newEnv(t, Options{MaxAttempts: 3})
	e.srv.Inject(cffake.Fault{Method: http.MethodGet, Path: "/dns_records", Status: http.StatusBadGateway, Times: 2})
	_, err := e.p.Records(context.Background(), zoneName)
	require.NoError(t, err, "two 502s, then an answer within 2 retries")

	e.srv.Inject(cffake.Fault{Method: http.MethodPost, Status: http.StatusServiceUnavailable})
	res, err := e.p.Apply(context.Background(), zoneName, plan.Changes{Creates: []plan.Record{
		rec("a.example.com.", "A", 60, "10.0.0.1"), rec("b.example.com.", "A", 60, "10.0.0.2"),
	}})
	require.Error(t, err)
	assert.ErrorIs(t, err, providers.ErrTransient)
	assert.Equal(t, 3, res.Calls, "the first create, tried three times, then the Apply stops")
	assert.Equal(t, 0, res.Applied)
	assert.Empty(t, res.Failed, "an outage is not a refusal")
	assert.Equal(t, float64(4), e.counter("retries"))
}

func TestARetriedCreateThatWentThroughCountsAsDone(t *testing.T) {
	e := newEnv(t, Options{})
	// The first POST is stored, but its answer is lost: a timeout.
	e.srv.Inject(cffake.Fault{Method: http.MethodPost, Delay: 2 * time.Second, Times: 1})
	e.p = New(NewAPI(testToken, APIOptions{BaseURL: e.srv.URL, HTTPClient: e.hc, RequestTimeout: 300 * time.Millisecond}), Options{Now: e.clock.Now, Sleep: e.clock.Sleep, Metrics: e.p.metrics})
	res, err := e.p.Apply(context.Background(), zoneName, plan.Changes{Creates: []plan.Record{rec("a.example.com.", "A", 60, "10.0.0.1")}})
	require.NoError(t, err)
	assert.Equal(t, 1, res.Applied)
	assert.Empty(t, res.Failed)
	assert.Equal(t, []string{"a.example.com A 10.0.0.1 60"}, e.contents())
	assert.Equal(t, 2, res.Calls, "one timed out, one met its own record")
}

func TestABadTokenStopsEverythingAndIsNeverShown(t *testing.T) {
	srv := cffake.New(testToken)
	defer srv.Close()
	srv.AddZone(zoneName)
	var logs bytes.Buffer
	hc := &http.Client{Transport: &http.Transport{}}
	defer hc.CloseIdleConnections()
	const wrong = "wrong-token-5e2b7d"
	p := New(NewAPI(wrong, APIOptions{BaseURL: srv.URL, HTTPClient: hc}), Options{Logger: slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug}))})
	_, err := p.Records(context.Background(), zoneName)
	require.Error(t, err)
	assert.False(t, errors.Is(err, providers.ErrTransient))
	var ae *APIError
	require.ErrorAs(t, err, &ae)
	assert.True(t, ae.HasCode(CodeAuthentication))
	assert.NotContains(t, err.Error(), wrong)
	assert.NotContains(t, logs.String(), wrong)
	assert.Equal(t, 1, srv.Calls("", "/zones"), "no retry of an authentication error")
}

func TestNewFromConfig(t *testing.T) {
	srv := cffake.New(testToken)
	defer srv.Close()
	defer http.DefaultClient.CloseIdleConnections()
	srv.AddZone(zoneName)
	tokenFile := filepath.Join(t.TempDir(), "token")
	require.NoError(t, os.WriteFile(tokenFile, []byte(testToken+"\n"), 0o600))
	ctx := context.Background()

	t.Run("the token comes from api_token_file", func(t *testing.T) {
		t.Setenv(TokenEnv, "")
		p, err := NewFromConfig(ctx, model.CloudflareZone{Zone: "example.com", APITokenFile: tokenFile, Endpoint: srv.URL}, Options{})
		require.NoError(t, err)
		_, err = p.Records(ctx, "example.com")
		require.NoError(t, err)
	})
	t.Run("a token file other users may read is refused with its mode and the fix", func(t *testing.T) {
		t.Setenv(TokenEnv, "")
		open := filepath.Join(t.TempDir(), "token")
		require.NoError(t, os.WriteFile(open, []byte(testToken+"\n"), 0o600))
		require.NoError(t, os.Chmod(open, 0o644))
		_, err := NewFromConfig(ctx, model.CloudflareZone{Zone: "example.com", APITokenFile: open, Endpoint: srv.URL}, Options{})
		require.Error(t, err)
		assert.Contains(t, err.Error(), "mode 0644")
		assert.Contains(t, err.Error(), "chmod 600 "+open)
	})
	t.Run("the token comes from the environment and a bare endpoint gets the v4 path", func(t *testing.T) {
		t.Setenv(TokenEnv, testToken)
		p, err := NewFromConfig(ctx, model.CloudflareZone{Zone: "example.com", Endpoint: srv.URL[:len(srv.URL)-len("/client/v4/")]}, Options{})
		require.NoError(t, err)
		_, err = p.Records(ctx, "example.com")
		require.NoError(t, err)
	})
	t.Run("a missing token names both places to put it", func(t *testing.T) {
		t.Setenv(TokenEnv, "")
		_, err := NewFromConfig(ctx, model.CloudflareZone{Zone: "example.com", Endpoint: srv.URL}, Options{})
		require.Error(t, err)
		assert.Contains(t, err.Error(), "api_token_file")
		assert.Contains(t, err.Error(), TokenEnv)
	})
	t.Run("load balancing needs the owner id that marks its objects", func(t *testing.T) {
		t.Setenv(TokenEnv, testToken)
		_, err := NewFromConfig(ctx, model.CloudflareZone{Zone: "example.com", Endpoint: srv.URL, LoadBalancing: model.LoadBalancingPreferred}, Options{})
		require.ErrorContains(t, err, "providers.owner_id")
		p, err := NewFromConfig(ctx, model.CloudflareZone{Zone: "example.com", Endpoint: srv.URL, LoadBalancing: model.LoadBalancingRequired,
			HealthChecks: model.HealthChecksBackstop}, Options{OwnerID: ownerID})
		require.NoError(t, err)
		assert.Equal(t, model.LoadBalancingRequired, p.opts.LoadBalancing)
		assert.True(t, p.opts.Backstop)
	})
	t.Run("an unknown load_balancing value is refused", func(t *testing.T) {
		t.Setenv(TokenEnv, testToken)
		_, err := NewFromConfig(ctx, model.CloudflareZone{Zone: "example.com", Endpoint: srv.URL, LoadBalancing: "yes"}, Options{OwnerID: ownerID})
		require.ErrorContains(t, err, `load_balancing "yes" is not allowed`)
	})
	t.Run("an unknown zone fails at once", func(t *testing.T) {
		t.Setenv(TokenEnv, testToken)
		_, err := NewFromConfig(ctx, model.CloudflareZone{Zone: "nope.example", Endpoint: srv.URL}, Options{})
		require.ErrorContains(t, err, "not found")
	})
	t.Run("zones written with one token share one request budget", func(t *testing.T) {
		t.Setenv(TokenEnv, "shared-"+testToken)
		a, err := NewFromConfig(ctx, model.CloudflareZone{Zone: "a.example", ZoneID: "a", ProviderAPI: model.ProviderAPI{RequestBudget: 600}}, Options{})
		require.NoError(t, err)
		b, err := NewFromConfig(ctx, model.CloudflareZone{Zone: "b.example", ZoneID: "b", ProviderAPI: model.ProviderAPI{RequestBudget: 300}}, Options{})
		require.NoError(t, err)
		assert.Same(t, a.budget, b.budget)
		assert.Equal(t, 300, a.budget.Limit(), "the smallest budget")
	})
	t.Run("a configured zone id needs no lookup", func(t *testing.T) {
		t.Setenv(TokenEnv, testToken)
		before := srv.Calls("", "/zones")
		_, err := NewFromConfig(ctx, model.CloudflareZone{Zone: "example.com", ZoneID: "abc", Endpoint: srv.URL}, Options{})
		require.NoError(t, err)
		assert.Equal(t, before, srv.Calls("", "/zones"))
	})
}
