package failover

import (
	"cmp"
	"slices"
	"time"

	"github.com/meridian-gslb/meridian/internal/model"
	"github.com/meridian-gslb/meridian/internal/vote"
)

// Prober is a live member of the ring that probes.
type Prober struct {
	Name   string // node name, as in vote.Vote.Prober
	Region string // its region; the ring's regions cap how many a Down verdict needs
}

// Input is everything one decision looks at. Decide does not modify it.
type Input struct {
	Desired *model.Desired // normalized (model.Normalize): weights and names filled in
	Votes   []vote.Vote    // the newest vote per prober and subject; endpoint and cluster subjects
	Probers []Prober       // live ring members; votes of other probers do not count
	Prev    *Decision      // the previous result; nil on the first call
	Now     time.Time      // the time of this decision (votes are aged against it)
	// Doubt reports the endpoints this node is re-probing after a failed
	// probe (its own failure run, before any vote); nil: none.
	Doubt func(vote.Subject) bool
}

// Decide computes the decided state of every endpoint and cluster of
// in.Desired from the votes, the previous decision and the time. It is pure
// and deterministic: no clock, no I/O, no goroutines, and the result does not
// depend on the order of in.Votes or in.Probers. The package doc lists the
// rules. Decide never modifies in.Prev.
func Decide(in Input, p Params) *Decision {
	p = p.withDefaults()
	c := &calc{p: p, now: in.Now, prev: in.Prev, doubt: in.Doubt}
	d := &Decision{At: in.Now}
	c.ring(in.Probers)
	c.subjects(in.Desired, d)
	c.collect(in.Votes)
	d.Outliers = c.outliers()
	c.decideEndpoints(d) // reads the clusters' previous states: before decideClusters
	c.decideClusters(d)
	c.outlierChanges(d)
	slices.SortStableFunc(c.changes, func(a, b Change) int {
		if r := compareSubjects(a.Subject, b.Subject); r != 0 {
			return r
		}
		return cmp.Compare(a.Reason, b.Reason)
	})
	d.Changes = c.changes
	d.StatesChanged = in.Prev == nil || !in.Prev.SameStates(d)
	return d
}

// calc holds the working state of one Decide call.
type calc struct {
	p     Params
	now   time.Time
	prev  *Decision
	doubt func(vote.Subject) bool // Input.Doubt

	probers  []Prober       // live, unique by name, sorted by name
	region   []int          // region index of each prober
	regions  int            // distinct regions in the ring
	required int            // regions a verdict needs: min(MinRegions, regions), at least 1
	index    map[string]int // prober name -> index

	nEp      int                  // subjects 0..nEp-1 are endpoints (d.Endpoints order), then clusters
	subject  map[vote.Subject]int // subject -> index
	eps      []epMeta             // per endpoint, parallel to d.Endpoints
	cfg      []int                // endpoints in config order: their d.Endpoints index
	weight   []int                // endpoints in config order: their weight
	svcStart []int                // service i's endpoints are cfg[svcStart[i]:svcStart[i+1]]

	ballots    []ballot // counted votes grouped by subject, each group sorted by prober
	start      []int    // subject i's ballots are ballots[start[i]:start[i+1]]
	ignored    []bool   // per prober: an outlier this call
	newOutlier []bool   // per prober: an outlier now but not in Prev

	seen, seenDown []int // per region scratch for tally
	stamp          int

	changes []Change
}

type epMeta struct {
	cluster  int  // index in d.Clusters, -1 if the config names no such cluster
	adminOut bool // config state down or drained (endpoint or cluster): not serving regardless of health
}

type ballot struct {
	prober int
	down   bool
	seq    uint64
	at     time.Time
}

// newer reports whether b should replace o (same prober and subject). Ties
// fall to Down so that duplicate votes cannot make the result order-dependent.
func (b ballot) newer(o ballot) bool {
	switch {
	case b.seq != o.seq:
		return b.seq > o.seq
	case !b.at.Equal(o.at):
		return b.at.After(o.at)
	}
	return b.down && !o.down
}

// ring indexes the live probers and their regions.
func (c *calc) ring(in []Prober) {
	ps := slices.Clone(in)
	slices.SortFunc(ps, func(a, b Prober) int {
		if r := cmp.Compare(a.Name, b.Name); r != 0 {
			return r
		}
		return cmp.Compare(a.Region, b.Region)
	})
	ps = slices.CompactFunc(ps, func(a, b Prober) bool { return a.Name == b.Name })
	c.probers = ps
	c.index = make(map[string]int, len(ps))
	regions := make(map[string]int)
	c.region = make([]int, len(ps))
	for i, p := range ps {
		c.index[p.Name] = i
		r, ok := regions[p.Region]
		if !ok {
			r = len(regions)
			regions[p.Region] = r
		}
		c.region[i] = r
	}
	c.regions = len(regions)
	c.required = max(1, min(c.p.MinRegions, c.regions))
	c.seen = make([]int, c.regions)
	c.seenDown = make([]int, c.regions)
}

