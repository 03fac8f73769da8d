package shift

// Paused and Resumed are the operator's actions on a shift (Pause and
// Resume; Decide never takes them).
const (
	Paused  Action = "pause"
	Resumed Action = "resume"
)

// Observed names the step a shift took from prev to cur when another node
// stored it (the ring's writer stepped it, or an operator paused it there):
// what a node that did not take the step puts on its timeline. Hold means
// nothing a person would note changed (a guard error counted, say).
func Observed(prev, cur Progress) Action {
	switch {
	case cur.Rollbacks > prev.Rollbacks:
		return Rollback
	case cur.Done && !prev.Done:
		return Finish
	case cur.Paused && !prev.Paused:
		return Paused
	case !cur.Paused && prev.Paused:
		return Resumed
	case cur.Step != prev.Step:
		return Advance
	}
	return Hold
}
