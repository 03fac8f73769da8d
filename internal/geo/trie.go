package geo

import "net/netip"

// trie is a binary trie over the custom networks of one address family.
// Nodes live in one slice (node 0 is the root) so that a walk touches few
// cache lines and the garbage collector sees no pointers.
type trie struct {
	nodes []trieNode
	locs  []Location // the networks' answers; trieNode.loc indexes it
}

type trieNode struct {
	child [2]uint32 // index of the child for bit 0 and bit 1; 0 = none (the root is nobody's child)
	loc   int32     // index into trie.locs, or -1 if no network ends here
}

func newTrie() trie {
	return trie{nodes: []trieNode{{loc: -1}}}
}

// insert adds p, which must be masked and not present yet, with its answer.
func (t *trie) insert(p netip.Prefix, loc Location) {
	key := keyOf(p.Addr())
	n := uint32(0)
	for i := range p.Bits() {
		b := bitAt(&key, i)
		next := t.nodes[n].child[b]
		if next == 0 {
			next = uint32(len(t.nodes))
			t.nodes = append(t.nodes, trieNode{loc: -1})
			t.nodes[n].child[b] = next
		}
		n = next
	}
	t.nodes[n].loc = int32(len(t.locs))
	t.locs = append(t.locs, loc)
}

// lookup walks key, an address of the trie's family, as deep as the trie
// goes. It returns the index of the longest network holding key (-1 if none)
// and scope, the length of the block around key in which every address walks
// the same path and so gets the same answer. scope is never shorter than the
// network found.
func (t *trie) lookup(key *[16]byte, maxBits int) (loc int32, scope int) {
	nodes := t.nodes
	loc = -1
	n := uint32(0)
	for depth := 0; ; depth++ {
		node := &nodes[n]
		if node.loc >= 0 {
			loc = node.loc
		}
		if depth == maxBits {
			return loc, depth
		}
		b := bitAt(key, depth)
		next := node.child[b]
		if next == 0 {
			if node.child[1-b] == 0 {
				// A leaf: nothing more specific lies below this node.
				return loc, depth
			}
			// Something more specific lies on the other side; addresses
			// that share one more bit with key avoid it.
			return loc, depth + 1
		}
		n = next
	}
}

// keyOf returns the address bytes, left-aligned: IPv4 addresses fill the
// first four bytes.
func keyOf(a netip.Addr) [16]byte {
	if a.Is4() {
		b4 := a.As4()
		return [16]byte{b4[0], b4[1], b4[2], b4[3]}
	}
	return a.As16()
}

// bitAt returns bit i of key, counting from the most significant.
func bitAt(key *[16]byte, i int) uint32 {
	return uint32(key[i>>3]>>(7-uint(i&7))) & 1
}
