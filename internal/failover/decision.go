package failover

import (
	"cmp"
	"slices"
	"time"

	"github.com/meridian-gslb/meridian/internal/engine"
	"github.com/meridian-gslb/meridian/internal/vote"
)

// State is a decided state. Endpoints are Unknown, Up or Down; clusters are
// Ready, Unreachable or FailedOver.
type State uint8

// Decided states.
const (
	Unknown     State = iota // endpoint without a verdict yet; counts as up
	Up                       // endpoint: the votes say up
	Down                     // endpoint: the votes say down (or hold-down keeps it down)
	Ready                    // cluster: heartbeat seen, or not monitored
	Unreachable              // cluster: some probers miss the heartbeat, not confirmed; no traffic effect
	FailedOver               // cluster: heartbeat loss confirmed; all its endpoints leave the answers
)

var stateNames = [...]string{"unknown", "up", "down", "ready", "unreachable", "failed-over"}

func (s State) String() string {
	if int(s) < len(stateNames) {
		return stateNames[s]
	}
	return "invalid"
}

// MarshalText implements encoding.TextMarshaler (for /v1/health).
func (s State) MarshalText() ([]byte, error) { return []byte(s.String()), nil }

// Reasons of a Change (and of EndpointState.Reason / ClusterState.Reason).
const (
	ReasonNew            = "new"             // first seen; no change yet
	ReasonThreshold      = "threshold"       // a strict majority of the counted votes reached a verdict
	ReasonConfirmation   = "confirmation"    // a Down majority confirmed by voters in two or more regions
	ReasonHeartbeatLost  = "heartbeat-lost"  // a cluster's missing heartbeat reached quorum: failed over
	ReasonUnconfirmed    = "unconfirmed"     // a cluster's heartbeat is missed by some probers, below quorum
	ReasonHoldDown       = "hold-down"       // kept down after recovery, or released when the hold-down ended
	ReasonBrake          = "brake"           // a removal held by the brake, or applied one interval later
	ReasonOutlierIgnored = "outlier-ignored" // the Down votes of newly ignored outlier probers
	ReasonNoHeartbeat    = "no-heartbeat"    // the cluster has no heartbeat config: always Ready
)

// Decision is the decided state of every endpoint and cluster of a Desired.
// It is immutable once Decide returns it: Decide never modifies a previous
// Decision, and the slices of the result may share memory with it. A Decision
// is safe for concurrent readers.
type Decision struct {
	At            time.Time       // Input.Now of the call that made it
	Endpoints     []EndpointState // every endpoint of every service, sorted by service, then target
	Clusters      []ClusterState  // every cluster, sorted by name
	Outliers      []Outlier       // probers whose votes this call ignored, sorted by name
	Changes       []Change        // what this call changed, sorted by subject (clusters first), then reason
	StatesChanged bool            // some Endpoint or Cluster result differs from Input.Prev (true without Prev)
}

// Timeline is the history endpoints and clusters share.
type Timeline struct {
	Since       time.Time // when State last changed (first seen for a new subject)
	Reason      string    // reason of the last change or hold event (Reason* constants)
	Voters      []string  // probers behind the last change or hold event, sorted
	Failures    int       // consecutive failures; the hold-down doubles per failure
	HeldUntil   time.Time // non-zero while hold-down keeps a recovered subject down
	RecoveredAt time.Time // the last release from hold-down; Failures reset FlapWindow later
}

// Held reports whether hold-down is keeping the subject down.
func (t Timeline) Held() bool { return !t.HeldUntil.IsZero() }

// EndpointState is the decided state of one endpoint of one service.
type EndpointState struct {
	Subject    vote.Subject // service and target (canonical address or CNAME target)
	Cluster    string       // cluster that hosts the endpoint
	State      State        // Unknown, Up or Down
	BrakeSince time.Time    // non-zero while the brake holds a wanted removal (State stays as it was)
	// Doubt: answered (not Down) but not settled: a fresh down vote short
	// of a decision (the brake's hold included), a failure within the flap
	// window (just recovered, or flapping), or this node re-probing it
	// after a failed probe (Input.Doubt). Answers carrying it get the
	// service's doubt_ttl, so that resolvers ask again soon.
	Doubt bool
	// Returning: out of the answers (Down) but may come back soon: it went
	// down less than the flap window ago, or its hold-down ends within it.
	// The answers it is missing from get the service's doubt_ttl, so that
	// resolvers see its return soon instead of after the zone's TTL.
	Returning bool
	// FellFromUp: the last move to Down was from Up (not from Unknown, as
	// after a restart of this process or for a new endpoint).
	FellFromUp bool
	Timeline
}

