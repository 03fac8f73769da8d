package follow

import (
	"fmt"
	"strings"

	"github.com/meridian-gslb/meridian/internal/failover"
	"github.com/meridian-gslb/meridian/internal/notify"
)

// ChangeEvent turns a decided change into its notification; false for the
// changes that are not notified: a hold event without a state change, and a
// subject's first verdict up (every endpoint gets one at start-up).
//
//   - to down or failed-over: a failover (critical, PagerDuty trigger);
//   - from down, unreachable or failed-over back to up or ready: decided
//     (info, PagerDuty resolve of the same dedup key);
//   - to unreachable (heartbeat missed below quorum, no traffic effect):
//     decided (warning, informational).
func ChangeEvent(c failover.Change) (notify.Event, bool) {
	if !c.StateChanged() || (c.From == failover.Unknown && (c.To == failover.Up || c.To == failover.Ready)) {
		return notify.Event{}, false
	}
	e := notify.Event{At: c.At, From: c.From.String(), To: c.To.String(), Reason: c.Reason, Voters: c.Voters,
		DedupKey: "meridian:" + c.Subject.String()}
	what := "cluster " + c.Subject.Target
	if c.Subject.IsCluster() {
		e.Cluster = c.Subject.Target
	} else {
		e.Service, e.Endpoint = c.Subject.Service, c.Subject.Target
		what = "endpoint " + c.Subject.Target + " of " + c.Subject.Service
	}
	switch c.To {
	case failover.Down, failover.FailedOver:
		e.Kind, e.Severity, e.Action = notify.EventFailover, notify.SeverityCritical, notify.ActionTrigger
	case failover.Unreachable:
		e.Kind, e.Severity = notify.EventDecided, notify.SeverityWarning
	default:
		e.Kind, e.Severity = notify.EventDecided, notify.SeverityInfo
		if c.From != failover.Unknown {
			e.Action = notify.ActionResolve
		}
	}
	e.Summary = fmt.Sprintf("%s decided %s (was %s; reason %s", what, e.To, e.From, e.Reason)
	if len(c.Voters) > 0 {
		e.Summary += "; voters " + strings.Join(c.Voters, ",")
	}
	e.Summary += ")"
	return e, true
}
