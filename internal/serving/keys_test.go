package serving

import (
	"context"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/miekg/dns"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/meridian-gslb/meridian/internal/dnssec"
	"github.com/meridian-gslb/meridian/internal/engine"
	"github.com/meridian-gslb/meridian/internal/xfr"
	"github.com/meridian-gslb/meridian/internal/zonekeys"
)

// warnLog records the messages of the records at WARN and above.
type warnLog struct {
	mu   sync.Mutex
	msgs []string
}

func (w *warnLog) Enabled(context.Context, slog.Level) bool { return true }
func (w *warnLog) WithAttrs([]slog.Attr) slog.Handler       { return w }
func (w *warnLog) WithGroup(string) slog.Handler            { return w }
func (w *warnLog) Handle(_ context.Context, r slog.Record) error {
	if r.Level >= slog.LevelWarn {
		w.mu.Lock()
		w.msgs = append(w.msgs, r.Message)
		w.mu.Unlock()
	}
	return nil
}

func (w *warnLog) warnings() []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return append([]string(nil), w.msgs...)
}

// keyedZone is a zone signed with a key of its own and transferred with a
// TSIG key, both in files of dir.
type keyedZone struct {
	dir, priv, pub, tsig string
	config               string
}

func newKeyedZone(t *testing.T) *keyedZone {
	t.Helper()
	z := &keyedZone{dir: t.TempDir()}
	z.pub, z.priv = z.writeKey(t)
	z.tsig = filepath.Join(z.dir, "xfr.key")
	z.writeTSIG(t, "QUJD")
	z.config = strings.Replace(baseConfig, "    soa: {serial: 7, minimum: 20}",
		"    soa: {serial: 7, minimum: 20}\n    dnssec: {key_files: ["+z.priv+"]}\n    transfer: {allow: [127.0.0.1], tsig_key_file: "+z.tsig+"}", 1)
	return z
}

// writeKey writes a new key of the zone as zone.key and zone.private in
// dir, replacing the files there, with a modification time of its own.
func (z *keyedZone) writeKey(t *testing.T) (pub, priv string) {
	t.Helper()
	k, err := dnssec.Generate("gslb.test.", dns.ED25519, 3600)
	require.NoError(t, err)
	newPub, newPriv, err := k.WriteAs(t.TempDir(), "zone")
	require.NoError(t, err)
	later := time.Now().Add(time.Duration(k.Tag()) * time.Second)
	pub, priv = filepath.Join(z.dir, "zone.key"), filepath.Join(z.dir, "zone.private")
	for _, f := range [][2]string{{newPub, pub}, {newPriv, priv}} {
		require.NoError(t, os.Chtimes(f[0], later, later))
		require.NoError(t, os.Rename(f[0], f[1]))
	}
	return pub, priv
}

func (z *keyedZone) writeTSIG(t *testing.T, secret string) {
	t.Helper()
	require.NoError(t, os.WriteFile(z.tsig, []byte("hmac-sha256:xfr-key:"+strings.Repeat(secret, 11)+"\n"), 0o600))
}

// keyedPipeline is a pipeline with a key watcher and a transfer publisher;
// the watcher polls every interval (0: it does not poll).
func keyedPipeline(t *testing.T, l *Loaded, log *slog.Logger, interval time.Duration) (*Pipeline, *zonekeys.Watcher) {
	t.Helper()
	keys := zonekeys.New(zonekeys.Options{Logger: log, TSIG: true, Interval: interval})
	p := newPipeline(t, l, Options{Logger: log, Keys: keys, Transfers: func(st *engine.Store) Publisher {
		return xfr.NewPublisher(st, keys, nil, xfr.Options{Logger: log})
	}})
	if interval > 0 {
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan struct{})
		go func() { defer close(done); keys.Run(ctx, p.Republish) }()
		t.Cleanup(func() { cancel(); <-done })
	}
	return p, keys
}

// dnskeyTags are the key tags of the DNSKEY RRset served at the apex.
func dnskeyTags(t *testing.T, p *Pipeline) []uint16 {
	t.Helper()
	req := new(dns.Msg)
	req.SetQuestion("gslb.test.", dns.TypeDNSKEY)
	req.SetEdns0(1232, true)
	var rep engine.Reply
	p.Store().Load().Respond(req, netipAddr(t), 0, &rep)
	var tags []uint16
	for _, rr := range rep.Msg.Answer {
		if k, ok := rr.(*dns.DNSKEY); ok {
			tags = append(tags, k.KeyTag())
		}
	}
	return tags
}

