package failover

import (
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"

	"github.com/meridian-gslb/meridian/internal/vote"
)

// Verdicts about the east endpoint from two regions.
var (
	eastUp   = all(says("east-1", vote.Up, ipEast), says("west-1", vote.Up, ipEast), says("eu-1", vote.Up, ipEast))
	eastDown = all(says("east-1", vote.Down, ipEast), says("west-1", vote.Down, ipEast), says("eu-1", vote.Down, ipEast))
	eastTie  = all(says("east-1", vote.Up, ipEast), says("west-1", vote.Down, ipEast))
)

// step is one Decide call at t0+at and what the east endpoint should be after it.
type step struct {
	at       time.Duration
	votes    []vote.Vote
	want     State
	held     time.Duration // HeldUntil - t0; 0 = not held
	failures int
	reason   string
}

func s(n int) time.Duration { return time.Duration(n) * time.Second }

// fixedLadder is the ladder the cases of TestHoldDown were written for: a
// hold-down of 30s doubling per failure, failures forgotten after 300s up.
func fixedLadder(p *Params) {
	p.FirstHoldDown, p.HoldDownMin, p.FlapWindow = p.HoldDown, p.HoldDown, p.HoldDownMax
}

func TestHoldDown(t *testing.T) {
	cases := []struct {
		name   string
		params func(*Params)
		steps  []step
	}{
		{
			name: "a new endpoint comes up at once, without hold-down",
			steps: []step{
				{at: s(0), votes: eastUp, want: Up, reason: ReasonThreshold},
			},
		},
		{
			name: "a recovered endpoint stays down for the hold-down, then comes back",
			steps: []step{
				{at: s(0), votes: eastDown, want: Down, failures: 1, reason: ReasonConfirmation},
				{at: s(10), votes: eastUp, want: Down, held: s(40), failures: 1, reason: ReasonHoldDown},
				{at: s(39), votes: eastUp, want: Down, held: s(40), failures: 1, reason: ReasonHoldDown},
				{at: s(40), votes: eastUp, want: Up, failures: 1, reason: ReasonHoldDown},
			},
		},
		{
			name: "a down verdict during the hold is a new failure and doubles the next hold",
			steps: []step{
				{at: s(0), votes: eastDown, want: Down, failures: 1, reason: ReasonConfirmation},
				{at: s(10), votes: eastUp, want: Down, held: s(40), failures: 1, reason: ReasonHoldDown},
				{at: s(20), votes: eastDown, want: Down, failures: 2, reason: ReasonConfirmation},
				{at: s(25), votes: eastUp, want: Down, held: s(85), failures: 2, reason: ReasonHoldDown},
				{at: s(84), votes: eastUp, want: Down, held: s(85), failures: 2, reason: ReasonHoldDown},
				{at: s(85), votes: eastUp, want: Up, failures: 2, reason: ReasonHoldDown},
			},
		},
		{
			name: "a failure soon after recovery doubles the hold-down",
			steps: []step{
				{at: s(0), votes: eastDown, want: Down, failures: 1, reason: ReasonConfirmation},
				{at: s(5), votes: eastUp, want: Down, held: s(35), failures: 1, reason: ReasonHoldDown},
				{at: s(35), votes: eastUp, want: Up, failures: 1, reason: ReasonHoldDown},
				{at: s(100), votes: eastDown, want: Down, failures: 2, reason: ReasonConfirmation},
				{at: s(105), votes: eastUp, want: Down, held: s(165), failures: 2, reason: ReasonHoldDown},
			},
		},
		{
			name: "the hold-down is capped at hold_down_max",
			params: func(p *Params) {
				p.HoldDown, p.HoldDownMax, p.HoldDownMin, p.FirstHoldDown = s(100), s(300), s(100), s(100)
			},
			steps: []step{
				{at: s(0), votes: eastDown, want: Down, failures: 1, reason: ReasonConfirmation},
				{at: s(1), votes: eastUp, want: Down, held: s(101), failures: 1, reason: ReasonHoldDown},
				{at: s(2), votes: eastDown, want: Down, failures: 2, reason: ReasonConfirmation},
				{at: s(3), votes: eastUp, want: Down, held: s(203), failures: 2, reason: ReasonHoldDown},
				{at: s(4), votes: eastDown, want: Down, failures: 3, reason: ReasonConfirmation},
				{at: s(5), votes: eastUp, want: Down, held: s(305), failures: 3, reason: ReasonHoldDown},
			},
		},
		{
			name: "failures are forgotten after staying up for the flap window",
			steps: []step{
				{at: s(0), votes: eastDown, want: Down, failures: 1, reason: ReasonConfirmation},
				{at: s(5), votes: eastUp, want: Down, held: s(35), failures: 1, reason: ReasonHoldDown},
				{at: s(35), votes: eastUp, want: Up, failures: 1, reason: ReasonHoldDown},
				{at: s(335), votes: eastUp, want: Up, failures: 0, reason: ReasonHoldDown},
				{at: s(340), votes: eastDown, want: Down, failures: 1, reason: ReasonConfirmation},
				{at: s(345), votes: eastUp, want: Down, held: s(375), failures: 1, reason: ReasonHoldDown},
			},
		},
		{
			name: "failures are remembered while up for less than the flap window",
			steps: []step{
				{at: s(0), votes: eastDown, want: Down, failures: 1, reason: ReasonConfirmation},
				{at: s(5), votes: eastUp, want: Down, held: s(35), failures: 1, reason: ReasonHoldDown},
				{at: s(35), votes: eastUp, want: Up, failures: 1, reason: ReasonHoldDown},
				{at: s(334), votes: eastDown, want: Down, failures: 2, reason: ReasonConfirmation},
				{at: s(335), votes: eastUp, want: Down, held: s(395), failures: 2, reason: ReasonHoldDown},
			},
		},
		{
			name: "a tie during the hold keeps its clock without counting a failure",
			steps: []step{
				{at: s(0), votes: eastDown, want: Down, failures: 1, reason: ReasonConfirmation},
				{at: s(10), votes: eastUp, want: Down, held: s(40), failures: 1, reason: ReasonHoldDown},
				{at: s(20), votes: eastTie, want: Down, held: s(40), failures: 1, reason: ReasonHoldDown},
				{at: s(25), votes: eastUp, want: Down, held: s(40), failures: 1, reason: ReasonHoldDown},
				{at: s(40), votes: eastTie, want: Down, held: s(40), failures: 1, reason: ReasonHoldDown},
				{at: s(41), votes: eastUp, want: Up, failures: 1, reason: ReasonHoldDown},
			},
		},
		{
			name: "a freeze during the hold keeps its clock",
			steps: []step{
				{at: s(0), votes: eastDown, want: Down, failures: 1, reason: ReasonConfirmation},
				{at: s(10), votes: eastUp, want: Down, held: s(40), failures: 1, reason: ReasonHoldDown},
				{at: s(20), votes: nil, want: Down, held: s(40), failures: 1, reason: ReasonHoldDown},
				{at: s(40), votes: eastUp, want: Up, failures: 1, reason: ReasonHoldDown},
			},
		},
		{
			name: "the release waits for a call with an up verdict",
			steps: []step{
				{at: s(0), votes: eastDown, want: Down, failures: 1, reason: ReasonConfirmation},
				{at: s(10), votes: eastUp, want: Down, held: s(40), failures: 1, reason: ReasonHoldDown},
				{at: s(45), votes: nil, want: Down, held: s(40), failures: 1, reason: ReasonHoldDown},
				{at: s(50), votes: eastUp, want: Up, failures: 1, reason: ReasonHoldDown},
			},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			w := newWorld(t, fixture(t))
			fixedLadder(&w.params)
			if tc.params != nil {
				tc.params(&w.params)
			}
			w.steps(t, tc.steps)
		})
	}
}

