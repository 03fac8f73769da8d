package zonekeys

import (
	"fmt"
	"log/slog"
	"os"
	"strings"

	"github.com/meridian-gslb/meridian/internal/dnssec"
	"github.com/meridian-gslb/meridian/internal/model"
)

// signerEntry is the signer of one zone's dnssec section.
type signerEntry struct {
	apex     string   // canonical
	ttl      uint32   // of the DNSKEY RRset: the zone's ns_ttl
	keyFiles []string // dnssec.key_files
	dir      string   // dnssec.key_directory

	files  string // names, sizes and modification times of the files signer was read from
	signer *dnssec.Signer
	book
}

// signerID names a zone's dnssec section: its apex, DNSKEY TTL and the
// key files and directory it names.
func signerID(z *model.Zone) string {
	return fmt.Sprintf("%s %d %q %q", model.CanonicalName(z.Apex), z.NSTTL, z.DNSSEC.KeyFiles, z.DNSSEC.KeyDirectory)
}

// readSigners reads the signers of d's zones that have a dnssec section,
// by signerID, starting from the entries read before.
func (w *Watcher) readSigners(d *model.Desired) (map[string]*signerEntry, error) {
	out := map[string]*signerEntry{}
	for i := range d.Zones {
		z := &d.Zones[i]
		if z.DNSSEC == nil {
			continue
		}
		id := signerID(z)
		e := prior(&w.mu, w.signers, id, signerEntry{apex: model.CanonicalName(z.Apex), ttl: uint32(z.NSTTL), keyFiles: z.DNSSEC.KeyFiles, dir: z.DNSSEC.KeyDirectory})
		if err := e.read(w.log, true); err != nil {
			return nil, fmt.Errorf("dnssec: zone %s: %w", e.apex, err)
		}
		out[id] = &e
	}
	return out, nil
}

// readAgain reads the files of an active entry again (a failure keeps its
// signer) and returns its zone and whether its signer changed.
func (e *signerEntry) readAgain(log *slog.Logger) (string, bool) {
	was := e.signer
	_ = e.read(log, false)
	return e.apex, e.signer != was
}

// read reads e's key files into e unless their names, sizes and
// modification times are those e's signer was read from. A failure keeps
// the signer read before, with a warning (always when loud, else once per
// failure), or is the error when there is none.
func (e *signerEntry) read(log *slog.Logger, loud bool) error {
	files, err := dnssec.ZoneKeyFiles(e.apex, e.keyFiles, e.dir)
	var id string
	if err == nil {
		id, err = fileIdentity(files)
	}
	if err == nil && e.signer != nil && id == e.files {
		e.failed = ""
		return nil
	}
	var s *dnssec.Signer
	if err == nil {
		s, err = loadSigner(e.apex, e.ttl, files)
	}
	if err != nil {
		if e.signer == nil {
			return err
		}
		e.keep(log, loud, err, "dnssec: cannot load the zone's keys again: signing with the keys loaded before", "zone", e.apex)
		return nil
	}
	e.files, e.signer, e.failed = id, s, ""
	return nil
}

// fileIdentity is the names, sizes and modification times of the key
// files (both halves of each key).
func fileIdentity(files []string) (string, error) {
	var id strings.Builder
	for _, f := range files {
		keyPath, privPath := dnssec.Paths(f)
		for _, p := range []string{keyPath, privPath} {
			fi, err := os.Stat(p)
			if err != nil {
				return "", fmt.Errorf("key file: %w", err)
			}
			fmt.Fprintf(&id, "%s %d %d\n", p, fi.Size(), fi.ModTime().UnixNano())
		}
	}
	return id.String(), nil
}

// loadSigner reads the keys of files and makes the zone's signer.
func loadSigner(apex string, ttl uint32, files []string) (*dnssec.Signer, error) {
	keys := make([]*dnssec.Key, 0, len(files))
	for _, f := range files {
		k, err := dnssec.ReadKey(f)
		if err != nil {
			return nil, err
		}
		keys = append(keys, k)
	}
	return dnssec.NewSigner(apex, keys, dnssec.Options{DNSKEYTTL: ttl})
}
