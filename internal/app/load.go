// Package app wires Meridian's parts into the `meridian serve` process:
// config loading and hot reload, the snapshot store, the DNS server and the
// HTTP endpoints.
package app

import (
	"github.com/meridian-gslb/meridian/internal/config"
	"github.com/meridian-gslb/meridian/internal/geo"
)

// Loaded is a validated configuration with its geo locator.
type Loaded struct {
	File    *config.File
	Locator *geo.Locator
}

// Load reads, validates and prepares a configuration (see config.Prepare).
func Load(name string, data []byte) (*Loaded, error) {
	f, loc, err := config.Prepare(name, data, "")
	if err != nil {
		return nil, err
	}
	return &Loaded{File: f, Locator: loc}, nil
}
