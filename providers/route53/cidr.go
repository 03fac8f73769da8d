package route53

import (
	"net/netip"
	"slices"
	"strings"

	"github.com/meridian-gslb/meridian/internal/model"
	"github.com/meridian-gslb/meridian/providers"
	"github.com/meridian-gslb/meridian/providers/plan"
)

// Route 53's limits on CIDR collections (API reference: CidrRoutingConfig,
// ChangeCidrCollection, CreateCidrCollection).
const (
	maxLocationName   = 16 // characters of a location name, [0-9A-Za-z_-]
	maxCollectionName = 64 // characters of a collection name, [0-9A-Za-z_-]
	maxIPv4Bits       = 24 // IPv4 blocks /1../24
	maxIPv6Bits       = 48 // IPv6 blocks /1../48
	maxBlocksPerCall  = 1000
)

// Set identifiers and names of the IP-based mapping.
const (
	setIPPrefix  = "ip-"        // + location name
	setIPDefault = "ip-default" // the "*" location: an alias to the geolocation sets
	geoLabel     = "_geo."      // the geolocation sets of an IP-based name live at _geo.<name>
	defaultLoc   = "*"          // Route 53's default location
	collPrefix   = "meridian-"  // every collection name we make starts so
)

// place is where geo.networks put a client: the engine's Location.
type place struct{ Region, Country, Continent string }

func (p place) String() string {
	var parts []string
	for _, s := range []string{p.Region, p.Country, p.Continent} {
		if s != "" {
			parts = append(parts, s)
		}
	}
	return strings.Join(parts, "_")
}

// cidrLocation is one location of the zone's CIDR collection: one network
// place with every CIDR geo.networks gives it.
type cidrLocation struct {
	Name  string
	Place place
	CIDRs []string // sorted
}

// cidrLocations maps geo.networks to CIDR locations, one per distinct
// place (region, country, continent), sorted by name. A location is named
// after its place — its parts joined by "_" — when that fits Route 53's
// 16 characters of [0-9A-Za-z_-]; else the first 9 usable characters, "-"
// and 6 hex digits of the place. Networks Route 53 cannot hold (IPv4 longer
// than /24, IPv6 longer than /48, /0) are returned in skipped. Pure.
func cidrLocations(nets []model.GeoNetwork) (locs []cidrLocation, skipped []string) {
	byPlace := map[place]*cidrLocation{}
	for _, n := range nets {
		pfx, err := netip.ParsePrefix(n.CIDR)
		if err != nil {
			skipped = append(skipped, n.CIDR)
			continue
		}
		pfx = netip.PrefixFrom(pfx.Addr().Unmap(), pfx.Bits()-unmapBits(pfx)).Masked()
		if bits := pfx.Bits(); bits < 1 || pfx.Addr().Is4() && bits > maxIPv4Bits || pfx.Addr().Is6() && bits > maxIPv6Bits {
			skipped = append(skipped, n.CIDR)
			continue
		}
		pl := place{Region: n.Region, Country: n.Country, Continent: n.Continent}
		l := byPlace[pl]
		if l == nil {
			l = &cidrLocation{Name: locationName(pl), Place: pl}
			byPlace[pl] = l
		}
		l.CIDRs = append(l.CIDRs, pfx.String())
	}
	for _, l := range byPlace {
		slices.Sort(l.CIDRs)
		l.CIDRs = slices.Compact(l.CIDRs)
		locs = append(locs, *l)
	}
	slices.SortFunc(locs, func(a, b cidrLocation) int { return strings.Compare(a.Name, b.Name) })
	return locs, skipped
}

// unmapBits is 96 for an IPv4-mapped IPv6 prefix, else 0.
func unmapBits(p netip.Prefix) int {
	if p.Addr().Is4In6() && p.Bits() >= 96 {
		return 96
	}
	return 0
}

// locationName is the location name of a place (see cidrLocations).
func locationName(p place) string {
	raw := p.String()
	clean := sanitizeName(raw)
	if clean == raw && len(raw) >= 1 && len(raw) <= maxLocationName {
		return raw
	}
	return clean[:min(len(clean), 9)] + "-" + digest("place|" + p.Region + "|" + p.Country + "|" + p.Continent)[:6]
}

