package geo

import (
	"fmt"
	"net/netip"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// lookupCases cover every path of Lookup: custom networks of both families,
// mapped addresses, database hits of both families and misses.
var lookupCases = []struct {
	name string
	addr netip.Addr
	want Origin
}{
	{"custom IPv4", addr("10.1.9.9"), OriginNetworks},
	{"custom IPv6", addr("2001:db8:1::53"), OriginNetworks},
	{"custom via mapped", addr("::ffff:10.1.9.9"), OriginNetworks},
	{"mmdb IPv4", addr("198.51.100.7"), OriginMMDB},
	{"mmdb IPv6", addr("2400:cb00::1"), OriginMMDB},
	{"mmdb 6to4", addr("2002:c633:6407::1"), OriginMMDB},
	{"miss IPv4", addr("203.0.113.1"), OriginNone},
	{"miss IPv6", addr("2a00::1"), OriginNone},
}

// lookupLocator holds testNetworks and testCSV plus an IPv6 network that
// testNetworks does not cover.
func lookupLocator(t testing.TB) *Locator {
	return newLocator(t, testNetworks, buildDB(t, testCSV+"2400:cb00::/32,AU,OC\n"))
}

func TestLookupAllocatesNothing(t *testing.T) {
	l := lookupLocator(t)
	for _, c := range lookupCases {
		t.Run("a lookup of "+c.name+" allocates nothing", func(t *testing.T) {
			loc, ok := l.Lookup(c.addr)
			require.Equal(t, c.want, loc.Origin, "the case takes the path it names")
			require.Equal(t, c.want != OriginNone, ok)
			allocs := testing.AllocsPerRun(1000, func() { l.Lookup(c.addr) })
			assert.Zero(t, allocs)
		})
	}
}

// BenchmarkLookup measures Lookup on the test data and on a database of
// 100,000 IPv4 and 20,000 IPv6 networks.
func BenchmarkLookup(b *testing.B) {
	small := lookupLocator(b)
	for _, c := range lookupCases {
		b.Run(strings.ReplaceAll(c.name, " ", "_"), func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				small.Lookup(c.addr)
			}
		})
	}

	var csv strings.Builder
	for i := range 100_000 {
		fmt.Fprintf(&csv, "%d.%d.%d.0/24,DE,EU,r%d\n", 1+i>>16, i>>8&0xff, i&0xff, i%50)
	}
	for i := range 20_000 {
		fmt.Fprintf(&csv, "2a00:%x::/32,FR,EU\n", i)
	}
	large := newLocator(b, testNetworks, buildDB(b, csv.String()))
	addrs := make([]netip.Addr, 0, 1024)
	for i := range 1024 {
		addrs = append(addrs, netip.AddrFrom4([4]byte{byte(1 + i%3), byte(i * 7), byte(i * 13), 1}))
	}
	b.Run("large_mmdb_IPv4", func(b *testing.B) {
		b.ReportAllocs()
		i := 0
		for b.Loop() {
			large.Lookup(addrs[i&1023])
			i++
		}
	})
	b.Run("large_mmdb_IPv4_parallel", func(b *testing.B) {
		b.ReportAllocs()
		b.RunParallel(func(pb *testing.PB) {
			i := 0
			for pb.Next() {
				large.Lookup(addrs[i&1023])
				i++
			}
		})
	})
}
