package follow

import (
	"context"
	"log/slog"
	"net/netip"
	"sync"
	"time"

	"github.com/meridian-gslb/meridian/internal/health"
	"github.com/meridian-gslb/meridian/internal/model"
	"github.com/meridian-gslb/meridian/internal/vote"
)

// VoteRing is where a Voter publishes (*ring.Ring).
type VoteRing interface {
	Publish(s vote.Subject, st vote.Status, at time.Time) vote.Vote
	Confirm(s vote.Subject)
}

// Voter turns this node's probe results into votes on the ring: a vote
// only when its view of a subject changes (the ring's summaries keep
// unchanged votes fresh), and a request for confirmation from the other
// regions when an endpoint turns: when a probe of an endpoint this node
// votes up hangs (OnSuspect) or fails, at the first success of one it votes
// down (so that the other regions re-probe at once instead of at their next
// interval), and when its local view turns down. It also votes on the clusters whose
// liveness comes from `meridian agent` heartbeats.
type Voter struct {
	Ring   VoteRing
	Logger *slog.Logger
	Poke   func() // asks the follower to decide soon (nil: nothing)
	Start  time.Time

	mu        sync.Mutex
	published map[vote.Subject]vote.Status // our last vote per subject
	firstFail map[vote.Subject]time.Time   // first failed probe of the current failure run
	hbSeen    map[string]time.Time         // agent heartbeats per cluster
	asked     map[vote.Subject]bool        // the other regions were asked about the current failure run
}

func (v *Voter) initLocked() {
	if v.published == nil {
		v.published, v.firstFail, v.hbSeen = map[vote.Subject]vote.Status{}, map[vote.Subject]time.Time{}, map[string]time.Time{}
		v.asked = map[vote.Subject]bool{}
	}
}

// askDownLocked reports whether to ask the other regions about a failing
// endpoint: once per failure run (a pass ends the run).
func (v *Voter) askDownLocked(s vote.Subject) bool {
	if s.IsCluster() || v.asked[s] {
		return false
	}
	v.asked[s] = true
	return true
}

// OnResult is health.ProberOptions.OnResult.
func (v *Voter) OnResult(res health.Result) {
	v.mu.Lock()
	v.initLocked()
	_, failing := v.firstFail[res.Subject]
	runTurned := failing != (res.Err != nil) && !res.Subject.IsCluster() // a failure run starts or ends: the doubt changes
	if res.Err != nil {
		if !failing {
			v.firstFail[res.Subject] = res.At
		}
	} else {
		delete(v.firstFail, res.Subject)
		delete(v.asked, res.Subject)
	}
	if res.Status == vote.Unknown {
		v.mu.Unlock()
		if runTurned && v.Poke != nil {
			v.Poke()
		}
		return
	}
	prev, had := v.published[res.Subject]
	changed := !had || prev != res.Status
	if changed {
		v.published[res.Subject] = res.Status
	}
	turning := v.turning(res, prev, had)
	ask := turning && res.Err == nil // a down endpoint answers again
	if (turning && res.Err != nil) || (changed && res.Status == vote.Down) {
		ask = v.askDownLocked(res.Subject) // the first failure, or the local down if that did not ask
	}
	v.mu.Unlock()
	if ask {
		v.Logger.Debug("asking other regions to confirm", "service", res.Subject.Service, "endpoint", res.Subject.Target, "vote", res.Status, "err", res.Err)
		v.Ring.Confirm(res.Subject)
	}
	if !changed {
		if runTurned && v.Poke != nil {
			v.Poke() // decide again: answers carrying it get (or lose) the doubt TTL
		}
		return
	}
	v.Ring.Publish(res.Subject, res.Status, res.At)
	if res.Status == vote.Down && !res.Subject.IsCluster() {
		v.Logger.Info("local probe says down; the other regions were asked to confirm", "service", res.Subject.Service, "endpoint", res.Subject.Target, "err", res.Err)
	}
	if v.Poke != nil {
		v.Poke()
	}
}

// turning reports whether res is the first probe result against this
// node's standing vote on an endpoint: a failure of one voted up (the vote
// changes later, at fall) or a success of one voted down (the vote may
// change at once, with rise 1). Results of probes made for another
// region's request do not ask again.
func (v *Voter) turning(res health.Result, prev vote.Status, had bool) bool {
	if !res.Turned || !had || res.Subject.IsCluster() || res.Reprobe == "confirm" {
		return false
	}
	return (res.Err != nil && prev == vote.Up) || (res.Err == nil && prev == vote.Down)
}

// OnSuspect is health.ProberOptions.OnSuspect: a probe of an endpoint
// this node votes up hangs. The other regions are asked to confirm at
// once, a probe timeout before the first failure would ask.
func (v *Voter) OnSuspect(s vote.Subject) {
	v.mu.Lock()
	v.initLocked()
	ask := v.published[s] == vote.Up && v.askDownLocked(s)
	v.mu.Unlock()
	if !ask {
		return
	}
	v.Logger.Debug("probe unanswered: asking other regions to confirm", "service", s.Service, "endpoint", s.Target)
	v.Ring.Confirm(s)
}