// subjects lists the endpoints and clusters of d, carrying their state over
// from the previous decision.
func (c *calc) subjects(desired *model.Desired, d *Decision) {
	if desired == nil {
		desired = &model.Desired{}
	}
	c.clusters(desired, d)
	// Made here, not in a step, so that they can stay on the stack.
	clusterIdx := make(map[string]int, len(desired.Clusters)) // name -> index in d.Clusters
	adminOut := make([]bool, len(d.Clusters))
	indexClusters(desired, d, clusterIdx, adminOut)
	subjects, meta, clusters := c.configEndpoints(desired, clusterIdx, adminOut)
	c.sortedEndpoints(d, subjects, meta, clusters)
	for i := range d.Clusters {
		c.subject[vote.ClusterSubject(d.Clusters[i].Name)] = c.nEp + i
	}
}

// clusters lists the clusters of d sorted by name, carrying their state over
// from the previous decision.
func (c *calc) clusters(desired *model.Desired, d *Decision) {
	d.Clusters = make([]ClusterState, 0, len(desired.Clusters))
	for _, mc := range desired.Clusters {
		cs := ClusterState{Name: mc.Name, State: Ready, Timeline: Timeline{Since: c.now, Reason: ReasonNew}}
		if prev, ok := c.prev.LookupCluster(mc.Name); ok {
			cs = prev
		} else if mc.Heartbeat == nil {
			cs.Reason = ReasonNoHeartbeat
		}
		cs.Monitored = mc.Heartbeat != nil
		d.Clusters = append(d.Clusters, cs)
	}
	slices.SortFunc(d.Clusters, func(a, b ClusterState) int { return cmp.Compare(a.Name, b.Name) })
}

// indexClusters fills clusterIdx with each cluster's index in d.Clusters
// and adminOut, by that index, with whether the config takes the cluster
// out (down or drained).
func indexClusters(desired *model.Desired, d *Decision, clusterIdx map[string]int, adminOut []bool) {
	for i := range d.Clusters {
		clusterIdx[d.Clusters[i].Name] = i
	}
	for _, mc := range desired.Clusters {
		adminOut[clusterIdx[mc.Name]] = mc.State == model.StateDown || mc.Drain
	}
}

// configEndpoints lists the endpoints in config order: their subjects,
// metadata and cluster names, and fills c.weight and c.svcStart.
func (c *calc) configEndpoints(desired *model.Desired, clusterIdx map[string]int, adminOut []bool) ([]vote.Subject, []epMeta, []string) {
	n := 0
	for i := range desired.Services {
		n += len(desired.Services[i].Endpoints)
	}
	subjects := make([]vote.Subject, 0, n)
	meta := make([]epMeta, 0, n)
	clusters := make([]string, 0, n)
	c.weight = make([]int, 0, n)
	c.svcStart = make([]int, 0, len(desired.Services)+1)
	for si := range desired.Services {
		s := &desired.Services[si]
		c.svcStart = append(c.svcStart, len(subjects))
		for _, e := range s.Endpoints {
			target, w := e.Target(), e.WeightOr()
			ci, ok := clusterIdx[e.Cluster]
			m := epMeta{cluster: -1, adminOut: e.State == model.StateDown || e.Drain}
			if ok {
				m.cluster = ci
				m.adminOut = m.adminOut || adminOut[ci]
			}
			subjects = append(subjects, vote.EndpointSubject(s.Name, target))
			meta = append(meta, m)
			clusters = append(clusters, e.Cluster)
			c.weight = append(c.weight, w)
		}
	}
	c.svcStart = append(c.svcStart, len(subjects))
	return subjects, meta, clusters
}

