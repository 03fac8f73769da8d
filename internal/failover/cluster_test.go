package failover

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"

	"github.com/meridian-gslb/meridian/internal/engine"
	"github.com/meridian-gslb/meridian/internal/vote"
)

// hb is heartbeat votes about the eu cluster: probers that see it, probers that miss it.
func hb(seen []string, missed ...string) []vote.Vote {
	var out []vote.Vote
	for _, p := range seen {
		out = append(out, sees(p, "eu", vote.Up))
	}
	for _, p := range missed {
		out = append(out, sees(p, "eu", vote.Down))
	}
	return out
}

func TestClusterHeartbeats(t *testing.T) {
	type cstep struct {
		at       time.Duration
		votes    []vote.Vote
		want     State
		reason   string
		engine   engine.State // Decision.Cluster("eu")
		endpoint engine.State // Decision.Endpoint(app, ipEU); its own votes always say up
		held     time.Duration
	}
	everyone := []string{"east-1", "east-2", "west-1", "eu-1"}
	cases := []struct {
		name  string
		steps []cstep
	}{
		{
			name: "a monitored cluster whose heartbeat every prober sees is ready",
			steps: []cstep{
				{at: s(0), votes: hb(everyone), want: Ready, reason: ReasonNew, engine: engine.Up, endpoint: engine.Up},
			},
		},
		{
			name: "one prober missing the heartbeat makes the cluster unreachable without traffic effect",
			steps: []cstep{
				{at: s(0), votes: hb(everyone), want: Ready, reason: ReasonNew, engine: engine.Up, endpoint: engine.Up},
				{at: s(5), votes: hb([]string{"east-2", "west-1", "eu-1"}, "east-1"), want: Unreachable, reason: ReasonUnconfirmed, engine: engine.Unknown, endpoint: engine.Up},
			},
		},
		{
			name: "a single missing vote from a region short of quorum still makes the cluster unreachable",
			steps: []cstep{
				{at: s(0), votes: hb(nil, "east-1"), want: Unreachable, reason: ReasonUnconfirmed, engine: engine.Unknown, endpoint: engine.Up},
			},
		},
		{
			name: "a quorum across regions fails the cluster over and takes its endpoints out",
			steps: []cstep{
				{at: s(0), votes: hb(everyone), want: Ready, reason: ReasonNew, engine: engine.Up, endpoint: engine.Up},
				{at: s(5), votes: hb([]string{"eu-1"}, "east-1", "west-1"), want: FailedOver, reason: ReasonHeartbeatLost, engine: engine.Down, endpoint: engine.Down},
			},
		},
		{
			name: "a quorum in one region only leaves the cluster unreachable",
			steps: []cstep{
				{at: s(0), votes: hb([]string{"west-1"}, "east-1", "east-2"), want: Unreachable, reason: ReasonUnconfirmed, engine: engine.Unknown, endpoint: engine.Up},
			},
		},
		{
			name: "an unreachable cluster is ready again when every vote sees the heartbeat",
			steps: []cstep{
				{at: s(0), votes: hb([]string{"west-1"}, "east-1"), want: Unreachable, reason: ReasonUnconfirmed, engine: engine.Unknown, endpoint: engine.Up},
				{at: s(5), votes: hb(everyone), want: Ready, reason: ReasonThreshold, engine: engine.Up, endpoint: engine.Up},
			},
		},
		{
			name: "a failed-over cluster stays failed over without fresh votes",
			steps: []cstep{
				{at: s(0), votes: hb(nil, "east-1", "west-1"), want: FailedOver, reason: ReasonHeartbeatLost, engine: engine.Down, endpoint: engine.Down},
				{at: s(60), votes: nil, want: FailedOver, reason: ReasonHeartbeatLost, engine: engine.Down, endpoint: engine.Down},
			},
		},
		{
			name: "a failed-over cluster is ready again only after the hold-down",
			steps: []cstep{
				{at: s(0), votes: hb(nil, "east-1", "west-1"), want: FailedOver, reason: ReasonHeartbeatLost, engine: engine.Down, endpoint: engine.Down},
				{at: s(10), votes: hb(everyone), want: FailedOver, reason: ReasonHoldDown, engine: engine.Down, endpoint: engine.Down, held: s(40)},
				{at: s(39), votes: hb(everyone), want: FailedOver, reason: ReasonHoldDown, engine: engine.Down, endpoint: engine.Down, held: s(40)},
				{at: s(40), votes: hb(everyone), want: Ready, reason: ReasonHoldDown, engine: engine.Up, endpoint: engine.Up},
			},
		},
		{
			name: "a failed-over cluster that some probers still miss comes back unreachable",
			steps: []cstep{
				{at: s(0), votes: hb(nil, "east-1", "west-1"), want: FailedOver, reason: ReasonHeartbeatLost, engine: engine.Down, endpoint: engine.Down},
				{at: s(10), votes: hb([]string{"east-2", "west-1", "eu-1"}, "east-1"), want: FailedOver, reason: ReasonHoldDown, engine: engine.Down, endpoint: engine.Down, held: s(40)},
				{at: s(40), votes: hb([]string{"east-2", "west-1", "eu-1"}, "east-1"), want: Unreachable, reason: ReasonHoldDown, engine: engine.Unknown, endpoint: engine.Up},
			},
		},
		{
			name: "a second heartbeat loss soon after recovery doubles the hold-down",
			steps: []cstep{
				{at: s(0), votes: hb(nil, "east-1", "west-1"), want: FailedOver, reason: ReasonHeartbeatLost, engine: engine.Down, endpoint: engine.Down},
				{at: s(10), votes: hb(everyone), want: FailedOver, reason: ReasonHoldDown, engine: engine.Down, endpoint: engine.Down, held: s(40)},
				{at: s(40), votes: hb(everyone), want: Ready, reason: ReasonHoldDown, engine: engine.Up, endpoint: engine.Up},
				{at: s(50), votes: hb(nil, "east-1", "west-1"), want: FailedOver, reason: ReasonHeartbeatLost, engine: engine.Down, endpoint: engine.Down},
				{at: s(55), votes: hb(everyone), want: FailedOver, reason: ReasonHoldDown, engine: engine.Down, endpoint: engine.Down, held: s(115)},
			},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			w := newWorld(t, fixture(t))
			fixedLadder(&w.params)
			for _, st := range tc.steps {
				// The eu endpoint's own votes always say up: only the cluster takes it out.
				d := w.at(st.at, all(st.votes, everyoneUp())...)
				c := cluster(t, d, "eu")
				assert.Equal(t, st.want, c.State, "at %v", st.at)
				assert.Equal(t, st.reason, c.Reason, "at %v: reason", st.at)
				assert.Equal(t, st.engine, d.Cluster("eu"), "at %v: Cluster", st.at)
				assert.Equal(t, st.endpoint, d.Endpoint(app, ipEU), "at %v: Endpoint", st.at)
				assert.Equal(t, Up, endpoint(t, d, ipEU).State, "at %v: the endpoint's own state", st.at)
				if st.held == 0 {
					assert.False(t, c.Held(), "at %v: held", st.at)
				} else {
					assert.Equal(t, t0.Add(st.held), c.HeldUntil, "at %v: held until", st.at)
				}
			}
		})
	}
}

