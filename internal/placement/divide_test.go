package placement

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestDivide(t *testing.T) {
	tests := []struct {
		name         string
		total        int
		shares       []Share
		want         map[string]int
		wantUnplaced int
	}{
		{
			name:   "ten replicas at 3:1 give 7 and 3 because the tie goes to the smaller weight",
			total:  10,
			shares: []Share{{Cluster: "a", Weight: 3}, {Cluster: "b", Weight: 1}},
			want:   map[string]int{"a": 7, "b": 3},
		},
		{
			name:   "ten replicas at 1:3 give 3 and 7 whatever the order of names",
			total:  10,
			shares: []Share{{Cluster: "a", Weight: 1}, {Cluster: "b", Weight: 3}},
			want:   map[string]int{"a": 3, "b": 7},
		},
		{
			name:   "ten replicas at 1:1 give 5 and 5",
			total:  10,
			shares: []Share{{Cluster: "a", Weight: 1}, {Cluster: "b", Weight: 1}},
			want:   map[string]int{"a": 5, "b": 5},
		},
		{
			name:   "seven replicas at 1:1:1 give the odd one to the name that sorts first",
			total:  7,
			shares: []Share{{Cluster: "c", Weight: 1}, {Cluster: "b", Weight: 1}, {Cluster: "a", Weight: 1}},
			want:   map[string]int{"a": 3, "b": 2, "c": 2},
		},
		{
			name:   "eight replicas at 2:2:1 give 3, 3 and 2",
			total:  8,
			shares: []Share{{Cluster: "a", Weight: 2}, {Cluster: "b", Weight: 2}, {Cluster: "c", Weight: 1}},
			// quotas 3.2, 3.2, 1.6; c's second quotient 1/3 beats a's and b's fourth, 2/7
			want: map[string]int{"a": 3, "b": 3, "c": 2},
		},
		{
			name:   "two replicas at 3:1 give one each because 3/3 ties 1/1 and the smaller weight wins",
			total:  2,
			shares: []Share{{Cluster: "a", Weight: 3}, {Cluster: "b", Weight: 1}},
			want:   map[string]int{"a": 1, "b": 1},
		},
		{
			name:   "the smaller weight wins a tie even when its name sorts last",
			total:  2,
			shares: []Share{{Cluster: "z", Weight: 1}, {Cluster: "a", Weight: 3}},
			want:   map[string]int{"a": 1, "z": 1},
		},
		{
			name:   "one replica at 1:1 goes to the name that sorts first",
			total:  1,
			shares: []Share{{Cluster: "zeta", Weight: 1}, {Cluster: "alpha", Weight: 1}},
			want:   map[string]int{"alpha": 1, "zeta": 0},
		},
		{
			name:   "zero replicas give everyone zero",
			total:  0,
			shares: []Share{{Cluster: "a", Weight: 3}, {Cluster: "b", Weight: 1}},
			want:   map[string]int{"a": 0, "b": 0},
		},
		{
			name:   "a weight of zero gets only its min",
			total:  10,
			shares: []Share{{Cluster: "a", Weight: 1}, {Cluster: "b", Weight: 0, Min: 2}, {Cluster: "c", Weight: 0}},
			want:   map[string]int{"a": 8, "b": 2, "c": 0},
		},
		{
			name:   "a max of five at 3:1 gives 5 and 5",
			total:  10,
			shares: []Share{{Cluster: "a", Weight: 3, Max: 5}, {Cluster: "b", Weight: 1}},
			want:   map[string]int{"a": 5, "b": 5},
		},
		{
			name:   "a min of four at 3:1 gives 6 and 4",
			total:  10,
			shares: []Share{{Cluster: "a", Weight: 3}, {Cluster: "b", Weight: 1, Min: 4}},
			want:   map[string]int{"a": 6, "b": 4},
		},
		{
			name:   "a min below the share changes nothing",
			total:  10,
			shares: []Share{{Cluster: "a", Weight: 3, Min: 2}, {Cluster: "b", Weight: 1, Min: 1}},
			want:   map[string]int{"a": 7, "b": 3},
		},
		{
			name:   "a max equal to the min pins the cluster",
			total:  10,
			shares: []Share{{Cluster: "a", Weight: 5, Min: 2, Max: 2}, {Cluster: "b", Weight: 1}},
			want:   map[string]int{"a": 2, "b": 8},
		},
		{
			name:         "replicas beyond every max stay unplaced",
			total:        10,
			shares:       []Share{{Cluster: "a", Weight: 3, Max: 4}, {Cluster: "b", Weight: 1, Max: 2}},
			want:         map[string]int{"a": 4, "b": 2},
			wantUnplaced: 4,
		},
		{
			name:         "no positive weight leaves everything above the mins unplaced",
			total:        5,
			shares:       []Share{{Cluster: "a", Min: 1}, {Cluster: "b"}},
			want:         map[string]int{"a": 1, "b": 0},
			wantUnplaced: 4,
		},
		{
			name:         "no shares at all leave everything unplaced",
			total:        3,
			want:         map[string]int{},
			wantUnplaced: 3,
		},
		{
			name:   "mins adding up to exactly the total are all that is placed",
			total:  5,
			shares: []Share{{Cluster: "a", Weight: 9, Min: 2}, {Cluster: "b", Weight: 1, Min: 3}},
			want:   map[string]int{"a": 2, "b": 3},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, unplaced, err := Divide(tc.total, tc.shares)
			require.NoError(t, err)
			assert.Equal(t, tc.want, got)
			assert.Equal(t, tc.wantUnplaced, unplaced)
		})
	}
}

