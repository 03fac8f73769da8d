package providers_test

// Harnesses of the provider integration tests (integration_test.go): the
// real Route53 and Cloudflare adapters, built the way `meridian serve`
// builds them (NewFromConfig), talking to their in-process wire-level fakes.

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	mconfig "github.com/meridian-gslb/meridian/internal/config"
	"github.com/meridian-gslb/meridian/internal/engine"
	"github.com/meridian-gslb/meridian/internal/model"
	"github.com/meridian-gslb/meridian/providers"
	"github.com/meridian-gslb/meridian/providers/apicall"
	"github.com/meridian-gslb/meridian/providers/cloudflare"
	"github.com/meridian-gslb/meridian/providers/cloudflare/cffake"
	"github.com/meridian-gslb/meridian/providers/plan"
	"github.com/meridian-gslb/meridian/providers/route53"
	"github.com/meridian-gslb/meridian/providers/route53/route53fake"
)

const (
	zoneName = "example.com."
	owner    = "meridian-test"
	// ownerTTL is the TTL plan gives ownership TXT records (plan.ownerTTL).
	ownerTTL = 300
	// awsSecret is the dummy secret key of the Route53 adapters.
	awsSecret = "integration-secret-never-logged"
)

// fake is one provider's in-process fake holding zoneName, seen through the
// real adapter.
type fake interface {
	// zone builds a NEW adapter for the fake's zone, as a (re)started
	// process does.
	zone(t *testing.T) providers.Zone
	// seed stores records as another tool would have written them.
	seed(t *testing.T, recs ...plan.Record)
	// lines is the zone as canonical text, one line per record set
	// (Route53) or per record (Cloudflare); TXT values unquoted.
	lines() []string
	// expectLines is recs as lines shows them.
	expectLines(recs []plan.Record) []string
	// raw is every stored record of the given names and types, as the fake
	// holds it (ids, TTLs, timestamps), keyed so that two snapshots compare.
	raw(keys ...nameType) map[string]any
	// calls is the requests the fake served, by operation.
	calls() map[string]int
	// writes is the write requests the fake served.
	writes() int
}

type nameType struct{ name, typ string }

// logBuffer collects adapter and reconciler logs; a failing test prints them.
type logBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *logBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *logBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

func (l *logBuffer) logger() *slog.Logger {
	return slog.New(slog.NewTextHandler(l, &slog.HandlerOptions{Level: slog.LevelInfo}))
}

// dumpOnFailure prints the tail of the logs when t failed.
func dumpOnFailure(t *testing.T, l *logBuffer) {
	t.Cleanup(func() {
		if t.Failed() {
			s := l.String()
			if len(s) > 20000 {
				s = "…" + s[len(s)-20000:]
			}
			t.Logf("logs:\n%s", s)
		}
	})
}

// ---- Route53 ----

// r53 is a route53fake with zoneName and the knobs of its adapters.
type r53 struct {
	fake *route53fake.Server
	id   string
	rps  float64 // route53.requests_per_second (0: the default, 2)
	opts route53.Options
	reg  *prometheus.Registry
	log  *logBuffer
}

var _ fake = (*r53)(nil)

func newRoute53(t *testing.T, fo route53fake.Options, rps float64) *r53 {
	t.Helper()
	f := route53fake.New(fo)
	t.Cleanup(f.Close)
	h := &r53{fake: f, id: f.AddZone(zoneName), rps: rps, reg: prometheus.NewRegistry(), log: &logBuffer{}}
	h.opts = route53.Options{PollInterval: 20 * time.Millisecond}
	dumpOnFailure(t, h.log)
	t.Cleanup(func() { require.NotContains(t, h.log.String(), awsSecret, "credentials never reach the log") })
	return h
}

func (h *r53) zone(t *testing.T) providers.Zone {
	t.Helper()
	o := h.opts
	o.Logger, o.Metrics = h.log.logger(), apicall.NewMetrics(h.reg)
	z := model.Route53Zone{Zone: zoneName, Region: "us-east-1", Endpoint: h.fake.URL(), RequestsPerSecond: h.rps}
	p, err := route53.NewFromConfig(context.Background(), z, o,
		config.WithCredentialsProvider(credentials.NewStaticCredentialsProvider("AKIDMERIDIANTEST", awsSecret, "")),
		config.WithSharedConfigFiles([]string{}), config.WithSharedCredentialsFiles([]string{}))
	require.NoError(t, err)
	return providers.Zone{Provider: p, Zone: zoneName, Mode: model.ModeDirect, Translate: route53.Translate}
}

