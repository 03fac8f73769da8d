package serving

import (
	"fmt"

	"github.com/meridian-gslb/meridian/internal/engine"
	"github.com/meridian-gslb/meridian/internal/model"
)

// Keys gives the pipeline the DNSSEC signers of the zones, read from their
// key files outside the pipeline's lock (internal/zonekeys.Watcher, which
// also polls the files and calls Republish when a key changed).
type Keys interface {
	// Load reads the keys of d's zones. New and Reload call it before they
	// take the lock; an error (a zone whose keys were never readable)
	// refuses the config with that reason. It may block while it reads.
	Load(d *model.Desired) error
	// Signers returns the signers of d's zones that have a dnssec
	// section, by canonical apex (nil when no zone signs), from what Load
	// read. It is called under the lock and must not read the disk.
	Signers(d *model.Desired) (map[string]engine.ZoneSigner, error)
}

// loadKeys reads the keys of l's zones through Options.Keys; call it
// outside the lock.
func (p *Pipeline) loadKeys(l *Loaded) error {
	if p.opts.Keys == nil {
		return nil
	}
	return p.opts.Keys.Load(&l.File.Desired)
}

// signers returns the signers of d's signed zones from Options.Keys. Without
// Keys a zone with a dnssec section fails the publish: a zone whose parent
// has a DS must never be served unsigned.
func (p *Pipeline) signers(d *model.Desired) (map[string]engine.ZoneSigner, error) {
	if p.opts.Keys != nil {
		return p.opts.Keys.Signers(d)
	}
	for _, z := range d.Zones {
		if z.DNSSEC != nil {
			return nil, fmt.Errorf("dnssec: zone %s: no key source: the pipeline was built without Options.Keys", model.CanonicalName(z.Apex))
		}
	}
	return nil, nil
}
