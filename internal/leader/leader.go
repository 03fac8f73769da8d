// Package leader elects the one node that pushes to a provider account: a
// pure decision over the votes the ring carries.
//
// Every node votes for the lowest-named writer candidate it sees alive and
// keeps that choice while the candidate stays alive in its view. When the
// candidate drops out of its view the node abstains at once, and chooses
// again only after Lease; so it does when its choice cannot win (not the
// lowest candidate alive, and no majority in the fresh votes it sees), as
// after nodes that started apart, each its own only candidate, meet. A node writes only while it holds fresh votes
// (received within Fresh, measured on its own clock) from a strict majority
// of the candidates. The last vote the old writer can have received from a
// voter predates the abstention, so it is stale before the voter votes for
// anyone else (Fresh < Lease): two writers never hold a majority at the
// same time, even with asymmetric partitions (see the property test).
package leader

import (
	"slices"
	"time"
)

// Defaults.
const (
	DefaultLease = 10 * time.Second // a voter keeps its vote this long after losing sight of the candidate
	DefaultFresh = 5 * time.Second  // a writer counts a vote received at most this long ago
)

// Vote is the newest vote received from a voter.
type Vote struct {
	Voter     string
	Candidate string
	Received  time.Time // when this node received it (its own clock)
}

// State is one node's election state between calls.
type State struct {
	Vote      string    // the candidate this node has chosen ("" = nobody yet)
	LostSince time.Time // when Vote's candidate dropped out of sight (zero while alive)
}

// Published is the vote to send: the chosen candidate, or "" (abstain)
// while it is out of sight.
func (s State) Published() string {
	if !s.LostSince.IsZero() {
		return ""
	}
	return s.Vote
}

// Input of one decision.
type Input struct {
	Self       string
	Candidates []string        // configured writers (sorted or not)
	Alive      map[string]bool // ring members this node sees alive (itself included)
	Votes      []Vote          // newest vote per voter, ours included
	Prev       State
	Now        time.Time
	Lease      time.Duration // default DefaultLease
	Fresh      time.Duration // default DefaultFresh; must be shorter than Lease
}

// Output of one decision.
type Output struct {
	State  State
	Writer bool // this node may push now
	Votes  int  // fresh votes for this node
	Needed int  // strict majority of the candidates
}

// Decide returns this node's vote and whether it is the writer.
func Decide(in Input) Output {
	if in.Lease <= 0 {
		in.Lease = DefaultLease
	}
	if in.Fresh <= 0 || in.Fresh >= in.Lease {
		in.Fresh = min(DefaultFresh, in.Lease/2)
	}
	cands := slices.Clone(in.Candidates)
	slices.Sort(cands)
	cands = slices.Compact(cands)
	st := in.Prev
	needed := len(cands)/2 + 1
	// Keep the vote while its candidate is alive; move it only after the
	// candidate has been out of sight for the lease. A vote that cannot win
	// (for a candidate that is not the lowest alive and holds no majority of
	// the fresh votes this node sees) is given up the same way: nodes that
	// started apart each voted for themselves, the only candidate they
	// knew, and would otherwise keep those split votes for as long as they
	// live, with no writer ever.
	futile := st.Vote != "" && st.Vote != lowestAlive(cands, in.Alive) && fresh(in, cands, st.Vote) < needed
	switch {
	case st.Vote != "" && in.Alive[st.Vote] && slices.Contains(cands, st.Vote) && !futile:
		st.LostSince = time.Time{}
	case st.Vote != "" && slices.Contains(cands, st.Vote) && st.LostSince.IsZero():
		st.LostSince = in.Now
	}
	if st.Vote == "" || !slices.Contains(cands, st.Vote) || (!st.LostSince.IsZero() && in.Now.Sub(st.LostSince) >= in.Lease) {
		st.Vote, st.LostSince = "", time.Time{}
		for _, c := range cands {
			if in.Alive[c] {
				st.Vote = c
				break
			}
		}
	}
	out := Output{State: st, Needed: needed}
	if !slices.Contains(cands, in.Self) || st.Published() != in.Self {
		return out
	}
	out.Votes = fresh(in, cands, in.Self)
	out.Writer = out.Votes >= out.Needed
	return out
}

// fresh counts the votes for candidate received from candidates within
// in.Fresh.
func fresh(in Input, cands []string, candidate string) int {
	n := 0
	for _, v := range in.Votes {
		if v.Candidate == candidate && slices.Contains(cands, v.Voter) && in.Now.Sub(v.Received) <= in.Fresh {
			n++
		}
	}
	return n
}

// lowestAlive is the first of the sorted candidates alive, or "".
func lowestAlive(cands []string, alive map[string]bool) string {
	for _, c := range cands {
		if alive[c] {
			return c
		}
	}
	return ""
}
