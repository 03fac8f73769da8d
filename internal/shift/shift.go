// Package shift decides the steps of a progressive traffic shift: which
// share of a service's traffic goes to the target cluster now, and whether
// to advance, hold, or roll back to the last safe step (and why). It is
// pure: the caller brings the time, the target's health and the guard's
// result, stores the returned progress and applies the percentage.
package shift

import (
	"fmt"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"
)

// Limits on a shift's spec (the API, the CLI, the ring and state files
// all check the same ones, see Spec.Validate).
const (
	MaxSteps       = 20
	MinEvery       = time.Second
	MaxEvery       = 24 * time.Hour
	MaxMaxFailures = 100
	MaxAbortIf     = 1024 // bytes of PromQL

	// MaxProgressReason is the longest Progress.Reason ValidProgress
	// accepts (from the ring, a state file or this node's store).
	MaxProgressReason = 2048
	// MaxReason is the longest reason Decide stores: under
	// MaxProgressReason, so that a rollback is always saved.
	MaxReason = 2000
	// MaxNamed is how many down endpoints a rollback reason names; the
	// rest are counted ("and N more").
	MaxNamed = 3
)

// DefaultSteps are the percentages when none are given.
var DefaultSteps = []int{1, 5, 25, 50, 100}

// Spec is what the operator asked for.
type Spec struct {
	To          string        `json:"to"`                     // target cluster
	Steps       []int         `json:"steps"`                  // strictly increasing percentages, 1..100, last 100
	Every       time.Duration `json:"every"`                  // time a step must hold healthy before the next
	AbortIf     string        `json:"abort_if,omitempty"`     // PromQL; a non-empty, non-zero result is a breach
	MaxFailures int           `json:"max_failures,omitempty"` // consecutive guard errors tolerated; the next one rolls back
}

// FieldError is a rejected spec field.
type FieldError struct{ Field, Msg string }

func (e FieldError) Error() string { return e.Field + ": " + e.Msg }

// Validate checks the shape of s (the cluster's existence is the caller's).
func (s Spec) Validate() error {
	switch {
	case s.To == "":
		return FieldError{"to", "is required: the cluster that receives the traffic"}
	case len(s.To) > 253:
		return FieldError{"to", "is longer than 253 characters"}
	case len(s.Steps) == 0 || len(s.Steps) > MaxSteps:
		return FieldError{"steps", fmt.Sprintf("give 1..%d percentages (e.g. 1,5,25,50,100)", MaxSteps)}
	case s.Every < MinEvery || s.Every > MaxEvery:
		return FieldError{"every", fmt.Sprintf("%s is out of range (allowed: %s..%s)", s.Every, MinEvery, MaxEvery)}
	case s.MaxFailures < 0 || s.MaxFailures > MaxMaxFailures:
		return FieldError{"max_failures", fmt.Sprintf("%d is out of range (allowed: 0..%d)", s.MaxFailures, MaxMaxFailures)}
	case len(s.AbortIf) > MaxAbortIf:
		return FieldError{"abort_if", fmt.Sprintf("is longer than %d bytes", MaxAbortIf)}
	case strings.ContainsAny(s.AbortIf, "\x00\r\n"):
		return FieldError{"abort_if", "holds a NUL or a line break (give one PromQL expression on one line)"}
	}
	for i, p := range s.Steps {
		if p < 1 || p > 100 || i > 0 && p <= s.Steps[i-1] {
			return FieldError{"steps", fmt.Sprintf("%s: allowed are strictly increasing percentages in 1..100", FormatSteps(s.Steps))}
		}
	}
	if s.Steps[len(s.Steps)-1] != 100 {
		return FieldError{"steps", fmt.Sprintf("%s: the last step must be 100", FormatSteps(s.Steps))}
	}
	return nil
}

// ParseSteps reads "1,5,25,50,100".
func ParseSteps(v string) ([]int, error) {
	var out []int
	for f := range strings.SplitSeq(v, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(f), "%")))
		if err != nil {
			return nil, FieldError{"steps", fmt.Sprintf("%q is not a percentage (allowed: e.g. 1,5,25,50,100)", f)}
		}
		out = append(out, n)
	}
	return out, nil
}

// FormatSteps writes steps as ParseSteps reads them.
func FormatSteps(steps []int) string {
	s := make([]string, len(steps))
	for i, p := range steps {
		s[i] = strconv.Itoa(p)
	}
	return strings.Join(s, ",")
}