// steps runs the steps in order and checks the east endpoint after each.
func (w *world) steps(t *testing.T, steps []step) {
	t.Helper()
	for _, st := range steps {
		d := w.at(st.at, st.votes...)
		e := endpoint(t, d, ipEast)
		at := fmt.Sprintf("at %v", st.at)
		assert.Equal(t, st.want, e.State, at)
		assert.Equal(t, st.failures, e.Failures, at+": failures")
		assert.Equal(t, st.reason, e.Reason, at+": reason")
		if st.held == 0 {
			assert.False(t, e.Held(), at+": held until %v", e.HeldUntil)
		} else {
			assert.Equal(t, t0.Add(st.held), e.HeldUntil, at+": held until")
		}
	}
}

func TestHoldDownChanges(t *testing.T) {
	w := newWorld(t, fixture(t))
	fixedLadder(&w.params)
	d := w.at(0, eastDown...)
	assert.Equal(t, []string{ipEast + " unknown->down confirmation"}, reasons(d))
	assert.True(t, d.StatesChanged)

	d = w.at(s(10), eastUp...)
	assert.Equal(t, []string{ipEast + " down->down hold-down"}, reasons(d), "held after recovery")
	assert.Equal(t, []string{"east-1", "eu-1", "west-1"}, d.Changes[0].Voters)
	assert.True(t, endpoint(t, d, ipEast).Returning, "held, it comes back within the flap window")
	assert.True(t, d.StatesChanged, "first decided down from unknown it was not awaited; held, it is: the answers it is missing from get doubt_ttl")

	d = w.at(s(40), eastUp...)
	assert.Equal(t, []string{ipEast + " down->up hold-down"}, reasons(d), "released after hold-down")
	assert.True(t, d.StatesChanged)
	assert.Equal(t, t0.Add(s(40)), endpoint(t, d, ipEast).Since)
	assert.Equal(t, t0.Add(s(40)), endpoint(t, d, ipEast).RecoveredAt)
}

