package follow

import (
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/meridian-gslb/meridian/internal/engine"
	"github.com/meridian-gslb/meridian/internal/failover"
	"github.com/meridian-gslb/meridian/internal/health"
	"github.com/meridian-gslb/meridian/internal/model"
	"github.com/meridian-gslb/meridian/internal/report"
	"github.com/meridian-gslb/meridian/internal/ring"
	"github.com/meridian-gslb/meridian/internal/serving"
	"github.com/meridian-gslb/meridian/internal/vote"
)

// fakeRing is the part of the ring a follower and a voter use, in memory.
type fakeRing struct {
	mu        sync.Mutex
	members   []ring.Member
	untrusted []ring.Member
	votes     []vote.Vote
	confirms  []vote.Subject
}

func (r *fakeRing) Name() string      { return "n1" }
func (r *fakeRing) Region() string    { return "us-east" }
func (r *fakeRing) PublicKey() string { return "ed25519:test" }
func (r *fakeRing) Members() []ring.Member {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]ring.Member{}, r.members...)
}
func (r *fakeRing) AllMembers() []ring.Member { return append(r.Members(), r.untrusted...) }
func (r *fakeRing) Votes() []vote.Vote {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]vote.Vote{}, r.votes...)
}
func (r *fakeRing) Publish(s vote.Subject, st vote.Status, at time.Time) vote.Vote {
	r.mu.Lock()
	defer r.mu.Unlock()
	v := vote.Vote{Subject: s, Prober: "n1", Region: "us-east", Status: st, ObservedAt: at, Seq: uint64(len(r.votes) + 1)}
	r.votes = append(r.votes, v)
	return v
}
func (r *fakeRing) Confirm(s vote.Subject) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.confirms = append(r.confirms, s)
}

// vote sets prober's vote on the endpoint addr of app.gslb.test.
func (r *fakeRing) vote(prober, region, addr string, st vote.Status, at time.Time) {
	r.mu.Lock()
	defer r.mu.Unlock()
	s := vote.EndpointSubject("app.gslb.test.", addr)
	for i, v := range r.votes {
		if v.Prober == prober && v.Subject == s {
			r.votes[i].Status, r.votes[i].ObservedAt, r.votes[i].Seq = st, at, v.Seq+1
			return
		}
	}
	r.votes = append(r.votes, vote.Vote{Subject: s, Prober: prober, Region: region, Status: st, ObservedAt: at, Seq: 1})
}

const ringConfig = baseConfig + `
health: {interval: 1s}
ring: {enabled: true, region: us-east}
decision: {hold_down: 5s}
`

func twoRegions() []ring.Member {
	return []ring.Member{
		{Name: "east-1", Region: "us-east", Role: ring.RoleProber, Trusted: true},
		{Name: "west-1", Region: "us-west", Role: ring.RoleProber, Trusted: true},
	}
}

func newFollower(t *testing.T, r *fakeRing) (*Follower, *Metrics) {
	t.Helper()
	m := NewMetrics(prometheus.NewRegistry())
	p := newPipeline(t, load(t, ringConfig), serving.Options{})
	return &Follower{Pipeline: p, Ring: r, Metrics: m}, m
}

