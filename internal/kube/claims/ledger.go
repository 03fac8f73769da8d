package claims

import (
	"fmt"
	"time"
)

// Record is the owner of a name that rule 4 decides (no claim covers it,
// unclaimed_names: oldest): the namespace whose object claimed it first,
// as this node's ledger recorded it.
type Record struct {
	Namespace string    `json:"namespace"`
	Since     time.Time `json:"since"` // when it became the owner
	// Released is when the owner's objects stopped claiming the name (nil
	// while one does). The name stays the owner's for the policy's
	// ReleaseAfter from then, served by nobody else; then it is free.
	Released *time.Time `json:"released,omitempty"`
}

// Ledger is the owners rule 4 recorded, by canonical name. [Decide] reads
// one and returns the next; it never modifies the one it is given.
type Ledger map[string]Record

// expired reports whether r no longer holds its name at now.
func (r Record) expired(now time.Time, after time.Duration) bool {
	return r.Released != nil && now.Sub(*r.Released) >= after
}

// freeAt is when a released record's name becomes free.
func (r Record) freeAt(after time.Duration) time.Time {
	return r.Released.Add(after)
}

// next is the ledger after the decisions ds at now: the record of each
// name rule 4 decided (held, released by its owner, or new), and the
// records of the names no rule 4 decision covers (nobody claims them, or
// another rule decides them now: a claim was added, the name became
// reserved), released from the first decision that saw it and dropped
// once released for the policy's ReleaseAfter.
func next(p Policy, prev Ledger, ds map[string]Decision, now time.Time) Ledger {
	out := make(Ledger, len(prev))
	for name, d := range ds {
		if r, ok := d.Record(); ok {
			out[name] = r
		}
	}
	for name, r := range prev {
		if _, ok := out[name]; ok {
			continue
		}
		if r.Released == nil {
			t := now
			r.Released = &t
		}
		if !r.expired(now, p.ReleaseAfter) {
			out[name] = r
		}
	}
	return out
}

// heldText says how long a released owner keeps its name.
func heldText(r Record, after time.Duration) string {
	return fmt.Sprintf("no object of namespace %s claims it any more; it stays theirs until %s (kubernetes.claim_release_after %s), then the next claimant takes it",
		r.Namespace, r.freeAt(after).UTC().Format(time.RFC3339), after)
}

// NextFree is when the first of l's released names becomes free (ok false
// when none is released): a build at that time gives it to the next
// claimant, so the caller schedules one.
func (l Ledger) NextFree(after time.Duration) (t time.Time, ok bool) {
	for _, r := range l {
		if r.Released == nil {
			continue
		}
		if f := r.freeAt(after); !ok || f.Before(t) {
			t, ok = f, true
		}
	}
	return t, ok
}
