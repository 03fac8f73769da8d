// Package app wires Meridian's parts into the `meridian serve` process:
// config loading and hot reload, the snapshot store, the DNS server and the
// HTTP endpoints.
package app

import (
	"fmt"
	"net/netip"

	"github.com/meridian-gslb/meridian/internal/config"
	"github.com/meridian-gslb/meridian/internal/geo"
)

// Loaded is a validated configuration with its geo locator.
type Loaded struct {
	File    *config.File
	Locator *geo.Locator
}

// Load reads, validates and prepares a configuration: the exact checks that
// `meridian check-config` runs. name is used in messages; data, when not nil,
// is used instead of reading the file.
func Load(name string, data []byte) (*Loaded, error) {
	var f *config.File
	var err error
	if data != nil {
		f, err = config.Parse(name, data)
	} else {
		f, err = config.Load(name)
	}
	if err != nil {
		return nil, err
	}
	nets := make([]geo.Network, len(f.Geo.Networks))
	for i, n := range f.Geo.Networks {
		nets[i] = geo.Network{Prefix: netip.MustParsePrefix(n.CIDR), Region: n.Region, Country: n.Country, Continent: n.Continent}
	}
	loc, err := geo.New(nets, f.Geo.MMDB)
	if err != nil {
		return nil, fmt.Errorf("%s: geo.mmdb: %w", name, err)
	}
	return &Loaded{File: f, Locator: loc}, nil
}
