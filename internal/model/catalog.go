package model

import (
	"fmt"
	"slices"

	"github.com/miekg/dns"
)

// Catalog is a catalog zone (RFC 9432, schema version 2) that lists the
// zones with a transfer section, so that a secondary configured with the
// catalog alone provisions and removes them by itself. internal/xfr
// builds and serves it.
type Catalog struct {
	Zone     string    `yaml:"zone"`     // name of the catalog zone, e.g. catalog.meridian.example (required; not a served zone, nor above or below one)
	Transfer *Transfer `yaml:"transfer"` // who may transfer and query the catalog, with which key, and whom to NOTIFY (required; as zones[].transfer)
}

// catalog checks the catalog section (zones: the canonical apexes of the
// served zones).
func (v *validator) catalog(c *Catalog, zones map[string]bool) {
	if c == nil {
		return
	}
	if apex, ok := v.checkName("catalog.zone", c.Zone); ok {
		if msg := catalogOverlap(apex, zones); msg != "" {
			v.add("catalog.zone", "%q %s: the catalog must be a zone of its own, outside every served zone (e.g. catalog.invalid. or catalog.<your domain>.)", c.Zone, msg)
		}
	}
	if c.Transfer == nil {
		v.add("catalog.transfer", "is required: who may transfer the catalog (allow), its TSIG key (tsig_key_file) and the secondaries to NOTIFY (notify), as in zones[].transfer")
		return
	}
	v.transfer("catalog.transfer", c.Transfer)
}

// catalogOverlap says how the catalog apex overlaps a served zone ("" when
// it does not): it is one, lies inside one, or contains one.
func catalogOverlap(apex string, zones map[string]bool) string {
	served := make([]string, 0, len(zones))
	for z := range zones {
		served = append(served, z)
	}
	slices.Sort(served) // the same message every time
	for _, z := range served {
		switch {
		case z == apex:
			return fmt.Sprintf("is served zone %q", z)
		case dns.IsSubDomain(z, apex):
			return fmt.Sprintf("is inside served zone %q", z)
		case dns.IsSubDomain(apex, z):
			return fmt.Sprintf("contains served zone %q", z)
		}
	}
	return ""
}

// normalizeCatalog is a copy of c with the catalog zone's canonical name
// (nil without a catalog).
func normalizeCatalog(c *Catalog) *Catalog {
	if c == nil {
		return nil
	}
	out := &Catalog{Zone: CanonicalName(c.Zone)}
	if t := c.Transfer; t != nil {
		out.Transfer = &Transfer{Allow: slices.Clone(t.Allow), TSIGKeyFile: t.TSIGKeyFile, Notify: slices.Clone(t.Notify)}
	}
	return out
}
