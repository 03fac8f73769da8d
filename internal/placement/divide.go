package placement

import (
	"errors"
	"fmt"
	"math/bits"
	"sort"
	"strings"
)

// Share is one cluster's claim on a divided workload.
type Share struct {
	Cluster string
	Weight  int // >= 0; 0 = gets only Min
	Min     int // >= 0
	Max     int // 0 = no maximum; else >= Min
}

// Divide splits total replicas among shares with the Webster/Sainte-Laguë
// divisor method: every cluster starts at Min, then each remaining replica goes
// to the cluster (below its Max, Weight > 0) with the highest quotient
// Weight/(2*s+1), s = replicas it holds so far. Ties go to the SMALLER weight
// (so 10 replicas at 3:1 give 7/3, not 8/2), then to the cluster name that
// sorts first. Returns the allocation for every share (0 included) and how many
// replicas could not be placed (all Max reached, or no positive weight).
// Errors: total < 0, negative weight/min/max, Max < Min (when Max != 0), duplicate
// cluster, sum of Min > total (message names the clusters and numbers).
// An empty cluster name is an error too.
func Divide(total int, shares []Share) (alloc map[string]int, unplaced int, err error) {
	sumMin, err := checkShares(total, shares)
	if err != nil {
		return nil, 0, err
	}
	// Work on a copy sorted by name so nothing depends on the input order.
	st := make([]Share, len(shares))
	copy(st, shares)
	sort.Slice(st, func(i, j int) bool { return st[i].Cluster < st[j].Cluster })
	held := make([]int, len(st))
	for i, s := range st {
		held[i] = s.Min
	}
	remaining := total - sumMin
	for ; remaining > 0; remaining-- {
		best := nextShare(st, held)
		if best < 0 {
			break
		}
		held[best]++
	}
	alloc = make(map[string]int, len(st))
	for i, s := range st {
		alloc[s.Cluster] = held[i]
	}
	return alloc, remaining, nil
}

// checkShares checks the total and every share (see Divide's errors) and
// returns the sum of the minimums, which must not exceed total.
func checkShares(total int, shares []Share) (sumMin int, err error) {
	if total < 0 {
		return 0, fmt.Errorf("placement: total replicas %d is negative", total)
	}
	seen := make(map[string]bool, len(shares))
	for _, s := range shares {
		switch {
		case s.Cluster == "":
			return 0, errors.New("placement: share with an empty cluster name")
		case seen[s.Cluster]:
			return 0, fmt.Errorf("placement: cluster %q has more than one share", s.Cluster)
		case s.Weight < 0:
			return 0, fmt.Errorf("placement: cluster %q: weight %d is negative", s.Cluster, s.Weight)
		case s.Min < 0:
			return 0, fmt.Errorf("placement: cluster %q: min %d is negative", s.Cluster, s.Min)
		case s.Max < 0:
			return 0, fmt.Errorf("placement: cluster %q: max %d is negative", s.Cluster, s.Max)
		case s.Max != 0 && s.Max < s.Min:
			return 0, fmt.Errorf("placement: cluster %q: max %d is below min %d", s.Cluster, s.Max, s.Min)
		}
		seen[s.Cluster] = true
		if sumMin <= total { // saturate: once above total the exact sum is only for the message
			sumMin += s.Min
		}
	}
	if sumMin > total {
		return 0, minsExceed(total, shares)
	}
	return sumMin, nil
}

// nextShare is the index of the share that gets the next replica (see before),
// among those with a positive weight below their Max; -1 when none can.
func nextShare(st []Share, held []int) int {
	best := -1
	for i, s := range st {
		if s.Weight == 0 || (s.Max != 0 && held[i] >= s.Max) {
			continue
		}
		if best < 0 || before(s, held[i], st[best], held[best]) {
			best = i
		}
	}
	return best
}

// before reports whether share a, holding ha replicas, gets the next replica
// before share b, holding hb: the higher quotient Weight/(2h+1), then the
// smaller weight, then the name that sorts first. Weights are positive.
func before(a Share, ha int, b Share, hb int) bool {
	if c := cmpQuotient(a.Weight, ha, b.Weight, hb); c != 0 {
		return c > 0
	}
	if a.Weight != b.Weight {
		return a.Weight < b.Weight
	}
	return a.Cluster < b.Cluster
}

// cmpQuotient compares wa/(2ha+1) with wb/(2hb+1) exactly (all arguments are
// >= 0): -1, 0 or +1. It cross-multiplies in 128 bits so it cannot overflow.
func cmpQuotient(wa, ha, wb, hb int) int {
	// wa/(2ha+1) ? wb/(2hb+1)  <=>  wa*(2hb+1) ? wb*(2ha+1)
	lh, ll := bits.Mul64(uint64(wa), 2*uint64(hb)+1)
	rh, rl := bits.Mul64(uint64(wb), 2*uint64(ha)+1)
	switch {
	case lh != rh:
		if lh > rh {
			return 1
		}
		return -1
	case ll != rl:
		if ll > rl {
			return 1
		}
		return -1
	}
	return 0
}

// minsExceed builds the error for minimums that add up to more than total,
// naming every cluster with a minimum, sorted by name.
func minsExceed(total int, shares []Share) error {
	var parts []string
	var sum uint64 // Min >= 0 here; uint64 avoids overflow for any realistic number of shares
	st := make([]Share, 0, len(shares))
	for _, s := range shares {
		if s.Min > 0 {
			st = append(st, s)
		}
	}
	sort.Slice(st, func(i, j int) bool { return st[i].Cluster < st[j].Cluster })
	for _, s := range st {
		parts = append(parts, fmt.Sprintf("%s=%d", s.Cluster, s.Min))
		sum += uint64(s.Min)
	}
	return fmt.Errorf("placement: minimum replicas %s add up to %d, more than the total of %d",
		strings.Join(parts, ", "), sum, total)
}
