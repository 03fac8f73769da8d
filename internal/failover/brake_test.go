package failover

import (
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/meridian-gslb/meridian/internal/model"
	"github.com/meridian-gslb/meridian/internal/vote"
)

const big = "big.example.test."

// bigService has four endpoints, .1 to .4, in east, west, eu and east.
func bigService(weights ...int) model.Service {
	clusters := []string{"east", "west", "eu", "east"}
	s := model.Service{Name: big}
	for i, c := range clusters {
		e := model.Endpoint{Address: fmt.Sprintf("198.51.100.%d", i+1), Cluster: c}
		if len(weights) > i {
			e.Weight = weight(weights[i])
		}
		s.Endpoints = append(s.Endpoints, e)
	}
	return s
}

// bigVotes is east-1, west-1 and eu-1 saying st about the endpoints numbered.
func bigVotes(st vote.Status, nums ...int) []vote.Vote {
	var out []vote.Vote
	for _, p := range []string{"east-1", "west-1", "eu-1"} {
		for _, n := range nums {
			out = append(out, vote.Vote{Subject: vote.EndpointSubject(big, fmt.Sprintf("198.51.100.%d", n)), Prober: p, Status: st, Seq: 1})
		}
	}
	return out
}

// brakeStep is a call and the resulting state of big's endpoints, as
// "up", "down", "unknown", or "up+brake" / "unknown+brake" for held removals.
type brakeStep struct {
	at    time.Duration
	votes []vote.Vote
	want  []string // endpoints .1 to .4
}

func TestBrake(t *testing.T) {
	allUp := bigVotes(vote.Up, 1, 2, 3, 4)
	cases := []struct {
		name    string
		service model.Service
		params  func(*Params)
		steps   []brakeStep
	}{
		{
			name:    "removals within half of the serving weight apply at once",
			service: bigService(),
			steps: []brakeStep{
				{at: s(0), votes: allUp, want: []string{"up", "up", "up", "up"}},
				{at: s(5), votes: bigVotes(vote.Down, 1, 2), want: []string{"down", "down", "up", "up"}},
			},
		},
		{
			name:    "removals beyond half of the serving weight are held up with reason brake",
			service: bigService(),
			steps: []brakeStep{
				{at: s(0), votes: allUp, want: []string{"up", "up", "up", "up"}},
				{at: s(5), votes: bigVotes(vote.Down, 1, 2, 3), want: []string{"down", "down", "up+brake", "up"}},
			},
		},
		{
			name:    "a held removal is applied one interval later if still wanted",
			service: bigService(),
			steps: []brakeStep{
				{at: s(0), votes: allUp, want: []string{"up", "up", "up", "up"}},
				{at: s(5), votes: bigVotes(vote.Down, 1, 2, 3), want: []string{"down", "down", "up+brake", "up"}},
				{at: s(10), votes: bigVotes(vote.Down, 1, 2, 3), want: []string{"down", "down", "down", "up"}},
			},
		},
		{
			name:    "a held removal is not applied before one interval has passed",
			service: bigService(),
			steps: []brakeStep{
				{at: s(0), votes: allUp, want: []string{"up", "up", "up", "up"}},
				{at: s(5), votes: bigVotes(vote.Down, 1, 2, 3), want: []string{"down", "down", "up+brake", "up"}},
				{at: s(9), votes: bigVotes(vote.Down, 1, 2, 3), want: []string{"down", "down", "up+brake", "up"}},
			},
		},
		{
			name:    "a held removal is dropped when the endpoint is no longer wanted down",
			service: bigService(),
			steps: []brakeStep{
				{at: s(0), votes: allUp, want: []string{"up", "up", "up", "up"}},
				{at: s(5), votes: bigVotes(vote.Down, 1, 2, 3), want: []string{"down", "down", "up+brake", "up"}},
				{at: s(10), votes: all(bigVotes(vote.Down, 1, 2), bigVotes(vote.Up, 3)), want: []string{"down", "down", "up", "up"}},
			},
		},
		{
			name:    "a freeze keeps a held removal",
			service: bigService(),
			steps: []brakeStep{
				{at: s(0), votes: allUp, want: []string{"up", "up", "up", "up"}},
				{at: s(5), votes: bigVotes(vote.Down, 1, 2, 3), want: []string{"down", "down", "up+brake", "up"}},
				{at: s(8), votes: bigVotes(vote.Down, 1, 2), want: []string{"down", "down", "up+brake", "up"}},
				{at: s(10), votes: bigVotes(vote.Down, 3), want: []string{"down", "down", "down", "up"}},
			},
		},
		{
			name:    "the brake holds removals of endpoints never decided before",
			service: bigService(),
			steps: []brakeStep{
				{at: s(0), votes: bigVotes(vote.Down, 1, 2, 3, 4), want: []string{"down", "down", "unknown+brake", "unknown+brake"}},
			},
		},
		{
			name:    "the only endpoint of a service goes down one interval late",
			service: model.Service{Name: big, Endpoints: []model.Endpoint{{Address: "198.51.100.1", Cluster: "east"}}},
			steps: []brakeStep{
				{at: s(0), votes: bigVotes(vote.Up, 1), want: []string{"up"}},
				{at: s(5), votes: bigVotes(vote.Down, 1), want: []string{"up+brake"}},
				{at: s(10), votes: bigVotes(vote.Down, 1), want: []string{"down"}},
			},
		},
		{
			name:    "weight-zero endpoints count as one when every endpoint has weight zero",
			service: bigService(0, 0, 0, 0),
			steps: []brakeStep{
				{at: s(0), votes: allUp, want: []string{"up", "up", "up", "up"}},
				{at: s(5), votes: bigVotes(vote.Down, 1, 2, 3), want: []string{"down", "down", "up+brake", "up"}},
			},
		},
		{
			name:    "weight-zero endpoints are removed at once when others carry the weight",
			service: bigService(100, 0, 100, 100),
			steps: []brakeStep{
				{at: s(0), votes: allUp, want: []string{"up", "up", "up", "up"}},
				{at: s(5), votes: bigVotes(vote.Down, 1, 2, 3), want: []string{"down", "down", "up+brake", "up"}},
			},
		},
		{
			name:    "the weights decide which removals fit",
			service: bigService(600, 100, 100, 200),
			steps: []brakeStep{
				{at: s(0), votes: allUp, want: []string{"up", "up", "up", "up"}},
				{at: s(5), votes: bigVotes(vote.Down, 1, 2, 3), want: []string{"up+brake", "down", "down", "up"}},
			},
		},
		{
			name: "drained endpoints do not count as serving weight",
			service: func() model.Service {
				s := bigService()
				s.Endpoints[3].Drain = true
				return s
			}(),
			steps: []brakeStep{
				{at: s(0), votes: allUp, want: []string{"up", "up", "up", "up"}},
				{at: s(5), votes: bigVotes(vote.Down, 1, 2, 4), want: []string{"down", "up+brake", "up", "down"}},
			},
		},
		{
			name:    "a brake of one never holds",
			service: bigService(),
			params:  func(p *Params) { p.Brake = 1 },
			steps: []brakeStep{
				{at: s(0), votes: allUp, want: []string{"up", "up", "up", "up"}},
				{at: s(5), votes: bigVotes(vote.Down, 1, 2, 3, 4), want: []string{"down", "down", "down", "down"}},
			},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			w := newWorld(t, fixture(t, tc.service))
			if tc.params != nil {
				tc.params(&w.params)
			}
			for _, st := range tc.steps {
				d := w.at(st.at, st.votes...)
				var got []string
				for i := range st.want {
					e, ok := d.LookupEndpoint(big, fmt.Sprintf("198.51.100.%d", i+1))
					require.True(t, ok)
					g := e.State.String()
					if e.Braked() {
						g += "+brake"
						assert.Equal(t, ReasonBrake, e.Reason)
					}
					got = append(got, g)
				}
				assert.Equal(t, st.want, got, "at %v", st.at)
			}
		})
	}
}

