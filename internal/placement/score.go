package placement

import (
	"math"
	"sort"
)

// Resources of a member cluster: allocatable minus requests of its non-terminal scheduled pods.
type Resources struct {
	FreeMilliCPU int64
	FreeMemory   int64 // bytes
	FreeGPU      int64 // nvidia.com/gpu (or any extended GPU resource) units
}

// Candidate is a member cluster that a label selector matched.
type Candidate struct {
	Cluster   string
	Labels    map[string]string
	Resources Resources
	Available bool    // decided health: Ready (not failed over / unreachable)
	Cost      float64 // from the cluster's cost label; >= 0; lower is better
}

// ScoreWeights weigh the ranking terms; the zero value means DefaultScoreWeights.
type ScoreWeights struct{ CPU, Memory, GPU, Availability, Cost float64 }

// DefaultScoreWeights are the weights used when ScoreWeights is the zero value.
var DefaultScoreWeights = ScoreWeights{CPU: 1, Memory: 1, GPU: 1, Availability: 2, Cost: 1}

// Score of each candidate: CPU*free_cpu/max_free_cpu + Memory*free_mem/max_free_mem
// + GPU*free_gpu/max_free_gpu + Availability*(1 if available) - Cost*cost/max_cost,
// each term 0 when the maximum over the candidates is 0; negatives clamp to 0 for the free terms.
// A negative, NaN or infinite cost counts as 0. If a cluster name appears more
// than once, only its first candidate counts.
func Score(cands []Candidate, w ScoreWeights) map[string]float64 {
	if w == (ScoreWeights{}) {
		w = DefaultScoreWeights
	}
	cands = firstOfEach(cands)
	var maxCPU, maxMem, maxGPU int64
	var maxCost float64
	for _, c := range cands {
		maxCPU = max(maxCPU, c.Resources.FreeMilliCPU)
		maxMem = max(maxMem, c.Resources.FreeMemory)
		maxGPU = max(maxGPU, c.Resources.FreeGPU)
		maxCost = max(maxCost, cleanCost(c.Cost))
	}
	scores := make(map[string]float64, len(cands))
	for _, c := range cands {
		s := w.CPU*fraction(c.Resources.FreeMilliCPU, maxCPU) +
			w.Memory*fraction(c.Resources.FreeMemory, maxMem) +
			w.GPU*fraction(c.Resources.FreeGPU, maxGPU)
		if c.Available {
			s += w.Availability
		}
		if maxCost > 0 {
			s -= w.Cost * cleanCost(c.Cost) / maxCost
		}
		scores[c.Cluster] = s
	}
	return scores
}

// Rank orders candidates by score (highest first), ties by cluster name, and
// keeps at most max (max <= 0 = all). It returns the chosen cluster names and the
// scores (for status and logs). The scores cover every candidate, chosen or not.
func Rank(cands []Candidate, w ScoreWeights, max int) (chosen []string, scores map[string]float64) {
	scores = Score(cands, w)
	chosen = make([]string, 0, len(scores))
	for name := range scores {
		chosen = append(chosen, name)
	}
	sort.Slice(chosen, func(i, j int) bool {
		si, sj := scores[chosen[i]], scores[chosen[j]]
		if si != sj {
			return si > sj
		}
		return chosen[i] < chosen[j]
	})
	if max > 0 && len(chosen) > max {
		chosen = chosen[:max]
	}
	return chosen, scores
}

// fraction is v/maxV with negative v counting as 0, and 0 when maxV <= 0.
func fraction(v, maxV int64) float64 {
	if maxV <= 0 || v <= 0 {
		return 0
	}
	return float64(v) / float64(maxV)
}

// cleanCost is the cost a candidate is scored with: negative, NaN and
// infinite costs count as 0.
func cleanCost(c float64) float64 {
	if c < 0 || math.IsNaN(c) || math.IsInf(c, 0) {
		return 0
	}
	return c
}

// firstOfEach drops candidates whose cluster name already appeared.
func firstOfEach(cands []Candidate) []Candidate {
	seen := make(map[string]bool, len(cands))
	out := make([]Candidate, 0, len(cands))
	for _, c := range cands {
		if !seen[c.Cluster] {
			seen[c.Cluster] = true
			out = append(out, c)
		}
	}
	return out
}
