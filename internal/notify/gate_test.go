package notify

import (
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

type collected struct{ events []Event }

func (c *collected) Notify(e Event) { c.events = append(c.events, e) }

func summaries(es []Event) []string {
	out := make([]string, len(es))
	for i, e := range es {
		out[i] = e.Summary
	}
	return out
}

func TestGate(t *testing.T) {
	t0 := time.Date(2026, 12, 2, 3, 0, 0, 0, time.UTC)
	ev := func(s string, ago time.Duration) Event { return Event{Summary: s, At: t0.Add(-ago)} }
	for _, tc := range []struct {
		name string
		run  func(g *Gate)
		sent []string
		kept int
	}{
		{name: "an open gate passes events on at once", run: func(g *Gate) {
			g.Set(true)
			g.Notify(ev("a", 0))
		}, sent: []string{"a"}},
		{name: "a closed gate sends nothing and keeps the events", run: func(g *Gate) {
			g.Notify(ev("a", 0))
			g.Notify(ev("b", 0))
		}, kept: 2},
		{name: "opening sends the kept events oldest first", run: func(g *Gate) {
			g.Notify(ev("a", 2*time.Second))
			g.Notify(ev("b", time.Second))
			g.Set(true)
		}, sent: []string{"a", "b"}},
		{name: "opening drops the events older than Keep", run: func(g *Gate) {
			g.Notify(ev("old", 31*time.Second))
			g.Notify(ev("new", 29*time.Second))
			g.Set(true)
		}, sent: []string{"new"}},
		{name: "an event without a time counts from when it was kept", run: func(g *Gate) {
			g.Notify(Event{Summary: "untimed"})
			g.Set(true)
		}, sent: []string{"untimed"}},
		{name: "closing again keeps the next events and sends nothing twice", run: func(g *Gate) {
			g.Notify(ev("a", 0))
			g.Set(true)
			g.Set(false)
			g.Notify(ev("b", 0))
		}, sent: []string{"a"}, kept: 1},
		{name: "a closed gate keeps the newest MaxHeld events", run: func(g *Gate) {
			for i := range MaxHeld + 10 {
				g.Notify(ev(fmt.Sprint(i), 0))
			}
		}, kept: MaxHeld},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := &collected{}
			g := &Gate{Next: c, Keep: 30 * time.Second, Now: func() time.Time { return t0 }}
			tc.run(g)
			assert.Equal(t, tc.sent, nilIfEmpty(summaries(c.events)))
			assert.Len(t, g.held, tc.kept)
		})
	}
}

func TestGateKeepsTheNewestWhenFull(t *testing.T) {
	c := &collected{}
	g := &Gate{Next: c, Keep: time.Minute}
	for i := range MaxHeld + 3 {
		g.Notify(Event{Summary: fmt.Sprint(i), At: time.Now()})
	}
	require.Equal(t, MaxHeld, g.Set(true))
	assert.Equal(t, "3", c.events[0].Summary, "the three oldest were dropped")
	assert.Equal(t, fmt.Sprint(MaxHeld+2), c.events[MaxHeld-1].Summary)
}

func nilIfEmpty(s []string) []string {
	if len(s) == 0 {
		return nil
	}
	return s
}
