// Package serving is the one pipeline that feeds the DNS answers of both
// front ends, `meridian serve` and the CoreDNS plugin:
//
//	config file → Kubernetes merge → operators' overrides → decided health
//	→ DNSSEC signers and zone serials → engine.Store
//
// A Pipeline holds what is served as one immutable State value, swapped
// atomically after every change (a reload, a Kubernetes change, an override,
// a decision), so readers never lock. A Follower turns the ring's votes into
// failover decisions and hands them to the Pipeline. Both front ends build
// these two; neither keeps a copy of the chain.
package serving

import (
	"github.com/meridian-gslb/meridian/internal/config"
	"github.com/meridian-gslb/meridian/internal/geo"
)

// Loaded is a validated configuration file with its geo locator.
type Loaded struct {
	File    *config.File
	Locator *geo.Locator
}

// Load reads, validates and prepares a configuration (see config.Prepare):
// name is the file, data its content (nil: read name); mmdb overrides
// geo.mmdb when not empty.
func Load(name string, data []byte, mmdb string) (*Loaded, error) {
	f, loc, err := config.Prepare(name, data, mmdb)
	if err != nil {
		return nil, err
	}
	return &Loaded{File: f, Locator: loc}, nil
}
