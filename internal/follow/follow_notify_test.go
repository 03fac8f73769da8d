package follow

import (
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/meridian-gslb/meridian/internal/notify"
	"github.com/meridian-gslb/meridian/internal/vote"
)

// recordingNotifier keeps the events a Follower sends.
type recordingNotifier struct {
	mu     sync.Mutex
	events []notify.Event
}

func (n *recordingNotifier) Notify(e notify.Event) {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.events = append(n.events, e)
}

func TestFollowerNotifiesAFailoverAndItsRecoveryButNotTheFirstVerdicts(t *testing.T) {
	start := time.Now()
	r := &fakeRing{members: twoRegions()}
	f, _ := newFollower(t, r)
	n := &recordingNotifier{}
	f.Notifier = n
	for _, p := range r.members {
		for _, a := range []string{"192.0.2.1", "192.0.2.2"} {
			r.vote(p.Name, p.Region, a, vote.Up, start)
		}
	}
	f.Decide(start)
	require.Empty(t, n.events, "first verdicts up are not notified")

	r.vote("east-1", "us-east", "192.0.2.2", vote.Down, start.Add(time.Second))
	r.vote("west-1", "us-west", "192.0.2.2", vote.Down, start.Add(time.Second))
	f.Decide(start.Add(2 * time.Second))
	require.Len(t, n.events, 1)
	e := n.events[0]
	assert.Equal(t, notify.EventFailover, e.Kind)
	assert.Equal(t, "app.gslb.test.", e.Service)
	assert.Equal(t, "192.0.2.2", e.Endpoint)
	assert.Equal(t, notify.ActionTrigger, e.Action)
	assert.Equal(t, []string{"east-1", "west-1"}, e.Voters)

	r.vote("east-1", "us-east", "192.0.2.2", vote.Up, start.Add(3*time.Second))
	r.vote("west-1", "us-west", "192.0.2.2", vote.Up, start.Add(3*time.Second))
	f.Decide(start.Add(3 * time.Second)) // held down: no state change
	require.Len(t, n.events, 1, "a hold-down starting is not notified")
	r.vote("east-1", "us-east", "192.0.2.2", vote.Up, start.Add(8*time.Second)) // fresh votes when the hold-down ends
	r.vote("west-1", "us-west", "192.0.2.2", vote.Up, start.Add(8*time.Second))
	f.Decide(start.Add(9 * time.Second))
	require.Len(t, n.events, 2)
	assert.Equal(t, notify.EventDecided, n.events[1].Kind)
	assert.Equal(t, notify.ActionResolve, n.events[1].Action)
	assert.Equal(t, e.DedupKey, n.events[1].DedupKey)
}
