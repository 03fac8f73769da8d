package serving

import (
	"fmt"
	"log/slog"
	"os"
	"strings"
	"sync"

	"github.com/meridian-gslb/meridian/internal/dnssec"
	"github.com/meridian-gslb/meridian/internal/engine"
	"github.com/meridian-gslb/meridian/internal/model"
)

// signerCache keeps loaded signers (and so their signature caches) across
// publishes: a publish happens on every health change. It is keyed by zone,
// DNSKEY TTL and key file names; an entry is loaded again when a file's
// size or mtime changed.
type signerCache struct {
	mu sync.Mutex
	m  map[string]*cachedSigner
}

type cachedSigner struct {
	files  string // size and mtime of every file
	signer *dnssec.Signer
}

const maxCachedSigners = 256

// forZones returns the signers of the zones of d that have dnssec
// settings, by canonical apex (nil when no zone signs). A key that cannot
// be loaded the first time fails the publish, so the previous snapshot
// keeps serving (a zone whose parent has a DS must never be served
// unsigned). A key file that changes into something unreadable later
// keeps its last good key, with a warning, so that health changes are
// still published.
func (c *signerCache) forZones(d *model.Desired, log *slog.Logger) (map[string]engine.ZoneSigner, error) {
	var out map[string]engine.ZoneSigner
	for i := range d.Zones {
		z := &d.Zones[i]
		if z.DNSSEC == nil {
			continue
		}
		apex := model.CanonicalName(z.Apex)
		files, err := dnssec.ZoneKeyFiles(apex, z.DNSSEC.KeyFiles, z.DNSSEC.KeyDirectory)
		if err != nil {
			return nil, fmt.Errorf("zone %s: %w", apex, err)
		}
		s, err := c.zone(apex, uint32(z.NSTTL), files, log)
		if err != nil {
			return nil, fmt.Errorf("zone %s: %w", apex, err)
		}
		if out == nil {
			out = map[string]engine.ZoneSigner{}
		}
		out[apex] = s
	}
	return out, nil
}

func (c *signerCache) zone(apex string, ttl uint32, files []string, log *slog.Logger) (*dnssec.Signer, error) {
	key := fmt.Sprintf("%s %d %q", apex, ttl, files)
	c.mu.Lock()
	defer c.mu.Unlock()
	prev := c.m[key]
	id, err := fileIdentity(files)
	if err == nil && prev != nil && prev.files == id {
		return prev.signer, nil
	}
	var s *dnssec.Signer
	if err == nil {
		s, err = loadSigner(apex, ttl, files)
	}
	if err != nil {
		if prev == nil {
			return nil, err
		}
		log.Warn("dnssec: cannot load the zone's keys again: signing with the keys loaded before", "zone", apex, "err", err)
		return prev.signer, nil
	}
	if c.m == nil || len(c.m) >= maxCachedSigners {
		c.m = map[string]*cachedSigner{}
	}
	c.m[key] = &cachedSigner{files: id, signer: s}
	return s, nil
}

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
