package geo

import (
	"fmt"
	"net/netip"
)

// PrefixSet is an immutable set of networks with a membership test that
// takes no lock and allocates nothing (the config's geo.ecs_trusted: the
// sources whose EDNS Client Subnet is honoured). IPv4-mapped addresses and
// networks count as IPv4, as in [Locator.Lookup].
type PrefixSet struct {
	v4, v6 trie
	n      int
}

// NewPrefixSet returns the set of prefixes. A prefix with host bits set or
// not valid is an error naming it; duplicates count once.
func NewPrefixSet(prefixes []netip.Prefix) (*PrefixSet, error) {
	s := &PrefixSet{v4: newTrie(), v6: newTrie()}
	seen := make(map[netip.Prefix]bool, len(prefixes))
	for i, p := range prefixes {
		p, err := normalize(p)
		if err != nil {
			return nil, fmt.Errorf("prefix %d: %w", i, err)
		}
		if seen[p] {
			continue
		}
		seen[p] = true
		t := &s.v6
		if p.Addr().Is4() {
			t = &s.v4
		}
		t.insert(p, Location{})
		s.n++
	}
	return s, nil
}

// Contains reports whether addr lies in one of the set's networks. A nil
// set contains nothing.
func (s *PrefixSet) Contains(addr netip.Addr) bool {
	if s == nil || !addr.IsValid() {
		return false
	}
	addr = addr.Unmap()
	t, maxBits := &s.v6, 128
	if addr.Is4() {
		t, maxBits = &s.v4, 32
	}
	key := keyOf(addr)
	i, _ := t.lookup(&key, maxBits)
	return i >= 0
}

// Len is the number of distinct networks in the set.
func (s *PrefixSet) Len() int {
	if s == nil {
		return 0
	}
	return s.n
}
