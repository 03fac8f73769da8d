package failover

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/meridian-gslb/meridian/internal/vote"
)

func TestOutliers(t *testing.T) {
	// east-1 says down on all three endpoints. On east the others are split
	// (west-1 down, eu-1 up); on west and eu the others say up.
	rogue := all(
		says("east-1", vote.Down, ipEast, ipWest, ipEU),
		says("west-1", vote.Down, ipEast),
		says("west-1", vote.Up, ipWest, ipEU),
		says("eu-1", vote.Up, ipEast, ipWest, ipEU),
	)
	cases := []struct {
		name     string
		outliers bool
		votes    []vote.Vote
		ignored  []string // outliers reported
		east     State    // decided state of the east endpoint
	}{
		{
			name:     "a prober that says down where the others say up is ignored",
			outliers: true,
			votes:    rogue,
			ignored:  []string{"east-1"},
			east:     Up, // west-1's down against eu-1's up is a tie
		},
		{
			name:     "with outlier detection off the same prober tips the vote",
			outliers: false,
			votes:    rogue,
			east:     Down, // east-1 + west-1 down against eu-1 up
		},
		{
			name:     "a prober that says down on half of its endpoints or fewer is not an outlier",
			outliers: true,
			votes: all(
				says("east-1", vote.Down, ipEast), says("east-1", vote.Up, ipWest),
				says("west-1", vote.Up, ipEast, ipWest), says("eu-1", vote.Up, ipEast, ipWest),
			),
			east: Up,
		},
		{
			name:     "a prober compared with others on fewer than two endpoints is not an outlier",
			outliers: true,
			votes: all(
				says("east-1", vote.Down, ipEast, ipWest, ipEU),
				says("west-1", vote.Up, ipEast), says("eu-1", vote.Up, ipEast),
			),
			east: Up,
		},
		{
			name:     "a prober that agrees with a down majority is not an outlier",
			outliers: true,
			votes: all(
				says("east-1", vote.Down, ipEast, ipWest, ipEU),
				says("west-1", vote.Down, ipEast, ipWest, ipEU),
				says("eu-1", vote.Up, ipEast, ipWest, ipEU),
			),
			east: Down,
		},
		{
			name:     "a prober whose down votes the others only tie is not an outlier",
			outliers: true,
			votes: all(
				says("east-1", vote.Down, ipEast, ipWest),
				says("west-1", vote.Down, ipEast, ipWest),
				says("eu-1", vote.Up, ipEast, ipWest),
			),
			east: Down,
		},
		{
			name:     "in an even split each down prober faces an up majority of the others and both are ignored",
			outliers: true,
			votes: all(
				says("east-1", vote.Down, ipEast, ipWest),
				says("west-1", vote.Down, ipEast, ipWest),
				says("eu-1", vote.Up, ipEast, ipWest),
				says("east-2", vote.Up, ipEast, ipWest),
			),
			ignored: []string{"east-1", "west-1"},
			east:    Up,
		},
		{
			name:     "two probers that agree against a larger majority are both ignored",
			outliers: true,
			votes: all(
				says("east-1", vote.Down, ipEast, ipWest, ipEU),
				says("east-2", vote.Down, ipEast, ipWest, ipEU),
				says("west-1", vote.Up, ipEast, ipWest, ipEU),
				says("eu-1", vote.Up, ipEast, ipWest, ipEU),
				[]vote.Vote{{Subject: vote.EndpointSubject(app, ipEast), Prober: "ap-1", Status: vote.Up, Seq: 1}},
				[]vote.Vote{{Subject: vote.EndpointSubject(app, ipWest), Prober: "ap-1", Status: vote.Up, Seq: 1}},
			),
			ignored: []string{"east-1", "east-2"},
			east:    Up,
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			w := newWorld(t, fixture(t))
			w.probers = append(ring4, Prober{Name: "ap-1", Region: "ap-south"})
			w.params.Outliers = tc.outliers
			w.at(0, everyoneUp()...)
			d := w.at(5*time.Second, tc.votes...)
			var names []string
			for _, o := range d.Outliers {
				names = append(names, o.Prober)
			}
			assert.Equal(t, tc.ignored, names, "outliers")
			assert.Equal(t, tc.east, endpoint(t, d, ipEast).State)
		})
	}
}

func TestOutlierIsReportedAndReturnsWhenItAgreesAgain(t *testing.T) {
	w := newWorld(t, fixture(t))
	w.at(0, everyoneUp()...)
	rogue := all(
		says("east-1", vote.Down, ipEast, ipWest, ipEU),
		says("east-2", vote.Up, ipEast, ipWest, ipEU),
		says("west-1", vote.Up, ipEast, ipWest, ipEU),
		says("eu-1", vote.Up, ipEast, ipWest, ipEU),
	)
	d := w.at(5*time.Second, rogue...)
	require.Len(t, d.Outliers, 1)
	assert.Equal(t, Outlier{Prober: "east-1", Region: "us-east", Since: t0.Add(5 * time.Second), Voted: 3, Down: 3, Compared: 3, Disagreed: 3}, d.Outliers[0])
	assert.Equal(t, []string{
		ipEast + " up->up outlier-ignored",
		ipWest + " up->up outlier-ignored",
		ipEU + " up->up outlier-ignored",
	}, reasons(d), "reported once per endpoint where the ignored vote disagrees")
	assert.Equal(t, ReasonThreshold, endpoint(t, d, ipEast).Reason, "outlier events leave the endpoint's reason alone")
	assert.False(t, d.StatesChanged)

	d = w.at(10*time.Second, rogue...)
	require.Len(t, d.Outliers, 1)
	assert.Equal(t, t0.Add(5*time.Second), d.Outliers[0].Since, "since carries over")
	assert.Empty(t, d.Changes, "no repeated report while it stays ignored")

	d = w.at(15*time.Second, everyoneUp()...)
	assert.Empty(t, d.Outliers, "it counts again as soon as it agrees")
}
