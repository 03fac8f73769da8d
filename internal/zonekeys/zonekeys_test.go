package zonekeys

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/miekg/dns"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/meridian-gslb/meridian/internal/dnssec"
	"github.com/meridian-gslb/meridian/internal/model"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// warnings records the messages of WARN records.
type warnings struct {
	mu   sync.Mutex
	msgs []string
}

func (w *warnings) Enabled(context.Context, slog.Level) bool { return true }
func (w *warnings) WithAttrs([]slog.Attr) slog.Handler       { return w }
func (w *warnings) WithGroup(string) slog.Handler            { return w }
func (w *warnings) Handle(_ context.Context, r slog.Record) error {
	if r.Level >= slog.LevelWarn {
		w.mu.Lock()
		w.msgs = append(w.msgs, r.Message)
		w.mu.Unlock()
	}
	return nil
}

func (w *warnings) count() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return len(w.msgs)
}

// fixture is a directory with a zone's DNSSEC key (zone.key and
// zone.private) and a TSIG key file.
type fixture struct {
	dir, priv, tsig string
	log             *warnings
}

func newFixture(t *testing.T) *fixture {
	t.Helper()
	f := &fixture{dir: t.TempDir(), log: &warnings{}}
	f.priv = f.writeKey(t)
	f.tsig = filepath.Join(f.dir, "xfr.key")
	f.writeTSIG(t, "QUJD")
	return f
}

// writeKey replaces zone.key and zone.private with a new key, with a
// modification time of its own, and returns the .private path.
func (f *fixture) writeKey(t *testing.T) string {
	t.Helper()
	k, err := dnssec.Generate("gslb.test.", dns.ED25519, 3600)
	require.NoError(t, err)
	pub, priv, err := k.WriteAs(t.TempDir(), "zone")
	require.NoError(t, err)
	later := time.Now().Add(time.Duration(k.Tag()) * time.Second)
	for _, p := range []string{pub, priv} {
		require.NoError(t, os.Chtimes(p, later, later))
		require.NoError(t, os.Rename(p, filepath.Join(f.dir, filepath.Base(p))))
	}
	return filepath.Join(f.dir, "zone.private")
}

func (f *fixture) writeTSIG(t *testing.T, secret string) {
	t.Helper()
	require.NoError(t, os.WriteFile(f.tsig, []byte("hmac-sha256:xfr-key:"+strings.Repeat(secret, 11)+"\n"), 0o600))
}

func (f *fixture) spoil(t *testing.T, path string) {
	t.Helper()
	require.NoError(t, os.WriteFile(path, []byte("garbage\n"), 0o600))
	later := time.Now().Add(time.Hour)
	require.NoError(t, os.Chtimes(path, later, later))
}

// desired is one zone signed with keyFiles and transferred with tsig.
func desired(keyFiles []string, tsig string) *model.Desired {
	z := model.Zone{Apex: "gslb.test", NSTTL: 3600}
	if keyFiles != nil {
		z.DNSSEC = &model.DNSSEC{KeyFiles: keyFiles}
	}
	if tsig != "" {
		z.Transfer = &model.Transfer{Allow: []string{"127.0.0.1"}, TSIGKeyFile: tsig}
	}
	return &model.Desired{Zones: []model.Zone{z}}
}

func (f *fixture) watcher() *Watcher {
	return New(Options{Logger: slog.New(f.log), TSIG: true, Interval: 5 * time.Millisecond})
}

func signer(t *testing.T, w *Watcher, d *model.Desired) any {
	t.Helper()
	s, err := w.Signers(d)
	require.NoError(t, err)
	require.Contains(t, s, "gslb.test.")
	return s["gslb.test."]
}

