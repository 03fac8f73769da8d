package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"net/netip"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/meridian-gslb/meridian/bench/internal/benchenv"
	"github.com/meridian-gslb/meridian/internal/api"
)

// settle waits (at most SettleTimeout) until no node receives more than one
// vote message per second over a Sample: the start-up burst (every prober's
// first vote on every endpoint, relayed by every node) has died down and
// what follows is the steady state.
func (b *bench) settle(ctx context.Context, t0 time.Time) error {
	if b.p.SettleTimeout <= 0 {
		return nil
	}
	logf("waiting up to %v for the vote broadcasts of the start-up to die down (< 1 vote message/s received on every node)", b.p.SettleTimeout)
	deadline := time.Now().Add(b.p.SettleTimeout)
	prev := make([]nodeSnap, len(b.nodes))
	if err := b.snapAll(ctx, prev); err != nil {
		return err
	}
	for {
		if err := benchenv.Sleep(ctx, b.p.Sample); err != nil {
			return err
		}
		if err := b.checkAlive(); err != nil {
			return err
		}
		cur := make([]nodeSnap, len(b.nodes))
		if err := b.snapAll(ctx, cur); err != nil {
			return err
		}
		worst, who := 0.0, ""
		for i, n := range b.nodes {
			dt := cur[i].proc.At.Sub(prev[i].proc.At).Seconds()
			rate := (cur[i].met.Sum("meridian_ring_messages_total", "type", "vote", "direction", "received") -
				prev[i].met.Sum("meridian_ring_messages_total", "type", "vote", "direction", "received")) / dt
			if rate >= worst {
				worst, who = rate, n.name
			}
		}
		if worst < 1 {
			b.rep.settledAfter = time.Since(t0)
			logf("vote broadcasts settled %.0f s after the start", b.rep.settledAfter.Seconds())
			return nil
		}
		if time.Now().After(deadline) {
			msg := fmt.Sprintf("vote broadcasts did not die down within %v after the warm-up (BENCH_RING_SETTLE_TIMEOUT): %s still received %.0f vote messages/s; the steady window below includes them",
				b.p.SettleTimeout, who, worst)
			logf("WARNING: %s", msg)
			b.rep.findings = append(b.rep.findings, msg)
			return nil
		}
		prev = cur
	}
}

// ------------------------------------------------------------ /v1/health ----

// healthView is what one node's /v1/health says about the run.
type healthView struct {
	Node          string
	Err           error
	Probers       int // prober members
	Endpoints     int
	Up, Down, Unk int
	FullVotes     int // endpoints with fresh votes from every prober
	MinFresh      int // fewest fresh votes on one endpoint
	FailDown      int // failing endpoints decided down
	FailUp        int // failing endpoints decided up
	OtherDown     int // non-failing endpoints decided down (false positives)
	LastDownSince time.Time
	LastUpSince   time.Time
	Stale         map[string]int     // prober -> endpoints where its vote is not fresh
	StaleAge      map[string]float64 // prober -> age of its oldest vote, seconds
	Missing       map[string]int     // prober -> endpoints without a vote of it
}

// health reads the node's /v1/health and counts what it says about the
// endpoints (failing: the endpoints made to fail) and the probers' votes.
func (n *node) health(ctx context.Context, failing map[netip.Addr]bool, probers int) healthView {
	v := healthView{Node: n.name, MinFresh: -1}
	body, err := get(ctx, "http://"+n.httpAddr+"/v1/health")
	if err != nil {
		v.Err = err
		return v
	}
	var r api.HealthReport
	if err := json.NewDecoder(bytes.NewReader(body)).Decode(&r); err != nil {
		v.Err = fmt.Errorf("/v1/health: %w", err)
		return v
	}
	v.Stale, v.StaleAge, v.Missing = map[string]int{}, map[string]float64{}, map[string]int{}
	var members []string
	for _, p := range r.Probers {
		if p.Role == "prober" {
			v.Probers++
			members = append(members, p.Name)
		}
	}
	for _, e := range r.Endpoints {
		v.Endpoints++
		v.countVotes(e, members, probers)
		addr, _ := netip.ParseAddr(e.Target)
		v.countState(e, failing[addr])
	}
	return v
}

// countVotes counts an endpoint's fresh, stale and missing prober votes.
func (v *healthView) countVotes(e api.EndpointHealth, members []string, probers int) {
	fresh := 0
	voted := map[string]bool{}
	for _, vo := range e.Votes {
		voted[vo.Prober] = true
		if vo.Fresh {
			fresh++
		} else {
			v.Stale[vo.Prober]++
			v.StaleAge[vo.Prober] = max(v.StaleAge[vo.Prober], vo.AgeSeconds)
		}
	}
	for _, m := range members {
		if !voted[m] {
			v.Missing[m]++
		}
	}
	if fresh >= probers {
		v.FullVotes++
	}
	if v.MinFresh < 0 || fresh < v.MinFresh {
		v.MinFresh = fresh
	}
}

