package failover

import (
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/meridian-gslb/meridian/internal/engine"
	"github.com/meridian-gslb/meridian/internal/model"
	"github.com/meridian-gslb/meridian/internal/vote"
)

func TestParamsFrom(t *testing.T) {
	off := false
	cases := []struct {
		name string
		edit func(*model.Desired)
		want Params
	}{
		{
			name: "a config without a decision section gives the documented defaults",
			want: Params{Interval: 5 * time.Second, FreshVotes: 3, MinRegions: 2, HoldDown: 30 * time.Second, HoldDownMax: 300 * time.Second, Brake: 0.5, Outliers: true,
				HoldDownMin: 5 * time.Second, FirstHoldDown: 3 * time.Second, FlapWindow: time.Minute},
		},
		{
			name: "health.interval and the decision section are read",
			edit: func(d *model.Desired) {
				d.Health.Interval = model.Duration(2 * time.Second)
				d.Decision = model.Decision{FreshVotes: 4, MinRegions: 3, HoldDown: model.Duration(time.Minute), HoldDownMax: model.Duration(10 * time.Minute), Brake: 0.25, Outliers: &off,
					HoldDownMin: model.Duration(2 * time.Second), FirstHoldDown: model.Duration(1500 * time.Millisecond), FlapWindow: model.Duration(5 * time.Minute)}
			},
			want: Params{Interval: 2 * time.Second, FreshVotes: 4, MinRegions: 3, HoldDown: time.Minute, HoldDownMax: 10 * time.Minute, Brake: 0.25, Outliers: false,
				HoldDownMin: 2 * time.Second, FirstHoldDown: 1500 * time.Millisecond, FlapWindow: 5 * time.Minute},
		},
		{
			name: "a hold_down longer than the default cap raises the cap",
			edit: func(d *model.Desired) { d.Decision.HoldDown = model.Duration(400 * time.Second) },
			want: Params{Interval: 5 * time.Second, FreshVotes: 3, MinRegions: 2, HoldDown: 400 * time.Second, HoldDownMax: 400 * time.Second, Brake: 0.5, Outliers: true,
				HoldDownMin: 5 * time.Second, FirstHoldDown: 3 * time.Second, FlapWindow: time.Minute},
		},
		{
			name: "a hold_down shorter than 1s is the first hold-down too",
			edit: func(d *model.Desired) { d.Decision.HoldDown = model.Duration(500 * time.Millisecond) },
			want: Params{Interval: 5 * time.Second, FreshVotes: 3, MinRegions: 2, HoldDown: 500 * time.Millisecond, HoldDownMax: 300 * time.Second, Brake: 0.5, Outliers: true,
				HoldDownMin: 500 * time.Millisecond, FirstHoldDown: 500 * time.Millisecond, FlapWindow: time.Minute},
		},
		{
			name: "a hold_down shorter than 5s is the foot of the ladder too",
			edit: func(d *model.Desired) { d.Decision.HoldDown = model.Duration(2 * time.Second) },
			want: Params{Interval: 5 * time.Second, FreshVotes: 3, MinRegions: 2, HoldDown: 2 * time.Second, HoldDownMax: 300 * time.Second, Brake: 0.5, Outliers: true,
				HoldDownMin: 2 * time.Second, FirstHoldDown: 2 * time.Second, FlapWindow: time.Minute},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			d := &model.Desired{
				Zones:    []model.Zone{{Apex: "example.test", Nameservers: []model.Nameserver{{Name: "ns1.example.test", IPv4: []string{"192.0.2.53"}}}}},
				Clusters: []model.Cluster{{Name: "east", Region: "us-east"}},
			}
			if tc.edit != nil {
				tc.edit(d)
			}
			n, err := model.Normalize(d)
			require.NoError(t, err)
			assert.Equal(t, tc.want, ParamsFrom(n))
		})
	}
	assert.Equal(t, DefaultParams(), ParamsFrom(nil), "nil gives the defaults")
	assert.Equal(t, DefaultParams(), Params{Outliers: true}.withDefaults(), "zero fields take the defaults")
}

