package notify

import (
	"sync"
	"time"
)

// MaxHeld bounds the events a closed Gate keeps.
const MaxHeld = 256

// Gate passes events on only while it is open: on the ring's elected
// writer. Every node of a ring decides the same changes, and a receiver
// wants one message for each, not one per node. A closed gate keeps the
// events of the last Keep (at most MaxHeld, oldest dropped first); when it
// opens it sends those, oldest first, so that a change decided while the
// writer moves (a region lost together with the writer) still reaches the
// receivers. The old writer may have sent some of them already: across a
// writer change delivery is at least once (PagerDuty merges a repeated
// trigger by its dedup_key).
type Gate struct {
	Next interface{ Notify(Event) }
	Keep time.Duration    // how long a closed gate keeps an event (by its At)
	Now  func() time.Time // default time.Now

	mu   sync.Mutex
	open bool
	held []Event
}

// Notify passes e on while the gate is open and keeps it otherwise.
func (g *Gate) Notify(e Event) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.open {
		g.Next.Notify(e)
		return
	}
	if e.At.IsZero() {
		e.At = g.now()
	}
	g.held = append(g.held, e)
	if len(g.held) > MaxHeld {
		g.held = append(g.held[:0], g.held[len(g.held)-MaxHeld:]...)
	}
}

// Set opens or closes the gate. Opening sends the kept events still within
// Keep and returns how many it sent.
func (g *Gate) Set(open bool) (sent int) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.open = open
	if !open {
		return 0
	}
	cutoff := g.now().Add(-g.Keep)
	for _, e := range g.held {
		if !e.At.Before(cutoff) {
			g.Next.Notify(e)
			sent++
		}
	}
	g.held = nil
	return sent
}

func (g *Gate) now() time.Time {
	if g.Now != nil {
		return g.Now()
	}
	return time.Now()
}
