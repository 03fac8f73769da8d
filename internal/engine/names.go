package engine

import "maps"

// nameTable is a zone's owner names. An incremental compile (see
// reuser.shareNames) does not copy the previous snapshot's table: it
// shares its base, which no compile modifies once published, and puts the
// names whose node differs from the base's in over, a small map of its own
// (a copy of the previous over plus this compile's changes). When over
// grows past flattenAt of the base, the next compile merges the two into
// a new base. A compile from scratch builds base alone (over nil). A name
// removed from the base is a nil node in over.
type nameTable struct {
	base map[string]*node
	over map[string]*node
}

// flattenAt is the size of over from which the next incremental compile
// makes a new base: a copy of the base every so many changes, so that
// over stays small (it is copied on every compile) and the nodes it
// shadows in the base do not pile up.
func flattenAt(base int) int { return max(flattenMin, base/64) }

// flattenMin is the least flattenAt (a variable for the tests).
var flattenMin = 256

func newNameTable() nameTable { return nameTable{base: map[string]*node{}} }

// get returns the node of the canonical name, nil when there is none (or
// it was removed: a nil node in over).
func (t *nameTable) get(name string) *node {
	if len(t.over) > 0 {
		if n, ok := t.over[name]; ok {
			return n
		}
	}
	return t.base[name]
}

// getBytes is get of a name held in a buffer (no string is allocated).
func (t *nameTable) getBytes(name []byte) *node {
	if len(t.over) > 0 {
		if n, ok := t.over[string(name)]; ok {
			return n
		}
	}
	return t.base[string(name)]
}

// all yields every name and its node once.
func (t *nameTable) all(yield func(string, *node) bool) {
	for name, n := range t.over {
		if n == nil {
			continue // removed from the base
		}
		if !yield(name, n) {
			return
		}
	}
	for name, n := range t.base {
		if _, ok := t.over[name]; ok {
			continue
		}
		if !yield(name, n) {
			return
		}
	}
}

// setScratch puts n at name in a table being built from scratch.
func (t *nameTable) setScratch(name string, n *node) { t.base[name] = n }

// setOver puts n at name in a table that follows a previous one: in over,
// never in the shared base. A nil n removes the name.
func (t *nameTable) setOver(name string, n *node) { t.over[name] = n }

// following is the table a compile that follows the snapshot of t starts
// from: t's base shared and a copy of its over, or, when t's over is
// large, a new base of the two merged. t is only read.
func (t *nameTable) following() nameTable {
	if len(t.over) >= flattenAt(len(t.base)) {
		base := maps.Clone(t.base)
		for name, n := range t.over {
			if n == nil {
				delete(base, name)
			} else {
				base[name] = n
			}
		}
		return nameTable{base: base, over: map[string]*node{}}
	}
	over := make(map[string]*node, len(t.over)+1)
	maps.Copy(over, t.over)
	return nameTable{base: t.base, over: over}
}