// Braked reports whether the brake is holding a removal of the endpoint.
func (e EndpointState) Braked() bool { return !e.BrakeSince.IsZero() }

// ClusterState is the decided state of one cluster.
type ClusterState struct {
	Name      string // cluster name
	Monitored bool   // the cluster has a heartbeat config; unmonitored clusters are always Ready
	State     State  // Ready, Unreachable or FailedOver
	Timeline
}

// Outlier is a prober whose votes a decision ignored (rule 2 in the package doc).
type Outlier struct {
	Prober    string    // node name
	Region    string    // its region
	Since     time.Time // first call of the current run of calls that ignored it
	Voted     int       // endpoints with a fresh vote of it
	Down      int       // of those, how many it says are Down
	Compared  int       // endpoints where other probers voted too
	Disagreed int       // compared endpoints where it says Down and the others' majority says Up
}

// Change is one change made by a call. From == To for hold events: hold-down
// starting, a failure during hold-down, the brake holding a removal, and
// outliers ignored.
type Change struct {
	Subject vote.Subject
	From    State
	To      State
	Reason  string   // Reason* constant
	Voters  []string // probers behind the change, sorted
	At      time.Time
}

// StateChanged reports whether the change moved the state (not a hold event).
func (c Change) StateChanged() bool { return c.From != c.To }

var _ engine.Health = (*Decision)(nil)

// Endpoint implements engine.Health: Down if the endpoint is decided Down or
// its cluster has failed over, Up if decided Up, else Unknown (which the
// engine treats as up). A nil Decision reports Unknown.
func (d *Decision) Endpoint(service, target string) engine.State {
	i, ok := d.endpointIndex(vote.EndpointSubject(service, target))
	if !ok {
		return engine.Unknown
	}
	return d.endpointEngineState(i)
}

// Doubt implements engine.DoubtHealth: the endpoint is answered but in
// doubt (EndpointState.Doubt), or it is out but may come back soon
// (EndpointState.Returning).
func (d *Decision) Doubt(service, target string) bool {
	i, ok := d.endpointIndex(vote.EndpointSubject(service, target))
	return ok && (d.Endpoints[i].Doubt || d.returning(i))
}

// EndpointReturning is endpoint i's Returning as the engine sees it: not
// when its cluster has failed over (its own return would not bring it
// back).
func (d *Decision) EndpointReturning(i int) bool { return d.returning(i) }

// returning is endpoint i's Returning, unless its cluster has failed over
// (its own return would not bring it back).
func (d *Decision) returning(i int) bool {
	e := &d.Endpoints[i]
	if !e.Returning {
		return false
	}
	c, ok := d.clusterIndex(e.Cluster)
	return !ok || d.Clusters[c].State != FailedOver
}

// Cluster implements engine.Health: FailedOver is Down, a Ready monitored
// cluster is Up, Unreachable and unmonitored clusters are Unknown (up, but not
// confirmed by heartbeats).
func (d *Decision) Cluster(name string) engine.State {
	i, ok := d.clusterIndex(name)
	if !ok {
		return engine.Unknown
	}
	return d.Clusters[i].engineState()
}

// LookupEndpoint returns the decided state of an endpoint.
func (d *Decision) LookupEndpoint(service, target string) (EndpointState, bool) {
	i, ok := d.endpointIndex(vote.EndpointSubject(service, target))
	if !ok {
		return EndpointState{}, false
	}
	return d.Endpoints[i], true
}

// LookupCluster returns the decided state of a cluster.
func (d *Decision) LookupCluster(name string) (ClusterState, bool) {
	i, ok := d.clusterIndex(name)
	if !ok {
		return ClusterState{}, false
	}
	return d.Clusters[i], true
}