// countState counts an endpoint's decided state, and for a failing one when
// it was decided.
func (v *healthView) countState(e api.EndpointHealth, isFailing bool) {
	switch e.State {
	case "up":
		v.Up++
		if isFailing {
			v.FailUp++
			if e.Since.After(v.LastUpSince) {
				v.LastUpSince = e.Since
			}
		}
	case "down":
		v.Down++
		if isFailing {
			v.FailDown++
			if e.Since.After(v.LastDownSince) {
				v.LastDownSince = e.Since
			}
		} else {
			v.OtherDown++
		}
	default:
		v.Unk++
	}
}

func (v healthView) String() string {
	if v.Err != nil {
		return fmt.Sprintf("%s: %v", v.Node, v.Err)
	}
	s := fmt.Sprintf("%s: %d prober members, %d endpoints (%d up, %d down, %d unknown), %d with fresh votes from every prober (fewest fresh votes on one endpoint: %d)",
		v.Node, v.Probers, v.Endpoints, v.Up, v.Down, v.Unk, v.FullVotes, v.MinFresh)
	var stale []string
	for _, p := range slices.Sorted(maps.Keys(v.Stale)) {
		stale = append(stale, fmt.Sprintf("%s on %d (oldest %.0f s)", p, v.Stale[p], v.StaleAge[p]))
	}
	if len(stale) > 0 {
		s += "; stale votes of " + strings.Join(stale, ", ")
	}
	var missing []string
	for _, p := range slices.Sorted(maps.Keys(v.Missing)) {
		missing = append(missing, fmt.Sprintf("%s on %d", p, v.Missing[p]))
	}
	if len(missing) > 0 {
		s += "; no vote at all of " + strings.Join(missing, ", ")
	}
	return s
}

// pollAll asks every node's /v1/health at once.
func (b *bench) pollAll(ctx context.Context, failing map[netip.Addr]bool) []healthView {
	out := make([]healthView, len(b.nodes))
	var wg sync.WaitGroup
	for i, n := range b.nodes {
		wg.Go(func() { out[i] = n.health(ctx, failing, b.p.Probers) })
	}
	wg.Wait()
	return out
}

// converge waits until every node sees every prober and has decided every
// endpoint up (required), and records when every node also holds a fresh
// vote from every prober on every endpoint (reported; the wait goes on for
// it until the same deadline).
func (b *bench) converge(ctx context.Context, t0 time.Time) error {
	deadline := time.Now().Add(b.p.ConvergeTimeout)
	var views []healthView
	for {
		if err := b.checkAlive(); err != nil {
			return err
		}
		views = b.pollAll(ctx, nil)
		allUp, allVotes := true, true
		for _, v := range views {
			if v.Err != nil || v.Probers != b.p.Probers || v.Up != b.p.Endpoints {
				allUp = false
			}
			if v.Err != nil || v.FullVotes != b.p.Endpoints {
				allVotes = false
			}
		}
		if allUp && b.rep.upAfter == 0 {
			b.rep.upAfter = time.Since(t0)
			logf("every node: %d members, %d endpoints up after %.1f s", b.p.Probers, b.p.Endpoints, b.rep.upAfter.Seconds())
		}
		if allVotes && b.rep.votesAfter == 0 {
			b.rep.votesAfter = time.Since(t0)
			logf("every node holds fresh votes from every prober on every endpoint after %.1f s", b.rep.votesAfter.Seconds())
		}
		if allUp && allVotes {
			return nil
		}
		if time.Now().After(deadline) {
			break
		}
		if err := benchenv.Sleep(ctx, 2*time.Second); err != nil {
			return err
		}
	}
	b.rep.convergeViews = views
	var lines []string
	for _, v := range views {
		lines = append(lines, "  "+v.String())
	}
	if b.rep.upAfter == 0 {
		return fmt.Errorf("the ring did not converge within %v (BENCH_RING_CONVERGE_TIMEOUT): want %d prober members and %d endpoints up on every node; got:\n%s",
			b.p.ConvergeTimeout, b.p.Probers, b.p.Endpoints, strings.Join(lines, "\n"))
	}
	msg := fmt.Sprintf("votes did not converge within %v: every endpoint is up everywhere, but not every node holds a fresh vote from every prober on every endpoint:\n%s",
		b.p.ConvergeTimeout, strings.Join(lines, "\n"))
	logf("WARNING: %s", msg)
	b.rep.findings = append(b.rep.findings, msg)
	return nil
}