func TestEngineHealth(t *testing.T) {
	w := newWorld(t, fixture(t))
	d := w.at(0, all(
		everyoneUp()[3:], // east-2, west-1, eu-1 say up about everything
		says("east-1", vote.Up, ipWest, ipEU),
		says("east-1", vote.Down, ipEast),
		[]vote.Vote{
			{Subject: vote.EndpointSubject(app, ipEast), Prober: "east-2", Status: vote.Down, Seq: 2},
			{Subject: vote.EndpointSubject(app, ipEast), Prober: "west-1", Status: vote.Down, Seq: 2},
		},
	)...)
	cases := []struct {
		name string
		got  engine.State
		want engine.State
	}{
		{"an endpoint decided down is down", d.Endpoint(app, ipEast), engine.Down},
		{"an endpoint decided up is up", d.Endpoint(app, ipWest), engine.Up},
		{"an endpoint the decision does not know is unknown", d.Endpoint(app, "192.0.2.99"), engine.Unknown},
		{"a service the decision does not know is unknown", d.Endpoint("other.example.test.", ipEast), engine.Unknown},
		{"a cluster without heartbeat is unknown", d.Cluster("east"), engine.Unknown},
		{"a monitored cluster without votes is unknown", d.Cluster("nowhere"), engine.Unknown},
		{"a nil decision reports unknown endpoints", (*Decision)(nil).Endpoint(app, ipEast), engine.Unknown},
		{"a nil decision reports unknown clusters", (*Decision)(nil).Cluster("east"), engine.Unknown},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) { assert.Equal(t, tc.want, tc.got) })
	}
}

func TestEngineCompilesWithTheDecision(t *testing.T) {
	desired := fixture(t)
	w := newWorld(t, desired)
	d := w.at(0, all(everyoneUp(), hb(nil, "east-1", "west-1"))...) // eu fails over
	snap, err := engine.Compile(desired, engine.Options{Health: d, Now: t0})
	require.NoError(t, err)
	got := map[string]engine.State{}
	for _, s := range snap.Services() {
		for _, e := range s.Endpoints {
			got[e.Target] = e.State
		}
	}
	assert.Equal(t, map[string]engine.State{ipEast: engine.Up, ipWest: engine.Up, ipEU: engine.Down}, got)
}

func TestStatesChanged(t *testing.T) {
	w := newWorld(t, fixture(t))
	d := w.at(0, everyoneUp()...)
	assert.True(t, d.StatesChanged, "the first decision always counts as a change")

	d = w.at(s(5), everyoneUp()...)
	assert.False(t, d.StatesChanged, "the same votes change nothing")
	assert.Empty(t, d.Changes)

	d = w.at(s(10), eastDown...)
	assert.True(t, d.StatesChanged, "an endpoint went down")

	d = w.at(s(15), eastUp...)
	assert.False(t, d.StatesChanged, "hold-down starting is not a state change")
	assert.Len(t, d.Changes, 1)

	d = w.at(s(20), all(eastUp, hb(nil, "east-1", "west-1"))...)
	assert.True(t, d.StatesChanged, "a cluster failed over")

	d = w.at(s(25), all(eastUp, hb(nil, "east-1", "west-1"), says("east-1", vote.Down, ipEU), says("west-1", vote.Down, ipEU))...)
	assert.Equal(t, Down, endpoint(t, d, ipEU).State)
	assert.False(t, d.StatesChanged, "an endpoint of a failed-over cluster going down changes nothing for the engine")

	prev := w.prev
	w.desired = fixture(t, bigService())
	d = w.at(s(30), eastUp...)
	assert.True(t, d.StatesChanged, "new endpoints in the config")
	assert.False(t, prev.SameStates(d))
	assert.True(t, d.SameStates(d))
	assert.False(t, d.SameStates(nil))
	assert.True(t, (*Decision)(nil).SameStates(nil))
}