// sortedEndpoints fills d.Endpoints sorted by subject from the config-order
// lists, carrying each endpoint's state over from the previous decision,
// and indexes them (c.cfg, c.eps, c.subject).
func (c *calc) sortedEndpoints(d *Decision, subjects []vote.Subject, meta []epMeta, clusters []string) {
	n := len(subjects)
	order := make([]int, n)
	for i := range order {
		order[i] = i
	}
	slices.SortFunc(order, func(a, b int) int { return compareSubjects(subjects[a], subjects[b]) })
	c.nEp = n
	c.cfg = make([]int, n)
	c.eps = make([]epMeta, n)
	c.subject = make(map[vote.Subject]int, n+len(d.Clusters))
	d.Endpoints = make([]EndpointState, n)
	var prev []EndpointState
	if c.prev != nil {
		prev = c.prev.Endpoints
	}
	j := 0 // merge with the previous endpoints: both are sorted by subject
	for k, r := range order {
		sub := subjects[r]
		c.cfg[r] = k
		c.eps[k] = meta[r]
		c.subject[sub] = k
		for j < len(prev) && compareSubjects(prev[j].Subject, sub) < 0 {
			j++
		}
		e := EndpointState{Subject: sub, State: Unknown, Timeline: Timeline{Since: c.now, Reason: ReasonNew}}
		if j < len(prev) && prev[j].Subject == sub {
			e = prev[j]
		}
		e.Cluster = clusters[r]
		d.Endpoints[k] = e
	}
}

// collect keeps the fresh Up/Down votes of live probers about known subjects,
// one per prober and subject, grouped by subject and sorted by prober.
func (c *calc) collect(votes []vote.Vote) {
	subject, prober, count := c.countVotes(votes)
	n := len(count) - 1
	grouped := make([]ballot, count[n])
	next := slices.Clone(count[:n])
	for i := range votes {
		si := subject[i]
		if si < 0 {
			continue
		}
		v := &votes[i]
		grouped[next[si]] = ballot{prober: int(prober[i]), down: v.Status == vote.Down, seq: v.Seq, at: v.ObservedAt}
		next[si]++
	}
	w := dedupeGroups(grouped, count)
	c.ballots, c.start = grouped[:w], count
	c.ignored = make([]bool, len(c.probers))
	c.newOutlier = make([]bool, len(c.probers))
}

// countVotes is collect's first pass: for each vote its subject and prober
// index (subject -1: not counted: not Up or Down, stale, from a prober not
// live, or about an unknown subject), and the start of each subject's
// group (count[i]..count[i+1]; len(count) is subjects+1).
func (c *calc) countVotes(votes []vote.Vote) (subject, prober []int32, count []int) {
	n := len(c.subject)
	window := c.p.freshness()
	subject = make([]int32, len(votes))
	prober = make([]int32, len(votes))
	count = make([]int, n+1)
	for i := range votes {
		v := &votes[i]
		subject[i] = -1
		if v.Status != vote.Up && v.Status != vote.Down {
			continue
		}
		if c.now.Sub(v.ObservedAt) > window {
			continue
		}
		pi, ok := c.index[v.Prober]
		if !ok {
			continue
		}
		si, ok := c.subject[v.Subject]
		if !ok {
			continue
		}
		subject[i], prober[i] = int32(si), int32(pi)
		count[si+1]++
	}
	for i := 1; i <= n; i++ {
		count[i] += count[i-1]
	}
	return subject, prober, count
}

// dedupeGroups sorts each subject's group of ballots by prober (groups are
// small: one vote per prober), keeps the newest ballot of each prober and
// compacts the groups in place; count is updated to the new group starts
// and the number of ballots kept is returned.
func dedupeGroups(grouped []ballot, count []int) int {
	n := len(count) - 1
	w := 0
	for i := 0; i < n; i++ {
		g := grouped[count[i]:count[i+1]]
		for j := 1; j < len(g); j++ {
			for k := j; k > 0 && g[k].prober < g[k-1].prober; k-- {
				g[k], g[k-1] = g[k-1], g[k]
			}
		}
		count[i] = w
		for j, b := range g {
			if j > 0 && grouped[w-1].prober == b.prober {
				if b.newer(grouped[w-1]) {
					grouped[w-1] = b
				}
				continue
			}
			grouped[w] = b
			w++
		}
	}
	count[n] = w
	return w
}

func (c *calc) group(i int) []ballot { return c.ballots[c.start[i]:c.start[i+1]] }

// outliers finds the probers whose votes this call ignores (rule 2).
func (c *calc) outliers() []Outlier {
	if !c.p.Outliers || len(c.probers) < 2 {
		return nil
	}
	st := make([]Outlier, len(c.probers))
	for i := 0; i < c.nEp; i++ {
		g := c.group(i)
		up, down := 0, 0
		for _, b := range g {
			if b.down {
				down++
			} else {
				up++
			}
		}
		for _, b := range g {
			o := &st[b.prober]
			o.Voted++
			if b.down {
				o.Down++
			}
			if len(g) < 2 {
				continue
			}
			o.Compared++
			if b.down && up > down-1 {
				o.Disagreed++
			}
		}
	}
	var out []Outlier
	for pi := range st {
		o := st[pi]
		if o.Compared < 2 || 2*o.Down <= o.Voted || 2*o.Disagreed <= o.Compared {
			continue
		}
		c.ignored[pi] = true
		o.Prober, o.Region, o.Since = c.probers[pi].Name, c.probers[pi].Region, c.now
		c.newOutlier[pi] = true
		if c.prev != nil {
			if j, ok := slices.BinarySearchFunc(c.prev.Outliers, o.Prober, func(p Outlier, name string) int {
				return cmp.Compare(p.Prober, name)
			}); ok {
				o.Since = c.prev.Outliers[j].Since
				c.newOutlier[pi] = false
			}
		}
		out = append(out, o)
	}
	return out
}

