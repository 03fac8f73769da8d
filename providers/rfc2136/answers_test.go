package rfc2136

import (
	"context"
	"log/slog"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/meridian-gslb/meridian/internal/config"
	"github.com/meridian-gslb/meridian/internal/engine"
	"github.com/meridian-gslb/meridian/internal/model"
	"github.com/meridian-gslb/meridian/providers"
	"github.com/meridian-gslb/meridian/providers/plan"
	"github.com/meridian-gslb/meridian/providers/rfc2136/rfc2136fake"
)

// answersConfig is the desired state around the services of a test: the
// zone gslb.example.com (inside the primary's example.com) and four
// clusters.
const answersConfig = `
zones:
  - apex: gslb.example.com
    nameservers: [{name: ns1.gslb.example.com, ipv4: [192.0.2.53]}]
clusters:
  - {name: east, region: us-east}
  - {name: west, region: us-west}
  - {name: south, region: sa-east}
  - {name: drained, region: eu-west, drain: true}
services:
`

// desired parses answersConfig with services (YAML list items).
func desired(t *testing.T, services string) *model.Desired {
	t.Helper()
	f, err := config.Parse("test.yaml", []byte(answersConfig+services))
	require.NoError(t, err)
	return &f.Desired
}

// decided is a decided health: the "service target" pairs and clusters in
// it are down, everything else up.
type decided map[string]bool

func (d decided) Endpoint(service, target string) engine.State {
	if d[service+" "+target] {
		return engine.Down
	}
	return engine.Up
}

func (d decided) Cluster(name string) engine.State {
	if d[name] {
		return engine.Down
	}
	return engine.Up
}

const (
	weighted = `
  - name: app.gslb.example.com
    ttl: 30
    endpoints:
      - {address: 192.0.2.1, cluster: east, weight: 700}
      - {address: 192.0.2.2, cluster: west, weight: 300}
`
	failover = `
  - name: web.gslb.example.com
    ttl: 20
    strategy: failover
    failover: {order: [east, west, south]}
    endpoints:
      - {address: 192.0.2.11, cluster: east}
      - {address: 192.0.2.12, cluster: west}
      - {address: 192.0.2.13, cluster: west}
      - {address: 192.0.2.14, cluster: south}
`
)

func strs(rs []plan.Record) []string {
	out := make([]string, 0, len(rs))
	for _, r := range rs {
		out = append(out, r.String())
	}
	return out
}

func TestTheDecidedAnswerSetBecomesPlainRecords(t *testing.T) {
	for _, tc := range []struct {
		name     string
		services string
		down     decided
		want     []string
	}{
		{name: "a weighted service is written with every endpoint that receives traffic, its weights left out",
			services: weighted,
			want:     []string{"app.gslb.example.com. 30 A 192.0.2.1,192.0.2.2"}},
		{name: "an endpoint decided down leaves the set",
			services: weighted, down: decided{"app.gslb.example.com. 192.0.2.1": true},
			want: []string{"app.gslb.example.com. 30 A 192.0.2.2"}},
		{name: "a cluster decided down takes its endpoints out",
			services: weighted, down: decided{"west": true},
			want: []string{"app.gslb.example.com. 30 A 192.0.2.1"}},
		{name: "every endpoint down is written fail-open, with what Meridian answers then",
			services: weighted, down: decided{"east": true, "west": true},
			want: []string{"app.gslb.example.com. 30 A 192.0.2.1,192.0.2.2"}},
		{name: "a failover service is written with its first group only",
			services: failover,
			want:     []string{"web.gslb.example.com. 20 A 192.0.2.11"}},
		{name: "a failover moves the whole set to the next group",
			services: failover, down: decided{"web.gslb.example.com. 192.0.2.11": true},
			want: []string{"web.gslb.example.com. 20 A 192.0.2.12,192.0.2.13"}},
		{name: "a failover past a group that is down in full skips it",
			services: failover, down: decided{"east": true, "west": true},
			want: []string{"web.gslb.example.com. 20 A 192.0.2.14"}},
		{name: "a weight-0 standby is written only while no weighted endpoint is available",
			services: `
  - name: app.gslb.example.com
    ttl: 30
    endpoints:
      - {address: 192.0.2.1, cluster: east}
      - {address: 192.0.2.9, cluster: south, weight: 0}
`, down: decided{"east": true},
			want: []string{"app.gslb.example.com. 30 A 192.0.2.9"}},
		{name: "a drained cluster's endpoints are not written",
			services: `
  - name: app.gslb.example.com
    ttl: 30
    endpoints:
      - {address: 192.0.2.1, cluster: east}
      - {address: 192.0.2.8, cluster: drained}
`,
			want: []string{"app.gslb.example.com. 30 A 192.0.2.1"}},
		{name: "IPv4 and IPv6 endpoints become one A and one AAAA RRset",
			services: `
  - name: dual.gslb.example.com
    ttl: 60
    endpoints:
      - {address: 192.0.2.1, cluster: east}
      - {address: "2001:db8::1", cluster: east}
      - {address: "2001:db8::2", cluster: west}
`, down: decided{"dual.gslb.example.com. 2001:db8::2": true},
			want: []string{"dual.gslb.example.com. 60 A 192.0.2.1", "dual.gslb.example.com. 60 AAAA 2001:db8::1"}},
		{name: "a CNAME service becomes one CNAME to its highest-weighted available target",
			services: `
  - name: cdn.gslb.example.com
    ttl: 60
    endpoints:
      - {cname: a.cdn.example.net, cluster: east, weight: 700}
      - {cname: b.cdn.example.net, cluster: west, weight: 300}
`, down: decided{"cdn.gslb.example.com. a.cdn.example.net.": true},
			want: []string{"cdn.gslb.example.com. 60 CNAME b.cdn.example.net."}},
		{name: "a geo service is written with its default clusters: a plain server does not know the client",
			services: `
  - name: geo.gslb.example.com
    ttl: 30
    strategy: geo
    geo: {default: [west]}
    endpoints:
      - {address: 192.0.2.1, cluster: east}
      - {address: 192.0.2.2, cluster: west}
`,
			want: []string{"geo.gslb.example.com. 30 A 192.0.2.2"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			views := providers.Services(desired(t, tc.services), tc.down)
			assert.Equal(t, tc.want, strs(Translate(views, "example.com.")))
		})
	}
}

