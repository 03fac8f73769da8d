package ring

import "github.com/meridian-gslb/meridian/internal/leader"

// Election adapts the ring to leader.Transport: the writer election runs on
// the ring's members and its direct writer votes.
type Election struct{ Ring *Ring }

var _ leader.Transport = Election{}

// Name is this node's name.
func (t Election) Name() string { return t.Ring.Name() }

// Alive lists the ring's live members.
func (t Election) Alive() map[string]bool {
	m := map[string]bool{}
	for _, mem := range t.Ring.Members() {
		m[mem.Name] = true
	}
	return m
}

// Votes are the writer votes received.
func (t Election) Votes() []leader.Vote {
	var out []leader.Vote
	for _, v := range t.Ring.LeaderVotes() {
		out = append(out, leader.Vote{Voter: v.Voter, Candidate: v.Candidate, Received: v.Received})
	}
	return out
}

// Send votes for candidate c.
func (t Election) Send(c string) { t.Ring.SendLeaderVote(c) }
