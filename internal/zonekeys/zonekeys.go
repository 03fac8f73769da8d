// Package zonekeys reads the keys the config's zones name, for the serving
// pipeline: the DNSSEC signing keys (zones[].dnssec: key_files and
// key_directory) and the TSIG keys of zone transfers
// (zones[].transfer.tsig_key_file). The pipeline publishes on every health
// change, under its lock; with this package it takes the keys from memory
// there and never reads the disk.
//
//   - Load reads the keys of a config's zones. The pipeline calls it before
//     it takes its lock, at start and at every reload. A zone whose keys
//     were never readable is an error that refuses the config: a zone whose
//     parent has a DS must never be served unsigned.
//   - Run polls the key files of the newest loaded config every Interval
//     and asks the pipeline to publish again when a key changed.
//   - A key file that turns bad, on a poll or a reload, keeps the key read
//     before, with a warning (on a poll, once per failure).
//   - Signers and TSIGKey hand the keys read last to the publish, from
//     memory.
//
// A zone's DNSSEC signer is kept while its key files are unchanged (the
// same names, sizes and modification times), so its signature cache lives
// on across publishes.
package zonekeys

import (
	"cmp"
	"context"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"sync"
	"time"

	"github.com/meridian-gslb/meridian/internal/engine"
	"github.com/meridian-gslb/meridian/internal/model"
	"github.com/meridian-gslb/meridian/internal/xfr"
)

// DefaultInterval is the time between two polls of the key files.
const DefaultInterval = 5 * time.Second

// maxEntries bounds the keys kept for configs that are no longer the
// newest (a reload that failed after Load still serves the config before
// it); the keys of the newest config are always kept.
const maxEntries = 256

// Options of a Watcher.
type Options struct {
	Logger   *slog.Logger
	Interval time.Duration // between two polls of the key files (default 5s)
	TSIG     bool          // read the TSIG key files of transfer sections (set it when a transfer server runs)
}

// Watcher reads the zones' keys and keeps them in memory. Load and the
// polls of Run read files, one at a time; Signers and TSIGKey only read
// memory and may be called at any time, under any lock.
type Watcher struct {
	opts Options
	log  *slog.Logger

	readMu sync.Mutex // one Load or poll at a time; held while files are read

	mu      sync.Mutex              // guards the fields below; never held during file I/O
	signers map[string]*signerEntry // by signerID
	tsig    map[string]*tsigEntry   // by file name
	seq     uint64                  // counts Loads and publishes, for eviction
}

var _ xfr.KeySource = (*Watcher)(nil)

// book is what every entry keeps for polling and eviction.
type book struct {
	failed string // the last failure to read the files again ("" after a good read): a poll warns once per failure
	active bool   // named by the newest loaded config: polled
	used   uint64 // seq of the last Load or publish that named it
}

func (b *book) bookkeeping() *book { return b }

// keep notes that reading the files again failed with err, so the key read
// before is kept: it logs msg with args at WARN when loud (a Load), else
// only when the failure is not the one noted last (a poll).
func (b *book) keep(log *slog.Logger, loud bool, err error, msg string, args ...any) {
	if loud || err.Error() != b.failed {
		log.Warn(msg, append(args, "err", err)...)
	}
	b.failed = err.Error()
}

// New returns a watcher that has read nothing yet.
func New(opts Options) *Watcher {
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	if opts.Interval <= 0 {
		opts.Interval = DefaultInterval
	}
	return &Watcher{opts: opts, log: opts.Logger, signers: map[string]*signerEntry{}, tsig: map[string]*tsigEntry{}}
}