func TestServicesOutsideTheZoneAreNotWritten(t *testing.T) {
	views := providers.Services(desired(t, weighted), nil)
	assert.Empty(t, Translate(views, "example.net."))
	assert.Len(t, Translate(views, "gslb.example.com."), 1, "a zone that is the Meridian zone itself holds them")
}

// foreign are records of someone else's in example.com: beside Meridian's
// A at app (a TXT at the same name), at a neighbour name, at the apex.
var foreign = []string{
	`app.gslb.example.com. 600 IN TXT "v=someone-else"`,
	"db.gslb.example.com. 300 IN A 192.0.2.200",
	`_meridian-owner.db.gslb.example.com. 300 IN TXT "not a meridian value"`,
	"www.example.com. 300 IN A 192.0.2.80",
	"example.com. 300 IN MX 10 mail.example.com.",
}

// answersEnv is a fake primary of example.com holding the foreign records
// and a direct-mode reconciler of it.
func answersEnv(t *testing.T, d *model.Desired, h *decided) (*env, *providers.Reconciler) {
	t.Helper()
	e := newEnv(t, rfc2136fake.Options{}, keySecret)
	require.NoError(t, e.fake.Put(foreign...))
	r := &providers.Reconciler{
		Zones:  []providers.Zone{{Provider: e.p, Zone: parent, Mode: model.ModeDirect, Translate: Translate}},
		Owner:  owner,
		State:  func() providers.State { return providers.State{Desired: d, Health: *h} },
		Logger: slog.New(slog.DiscardHandler),
	}
	return e, r
}

// lookups are the values the fake holds for every foreign record's name
// and type.
func lookups(f *rfc2136fake.Server) []string {
	var out []string
	for _, rr := range foreign {
		fl := strings.Fields(rr)
		out = append(out, fl[0]+" "+fl[3]+" "+strings.Join(f.Lookup(fl[0], fl[3]), ","))
	}
	return out
}

// planLines are a plan's changes and conflicts, one line each.
func planLines(p plan.Plan) []string {
	var out []string
	for _, r := range p.Changes.Creates {
		out = append(out, "+ "+r.String())
	}
	for _, u := range p.Changes.Updates {
		out = append(out, "~ "+u.Old.String()+" → "+strings.Join(u.New.Values, ","))
	}
	for _, r := range p.Changes.Deletes {
		out = append(out, "- "+r.String())
	}
	for _, c := range p.Conflicts {
		out = append(out, "! "+c.Key.String())
	}
	return out
}

const ownTXT = "_meridian-owner.app.gslb.example.com. 300 TXT heritage=meridian,owner=meridian-test,types=A"

