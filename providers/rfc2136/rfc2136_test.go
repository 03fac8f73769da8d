package rfc2136

import (
	"bytes"
	"context"
	"log/slog"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/miekg/dns"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/meridian-gslb/meridian/internal/dnssec"
	"github.com/meridian-gslb/meridian/internal/model"
	"github.com/meridian-gslb/meridian/providers"
	"github.com/meridian-gslb/meridian/providers/apicall"
	"github.com/meridian-gslb/meridian/providers/plan"
	"github.com/meridian-gslb/meridian/providers/rfc2136/rfc2136fake"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

const (
	keyName   = "meridian-update."
	keySecret = "c2VjcmV0LXNlY3JldC1zZWNyZXQtc2VjcmV0LTEyMzQ=" // 32 bytes
	parent    = "example.com."
	owner     = "meridian-test"
)

// env is a fake primary of example.com and a provider signing with its key.
type env struct {
	fake *rfc2136fake.Server
	p    *Provider
	reg  *prometheus.Registry
	api  *apicall.Metrics
	key  string // the key file
	logs *syncBuffer
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

func newEnv(t *testing.T, fo rfc2136fake.Options, secret string) *env {
	t.Helper()
	fo.Zone, fo.KeyName, fo.Secret = parent, keyName, keySecret
	fake, err := rfc2136fake.New(fo)
	require.NoError(t, err)
	t.Cleanup(fake.Close)
	e := &env{fake: fake, reg: prometheus.NewRegistry(), key: filepath.Join(t.TempDir(), "update.key"), logs: &syncBuffer{}}
	require.NoError(t, os.WriteFile(e.key, []byte(`key "meridian-update" { algorithm hmac-sha256; secret "`+secret+`"; };`), 0o600))
	e.api = apicall.NewMetrics(e.reg)
	e.p, err = NewFromConfig(model.RFC2136Zone{Zone: parent, Server: fake.Addr, TSIGKeyFile: e.key},
		Options{Metrics: e.api, Registerer: e.reg, Backoff: time.Millisecond, MaxBackoff: 5 * time.Millisecond, RequestTimeout: 5 * time.Second,
			RequestBudget: 1000, Logger: slog.New(slog.NewTextHandler(e.logs, &slog.HandlerOptions{Level: slog.LevelDebug}))})
	require.NoError(t, err)
	t.Cleanup(func() { assert.NotContains(t, e.logs.String(), keySecret, "the secret never reaches the log") })
	return e
}

// gslb is a desired state with gslb.example.com delegated from example.com
// over RFC 2136, signed when key is not nil.
func gslb(key *dnssec.Key, nameservers ...model.Nameserver) *model.Desired {
	z := model.Zone{Apex: "gslb.example.com.", NSTTL: 3600, Nameservers: nameservers,
		Delegation: &model.Delegation{Provider: "rfc2136", Parent: parent}}
	if key != nil {
		z.DNSSEC = &model.DNSSEC{KeyFiles: []string{"k"}}
	}
	return &model.Desired{Zones: []model.Zone{z}}
}

func (e *env) reconciler(d *model.Desired, key *dnssec.Key) *providers.Reconciler {
	return &providers.Reconciler{
		Zones: []providers.Zone{{Provider: e.p, Zone: parent, Mode: model.ModeDelegate}},
		Owner: owner,
		State: func() providers.State {
			st := providers.State{Desired: d}
			if key != nil {
				st.DNSKEY = func(string) []dns.RR { return []dns.RR{key.DNSKEY} }
			}
			return st
		},
		Logger: slog.New(slog.DiscardHandler),
	}
}

func sync1(t *testing.T, r *providers.Reconciler) providers.ZoneResult {
	t.Helper()
	res := r.Sync(context.Background(), false, false)
	require.Len(t, res, 1)
	return res[0]
}

var (
	ns1 = model.Nameserver{Name: "ns1.gslb.example.com.", IPv4: []string{"192.0.2.53"}}
	ns2 = model.Nameserver{Name: "ns2.gslb.example.com.", IPv4: []string{"192.0.2.54"}, IPv6: []string{"2001:db8::54"}}
)

func TestADelegationWithDSLandsInTheParentAndFollowsTheNameservers(t *testing.T) {
	e := newEnv(t, rfc2136fake.Options{Grant: "gslb.example.com", PerMessage: 3}, keySecret)
	require.NoError(t, e.fake.Put("www.example.com. 300 IN A 192.0.2.80"))
	key, err := dnssec.Generate("gslb.example.com.", dns.ECDSAP256SHA256, 3600)
	require.NoError(t, err)
	d := gslb(key, ns1, ns2)
	r := e.reconciler(d, key)

	res := sync1(t, r)
	require.NoError(t, res.Err)
	require.Empty(t, res.Applied.Failed)
	assert.Equal(t, 1, res.Applied.Calls, "one UPDATE for the whole delegation")
	assert.Equal(t, []string{"ns1.gslb.example.com.", "ns2.gslb.example.com."}, e.fake.Lookup("gslb.example.com.", "NS"))
	assert.Equal(t, []string{providers.DSValue(key.DS())}, normalized(e.fake.Lookup("gslb.example.com.", "DS")))
	assert.Equal(t, []string{"192.0.2.53"}, e.fake.Lookup("ns1.gslb.example.com.", "A"))
	assert.Equal(t, []string{"2001:db8::54"}, e.fake.Lookup("ns2.gslb.example.com.", "AAAA"))
	assert.Equal(t, []string{`"heritage=meridian,owner=meridian-test,types=DS+NS"`}, e.fake.Lookup("_meridian-owner.gslb.example.com.", "TXT"))
	assert.Equal(t, []string{"192.0.2.80"}, e.fake.Lookup("www.example.com.", "A"), "a record of someone else's is untouched")

	res = sync1(t, r)
	require.NoError(t, res.Err)
	assert.Zero(t, res.Plan.Changes.Len(), "what was written reads back equal (a transfer of several signed messages)")

	d.Zones[0].Nameservers = []model.Nameserver{ns1}
	res = sync1(t, r)
	require.NoError(t, res.Err)
	require.Empty(t, res.Applied.Failed)
	assert.Equal(t, []string{"ns1.gslb.example.com."}, e.fake.Lookup("gslb.example.com.", "NS"))
	assert.Empty(t, e.fake.Lookup("ns2.gslb.example.com.", "A"), "the removed nameserver's glue is gone")
	assert.Empty(t, e.fake.Lookup("ns2.gslb.example.com.", "AAAA"))
	assert.Empty(t, e.fake.Lookup("_meridian-owner.ns2.gslb.example.com.", "TXT"))

	d.Zones[0].DNSSEC = nil
	res = sync1(t, r)
	require.NoError(t, res.Err)
	assert.Empty(t, e.fake.Lookup("gslb.example.com.", "DS"), "signing off: the DS goes, the NS stays")
	assert.Equal(t, []string{"ns1.gslb.example.com."}, e.fake.Lookup("gslb.example.com.", "NS"))

	assert.Equal(t, 3.0, testutil.ToFloat64(e.p.m.responses.WithLabelValues(parent, opUpdate, "NOERROR")))
	assert.Equal(t, 4.0, testutil.ToFloat64(e.p.m.responses.WithLabelValues(parent, opTransfer, "NOERROR")))
	assert.Equal(t, 4.0, testutil.ToFloat64(e.api.APICalls.WithLabelValues(providerLabel, opTransfer, "ok")))
	assert.Positive(t, testutil.ToFloat64(e.p.m.records.WithLabelValues(parent)))
}

// normalized puts DS values as the fake shows them (digest split by BIND
// style spaces or not) in the plan's form.
func normalized(vals []string) []string {
	var out []string
	for _, v := range vals {
		c, _ := plan.CanonicalDS(v)
		out = append(out, c)
	}
	return out
}

func TestADelegationSomeoneElseMadeIsLeftAlone(t *testing.T) {
	e := newEnv(t, rfc2136fake.Options{}, keySecret)
	require.NoError(t, e.fake.Put("gslb.example.com. 3600 IN NS ns.other.example.net."))
	r := e.reconciler(gslb(nil, ns1), nil)
	res := sync1(t, r)
	require.NoError(t, res.Err)
	assert.Len(t, res.Plan.Conflicts, 1, "the NS is someone else's")
	assert.Equal(t, []string{"ns.other.example.net."}, e.fake.Lookup("gslb.example.com.", "NS"))
	assert.Empty(t, e.fake.Lookup("_meridian-owner.gslb.example.com.", "TXT"), "no claim on the name")
}

func TestAChangeMadeBetweenReadAndWriteFailsItsPrerequisiteAlone(t *testing.T) {
	e := newEnv(t, rfc2136fake.Options{}, keySecret)
	r := e.reconciler(gslb(nil, ns1, ns2), nil)
	require.NoError(t, sync1(t, r).Err)

	ctx := context.Background()
	cur, err := e.p.Records(ctx, parent)
	require.NoError(t, err)
	// Someone edits the glue of ns1 after our read.
	require.NoError(t, e.fake.Put("ns1.gslb.example.com. 3600 IN A 198.51.100.1"))
	desired := []plan.Record{
		{Name: "gslb.example.com.", Type: "NS", TTL: 3600, Values: []string{"ns1.gslb.example.com.", "ns2.gslb.example.com."}},
		{Name: "ns1.gslb.example.com.", Type: "A", TTL: 3600, Values: []string{"192.0.2.99"}},
		{Name: "ns2.gslb.example.com.", Type: "A", TTL: 3600, Values: []string{"192.0.2.98"}},
		{Name: "ns2.gslb.example.com.", Type: "AAAA", TTL: 3600, Values: []string{"2001:db8::54"}},
	}
	pl := plan.Compute(plan.Input{Owner: owner, Desired: desired, Current: cur})
	require.Len(t, pl.Changes.Updates, 2)
	res, err := e.p.Apply(ctx, parent, pl.Changes)
	require.NoError(t, err)
	require.Len(t, res.Failed, 1, "only the changed name fails")
	assert.Equal(t, "ns1.gslb.example.com. A", res.Failed[0].Key.String())
	assert.ErrorContains(t, res.Failed[0].Err, "update answered NXRRSET")
	assert.Equal(t, 1, res.Applied)
	assert.Equal(t, 3, res.Calls, "the whole batch, then each half")
	assert.ElementsMatch(t, []string{"192.0.2.53", "198.51.100.1"}, e.fake.Lookup("ns1.gslb.example.com.", "A"), "their change is not overwritten")
	assert.Equal(t, []string{"192.0.2.98"}, e.fake.Lookup("ns2.gslb.example.com.", "A"))
}

func TestThePrimarysUpdatePolicyRefusesOnlyTheNamesOutsideItsGrant(t *testing.T) {
	e := newEnv(t, rfc2136fake.Options{Grant: "gslb.example.com"}, keySecret)
	ctx := context.Background()
	cur, err := e.p.Records(ctx, parent)
	require.NoError(t, err)
	desired := []plan.Record{
		{Name: "gslb.example.com.", Type: "NS", TTL: 3600, Values: []string{"ns1.gslb.example.com."}},
		{Name: "ns1.gslb.example.com.", Type: "A", TTL: 3600, Values: []string{"192.0.2.53"}},
		{Name: "other.example.com.", Type: "NS", TTL: 3600, Values: []string{"ns1.example.net."}},
	}
	res, err := e.p.Apply(ctx, parent, plan.Compute(plan.Input{Owner: owner, Desired: desired, Current: cur}).Changes)
	require.NoError(t, err)
	require.Len(t, res.Failed, 2, "the NS of other.example.com and its ownership record")
	for _, f := range res.Failed {
		assert.Contains(t, f.Key.Name, "other.example.com.")
		assert.ErrorContains(t, f.Err, "update answered REFUSED")
	}
	assert.Equal(t, []string{"ns1.gslb.example.com."}, e.fake.Lookup("gslb.example.com.", "NS"))
	assert.Empty(t, e.fake.Lookup("other.example.com.", "NS"))
}

func TestAWrongKeyEndsThePassWithNOTAUTH(t *testing.T) {
	e := newEnv(t, rfc2136fake.Options{}, "b3RoZXItc2VjcmV0LW90aGVyLXNlY3JldC0xMjM0NTY=")
	res := sync1(t, e.reconciler(gslb(nil, ns1), nil))
	require.Error(t, res.Err)
	assert.ErrorContains(t, res.Err, "rfc2136 zone example.com.: read by AXFR from "+e.fake.Addr+": transfer: transfer answered NOTAUTH")
	assert.Contains(t, e.fake.Refusals()[0], "TSIG")

	ns := plan.Record{Name: "gslb.example.com.", Type: "NS", TTL: 3600, Values: []string{"ns1.example.net."}}
	res2, err := e.p.Apply(context.Background(), parent, plan.Changes{Creates: []plan.Record{ns}})
	assert.ErrorContains(t, err, "update answered NOTAUTH: the primary did not accept the request's TSIG")
	assert.Zero(t, res2.Applied)
	assert.Zero(t, e.fake.Updates())
	assert.Equal(t, 1.0, testutil.ToFloat64(e.api.APICalls.WithLabelValues(providerLabel, opTransfer, "error")), "not retried")
}

func TestUnsignedAnswersAreNotTrusted(t *testing.T) {
	e := newEnv(t, rfc2136fake.Options{}, keySecret)
	r := e.reconciler(gslb(nil, ns1), nil)
	ctx := context.Background()
	cur, err := e.p.Records(ctx, parent)
	require.NoError(t, err)
	pl := plan.Compute(plan.Input{Owner: owner, Desired: []plan.Record{{Name: "gslb.example.com.", Type: "NS", TTL: 3600, Values: []string{"ns1.example.net."}}}, Current: cur})

	e.fake.UnsignedAnswers()
	_, err = e.p.Records(ctx, parent)
	assert.ErrorContains(t, err, "transfer answer not signed with the key")
	_, err = e.p.Apply(ctx, parent, pl.Changes)
	assert.ErrorContains(t, err, "update answer not signed with the key")
	assert.Equal(t, 1.0, testutil.ToFloat64(e.p.m.responses.WithLabelValues(parent, opUpdate, "UNSIGNED")))
	require.Error(t, sync1(t, r).Err)
}

func TestSERVFAILIsRetried(t *testing.T) {
	e := newEnv(t, rfc2136fake.Options{}, keySecret)
	e.fake.FailUpdates(dns.RcodeServerFailure, dns.RcodeServerFailure)
	res := sync1(t, e.reconciler(gslb(nil, ns1), nil))
	require.NoError(t, res.Err)
	assert.Equal(t, 3, res.Applied.Calls, "two SERVFAILs, then applied")
	assert.Equal(t, []string{"ns1.gslb.example.com."}, e.fake.Lookup("gslb.example.com.", "NS"))
	assert.Equal(t, 2.0, testutil.ToFloat64(e.api.Retries.WithLabelValues(providerLabel)))
	assert.Equal(t, 2.0, testutil.ToFloat64(e.p.m.responses.WithLabelValues(parent, opUpdate, "SERVFAIL")))
}

func TestAKeyFileThatTurnsBadKeepsTheLastGoodKey(t *testing.T) {
	e := newEnv(t, rfc2136fake.Options{}, keySecret)
	require.NoError(t, os.Chmod(e.key, 0o644)) // others may read it now: refused as a secret file
	res := sync1(t, e.reconciler(gslb(nil, ns1), nil))
	require.NoError(t, res.Err)
	assert.Equal(t, []string{"ns1.gslb.example.com."}, e.fake.Lookup("gslb.example.com.", "NS"))
	assert.Contains(t, e.logs.String(), "cannot read the TSIG key file again")

	_, err := NewFromConfig(model.RFC2136Zone{Zone: parent, Server: e.fake.Addr, TSIGKeyFile: e.key}, Options{})
	assert.ErrorContains(t, err, "rfc2136 zone example.com.: rfc2136 "+e.fake.Addr+": tsig_key_file:", "without a last good key the start fails")
}

func TestAnUnreachablePrimaryIsTransient(t *testing.T) {
	e := newEnv(t, rfc2136fake.Options{}, keySecret)
	e.fake.Close()
	_, err := e.p.Records(context.Background(), parent)
	require.Error(t, err)
	assert.ErrorIs(t, err, providers.ErrTransient)
}