func (h *r53) seed(t *testing.T, recs ...plan.Record) {
	t.Helper()
	for _, r := range recs {
		s := route53fake.RecordSet{Name: r.Name, Type: r.Type, TTL: int64(r.TTL), SetID: r.SetID, Weight: r.Weight, Failover: r.Failover}
		for _, v := range r.Values {
			if r.Type == "TXT" {
				v = `"` + v + `"`
			}
			s.Values = append(s.Values, v)
		}
		h.fake.Put(h.id, s)
	}
}

// record converts a stored set to a plan.Record (TXT unquoted, values sorted).
func r53Record(s route53fake.RecordSet) plan.Record {
	r := plan.Record{Name: s.Name, Type: s.Type, TTL: uint32(s.TTL), SetID: s.SetID, Weight: s.Weight, Failover: s.Failover}
	if s.Geo != nil {
		r.Geo = &plan.GeoLocation{Continent: s.Geo.Continent, Country: s.Geo.Country, Subdivision: s.Geo.Subdivision}
	}
	for _, v := range s.Values {
		if s.Type == "TXT" {
			v = unquote(v)
		}
		r.Values = append(r.Values, v)
	}
	slices.Sort(r.Values)
	return r
}

func (h *r53) lines() []string {
	var out []string
	for _, s := range h.fake.Records(h.id) {
		out = append(out, r53Record(s).String())
	}
	slices.Sort(out)
	return out
}

func (h *r53) expectLines(recs []plan.Record) []string {
	var out []string
	for _, r := range recs {
		r.Values = slices.Clone(r.Values)
		slices.Sort(r.Values)
		r.IDs = nil
		out = append(out, r.String())
	}
	slices.Sort(out)
	return out
}

func (h *r53) raw(keys ...nameType) map[string]any {
	out := map[string]any{}
	for _, s := range h.fake.Records(h.id) {
		if slices.Contains(keys, nameType{s.Name, s.Type}) {
			out[s.Name+" "+s.Type+" "+s.SetID] = s
		}
	}
	return out
}

func (h *r53) calls() map[string]int { return h.fake.Calls() }

func (h *r53) writes() int { return h.fake.Calls()[route53fake.OpChangeResourceRecordSets] }

// ---- Cloudflare ----

// cf is a cffake with zoneName and the knobs of its adapters.
type cf struct {
	srv       *cffake.Server
	id        string
	tokenFile string
	budget    int // cloudflare.request_budget (0: the default, 1200)
	now       func() time.Time
	sleep     func(context.Context, time.Duration) error
	reg       *prometheus.Registry
	log       *logBuffer
}

var _ fake = (*cf)(nil)

// tokens makes every fake's API token unique: the adapter shares one
// request budget per token across the process (cloudflare.sharedBudget),
// which would couple tests that ran one after the other.
var tokens atomic.Int64

func newCloudflare(t *testing.T, budget int) *cf {
	t.Helper()
	token := fmt.Sprintf("tok-integration-%d-%d", os.Getpid(), tokens.Add(1))
	srv := cffake.New(token)
	t.Cleanup(srv.Close)
	file := filepath.Join(t.TempDir(), "cloudflare-token")
	require.NoError(t, os.WriteFile(file, []byte(token+"\n"), 0o600))
	h := &cf{srv: srv, id: srv.AddZone(zoneName), tokenFile: file, budget: budget, reg: prometheus.NewRegistry(), log: &logBuffer{}}
	dumpOnFailure(t, h.log)
	t.Cleanup(func() { require.NotContains(t, h.log.String(), token, "the token never reaches the log") })
	return h
}

func (h *cf) zone(t *testing.T) providers.Zone {
	t.Helper()
	z := model.CloudflareZone{Zone: zoneName, APITokenFile: h.tokenFile, Endpoint: h.srv.URL, ProviderAPI: model.ProviderAPI{RequestBudget: h.budget}}
	p, err := cloudflare.NewFromConfig(context.Background(), z, cloudflare.Options{
		Logger: h.log.logger(), Metrics: apicall.NewMetrics(h.reg), Now: h.now, Sleep: h.sleep,
	})
	require.NoError(t, err)
	return providers.Zone{Provider: p, Zone: zoneName, Mode: model.ModeDirect, Translate: p.Desired}
}

func (h *cf) seed(t *testing.T, recs ...plan.Record) {
	t.Helper()
	for _, r := range recs {
		for _, v := range r.Values {
			if r.Type == "TXT" {
				v = `"` + v + `"`
			}
			_, err := h.srv.Put(h.id, cffake.Record{Name: r.Name, Type: r.Type, Content: v, TTL: int(r.TTL)})
			require.NoError(t, err, "seed %s", r)
		}
	}
}

func cfLine(name, typ string, ttl int, value string) string {
	return fmt.Sprintf("%s %d %s %s", name, ttl, typ, value)
}