func TestThePlanAgainstThePrimary(t *testing.T) {
	for _, tc := range []struct {
		name string
		// first is the first pass's state (its plan applied), then the
		// second pass's, whose plan and UPDATE messages are checked.
		first, second string
		down          decided
		edit          []string // records someone puts into the zone between the passes
		want          []string
		updates       int // UPDATE messages of the second pass
	}{
		{name: "a pass without a new decision plans nothing and sends no update",
			first: weighted, second: weighted},
		{name: "an endpoint decided down is one update of its RRset",
			first: weighted, second: weighted, down: decided{"app.gslb.example.com. 192.0.2.1": true},
			want: []string{"~ app.gslb.example.com. 30 A 192.0.2.1,192.0.2.2 → 192.0.2.2"}, updates: 1},
		{name: "a failover replaces the whole set in one update",
			first: failover, second: failover, down: decided{"east": true},
			want: []string{"~ web.gslb.example.com. 20 A 192.0.2.11 → 192.0.2.12,192.0.2.13"}, updates: 1},
		{name: "a service that leaves takes its RRset and its ownership TXT, not the foreign TXT beside it",
			first: weighted, second: failover,
			want: []string{
				"+ _meridian-owner.web.gslb.example.com. 300 TXT heritage=meridian,owner=meridian-test,types=A",
				"+ web.gslb.example.com. 20 A 192.0.2.11",
				"- " + ownTXT,
				"- app.gslb.example.com. 30 A 192.0.2.1,192.0.2.2",
			}, updates: 1},
		{name: "a hand edit of Meridian's own RRset is repaired",
			first: weighted, second: weighted, edit: []string{"app.gslb.example.com. 30 IN A 198.51.100.7"},
			want: []string{"~ app.gslb.example.com. 30 A 192.0.2.1,192.0.2.2,198.51.100.7 → 192.0.2.1,192.0.2.2"}, updates: 1},
		{name: "a name someone else holds is a conflict and stays theirs",
			first: weighted, second: weighted + strings.ReplaceAll(weighted, "app.", "db."),
			want: []string{"! db.gslb.example.com. A"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d, h := desired(t, tc.first), decided{}
			e, r := answersEnv(t, d, &h)
			before := lookups(e.fake)
			res := sync1(t, r)
			require.NoError(t, res.Err)
			require.Empty(t, res.Applied.Failed)
			require.Equal(t, 1, e.fake.Updates(), "the first pass writes in one UPDATE")
			require.NoError(t, e.fake.Put(tc.edit...))

			*d, h = *desired(t, tc.second), tc.down
			res = sync1(t, r)
			require.NoError(t, res.Err)
			require.Empty(t, res.Applied.Failed)
			assert.Equal(t, tc.want, planLines(res.Plan))
			assert.Equal(t, 1+tc.updates, e.fake.Updates(), "UPDATE messages")
			assert.Equal(t, before, lookups(e.fake), "records Meridian does not own are unchanged")

			res = sync1(t, r)
			require.NoError(t, res.Err)
			assert.Zero(t, res.Plan.Changes.Len(), "what was written reads back equal")
			assert.Equal(t, 1+tc.updates, e.fake.Updates(), "a third pass sends no update")
		})
	}
}

func TestAFirstPassWritesTheAnswersWithTheirOwnership(t *testing.T) {
	h := decided{}
	e, r := answersEnv(t, desired(t, weighted+failover), &h)
	res := sync1(t, r)
	require.NoError(t, res.Err)
	assert.Empty(t, res.Plan.Conflicts)
	assert.Equal(t, []string{"192.0.2.1", "192.0.2.2"}, e.fake.Lookup("app.gslb.example.com.", "A"))
	assert.Equal(t, []string{"192.0.2.11"}, e.fake.Lookup("web.gslb.example.com.", "A"))
	assert.Equal(t, []string{`"heritage=meridian,owner=meridian-test,types=A"`}, e.fake.Lookup("_meridian-owner.app.gslb.example.com.", "TXT"))
	assert.Equal(t, []string{`"v=someone-else"`}, e.fake.Lookup("app.gslb.example.com.", "TXT"), "the foreign TXT at the same name stays")
	assert.Equal(t, 1, res.Applied.Calls, "both names in one UPDATE")
}

func TestADryRunPlansTheFailoverAndWritesNothing(t *testing.T) {
	h := decided{}
	e, r := answersEnv(t, desired(t, weighted), &h)
	require.NoError(t, sync1(t, r).Err)
	serial := e.fake.Serial()
	h = decided{"app.gslb.example.com. 192.0.2.2": true}
	res := r.Sync(context.Background(), true, false)
	require.Len(t, res, 1)
	require.NoError(t, res[0].Err)
	assert.Equal(t, "dry run", res[0].Skipped)
	assert.Equal(t, []string{"~ app.gslb.example.com. 30 A 192.0.2.1,192.0.2.2 → 192.0.2.1"}, planLines(res[0].Plan))
	assert.Equal(t, serial, e.fake.Serial(), "nothing written")
	assert.Equal(t, []string{"192.0.2.1", "192.0.2.2"}, e.fake.Lookup("app.gslb.example.com.", "A"))
}
