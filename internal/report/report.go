// Package report holds the plain types of what a node reports about health
// and changes (GET /v1/health, the timeline) and the errors its control
// calls return: produced by the pipeline's followers and runners, served
// by internal/api. It imports nothing of ours.
package report

import (
	"errors"
	"time"
)

// HealthReport is the body of GET /v1/health: the decided state of every
// endpoint and cluster, the votes behind it, and the ring's probers.
type HealthReport struct {
	Node      string           `json:"node"`
	Region    string           `json:"region"`
	Probing   bool             `json:"probing"` // false: health comes from the config only
	DecidedAt time.Time        `json:"decided_at"`
	Endpoints []EndpointHealth `json:"endpoints"`
	Clusters  []ClusterHealth  `json:"clusters"`
	Probers   []ProberHealth   `json:"probers"`
	Changes   []ChangeEvent    `json:"changes"` // most recent first
	// PublicKey is this node's ring identity, as ring.peers lists it.
	PublicKey string `json:"public_key,omitempty"`
	// Untrusted are live ring members that count for nothing: not in
	// ring.peers, metadata not signed by the listed key, beyond a prefix
	// entry's max_nodes, or a prober without recent signed summaries.
	Untrusted []UntrustedMember `json:"untrusted,omitempty"`
}

// UntrustedMember is a live ring member that counts for nothing.
type UntrustedMember struct {
	Name string `json:"name"`
	Addr string `json:"addr"`
	Role string `json:"role"` // as it claims
}

// EndpointHealth is one endpoint of one service.
type EndpointHealth struct {
	Service   string     `json:"service"`
	Target    string     `json:"target"`
	Cluster   string     `json:"cluster"`
	State     string     `json:"state"`           // decided from votes: up, down, unknown
	Admin     string     `json:"admin,omitempty"` // set in the config: "down" or "drained" (out of answers whatever the votes say)
	Since     time.Time  `json:"since"`
	Reason    string     `json:"reason"`
	Voters    []string   `json:"voters,omitempty"`
	HeldUntil *time.Time `json:"held_until,omitempty"`
	Failures  int        `json:"failures,omitempty"`
	Braked    bool       `json:"braked,omitempty"`
	Votes     []VoteInfo `json:"votes"`
	// HoldDownSeconds is the hold-down the endpoint's next recovery waits:
	// the current one while it is down, the one a failure now would bring
	// while it is up (the adaptive ladder of decision.hold_down_min).
	HoldDownSeconds float64 `json:"hold_down_seconds,omitempty"`
	// InDoubt: answered but not settled; answers carrying it get the
	// service's doubt_ttl (failover.EndpointState.Doubt).
	InDoubt bool `json:"in_doubt,omitempty"`
	// Returning: down but may come back soon; the answers it is missing
	// from get the service's doubt_ttl (failover.EndpointState.Returning).
	Returning bool `json:"returning,omitempty"`
}

// ClusterHealth is one cluster.
type ClusterHealth struct {
	Name      string     `json:"name"`
	State     string     `json:"state"` // ready, unreachable, failed-over
	Monitored bool       `json:"monitored"`
	Since     time.Time  `json:"since"`
	Reason    string     `json:"reason"`
	Voters    []string   `json:"voters,omitempty"`
	HeldUntil *time.Time `json:"held_until,omitempty"`
	Votes     []VoteInfo `json:"votes"`
}

// VoteInfo is one prober's latest vote on a subject.
type VoteInfo struct {
	Prober     string  `json:"prober"`
	Region     string  `json:"region"`
	Status     string  `json:"status"`
	AgeSeconds float64 `json:"age_seconds"`
	Fresh      bool    `json:"fresh"`
}

// ProberHealth is one member of the ring.
type ProberHealth struct {
	Name              string   `json:"name"`
	Region            string   `json:"region"`
	Role              string   `json:"role"`
	Addr              string   `json:"addr"`
	LastVoteAgeSecond *float64 `json:"last_vote_age_seconds,omitempty"`
	Outlier           bool     `json:"outlier,omitempty"`
}

// ChangeEvent is one decided change (the failover timeline).
type ChangeEvent struct {
	At      time.Time `json:"at"`
	Subject string    `json:"subject"` // "service target" or "cluster name"
	From    string    `json:"from"`
	To      string    `json:"to"`
	Reason  string    `json:"reason"`
	Voters  []string  `json:"voters,omitempty"`
}

// ErrNoShift is returned when a service has no shift in force.
var ErrNoShift = errors.New("no shift in force")

// ErrSimulationBusy is returned when a simulation is already running on
// the node.
var ErrSimulationBusy = errors.New("a simulation is already running on this node")
