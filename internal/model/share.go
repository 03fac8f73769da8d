package model

import "reflect"

// ShareUnchanged makes each service of next that is equal (reflect.DeepEqual)
// to the service of the same name in prev the very value of prev: the same
// endpoint slice, the same pointers and strings. It returns how many it
// shared. Both must be normalized and, once shared, never modified (a
// desired state is not modified once it is served).
//
// A reload of a file that changed a few services then keeps the memory of
// the others, which the previous state already holds, instead of a second
// copy of them, and the engine shares their compiled form with the previous
// snapshot (it recognises a service by the identity of its slices and
// pointers). Without this every reload of a large file allocated the whole
// model and snapshot again while the previous ones were still live, and the
// new long-lived objects, placed in the free slots of the old ones' spans,
// kept those spans in use after the old state was freed: the RSS grew by
// about the size of the state on the first reload and stayed there.
func ShareUnchanged(next, prev *Desired) int {
	if next == nil || prev == nil || len(prev.Services) == 0 {
		return 0
	}
	var byName map[string]int // prev by name, when the positions differ
	shared := 0
	for i := range next.Services {
		s := &next.Services[i]
		j := i
		if j >= len(prev.Services) || prev.Services[j].Name != s.Name {
			if byName == nil {
				byName = make(map[string]int, len(prev.Services))
				for k := range prev.Services {
					byName[prev.Services[k].Name] = k
				}
			}
			var ok bool
			if j, ok = byName[s.Name]; !ok {
				continue
			}
		}
		if reflect.DeepEqual(s, &prev.Services[j]) {
			*s = prev.Services[j]
			shared++
		}
	}
	return shared
}