// tally counts the ballots of subject i that are not ignored.
type tally struct {
	up, down             int
	regions, downRegions int
}

type verdict uint8

const (
	freeze      verdict = iota // no fresh votes, or from too few regions: everything holds
	split                      // a tie, or a Down majority from too few regions: the state holds
	verdictUp                  // a strict majority says Up
	verdictDown                // a strict majority says Down, from enough regions
)

func (c *calc) tally(i int) tally {
	c.stamp++
	var t tally
	for _, b := range c.group(i) {
		if c.ignored[b.prober] {
			continue
		}
		r := c.region[b.prober]
		if c.seen[r] != c.stamp {
			c.seen[r] = c.stamp
			t.regions++
		}
		if !b.down {
			t.up++
			continue
		}
		t.down++
		if c.seenDown[r] != c.stamp {
			c.seenDown[r] = c.stamp
			t.downRegions++
		}
	}
	return t
}

func (t tally) verdict(required int) verdict {
	switch {
	case t.up+t.down == 0 || t.regions < required:
		return freeze
	case t.down > t.up && t.downRegions >= required:
		return verdictDown
	case t.up > t.down:
		return verdictUp
	}
	return split
}

// downReason names a Down verdict: confirmed by other regions or not.
func (t tally) downReason() string {
	if t.downRegions >= 2 {
		return ReasonConfirmation
	}
	return ReasonThreshold
}

// voters lists the counted probers of subject i that say Down (or Up).
func (c *calc) voters(i int, down bool) []string {
	var out []string
	for _, b := range c.group(i) {
		if !c.ignored[b.prober] && b.down == down {
			out = append(out, c.probers[b.prober].Name)
		}
	}
	return out
}

// move changes the state of a subject and records the change.
func (c *calc) move(s vote.Subject, state *State, tl *Timeline, to State, reason string, voters []string) {
	c.changes = append(c.changes, Change{Subject: s, From: *state, To: to, Reason: reason, Voters: voters, At: c.now})
	*state = to
	tl.Since, tl.Reason, tl.Voters = c.now, reason, voters
}

// event records a hold event: the state stays.
func (c *calc) event(s vote.Subject, state State, tl *Timeline, reason string, voters []string) {
	c.changes = append(c.changes, Change{Subject: s, From: state, To: state, Reason: reason, Voters: voters, At: c.now})
	tl.Reason, tl.Voters = reason, voters
}

// forget resets the failure count of a subject that has stayed up for a
// FlapWindow since its last release: its next failure is a first one again.
func (c *calc) forget(tl *Timeline) {
	if tl.Failures > 0 && !tl.RecoveredAt.IsZero() && c.now.Sub(tl.RecoveredAt) >= c.p.FlapWindow {
		tl.Failures = 0
	}
}

// holdDown handles a subject that is down (Down or FailedOver) under verdict
// v: an Up verdict starts the hold-down and releases it to up once it has
// passed; a Down verdict during the hold is a new failure; a split or a
// freeze keeps the hold's clock (probers coming back one by one pass through
// ties; cancelling on each would restart the hold-down), but only an Up
// verdict releases it.
func (c *calc) holdDown(s vote.Subject, state *State, tl *Timeline, up State, i int, t tally, v verdict) {
	switch v {
	case verdictUp:
		started := false
		if !tl.Held() {
			tl.HeldUntil = c.now.Add(c.p.HoldFor(tl.Failures))
			started = true
		}
		if c.now.Before(tl.HeldUntil) {
			if started {
				c.event(s, *state, tl, ReasonHoldDown, c.voters(i, false))
			}
			return
		}
		tl.HeldUntil, tl.RecoveredAt = time.Time{}, c.now
		c.move(s, state, tl, up, ReasonHoldDown, c.voters(i, false))
	case verdictDown:
		if tl.Held() {
			tl.HeldUntil = time.Time{}
			tl.Failures++
			c.event(s, *state, tl, t.downReason(), c.voters(i, true))
		}
	}
}
