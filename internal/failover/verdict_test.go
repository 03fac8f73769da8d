package failover

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"

	"github.com/meridian-gslb/meridian/internal/vote"
)

// verdictCase decides twice: `before` at t0 (everyone up when nil), then
// `votes` at t0+5s, and checks the east endpoint.
type verdictCase struct {
	name    string
	probers []Prober      // default ring4
	params  func(*Params) // tweaks DefaultParams
	before  []vote.Vote   // votes of the first call (default: everyone says up)
	votes   []vote.Vote   // votes of the second call
	want    State         // state of the east endpoint after the second call
	reason  string        // its reason
	voters  []string      // its voters (nil: not checked)
}

func runVerdicts(t *testing.T, cases []verdictCase) {
	t.Helper()
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			w := newWorld(t, fixture(t))
			if tc.probers != nil {
				w.probers = tc.probers
			}
			if tc.params != nil {
				tc.params(&w.params)
			}
			before := tc.before
			if before == nil {
				before = everyoneUp()
			}
			w.at(0, before...)
			d := w.at(5*time.Second, tc.votes...)
			e := endpoint(t, d, ipEast)
			assert.Equal(t, tc.want, e.State, "state")
			assert.Equal(t, tc.reason, e.Reason, "reason")
			if tc.voters != nil {
				assert.Equal(t, tc.voters, e.Voters, "voters")
			}
		})
	}
}

func aged(vs []vote.Vote, age time.Duration) []vote.Vote {
	out := make([]vote.Vote, len(vs))
	for i, v := range vs {
		v.ObservedAt = t0.Add(5*time.Second - age)
		out[i] = v
	}
	return out
}

func TestFreshness(t *testing.T) {
	downEverywhere := all(says("east-1", vote.Down, ipEast), says("west-1", vote.Down, ipEast), says("eu-1", vote.Down, ipEast))
	runVerdicts(t, []verdictCase{
		{
			name:  "votes up to fresh_votes intervals old count",
			votes: aged(downEverywhere, 15*time.Second),
			want:  Down, reason: ReasonConfirmation, voters: []string{"east-1", "eu-1", "west-1"},
		},
		{
			name:  "votes older than fresh_votes intervals do not count",
			votes: aged(downEverywhere, 15*time.Second+time.Nanosecond),
			want:  Up, reason: ReasonThreshold,
		},
		{
			name:   "fresh_votes and interval come from the params",
			params: func(p *Params) { p.Interval, p.FreshVotes = time.Second, 2 },
			votes:  aged(downEverywhere, 3*time.Second),
			want:   Up, reason: ReasonThreshold,
		},
		{
			name:    "votes of probers that left the ring do not count",
			probers: ring4[:2],
			votes:   all(says("east-1", vote.Down, ipEast), says("east-2", vote.Down, ipEast), says("west-1", vote.Down, ipEast)),
			want:    Down, reason: ReasonThreshold, voters: []string{"east-1", "east-2"},
		},
		{
			name: "votes of live probers are placed in the ring's region, not the vote's",
			votes: all(says("east-1", vote.Down, ipEast), []vote.Vote{
				{Subject: vote.EndpointSubject(app, ipEast), Prober: "east-2", Region: "mars", Status: vote.Down, Seq: 1},
			}),
			want: Up, reason: ReasonThreshold,
		},
		{
			name: "unknown votes do not count",
			votes: all(says("east-1", vote.Down, ipEast), says("west-1", vote.Down, ipEast),
				says("east-2", vote.Unknown, ipEast), says("eu-1", vote.Unknown, ipEast)),
			want: Down, reason: ReasonConfirmation, voters: []string{"east-1", "west-1"},
		},
		{
			name:  "votes about subjects outside the config are ignored",
			votes: all(says("east-1", vote.Down, "198.51.100.1"), says("west-1", vote.Down, "198.51.100.1")),
			want:  Up, reason: ReasonThreshold,
		},
	})
}