// scenario is an input that exercises every rule at once: outliers, quorum,
// freezes, the brake, duplicate votes and a failed-over cluster.
func scenario(t testing.TB) Input {
	w := newWorld(t, fixture(t, bigService(100, 0, 300, 100)))
	w.probers = append(slices.Clone(ring4), Prober{Name: "ap-1", Region: "ap-south"}, Prober{Name: "ap-1", Region: "ap-south"})
	w.at(0, all(everyoneUp(), bigVotes(vote.Up, 1, 2, 3, 4))...)
	now := t0.Add(s(5))
	votes := all(
		eastDown,
		says("west-1", vote.Up, ipWest, ipEU),
		says("eu-1", vote.Up, ipWest, ipEU),
		says("ap-1", vote.Down, ipWest, ipEU, ipEast), // an outlier
		bigVotes(vote.Down, 1, 2, 3),
		bigVotes(vote.Up, 4),
		hb([]string{"eu-1"}, "east-1", "west-1", "ap-1"),
		[]vote.Vote{
			// a duplicate of east-1's vote with a higher Seq and the other status
			{Subject: vote.EndpointSubject(app, ipWest), Prober: "east-1", Status: vote.Down, Seq: 7},
			{Subject: vote.EndpointSubject(app, ipWest), Prober: "east-1", Status: vote.Up, Seq: 7},
			{Subject: vote.EndpointSubject(big, "198.51.100.4"), Prober: "ap-1", Status: vote.Down, Seq: 1},
		},
	)
	for i := range votes {
		if votes[i].ObservedAt.IsZero() {
			votes[i].ObservedAt = now.Add(-time.Duration(i%7) * time.Second)
		}
	}
	return Input{Desired: w.desired, Votes: votes, Probers: w.probers, Prev: w.prev, Now: now}
}

func TestDeterminism(t *testing.T) {
	in := scenario(t)
	want := Decide(in, DefaultParams())
	require.NotEmpty(t, want.Changes)
	require.NotEmpty(t, want.Outliers)
	assert.True(t, slices.IsSortedFunc(want.Changes, func(a, b Change) int {
		if c := compareSubjects(a.Subject, b.Subject); c != 0 {
			return c
		}
		return compareStrings(a.Reason, b.Reason)
	}), "changes are sorted")

	cases := []struct {
		name    string
		shuffle func(r *rand.Rand, in *Input)
	}{
		{"the same input gives the same decision", func(*rand.Rand, *Input) {}},
		{"shuffled votes give the same decision", func(r *rand.Rand, in *Input) {
			r.Shuffle(len(in.Votes), func(i, j int) { in.Votes[i], in.Votes[j] = in.Votes[j], in.Votes[i] })
		}},
		{"shuffled probers give the same decision", func(r *rand.Rand, in *Input) {
			r.Shuffle(len(in.Probers), func(i, j int) { in.Probers[i], in.Probers[j] = in.Probers[j], in.Probers[i] })
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r := rand.New(rand.NewPCG(1, 2))
			for range 50 {
				in := scenario(t)
				tc.shuffle(r, &in)
				require.Equal(t, want, Decide(in, DefaultParams()))
			}
		})
	}
}

func compareStrings(a, b string) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

func TestDecideDoesNotModifyItsInput(t *testing.T) {
	in := scenario(t)
	prev := deepCopy(t, in.Prev)
	votes := slices.Clone(in.Votes)
	probers := slices.Clone(in.Probers)
	Decide(in, DefaultParams())
	assert.Equal(t, prev, in.Prev)
	assert.Equal(t, votes, in.Votes)
	assert.Equal(t, probers, in.Probers)
}

func deepCopy(t *testing.T, d *Decision) *Decision {
	t.Helper()
	c := *d
	c.Endpoints = slices.Clone(d.Endpoints)
	for i := range c.Endpoints {
		c.Endpoints[i].Voters = slices.Clone(c.Endpoints[i].Voters)
	}
	c.Clusters = slices.Clone(d.Clusters)
	c.Outliers = slices.Clone(d.Outliers)
	c.Changes = slices.Clone(d.Changes)
	return &c
}

func TestDecideWithoutDesiredOrVotes(t *testing.T) {
	d := Decide(Input{Now: t0}, Params{})
	assert.Empty(t, d.Endpoints)
	assert.Empty(t, d.Clusters)
	assert.True(t, d.StatesChanged)
	assert.Equal(t, engine.Unknown, d.Endpoint(app, ipEast))
}

func TestRemovedEndpointsAndClustersLeaveTheDecision(t *testing.T) {
	w := newWorld(t, fixture(t, bigService()))
	w.at(0, eastDown...)
	w.desired = fixture(t)
	d := w.at(s(5))
	_, ok := d.LookupEndpoint(big, "198.51.100.1")
	assert.False(t, ok)
	assert.Equal(t, Down, endpoint(t, d, ipEast).State, "the others carry over")
	assert.True(t, d.StatesChanged)
}