func TestFollowerDecides(t *testing.T) {
	start := time.Now()
	allUp := func(r *fakeRing, at time.Time) {
		for _, p := range r.members {
			for _, a := range []string{"192.0.2.1", "192.0.2.2"} {
				r.vote(p.Name, p.Region, a, vote.Up, at)
			}
		}
	}

	t.Run("down votes from two regions take an endpoint out of the answers", func(t *testing.T) {
		r := &fakeRing{members: twoRegions()}
		f, m := newFollower(t, r)
		allUp(r, start)
		f.Decide(start)
		r.vote("east-1", "us-east", "192.0.2.2", vote.Down, start.Add(time.Second))
		r.vote("west-1", "us-west", "192.0.2.2", vote.Down, start.Add(time.Second))
		d := f.Decide(start.Add(2 * time.Second))
		e, ok := d.LookupEndpoint("app.gslb.test.", "192.0.2.2")
		require.True(t, ok)
		assert.Equal(t, failover.Down, e.State)
		assert.Equal(t, map[string]bool{"192.0.2.1": true}, answers(t, f.Pipeline, "app.gslb.test."))
		assert.Equal(t, 0.0, testutil.ToFloat64(m.endpointState.WithLabelValues("app.gslb.test.", "192.0.2.2", "west")))
		assert.Equal(t, 1.0, testutil.ToFloat64(m.events.WithLabelValues(e.Reason, "down")))
		tl := f.Timeline()
		require.NotEmpty(t, tl)
		assert.Equal(t, "down", tl[0].To, "newest first")
	})

	t.Run("a recovery waits the adaptive hold-down, shown in the report and the metrics", func(t *testing.T) {
		r := &fakeRing{members: twoRegions()}
		f, m := newFollower(t, r)
		allUp(r, start)
		f.Decide(start)
		assert.Equal(t, 3.0, testutil.ToFloat64(m.holdDown.WithLabelValues("app.gslb.test.", "192.0.2.2", "west")), "a first failure would be held first_hold_down, 3s")
		r.vote("east-1", "us-east", "192.0.2.2", vote.Down, start.Add(time.Second))
		r.vote("west-1", "us-west", "192.0.2.2", vote.Down, start.Add(time.Second))
		f.Decide(start.Add(2 * time.Second))
		r.vote("east-1", "us-east", "192.0.2.2", vote.Up, start.Add(3*time.Second))
		r.vote("west-1", "us-west", "192.0.2.2", vote.Up, start.Add(3*time.Second))
		d := f.Decide(start.Add(3 * time.Second))
		e, _ := d.LookupEndpoint("app.gslb.test.", "192.0.2.2")
		require.True(t, e.Held())
		assert.Equal(t, start.Add(6*time.Second), e.HeldUntil, "held first_hold_down (3s) from the first up verdict")
		assert.Equal(t, start.Add(6*time.Second), f.nextDue(), "the follower decides again when the hold-down ends")
		assert.Equal(t, 1, testutil.CollectAndCount(m.holds))
		for _, eh := range f.Report().Endpoints {
			if eh.Target == "192.0.2.2" {
				assert.Equal(t, 3.0, eh.HoldDownSeconds)
			}
		}
		r.vote("east-1", "us-east", "192.0.2.2", vote.Up, start.Add(6*time.Second)) // fresh votes (3 × 1s)
		r.vote("west-1", "us-west", "192.0.2.2", vote.Up, start.Add(6*time.Second))
		d = f.Decide(start.Add(6 * time.Second))
		e, _ = d.LookupEndpoint("app.gslb.test.", "192.0.2.2")
		assert.Equal(t, failover.Up, e.State, "released when the hold-down ends")
		assert.Equal(t, 10.0, testutil.ToFloat64(m.holdDown.WithLabelValues("app.gslb.test.", "192.0.2.2", "west")), "a flap within the window would be held 10s")
		assert.True(t, f.nextDue().IsZero())
	})

	t.Run("a down vote from one region alone waits for a second confirmation", func(t *testing.T) {
		r := &fakeRing{members: twoRegions()}
		f, _ := newFollower(t, r)
		allUp(r, start)
		f.Decide(start)
		r.vote("east-1", "us-east", "192.0.2.2", vote.Down, start.Add(time.Second))
		d := f.Decide(start.Add(2 * time.Second))
		e, _ := d.LookupEndpoint("app.gslb.test.", "192.0.2.2")
		assert.NotEqual(t, failover.Down, e.State)
		assert.Len(t, answers(t, f.Pipeline, "app.gslb.test."), 2)
	})

	t.Run("observers and untrusted members are not counted as probers", func(t *testing.T) {
		r := &fakeRing{members: append(twoRegions(), ring.Member{Name: "dns-1", Region: "us-east", Role: ring.RoleObserver, Trusted: true}),
			untrusted: []ring.Member{{Name: "rogue", Region: "us-west", Role: ring.RoleProber}}}
		f, _ := newFollower(t, r)
		var counted int
		f.Probers = func(n int) { counted = n }
		f.Decide(start)
		assert.Equal(t, 2, counted)
		rep := f.Report()
		require.Len(t, rep.Untrusted, 1)
		assert.Equal(t, "rogue", rep.Untrusted[0].Name)
		assert.Len(t, rep.Probers, 3, "live trusted members, observer included, are listed")
	})

	t.Run("Before runs first with the desired state being decided", func(t *testing.T) {
		r := &fakeRing{members: twoRegions()}
		f, _ := newFollower(t, r)
		var got *model.Desired
		f.Before = func(d *model.Desired, _ time.Time) { got = d }
		f.Decide(start)
		assert.Same(t, &f.Pipeline.State().Effective.Desired, got)
	})

	t.Run("the detection time is measured from this node's first failed probe", func(t *testing.T) {
		r := &fakeRing{members: twoRegions()}
		f, m := newFollower(t, r)
		f.FirstFail = func(s vote.Subject) (time.Time, bool) { return start, s.Target == "192.0.2.2" }
		allUp(r, start)
		f.Decide(start)
		r.vote("east-1", "us-east", "192.0.2.2", vote.Down, start.Add(time.Second))
		r.vote("west-1", "us-west", "192.0.2.2", vote.Down, start.Add(time.Second))
		f.Decide(start.Add(3 * time.Second))
		assert.Equal(t, 1, testutil.CollectAndCount(m.detection))
	})

	t.Run("the timeline keeps the newest MaxTimeline changes", func(t *testing.T) {
		r := &fakeRing{members: twoRegions()}
		f, _ := newFollower(t, r)
		for i := range MaxTimeline + 10 {
			f.record(&failover.Decision{Changes: []failover.Change{{Subject: vote.ClusterSubject("east"), Reason: "test", At: start.Add(time.Duration(i))}}}, start, failover.DefaultParams())
		}
		tl := f.Timeline()
		require.Len(t, tl, MaxTimeline)
		assert.Equal(t, start.Add(MaxTimeline+9), tl[0].At)
	})
}