// Load reads the keys of d's zones (the TSIG keys only with Options.TSIG)
// and makes them the ones Run polls. Keys read before whose files did not
// change are kept. A zone whose keys cannot be read and were never read
// is an error naming the zone (DNSSEC) or the field (TSIG), and nothing
// changes; one read before keeps its key, with a warning. It may block on
// a running poll; call it outside the pipeline's lock.
func (w *Watcher) Load(d *model.Desired) error {
	w.readMu.Lock()
	defer w.readMu.Unlock()
	signers, err := w.readSigners(d)
	if err != nil {
		return err
	}
	var keys map[string]*tsigEntry
	if w.opts.TSIG {
		if keys, err = w.readTSIGKeys(d); err != nil {
			return err
		}
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	w.seq++
	activate(w.signers, signers, w.seq)
	activate(w.tsig, keys, w.seq)
	return nil
}

// activate makes read the active entries of m (the others stay for
// lookups until there are too many) and drops the least recently used
// inactive entries beyond maxEntries.
func activate[E interface{ bookkeeping() *book }](m, read map[string]E, seq uint64) {
	for _, e := range m {
		e.bookkeeping().active = false
	}
	for k, e := range read {
		b := e.bookkeeping()
		b.active, b.used = true, seq
		m[k] = e
	}
	if len(m) <= maxEntries {
		return
	}
	old := slices.SortedFunc(maps.Keys(m), func(a, b string) int {
		return cmp.Compare(m[a].bookkeeping().used, m[b].bookkeeping().used)
	})
	for _, k := range old {
		if len(m) <= maxEntries {
			return
		}
		if !m[k].bookkeeping().active {
			delete(m, k)
		}
	}
}

// Run polls the key files of the newest loaded config every interval
// until ctx ends; when a key changed it calls republish (outside any lock
// of the watcher) and logs its error.
func (w *Watcher) Run(ctx context.Context, republish func() error) {
	t := time.NewTicker(w.opts.Interval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		changed := w.poll()
		if len(changed) == 0 {
			continue
		}
		w.log.Info("zone keys changed: publishing again", "zones", changed)
		if err := republish(); err != nil {
			w.log.Warn("zone keys changed: the publish failed, the previous snapshot keeps serving", "err", err)
		}
	}
}

// poll reads the key files of the active entries again and returns the
// zones (DNSSEC) and files (TSIG) whose key changed.
func (w *Watcher) poll() []string {
	w.readMu.Lock()
	defer w.readMu.Unlock()
	return append(pollEntries(&w.mu, w.signers, w.log), pollEntries(&w.mu, w.tsig, w.log)...)
}

// prior returns a copy of m's entry id, to be read again without holding
// mu, or fresh when there is none.
func prior[T any](mu *sync.Mutex, m map[string]*T, id string, fresh T) T {
	mu.Lock()
	defer mu.Unlock()
	if e, ok := m[id]; ok {
		return *e
	}
	return fresh
}

// pollEntries reads the active entries of m again, each a copy read
// without holding mu, stores what was read and returns the names of the
// entries whose key changed.
func pollEntries[T any, E interface {
	*T
	bookkeeping() *book
	readAgain(log *slog.Logger) (name string, changed bool)
}](mu *sync.Mutex, m map[string]E, log *slog.Logger) []string {
	mu.Lock()
	copies := map[string]T{}
	for k, e := range m {
		if e.bookkeeping().active {
			copies[k] = *e
		}
	}
	mu.Unlock()
	var changed []string
	for k, c := range copies {
		name, ch := E(&c).readAgain(log)
		if ch {
			changed = append(changed, name)
		}
		mu.Lock()
		if cur, ok := m[k]; ok {
			used := cur.bookkeeping().used // a lookup may have come since the copy
			*cur = c
			cur.bookkeeping().used = used
		}
		mu.Unlock()
	}
	return changed
}

// Signers returns the signers of d's zones that have a dnssec section,
// by canonical apex (nil when no zone signs), as read last. It reads no
// file: a zone whose keys were not read (its config was not loaded) is an
// error.
func (w *Watcher) Signers(d *model.Desired) (map[string]engine.ZoneSigner, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.seq++
	var out map[string]engine.ZoneSigner
	for i := range d.Zones {
		z := &d.Zones[i]
		if z.DNSSEC == nil {
			continue
		}
		e, ok := w.signers[signerID(z)]
		if !ok {
			return nil, fmt.Errorf("dnssec: zone %s: keys not read: the config was not loaded", model.CanonicalName(z.Apex))
		}
		e.used = w.seq
		if out == nil {
			out = map[string]engine.ZoneSigner{}
		}
		out[e.apex] = e.signer
	}
	return out, nil
}

// TSIGKey returns the key of a TSIG key file as read last. It reads no
// file.
func (w *Watcher) TSIGKey(file string) (xfr.Key, bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	e, ok := w.tsig[file]
	if !ok {
		return xfr.Key{}, false
	}
	e.used = w.seq
	return e.key, true
}
