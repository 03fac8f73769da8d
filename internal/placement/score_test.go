package placement

import (
	"math"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func cand(name string, cpu, mem, gpu int64, available bool, cost float64) Candidate {
	return Candidate{
		Cluster:   name,
		Resources: Resources{FreeMilliCPU: cpu, FreeMemory: mem, FreeGPU: gpu},
		Available: available,
		Cost:      cost,
	}
}

func TestScore(t *testing.T) {
	tests := []struct {
		name  string
		cands []Candidate
		w     ScoreWeights
		want  map[string]float64
	}{
		{
			name:  "the zero weights mean the defaults",
			cands: []Candidate{cand("a", 1000, 4, 2, true, 1), cand("b", 500, 2, 0, false, 2)},
			want:  map[string]float64{"a": 1 + 1 + 1 + 2 - 0.5, "b": 0.5 + 0.5 + 0 + 0 - 1},
		},
		{
			name:  "custom weights scale each term",
			cands: []Candidate{cand("a", 1000, 4, 2, true, 1), cand("b", 500, 2, 0, false, 2)},
			w:     ScoreWeights{CPU: 2, Memory: 0, GPU: 3, Availability: 1, Cost: 4},
			want:  map[string]float64{"a": 2 + 3 + 1 - 2, "b": 1 - 4},
		},
		{
			name:  "zero maxima give zero terms, not NaN",
			cands: []Candidate{cand("a", 0, 0, 0, true, 0), cand("b", 0, 0, 0, false, 0)},
			want:  map[string]float64{"a": 2, "b": 0},
		},
		{
			name:  "negative free resources count as zero",
			cands: []Candidate{cand("a", -500, -1, -1, false, 0), cand("b", 1000, 8, 1, false, 0)},
			want:  map[string]float64{"a": 0, "b": 3},
		},
		{
			name:  "only negative free resources give zero terms",
			cands: []Candidate{cand("a", -500, -1, -1, false, 0)},
			want:  map[string]float64{"a": 0},
		},
		{
			name:  "negative, NaN and infinite costs count as zero",
			cands: []Candidate{cand("neg", 0, 0, 0, false, -3), cand("nan", 0, 0, 0, false, math.NaN()), cand("inf", 0, 0, 0, false, math.Inf(1)), cand("two", 0, 0, 0, false, 2)},
			want:  map[string]float64{"neg": 0, "nan": 0, "inf": 0, "two": -1},
		},
		{
			name:  "a duplicate cluster is scored from its first candidate",
			cands: []Candidate{cand("a", 100, 0, 0, false, 0), cand("a", 900, 0, 0, true, 0), cand("b", 200, 0, 0, false, 0)},
			want:  map[string]float64{"a": 0.5, "b": 1},
		},
		{
			name: "no candidates give no scores",
			want: map[string]float64{},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := Score(tc.cands, tc.w)
			require.Len(t, got, len(tc.want))
			for name, want := range tc.want {
				require.Contains(t, got, name)
				assert.False(t, math.IsNaN(got[name]), "%s scored NaN", name)
				assert.InDelta(t, want, got[name], 1e-12, name)
			}
		})
	}
}

func TestRank(t *testing.T) {
	tests := []struct {
		name  string
		cands []Candidate
		max   int
		want  []string
	}{
		{
			name:  "more free CPU ranks higher",
			cands: []Candidate{cand("a", 1000, 8, 0, true, 0), cand("b", 4000, 8, 0, true, 0), cand("c", 2000, 8, 0, true, 0)},
			want:  []string{"b", "c", "a"},
		},
		{
			name:  "more free memory or GPUs rank higher, a half of the memory plus all GPUs beating all the memory",
			cands: []Candidate{cand("a", 1000, 4, 0, true, 0), cand("b", 1000, 8, 0, true, 0), cand("c", 1000, 4, 2, true, 0)},
			want:  []string{"c", "b", "a"},
		},
		{
			name:  "unavailable ranks below available with equal resources",
			cands: []Candidate{cand("a", 1000, 8, 1, false, 0), cand("b", 1000, 8, 1, true, 0)},
			want:  []string{"b", "a"},
		},
		{
			name:  "cost lowers the score",
			cands: []Candidate{cand("a", 1000, 8, 0, true, 3), cand("b", 1000, 8, 0, true, 1), cand("c", 1000, 8, 0, true, 0)},
			want:  []string{"c", "b", "a"},
		},
		{
			name:  "max keeps only the best",
			cands: []Candidate{cand("a", 1000, 8, 0, true, 0), cand("b", 4000, 8, 0, true, 0), cand("c", 2000, 8, 0, true, 0)},
			max:   2,
			want:  []string{"b", "c"},
		},
		{
			name:  "max above the number of candidates keeps all",
			cands: []Candidate{cand("a", 1000, 8, 0, true, 0), cand("b", 4000, 8, 0, true, 0)},
			max:   5,
			want:  []string{"b", "a"},
		},
		{
			name:  "a negative max keeps all",
			cands: []Candidate{cand("a", 1000, 8, 0, true, 0), cand("b", 4000, 8, 0, true, 0)},
			max:   -1,
			want:  []string{"b", "a"},
		},
		{
			name:  "equal scores are ordered by name",
			cands: []Candidate{cand("zeta", 1000, 8, 0, true, 1), cand("alpha", 1000, 8, 0, true, 1), cand("mid", 1000, 8, 0, true, 1)},
			want:  []string{"alpha", "mid", "zeta"},
		},
		{
			name:  "all-zero candidates are ordered by availability then name",
			cands: []Candidate{cand("c", 0, 0, 0, false, 0), cand("b", 0, 0, 0, true, 0), cand("a", 0, 0, 0, false, 0)},
			want:  []string{"b", "a", "c"},
		},
		{
			name:  "a duplicate cluster is listed once",
			cands: []Candidate{cand("a", 1000, 0, 0, true, 0), cand("a", 1000, 0, 0, true, 0)},
			want:  []string{"a"},
		},
		{
			name: "no candidates choose nothing",
			want: []string{},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			chosen, scores := Rank(tc.cands, ScoreWeights{}, tc.max)
			assert.Equal(t, tc.want, chosen)
			assert.Equal(t, Score(tc.cands, ScoreWeights{}), scores, "scores cover every candidate")
		})
	}
}

func TestRankDoesNotDependOnInputOrder(t *testing.T) {
	cands := []Candidate{cand("a", 1000, 8, 0, true, 1), cand("b", 1000, 8, 0, true, 1), cand("c", 3000, 2, 1, false, 0), cand("d", 0, 16, 0, true, 5)}
	want, _ := Rank(cands, ScoreWeights{}, 0)
	reversed := []Candidate{cands[3], cands[2], cands[1], cands[0]}
	got, _ := Rank(reversed, ScoreWeights{}, 0)
	assert.Equal(t, want, got)
}
