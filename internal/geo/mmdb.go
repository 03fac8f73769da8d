package geo

import (
	"errors"
	"fmt"
	"net/netip"
	"os"
	"strings"

	"github.com/oschwald/maxminddb-golang/v2"
)

// errNoRecords is returned by New for a database that has no record with a
// country or a continent, e.g. an ASN database.
var errNoRecords = errors.New("no record has a country or a continent (want the GeoLite2-Country, GeoLite2-City or DB-IP country layout)")

// mmdb is an open MaxMind-format database with every record already decoded.
type mmdb struct {
	path    string
	reader  *maxminddb.Reader
	records map[uintptr]Location // by data offset; only records with a country or a continent
}

// record is the part of a database record that we read. GeoLite2-Country,
// GeoLite2-City and DB-IP share it; the files BuildMMDB writes add meridian.
type record struct {
	Country struct {
		ISOCode string `maxminddb:"iso_code"`
	} `maxminddb:"country"`
	Continent struct {
		Code string `maxminddb:"code"`
	} `maxminddb:"continent"`
	Meridian struct {
		Region string `maxminddb:"region"`
	} `maxminddb:"meridian"`
}

// openMMDB opens the database at path and decodes each distinct record once,
// so that a lookup is a search tree walk plus a map read.
func openMMDB(path string) (*mmdb, error) {
	// We decode every record once and intern the strings ourselves, so the
	// reader's string cache would only cost memory.
	//
	// The file is read into memory rather than mapped: a snapshot that still
	// holds this Locator after a reload keeps working, the garbage collector
	// frees it when the last one is gone, and replacing the file in place
	// cannot corrupt a running lookup. Country databases are a few MB.
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("mmdb %s: open: %w", path, err)
	}
	if len(data) == 0 {
		return nil, fmt.Errorf("mmdb %s: open: file is empty", path)
	}
	r, err := maxminddb.OpenBytes(data, maxminddb.DisableStringCache())
	if err != nil {
		return nil, fmt.Errorf("mmdb %s: open: %w", path, err)
	}
	db := &mmdb{path: path, reader: r, records: map[uintptr]Location{}}
	if err := db.load(); err != nil {
		_ = r.Close()
		return nil, fmt.Errorf("mmdb %s: %w", path, err)
	}
	return db, nil
}

// load walks the whole search tree, which also checks it: a Lookup can then
// only reach nodes and records that load has read.
func (db *mmdb) load() error {
	seen := map[uintptr]bool{}
	strs := map[string]string{}
	intern := func(s string) string {
		if t, ok := strs[s]; ok {
			return t
		}
		strs[s] = s
		return s
	}
	for res := range db.reader.Networks() {
		if err := res.Err(); err != nil {
			return fmt.Errorf("search tree: %w", err)
		}
		off := res.Offset()
		if seen[off] {
			continue
		}
		seen[off] = true
		var rec record
		if err := res.Decode(&rec); err != nil {
			return fmt.Errorf("record of %s: %w", res.Prefix(), err)
		}
		if rec.Country.ISOCode == "" && rec.Continent.Code == "" {
			continue // e.g. an anonymous proxy with only registered_country: no match
		}
		db.records[off] = Location{
			Region:    intern(rec.Meridian.Region),
			Country:   intern(strings.ToUpper(rec.Country.ISOCode)),
			Continent: intern(strings.ToUpper(rec.Continent.Code)),
			Origin:    OriginMMDB,
		}
	}
	if len(db.records) == 0 {
		return fmt.Errorf("database type %q: %w", db.reader.Metadata.DatabaseType, errNoRecords)
	}
	return nil
}

// lookup returns the record holding addr, which must be unmapped, and the
// length of the database block around addr; ok is false if the block has no
// usable record.
func (db *mmdb) lookup(addr netip.Addr) (loc Location, bits int, ok bool) {
	res := db.reader.Lookup(addr)
	bits = 0
	if p := res.Prefix(); p.IsValid() && p.Addr().Is4() == addr.Is4() {
		// An IPv4 address can get an IPv6 block when the database's IPv4
		// subtree is a single record; the record then covers all of IPv4.
		bits = p.Bits()
	}
	if !res.Found() {
		return Location{}, bits, false
	}
	loc, ok = db.records[res.Offset()]
	return loc, bits, ok
}
