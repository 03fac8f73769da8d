package config

import (
	"fmt"
	"net/netip"

	"github.com/meridian-gslb/meridian/internal/geo"
)

// Prepare reads, validates and prepares a configuration with its geo
// locator: the exact checks of `meridian check-config`, shared by `meridian
// serve` and the CoreDNS plugin. name is used in messages; data, when not
// nil, is used instead of reading the file. mmdb, when not empty, overrides
// geo.mmdb.
func Prepare(name string, data []byte, mmdb string) (*File, *geo.Locator, error) {
	var f *File
	var err error
	if data != nil {
		f, err = Parse(name, data)
	} else {
		f, err = Load(name)
	}
	if err != nil {
		return nil, nil, err
	}
	if mmdb != "" {
		f.Geo.MMDB = mmdb
	}
	nets := make([]geo.Network, len(f.Geo.Networks))
	for i, n := range f.Geo.Networks {
		nets[i] = geo.Network{Prefix: netip.MustParsePrefix(n.CIDR), Region: n.Region, Country: n.Country, Continent: n.Continent}
	}
	loc, err := geo.New(nets, f.Geo.MMDB)
	if err != nil {
		return nil, nil, fmt.Errorf("%s: geo.mmdb: %w", name, err)
	}
	return f, loc, nil
}