// Progress is where a shift stands; the caller stores it with the spec.
type Progress struct {
	Step      int       `json:"step"`                // index into Steps; -1: 0 % (rolled back before the first step held)
	Safe      int       `json:"safe"`                // last step that held a whole interval; -1: none
	Since     time.Time `json:"since"`               // when the current step began
	Paused    bool      `json:"paused,omitempty"`    // by the operator, or after a rollback
	Done      bool      `json:"done,omitempty"`      // 100 % held a whole interval
	Failures  int       `json:"failures,omitempty"`  // consecutive guard errors
	Rollbacks int       `json:"rollbacks,omitempty"` // how many times it rolled back
	Reason    string    `json:"reason,omitempty"`    // why it stands where it stands (last rollback or pause)
}

// Equal reports whether p and q are the same progress (Since compared as
// an instant, whatever its location).
func (p Progress) Equal(q Progress) bool {
	a, b := p, q
	a.Since, b.Since = time.Time{}, time.Time{}
	return a == b && p.Since.Equal(q.Since)
}

// Start is the progress of a shift created at now: the first step.
func Start(now time.Time) Progress { return Progress{Step: 0, Safe: -1, Since: now} }

// Percent is the share of traffic the target gets at p.
func (s Spec) Percent(p Progress) int {
	if p.Step < 0 || len(s.Steps) == 0 {
		return 0
	}
	return s.Steps[min(p.Step, len(s.Steps)-1)]
}

// Guard is the result of the optional Prometheus guard at this tick.
type Guard struct {
	Checked bool   // false: no guard configured (or not run); it holds
	Breach  bool   // the query returned a non-empty, non-zero result
	Detail  string // what it returned, for the reason
	Err     error  // the query failed (counts against MaxFailures)
}

// Observation is what the caller saw at Now.
type Observation struct {
	Now           time.Time
	TargetHealthy bool     // the target cluster's endpoints for the service pass their probes
	Unhealthy     string   // why not (e.g. "cluster eu-west is down"), for the reason
	Down          []string // target endpoints that are down; the reason names the first MaxNamed
	DownCount     int      // how many target endpoints are down when Down lists only the first ones (0: len(Down))
	Endpoints     int      // how many endpoints the service has in the target cluster
	Guard         Guard
}

// why says why the target is unhealthy: Unhealthy and the down endpoints.
func (o Observation) why() string {
	n := max(o.DownCount, len(o.Down))
	if n == 0 {
		return o.Unhealthy
	}
	down := EndpointsDown(o.Down, n, o.Endpoints)
	if o.Unhealthy == "" {
		return down
	}
	return o.Unhealthy + "; " + down
}

// EndpointsDown says "N of M endpoints down (a, b, c and K more)": it
// names at most the first MaxNamed of named and counts the rest, so the
// text stays short whatever the number of endpoints.
func EndpointsDown(named []string, down, total int) string {
	down = max(down, len(named))
	var b strings.Builder
	if total >= down {
		fmt.Fprintf(&b, "%d of %d endpoints down", down, total)
	} else {
		fmt.Fprintf(&b, "%d endpoints down", down)
	}
	if len(named) == 0 {
		return b.String()
	}
	shown := named[:min(len(named), MaxNamed)]
	b.WriteString(" (" + strings.Join(shown, ", "))
	if more := down - len(shown); more > 0 {
		fmt.Fprintf(&b, " and %d more", more)
	}
	b.WriteString(")")
	return b.String()
}

// Clip cuts s to at most n bytes on a UTF-8 boundary, ending in "…" when
// it cut.
func Clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	const ellipsis = "…"
	tail, cut := ellipsis, n-len(ellipsis)
	if cut < 0 {
		tail, cut = "", max(n, 0)
	}
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + tail
}

// Action is what Decide did.
type Action string

// Actions.
const (
	Hold     Action = "hold"     // stay on the step (waiting, paused, a tolerated guard error, or done)
	Advance  Action = "advance"  // the step held a whole interval: next step
	Rollback Action = "rollback" // a breach: back to the last safe step, paused
	Finish   Action = "finish"   // 100 % held a whole interval: the shift is complete
)

// Decision is Decide's answer.
type Decision struct {
	Action   Action
	Progress Progress // store this
	Percent  int      // apply this
	Reason   string   // why (always set for rollback)
}

