package serving

import (
	"errors"
	"log/slog"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/miekg/dns"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/meridian-gslb/meridian/internal/admin"
	"github.com/meridian-gslb/meridian/internal/config"
	"github.com/meridian-gslb/meridian/internal/dnssec"
	"github.com/meridian-gslb/meridian/internal/engine"
	"github.com/meridian-gslb/meridian/internal/failover"
	"github.com/meridian-gslb/meridian/internal/model"
	"github.com/meridian-gslb/meridian/internal/xfr"
	"github.com/meridian-gslb/meridian/internal/zonekeys"
)

const baseConfig = `
zones:
  - apex: gslb.test
    soa: {serial: 7, minimum: 20}
    nameservers: [{name: ns1.gslb.test, ipv4: [192.0.2.53]}]
clusters:
  - {name: east, region: us-east}
  - {name: west, region: us-west}
services:
  - name: app.gslb.test
    endpoints:
      - {address: 192.0.2.1, cluster: east}
      - {address: 192.0.2.2, cluster: west}
`

func load(t *testing.T, text string) *Loaded {
	t.Helper()
	l, err := Load("test.yaml", []byte(text), "")
	require.NoError(t, err)
	return l
}

// answers returns the A records the snapshot gives for name, sorted by
// draw: enough draws that every address in the answer set shows up.
func answers(t testing.TB, p *Pipeline, name string) map[string]bool {
	t.Helper()
	return snapshotAnswers(t, p.Store().Load(), name)
}

// snapshotAnswers is answers of one snapshot.
func snapshotAnswers(t testing.TB, snap *engine.Snapshot, name string) map[string]bool {
	t.Helper()
	out := map[string]bool{}
	require.NotNil(t, snap)
	for range 64 {
		var r engine.Result
		snap.Lookup(name, dns.TypeA, engine.Client{}, &r)
		for _, rr := range r.Answer {
			if a, ok := rr.(*dns.A); ok {
				out[a.A.String()] = true
			}
		}
	}
	return out
}

