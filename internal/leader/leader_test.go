package leader

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
)

var t0 = time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)

func alive(names ...string) map[string]bool {
	m := map[string]bool{}
	for _, n := range names {
		m[n] = true
	}
	return m
}

func votes(at time.Time, pairs ...string) []Vote {
	var out []Vote
	for i := 0; i+1 < len(pairs); i += 2 {
		out = append(out, Vote{Voter: pairs[i], Candidate: pairs[i+1], Received: at})
	}
	return out
}

func TestDecide(t *testing.T) {
	cands := []string{"c", "a", "b"}
	tests := []struct {
		name       string
		in         Input
		wantVote   string
		wantWriter bool
	}{
		{"the lowest live candidate gets the vote", Input{Self: "b", Alive: alive("a", "b", "c")}, "a", false},
		{"a candidate with fresh votes from a majority writes", Input{Self: "a", Alive: alive("a", "b", "c"), Votes: votes(t0, "a", "a", "b", "a")}, "a", true},
		{"one vote of three is not a majority", Input{Self: "a", Alive: alive("a", "b", "c"), Votes: votes(t0, "a", "a")}, "a", false},
		{"stale votes do not count", Input{Self: "a", Alive: alive("a", "b", "c"), Votes: votes(t0.Add(-6*time.Second), "a", "a", "b", "a")}, "a", false},
		{"a vote stays with a lost candidate during the lease", Input{Self: "b", Alive: alive("b", "c"), Prev: State{Vote: "a", LostSince: t0.Add(-9 * time.Second)}, Votes: votes(t0, "b", "b", "c", "b")}, "a", false},
		{"after the lease the vote moves to the next candidate", Input{Self: "b", Alive: alive("b", "c"), Prev: State{Vote: "a", LostSince: t0.Add(-10 * time.Second)}, Votes: votes(t0, "b", "b", "c", "b")}, "b", true},
		{"a lower candidate coming back does not take the vote from a live one", Input{Self: "b", Alive: alive("a", "b", "c"), Prev: State{Vote: "b"}, Votes: votes(t0, "b", "b", "c", "b")}, "b", true},
		{"a node that is not a candidate never writes", Input{Self: "x", Alive: alive("x", "a"), Prev: State{Vote: "x"}, Votes: votes(t0, "a", "x", "b", "x")}, "a", false},
		{"votes from non-candidates do not count", Input{Self: "a", Alive: alive("a", "x", "y"), Votes: votes(t0, "a", "a", "x", "a", "y", "a")}, "a", false},
		{"nobody alive means no vote", Input{Self: "z", Alive: alive("z")}, "", false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			tc.in.Candidates, tc.in.Now = cands, t0
			out := Decide(tc.in)
			assert.Equal(t, tc.wantVote, out.State.Vote)
			assert.Equal(t, tc.wantWriter, out.Writer)
		})
	}
}

// TestNoTwoWritersInAnyInterleaving simulates three nodes whose views and
// message deliveries are cut arbitrarily (a seeded random schedule of
// partitions), stepping the clock in 250 ms ticks, and checks that at no
// tick do two nodes both decide to write.
func TestNoTwoWritersInAnyInterleaving(t *testing.T) {
	names := []string{"a", "b", "c"}
	for seed := range 2000 {
		every := 40 // a new partition every 10 s
		if seed%2 == 1 {
			every = 7 // or every 1.75 s: faster than the lease
		}
		rng := newRand(uint64(seed))
		state := map[string]State{}
		received := map[string]map[string]Vote{} // at node -> voter -> newest vote received
		for _, n := range names {
			received[n] = map[string]Vote{}
		}
		link := map[[2]string]bool{} // directed: can x hear y
		setLinks := func() {
			for _, x := range names {
				for _, y := range names {
					link[[2]string{x, y}] = x == y || rng.next()%4 != 0
				}
			}
		}
		setLinks()
		now := t0
		writersSeen := 0
		for tick := range 600 {
			if tick%every == 0 {
				setLinks()
			}
			now = now.Add(250 * time.Millisecond)
			// Deliver each node's current vote to those who can hear it.
			for _, voter := range names {
				for _, to := range names {
					if link[[2]string{to, voter}] {
						received[to][voter] = Vote{Voter: voter, Candidate: state[voter].Published(), Received: now}
					}
				}
			}
			writers := 0
			for _, n := range names {
				alive := map[string]bool{}
				for _, m := range names {
					alive[m] = link[[2]string{n, m}]
				}
				var vs []Vote
				for _, v := range received[n] {
					vs = append(vs, v)
				}
				out := Decide(Input{Self: n, Candidates: names, Alive: alive, Votes: vs, Prev: state[n], Now: now})
				state[n] = out.State
				if out.Writer {
					writers++
				}
			}
			if writers > 1 {
				t.Fatalf("seed %d tick %d: %d writers at once", seed, tick, writers)
			}
			if writers == 1 {
				writersSeen++
			}
		}
		if seed == 0 {
			t.Logf("seed 0: a writer existed in %d of 600 ticks", writersSeen)
		}
	}
}

