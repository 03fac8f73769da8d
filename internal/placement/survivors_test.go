package placement

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
)

func TestSurvivors(t *testing.T) {
	now := time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC)
	const toleration = 5 * time.Minute
	ago := func(d time.Duration) time.Time { return now.Add(-d) }
	tests := []struct {
		name     string
		clusters []string
		health   []ClusterHealth
		want     []string
		wantWake time.Time
	}{
		{
			name:     "healthy clusters all keep their share",
			clusters: []string{"eu", "us", "ap"},
			health:   []ClusterHealth{{Cluster: "eu"}, {Cluster: "us"}},
			want:     []string{"eu", "us", "ap"},
		},
		{
			name:     "a cluster failed for less than the toleration keeps its share until the toleration ends",
			clusters: []string{"eu", "us"},
			health:   []ClusterHealth{{Cluster: "eu", Failed: true, FailedSince: ago(time.Minute)}},
			want:     []string{"eu", "us"},
			wantWake: now.Add(4 * time.Minute),
		},
		{
			name:     "a cluster failed for exactly the toleration drops",
			clusters: []string{"eu", "us"},
			health:   []ClusterHealth{{Cluster: "eu", Failed: true, FailedSince: ago(toleration)}},
			want:     []string{"us"},
		},
		{
			name:     "a cluster failed for longer than the toleration drops",
			clusters: []string{"eu", "us", "ap"},
			health:   []ClusterHealth{{Cluster: "us", Failed: true, FailedSince: ago(time.Hour)}},
			want:     []string{"eu", "ap"},
		},
		{
			name:     "a cluster no longer failed is back at once",
			clusters: []string{"eu", "us"},
			health:   []ClusterHealth{{Cluster: "eu", Failed: false, FailedSince: ago(time.Hour)}},
			want:     []string{"eu", "us"},
		},
		{
			name:     "a failed cluster without a failure time drops",
			clusters: []string{"eu", "us"},
			health:   []ClusterHealth{{Cluster: "eu", Failed: true}},
			want:     []string{"us"},
		},
		{
			name:     "all failed past the toleration keep all",
			clusters: []string{"eu", "us"},
			health: []ClusterHealth{
				{Cluster: "eu", Failed: true, FailedSince: ago(time.Hour)},
				{Cluster: "us", Failed: true, FailedSince: ago(10 * time.Minute)},
			},
			want: []string{"eu", "us"},
		},
		{
			name:     "the wake time is the earliest future end of a toleration",
			clusters: []string{"eu", "us", "ap", "sa"},
			health: []ClusterHealth{
				{Cluster: "eu", Failed: true, FailedSince: ago(time.Minute)},
				{Cluster: "us", Failed: true, FailedSince: ago(3 * time.Minute)},
				{Cluster: "ap", Failed: true, FailedSince: ago(time.Hour)},
			},
			want:     []string{"eu", "us", "sa"},
			wantWake: now.Add(2 * time.Minute),
		},
		{
			name:     "the last survivor failing within the toleration wakes the caller when all would drop",
			clusters: []string{"eu", "us"},
			health: []ClusterHealth{
				{Cluster: "eu", Failed: true, FailedSince: ago(time.Hour)},
				{Cluster: "us", Failed: true, FailedSince: ago(time.Minute)},
			},
			want:     []string{"us"},
			wantWake: now.Add(4 * time.Minute),
		},
		{
			name:     "health of clusters not listed is ignored",
			clusters: []string{"eu"},
			health:   []ClusterHealth{{Cluster: "us", Failed: true, FailedSince: ago(time.Minute)}},
			want:     []string{"eu"},
		},
		{
			name:     "the last health entry of a cluster counts",
			clusters: []string{"eu", "us"},
			health: []ClusterHealth{
				{Cluster: "eu", Failed: true, FailedSince: ago(time.Hour)},
				{Cluster: "eu"},
			},
			want: []string{"eu", "us"},
		},
		{
			name:     "duplicate clusters are kept once in their first place",
			clusters: []string{"us", "eu", "us"},
			want:     []string{"us", "eu"},
		},
		{
			name: "no clusters keep nothing",
			want: []string{},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			keep, wake := Survivors(tc.clusters, tc.health, toleration, now)
			assert.Equal(t, tc.want, keep)
			assert.True(t, tc.wantWake.Equal(wake), "wake %v, want %v", wake, tc.wantWake)
		})
	}
}

func TestSurvivorsWithoutTolerationDropsFailedAtOnce(t *testing.T) {
	now := time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC)
	keep, wake := Survivors([]string{"eu", "us"}, []ClusterHealth{{Cluster: "eu", Failed: true, FailedSince: now}}, 0, now)
	assert.Equal(t, []string{"us"}, keep)
	assert.True(t, wake.IsZero())
}

func TestSurvivorsAnswerChangesAtWake(t *testing.T) {
	now := time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC)
	health := []ClusterHealth{{Cluster: "eu", Failed: true, FailedSince: now.Add(-time.Minute)}}
	clusters := []string{"eu", "us"}
	keep, wake := Survivors(clusters, health, 5*time.Minute, now)
	assert.Equal(t, []string{"eu", "us"}, keep)
	justBefore, _ := Survivors(clusters, health, 5*time.Minute, wake.Add(-time.Nanosecond))
	assert.Equal(t, []string{"eu", "us"}, justBefore)
	at, next := Survivors(clusters, health, 5*time.Minute, wake)
	assert.Equal(t, []string{"us"}, at)
	assert.True(t, next.IsZero())
}
