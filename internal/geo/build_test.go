package geo

import (
	"bytes"
	"net/netip"
	"strings"
	"testing"

	"github.com/oschwald/maxminddb-golang/v2"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestBuildMMDBWritesGeoLite2CountryRecords(t *testing.T) {
	var out bytes.Buffer
	n, err := BuildMMDB(strings.NewReader(testCSV), &out)
	require.NoError(t, err)
	assert.Equal(t, 5, n)

	r, err := maxminddb.OpenBytes(out.Bytes())
	require.NoError(t, err)
	defer r.Close()
	require.NoError(t, r.Verify())
	assert.Equal(t, DatabaseType, r.Metadata.DatabaseType)
	assert.EqualValues(t, 6, r.Metadata.IPVersion)
	assert.EqualValues(t, 24, r.Metadata.RecordSize, "a small input fits 24-bit records")

	tests := []struct {
		name string
		addr string
		want map[string]any
	}{
		{
			name: "a line with a region gets a meridian.region field",
			addr: "10.9.9.9",
			want: map[string]any{
				"country":   map[string]any{"iso_code": "DE"},
				"continent": map[string]any{"code": "EU"},
				"meridian":  map[string]any{"region": "eu-central"},
			},
		},
		{
			name: "a line without a region has no meridian field",
			addr: "192.0.2.1",
			want: map[string]any{
				"country":   map[string]any{"iso_code": "US"},
				"continent": map[string]any{"code": "NA"},
			},
		},
		{
			name: "an IPv6 line is in the IPv6 tree",
			addr: "2001:db8:beef::1",
			want: map[string]any{
				"country":   map[string]any{"iso_code": "BR"},
				"continent": map[string]any{"code": "SA"},
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var got map[string]any
			require.NoError(t, r.Lookup(netip.MustParseAddr(tt.addr)).Decode(&got))
			assert.Equal(t, tt.want, got)
		})
	}
}

func TestBuildMMDBInput(t *testing.T) {
	tests := []struct {
		name  string
		csv   string
		addr  string
		want  Location
		count int
	}{
		{
			name:  "a wider network after a narrower one does not hide it",
			csv:   "10.1.0.0/16,US,NA\n10.0.0.0/8,DE,EU\n",
			addr:  "10.1.2.3",
			want:  Location{Country: "US", Continent: "NA", Prefix: pfx("10.1.0.0/16"), Origin: OriginMMDB},
			count: 2,
		},
		{
			name:  "the wider network still answers around the narrower one",
			csv:   "10.1.0.0/16,US,NA\n10.0.0.0/8,DE,EU\n",
			addr:  "10.200.0.1",
			want:  Location{Country: "DE", Continent: "EU", Prefix: pfx("10.128.0.0/9"), Origin: OriginMMDB},
			count: 2,
		},
		{
			name:  "a header, comments, blank lines, spaces and a byte order mark are skipped",
			csv:   "\ufeffcidr, country, continent, region\n\n# comment\n   \n 192.0.2.0/24 , GB , EU , uk \n",
			addr:  "192.0.2.9",
			want:  Location{Region: "uk", Country: "GB", Continent: "EU", Prefix: pfx("192.0.2.0/24"), Origin: OriginMMDB},
			count: 1,
		},
		{
			name:  "an empty fourth column means no region",
			csv:   "192.0.2.0/24,GB,EU,\n",
			addr:  "192.0.2.9",
			want:  Location{Country: "GB", Continent: "EU", Prefix: pfx("192.0.2.0/24"), Origin: OriginMMDB},
			count: 1,
		},
		{
			name:  "an IPv4-mapped network is written as IPv4",
			csv:   "::ffff:192.0.2.0/120,GB,EU\n",
			addr:  "192.0.2.9",
			want:  Location{Country: "GB", Continent: "EU", Prefix: pfx("192.0.2.0/24"), Origin: OriginMMDB},
			count: 1,
		},
		{
			// The writer cannot put a record at the IPv4 root itself, so the
			// scope is /1: narrower than needed, never wrong.
			name:  "an IPv4 default answers IPv4 addresses",
			csv:   "0.0.0.0/0,US,NA\n",
			addr:  "203.0.113.1",
			want:  Location{Country: "US", Continent: "NA", Prefix: pfx("128.0.0.0/1"), Origin: OriginMMDB},
			count: 1,
		},
		{
			name:  "an IPv6 default does not answer IPv4 addresses",
			csv:   "::/0,US,NA\n192.0.2.0/24,GB,EU\n",
			addr:  "203.0.113.1",
			want:  Location{Prefix: pfx("200.0.0.0/5")},
			count: 2,
		},
		{
			// The Teredo alias at 2001::/32 splits the tree near 2001:db8::.
			name:  "an IPv6 default answers IPv6 addresses",
			csv:   "::/0,US,NA\n",
			addr:  "2001:db8::1",
			want:  Location{Country: "US", Continent: "NA", Prefix: pfx("2001:800::/21"), Origin: OriginMMDB},
			count: 1,
		},
		{
			name:  "reserved networks can be written",
			csv:   "127.0.0.0/8,ZZ,AN\n",
			addr:  "127.0.0.1",
			want:  Location{Country: "ZZ", Continent: "AN", Prefix: pfx("127.0.0.0/8"), Origin: OriginMMDB},
			count: 1,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var out bytes.Buffer
			n, err := BuildMMDB(strings.NewReader(tt.csv), &out)
			require.NoError(t, err)
			assert.Equal(t, tt.count, n)
			path := writeFile(t, out.Bytes())
			l := newLocator(t, nil, path)
			got, ok := l.Lookup(netip.MustParseAddr(tt.addr))
			assert.Equal(t, tt.want.Origin == OriginMMDB, ok)
			assert.Equal(t, tt.want, got)
		})
	}
}