// newRand is a tiny deterministic generator (splitmix64).
type splitmix struct{ s uint64 }

func newRand(seed uint64) *splitmix { return &splitmix{s: seed} }

func (r *splitmix) next() uint64 {
	r.s += 0x9e3779b97f4a7c15
	z := r.s
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9
	z = (z ^ (z >> 27)) * 0x94d049bb133111eb
	return z ^ (z >> 31)
}

// TestNodesThatVotedForThemselvesAloneElectOneWriter: ring nodes that
// started apart (a second site cannot join the first until its seed name
// resolves) each knew only themselves as a candidate and voted for
// themselves. Once they see each other, the votes that cannot win move to
// the lowest candidate, through an abstention of one lease, and one writer
// is elected; before, every node kept its own vote while it stayed alive
// and no candidate ever held a majority.
func TestNodesThatVotedForThemselvesAloneElectOneWriter(t *testing.T) {
	for _, names := range [][]string{{"a", "b"}, {"a", "b", "c"}} {
		state := map[string]State{}
		received := map[string]map[string]Vote{}
		for _, n := range names {
			received[n] = map[string]Vote{}
		}
		now := t0
		step := func(joined bool) (writers []string) {
			now = now.Add(250 * time.Millisecond)
			for _, voter := range names {
				for _, to := range names {
					if joined || to == voter {
						received[to][voter] = Vote{Voter: voter, Candidate: state[voter].Published(), Received: now}
					}
				}
			}
			for _, n := range names {
				cands, alive := []string{n}, map[string]bool{n: true}
				if joined {
					cands, alive = names, map[string]bool{}
					for _, m := range names {
						alive[m] = true
					}
				}
				var vs []Vote
				for _, v := range received[n] {
					vs = append(vs, v)
				}
				out := Decide(Input{Self: n, Candidates: cands, Alive: alive, Votes: vs, Prev: state[n], Now: now})
				state[n] = out.State
				if out.Writer {
					writers = append(writers, n)
				}
			}
			return writers
		}
		for range 8 { // 2 s apart: each its own writer
			step(false)
		}
		for _, n := range names {
			assert.Equal(t, n, state[n].Vote, "%v: alone, %s votes for itself", names, n)
		}
		var elected time.Duration
		joined := now
		for range 240 { // 60 s together
			w := step(true)
			assert.LessOrEqual(t, len(w), 1, "%v: never two writers: %v", names, w)
			if len(w) == 1 && elected == 0 {
				elected = now.Sub(joined)
				assert.Equal(t, "a", w[0], "%v: the lowest candidate writes", names)
			}
			if elected != 0 {
				assert.Equal(t, []string{"a"}, w, "%v: the writer stays", names)
			}
		}
		assert.NotZero(t, elected, "%v: one writer is elected", names)
		assert.LessOrEqual(t, elected, DefaultLease+DefaultFresh, "%v: within a lease (and the votes' freshness) of seeing each other", names)
		t.Logf("%v: one writer %s after the nodes saw each other", names, elected)
	}
}
