package geo

import (
	"fmt"
	"net/netip"
	"strconv"
)

// Origin says where a Location came from.
type Origin uint8

// Origins of a Location.
const (
	OriginNone     Origin = iota // nothing matched
	OriginNetworks               // the custom networks given to New
	OriginMMDB                   // the MaxMind-format database given to New
)

// String returns "none", "networks" or "mmdb".
func (o Origin) String() string {
	switch o {
	case OriginNone:
		return "none"
	case OriginNetworks:
		return "networks"
	case OriginMMDB:
		return "mmdb"
	}
	return "Origin(" + strconv.Itoa(int(o)) + ")"
}

// Location is where a client address is.
type Location struct {
	Region    string // region name (custom networks, or the optional meridian.region field of our own mmdb files); "" if unknown
	Country   string // ISO 3166-1 alpha-2, upper case; "" if unknown
	Continent string // AF AN AS EU NA OC SA; "" if unknown

	// Prefix is the network that matched, narrowed where a more specific
	// custom network lies inside it: every address in Prefix gets this same
	// Location, so Prefix.Bits() is the EDNS Client Subnet scope. It is in
	// the address's family (IPv4 for IPv4-mapped addresses).
	Prefix netip.Prefix

	Origin Origin // where the answer came from; OriginNone on a miss
}

// Network places a client network; New takes a list of them (the config's
// geo.networks). Region, Country and Continent are copied to the Location of
// the addresses it holds; at least one must be set.
type Network struct {
	Prefix    netip.Prefix // without host bits; IPv4-mapped IPv6 networks are taken as IPv4
	Region    string       // region name
	Country   string       // ISO 3166-1 alpha-2, upper case, or ""
	Continent string       // AF AN AS EU NA OC SA, or ""
}

// Locator maps client addresses to locations. It is immutable after New and
// safe for concurrent use without locks.
type Locator struct {
	v4, v6 trie
	db     *mmdb // nil without a database
}

// New returns a Locator for the custom networks and the MaxMind-format
// database at mmdbPath ("" = none). It checks every network and reads the
// whole database into memory; errors name the network or the file. Close is
// optional: the garbage collector frees a Locator that no snapshot holds.
func New(networks []Network, mmdbPath string) (*Locator, error) {
	l := &Locator{v4: newTrie(), v6: newTrie()}
	seen := make(map[netip.Prefix]int, len(networks))
	for i, n := range networks {
		p, err := checkNetwork(n)
		if err != nil {
			return nil, fmt.Errorf("networks[%d]: %w", i, err)
		}
		if j, dup := seen[p]; dup {
			return nil, fmt.Errorf("networks[%d]: %s is already networks[%d]", i, p, j)
		}
		seen[p] = i
		t := &l.v6
		if p.Addr().Is4() {
			t = &l.v4
		}
		t.insert(p, Location{Region: n.Region, Country: n.Country, Continent: n.Continent, Origin: OriginNetworks})
	}
	if mmdbPath != "" {
		db, err := openMMDB(mmdbPath)
		if err != nil {
			return nil, err
		}
		l.db = db
	}
	return l, nil
}

func checkNetwork(n Network) (netip.Prefix, error) {
	p, err := normalize(n.Prefix)
	if err != nil {
		return p, err
	}
	if n.Region == "" && n.Country == "" && n.Continent == "" {
		return p, fmt.Errorf("%s: needs at least one of region, country, continent", p)
	}
	if n.Country != "" {
		if err := checkCountry(n.Country); err != nil {
			return p, fmt.Errorf("%s: %w", p, err)
		}
	}
	if n.Continent != "" {
		if err := checkContinent(n.Continent); err != nil {
			return p, fmt.Errorf("%s: %w", p, err)
		}
	}
	return p, nil
}

// Lookup returns the location of addr: the longest custom network holding it,
// else the database record (see the package documentation for the order).
// ok is false if neither matched; the Location then has Origin none and a
// Prefix around addr in which every address misses too (the scope of a
// default answer), or no valid Prefix if addr is not valid.
//
// Lookup takes no lock and allocates nothing; it may be called from any
// number of goroutines, but not concurrently with Close. After Close it
// answers from the custom networks only. A nil Locator matches nothing.
func (l *Locator) Lookup(addr netip.Addr) (Location, bool) {
	if l == nil || !addr.IsValid() {
		return Location{}, false
	}
	addr = addr.Unmap().WithZone("")
	t, maxBits := &l.v6, 128
	if addr.Is4() {
		t, maxBits = &l.v4, 32
	}
	key := keyOf(addr)
	i, scope := t.lookup(&key, maxBits)
	if i >= 0 {
		loc := t.locs[i]
		loc.Prefix, _ = addr.Prefix(scope)
		return loc, true
	}
	if l.db != nil {
		loc, bits, ok := l.db.lookup(addr)
		// The database block and the custom miss block both hold addr, so
		// the longer of the two is inside the other.
		scope = max(scope, bits)
		if ok {
			loc.Prefix, _ = addr.Prefix(scope)
			return loc, true
		}
	}
	p, _ := addr.Prefix(scope)
	return Location{Prefix: p}, false
}

// Close releases the database early. It must not be called while a Lookup
// may be running; calling it twice is harmless.
func (l *Locator) Close() error {
	if l == nil || l.db == nil {
		return nil
	}
	if err := l.db.reader.Close(); err != nil {
		return fmt.Errorf("mmdb %s: close: %w", l.db.path, err)
	}
	return nil
}