func TestVoter(t *testing.T) {
	s := vote.EndpointSubject("app.gslb.test.", "192.0.2.2")
	now := time.Now()

	t.Run("a result is voted only when this node's view changes", func(t *testing.T) {
		r := &fakeRing{}
		pokes := 0
		v := &Voter{Ring: r, Logger: discard(), Poke: func() { pokes++ }}
		v.OnResult(health.Result{Subject: s, Status: vote.Up, At: now})
		v.OnResult(health.Result{Subject: s, Status: vote.Up, At: now.Add(time.Second)})
		assert.Len(t, r.Votes(), 1)
		assert.Equal(t, 1, pokes)
	})

	t.Run("a fresh local down is voted and the other regions are asked to confirm", func(t *testing.T) {
		r := &fakeRing{}
		v := &Voter{Ring: r, Logger: discard()}
		v.OnResult(health.Result{Subject: s, Status: vote.Up, At: now})
		v.OnResult(health.Result{Subject: s, Status: vote.Down, At: now.Add(time.Second), Err: errors.New("refused")})
		assert.Equal(t, []vote.Subject{s}, r.confirms)
		ff, ok := v.FirstFail(s)
		require.True(t, ok)
		assert.Equal(t, now.Add(time.Second), ff)
	})

	turnCases := []struct {
		name    string
		vote    vote.Status // this node's standing vote
		res     health.Result
		confirm bool
	}{
		{"the first failure of an endpoint voted up asks the other regions at once", vote.Up,
			health.Result{Subject: s, Status: vote.Up, Err: errors.New("refused"), Turned: true}, true},
		{"the first success of an endpoint voted down asks the other regions at once", vote.Down,
			health.Result{Subject: s, Status: vote.Down, Turned: true}, true},
		{"a first success with rise 1 votes up and asks the other regions", vote.Down,
			health.Result{Subject: s, Status: vote.Up, Turned: true}, true},
		{"a result that does not turn asks nothing", vote.Up,
			health.Result{Subject: s, Status: vote.Up, Err: errors.New("refused")}, false},
		{"a first failure found for another region's request does not ask again", vote.Up,
			health.Result{Subject: s, Status: vote.Up, Err: errors.New("refused"), Turned: true, Reprobe: "confirm"}, false},
	}
	for _, tc := range turnCases {
		t.Run(tc.name, func(t *testing.T) {
			r := &fakeRing{}
			v := &Voter{Ring: r, Logger: discard()}
			v.OnResult(health.Result{Subject: s, Status: tc.vote, At: now})
			r.confirms = nil // the down vote itself asked
			tc.res.At = now.Add(time.Second)
			v.OnResult(tc.res)
			if tc.confirm {
				assert.Equal(t, []vote.Subject{s}, r.confirms)
			} else {
				assert.Empty(t, r.confirms)
			}
		})
	}

	t.Run("the other regions are asked once per failure run", func(t *testing.T) {
		r := &fakeRing{}
		v := &Voter{Ring: r, Logger: discard()}
		v.OnResult(health.Result{Subject: s, Status: vote.Up, At: now})
		v.OnSuspect(s)
		v.OnResult(health.Result{Subject: s, Status: vote.Up, At: now, Err: errors.New("timeout"), Turned: true})
		v.OnResult(health.Result{Subject: s, Status: vote.Down, At: now, Err: errors.New("timeout")})
		assert.Equal(t, []vote.Subject{s}, r.confirms, "asked when the probe hung, not again at the failure or the local down")
		v.OnResult(health.Result{Subject: s, Status: vote.Down, At: now, Turned: true})
		assert.Len(t, r.confirms, 2, "the first pass of the down endpoint asks")
		v.OnResult(health.Result{Subject: s, Status: vote.Down, At: now, Err: errors.New("refused")})
		v.OnResult(health.Result{Subject: s, Status: vote.Up, At: now})
		v.OnResult(health.Result{Subject: s, Status: vote.Up, At: now, Err: errors.New("refused"), Turned: true})
		assert.Len(t, r.confirms, 3, "a pass ended the run: the next failure asks again")
	})

	t.Run("a hanging probe of an endpoint voted up asks the other regions; of one voted down it does not", func(t *testing.T) {
		r := &fakeRing{}
		v := &Voter{Ring: r, Logger: discard()}
		v.OnSuspect(s)
		assert.Empty(t, r.confirms, "no vote yet")
		v.OnResult(health.Result{Subject: s, Status: vote.Up, At: now})
		v.OnSuspect(s)
		assert.Equal(t, []vote.Subject{s}, r.confirms)
		v.OnResult(health.Result{Subject: s, Status: vote.Down, At: now, Err: errors.New("timeout")})
		r.confirms = nil
		v.OnSuspect(s)
		assert.Empty(t, r.confirms)
	})

	t.Run("an unknown status is not voted, but a failure still starts the detection clock", func(t *testing.T) {
		r := &fakeRing{}
		v := &Voter{Ring: r, Logger: discard()}
		v.OnResult(health.Result{Subject: s, Status: vote.Unknown, At: now, Err: errors.New("timeout")})
		assert.Empty(t, r.Votes())
		_, ok := v.FirstFail(s)
		assert.True(t, ok)
		v.OnResult(health.Result{Subject: s, Status: vote.Up, At: now})
		_, ok = v.FirstFail(s)
		assert.False(t, ok, "a pass ends the failure run")
	})

	agentDesired := func() *model.Desired {
		return &model.Desired{Clusters: []model.Cluster{{Name: "edge", Heartbeat: &model.Heartbeat{Agent: true, Grace: model.Duration(10 * time.Second)}}}}
	}
	cases := []struct {
		name     string
		sinceUp  time.Duration // how long this node has run
		lastBeat time.Duration // age of the last heartbeat (0: none)
		want     []vote.Status
	}{
		{"an agent's heartbeat within the grace votes its cluster up", time.Minute, 5 * time.Second, []vote.Status{vote.Up}},
		{"an agent silent past the grace votes its cluster down", time.Minute, 30 * time.Second, []vote.Status{vote.Down}},
		{"an agent never heard from is down once this node has been up a grace", time.Minute, 0, []vote.Status{vote.Down}},
		{"an agent never heard from is not judged before this node has been up a grace", 5 * time.Second, 0, nil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r := &fakeRing{}
			v := &Voter{Ring: r, Logger: discard(), Start: now.Add(-tc.sinceUp)}
			if tc.lastBeat > 0 {
				v.OnHeartbeat("edge", "agent-1", now.Add(-tc.lastBeat))
			}
			v.AgentHeartbeats(agentDesired(), now)
			var got []vote.Status
			for _, vt := range r.Votes() {
				got = append(got, vt.Status)
			}
			assert.Equal(t, tc.want, got)
		})
	}

	t.Run("Forget drops what is known of subjects no longer configured", func(t *testing.T) {
		r := &fakeRing{}
		v := &Voter{Ring: r, Logger: discard()}
		v.OnResult(health.Result{Subject: s, Status: vote.Up, At: now})
		v.Forget(func(vote.Subject) bool { return false })
		v.OnResult(health.Result{Subject: s, Status: vote.Up, At: now})
		assert.Len(t, r.Votes(), 2, "voted again: the voter forgot its last vote")
	})
}