// SameStates reports whether d and o give the engine the same health: the
// same endpoints and clusters with the same Endpoint and Cluster results.
// Holds, counters, reasons and outliers are not compared. The caller
// recompiles its snapshot only when this is false (see StatesChanged).
func (d *Decision) SameStates(o *Decision) bool {
	if d == nil || o == nil {
		return d == o
	}
	if len(d.Endpoints) != len(o.Endpoints) || len(d.Clusters) != len(o.Clusters) {
		return false
	}
	for i := range d.Clusters {
		if d.Clusters[i].Name != o.Clusters[i].Name || d.Clusters[i].engineState() != o.Clusters[i].engineState() {
			return false
		}
	}
	// The clusters match, so an endpoint in the same cluster differs only if
	// its own state does (and its cluster has not failed over).
	for i := range d.Endpoints {
		a, b := &d.Endpoints[i], &o.Endpoints[i]
		if a.Subject != b.Subject {
			return false
		}
		if (a.Cluster != b.Cluster || ownEngineState(a.State) != ownEngineState(b.State)) &&
			d.endpointEngineState(i) != o.endpointEngineState(i) {
			return false
		}
		if a.Doubt != b.Doubt || d.returning(i) != o.returning(i) {
			return false
		}
	}
	return true
}

func ownEngineState(s State) engine.State {
	switch s {
	case Down:
		return engine.Down
	case Up:
		return engine.Up
	}
	return engine.Unknown
}

func (d *Decision) endpointEngineState(i int) engine.State {
	e := &d.Endpoints[i]
	if e.State != Down {
		if c, ok := d.clusterIndex(e.Cluster); ok && d.Clusters[c].State == FailedOver {
			return engine.Down
		}
	}
	return ownEngineState(e.State)
}

func (c *ClusterState) engineState() engine.State {
	switch {
	case c.State == FailedOver:
		return engine.Down
	case c.State == Ready && c.Monitored:
		return engine.Up
	}
	return engine.Unknown
}

func (d *Decision) endpointIndex(s vote.Subject) (int, bool) {
	if d == nil {
		return 0, false
	}
	return slices.BinarySearchFunc(d.Endpoints, s, func(e EndpointState, s vote.Subject) int {
		return compareSubjects(e.Subject, s)
	})
}

func (d *Decision) clusterIndex(name string) (int, bool) {
	if d == nil {
		return 0, false
	}
	return slices.BinarySearchFunc(d.Clusters, name, func(c ClusterState, name string) int {
		return cmp.Compare(c.Name, name)
	})
}

func compareSubjects(a, b vote.Subject) int {
	if c := cmp.Compare(a.Service, b.Service); c != 0 {
		return c
	}
	return cmp.Compare(a.Target, b.Target)
}

// NextDue returns the earliest time after d.At at which a decision on the
// same votes could change something by time alone: a hold-down ending or
// a brake's Interval passing (p as given to Decide). Zero when nothing
// waits. A caller that decides on a tick may decide at that time too, so
// that a release is not late by up to a tick.
func (d *Decision) NextDue(p Params) time.Time {
	if d == nil {
		return time.Time{}
	}
	p = p.withDefaults()
	var next time.Time
	consider := func(t time.Time) {
		if t.After(d.At) && (next.IsZero() || t.Before(next)) {
			next = t
		}
	}
	for i := range d.Endpoints {
		e := &d.Endpoints[i]
		if e.Held() {
			consider(e.HeldUntil)
		}
		if e.Braked() {
			consider(e.BrakeSince.Add(p.Interval))
		}
	}
	for i := range d.Clusters {
		if d.Clusters[i].Held() {
			consider(d.Clusters[i].HeldUntil)
		}
	}
	return next
}

// HoldDown is the hold-down the next recovery of a subject with this
// timeline waits: the one running or due (HoldFor(Failures)) while it is
// down, the one a failure now would bring (HoldFor(Failures+1)) while it
// is up. Failures a quiet FlapWindow would forget are counted until the
// next Decide forgets them.
func (t Timeline) HoldDown(p Params, down bool) time.Duration {
	p = p.withDefaults()
	if down {
		return p.HoldFor(t.Failures)
	}
	return p.HoldFor(t.Failures + 1)
}
