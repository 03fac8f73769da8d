package engine

// State is the health of an endpoint or cluster as seen by the engine.
type State uint8

// Health states. Unknown counts as up: an endpoint nobody has probed yet stays
// in the answers.
const (
	Unknown State = iota
	Up
	Down
)

func (s State) String() string {
	switch s {
	case Up:
		return "up"
	case Down:
		return "down"
	default:
		return "unknown"
	}
}

// Health feeds observed health into a compile. Implementations must be safe
// to call from the goroutine that compiles; they are never called on the
// query path. The config's own `state: down` and `drain: true` are applied on
// top of what Health says.
type Health interface {
	// Endpoint returns the state of the endpoint of service whose target
	// (IP address or CNAME target, canonical form) is given.
	Endpoint(service, target string) State
	// Cluster returns the state of a cluster.
	Cluster(name string) State
}

// DoubtHealth is implemented by a Health that knows which endpoints are in
// doubt (failover.Decision). For an answered endpoint: a failed probe being
// re-checked, down votes short of a decision, a failure within the flap
// window; answers carrying it get the service's doubt_ttl. For an endpoint
// that is Down: it may come back soon (it failed within the flap window,
// or its hold-down ends within it); the answers it is missing from get
// doubt_ttl, so that resolvers see its return soon.
type DoubtHealth interface {
	Doubt(service, target string) bool
}

// NoHealth reports every endpoint and cluster as Unknown (so: up).
type NoHealth struct{}

// Endpoint implements Health.
func (NoHealth) Endpoint(string, string) State { return Unknown }

// Cluster implements Health.
func (NoHealth) Cluster(string) State { return Unknown }

var _ Health = NoHealth{}