func TestBrakeChanges(t *testing.T) {
	w := newWorld(t, fixture(t, bigService()))
	w.at(0, bigVotes(vote.Up, 1, 2, 3, 4)...)
	d := w.at(s(5), bigVotes(vote.Down, 1, 2, 3)...)
	assert.Equal(t, []string{
		"198.51.100.1 up->down confirmation",
		"198.51.100.2 up->down confirmation",
		"198.51.100.3 up->up brake",
	}, reasons(d))
	e := endpoint3(t, d)
	assert.Equal(t, t0.Add(s(5)), e.BrakeSince)
	assert.Equal(t, []string{"east-1", "eu-1", "west-1"}, e.Voters)
	assert.Equal(t, t0, e.Since, "the brake does not change the state's since")

	d = w.at(s(10), bigVotes(vote.Down, 1, 2, 3)...)
	assert.Equal(t, []string{"198.51.100.3 up->down brake"}, reasons(d))
	assert.False(t, endpoint3(t, d).Braked())
}

func endpoint3(t *testing.T, d *Decision) EndpointState {
	e, ok := d.LookupEndpoint(big, "198.51.100.3")
	require.True(t, ok)
	return e
}

func TestBrakeLeavesFailedOverClustersOutOfTheServingWeight(t *testing.T) {
	// eu has failed over, so big's .3 is already out of the answers: the
	// serving weight is 300 and removing .1 and .3 costs only .1's 100.
	w := newWorld(t, fixture(t, bigService()))
	hbLost := []vote.Vote{sees("east-1", "eu", vote.Down), sees("west-1", "eu", vote.Down)}
	w.at(0, all(bigVotes(vote.Up, 1, 2, 3, 4), hbLost)...)
	d := w.at(s(5), all(bigVotes(vote.Down, 1, 3), hbLost)...)
	require.Equal(t, FailedOver, cluster(t, d, "eu").State)
	for _, n := range []int{1, 3} {
		e, _ := d.LookupEndpoint(big, fmt.Sprintf("198.51.100.%d", n))
		assert.Equal(t, Down, e.State, ".%d", n)
	}
}