func TestClusterHoldDownIsAdaptiveToo(t *testing.T) {
	everyone := []string{"east-1", "east-2", "west-1", "eu-1"}
	w := newWorld(t, fixture(t))
	d := w.at(0, all(hb(nil, "east-1", "west-1"), everyoneUp())...)
	assert.Equal(t, FailedOver, cluster(t, d, "eu").State)
	d = w.at(s(2), all(hb(everyone), everyoneUp())...)
	assert.Equal(t, t0.Add(s(5)), cluster(t, d, "eu").HeldUntil, "a first loss is held first_hold_down")
	d = w.at(s(5), all(hb(everyone), everyoneUp())...)
	assert.Equal(t, Ready, cluster(t, d, "eu").State)
	w.at(s(20), all(hb(nil, "east-1", "west-1"), everyoneUp())...)
	d = w.at(s(21), all(hb(everyone), everyoneUp())...)
	assert.Equal(t, t0.Add(s(31)), cluster(t, d, "eu").HeldUntil, "a second loss within the flap window doubles it")
}

func TestClustersWithoutHeartbeatAreAlwaysReady(t *testing.T) {
	w := newWorld(t, fixture(t))
	var votes []vote.Vote
	for _, p := range ring4 {
		votes = append(votes, sees(p.Name, "east", vote.Down))
	}
	d := w.at(0, votes...)
	c := cluster(t, d, "east")
	assert.Equal(t, Ready, c.State)
	assert.False(t, c.Monitored)
	assert.Equal(t, ReasonNoHeartbeat, c.Reason)
	assert.Equal(t, engine.Unknown, d.Cluster("east"), "ready but not confirmed by heartbeats")
	assert.Empty(t, d.Changes)
}

func TestRemovingTheHeartbeatConfigMakesAFailedOverClusterReady(t *testing.T) {
	w := newWorld(t, fixture(t))
	d := w.at(0, hb(nil, "east-1", "west-1")...)
	assert.Equal(t, FailedOver, cluster(t, d, "eu").State)

	w.desired = fixture(t)
	w.desired.Clusters[2].Heartbeat = nil // eu; Normalize keeps the order
	d = w.at(s(5), hb(nil, "east-1", "west-1")...)
	assert.Equal(t, Ready, cluster(t, d, "eu").State)
	assert.Equal(t, []string{"eu failed-over->ready no-heartbeat"}, reasons(d))
	assert.True(t, d.StatesChanged)
}

func TestHeartbeatLossChangeNamesTheConfirmingVoters(t *testing.T) {
	w := newWorld(t, fixture(t))
	d := w.at(0, hb([]string{"eu-1"}, "west-1", "east-2", "east-1")...)
	if assert.Len(t, d.Changes, 1) {
		c := d.Changes[0]
		assert.Equal(t, Change{Subject: vote.ClusterSubject("eu"), From: Ready, To: FailedOver, Reason: ReasonHeartbeatLost, Voters: []string{"east-1", "east-2", "west-1"}, At: t0}, c)
	}
}
