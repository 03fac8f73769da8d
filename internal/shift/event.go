package shift

import "time"

// Event is one step of a progressive shift: it advanced, finished,
// rolled back, was paused or resumed.
type Event struct {
	At      time.Time `json:"at"`
	ID      string    `json:"id"`
	Service string    `json:"service"`
	To      string    `json:"to"`
	Action  string    `json:"action"` // advance, finish, rollback, pause, resume
	From    int       `json:"from"`   // percent before
	Percent int       `json:"percent"`
	Reason  string    `json:"reason"`
	Who     string    `json:"who,omitempty"` // pause and resume
	// Observed: another node took this step (the ring's writer stepped
	// the shift, or an operator paused it there); this node only puts it
	// on its timeline: it is not notified, counted or logged as a step.
	Observed bool `json:"observed,omitempty"`
}