func TestBuildMMDBRejectsBadLines(t *testing.T) {
	tests := []struct {
		name    string
		csv     string
		wantErr string
	}{
		{
			name:    "a bad CIDR names its line and column",
			csv:     "network,country,continent\n10.0.0.0/8,DE,EU\n10.0.0/8,DE,EU\n",
			wantErr: `line 3: cidr "10.0.0/8" is not allowed (allowed: an IPv4 or IPv6 network such as 192.0.2.0/24 or 2001:db8::/32): netip.ParsePrefix("10.0.0/8"): ParseAddr("10.0.0"): IPv4 address too short`,
		},
		{
			name:    "a CIDR with host bits names the network meant",
			csv:     "10.1.2.3/8,DE,EU\n",
			wantErr: `line 1: cidr "10.1.2.3/8" has host bits set (allowed: the network address, here 10.0.0.0/8)`,
		},
		{
			name:    "a lower-case country is refused",
			csv:     "# c\n10.0.0.0/8,de,EU\n",
			wantErr: `line 2: country "de" is not allowed (allowed: two upper-case letters, an ISO 3166-1 alpha-2 code such as DE)`,
		},
		{
			name:    "a missing country is refused",
			csv:     "10.0.0.0/8,,EU\n",
			wantErr: `line 1: country "" is not allowed (allowed: two upper-case letters, an ISO 3166-1 alpha-2 code such as DE)`,
		},
		{
			name:    "an unknown continent is refused with the allowed codes",
			csv:     "cidr,country,continent\n10.0.0.0/8,DE,EU\n192.0.2.0/24,US,XX\n",
			wantErr: `line 3: continent "XX" is not allowed (allowed: AF, AN, AS, EU, NA, OC, SA)`,
		},
		{
			name:    "too few columns are refused",
			csv:     "10.0.0.0/8,DE\n",
			wantErr: `line 1: 2 columns (allowed: 3 or 4, cidr,country,continent[,region])`,
		},
		{
			name:    "too many columns are refused",
			csv:     "10.0.0.0/8,DE,EU,eu,extra\n",
			wantErr: `line 1: 5 columns (allowed: 3 or 4, cidr,country,continent[,region])`,
		},
		{
			name:    "a header after the first line is a bad CIDR",
			csv:     "10.0.0.0/8,DE,EU\ncidr,country,continent\n",
			wantErr: `line 2: cidr "cidr" is not allowed (allowed: an IPv4 or IPv6 network such as 192.0.2.0/24 or 2001:db8::/32): netip.ParsePrefix("cidr"): no '/'`,
		},
		{
			name:    "a network listed twice names both lines",
			csv:     "10.0.0.0/8,DE,EU\n192.0.2.0/24,US,NA\n::ffff:10.0.0.0/104,FR,EU\n",
			wantErr: `line 3: cidr 10.0.0.0/8 is already on line 1`,
		},
		{
			name:    "a network inside an IPv4 alias is refused",
			csv:     "2002:c000:200::/40,DE,EU\n",
			wantErr: `line 1: cidr 2002:c000:200::/40 is inside 2002::/16, which a MaxMind DB aliases to IPv4 (allowed: the IPv4 network instead)`,
		},
		{
			name:    "a network inside ::/96 is refused",
			csv:     "::1/128,DE,EU\n",
			wantErr: `line 1: cidr "::1/128" is inside ::/96, where a MaxMind DB keeps IPv4 (allowed: the IPv4 network instead)`,
		},
		{
			name:    "broken quoting is reported with its line",
			csv:     "10.0.0.0/8,DE,EU\n\"192.0.2.0/24,US,NA\n",
			wantErr: `csv: parse error on line 2, column 21: extraneous or missing " in quoted-field`,
		},
		{
			name:    "an input without networks is refused",
			csv:     "network,country,continent\n# nothing yet\n",
			wantErr: `no networks in the input`,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var out bytes.Buffer
			n, err := BuildMMDB(strings.NewReader(tt.csv), &out)
			require.EqualError(t, err, tt.wantErr)
			assert.Zero(t, n)
			assert.Zero(t, out.Len(), "nothing is written on error")
		})
	}
}