func (h *cf) lines() []string {
	var out []string
	for _, r := range h.srv.Records(h.id) {
		v := r.Content
		switch r.Type {
		case "TXT":
			v = unquote(v)
		case "CNAME", "NS":
			v += "."
		}
		out = append(out, cfLine(r.Name+".", r.Type, r.TTL, v))
	}
	slices.Sort(out)
	return out
}

func (h *cf) expectLines(recs []plan.Record) []string {
	var out []string
	for _, r := range recs {
		ttl := int(r.TTL)
		if ttl == 0 {
			ttl = 1
		}
		for _, v := range r.Values {
			out = append(out, cfLine(r.Name, r.Type, ttl, v))
		}
	}
	slices.Sort(out)
	return out
}

func (h *cf) raw(keys ...nameType) map[string]any {
	out := map[string]any{}
	for _, r := range h.srv.Records(h.id) {
		if slices.Contains(keys, nameType{r.Name + ".", r.Type}) {
			out[r.ID] = r
		}
	}
	return out
}

// cfRoutes are the fake's routes, for calls by operation.
var cfRoutes = []struct{ op, method, route string }{
	{"list_zones", "GET", "/zones"},
	{"list_records", "GET", "/zones/{zone}/dns_records"},
	{"create_record", "POST", "/zones/{zone}/dns_records"},
	{"update_record", "PATCH", "/zones/{zone}/dns_records/{id}"},
	{"replace_record", "PUT", "/zones/{zone}/dns_records/{id}"},
	{"delete_record", "DELETE", "/zones/{zone}/dns_records/{id}"},
}

func (h *cf) calls() map[string]int {
	out := map[string]int{}
	for _, r := range cfRoutes {
		if n := h.srv.Calls(r.method, r.route); n > 0 {
			out[r.op] = n
		}
	}
	return out
}

func (h *cf) writes() int { return h.srv.WriteCalls() }

// fakeClock drives the Cloudflare adapter (Now, Sleep) and its fake
// (SetClock): sleeping advances it at once, so no real time passes.
type fakeClock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *fakeClock) Sleep(ctx context.Context, d time.Duration) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(max(d, 0))
	return nil
}

// ---- desired state ----

// svc is one generated service.
type svc struct {
	name     string // without the zone
	strategy string // weighted when empty
	eps      []ep
}

type ep struct {
	addr, cluster string
	weight        int // 0: the default (100)
}

// configYAML is a Meridian configuration with zoneName's Meridian zone,
// three clusters in three regions and the services given.
func configYAML(services []svc) string {
	var b strings.Builder
	b.WriteString(`zones:
  - apex: example.com
    nameservers:
      - {name: ns1.example.com, ipv4: [192.0.2.53]}
clusters:
  - {name: c1, region: us-east}
  - {name: c2, region: us-west}
  - {name: c3, region: eu-west}
services:
`)
	for _, s := range services {
		fmt.Fprintf(&b, "  - name: %s.example.com\n    ttl: 60\n", s.name)
		if s.strategy != "" {
			fmt.Fprintf(&b, "    strategy: %s\n", s.strategy)
		}
		if s.strategy == model.StrategyFailover {
			var order []string
			for _, e := range s.eps {
				if !slices.Contains(order, e.cluster) {
					order = append(order, e.cluster)
				}
			}
			fmt.Fprintf(&b, "    failover: {order: [%s]}\n", strings.Join(order, ", "))
		}
		b.WriteString("    endpoints:\n")
		for _, e := range s.eps {
			fmt.Fprintf(&b, "      - {address: %s, cluster: %s", e.addr, e.cluster)
			if e.weight > 0 {
				fmt.Fprintf(&b, ", weight: %d", e.weight)
			}
			b.WriteString("}\n")
		}
	}
	return b.String()
}

// parse reads a configuration the way `meridian serve` does.
func parse(t *testing.T, yaml string) *model.Desired {
	t.Helper()
	f, err := mconfig.Parse("integration.yaml", []byte(yaml))
	require.NoError(t, err)
	return &f.Desired
}

// weightedServices is n services s0000…, each with two weighted endpoints
// (c1 and c2), addresses unique per service.
func weightedServices(prefix string, from, n int) []svc {
	out := make([]svc, 0, n)
	for i := from; i < from+n; i++ {
		out = append(out, svc{name: fmt.Sprintf("%s%04d", prefix, i), eps: []ep{
			{addr: fmt.Sprintf("10.1.%d.%d", i/250, i%250+1), cluster: "c1", weight: 70},
			{addr: fmt.Sprintf("10.2.%d.%d", i/250, i%250+1), cluster: "c2", weight: 30},
		}})
	}
	return out
}

