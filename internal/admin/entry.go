package admin

import (
	"errors"
	"fmt"
	"regexp"
	"slices"
	"time"

	"github.com/meridian-gslb/meridian/internal/model"
)

// Reasons an entry from outside this node (the ring, a state file) is
// skipped; they label meridian_admin_entries_rejected_total.
const (
	RejectInvalid       = "invalid"        // a field out of what the API accepts
	RejectFuture        = "future"         // stamped beyond now + the clock-skew allowance
	RejectUnknownTarget = "unknown-target" // names a cluster, service or endpoint this node does not have
)

// EntryError says why an entry was skipped.
type EntryError struct {
	ID     string
	Reason string
	Err    error
}

func (e EntryError) Error() string { return fmt.Sprintf("override %q: %s: %v", e.ID, e.Reason, e.Err) }

func (e EntryError) Unwrap() error { return e.Err }

var idPattern = regexp.MustCompile(`^[A-Za-z0-9._-]{1,64}$`)

// targetFields are the fields that name a cluster, service or endpoint
// (a shift's target cluster "to" included): an entry refused on one of
// them against the config is an unknown target, not invalid.
var targetFields = []string{"cluster", "service", "endpoint", "to"}

// CheckEntry validates an entry that did not come through this node's API
// exactly as the API validates a request (the same rules, see validate),
// plus what only an entry has: its id, author, times and stamp. With d the
// targets must exist (tombstones excepted: they only remove); skew bounds
// how far in the future a stamp may be.
func CheckEntry(id string, e Entry, d *model.Desired, now time.Time, skew time.Duration) *EntryError {
	bad := func(reason, format string, args ...any) *EntryError {
		return &EntryError{ID: id, Reason: reason, Err: fmt.Errorf(format, args...)}
	}
	o := e.Override
	limit := now.Add(skew)
	switch {
	case !idPattern.MatchString(id):
		return bad(RejectInvalid, "the id is not 1..64 letters, digits, '.', '_' or '-'")
	case o.ID != id:
		return bad(RejectInvalid, "filed under %q but its id is %q", id, o.ID)
	case o.Who == "" || len(o.Who) > 128:
		return bad(RejectInvalid, "who is empty or longer than 128 characters")
	case e.Stamp.Node == "" || len(e.Stamp.Node) > model.MaxNodeName:
		return bad(RejectInvalid, "the stamp names no node, or one longer than %d characters", model.MaxNodeName)
	case e.Stamp.At <= 0 || o.At.IsZero():
		return bad(RejectInvalid, "no time")
	case e.Stamp.At > limit.UnixNano():
		return bad(RejectFuture, "stamped %s, beyond now + %s", time.Unix(0, e.Stamp.At).UTC().Format(time.RFC3339), skew)
	case o.At.After(limit):
		return bad(RejectFuture, "set at %s, beyond now + %s", o.At.UTC().Format(time.RFC3339), skew)
	case o.Expires != nil && (!o.Expires.After(o.At) || o.Expires.Sub(o.At) > MaxExpiry):
		return bad(RejectInvalid, "expires %s: not after it was set, or more than a year later", o.Expires.UTC().Format(time.RFC3339))
	}
	shape := o
	if err := shape.validate(nil); err != nil {
		return bad(RejectInvalid, "%w", err)
	}
	if d == nil || e.Deleted {
		return nil
	}
	resolved := o
	if err := resolved.validate(d); err != nil {
		reason := RejectInvalid
		var fe FieldError
		if errors.As(err, &fe) && slices.Contains(targetFields, fe.Field) {
			reason = RejectUnknownTarget
		}
		return bad(reason, "%w", err)
	}
	if resolved.Service != o.Service || resolved.Endpoint != o.Endpoint {
		return bad(RejectInvalid, "service %q / endpoint %q are not in canonical form", o.Service, o.Endpoint)
	}
	return nil
}

// Sanitize returns the entries of s that pass CheckEntry and why each
// other one was skipped.
func (s State) Sanitize(d *model.Desired, now time.Time, skew time.Duration) (State, []EntryError) {
	out := State{Entries: make(map[string]Entry, len(s.Entries))}
	var skipped []EntryError
	for id, e := range s.Entries {
		if err := CheckEntry(id, e, d, now, skew); err != nil {
			skipped = append(skipped, *err)
			continue
		}
		out.Entries[id] = e
	}
	return out, skipped
}