func TestLoad(t *testing.T) {
	t.Run("unchanged key files keep their signer; a changed file gives a new one", func(t *testing.T) {
		f := newFixture(t)
		w, d := f.watcher(), desired([]string{f.priv}, f.tsig)
		require.NoError(t, w.Load(d))
		s1 := signer(t, w, d)
		require.NoError(t, w.Load(d))
		assert.Same(t, s1, signer(t, w, d))
		f.writeKey(t)
		require.NoError(t, w.Load(d))
		assert.NotSame(t, s1, signer(t, w, d))
		assert.Zero(t, f.log.count())
	})

	t.Run("key files gone bad keep the last good keys, with a warning at every load", func(t *testing.T) {
		f := newFixture(t)
		w, d := f.watcher(), desired([]string{f.priv}, f.tsig)
		require.NoError(t, w.Load(d))
		s1 := signer(t, w, d)
		k1, ok := w.TSIGKey(f.tsig)
		require.True(t, ok)
		f.spoil(t, f.priv)
		f.spoil(t, f.tsig)
		require.NoError(t, w.Load(d))
		require.NoError(t, w.Load(d))
		assert.Same(t, s1, signer(t, w, d))
		k2, _ := w.TSIGKey(f.tsig)
		assert.Equal(t, k1, k2)
		assert.Equal(t, 4, f.log.count(), "two files, two loads")
	})

	errs := []struct {
		name    string
		desired func(f *fixture) *model.Desired
		tsig    bool
		want    string // "": no error
	}{
		{"a zone whose DNSSEC keys were never readable is an error naming the zone",
			func(f *fixture) *model.Desired { return desired([]string{filepath.Join(f.dir, "missing.private")}, "") },
			true, "dnssec: zone gslb.test.: key file: stat "},
		{"a key directory without a key of the zone is an error naming the zone",
			func(f *fixture) *model.Desired {
				d := desired(nil, "")
				d.Zones[0].DNSSEC = &model.DNSSEC{KeyDirectory: t.TempDir()}
				return d
			},
			true, "dnssec: zone gslb.test.: key_directory "},
		{"a TSIG key file never readable is an error naming the field",
			func(f *fixture) *model.Desired { return desired(nil, filepath.Join(f.dir, "missing.key")) },
			true, "zones[0].transfer.tsig_key_file: "},
		{"a catalog's TSIG key file never readable is an error naming the field",
			func(f *fixture) *model.Desired {
				d := desired([]string{f.priv}, f.tsig)
				d.Catalog = &model.Catalog{Zone: "catalog.invalid.", Transfer: &model.Transfer{Allow: []string{"127.0.0.1"}, TSIGKeyFile: filepath.Join(f.dir, "missing.key")}}
				return d
			},
			true, "catalog.transfer.tsig_key_file: "},
		{"TSIG key files are not read without a transfer server",
			func(f *fixture) *model.Desired { return desired(nil, filepath.Join(f.dir, "missing.key")) },
			false, ""},
	}
	for _, c := range errs {
		t.Run(c.name, func(t *testing.T) {
			f := newFixture(t)
			w := New(Options{Logger: slog.New(f.log), TSIG: c.tsig})
			good := desired([]string{f.priv}, f.tsig)
			require.NoError(t, w.Load(good))
			s := signer(t, w, good)
			err := w.Load(c.desired(f))
			if c.want == "" {
				require.NoError(t, err)
				return
			}
			require.ErrorContains(t, err, c.want)
			assert.Same(t, s, signer(t, w, good), "the keys loaded before stay")
			assert.Len(t, w.activeSigners(), 1, "the config before stays the one polled")
		})
	}

	t.Run("the signers of a config that was not loaded are an error", func(t *testing.T) {
		f := newFixture(t)
		w := f.watcher()
		_, err := w.Signers(desired([]string{f.priv}, ""))
		require.ErrorContains(t, err, "dnssec: zone gslb.test.: keys not read")
		_, ok := w.TSIGKey(f.tsig)
		assert.False(t, ok)
	})
}

// activeSigners lists the apexes of the signers polled.
func (w *Watcher) activeSigners() []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	var out []string
	for _, e := range w.signers {
		if e.active {
			out = append(out, e.apex)
		}
	}
	return out
}

