package geo

import (
	"fmt"
	"net/netip"
	"slices"
	"strings"
)

// continents are the continent codes of MaxMind databases, in the order that
// error messages list them.
var continents = []string{"AF", "AN", "AS", "EU", "NA", "OC", "SA"}

// checkCountry accepts an ISO 3166-1 alpha-2 code: two upper-case letters.
func checkCountry(c string) error {
	if len(c) != 2 || c[0] < 'A' || c[0] > 'Z' || c[1] < 'A' || c[1] > 'Z' {
		return fmt.Errorf("country %q is not allowed (allowed: two upper-case letters, an ISO 3166-1 alpha-2 code such as DE)", c)
	}
	return nil
}

// checkContinent accepts one of the seven continent codes.
func checkContinent(c string) error {
	if !slices.Contains(continents, c) {
		return fmt.Errorf("continent %q is not allowed (allowed: %s)", c, strings.Join(continents, ", "))
	}
	return nil
}

// normalize checks that p is a valid network without host bits and turns an
// IPv4-mapped IPv6 network (::ffff:10.0.0.0/104) into the IPv4 network it
// maps (10.0.0.0/8): lookups unmap addresses first, so only the IPv4 form can
// ever match.
func normalize(p netip.Prefix) (netip.Prefix, error) {
	if !p.IsValid() {
		return p, fmt.Errorf("%q is not a valid network", p)
	}
	if m := p.Masked(); m != p {
		return p, fmt.Errorf("%s has host bits set (did you mean %s?)", p, m)
	}
	if a := p.Addr(); a.Is4In6() && p.Bits() >= 96 {
		return netip.PrefixFrom(a.Unmap(), p.Bits()-96), nil
	}
	return p, nil
}