// Reprobing returns the endpoints this node is re-probing after a failed
// probe (a failure run that has not ended), for the decision's doubt.
func (v *Voter) Reprobing() map[vote.Subject]bool {
	v.mu.Lock()
	defer v.mu.Unlock()
	out := make(map[vote.Subject]bool, len(v.firstFail))
	for s := range v.firstFail {
		if !s.IsCluster() {
			out[s] = true
		}
	}
	return out
}

// FirstFail is this node's first failed probe of s in its current
// failure run.
func (v *Voter) FirstFail(s vote.Subject) (time.Time, bool) {
	v.mu.Lock()
	defer v.mu.Unlock()
	t, ok := v.firstFail[s]
	return t, ok
}

// OnHeartbeat is ring.Config.OnHeartbeat: an agent's heartbeat.
func (v *Voter) OnHeartbeat(cluster, _ string, at time.Time) {
	v.mu.Lock()
	defer v.mu.Unlock()
	v.initLocked()
	if at.After(v.hbSeen[cluster]) {
		v.hbSeen[cluster] = at
	}
}

// AgentHeartbeats votes on the clusters of d whose liveness comes from
// `meridian agent`: up while a heartbeat arrived within the grace, down
// after it (not before this node has been up for one grace).
func (v *Voter) AgentHeartbeats(d *model.Desired, now time.Time) {
	for _, c := range d.Clusters {
		if c.Heartbeat == nil || !c.Heartbeat.Agent || c.Heartbeat.URL != "" {
			continue
		}
		grace := c.Heartbeat.Grace.D()
		v.mu.Lock()
		seen := v.hbSeen[c.Name]
		v.mu.Unlock()
		st := vote.Up
		switch {
		case !seen.IsZero() && now.Sub(seen) <= grace:
		case now.Sub(v.Start) <= grace:
			continue // not long enough up to call it missing
		default:
			st = vote.Down
		}
		v.OnResult(health.Result{Subject: vote.ClusterSubject(c.Name), Status: st, At: now, Kind: "agent"})
	}
}

// Forget drops what the voter remembers of subjects keep does not keep.
func (v *Voter) Forget(keep func(vote.Subject) bool) {
	v.mu.Lock()
	defer v.mu.Unlock()
	for s := range v.published {
		if !keep(s) {
			delete(v.published, s)
			delete(v.firstFail, s)
			delete(v.asked, s)
		}
	}
}

// Subjects lists what votes may be about: every address endpoint of
// every service, and every cluster.
func Subjects(d *model.Desired) map[vote.Subject]bool {
	keep := map[vote.Subject]bool{}
	for i := range d.Services {
		for _, e := range d.Services[i].Endpoints {
			if e.Address != "" {
				keep[vote.EndpointSubject(d.Services[i].Name, e.Address)] = true
			}
		}
	}
	for _, c := range d.Clusters {
		keep[vote.ClusterSubject(c.Name)] = true
	}
	return keep
}

// Poller gives the readiness check of a Kubernetes member (its
// kube-apiserver's /readyz through its own credentials); nil when the
// process does not connect to member clusters.
type Poller func(cluster string) func(ctx context.Context) error

// Targets lists what this node probes in d: every address endpoint of a
// service with a health check, and every cluster heartbeat (a URL, or a
// Kubernetes member's /readyz through poll).
func Targets(d *model.Desired, poll Poller) ([]health.Target, []health.HeartbeatTarget) {
	var targets []health.Target
	for i := range d.Services {
		s := &d.Services[i]
		if s.HealthCheck == nil || s.HealthCheck.Kind == model.CheckNone {
			continue
		}
		for _, e := range s.Endpoints {
			if e.Address == "" {
				continue
			}
			targets = append(targets, health.Target{Subject: vote.EndpointSubject(s.Name, e.Address), Addr: netip.MustParseAddr(e.Address), Check: s.HealthCheck})
		}
	}
	return targets, Heartbeats(d, poll)
}

// Heartbeats lists the cluster heartbeats this node polls in d (the
// second part of Targets).
func Heartbeats(d *model.Desired, poll Poller) []health.HeartbeatTarget {
	var hbs []health.HeartbeatTarget
	for i := range d.Clusters {
		c := &d.Clusters[i]
		switch {
		case c.Heartbeat != nil && c.Heartbeat.URL != "":
			hbs = append(hbs, health.HeartbeatTarget{Cluster: c.Name, HB: c.Heartbeat})
		case c.Heartbeat != nil && c.Kubernetes != nil && poll != nil:
			hbs = append(hbs, health.HeartbeatTarget{Cluster: c.Name, HB: c.Heartbeat,
				Poll: poll(c.Name), PollID: "kubernetes member " + c.Name + " /readyz"})
		}
	}
	return hbs
}
