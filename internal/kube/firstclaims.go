package kube

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"maps"
	"os"
	"path/filepath"
	"sync"

	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/meridian-gslb/meridian/internal/kube/claims"
)

// FirstClaimsFile is the ledger of first claimants in the state directory.
const FirstClaimsFile = "first-claims.json"

// maxFirstClaimsFile bounds the ledger file read at start (about 100 bytes
// a name: 16 MiB is ~160 000 names, beyond every namespace's cap).
const maxFirstClaimsFile = 16 << 20

// FirstClaims keeps the ledger of the names' first claimants (package
// claims, rule 4) across builds and, with a path, across restarts: it is
// written (atomically, mode 0600) whenever a build changes it. Safe for
// concurrent use; a nil *FirstClaims keeps nothing.
type FirstClaims struct {
	path string
	log  *slog.Logger

	mu     sync.Mutex
	ledger claims.Ledger
	saved  []byte // what the file holds
}

// OpenFirstClaims reads the ledger at path ("" keeps it in memory only).
// A missing file is an empty ledger; a file that is not the ledger's JSON
// stops the start with its name (starting empty would hand contested
// names to the oldest object again); an entry that is not a name and a
// namespace is skipped with its reason.
func OpenFirstClaims(path string, log *slog.Logger) (*FirstClaims, error) {
	if log == nil {
		log = slog.Default()
	}
	f := &FirstClaims{path: path, log: log, ledger: claims.Ledger{}}
	if path == "" {
		return f, nil
	}
	b, err := readBounded(path, maxFirstClaimsFile)
	if errors.Is(err, fs.ErrNotExist) {
		return f, nil
	}
	if err != nil {
		return nil, fmt.Errorf("first claims %s: %w", path, err)
	}
	var l claims.Ledger
	if err := json.Unmarshal(b, &l); err != nil {
		return nil, fmt.Errorf("first claims %s: %w (allowed: the JSON this node wrote; move the file away to start with an empty ledger, and the oldest object claiming a contested name owns it again)", path, err)
	}
	for name, r := range l {
		if why := badRecord(name, r); why != "" {
			log.Warn("kubernetes: first claims: entry skipped", "file", path, "hostname", name, "reason", why)
			continue
		}
		f.ledger[name] = r
	}
	f.saved = b
	return f, nil
}

func readBounded(path string, limit int64) ([]byte, error) {
	fh, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer fh.Close()
	st, err := fh.Stat()
	if err != nil {
		return nil, err
	}
	if st.Size() > limit {
		return nil, fmt.Errorf("%d bytes, more than the %d allowed", st.Size(), limit)
	}
	b := make([]byte, st.Size())
	_, err = fh.ReadAt(b, 0)
	if err != nil && st.Size() > 0 {
		return nil, err
	}
	return b, nil
}

// badRecord says why a ledger entry is not used ("" when it is).
func badRecord(name string, r claims.Record) string {
	if hs, err := parseHostnames(name); err != nil || len(hs) != 1 || hs[0] != name {
		return "not a canonical host name"
	}
	if errs := validation.IsDNS1123Label(r.Namespace); len(errs) > 0 {
		return fmt.Sprintf("namespace %q: %s", r.Namespace, errs[0])
	}
	if r.Since.IsZero() {
		return "no since time"
	}
	return ""
}

// Ledger is the ledger now (the caller does not modify it).
func (f *FirstClaims) Ledger() claims.Ledger {
	if f == nil {
		return nil
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.ledger
}

// Snapshot is a copy of the ledger, for reports.
func (f *FirstClaims) Snapshot() claims.Ledger {
	return maps.Clone(f.Ledger())
}

// Set makes l the ledger and writes it when it changed. A failed write is
// logged and retried with the next change; the ledger in memory is l
// either way.
func (f *FirstClaims) Set(l claims.Ledger) {
	if f == nil {
		return
	}
	b, err := json.Marshal(l)
	if err != nil {
		f.log.Error("kubernetes: first claims not saved", "err", err)
		return
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.ledger = l
	if f.path == "" || string(b) == string(f.saved) {
		return
	}
	if err := writeAtomic(f.path, b); err != nil {
		f.log.Error("kubernetes: first claims not saved to the state directory; a restart would forget the owners recorded since", "file", f.path, "err", err)
		return
	}
	f.saved = b
}

// writeAtomic writes b to path through a temporary file, fsync and rename.
func writeAtomic(path string, b []byte) error {
	dir := filepath.Dir(path)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return err
	}
	tmp, err := os.CreateTemp(dir, ".first-claims-*")
	if err != nil {
		return err
	}
	_, werr := tmp.Write(b)
	serr := tmp.Sync()
	cerr := tmp.Close()
	if err := errors.Join(werr, serr, cerr); err != nil {
		os.Remove(tmp.Name())
		return err
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		os.Remove(tmp.Name())
		return err
	}
	if d, err := os.Open(dir); err == nil {
		_ = d.Sync()
		d.Close()
	}
	return nil
}
