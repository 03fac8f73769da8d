package zonekeys

import (
	"fmt"
	"log/slog"

	"github.com/meridian-gslb/meridian/internal/model"
	"github.com/meridian-gslb/meridian/internal/xfr"
)

// tsigEntry is the key of one TSIG key file.
type tsigEntry struct {
	file string
	zone string // a zone whose transfer section names the file, for the log
	key  xfr.Key
	good bool // key was read once
	book
}

// readTSIGKeys reads the TSIG key files of d's transfer sections (the
// zones' and the catalog's), by file name, starting from the keys read
// before.
func (w *Watcher) readTSIGKeys(d *model.Desired) (map[string]*tsigEntry, error) {
	out := map[string]*tsigEntry{}
	for i, z := range d.Zones {
		if err := w.readTSIGKey(out, z.Transfer, z.Apex, fmt.Sprintf("zones[%d].transfer", i)); err != nil {
			return nil, err
		}
	}
	if c := d.Catalog; c != nil {
		if err := w.readTSIGKey(out, c.Transfer, c.Zone, "catalog.transfer"); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// readTSIGKey reads the key file of transfer section t (nil: none) of
// zone into out, unless out has it; p is the section's path, for errors.
func (w *Watcher) readTSIGKey(out map[string]*tsigEntry, t *model.Transfer, zone, p string) error {
	if t == nil {
		return nil
	}
	if _, ok := out[t.TSIGKeyFile]; ok {
		return nil
	}
	e := prior(&w.mu, w.tsig, t.TSIGKeyFile, tsigEntry{file: t.TSIGKeyFile, zone: zone})
	if err := e.read(w.log, true); err != nil {
		return fmt.Errorf("%s.tsig_key_file: %w", p, err)
	}
	out[e.file] = &e
	return nil
}

// readAgain reads the file of an active entry again (a failure keeps its
// key) and returns the file and whether its key changed.
func (e *tsigEntry) readAgain(log *slog.Logger) (string, bool) {
	was := e.key
	_ = e.read(log, false)
	return e.file, e.key != was
}

// read reads e's key file into e. A failure keeps the key read before,
// with a warning (always when loud, else once per failure), or is the
// error when there is none.
func (e *tsigEntry) read(log *slog.Logger, loud bool) error {
	key, err := xfr.LoadKeyFile(e.file)
	if err != nil {
		if !e.good {
			return err
		}
		e.keep(log, loud, err, "TSIG key file unreadable: keeping the last good key", "zone", e.zone, "file", e.file)
		return nil
	}
	e.key, e.good, e.failed = key, true, ""
	return nil
}
