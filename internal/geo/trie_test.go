package geo

import (
	"fmt"
	"math/rand/v2"
	"net/netip"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestLookupAgreesWithANaiveSearch compares the trie with a linear search
// over random nested networks: the answer is the longest network holding the
// address, and the scope holds no more specific network (so every address in
// it gets the same answer) and is the network itself when nothing is nested.
func TestLookupAgreesWithANaiveSearch(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	families := []struct {
		name             string
		base             netip.Prefix // networks lie in base
		within           netip.Prefix // addresses lie in within, so some miss
		minBits, maxBits int
	}{
		{"IPv4", pfx("10.0.0.0/8"), pfx("8.0.0.0/6"), 8, 28},
		{"IPv6", pfx("2001:db8::/32"), pfx("2001:d00::/22"), 32, 64},
	}
	for _, fam := range families {
		t.Run("random nested "+fam.name+" networks", func(t *testing.T) {
			var networks []Network
			seen := map[netip.Prefix]bool{}
			for i := 0; len(networks) < 200; i++ {
				p, err := randomAddr(rng, fam.base).Prefix(fam.minBits + rng.IntN(fam.maxBits-fam.minBits+1))
				require.NoError(t, err)
				if !seen[p] {
					seen[p] = true
					networks = append(networks, Network{Prefix: p, Region: fmt.Sprint(i)})
				}
			}
			l := newLocator(t, networks, "")
			for range 5000 {
				a := randomAddr(rng, fam.within)
				got, ok := l.Lookup(a)

				var want Network
				for _, n := range networks {
					if n.Prefix.Contains(a) && n.Prefix.Bits() > want.Prefix.Bits() {
						want = n
					}
				}
				require.Equal(t, want.Prefix.IsValid(), ok, "%s", a)
				require.Equal(t, want.Region, got.Region, "%s", a)
				require.True(t, got.Prefix.Contains(a), "scope %s of %s", got.Prefix, a)
				require.GreaterOrEqual(t, got.Prefix.Bits(), want.Prefix.Bits(), "%s", a)
				nested := false
				for _, n := range networks {
					require.False(t, n.Prefix.Bits() > got.Prefix.Bits() && n.Prefix.Overlaps(got.Prefix),
						"scope %s of %s holds %s", got.Prefix, a, n.Prefix)
					nested = nested || (ok && n.Prefix.Bits() > want.Prefix.Bits() && n.Prefix.Overlaps(want.Prefix))
				}
				if ok && !nested {
					require.Equal(t, want.Prefix, got.Prefix, "%s", a)
				}
			}
		})
	}
}

// randomAddr returns a random address inside p.
func randomAddr(rng *rand.Rand, p netip.Prefix) netip.Addr {
	b := p.Addr().AsSlice()
	for i := p.Bits(); i < len(b)*8; i++ {
		if rng.IntN(2) == 1 {
			b[i/8] |= 0x80 >> (i % 8)
		}
	}
	a, _ := netip.AddrFromSlice(b)
	return a
}