func TestPoll(t *testing.T) {
	t.Run("a poll finds changed keys; a file gone bad warns once per failure", func(t *testing.T) {
		f := newFixture(t)
		w, d := f.watcher(), desired([]string{f.priv}, f.tsig)
		require.NoError(t, w.Load(d))
		assert.Empty(t, w.poll())
		s1 := signer(t, w, d)

		f.writeKey(t)
		f.writeTSIG(t, "WFla")
		assert.ElementsMatch(t, []string{"gslb.test.", f.tsig}, w.poll())
		s2 := signer(t, w, d)
		assert.NotSame(t, s1, s2)
		assert.Empty(t, w.poll())

		f.spoil(t, f.priv)
		require.NoError(t, os.Remove(f.tsig))
		for range 3 {
			assert.Empty(t, w.poll())
		}
		assert.Equal(t, 2, f.log.count(), "one warning per file, not one per poll")
		assert.Same(t, s2, signer(t, w, d))
	})

	t.Run("the keys of a config loaded before stay for lookups but are not polled", func(t *testing.T) {
		f := newFixture(t)
		w := f.watcher()
		old := desired([]string{f.priv}, f.tsig)
		require.NoError(t, w.Load(old))
		other := newFixture(t)
		require.NoError(t, w.Load(desired([]string{other.priv}, other.tsig)))
		s := signer(t, w, old)
		require.NoError(t, os.RemoveAll(f.dir))
		assert.Empty(t, w.poll())
		assert.Zero(t, f.log.count(), "the old config's files are not read")
		assert.Same(t, s, signer(t, w, old))
	})

	t.Run("beyond the bound the least recently used keys of older configs go, the newest config's stay", func(t *testing.T) {
		f := newFixture(t)
		w := New(Options{Logger: slog.New(f.log)})
		zone := func(ttl int) *model.Desired {
			d := desired([]string{f.priv}, "")
			d.Zones[0].NSTTL = ttl // another DNSKEY TTL is another signer
			return d
		}
		for ttl := range maxEntries + 10 {
			require.NoError(t, w.Load(zone(ttl+1)))
		}
		_, err := w.Signers(zone(maxEntries + 10))
		require.NoError(t, err)
		_, err = w.Signers(zone(1))
		require.ErrorContains(t, err, "keys not read")
		w.mu.Lock()
		n := len(w.signers)
		w.mu.Unlock()
		assert.Equal(t, maxEntries, n)
	})
}

func TestRun(t *testing.T) {
	t.Run("a changed key asks for one republish; unchanged files ask for none", func(t *testing.T) {
		f := newFixture(t)
		w, d := f.watcher(), desired([]string{f.priv}, f.tsig)
		require.NoError(t, w.Load(d))
		var calls atomic.Int32
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan struct{})
		go func() {
			defer close(done)
			w.Run(ctx, func() error { calls.Add(1); return fmt.Errorf("compile failed") })
		}()
		time.Sleep(50 * time.Millisecond)
		assert.Zero(t, calls.Load())
		f.writeKey(t)
		assert.Eventually(t, func() bool { return calls.Load() == 1 }, 5*time.Second, 5*time.Millisecond)
		time.Sleep(50 * time.Millisecond)
		cancel()
		<-done
		assert.Equal(t, int32(1), calls.Load())
		assert.Equal(t, 1, f.log.count(), "the failed republish is logged")
	})
}

func TestTheCatalogsTSIGKeyIsRead(t *testing.T) {
	f := newFixture(t)
	w := f.watcher()
	d := desired(nil, "")
	d.Catalog = &model.Catalog{Zone: "catalog.invalid.", Transfer: &model.Transfer{Allow: []string{"127.0.0.1"}, TSIGKeyFile: f.tsig}}
	require.NoError(t, w.Load(d))
	k, ok := w.TSIGKey(f.tsig)
	require.True(t, ok, "a catalog whose key file no zone names has its key")
	assert.Equal(t, "xfr-key.", k.Name)
}