func TestHoldFor(t *testing.T) {
	cases := []struct {
		name     string
		params   func(*Params)
		failures int
		want     time.Duration
	}{
		{"a first failure holds for the short first_hold_down", nil, 1, s(3)},
		{"no recorded failure holds for first_hold_down too", nil, 0, s(3)},
		{"a second failure within the flap window waits hold_down_min doubled", nil, 2, s(10)},
		{"a third failure doubles it again", nil, 3, s(20)},
		{"the doubling that would pass hold_down stops on it", nil, 4, s(30)},
		{"past hold_down it keeps doubling from hold_down", nil, 5, s(60)},
		{"the seventh failure is eight times hold_down", nil, 7, s(240)},
		{"the eighth failure reaches the cap", nil, 8, s(300)},
		{"many failures stay at the cap", nil, 60, s(300)},
		{"hold_down_min equal to hold_down gives the fixed ladder", fixedLadder, 2, s(60)},
		{"the fixed ladder reaches the cap at the fifth failure", fixedLadder, 5, s(300)},
		{"a hold_down_min that doubles exactly onto hold_down lands on it", func(p *Params) { p.HoldDownMin = s(15) }, 2, s(30)},
		{"first_hold_down equal to hold_down_min gives the former ladder's first rung", func(p *Params) { p.FirstHoldDown = p.HoldDownMin }, 1, s(5)},
		{"first_hold_down never passes hold_down_max", func(p *Params) { p.FirstHoldDown, p.HoldDownMax = s(20), s(10) }, 1, s(10)},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			p := DefaultParams()
			if tc.params != nil {
				tc.params(&p)
			}
			assert.Equal(t, tc.want, p.HoldFor(tc.failures))
		})
	}
}