// Decide advances, holds or rolls back a shift. A paused or finished shift
// holds. A breach — the target unhealthy, the guard breached, or more than
// MaxFailures consecutive guard errors — returns to the last safe step
// below the current one (0 % if none; at 0 % it only pauses, with the
// reason) and pauses, so that an operator resumes it. Otherwise a
// step that has held for Every advances to the next.
func Decide(s Spec, p Progress, o Observation) Decision {
	hold := func(reason string) Decision {
		return Decision{Action: Hold, Progress: p, Percent: s.Percent(p), Reason: reason}
	}
	if p.Done {
		return hold("complete")
	}
	if p.Paused {
		return hold("paused: " + p.Reason)
	}
	breach := ""
	switch {
	case !o.TargetHealthy:
		breach = "target " + s.To + " unhealthy"
		if why := o.why(); why != "" {
			breach += ": " + why
		}
	case o.Guard.Checked && o.Guard.Err != nil:
		p.Failures++
		if p.Failures > s.MaxFailures {
			breach = fmt.Sprintf("guard failed %d times in a row (max %d): %v", p.Failures, s.MaxFailures, o.Guard.Err)
		} else {
			return hold(fmt.Sprintf("guard failed (%d of %d tolerated): %v", p.Failures, s.MaxFailures, o.Guard.Err))
		}
	case o.Guard.Checked && o.Guard.Breach:
		breach = "guard breached: " + s.AbortIf
		if o.Guard.Detail != "" {
			breach += " = " + o.Guard.Detail
		}
	}
	if breach != "" {
		from := s.Percent(p)
		p.Since, p.Paused, p.Failures = o.Now, true, 0
		if p.Step < 0 { // at 0 % already: nothing left to take back
			p.Reason = Clip("paused at 0%, nothing left to roll back: "+breach, MaxReason)
			return Decision{Action: Hold, Progress: p, Percent: 0, Reason: p.Reason}
		}
		// Back to the last safe step, and always below the step that
		// failed: after a resume the step it stands on may be the safe
		// one, and it is not safe any more.
		p.Step = min(p.Safe, p.Step-1)
		p.Safe = p.Step
		p.Rollbacks++
		p.Reason = Clip(fmt.Sprintf("rolled back from %d%% to %d%%: %s", from, s.Percent(p), breach), MaxReason)
		return Decision{Action: Rollback, Progress: p, Percent: s.Percent(p), Reason: p.Reason}
	}
	p.Failures = 0
	if p.Step < 0 || o.Now.Sub(p.Since) < s.Every {
		return hold("waiting")
	}
	p.Safe, p.Since = p.Step, o.Now
	if p.Step >= len(s.Steps)-1 {
		p.Done = true
		return Decision{Action: Finish, Progress: p, Percent: s.Percent(p), Reason: "100% held " + s.Every.String()}
	}
	p.Step++
	return Decision{Action: Advance, Progress: p, Percent: s.Percent(p), Reason: fmt.Sprintf("%d%% held %s", s.Steps[p.Safe], s.Every)}
}

// Pause stops the shift where it stands (the reason is cut to MaxReason
// bytes).
func Pause(p Progress, reason string) Progress {
	p.Paused, p.Reason = true, Clip(reason, MaxReason)
	return p
}

// Resume restarts a paused shift at now: after a rollback to 0 % it starts
// over at the first step; otherwise the current step holds again for a
// whole interval before the next.
func Resume(p Progress, now time.Time) Progress {
	p.Paused, p.Reason, p.Failures, p.Since = false, "", 0, now
	if p.Step < 0 {
		p.Step = 0
	}
	return p
}

// ValidProgress reports whether p fits s (used on progress from the ring or a
// state file).
func (s Spec) ValidProgress(p Progress) error {
	n := len(s.Steps)
	switch {
	case p.Step < -1 || p.Step >= n:
		return FieldError{"progress.step", fmt.Sprintf("%d is out of range (allowed: -1..%d)", p.Step, n-1)}
	case p.Safe < -1 || p.Safe > p.Step:
		return FieldError{"progress.safe", fmt.Sprintf("%d is out of range (allowed: -1..step)", p.Safe)}
	case p.Failures < 0 || p.Failures > MaxMaxFailures+1:
		return FieldError{"progress.failures", fmt.Sprintf("%d is out of range", p.Failures)}
	case p.Rollbacks < 0:
		return FieldError{"progress.rollbacks", "is negative"}
	case len(p.Reason) > MaxProgressReason:
		return FieldError{"progress.reason", fmt.Sprintf("is longer than %d bytes", MaxProgressReason)}
	case p.Since.IsZero():
		return FieldError{"progress.since", "is missing"}
	}
	return nil
}
