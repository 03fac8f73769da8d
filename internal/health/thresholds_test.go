package health

import (
	"github.com/meridian-gslb/meridian/internal/vote"
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestThresholds(t *testing.T) {
	const (
		ok   = true
		fail = false
	)
	type step struct {
		ok      bool
		status  vote.Status
		changed bool
	}
	tests := []struct {
		name       string
		fall, rise int
		steps      []step
	}{
		{
			name: "a new subject is unknown until a threshold is reached",
			fall: 3, rise: 2,
			steps: []step{{ok, vote.Unknown, false}, {fail, vote.Unknown, false}, {fail, vote.Unknown, false}},
		},
		{
			name: "rise successes from unknown go up",
			fall: 3, rise: 2,
			steps: []step{{ok, vote.Unknown, false}, {ok, vote.Up, true}, {ok, vote.Up, false}},
		},
		{
			name: "fall failures from unknown go down",
			fall: 3, rise: 2,
			steps: []step{{fail, vote.Unknown, false}, {fail, vote.Unknown, false}, {fail, vote.Down, true}, {fail, vote.Down, false}},
		},
		{
			name: "from unknown the first threshold reached decides even when fall is smaller",
			fall: 1, rise: 5,
			steps: []step{{ok, vote.Unknown, false}, {ok, vote.Unknown, false}, {fail, vote.Down, true}},
		},
		{
			name: "two failures after being up stay up with fall 3",
			fall: 3, rise: 2,
			steps: []step{{ok, vote.Unknown, false}, {ok, vote.Up, true}, {fail, vote.Up, false}, {fail, vote.Up, false}},
		},
		{
			name: "three failures after being up go down with fall 3",
			fall: 3, rise: 2,
			steps: []step{{ok, vote.Unknown, false}, {ok, vote.Up, true}, {fail, vote.Up, false}, {fail, vote.Up, false}, {fail, vote.Down, true}},
		},
		{
			name: "a success between failures resets the failure run and stays up",
			fall: 3, rise: 2,
			steps: []step{
				{ok, vote.Unknown, false}, {ok, vote.Up, true},
				{fail, vote.Up, false}, {fail, vote.Up, false}, {ok, vote.Up, false}, {fail, vote.Up, false}, {fail, vote.Up, false},
			},
		},
		{
			name: "one success after being down stays down with rise 2",
			fall: 2, rise: 2,
			steps: []step{{fail, vote.Unknown, false}, {fail, vote.Down, true}, {ok, vote.Down, false}},
		},
		{
			name: "rise successes after being down come back up",
			fall: 2, rise: 2,
			steps: []step{{fail, vote.Unknown, false}, {fail, vote.Down, true}, {ok, vote.Down, false}, {ok, vote.Up, true}},
		},
		{
			name: "a failure between successes resets the success run and stays down",
			fall: 2, rise: 3,
			steps: []step{
				{fail, vote.Unknown, false}, {fail, vote.Down, true},
				{ok, vote.Down, false}, {ok, vote.Down, false}, {fail, vote.Down, false}, {ok, vote.Down, false}, {ok, vote.Down, false}, {ok, vote.Up, true},
			},
		},
		{
			name: "fall and rise of one flip on every outcome",
			fall: 1, rise: 1,
			steps: []step{{ok, vote.Up, true}, {fail, vote.Down, true}, {fail, vote.Down, false}, {ok, vote.Up, true}},
		},
		{
			name: "zero fall and rise count as one",
			fall: 0, rise: 0,
			steps: []step{{fail, vote.Down, true}, {ok, vote.Up, true}},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			th := Thresholds{Fall: tt.fall, Rise: tt.rise}
			assert.Equal(t, vote.Unknown, th.Status())
			for i, st := range tt.steps {
				s, changed := th.Observe(st.ok)
				assert.Equalf(t, st.status, s, "status after step %d (ok=%v)", i+1, st.ok)
				assert.Equalf(t, st.changed, changed, "changed after step %d (ok=%v)", i+1, st.ok)
				assert.Equal(t, s, th.Status())
			}
		})
	}
}

func TestThresholdsHeadingAndTurned(t *testing.T) {
	const (
		ok   = true
		fail = false
	)
	type step struct {
		ok      bool
		heading vote.Status
		turned  bool
	}
	tests := []struct {
		name  string
		steps []step
	}{
		{
			name:  "a new subject heads for up after its first success and turns there",
			steps: []step{{ok, vote.Up, true}, {ok, vote.Unknown, false}},
		},
		{
			name:  "a new subject heads for down after its first failure until fall is reached",
			steps: []step{{fail, vote.Down, true}, {fail, vote.Down, false}, {fail, vote.Unknown, false}},
		},
		{
			name:  "the first failure of an up subject turns it and heads for down",
			steps: []step{{ok, vote.Up, true}, {ok, vote.Unknown, false}, {fail, vote.Down, true}, {fail, vote.Down, false}},
		},
		{
			name:  "a success that breaks a failure run of an up subject heads nowhere",
			steps: []step{{ok, vote.Up, true}, {ok, vote.Unknown, false}, {fail, vote.Down, true}, {ok, vote.Unknown, false}},
		},
		{
			name:  "the first success of a down subject turns it and heads for up",
			steps: []step{{fail, vote.Down, true}, {fail, vote.Down, false}, {fail, vote.Unknown, false}, {ok, vote.Up, true}, {ok, vote.Unknown, false}},
		},
		{
			name:  "a failure of a down subject that was recovering heads nowhere",
			steps: []step{{fail, vote.Down, true}, {fail, vote.Down, false}, {fail, vote.Unknown, false}, {ok, vote.Up, true}, {fail, vote.Unknown, false}},
		},
		{
			name:  "more failures of a down subject do not turn it",
			steps: []step{{fail, vote.Down, true}, {fail, vote.Down, false}, {fail, vote.Unknown, false}, {fail, vote.Unknown, false}},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			th := Thresholds{Fall: 3, Rise: 2}
			assert.Equal(t, vote.Unknown, th.Heading(), "nothing observed yet")
			for i, st := range tt.steps {
				th.Observe(st.ok)
				assert.Equalf(t, st.heading, th.Heading(), "heading after step %d (ok=%v)", i+1, st.ok)
				assert.Equalf(t, st.turned, th.Turned(), "turned after step %d (ok=%v)", i+1, st.ok)
			}
		})
	}
}