// expected is what zone should hold for d under h: the translated records
// and one ownership TXT per name.
func expected(z providers.Zone, d *model.Desired, h engine.Health) []plan.Record {
	recs := z.Translate(providers.Services(d, h), z.Zone)
	types := map[string][]string{}
	for _, r := range recs {
		types[r.Name] = append(types[r.Name], r.Type)
	}
	out := slices.Clone(recs)
	for name, ts := range types {
		out = append(out, plan.Record{Name: plan.OwnerName(name), Type: "TXT", TTL: ownerTTL, Values: []string{plan.OwnerValue(owner, ts)}})
	}
	return out
}

// compare is the zone against baseline (records that were there before
// Meridian: apex, foreign ones) plus want: lines missing, lines extra, and
// lines held more than once.
func compare(f fake, baseline []string, want []plan.Record) (missing, extra, dups []string) {
	got := f.lines()
	exp := append(slices.Clone(baseline), f.expectLines(want)...)
	seen := map[string]int{}
	for _, l := range got {
		seen[l]++
		if seen[l] == 2 {
			dups = append(dups, l)
		}
	}
	return minus(exp, got), minus(got, exp), dups
}

// minus is a without one occurrence of each line of b (multisets).
func minus(a, b []string) []string {
	n := map[string]int{}
	for _, l := range b {
		n[l]++
	}
	var out []string
	for _, l := range a {
		if n[l] > 0 {
			n[l]--
			continue
		}
		out = append(out, l)
	}
	return out
}

// unquote reads a TXT value stored quoted ("a" "b" → ab).
func unquote(v string) string {
	if !strings.HasPrefix(v, `"`) {
		return v
	}
	var b strings.Builder
	for _, part := range strings.Split(strings.TrimSpace(v), `" "`) {
		b.WriteString(strings.Trim(part, `"`))
	}
	return b.String()
}

// world is the state the reconciler publishes; tests change it.
type world struct {
	mu sync.Mutex
	st providers.State
}

func (w *world) set(st providers.State) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.st = st
}

func (w *world) get() providers.State {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.st
}

// reconciler is a Reconciler of one zone publishing w.
func reconciler(z providers.Zone, w *world, log *slog.Logger, reg prometheus.Registerer) *providers.Reconciler {
	return &providers.Reconciler{
		Zones: []providers.Zone{z}, Owner: owner, State: w.get, Logger: log,
		Metrics: providers.NewReconcileMetrics(reg),
	}
}

// downs is an engine.Health with some endpoints down (service|target).
type downs map[string]bool

func (d downs) Endpoint(service, target string) engine.State {
	if d[service+"|"+target] {
		return engine.Down
	}
	return engine.Unknown
}

func (downs) Cluster(string) engine.State { return engine.Unknown }

// metric sums the samples of a counter, gauge or histogram (its sum) whose
// labels include match.
func metric(t *testing.T, g prometheus.Gatherer, name string, match ...string) float64 {
	t.Helper()
	mfs, err := g.Gather()
	require.NoError(t, err)
	sum := 0.0
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
	next:
		for _, m := range mf.GetMetric() {
			for i := 0; i+1 < len(match); i += 2 {
				ok := false
				for _, l := range m.GetLabel() {
					ok = ok || (l.GetName() == match[i] && l.GetValue() == match[i+1])
				}
				if !ok {
					continue next
				}
			}
			switch {
			case m.GetCounter() != nil:
				sum += m.GetCounter().GetValue()
			case m.GetGauge() != nil:
				sum += m.GetGauge().GetValue()
			case m.GetHistogram() != nil:
				sum += m.GetHistogram().GetSampleSum()
			}
		}
	}
	return sum
}

// throttleWindow is the acceptance scenario's throttling window:
// $PROVIDERS_THROTTLE_SECONDS (default 60) seconds.
func throttleWindow(t *testing.T) time.Duration {
	t.Helper()
	v := os.Getenv("PROVIDERS_THROTTLE_SECONDS")
	if v == "" {
		return 60 * time.Second
	}
	n, err := strconv.Atoi(v)
	require.NoError(t, err, "PROVIDERS_THROTTLE_SECONDS")
	require.Positive(t, n, "PROVIDERS_THROTTLE_SECONDS")
	return time.Duration(n) * time.Second
}

// ops formats calls by operation, sorted.
func ops(calls map[string]int) string {
	var parts []string
	for op, n := range calls {
		parts = append(parts, fmt.Sprintf("%s=%d", op, n))
	}
	slices.Sort(parts)
	return strings.Join(parts, " ")
}

// total sums calls by operation.
func total(calls map[string]int) int {
	n := 0
	for _, c := range calls {
		n += c
	}
	return n
}

// noLeaks checks, after t and its subtests, that no goroutine started
// during t is left (reconciler loops, HTTP connections to closed fakes).
func noLeaks(t *testing.T) {
	opt := goleak.IgnoreCurrent()
	t.Cleanup(func() { goleak.VerifyNone(t, opt) })
}
