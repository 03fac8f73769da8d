package xfr

import (
	"crypto/sha256"
	"encoding/hex"
	"slices"
	"strings"
	"time"

	"github.com/miekg/dns"

	"github.com/meridian-gslb/meridian/internal/engine"
	"github.com/meridian-gslb/meridian/internal/model"
)

// A catalog zone (RFC 9432, schema version 2) lists the zones a secondary
// should serve, so that a secondary configured with the catalog alone
// provisions them, and removes them when they leave the list. Its content
// (section 4):
//
//	<catalog>                   0 SOA invalid. invalid. <serial> 300 60 1209600 0
//	<catalog>                   0 NS  invalid.
//	version.<catalog>           0 TXT "2"
//	<id>.zones.<catalog>        0 PTR <member>   (one per member zone)
//
// The member's id (RFC 9432 section 4.1: any label unique in the
// catalog) is a hash of its name, so it is the same in every version and
// on every node: a secondary never sees a zone leave and come back under
// another id, which would reset its state (section 5.6). The TTLs are 0
// (section 4.1: the catalog is not for resolvers). Refresh and retry are
// short because NOTIFY may be lost and the catalog is tiny; expire is the
// zones' default.

// Timers of the catalog's SOA, in seconds.
const (
	catalogRefresh = 300
	catalogRetry   = 60
	catalogExpire  = model.DefaultExpire
)

// CatalogMemberID is the member node label of zone in a catalog: the
// first 16 bytes of the SHA-256 of its canonical name, in hex.
func CatalogMemberID(zone string) string {
	sum := sha256.Sum256([]byte(model.CanonicalName(zone)))
	return hex.EncodeToString(sum[:16])
}

// CatalogZone is the catalog zone apex listing the member zones at serial,
// in the form the transfer server sends it (records sorted by owner name,
// without the SOA). Members are zone names in any case, each listed once.
func CatalogZone(apex string, members []string, serial uint32) engine.ZoneData {
	apex = model.CanonicalName(apex)
	hdr := func(name string, t uint16) dns.RR_Header {
		return dns.RR_Header{Name: name, Rrtype: t, Class: dns.ClassINET, Ttl: 0}
	}
	zd := engine.ZoneData{Apex: apex, SOA: &dns.SOA{
		Hdr: hdr(apex, dns.TypeSOA), Ns: "invalid.", Mbox: "invalid.", Serial: serial,
		Refresh: catalogRefresh, Retry: catalogRetry, Expire: catalogExpire, Minttl: 0,
	}}
	zd.Records = append(zd.Records,
		&dns.NS{Hdr: hdr(apex, dns.TypeNS), Ns: "invalid."},
		&dns.TXT{Hdr: hdr("version."+apex, dns.TypeTXT), Txt: []string{"2"}},
	)
	seen := map[string]bool{}
	var ptrs []dns.RR
	for _, m := range members {
		m = model.CanonicalName(m)
		if seen[m] {
			continue
		}
		seen[m] = true
		ptrs = append(ptrs, &dns.PTR{Hdr: hdr(CatalogMemberID(m)+".zones."+apex, dns.TypePTR), Ptr: m})
	}
	slices.SortFunc(ptrs, func(a, b dns.RR) int { return strings.Compare(a.Header().Name, b.Header().Name) })
	zd.Records = append(zd.Records, ptrs...)
	return zd
}

// catalogZone is the transfer configuration of d's catalog zone (nil
// without a catalog section).
func (x *Publisher) catalogZone(d *model.Desired) (*Zone, error) {
	c := d.Catalog
	if c == nil || c.Transfer == nil {
		return nil, nil
	}
	z, err := x.transferZone(model.CanonicalName(c.Zone), "catalog.transfer", c.Transfer)
	if err != nil {
		return nil, err
	}
	return &z, nil
}

// configure sets the transfer server's zones and, with a catalog, the
// catalog listing those zones at its managed serial: the next one when
// the list changed (RFC 9432 section 4.1, RFC 1982; persisted with the
// zones' serials). The catalog's NOTIFY goes out when it changed, or at
// its first publish by this process.
func (x *Publisher) configure(zones []Zone, cat *Zone, now time.Time) {
	if cat == nil {
		x.srv.SetCatalog(nil)
		x.srv.Configure(zones)
		return
	}
	// Configure first: a query into the catalog then always finds its
	// configuration (SetCatalog).
	x.srv.Configure(append(slices.Clone(zones), *cat))
	members := make([]string, len(zones))
	for i, z := range zones {
		members[i] = z.Apex
	}
	zd := CatalogZone(cat.Apex, members, 1) // any serial: the content hash leaves it out
	prev, _ := x.serials.Get(cat.Apex)
	serial, changed := x.serials.Next(cat.Apex, ContentHash(zd), 0, now)
	zd.SOA.Serial = serial
	if changed {
		x.log.Info("catalog zone changed: new serial", "zone", cat.Apex, "serial", serial, "previous", prev.Serial, "members", len(members))
		saveSerials(x.serials, x.log)
	}
	x.srv.SetCatalog(&zd)
	x.srv.Record(zd)
	x.notifyOnce(cat.Apex, serial, changed)
}
