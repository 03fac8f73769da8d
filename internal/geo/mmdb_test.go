package geo

import (
	"io/fs"
	"net/netip"
	"os"
	"path/filepath"
	"testing"

	"github.com/maxmind/mmdbwriter/mmdbtype"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

const testCSV = `network,country,continent,region
# private and documentation networks, as tests use them
10.0.0.0/8,DE,EU,eu-central
192.0.2.0/24,US,NA
198.51.100.0/24,JP,AS,ap-northeast
2001:db8::/32,FR,EU,eu-west
2001:db8:beef::/48,BR,SA
`

func TestLookupMMDB(t *testing.T) {
	path := buildDB(t, testCSV)
	l := newLocator(t, []Network{{Prefix: pfx("10.1.0.0/16"), Region: "custom"}}, path)
	tests := []struct {
		name   string
		addr   netip.Addr
		want   Location
		wantOK bool
	}{
		{
			name:   "a database record gives country, continent and region",
			addr:   addr("198.51.100.7"),
			want:   Location{Region: "ap-northeast", Country: "JP", Continent: "AS", Prefix: pfx("198.51.100.0/24"), Origin: OriginMMDB},
			wantOK: true,
		},
		{
			name:   "a record without region has an empty region",
			addr:   addr("192.0.2.1"),
			want:   Location{Country: "US", Continent: "NA", Prefix: pfx("192.0.2.0/24"), Origin: OriginMMDB},
			wantOK: true,
		},
		{
			name:   "a custom network wins over the database",
			addr:   addr("10.1.2.3"),
			want:   Location{Region: "custom", Prefix: pfx("10.1.0.0/16"), Origin: OriginNetworks},
			wantOK: true,
		},
		{
			name:   "the database block is narrowed around a custom network inside it",
			addr:   addr("10.2.3.4"),
			want:   Location{Region: "eu-central", Country: "DE", Continent: "EU", Prefix: pfx("10.2.0.0/15"), Origin: OriginMMDB},
			wantOK: true,
		},
		{
			name:   "an IPv4-mapped address finds the IPv4 record with an IPv4 scope",
			addr:   addr("::ffff:198.51.100.7"),
			want:   Location{Region: "ap-northeast", Country: "JP", Continent: "AS", Prefix: pfx("198.51.100.0/24"), Origin: OriginMMDB},
			wantOK: true,
		},
		{
			name:   "an IPv6 address finds the IPv6 record",
			addr:   addr("2001:db8:1::1"),
			want:   Location{Region: "eu-west", Country: "FR", Continent: "EU", Prefix: pfx("2001:db8::/33"), Origin: OriginMMDB},
			wantOK: true,
		},
		{
			name:   "the more specific IPv6 record wins",
			addr:   addr("2001:db8:beef::1"),
			want:   Location{Country: "BR", Continent: "SA", Prefix: pfx("2001:db8:beef::/48"), Origin: OriginMMDB},
			wantOK: true,
		},
		{
			name:   "a 6to4 address finds the record of its embedded IPv4 address",
			addr:   addr("2002:c633:6407::1"), // 198.51.100.7
			want:   Location{Region: "ap-northeast", Country: "JP", Continent: "AS", Prefix: pfx("2002:c633:6400::/40"), Origin: OriginMMDB},
			wantOK: true,
		},
		{
			name:   "an address in no network misses with the empty block around it",
			addr:   addr("203.0.113.1"),
			want:   Location{Prefix: pfx("200.0.0.0/5")},
			wantOK: false,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, ok := l.Lookup(tt.addr)
			assert.Equal(t, tt.wantOK, ok)
			assert.Equal(t, tt.want, got)
		})
	}
}