func TestTargetsAndSubjects(t *testing.T) {
	l := load(t, baseConfig+`
  - name: checked.gslb.test
    health_check: {kind: tcp, port: 443}
    endpoints:
      - {address: 192.0.2.5, cluster: east}
  - name: alias.gslb.test
    endpoints: [{cname: other.example.net, cluster: west}]
`)
	d := &l.File.Desired
	t.Run("only address endpoints of checked services are probed", func(t *testing.T) {
		targets, hbs := Targets(d, nil)
		require.Len(t, targets, 1, "app has no health_check; alias is a CNAME")
		assert.Equal(t, vote.EndpointSubject("checked.gslb.test.", "192.0.2.5"), targets[0].Subject)
		assert.Empty(t, hbs)
	})
	t.Run("votes may be about every address endpoint and every cluster", func(t *testing.T) {
		keep := Subjects(d)
		assert.True(t, keep[vote.EndpointSubject("app.gslb.test.", "192.0.2.1")])
		assert.True(t, keep[vote.ClusterSubject("west")])
		assert.False(t, keep[vote.EndpointSubject("alias.gslb.test.", "other.example.net.")], "a CNAME is not probed")
	})
}

func TestReportHealth(t *testing.T) {
	rep := ReportHealth{
		Endpoints: []report.EndpointHealth{{Service: "app.gslb.test.", Target: "192.0.2.1", State: "down"}, {Service: "app.gslb.test.", Target: "192.0.2.2", State: "up"}},
		Clusters:  []report.ClusterHealth{{Name: "west", State: "failed-over"}, {Name: "east", State: "ready"}},
	}
	cases := []struct {
		name string
		got  engine.State
		want engine.State
	}{
		{"an endpoint the node decided down is down", rep.Endpoint("app.gslb.test.", "192.0.2.1"), engine.Down},
		{"an endpoint the node decided up is up", rep.Endpoint("app.gslb.test.", "192.0.2.2"), engine.Up},
		{"an endpoint the report does not list is unknown", rep.Endpoint("app.gslb.test.", "192.0.2.3"), engine.Unknown},
		{"a failed-over cluster is down", rep.Cluster("west"), engine.Down},
		{"a ready cluster is unknown (its endpoints decide)", rep.Cluster("east"), engine.Unknown},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) { assert.Equal(t, tc.want, tc.got) })
	}
}