// sanitizeName keeps [0-9A-Za-z_-] and turns anything else into "-".
func sanitizeName(s string) string {
	b := []byte(s)
	for i, c := range b {
		if !('0' <= c && c <= '9' || 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || c == '_' || c == '-') {
			b[i] = '-'
		}
	}
	return string(b)
}

// collectionName is the name of the CIDR collection of owner's sets in
// zone: "meridian-<owner>-<zone>" with dots as "_", anything else outside
// [0-9A-Za-z_-] as "-"; longer than 64 characters, cut to 51 and ended by
// "-" and 12 hex digits of owner and zone.
func collectionName(owner, zone string) string {
	zone = strings.TrimSuffix(canonicalName(zone), ".")
	name := sanitizeName(collPrefix + owner + "-" + strings.ReplaceAll(zone, ".", "_"))
	if len(name) <= maxCollectionName {
		return name
	}
	return name[:51] + "-" + digest(owner + "|" + zone)[:12]
}

// ipBased reports whether t's geo sets are written IP-based: the service
// has networks, the zone's collection exists, the type is an address type,
// and the name is not a wildcard (_geo.*.example.com is not a name).
func (t typed) ipBased() bool {
	return len(t.v.Networks) > 0 && t.tr.objs.CIDR != nil && t.tr.objs.CIDR.CollectionID != "" && t.tr.objs.ZoneID != "" &&
		t.typ != "CNAME" && !strings.HasPrefix(t.name, "*.")
}

// geoOrIP is geo() at the service name, or, when the sets are IP-based,
// one IP-based set per network place the collection holds (each with the
// endpoints the engine picks for a client there), the default location "*"
// as an alias (EvaluateTargetHealth) to _geo.<name>, and geo() at
// _geo.<name>: Route 53 does not mix IP-based and geolocation sets at one
// name and type.
func (t typed) geoOrIP() []plan.Record {
	if !t.ipBased() {
		return t.geo()
	}
	g := t
	g.name = geoLabel + t.name
	out := g.geo()
	locs, _ := cidrLocations(t.v.Networks)
	coll := t.tr.objs.CIDR
	for _, l := range locs {
		if !coll.Locations[l.Name] {
			continue
		}
		r := t.record(t.pickGeo(placeClusters(t.v, l.Place)))
		r.SetID, r.CIDR = setIPPrefix+l.Name, &plan.CIDRLocation{CollectionID: coll.CollectionID, Location: l.Name}
		out = append(out, r)
	}
	def := plan.Record{Name: t.name, Type: t.typ, SetID: setIPDefault, CIDR: &plan.CIDRLocation{CollectionID: coll.CollectionID, Location: defaultLoc},
		Alias: &plan.Alias{ZoneID: t.tr.objs.ZoneID, DNSName: g.name, EvaluateTargetHealth: true}}
	return append(out, def)
}

// placeClusters is the cluster set the engine's geo index gives a client at
// p (internal/engine geoIndex.bucket): rules by region, then country, then
// continent (the first rule listing a place wins), then the clusters'
// own tags the same way, else geo.default (nil: every cluster). Pure.
func placeClusters(v providers.ServiceView, p place) []string {
	var rules []model.GeoRule
	var def []string
	if v.Geo != nil {
		rules, def = v.Geo.Rules, v.Geo.Default
	}
	for _, level := range []struct {
		of   func(model.GeoRule) []string
		want string
	}{
		{func(r model.GeoRule) []string { return r.Regions }, p.Region},
		{func(r model.GeoRule) []string { return r.Countries }, p.Country},
		{func(r model.GeoRule) []string { return r.Continents }, p.Continent},
	} {
		if level.want == "" {
			continue
		}
		for _, r := range rules {
			if slices.Contains(level.of(r), level.want) {
				return r.Clusters
			}
		}
	}
	for _, tag := range []func(providers.EndpointView) (string, string){
		func(e providers.EndpointView) (string, string) { return e.Region, p.Region },
		func(e providers.EndpointView) (string, string) { return e.Country, p.Country },
		func(e providers.EndpointView) (string, string) { return e.Continent, p.Continent },
	} {
		var clusters []string
		for _, e := range v.Endpoints {
			if have, want := tag(e); want != "" && have == want && !slices.Contains(clusters, e.Cluster) {
				clusters = append(clusters, e.Cluster)
			}
		}
		if len(clusters) > 0 {
			return clusters
		}
	}
	return def
}