// TestAdaptiveHoldDown pins the ladder at the defaults: first_hold_down 3s,
// hold_down_min 5s (a second failure waits 10s), hold_down 30s,
// hold_down_max 300s, flap_window 60s.
func TestAdaptiveHoldDown(t *testing.T) {
	cases := []struct {
		name  string
		steps []step
	}{
		{
			name: "a first failure gets the short hold-down",
			steps: []step{
				{at: s(0), votes: eastDown, want: Down, failures: 1, reason: ReasonConfirmation},
				{at: s(3), votes: eastUp, want: Down, held: s(6), failures: 1, reason: ReasonHoldDown},
				{at: s(5), votes: eastUp, want: Down, held: s(6), failures: 1, reason: ReasonHoldDown},
				{at: s(6), votes: eastUp, want: Up, failures: 1, reason: ReasonHoldDown},
			},
		},
		{
			name: "repeated flaps double the hold-down each time",
			steps: []step{
				{at: s(0), votes: eastDown, want: Down, failures: 1, reason: ReasonConfirmation},
				{at: s(1), votes: eastUp, want: Down, held: s(4), failures: 1, reason: ReasonHoldDown},
				{at: s(4), votes: eastUp, want: Up, failures: 1, reason: ReasonHoldDown},
				{at: s(10), votes: eastDown, want: Down, failures: 2, reason: ReasonConfirmation},
				{at: s(11), votes: eastUp, want: Down, held: s(21), failures: 2, reason: ReasonHoldDown},
				{at: s(21), votes: eastUp, want: Up, failures: 2, reason: ReasonHoldDown},
				{at: s(30), votes: eastDown, want: Down, failures: 3, reason: ReasonConfirmation},
				{at: s(31), votes: eastUp, want: Down, held: s(51), failures: 3, reason: ReasonHoldDown},
				{at: s(51), votes: eastUp, want: Up, failures: 3, reason: ReasonHoldDown},
			},
		},
		{
			name: "a flap during the hold climbs a rung without a release",
			steps: []step{
				{at: s(0), votes: eastDown, want: Down, failures: 1, reason: ReasonConfirmation},
				{at: s(1), votes: eastUp, want: Down, held: s(4), failures: 1, reason: ReasonHoldDown},
				{at: s(3), votes: eastDown, want: Down, failures: 2, reason: ReasonConfirmation},
				{at: s(5), votes: eastUp, want: Down, held: s(15), failures: 2, reason: ReasonHoldDown},
				{at: s(7), votes: eastDown, want: Down, failures: 3, reason: ReasonConfirmation},
				{at: s(9), votes: eastUp, want: Down, held: s(29), failures: 3, reason: ReasonHoldDown},
				{at: s(11), votes: eastDown, want: Down, failures: 4, reason: ReasonConfirmation},
				{at: s(13), votes: eastUp, want: Down, held: s(43), failures: 4, reason: ReasonHoldDown},
				{at: s(15), votes: eastDown, want: Down, failures: 5, reason: ReasonConfirmation},
				{at: s(17), votes: eastUp, want: Down, held: s(77), failures: 5, reason: ReasonHoldDown},
			},
		},
		{
			name: "a quiet flap window resets the ladder to the short hold-down",
			steps: []step{
				{at: s(0), votes: eastDown, want: Down, failures: 1, reason: ReasonConfirmation},
				{at: s(1), votes: eastUp, want: Down, held: s(4), failures: 1, reason: ReasonHoldDown},
				{at: s(3), votes: eastDown, want: Down, failures: 2, reason: ReasonConfirmation},
				{at: s(4), votes: eastUp, want: Down, held: s(14), failures: 2, reason: ReasonHoldDown},
				{at: s(14), votes: eastUp, want: Up, failures: 2, reason: ReasonHoldDown},
				{at: s(74), votes: eastUp, want: Up, failures: 0, reason: ReasonHoldDown},
				{at: s(80), votes: eastDown, want: Down, failures: 1, reason: ReasonConfirmation},
				{at: s(81), votes: eastUp, want: Down, held: s(84), failures: 1, reason: ReasonHoldDown},
			},
		},
		{
			name: "a failure just inside the flap window is a repeated flap",
			steps: []step{
				{at: s(0), votes: eastDown, want: Down, failures: 1, reason: ReasonConfirmation},
				{at: s(1), votes: eastUp, want: Down, held: s(4), failures: 1, reason: ReasonHoldDown},
				{at: s(4), votes: eastUp, want: Up, failures: 1, reason: ReasonHoldDown},
				{at: s(61), votes: eastDown, want: Down, failures: 2, reason: ReasonConfirmation},
				{at: s(62), votes: eastUp, want: Down, held: s(72), failures: 2, reason: ReasonHoldDown},
			},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			w := newWorld(t, fixture(t))
			w.steps(t, tc.steps)
		})
	}
}

func TestNextDue(t *testing.T) {
	p := DefaultParams()
	w := newWorld(t, fixture(t))
	d := w.at(0, eastDown...)
	assert.True(t, d.NextDue(p).IsZero(), "nothing waits while the endpoint is down without an up verdict")
	d = w.at(s(2), eastUp...)
	assert.Equal(t, t0.Add(s(5)), d.NextDue(p), "the hold-down ends at 5s")
	d = w.at(s(5), eastUp...)
	assert.True(t, d.NextDue(p).IsZero(), "released: nothing waits")
	assert.True(t, (*Decision)(nil).NextDue(p).IsZero(), "a nil decision waits for nothing")
}

func TestTimelineHoldDown(t *testing.T) {
	p := DefaultParams()
	cases := []struct {
		name     string
		failures int
		down     bool
		want     time.Duration
	}{
		{"an endpoint that never failed would be held the short first hold-down", 0, false, s(3)},
		{"a down endpoint after its first failure waits the short first hold-down", 1, true, s(3)},
		{"an up endpoint that flapped once would wait the next rung", 1, false, s(10)},
		{"a down endpoint after three flaps waits the third rung", 3, true, s(20)},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			assert.Equal(t, tc.want, Timeline{Failures: tc.failures}.HoldDown(p, tc.down))
		})
	}
}
