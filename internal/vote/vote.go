// Package vote holds what probers say about what they probe: a Subject
// (an endpoint of a service, or a cluster), a Status and a Vote. It is pure
// (no I/O, no metrics): internal/health produces votes, internal/ring
// carries them and internal/failover decides on them.
package vote

import (
	"fmt"
	"time"
)

// Subject is what a vote is about: an endpoint of a service, or a cluster.
type Subject struct {
	Service string // canonical service name; "" for a cluster
	Target  string // endpoint address (canonical IP text) or, for a cluster, its name
}

// EndpointSubject names an endpoint of a service.
func EndpointSubject(service, address string) Subject {
	return Subject{Service: service, Target: address}
}

// ClusterSubject names a cluster (its heartbeat).
func ClusterSubject(name string) Subject { return Subject{Target: name} }

// IsCluster reports whether s names a cluster.
func (s Subject) IsCluster() bool { return s.Service == "" }

func (s Subject) String() string {
	if s.IsCluster() {
		return "cluster " + s.Target
	}
	return fmt.Sprintf("%s %s", s.Service, s.Target)
}

// Status is a prober's local view of a subject after its thresholds.
type Status uint8

// Statuses. A prober that has not yet reached a threshold either way
// reports Unknown.
const (
	Unknown Status = iota
	Up
	Down
)

func (s Status) String() string {
	switch s {
	case Up:
		return "up"
	case Down:
		return "down"
	}
	return "unknown"
}

// Vote is one prober's current view of one subject.
type Vote struct {
	Subject    Subject
	Prober     string    // node name of the prober
	Region     string    // region of the prober
	Status     Status    // Up or Down (Unknown votes are not published)
	ObservedAt time.Time // when the prober last confirmed this status
	Seq        uint64    // per-prober sequence; a higher Seq replaces a lower one for the same subject
}

// Newer reports whether v should replace old (same prober and subject).
func (v Vote) Newer(old Vote) bool {
	if v.Seq != old.Seq {
		return v.Seq > old.Seq
	}
	return v.ObservedAt.After(old.ObservedAt)
}