func TestRecordSizeGrowsWithTheInput(t *testing.T) {
	small := []row{{prefix: pfx("10.0.0.0/8")}}
	assert.Equal(t, 24, recordSize(small))
	large := make([]row, 100_000)
	for i := range large {
		large[i].prefix = pfx("2001:db8::/48")
	}
	assert.Equal(t, 28, recordSize(large))
}

func TestAroundCoversAllButTheInnerNetwork(t *testing.T) {
	got := around(pfx("::/93"), pfx("::/96"))
	assert.Equal(t, []netip.Prefix{pfx("::4:0:0/94"), pfx("::2:0:0/95"), pfx("::1:0:0/96")}, got)
}

// FuzzBuildMMDB checks that BuildMMDB never panics and that whatever it
// accepts, New reads back with the most specific line winning at the first
// and the last address of every line's network, within a correct scope.
func FuzzBuildMMDB(f *testing.F) {
	f.Add(testCSV)
	f.Add("::/0,US,NA\n0.0.0.0/0,DE,EU,x\n")
	f.Add("10.0.0.0/8,DE,EU\n10.0.0.0/8,DE,EU\n")
	f.Add("11.0.0.0/8,DE,EU\n10.0.0.0/7,DE,EU")
	f.Add("::/80,AA,SA")
	f.Add("10.1.0.0/16,US,NA,b\n10.0.0.0/8,DE,EU,a\n10.1.2.0/24,JP,AS\n")
	f.Add("2001:db8::/32,FR,EU\n2000::/3,US,NA\n\"192.0.2.0/24\",\"DE\",\"EU\",\"a,b\"\n")
	f.Fuzz(func(t *testing.T, csv string) {
		var out bytes.Buffer
		n, err := BuildMMDB(strings.NewReader(csv), &out)
		if err != nil {
			return
		}
		rows, err := readRows(strings.NewReader(csv))
		require.NoError(t, err)
		require.Len(t, rows, n)
		l := newLocator(t, nil, writeFile(t, out.Bytes()))
		for _, r := range rows {
			for _, a := range []netip.Addr{r.prefix.Addr(), lastAddr(r.prefix)} {
				if inIPv4Tree(a) {
					continue // answered from the IPv4 tree, by design
				}
				want := r
				for _, o := range rows {
					if o.prefix.Contains(a) && o.prefix.Bits() > want.prefix.Bits() {
						want = o
					}
				}
				got, ok := l.Lookup(a)
				require.True(t, ok, "%s of line %d", a, r.line)
				require.Equal(t, Location{Region: want.region, Country: want.country, Continent: want.continent, Prefix: got.Prefix, Origin: OriginMMDB}, got, "%s of line %d", a, r.line)
				// The writer merges neighbours with equal records, so the
				// scope may be wider than the line; it must not hold a more
				// specific line with another answer.
				require.True(t, got.Prefix.Contains(a), "scope %s of %s", got.Prefix, a)
				for _, o := range rows {
					if o.prefix.Overlaps(got.Prefix) && o.prefix.Bits() > got.Prefix.Bits() {
						require.Equal(t, want.value(), o.value(), "scope %s of %s holds line %d", got.Prefix, a, o.line)
					}
				}
			}
		}
	})
}

// lastAddr returns the highest address of p.
func lastAddr(p netip.Prefix) netip.Addr {
	b := p.Addr().AsSlice()
	for i := p.Bits(); i < len(b)*8; i++ {
		b[i/8] |= 0x80 >> (i % 8)
	}
	a, _ := netip.AddrFromSlice(b)
	return a
}

// inIPv4Tree reports whether an IPv6 address is looked up in the IPv4 tree
// of a database that BuildMMDB wrote.
func inIPv4Tree(a netip.Addr) bool {
	for _, p := range []netip.Prefix{v4Compatible, pfx("::ffff:0:0/96"), pfx("2001::/32"), pfx("2002::/16")} {
		if a.Is6() && p.Contains(a) {
			return true
		}
	}
	return false
}
