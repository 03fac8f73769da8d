package xfr

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/meridian-gslb/meridian/internal/engine"
)

// SerialLess reports whether a < b in RFC 1982 serial number arithmetic.
func SerialLess(a, b uint32) bool {
	return a != b && int32(b-a) > 0
}

// UpToDate reports whether a client at serial client needs no transfer
// of a zone at serial current: its serial is not older (RFC 1982). An IXFR
// from it is answered with the current SOA alone, by Server and by the
// CoreDNS plugin.
func UpToDate(client, current uint32) bool {
	return !SerialLess(client, current)
}

// NextSerial is s+1 modulo 2^32, skipping 0 (which zones[].soa.serial
// reserves for "automatic").
func NextSerial(s uint32) uint32 {
	s++
	if s == 0 {
		s = 1
	}
	return s
}

// ContentHash is a digest of everything a transfer carries except the SOA
// serial: the other SOA fields and every record.
func ContentHash(zd engine.ZoneData) string {
	h := sha256.New()
	if zd.SOA != nil {
		soa := *zd.SOA
		soa.Serial = 0
		h.Write([]byte(soa.String() + "\n"))
	}
	for _, rr := range zd.Records {
		h.Write([]byte(rr.String() + "\n"))
	}
	return hex.EncodeToString(h.Sum(nil))
}

// Serials remembers the last serial and content hash of every zone in a JSON
// file, so that serials increase across restarts: unchanged content keeps
// its serial, changed content gets the next one.
type Serials struct {
	path string // "" = memory only
	mu   sync.Mutex
	st   serialFile
}

type serialFile struct {
	Zones map[string]SerialEntry `json:"zones"`
}

// SerialEntry is one zone's remembered state.
type SerialEntry struct {
	Serial  uint32    `json:"serial"`
	Hash    string    `json:"hash"`
	Changed time.Time `json:"changed"`
}

// OpenSerials reads path ("" = keep serials in memory only). A missing file
// is an empty state; an unreadable or corrupt one is returned as an error
// together with an empty, usable state (serials then restart from the Unix
// time, which is above any serial this scheme made before unless it ran
// more changes than seconds).
func OpenSerials(path string) (*Serials, error) {
	s := &Serials{path: path, st: serialFile{Zones: map[string]SerialEntry{}}}
	if path == "" {
		return s, nil
	}
	b, err := os.ReadFile(path)
	if os.IsNotExist(err) {
		return s, nil
	}
	if err != nil {
		return s, err
	}
	var st serialFile
	if err := json.Unmarshal(b, &st); err != nil {
		return s, fmt.Errorf("%s: %w", path, err)
	}
	if st.Zones != nil {
		s.st = st
	}
	return s, nil
}

// Path is the state file ("" when in memory only).
func (s *Serials) Path() string { return s.path }

// Get returns the remembered entry of a zone.
func (s *Serials) Get(apex string) (SerialEntry, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	e, ok := s.st.Zones[apex]
	return e, ok
}

// Next returns the serial of zone apex for content hash, and whether it
// differs from the remembered one. configured is zones[].soa.serial (0 =
// automatic); a configured serial above the remembered one is adopted. A
// zone seen for the first time starts at the configured serial or, when
// automatic, at the Unix time of now.
func (s *Serials) Next(apex, hash string, configured uint32, now time.Time) (uint32, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	e, ok := s.st.Zones[apex]
	var serial uint32
	switch {
	case !ok:
		serial = configured
		if serial == 0 {
			serial = uint32(now.Unix())
		}
	case e.Hash == hash:
		serial = e.Serial
	default:
		serial = NextSerial(e.Serial)
	}
	if ok && configured != 0 && SerialLess(serial, configured) {
		serial = configured
	}
	if ok && serial == e.Serial && e.Hash == hash {
		return serial, false
	}
	s.st.Zones[apex] = SerialEntry{Serial: serial, Hash: hash, Changed: now.UTC()}
	return serial, true
}

// Save writes the state file atomically (temporary file, fsync, rename).
func (s *Serials) Save() error {
	if s.path == "" {
		return nil
	}
	s.mu.Lock()
	b, err := json.MarshalIndent(s.st, "", "  ")
	s.mu.Unlock()
	if err != nil {
		return err
	}
	dir := filepath.Dir(s.path)
	f, err := os.CreateTemp(dir, "."+filepath.Base(s.path)+".tmp-*")
	if err != nil {
		return err
	}
	tmp := f.Name()
	_, err = f.Write(append(b, '\n'))
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp, s.path)
	}
	if err != nil {
		os.Remove(tmp)
	}
	return err
}
