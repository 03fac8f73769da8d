package failover

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/meridian-gslb/meridian/internal/engine"
	"github.com/meridian-gslb/meridian/internal/vote"
)

func TestDoubt(t *testing.T) {
	// One region's probers say down: short of the two regions a down
	// verdict needs, so the endpoint stays up (and answered).
	oneRegionDown := all(says("east-1", vote.Down, ipEast), says("east-2", vote.Down, ipEast),
		says("west-1", vote.Up, ipEast, ipWest, ipEU), says("eu-1", vote.Up, ipEast, ipWest, ipEU),
		says("east-1", vote.Up, ipWest, ipEU), says("east-2", vote.Up, ipWest, ipEU))
	everyoneDown := eastDownEverywhere()
	reprobing := func(s vote.Subject) bool { return s == vote.EndpointSubject(app, ipEast) }
	type step struct {
		at        int // seconds after t0
		votes     []vote.Vote
		state     State
		doubt     bool
		braked    bool // two removals at once: the brake holds one (west), east goes
		returning bool // down but may come back soon
	}
	cases := []struct {
		name  string
		doubt func(vote.Subject) bool
		steps []step
	}{
		{name: "every prober says up: no doubt", steps: []step{{0, everyoneUp(), Up, false, false, false}}},
		{name: "down votes short of a decision put an answered endpoint in doubt", steps: []step{
			{0, everyoneUp(), Up, false, false, false}, {1, oneRegionDown, Up, true, false, false}, {2, everyoneUp(), Up, false, false, false}}},
		{name: "a down endpoint is not in doubt (it is not answered) but returning for the flap window after it went down, then settled", steps: []step{
			{0, everyoneUp(), Up, false, false, false}, {1, everyoneDown, Down, false, false, true},
			{60, everyoneDown, Down, false, false, true}, {61, everyoneDown, Down, false, false, false}}},
		{name: "a long-down endpoint whose hold-down ends within the flap window is returning again", steps: []step{
			{0, everyoneUp(), Up, false, false, false}, {1, everyoneDown, Down, false, false, true},
			{100, everyoneDown, Down, false, false, false}, {101, everyoneUp(), Down, false, false, true}}},
		{name: "a recovered endpoint stays in doubt for the flap window, then it is settled", steps: []step{
			{0, everyoneUp(), Up, false, false, false}, {1, everyoneDown, Down, false, false, true}, {2, everyoneUp(), Down, false, false, true},
			{5, everyoneUp(), Up, true, false, false}, {64, everyoneUp(), Up, true, false, false}, {65, everyoneUp(), Up, false, false, false}}},
		{name: "this node re-probing it after a failed probe puts it in doubt before any vote", doubt: reprobing, steps: []step{
			{0, everyoneUp(), Up, true, false, false}}},
		{name: "a held removal (the brake) is in doubt: still answered", steps: []step{
			{0, everyoneUp(), Up, false, false, false},
			{1, all(says("east-1", vote.Down, ipEast, ipWest), says("east-2", vote.Down, ipEast, ipWest), says("west-1", vote.Down, ipEast, ipWest), says("eu-1", vote.Down, ipEast, ipWest),
				says("east-1", vote.Up, ipEU), says("east-2", vote.Up, ipEU), says("west-1", vote.Up, ipEU), says("eu-1", vote.Up, ipEU)), Down, true, true, false}}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			w := newWorld(t, fixture(t))
			w.doubt = tc.doubt
			for _, st := range tc.steps {
				d := w.at(s(st.at), st.votes...)
				e := endpoint(t, d, ipEast)
				assert.Equal(t, st.state, e.State, "at %ds", st.at)
				if st.braked { // the brake let east go: west is held, still answered
					e = endpoint(t, d, ipWest)
					require.True(t, e.Braked(), "at %ds: one of the two removals is held", st.at)
				}
				assert.Equal(t, st.doubt, e.Doubt, "at %ds: %s in doubt", st.at, e.Subject.Target)
				if !st.braked {
					assert.Equal(t, st.returning, endpoint(t, d, ipEast).Returning, "at %ds: returning", st.at)
				}
				assert.Equal(t, st.doubt || st.returning, d.Doubt(app, e.Subject.Target), "Decision.Doubt agrees")
			}
		})
	}
}

func TestAChangeOfDoubtIsAChangeOfState(t *testing.T) {
	w := newWorld(t, fixture(t))
	a := w.at(0, everyoneUp()...)
	w.doubt = func(s vote.Subject) bool { return s == vote.EndpointSubject(app, ipEast) }
	b := w.at(s(1), everyoneUp()...)
	assert.False(t, a.SameStates(b), "the engine must recompile: the answer's TTL changes")
	assert.True(t, b.StatesChanged)
	changed, ok := b.ChangedSince(a)
	require.True(t, ok)
	assert.Equal(t, map[string]bool{app: true}, changed)
	var _ engine.DoubtHealth = b

	// Returning flips when the endpoint has been down for the flap window:
	// the answers it is missing from get the zone's TTL again.
	w = newWorld(t, fixture(t))
	w.at(0, everyoneUp()...)
	w.at(s(1), eastDownEverywhere()...)
	before := w.at(s(60), eastDownEverywhere()...)
	require.True(t, endpoint(t, before, ipEast).Returning)
	after := w.at(s(61), eastDownEverywhere()...)
	require.False(t, endpoint(t, after, ipEast).Returning)
	assert.True(t, after.StatesChanged, "the engine must recompile: the survivors' TTL changes")
	changed, ok = after.ChangedSince(before)
	require.True(t, ok)
	assert.Equal(t, map[string]bool{app: true}, changed)
}

func TestAnEndpointFirstDecidedDownIsNotAwaited(t *testing.T) {
	// After this process restarts (no previous decision), an endpoint that
	// may have been dead for long is decided down from Unknown: not awaited.
	w := newWorld(t, fixture(t))
	d := w.at(0, eastDownEverywhere()...)
	e := endpoint(t, d, ipEast)
	require.Equal(t, Down, e.State)
	assert.False(t, e.Returning)
	assert.False(t, d.Doubt(app, ipEast))
}

// eastDownEverywhere: every prober says east is down, west and eu up.
func eastDownEverywhere() []vote.Vote {
	return all(says("east-1", vote.Down, ipEast), says("east-2", vote.Down, ipEast), says("west-1", vote.Down, ipEast), says("eu-1", vote.Down, ipEast),
		says("east-1", vote.Up, ipWest, ipEU), says("east-2", vote.Up, ipWest, ipEU), says("west-1", vote.Up, ipWest, ipEU), says("eu-1", vote.Up, ipWest, ipEU))
}
