package latency

import "time"

// Candidate is one endpoint of a service as Select sees it for one region.
type Candidate struct {
	// Rankable: available (not down, not drained) and competing: weight > 0,
	// or any weight when no weighted endpoint is available.
	Rankable bool
	Measured bool          // the region has an RTT for it
	RTT      time.Duration // that RTT (when Measured)
	// Elsewhere: another region has an RTT for it and this one has none
	// (this region's probers do not reach it).
	Elsewhere bool
}

// Selection is the outcome of Select.
type Selection struct {
	In    []bool        // per candidate: answers the region's clients
	Best  time.Duration // the smallest RTT among the rankable measured candidates (0: none measured)
	Bound time.Duration // best × (1 + tolerance): the largest RTT in tolerance (0: none measured)
}

// Select applies rule 8 of the package doc to the candidates of one region:
// the rankable endpoints whose RTT is within tolerance (a fraction, 0.2 for
// 20 %) of the best are in, and so are rankable endpoints no region has
// measured yet; when no rankable candidate is measured from the region,
// every rankable one is in.
func Select(cs []Candidate, tolerance float64) Selection {
	sel := Selection{In: make([]bool, len(cs))}
	for _, c := range cs {
		if c.Rankable && c.Measured && (sel.Best == 0 || c.RTT < sel.Best) {
			sel.Best = c.RTT
		}
	}
	if sel.Best == 0 {
		for i, c := range cs {
			sel.In[i] = c.Rankable
		}
		return sel
	}
	bound := float64(sel.Best) * (1 + tolerance)
	sel.Bound = time.Duration(bound)
	for i, c := range cs {
		switch {
		case !c.Rankable:
		case c.Measured:
			sel.In[i] = float64(c.RTT) <= bound
		default:
			sel.In[i] = !c.Elsewhere
		}
	}
	return sel
}
