package zonekeys

import (
	"fmt"

	"github.com/meridian-gslb/meridian/internal/model"
	"github.com/meridian-gslb/meridian/internal/xfr"
)

// tsigEntry is the key of one TSIG key file.
type tsigEntry struct {
	file string
	zone string // a zone whose transfer section names the file, for the log
	key  xfr.Key
	read bool // key was read once
	book
}

// readTSIGKeys reads the TSIG key files of d's transfer sections, by file
// name, starting from the keys read before.
func (w *Watcher) readTSIGKeys(d *model.Desired) (map[string]*tsigEntry, error) {
	out := map[string]*tsigEntry{}
	for i, z := range d.Zones {
		t := z.Transfer
		if t == nil {
			continue
		}
		if _, ok := out[t.TSIGKeyFile]; ok {
			continue
		}
		e := tsigEntry{file: t.TSIGKeyFile, zone: z.Apex}
		w.mu.Lock()
		if prev, ok := w.tsig[t.TSIGKeyFile]; ok {
			e = *prev
		}
		w.mu.Unlock()
		if err := w.readTSIG(&e, true); err != nil {
			return nil, fmt.Errorf("zones[%d].transfer.tsig_key_file: %w", i, err)
		}
		out[e.file] = &e
	}
	return out, nil
}

// pollTSIGKeys reads the active TSIG key files again and returns the files
// whose key changed.
func (w *Watcher) pollTSIGKeys() []string {
	var changed []string
	for file, e := range activeCopies(&w.mu, w.tsig) {
		was := e.key
		_ = w.readTSIG(&e, false) // an active entry has a key: a failure keeps it
		w.mu.Lock()
		if cur, ok := w.tsig[file]; ok {
			cur.key, cur.failed = e.key, e.failed
		}
		w.mu.Unlock()
		if e.key != was {
			changed = append(changed, file)
		}
	}
	return changed
}

// readTSIG reads e's key file into e. A failure keeps the key read before,
// with a warning (always when loud, else once per failure), or is the
// error when there is none.
func (w *Watcher) readTSIG(e *tsigEntry, loud bool) error {
	key, err := xfr.LoadKeyFile(e.file)
	if err != nil {
		if !e.read {
			return err
		}
		if loud || err.Error() != e.failed {
			w.log.Warn("TSIG key file unreadable: keeping the last good key", "zone", e.zone, "file", e.file, "err", err)
		}
		e.failed = err.Error()
		return nil
	}
	e.key, e.read, e.failed = key, true, ""
	return nil
}