func newPipeline(t *testing.T, l *Loaded, opts Options) *Pipeline {
	t.Helper()
	if opts.Metrics == nil {
		opts.Metrics = NewMetrics(prometheus.NewRegistry())
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	p, err := New(l, opts)
	require.NoError(t, err)
	return p
}

func memoryAdmin(t *testing.T, node string) *admin.Store {
	t.Helper()
	s, err := admin.Open("", node, 0)
	require.NoError(t, err)
	return s
}

func TestPipelineStartAndReload(t *testing.T) {
	t.Run("a new pipeline serves the file's services", func(t *testing.T) {
		p := newPipeline(t, load(t, baseConfig), Options{})
		assert.Equal(t, map[string]bool{"192.0.2.1": true, "192.0.2.2": true}, answers(t, p, "app.gslb.test."))
		st := p.State()
		assert.Same(t, st.Loaded.File, st.Effective, "without Kubernetes the file is what is served")
		assert.Equal(t, uint64(1), st.Snapshot.Generation())
	})

	t.Run("a reload that does not load keeps the previous snapshot and says why", func(t *testing.T) {
		m := NewMetrics(prometheus.NewRegistry())
		p := newPipeline(t, load(t, baseConfig), Options{Metrics: m})
		before := p.State()
		_, err := p.Reload(nil, errors.New("test.yaml:3:1: bad"))
		require.Error(t, err)
		assert.Same(t, before.Snapshot, p.State().Snapshot)
		assert.Equal(t, "test.yaml:3:1: bad", p.State().ReloadErr)
		assert.Equal(t, 1.0, testutil.ToFloat64(m.reloads.WithLabelValues("failure")))
	})

	t.Run("a good reload replaces the snapshot and clears the last error", func(t *testing.T) {
		p := newPipeline(t, load(t, baseConfig), Options{})
		_, _ = p.Reload(nil, errors.New("bad"))
		prev, err := p.Reload(load(t, strings.Replace(baseConfig, "192.0.2.2", "192.0.2.9", 1)), nil)
		require.NoError(t, err)
		assert.NotSame(t, prev, p.State())
		assert.Empty(t, p.State().ReloadErr)
		assert.Equal(t, map[string]bool{"192.0.2.1": true, "192.0.2.9": true}, answers(t, p, "app.gslb.test."))
	})

	t.Run("a file the front end does not accept stops the start and is refused at reload", func(t *testing.T) {
		refuse := func(l *Loaded) error {
			if len(l.File.Services) > 1 {
				return errors.New("services: at most one here")
			}
			return nil
		}
		two := baseConfig + "  - name: two.gslb.test\n    endpoints: [{address: 192.0.2.3, cluster: east}]\n"
		_, err := New(load(t, two), Options{Accept: refuse})
		require.ErrorContains(t, err, "services: at most one here")
		p := newPipeline(t, load(t, baseConfig), Options{Accept: refuse})
		_, err = p.Reload(load(t, two), nil)
		require.ErrorContains(t, err, "services: at most one here")
		assert.Empty(t, answers(t, p, "two.gslb.test."), "the refused file is not served")
	})

	t.Run("a reload keeps the values and compiled form of the services the file did not change", func(t *testing.T) {
		three := baseConfig + "  - name: two.gslb.test\n    endpoints: [{address: 192.0.2.3, cluster: east}]\n" +
			"  - name: three.gslb.test\n    endpoints: [{address: 192.0.2.4, cluster: west}]\n"
		p := newPipeline(t, load(t, three), Options{})
		first := p.State().Served.Services
		_, err := p.Reload(load(t, strings.Replace(three, "192.0.2.3", "192.0.2.9", 1)), nil)
		require.NoError(t, err)
		st := p.State()
		assert.Same(t, &first[0].Endpoints[0], &st.Served.Services[0].Endpoints[0], "app: unchanged, the previous value")
		assert.NotSame(t, &first[1].Endpoints[0], &st.Served.Services[1].Endpoints[0], "two: changed, the new value")
		assert.Same(t, &first[2].Endpoints[0], &st.Served.Services[2].Endpoints[0], "three: unchanged, the previous value")
		assert.Equal(t, 2, st.Snapshot.SharedServices(), "the snapshot shares the compiled form of the unchanged ones")
		assert.Equal(t, map[string]bool{"192.0.2.9": true}, answers(t, p, "two.gslb.test."))
		assert.Equal(t, map[string]bool{"192.0.2.1": true, "192.0.2.2": true}, answers(t, p, "app.gslb.test."))
	})

	t.Run("every new state is reported to Changed with the one before, in order", func(t *testing.T) {
		var seen [][2]*State
		p := newPipeline(t, load(t, baseConfig), Options{Changed: func(prev, next *State) { seen = append(seen, [2]*State{prev, next}) }})
		first := p.State()
		_, err := p.Reload(load(t, baseConfig), nil)
		require.NoError(t, err)
		require.NoError(t, p.Republish())
		require.Len(t, seen, 2)
		assert.Same(t, first, seen[0][0])
		assert.Same(t, seen[0][1], seen[1][0], "each call starts where the one before ended")
		assert.Same(t, p.State(), seen[1][1])
		p.changed()
		assert.Len(t, seen, 2, "a state already reported is not reported again")
	})
}

// decision decides d with every endpoint's votes as given (true = up) from
// two regions, after the hold-down; the result is what a follower would hand
// the pipeline.
func decisionDown(t *testing.T, p *Pipeline, down string) *failover.Decision {
	t.Helper()
	st := p.State()
	in := failover.Input{Desired: &st.Effective.Desired, Now: time.Now(), Prev: st.Decision}
	d := failover.Decide(in, failover.ParamsFrom(&st.Effective.Desired))
	// Mark the endpoint down by hand: the decision's own rules are
	// internal/failover's tests; here only its effect on the pipeline.
	for i := range d.Endpoints {
		if d.Endpoints[i].Subject.Target == down {
			d.Endpoints[i].State = failover.Down
		}
	}
	d.StatesChanged = true
	return d
}

func TestPipelineDecisions(t *testing.T) {
	t.Run("a decision with a changed state republishes without the down endpoint", func(t *testing.T) {
		p := newPipeline(t, load(t, baseConfig), Options{})
		gen := p.State().Snapshot.Generation()
		require.NoError(t, p.SetDecision(decisionDown(t, p, "192.0.2.2")))
		assert.Equal(t, gen+1, p.State().Snapshot.Generation())
		assert.Equal(t, map[string]bool{"192.0.2.1": true}, answers(t, p, "app.gslb.test."))
	})

	t.Run("a decision without a changed state is kept but not compiled", func(t *testing.T) {
		p := newPipeline(t, load(t, baseConfig), Options{})
		gen := p.State().Snapshot.Generation()
		d := decisionDown(t, p, "none")
		d.StatesChanged = false
		require.NoError(t, p.SetDecision(d))
		assert.Equal(t, gen, p.State().Snapshot.Generation())
		assert.Same(t, d, p.State().Decision)
	})
}

func TestPipelineOverrides(t *testing.T) {
	drain := admin.Request{Kind: admin.KindDrain, Service: "app.gslb.test", Endpoint: "192.0.2.2", Reason: "maintenance"}

	t.Run("an override set through the pipeline is served, counted and spread", func(t *testing.T) {
		m := NewMetrics(prometheus.NewRegistry())
		p := newPipeline(t, load(t, baseConfig), Options{Admin: memoryAdmin(t, "n1"), Relay: true, Metrics: m})
		var spread [][]byte
		p.SetBroadcast(func(b []byte) { spread = append(spread, b) })
		o, err := p.AddOverride(drain, "alice")
		require.NoError(t, err)
		assert.Equal(t, map[string]bool{"192.0.2.1": true}, answers(t, p, "app.gslb.test."))
		assert.Equal(t, 1.0, testutil.ToFloat64(m.overrides.WithLabelValues(admin.KindDrain)))
		require.Len(t, spread, 1)
		_, err = p.RemoveOverride(o.ID, "alice")
		require.NoError(t, err)
		assert.Len(t, answers(t, p, "app.gslb.test."), 2)
		assert.Len(t, spread, 2)
		assert.Equal(t, 0.0, testutil.ToFloat64(m.overrides.WithLabelValues(admin.KindDrain)))
	})

	t.Run("an override on a target the config does not have is refused naming it", func(t *testing.T) {
		p := newPipeline(t, load(t, baseConfig), Options{Admin: memoryAdmin(t, "n1")})
		bad := drain
		bad.Endpoint = "192.0.2.77"
		_, err := p.AddOverride(bad, "alice")
		require.ErrorContains(t, err, "192.0.2.77")
		assert.Empty(t, p.Overrides())
	})

	t.Run("a pipeline without an admin store refuses overrides", func(t *testing.T) {
		p := newPipeline(t, load(t, baseConfig), Options{})
		_, err := p.AddOverride(drain, "alice")
		require.ErrorIs(t, err, ErrNoAdmin)
	})

	w := newRingWorld()
	t.Run("another node's overrides from the ring are applied; an observer does not pass them on", func(t *testing.T) {
		other := signedAdmin(t, w, "n2")
		o, err := drain.Validate(&load(t, baseConfig).File.Desired, time.Now())
		require.NoError(t, err)
		_, err = other.Add(o, "bob")
		require.NoError(t, err)
		for _, relay := range []bool{true, false} {
			p := newPipeline(t, load(t, baseConfig), Options{Admin: memoryAdmin(t, "obs"), Relay: relay})
			p.SetRing(w.node("obs", false))
			var spread int
			p.SetBroadcast(func([]byte) { spread++ })
			p.OnShared(other.State().Marshal())
			assert.Equal(t, map[string]bool{"192.0.2.1": true}, answers(t, p, "app.gslb.test."), "relay=%v", relay)
			assert.Equal(t, map[bool]int{true: 1, false: 0}[relay], spread, "relay=%v", relay)
			p.OnShared(other.State().Marshal())
			assert.Equal(t, map[bool]int{true: 1, false: 0}[relay], spread, "the same state again changes nothing")
		}
	})

	t.Run("ring entries that fail validation are skipped and counted; the rest apply", func(t *testing.T) {
		m := NewMetrics(prometheus.NewRegistry())
		p := newPipeline(t, load(t, baseConfig), Options{Admin: memoryAdmin(t, "n1"), Metrics: m})
		p.SetRing(w.node("n1", true))
		// The other node's config has an endpoint ours lacks.
		wider := load(t, strings.Replace(baseConfig, "      - {address: 192.0.2.2, cluster: west}", "      - {address: 192.0.2.2, cluster: west}\n      - {address: 192.0.2.8, cluster: west}", 1))
		other := signedAdmin(t, w, "n2")
		for _, ep := range []string{"192.0.2.8", "192.0.2.2"} {
			r := drain
			r.Endpoint = ep
			o, err := r.Validate(&wider.File.Desired, time.Now())
			require.NoError(t, err)
			_, err = other.Add(o, "bob")
			require.NoError(t, err)
		}
		p.OnShared(other.State().Marshal())
		assert.Equal(t, map[string]bool{"192.0.2.1": true}, answers(t, p, "app.gslb.test."))
		assert.Equal(t, 1.0, testutil.ToFloat64(m.rejected.WithLabelValues("ring", admin.RejectUnknownTarget)))
		p.OnShared([]byte("{not json"))
		assert.Equal(t, 1.0, testutil.ToFloat64(m.rejected.WithLabelValues("ring", admin.RejectInvalid)))
	})

	t.Run("a ring override on a target our config does not have yet applies after the reload that adds it", func(t *testing.T) {
		wider := strings.Replace(baseConfig, "      - {address: 192.0.2.2, cluster: west}", "      - {address: 192.0.2.2, cluster: west}\n      - {address: 192.0.2.8, cluster: west}", 1)
		other := signedAdmin(t, w, "n2")
		r := drain
		r.Endpoint = "192.0.2.1"
		o, err := r.Validate(&load(t, wider).File.Desired, time.Now())
		require.NoError(t, err)
		_, err = other.Add(o, "bob")
		require.NoError(t, err)
		r.Endpoint = "192.0.2.8"
		o, err = r.Validate(&load(t, wider).File.Desired, time.Now())
		require.NoError(t, err)
		_, err = other.Add(o, "bob")
		require.NoError(t, err)
		p := newPipeline(t, load(t, baseConfig), Options{Admin: memoryAdmin(t, "obs")})
		p.OnShared(other.State().Marshal()) // the ring passes a state on once (here before SetRing: kept for it)
		p.SetRing(w.node("obs", false))
		assert.Equal(t, map[string]bool{"192.0.2.2": true}, answers(t, p, "app.gslb.test."), "the known target's drain applies at once")
		_, err = p.Reload(load(t, wider), nil)
		require.NoError(t, err)
		assert.Equal(t, map[string]bool{"192.0.2.2": true}, answers(t, p, "app.gslb.test."), "192.0.2.8 is drained as soon as the config has it")
		assert.Len(t, p.Overrides(), 2)
	})

	t.Run("an override that expires is taken out at the next check", func(t *testing.T) {
		p := newPipeline(t, load(t, baseConfig), Options{Admin: memoryAdmin(t, "n1")})
		short := drain
		short.ExpiresIn = "50ms"
		_, err := p.AddOverride(short, "alice")
		require.NoError(t, err)
		assert.False(t, p.ExpireOverrides(), "still in force")
		require.Eventually(t, p.ExpireOverrides, 5*time.Second, 20*time.Millisecond)
		assert.Len(t, answers(t, p, "app.gslb.test."), 2)
	})
}

type fakeKube struct {
	add []model.Service
	err error
}

func (k *fakeKube) PrepareNext() {}

func (k *fakeKube) Merge(l *Loaded) (*config.File, error) {
	if k.err != nil {
		return nil, k.err
	}
	f := *l.File
	f.Desired.Services = append(append([]model.Service{}, f.Desired.Services...), k.add...)
	nd, err := model.Normalize(&f.Desired)
	if err != nil {
		return nil, err
	}
	f.Desired = *nd
	return &f, nil
}

func TestPipelineKubernetes(t *testing.T) {
	t.Run("Kubernetes-sourced services are merged and served; a failed merge keeps serving", func(t *testing.T) {
		k := &fakeKube{}
		p := newPipeline(t, load(t, baseConfig), Options{Kube: k})
		assert.Empty(t, answers(t, p, "kube.gslb.test."))
		k.add = []model.Service{{Name: "kube.gslb.test", Endpoints: []model.Endpoint{{Address: "192.0.2.44", Cluster: "east"}}}}
		require.NoError(t, p.Remerge())
		assert.Equal(t, map[string]bool{"192.0.2.44": true}, answers(t, p, "kube.gslb.test."))
		k.err = errors.New("informer broke")
		require.ErrorContains(t, p.Remerge(), "informer broke")
		assert.Equal(t, map[string]bool{"192.0.2.44": true}, answers(t, p, "kube.gslb.test."))
	})
}

func TestPipelineSigning(t *testing.T) {
	dir := t.TempDir()
	k, err := dnssec.Generate("gslb.test.", dns.ED25519, 3600)
	require.NoError(t, err)
	_, priv, err := k.Write(dir)
	require.NoError(t, err)
	signed := strings.Replace(baseConfig, "    soa: {serial: 7, minimum: 20}", "    soa: {serial: 7, minimum: 20}\n    dnssec: {key_files: ["+priv+"]}", 1)

	t.Run("a zone with dnssec is signed through the zone's signer", func(t *testing.T) {
		p := newPipeline(t, load(t, signed), Options{Keys: zonekeys.New(zonekeys.Options{Logger: discard()})})
		req := new(dns.Msg)
		req.SetQuestion("app.gslb.test.", dns.TypeA)
		req.SetEdns0(1232, true)
		var rep engine.Reply
		p.Store().Load().Respond(req, netipAddr(t), 0, &rep)
		var sigs int
		for _, rr := range rep.Msg.Answer {
			if _, ok := rr.(*dns.RRSIG); ok {
				sigs++
			}
		}
		assert.Equal(t, 1, sigs, "the answer carries its RRSIG")
	})

	t.Run("unchanged key files keep their signer across publishes; a file gone bad keeps the last good key", func(t *testing.T) {
		p := newPipeline(t, load(t, signed), Options{Keys: zonekeys.New(zonekeys.Options{Logger: discard()})})
		d := &p.State().Served
		require.NoError(t, p.opts.Keys.Load(*d))
		s1, err := p.opts.Keys.Signers(*d)
		require.NoError(t, err)
		require.NoError(t, p.opts.Keys.Load(*d))
		s2, err := p.opts.Keys.Signers(*d)
		require.NoError(t, err)
		assert.Same(t, s1["gslb.test."], s2["gslb.test."])
		require.NoError(t, os.WriteFile(priv, []byte("garbage\n"), 0o600))
		later := time.Now().Add(time.Minute)
		require.NoError(t, os.Chtimes(priv, later, later))
		require.NoError(t, p.opts.Keys.Load(*d))
		s3, err := p.opts.Keys.Signers(*d)
		require.NoError(t, err)
		assert.Same(t, s1["gslb.test."], s3["gslb.test."])
	})

	t.Run("a zone whose keys never loaded stops the start naming the zone", func(t *testing.T) {
		missing := strings.Replace(baseConfig, "    soa: {serial: 7, minimum: 20}", "    soa: {serial: 7, minimum: 20}\n    dnssec: {key_files: ["+filepath.Join(dir, "missing.private")+"]}", 1)
		l, err := Load("test.yaml", []byte(missing), "")
		if err != nil {
			require.ErrorContains(t, err, "missing.private", "refused by the config already")
			return
		}
		_, err = New(l, Options{Metrics: NewMetrics(prometheus.NewRegistry()), Keys: zonekeys.New(zonekeys.Options{Logger: discard()})})
		require.ErrorContains(t, err, "zone gslb.test.")
	})
}

func TestPipelineTransfers(t *testing.T) {
	dir := t.TempDir()
	keyFile := filepath.Join(dir, "xfr.key")
	require.NoError(t, os.WriteFile(keyFile, []byte("hmac-sha256:xfr-key:"+strings.Repeat("QUJD", 11)+"\n"), 0o600))
	withXfr := strings.Replace(baseConfig, "    soa: {serial: 7, minimum: 20}", "    soa: {serial: 7, minimum: 20}\n    transfer: {allow: [127.0.0.1], tsig_key_file: "+keyFile+"}", 1)

	t.Run("a zone with transfers gets a managed serial that moves only with its content", func(t *testing.T) {
		serials, err := xfr.OpenSerials(filepath.Join(dir, "serials.json"))
		require.NoError(t, err)
		keys := zonekeys.New(zonekeys.Options{Logger: discard(), TSIG: true})
		p := newPipeline(t, load(t, withXfr), Options{Keys: keys, Transfers: func(st *engine.Store) Publisher {
			return xfr.NewPublisher(st, keys, serials, xfr.Options{Logger: discard()})
		}})
		serial := func() uint32 {
			zd, ok := p.Store().Load().ZoneData("gslb.test.")
			require.True(t, ok)
			return zd.SOA.Serial
		}
		s0 := serial()
		require.NoError(t, p.Republish())
		assert.Equal(t, s0, serial(), "same content, same serial")
		require.NoError(t, p.SetDecision(decisionDown(t, p, "192.0.2.2")))
		assert.True(t, xfr.SerialLess(s0, serial()), "new content, a later serial")
		_, err = os.Stat(filepath.Join(dir, "serials.json"))
		require.NoError(t, err, "serials persisted")
		assert.NotNil(t, p.Transfers())
	})

	t.Run("without a transfer server the configured serial is served", func(t *testing.T) {
		p := newPipeline(t, load(t, withXfr), Options{})
		zd, ok := p.Store().Load().ZoneData("gslb.test.")
		require.True(t, ok)
		assert.Equal(t, uint32(7), zd.SOA.Serial)
		assert.Nil(t, p.Transfers())
	})
}

func netipAddr(t *testing.T) netip.Addr {
	t.Helper()
	return netip.MustParseAddr("192.0.2.200")
}

func discard() *slog.Logger { return slog.New(slog.DiscardHandler) }
