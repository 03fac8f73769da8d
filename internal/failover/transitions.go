package failover

import (
	"time"

	"github.com/meridian-gslb/meridian/internal/vote"
)

// removal is an endpoint this call wants to take out of the answers.
type removal struct {
	k      int    // index in Decision.Endpoints
	weight int    // weight for the brake
	reason string // threshold or confirmation
	done   bool
}

// decideEndpoints applies rules 3, 4 and 6 to every endpoint, service by
// service. d.Clusters must still hold the previous cluster states.
func (c *calc) decideEndpoints(d *Decision) {
	var pending []removal
	for si := 0; si+1 < len(c.svcStart); si++ {
		from, to := c.svcStart[si], c.svcStart[si+1]
		allZero := true
		for _, w := range c.weight[from:to] {
			allZero = allZero && w == 0
		}
		healthy := 0
		pending = pending[:0]
		for r := from; r < to; r++ {
			k, w := c.cfg[r], c.weight[r]
			if allZero {
				w = 1
			}
			serving := c.serving(d, k)
			if serving {
				healthy += w
			}
			e := &d.Endpoints[k]
			t := c.tally(k)
			v := t.verdict(c.required)
			if e.State == Down {
				c.holdDown(e.Subject, &e.State, &e.Timeline, Up, k, t, v)
				e.Doubt = e.State != Down // released now: a failure within the flap window
				e.Returning = e.State == Down && !c.eps[k].adminOut && c.returning(e)
				continue
			}
			c.forget(&e.Timeline)
			e.Returning = false
			e.Doubt = t.down > 0 || e.Failures > 0 || c.doubt != nil && c.doubt(e.Subject) // remove clears it
			switch v {
			case verdictUp:
				e.BrakeSince = time.Time{}
				if e.State == Unknown {
					c.move(e.Subject, &e.State, &e.Timeline, Up, ReasonThreshold, c.voters(k, false))
				}
			case verdictDown:
				if !serving {
					w = 0 // already out of the answers: no traffic moves, the brake does not count it
				}
				pending = append(pending, removal{k: k, weight: w, reason: t.downReason()})
			case split:
				e.BrakeSince = time.Time{}
			}
		}
		if len(pending) > 0 {
			c.brake(d, pending, healthy)
		}
	}
}

// serving reports whether endpoint k was in the answers before this call:
// not decided Down, its cluster not failed over, not down or drained in the
// config.
func (c *calc) serving(d *Decision, k int) bool {
	m := c.eps[k]
	if d.Endpoints[k].State == Down || m.adminOut {
		return false
	}
	return m.cluster < 0 || d.Clusters[m.cluster].State != FailedOver
}

// brake applies the removals of one service (rule 6). Removals of endpoints
// that were not serving, and removals the brake has held for at least one
// Interval, apply and count first; the other new removals apply in config
// order while the removed weight stays within Brake × the serving weight; the
// rest are held. A held removal waits for its Interval even if it would fit
// the budget earlier.
func (c *calc) brake(d *Decision, pending []removal, healthy int) {
	limit := c.p.Brake * float64(healthy)
	removed := 0
	for i := range pending {
		r := &pending[i]
		e := &d.Endpoints[r.k]
		if r.weight == 0 || (e.Braked() && c.now.Sub(e.BrakeSince) >= c.p.Interval) {
			reason := r.reason
			if e.Braked() {
				reason = ReasonBrake
			}
			c.remove(e, r.k, reason)
			removed += r.weight
			r.done = true
		}
	}
	for i := range pending {
		r := &pending[i]
		if r.done {
			continue
		}
		e := &d.Endpoints[r.k]
		if e.Braked() {
			continue // held: applied only once an Interval has passed, even if it would fit now
		}
		if float64(removed+r.weight) <= limit {
			c.remove(e, r.k, r.reason)
			removed += r.weight
			continue
		}
		if !e.Braked() {
			e.BrakeSince = c.now
			c.event(e.Subject, e.State, &e.Timeline, ReasonBrake, c.voters(r.k, true))
		}
	}
}

func (c *calc) remove(e *EndpointState, k int, reason string) {
	e.BrakeSince, e.HeldUntil, e.Doubt = time.Time{}, time.Time{}, false
	e.Failures++
	e.FellFromUp = e.State == Up
	c.move(e.Subject, &e.State, &e.Timeline, Down, reason, c.voters(k, true))
	e.Returning = !c.eps[k].adminOut && c.returning(e)
}

// returning reports whether an endpoint that is down may come back soon:
// it went down from Up less than FlapWindow ago (a crash, a restart, a
// deploy; not one first decided down from Unknown, as after this process
// restarted: it may have been dead for long), or its hold-down ends within
// FlapWindow. (A long outage is settled: its answers keep the zone's TTL.)
func (c *calc) returning(e *EndpointState) bool {
	return e.FellFromUp && c.now.Sub(e.Since) < c.p.FlapWindow || e.Held() && e.HeldUntil.Sub(c.now) <= c.p.FlapWindow
}

// decideClusters applies rule 7 to every cluster.
func (c *calc) decideClusters(d *Decision) {
	for ci := range d.Clusters {
		cs := &d.Clusters[ci]
		s := vote.ClusterSubject(cs.Name)
		if !cs.Monitored {
			cs.HeldUntil = time.Time{}
			if cs.State != Ready {
				c.move(s, &cs.State, &cs.Timeline, Ready, ReasonNoHeartbeat, nil)
			}
			continue
		}
		i := c.nEp + ci
		t := c.tally(i)
		v := t.verdict(c.required)
		if cs.State == FailedOver {
			back := Ready
			if t.down > 0 {
				back = Unreachable // released, but some probers still miss the heartbeat
			}
			c.holdDown(s, &cs.State, &cs.Timeline, back, i, t, v)
			continue
		}
		c.forget(&cs.Timeline)
		switch {
		case v == verdictDown:
			cs.Failures++
			c.move(s, &cs.State, &cs.Timeline, FailedOver, ReasonHeartbeatLost, c.voters(i, true))
		case t.down > 0:
			if cs.State != Unreachable {
				c.move(s, &cs.State, &cs.Timeline, Unreachable, ReasonUnconfirmed, c.voters(i, true))
			}
		case t.up > 0:
			if cs.State != Ready {
				c.move(s, &cs.State, &cs.Timeline, Ready, ReasonThreshold, c.voters(i, false))
			}
		}
	}
}

// outlierChanges records, once per newly ignored prober, the endpoints where
// its ignored Down vote disagrees with the decision. These events do not
// touch the endpoints' Reason and Voters: they are about the prober.
func (c *calc) outlierChanges(d *Decision) {
	if !hasTrue(c.newOutlier) {
		return
	}
	for k := range d.Endpoints {
		e := &d.Endpoints[k]
		if e.State == Down {
			continue
		}
		var names []string
		for _, b := range c.group(k) {
			if c.newOutlier[b.prober] && b.down {
				names = append(names, c.probers[b.prober].Name)
			}
		}
		if names != nil {
			c.changes = append(c.changes, Change{Subject: e.Subject, From: e.State, To: e.State, Reason: ReasonOutlierIgnored, Voters: names, At: c.now})
		}
	}
}

func hasTrue(bs []bool) bool {
	for _, b := range bs {
		if b {
			return true
		}
	}
	return false
}