func keyTag(t *testing.T, pub string) uint16 {
	t.Helper()
	k, err := dnssec.ReadPublicKey(pub)
	require.NoError(t, err)
	return k.Tag()
}

func TestPipelineKeysComeFromTheWatcher(t *testing.T) {
	t.Run("publishes read no key file: with the files removed, decisions publish without a warning and with the same signer", func(t *testing.T) {
		z := newKeyedZone(t)
		log := &warnLog{}
		p, keys := keyedPipeline(t, load(t, z.config), slog.New(log), 0)
		before, err := keys.Signers(p.State().Served)
		require.NoError(t, err)
		tags := dnskeyTags(t, p)
		require.Equal(t, []uint16{keyTag(t, z.pub)}, tags)
		require.NoError(t, os.RemoveAll(z.dir))

		for i := range 50 {
			down := []string{"192.0.2.1", "192.0.2.2"}[i%2]
			require.NoError(t, p.SetDecision(decisionDown(t, p, down)))
			require.NoError(t, p.Republish())
		}
		assert.Empty(t, log.warnings(), "nothing read, so nothing found missing")
		after, err := keys.Signers(p.State().Served)
		require.NoError(t, err)
		assert.Same(t, before["gslb.test."], after["gslb.test."])
		assert.Equal(t, tags, dnskeyTags(t, p))
	})

	t.Run("a changed key file is picked up by the poll and published", func(t *testing.T) {
		z := newKeyedZone(t)
		p, keys := keyedPipeline(t, load(t, z.config), discard(), 10*time.Millisecond)
		old := dnskeyTags(t, p)
		oldTSIG, ok := keys.TSIGKey(z.tsig)
		require.True(t, ok)
		gen := p.State().Snapshot.Generation()

		pub, _ := z.writeKey(t)
		want := keyTag(t, pub)
		require.NotEqual(t, old, []uint16{want})
		assert.Eventually(t, func() bool {
			tags := dnskeyTags(t, p)
			return len(tags) == 1 && tags[0] == want
		}, 10*time.Second, 10*time.Millisecond, "the new key's DNSKEY is served")
		assert.Greater(t, p.State().Snapshot.Generation(), gen)

		z.writeTSIG(t, "WFla")
		assert.Eventually(t, func() bool {
			k, _ := keys.TSIGKey(z.tsig)
			return k != oldTSIG
		}, 10*time.Second, 10*time.Millisecond, "the new TSIG key is read")
	})

	t.Run("a zone whose key was never readable refuses the reload and keeps the state", func(t *testing.T) {
		z := newKeyedZone(t)
		p, _ := keyedPipeline(t, load(t, z.config), discard(), 0)
		prev := p.State()
		tags := dnskeyTags(t, p)

		missing := strings.Replace(z.config, z.priv, filepath.Join(z.dir, "missing.private"), 1)
		_, err := p.Reload(load(t, missing), nil)
		require.ErrorContains(t, err, "dnssec: zone gslb.test.: key file:")
		assert.Same(t, prev.Snapshot, p.State().Snapshot, "the previous snapshot keeps serving")
		assert.Same(t, prev.Loaded, p.State().Loaded)
		assert.Contains(t, p.State().ReloadErr, "missing.key")
		assert.Equal(t, tags, dnskeyTags(t, p))

		noTSIG := strings.Replace(z.config, z.tsig, filepath.Join(z.dir, "missing.key"), 1)
		_, err = p.Reload(load(t, noTSIG), nil)
		require.ErrorContains(t, err, "zones[0].transfer.tsig_key_file: ")
		assert.Same(t, prev.Snapshot, p.State().Snapshot)

		require.NoError(t, p.SetDecision(decisionDown(t, p, "192.0.2.2")), "the config before still publishes")
		assert.Equal(t, tags, dnskeyTags(t, p))
	})

	t.Run("without a key source a signed zone is refused", func(t *testing.T) {
		z := newKeyedZone(t)
		_, err := New(load(t, z.config), Options{Logger: discard(), Metrics: NewMetrics(newPrivateRegistry())})
		require.ErrorContains(t, err, "dnssec: zone gslb.test.: no key source")
	})
}