func TestQuorum(t *testing.T) {
	allDown := all(says("east-1", vote.Down, ipEast), says("east-2", vote.Down, ipEast), says("west-1", vote.Down, ipEast), says("eu-1", vote.Down, ipEast))
	runVerdicts(t, []verdictCase{
		{
			name:  "a strict majority of down votes from two regions takes the endpoint down",
			votes: all(says("east-1", vote.Down, ipEast), says("west-1", vote.Down, ipEast), says("eu-1", vote.Up, ipEast)),
			want:  Down, reason: ReasonConfirmation, voters: []string{"east-1", "west-1"},
		},
		{
			name:  "endpoint down in one region only stays up",
			votes: all(says("east-1", vote.Down, ipEast), says("east-2", vote.Down, ipEast), says("west-1", vote.Up, ipEast)),
			want:  Up, reason: ReasonThreshold,
		},
		{
			name:  "a tie holds an up endpoint up",
			votes: all(says("east-1", vote.Down, ipEast), says("west-1", vote.Down, ipEast), says("east-2", vote.Up, ipEast), says("eu-1", vote.Up, ipEast)),
			want:  Up, reason: ReasonThreshold,
		},
		{
			name:   "a tie holds a down endpoint down",
			before: allDown,
			votes:  all(says("east-1", vote.Down, ipEast), says("west-1", vote.Down, ipEast), says("east-2", vote.Up, ipEast), says("eu-1", vote.Up, ipEast)),
			want:   Down, reason: ReasonConfirmation,
		},
		{
			name:   "no fresh votes freeze the previous decision and keep its reason",
			before: allDown,
			votes:  nil,
			want:   Down, reason: ReasonConfirmation, voters: []string{"east-1", "east-2", "eu-1", "west-1"},
		},
		{
			name:  "fresh votes from one region freeze the decision even when they all say down",
			votes: all(says("east-1", vote.Down, ipEast), says("east-2", vote.Down, ipEast)),
			want:  Up, reason: ReasonThreshold,
		},
		{
			name:   "fresh votes from one region freeze a down endpoint even when they all say up",
			before: allDown,
			votes:  all(says("east-1", vote.Up, ipEast), says("east-2", vote.Up, ipEast)),
			want:   Down, reason: ReasonConfirmation,
		},
		{
			name:    "min_regions is capped at the regions of the ring",
			probers: ring4[:2],
			votes:   all(says("east-1", vote.Down, ipEast), says("east-2", vote.Down, ipEast)),
			want:    Down, reason: ReasonThreshold, voters: []string{"east-1", "east-2"},
		},
		{
			name:   "min_regions of three needs down votes from three regions",
			params: func(p *Params) { p.MinRegions = 3 },
			votes:  all(says("east-1", vote.Down, ipEast), says("east-2", vote.Down, ipEast), says("west-1", vote.Down, ipEast), says("eu-1", vote.Up, ipEast)),
			want:   Up, reason: ReasonThreshold,
		},
		{
			name:   "min_regions of three is met by down votes from three regions",
			params: func(p *Params) { p.MinRegions = 3 },
			votes:  allDown,
			want:   Down, reason: ReasonConfirmation,
		},
		{
			name:   "min_regions of one lets a single region decide",
			params: func(p *Params) { p.MinRegions = 1 },
			votes:  all(says("east-1", vote.Down, ipEast), says("east-2", vote.Down, ipEast)),
			want:   Down, reason: ReasonThreshold, voters: []string{"east-1", "east-2"},
		},
		{
			name:   "a strict majority of up votes brings a new endpoint up",
			before: []vote.Vote{},
			votes:  all(says("east-1", vote.Up, ipEast), says("west-1", vote.Up, ipEast)),
			want:   Up, reason: ReasonThreshold, voters: []string{"east-1", "west-1"},
		},
		{
			name:   "a new endpoint without votes stays unknown",
			before: []vote.Vote{},
			votes:  nil,
			want:   Unknown, reason: ReasonNew,
		},
		{
			name:   "a new endpoint with a tie stays unknown",
			before: []vote.Vote{},
			votes:  all(says("east-1", vote.Up, ipEast), says("west-1", vote.Down, ipEast)),
			want:   Unknown, reason: ReasonNew,
		},
	})
}

func TestUnknownEndpointsCountAsUp(t *testing.T) {
	w := newWorld(t, fixture(t))
	d := w.at(0)
	assert.Equal(t, Unknown, endpoint(t, d, ipEast).State)
	assert.Equal(t, "unknown", d.Endpoint(app, ipEast).String(), "the engine keeps unknown endpoints in the answers")
	assert.Empty(t, d.Changes, "a first sighting is not a change")
}