func TestLookupMMDBLayouts(t *testing.T) {
	names := func(en string) mmdbtype.Map {
		return mmdbtype.Map{"en": mmdbtype.String(en), "de": mmdbtype.String(en)}
	}
	tests := []struct {
		name   string
		record mmdbtype.Map
		want   Location
		wantOK bool
	}{
		{
			name: "a GeoLite2-City record is read for its country and continent",
			record: mmdbtype.Map{
				"city":      mmdbtype.Map{"geoname_id": mmdbtype.Uint32(2950159), "names": names("Berlin")},
				"continent": mmdbtype.Map{"code": mmdbtype.String("EU"), "geoname_id": mmdbtype.Uint32(6255148), "names": names("Europe")},
				"country":   mmdbtype.Map{"geoname_id": mmdbtype.Uint32(2921044), "iso_code": mmdbtype.String("DE"), "names": names("Germany")},
				"location":  mmdbtype.Map{"latitude": mmdbtype.Float64(52.52), "longitude": mmdbtype.Float64(13.4), "time_zone": mmdbtype.String("Europe/Berlin")},
				"subdivisions": mmdbtype.Slice{
					mmdbtype.Map{"iso_code": mmdbtype.String("BE"), "names": names("Land Berlin")},
				},
				"registered_country": mmdbtype.Map{"iso_code": mmdbtype.String("DE")},
			},
			want:   Location{Country: "DE", Continent: "EU", Prefix: pfx("192.0.2.0/24"), Origin: OriginMMDB},
			wantOK: true,
		},
		{
			name: "a DB-IP country record is read for its country and continent",
			record: mmdbtype.Map{
				"continent": mmdbtype.Map{"code": mmdbtype.String("OC"), "geoname_id": mmdbtype.Uint32(6255151), "names": names("Oceania")},
				"country":   mmdbtype.Map{"geoname_id": mmdbtype.Uint32(2077456), "iso_code": mmdbtype.String("AU"), "is_in_european_union": mmdbtype.Bool(false), "names": names("Australia")},
			},
			want:   Location{Country: "AU", Continent: "OC", Prefix: pfx("192.0.2.0/24"), Origin: OriginMMDB},
			wantOK: true,
		},
		{
			name: "a record with only a continent matches",
			record: mmdbtype.Map{
				"continent": mmdbtype.Map{"code": mmdbtype.String("AF")},
			},
			want:   Location{Continent: "AF", Prefix: pfx("192.0.2.0/24"), Origin: OriginMMDB},
			wantOK: true,
		},
		{
			name: "lower-case codes are upper-cased",
			record: mmdbtype.Map{
				"country":   mmdbtype.Map{"iso_code": mmdbtype.String("nz")},
				"continent": mmdbtype.Map{"code": mmdbtype.String("oc")},
			},
			want:   Location{Country: "NZ", Continent: "OC", Prefix: pfx("192.0.2.0/24"), Origin: OriginMMDB},
			wantOK: true,
		},
		{
			name: "a record with neither country nor continent counts as no match",
			record: mmdbtype.Map{
				"registered_country": mmdbtype.Map{"iso_code": mmdbtype.String("US")},
				"traits":             mmdbtype.Map{"is_anonymous_proxy": mmdbtype.Bool(true)},
			},
			want: Location{Prefix: pfx("192.0.2.0/24")},
		},
	}
	// Every database also holds a usable record elsewhere, or New would
	// refuse it as having none.
	usable := rawRecord{cidr: "198.51.100.0/24", value: mmdbtype.Map{"country": mmdbtype.Map{"iso_code": mmdbtype.String("CA")}}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := writeDB(t, "GeoLite2-City", rawRecord{cidr: "192.0.2.0/24", value: tt.record}, usable)
			l := newLocator(t, nil, path)
			got, ok := l.Lookup(addr("192.0.2.1"))
			assert.Equal(t, tt.wantOK, ok)
			assert.Equal(t, tt.want, got)
		})
	}
}

func TestNewRejectsBadMMDBFiles(t *testing.T) {
	good, err := os.ReadFile(buildDB(t, testCSV))
	require.NoError(t, err)
	dir := t.TempDir()
	file := func(name string, data []byte) string {
		p := filepath.Join(dir, name)
		require.NoError(t, os.WriteFile(p, data, 0o600))
		return p
	}
	// Overwrite the search tree (it starts the file) with pointers past the
	// end of the data section.
	badTree := append([]byte(nil), good...)
	for i := range 700 {
		badTree[i] = 0xff
	}
	tests := []struct {
		name    string
		path    string
		wantErr []string
		wantIs  error
	}{
		{
			name:    "a missing file is reported with its name",
			path:    filepath.Join(dir, "missing.mmdb"),
			wantErr: []string{"mmdb " + filepath.Join(dir, "missing.mmdb") + ": open:", "no such file"},
			wantIs:  fs.ErrNotExist,
		},
		{
			name:    "an empty file is refused",
			path:    file("empty.mmdb", nil),
			wantErr: []string{"empty.mmdb: open: file is empty"},
		},
		{
			name:    "a file that is no database is refused",
			path:    file("text.mmdb", []byte("10.0.0.0/8,DE,EU\n")),
			wantErr: []string{"text.mmdb: open:", "invalid MaxMind DB file"},
		},
		{
			name:    "a truncated database is refused",
			path:    file("truncated.mmdb", good[:len(good)/2]),
			wantErr: []string{"truncated.mmdb: open:", "invalid MaxMind DB file"},
		},
		{
			name:    "a database with a broken search tree is refused",
			path:    file("badtree.mmdb", badTree),
			wantErr: []string{"badtree.mmdb: search tree:", "corrupt"},
		},
		{
			name:    "a directory is refused",
			path:    dir,
			wantErr: []string{"mmdb " + dir + ": open:"},
		},
		{
			name: "a database without countries or continents is refused",
			path: writeDB(t, "GeoLite2-ASN", rawRecord{cidr: "192.0.2.0/24", value: mmdbtype.Map{
				"autonomous_system_number":       mmdbtype.Uint32(64496),
				"autonomous_system_organization": mmdbtype.String("Example"),
			}}),
			wantErr: []string{`GeoLite2-ASN.mmdb: database type "GeoLite2-ASN": no record has a country or a continent`},
			wantIs:  errNoRecords,
		},
		{
			name:    "a database whose country is not a map is refused",
			path:    writeDB(t, "Odd", rawRecord{cidr: "192.0.2.0/24", value: mmdbtype.Map{"country": mmdbtype.String("DE")}}),
			wantErr: []string{"Odd.mmdb: record of 192.0.2.0/24:"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			l, err := New(nil, tt.path)
			require.Error(t, err)
			assert.Nil(t, l)
			for _, want := range tt.wantErr {
				assert.Contains(t, err.Error(), want)
			}
			if tt.wantIs != nil {
				assert.ErrorIs(t, err, tt.wantIs)
			}
		})
	}
}

func TestLookupAfterCloseUsesCustomNetworksOnly(t *testing.T) {
	l, err := New([]Network{{Prefix: pfx("10.1.0.0/16"), Region: "custom"}}, buildDB(t, testCSV))
	require.NoError(t, err)
	require.NoError(t, l.Close())
	require.NoError(t, l.Close(), "a second Close is harmless")

	loc, ok := l.Lookup(addr("10.1.2.3"))
	assert.True(t, ok)
	assert.Equal(t, "custom", loc.Region)
	_, ok = l.Lookup(addr("198.51.100.7"))
	assert.False(t, ok)
}
