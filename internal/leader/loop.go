package leader

import (
	"context"
	"log/slog"
	"sync/atomic"
	"time"
)

// Transport carries writer votes; *ring.Ring implements it through an
// adapter in internal/app. Methods must not block for long.
type Transport interface {
	Name() string
	Alive() map[string]bool // live members, this node included
	Votes() []Vote          // newest vote per voter
	Send(candidate string)  // publish this node's vote
}

// Elector runs the election every Tick and tells whether this node writes.
type Elector struct {
	Transport  Transport
	Candidates []string
	// CandidatesFunc, when set, gives the candidates at each round instead
	// of Candidates (the credentials' probers, a Roster's names).
	CandidatesFunc func() []string
	Tick           time.Duration // default 1s
	Lease          time.Duration // default DefaultLease
	Fresh          time.Duration // default DefaultFresh
	Logger         *slog.Logger
	OnChange       func(writer bool) // called from Run when the role changes

	writer atomic.Bool
	state  State
}

// Writer reports whether this node may push now. Safe for concurrent use.
func (e *Elector) Writer() bool { return e.writer.Load() }

// Run elects until ctx is done; on return this node is not the writer.
func (e *Elector) Run(ctx context.Context) {
	if e.Tick <= 0 {
		e.Tick = time.Second
	}
	if e.Logger == nil {
		e.Logger = slog.Default()
	}
	t := time.NewTicker(e.Tick)
	defer t.Stop()
	defer e.set(false, Output{})
	for {
		e.Step(time.Now())
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// Step runs one round (exported for tests).
func (e *Elector) Step(now time.Time) Output {
	cands := e.Candidates
	if e.CandidatesFunc != nil {
		cands = e.CandidatesFunc()
	}
	out := Decide(Input{Self: e.Transport.Name(), Candidates: cands, Alive: e.Transport.Alive(),
		Votes: e.Transport.Votes(), Prev: e.state, Now: now, Lease: e.Lease, Fresh: e.Fresh})
	e.state = out.State
	e.Transport.Send(out.State.Published())
	e.set(out.Writer, out)
	return out
}

func (e *Elector) set(w bool, out Output) {
	if e.writer.Swap(w) == w {
		return
	}
	if w {
		e.Logger.Info("ring writer: this node now writes (provider pushes, notifications, shift steps)", "votes", out.Votes, "needed", out.Needed)
	} else {
		e.Logger.Warn("ring writer: this node stopped writing", "votes", out.Votes, "needed", out.Needed)
	}
	if e.OnChange != nil {
		e.OnChange(w)
	}
}
