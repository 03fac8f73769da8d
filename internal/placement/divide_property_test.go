package placement

import (
	"fmt"
	"math"
	"math/big"
	"math/rand/v2"
	"sort"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

const propertyCases = 2000

var propertyNames = []string{"ap", "eu", "us", "sa", "af", "me"}

// randomShares returns up to 6 shares with weights 0..20 in a random input
// order; with bounds it adds random consistent Min and Max.
func randomShares(r *rand.Rand, bounds bool) []Share {
	n := 1 + r.IntN(len(propertyNames))
	names := append([]string(nil), propertyNames...)
	r.Shuffle(len(names), func(i, j int) { names[i], names[j] = names[j], names[i] })
	shares := make([]Share, n)
	for i := range shares {
		shares[i] = Share{Cluster: names[i], Weight: r.IntN(21)}
		if bounds {
			shares[i].Min = r.IntN(4)
			if r.IntN(2) == 0 {
				shares[i].Max = shares[i].Min + r.IntN(12)
				if shares[i].Max == 0 && r.IntN(2) == 0 {
					shares[i].Max = 1 // Max 0 means none; sometimes pin at 1 instead
				}
			}
		}
	}
	return shares
}

func describe(total int, shares []Share) string {
	return fmt.Sprintf("total=%d shares=%+v", total, shares)
}

// referenceWebster computes Webster apportionment without Min and Max
// differently from Divide: it lists every quotient w/(2k+1) a cluster could
// earn as an exact rational, sorts the whole list once (quotient descending,
// then smaller weight, then name) and gives one replica per entry among the
// first total.
func referenceWebster(total int, shares []Share) (map[string]int, int) {
	type entry struct {
		q       *big.Rat
		weight  int
		cluster string
	}
	var list []entry
	alloc := map[string]int{}
	for _, s := range shares {
		alloc[s.Cluster] = 0
		if s.Weight == 0 {
			continue
		}
		for k := 0; k < total; k++ {
			list = append(list, entry{big.NewRat(int64(s.Weight), int64(2*k+1)), s.Weight, s.Cluster})
		}
	}
	sort.Slice(list, func(i, j int) bool {
		if c := list[i].q.Cmp(list[j].q); c != 0 {
			return c > 0
		}
		if list[i].weight != list[j].weight {
			return list[i].weight < list[j].weight
		}
		return list[i].cluster < list[j].cluster
	})
	placed := min(total, len(list))
	for _, e := range list[:placed] {
		alloc[e.cluster]++
	}
	return alloc, total - placed
}

// assertWebsterDivisor checks the divisor characterisation of Webster: there
// is a divisor d with a_i = round(w_i/d) for every cluster, i.e.
// max_i w_i/(2a_i+1) <= min_{a_i>0} w_i/(2a_i-1); and when the two are equal
// (a tie at d) every cluster that took the tied replica beats, by smaller
// weight then name, every cluster that did not.
func assertWebsterDivisor(t *testing.T, shares []Share, alloc map[string]int, msg string) {
	t.Helper()
	var lo, hi *big.Rat // lo: best quotient not taken; hi: worst quotient taken
	for _, s := range shares {
		if s.Weight == 0 {
			continue
		}
		a := alloc[s.Cluster]
		next := big.NewRat(int64(s.Weight), int64(2*a+1))
		if lo == nil || next.Cmp(lo) > 0 {
			lo = next
		}
		if a > 0 {
			last := big.NewRat(int64(s.Weight), int64(2*a-1))
			if hi == nil || last.Cmp(hi) < 0 {
				hi = last
			}
		}
	}
	if lo == nil || hi == nil {
		return // no positive weight, or nothing placed
	}
	if !assert.LessOrEqual(t, lo.Cmp(hi), 0, "no Webster divisor exists: %s alloc=%v", msg, alloc) {
		return
	}
	if lo.Cmp(hi) != 0 {
		return
	}
	for _, won := range shares {
		a := alloc[won.Cluster]
		if won.Weight == 0 || a == 0 || big.NewRat(int64(won.Weight), int64(2*a-1)).Cmp(hi) != 0 {
			continue
		}
		for _, lost := range shares {
			b := alloc[lost.Cluster]
			if lost.Weight == 0 || lost.Cluster == won.Cluster || big.NewRat(int64(lost.Weight), int64(2*b+1)).Cmp(lo) != 0 {
				continue
			}
			winsTie := won.Weight < lost.Weight || (won.Weight == lost.Weight && won.Cluster < lost.Cluster)
			assert.True(t, winsTie, "tie between %s and %s broken the wrong way: %s alloc=%v", won.Cluster, lost.Cluster, msg, alloc)
		}
	}
}

func TestDivideProperties(t *testing.T) {
	t.Run("without min or max it equals a sorted-list Webster reference and has a Webster divisor", func(t *testing.T) {
		r := rand.New(rand.NewPCG(1, 1))
		for range propertyCases {
			total, shares := r.IntN(61), randomShares(r, false)
			msg := describe(total, shares)
			got, unplaced, err := Divide(total, shares)
			require.NoError(t, err, msg)
			want, wantUnplaced := referenceWebster(total, shares)
			assert.Equal(t, want, got, msg)
			assert.Equal(t, wantUnplaced, unplaced, msg)
			assertWebsterDivisor(t, shares, got, msg)
		}
	})

	t.Run("with random min and max the sum is the total and every allocation is within bounds", func(t *testing.T) {
		r := rand.New(rand.NewPCG(2, 2))
		for range propertyCases {
			shares := randomShares(r, true)
			sumMin := 0
			for _, s := range shares {
				sumMin += s.Min
			}
			total := sumMin + r.IntN(61-min(sumMin, 60))
			msg := describe(total, shares)
			got, unplaced, err := Divide(total, shares)
			require.NoError(t, err, msg)
			require.Len(t, got, len(shares), msg)
			sum, canTakeMore, unbounded := 0, false, false
			for _, s := range shares {
				a := got[s.Cluster]
				sum += a
				assert.GreaterOrEqual(t, a, s.Min, msg)
				if s.Max != 0 {
					assert.LessOrEqual(t, a, s.Max, msg)
				}
				if s.Weight == 0 {
					assert.Equal(t, s.Min, a, "weight 0 gets only its min: %s", msg)
				} else if s.Max == 0 || a < s.Max {
					canTakeMore = true
					unbounded = unbounded || s.Max == 0
				}
			}
			assert.Equal(t, total, sum+unplaced, msg)
			assert.GreaterOrEqual(t, unplaced, 0, msg)
			if unplaced > 0 {
				assert.False(t, canTakeMore, "replicas unplaced while a cluster could take them: %s alloc=%v", msg, got)
			}
			if unbounded {
				assert.Zero(t, unplaced, msg)
			}
		}
	})

	t.Run("mins above the total are always an error", func(t *testing.T) {
		r := rand.New(rand.NewPCG(3, 3))
		for range propertyCases {
			shares := randomShares(r, true)
			sumMin := 0
			for _, s := range shares {
				sumMin += s.Min
			}
			if sumMin == 0 {
				continue
			}
			total := r.IntN(sumMin)
			_, _, err := Divide(total, shares)
			assert.ErrorContains(t, err, "more than the total", describe(total, shares))
		}
	})

	t.Run("raising one cluster's weight never lowers its allocation", func(t *testing.T) {
		r := rand.New(rand.NewPCG(4, 4))
		for range propertyCases {
			total, shares := r.IntN(61), randomShares(r, false)
			before, _, err := Divide(total, shares)
			require.NoError(t, err)
			i := r.IntN(len(shares))
			raised := append([]Share(nil), shares...)
			raised[i].Weight += 1 + r.IntN(10)
			after, _, err := Divide(total, raised)
			require.NoError(t, err)
			c := shares[i].Cluster
			assert.GreaterOrEqual(t, after[c], before[c], "raising %s: %s -> %+v", c, describe(total, shares), raised)
		}
	})

	t.Run("one more replica never lowers anyone's allocation", func(t *testing.T) {
		r := rand.New(rand.NewPCG(5, 5))
		for range propertyCases {
			total, shares := r.IntN(61), randomShares(r, false)
			before, _, err := Divide(total, shares)
			require.NoError(t, err)
			after, _, err := Divide(total+1, shares)
			require.NoError(t, err)
			for _, s := range shares {
				assert.GreaterOrEqual(t, after[s.Cluster], before[s.Cluster], describe(total, shares))
			}
		}
	})

	t.Run("with two clusters every allocation is within a half of its exact quota", func(t *testing.T) {
		r := rand.New(rand.NewPCG(6, 6))
		for range propertyCases {
			total := r.IntN(61)
			shares := []Share{{Cluster: "a", Weight: r.IntN(21)}, {Cluster: "b", Weight: r.IntN(21)}}
			sumW := shares[0].Weight + shares[1].Weight
			if sumW == 0 {
				continue
			}
			got, unplaced, err := Divide(total, shares)
			require.NoError(t, err)
			require.Zero(t, unplaced)
			for _, s := range shares {
				quota := float64(total) * float64(s.Weight) / float64(sumW)
				assert.LessOrEqual(t, math.Abs(float64(got[s.Cluster])-quota), 0.5+1e-9, describe(total, shares))
			}
		}
	})
}