func TestDivideErrors(t *testing.T) {
	tests := []struct {
		name    string
		total   int
		shares  []Share
		wantErr string
	}{
		{
			name:    "a negative total is refused",
			total:   -1,
			wantErr: "total replicas -1 is negative",
		},
		{
			name:    "a negative weight names the cluster",
			total:   1,
			shares:  []Share{{Cluster: "eu", Weight: -2}},
			wantErr: `cluster "eu": weight -2 is negative`,
		},
		{
			name:    "a negative min names the cluster",
			total:   1,
			shares:  []Share{{Cluster: "eu", Weight: 1, Min: -1}},
			wantErr: `cluster "eu": min -1 is negative`,
		},
		{
			name:    "a negative max names the cluster",
			total:   1,
			shares:  []Share{{Cluster: "eu", Weight: 1, Max: -3}},
			wantErr: `cluster "eu": max -3 is negative`,
		},
		{
			name:    "a max below the min names both",
			total:   9,
			shares:  []Share{{Cluster: "eu", Weight: 1, Min: 4, Max: 3}},
			wantErr: `cluster "eu": max 3 is below min 4`,
		},
		{
			name:    "a duplicate cluster is named",
			total:   2,
			shares:  []Share{{Cluster: "eu", Weight: 1}, {Cluster: "us", Weight: 1}, {Cluster: "eu", Weight: 2}},
			wantErr: `cluster "eu" has more than one share`,
		},
		{
			name:    "an empty cluster name is refused",
			total:   2,
			shares:  []Share{{Weight: 1}},
			wantErr: "empty cluster name",
		},
		{
			name:    "mins above the total name the clusters and the numbers",
			total:   10,
			shares:  []Share{{Cluster: "us", Weight: 1, Min: 8}, {Cluster: "ap", Weight: 1}, {Cluster: "eu", Weight: 1, Min: 4}},
			wantErr: "placement: minimum replicas eu=4, us=8 add up to 12, more than the total of 10",
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, unplaced, err := Divide(tc.total, tc.shares)
			require.Error(t, err)
			assert.Contains(t, err.Error(), tc.wantErr)
			assert.Nil(t, got)
			assert.Zero(t, unplaced)
		})
	}
}

func TestDivideDoesNotDependOnInputOrder(t *testing.T) {
	shares := []Share{{Cluster: "a", Weight: 2}, {Cluster: "b", Weight: 2}, {Cluster: "c", Weight: 1}, {Cluster: "d", Weight: 1}}
	want, _, err := Divide(9, shares)
	require.NoError(t, err)
	reversed := []Share{shares[3], shares[2], shares[1], shares[0]}
	got, _, err := Divide(9, reversed)
	require.NoError(t, err)
	assert.Equal(t, want, got)
}

func TestDivideDoesNotModifyShares(t *testing.T) {
	shares := []Share{{Cluster: "b", Weight: 1}, {Cluster: "a", Weight: 3}}
	_, _, err := Divide(10, shares)
	require.NoError(t, err)
	assert.Equal(t, []Share{{Cluster: "b", Weight: 1}, {Cluster: "a", Weight: 3}}, shares)
}

func TestCmpQuotientDoesNotOverflow(t *testing.T) {
	const big = int(^uint(0) >> 1) // MaxInt
	assert.Equal(t, 1, cmpQuotient(big, 0, big-1, 0))
	assert.Equal(t, -1, cmpQuotient(big, big, 1, 0))
	assert.Equal(t, 0, cmpQuotient(big, big, big, big))
	assert.Equal(t, 0, cmpQuotient(3, 1, 1, 0), "3/3 equals 1/1")
}
