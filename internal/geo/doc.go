// Package geo locates DNS clients for geo answers: it maps a client address
// (the query's source address or its EDNS Client Subnet) to a region, an
// ISO 3166-1 country and a continent.
//
// # Lookup order
//
// [Locator.Lookup] answers from two sources, in this order:
//
//  1. IPv4-mapped IPv6 addresses (::ffff:192.0.2.1) are unmapped to IPv4
//     first, so they match IPv4 networks and never IPv6 ones.
//  2. The custom networks given to [New] (the config's geo.networks). The
//     longest matching prefix wins. IPv4 and IPv6 networks are kept apart.
//     A match here ends the lookup: the database is not consulted.
//  3. The MaxMind-format database given to [New], if any: country.iso_code
//     and continent.code of the record (the GeoLite2-Country, GeoLite2-City
//     and DB-IP country layout), plus the optional meridian.region field
//     that [BuildMMDB] writes. A record with neither a country nor a
//     continent counts as no match.
//  4. Otherwise Lookup reports ok == false.
//
// # Scope
//
// [Location.Prefix] is the block around the address in which every address
// gets the same answer, so its length can be used as the EDNS Client Subnet
// scope. It is the matched network itself unless a more specific custom
// network lies inside it; then it is narrowed so that it does not cover the
// more specific one. A miss also carries a Prefix: the block in which every
// address misses, the scope of a default answer.
//
// # Cost
//
// [New] does all the work: it builds a binary trie of the custom networks
// and decodes every distinct database record once. Lookup is then a trie walk
// plus a search tree walk and a map read; it takes no lock and allocates
// nothing.
package geo
