package notify

import (
	"fmt"
	"strings"
	"time"
)

// Event kinds (notifications.receivers[].events).
const (
	EventDecided  = "decided"  // a decided state change other than a failover: a recovery, a cluster unreachable
	EventFailover = "failover" // an endpoint decided down or a cluster failed over
	EventShift    = "shift"    // a progressive shift started, advanced, paused, finished or was aborted
	EventRollback = "rollback" // a progressive shift returned to its last safe step
)

// EventKinds lists every kind, in documentation order.
var EventKinds = []string{EventDecided, EventFailover, EventShift, EventRollback}

// Severities and PagerDuty actions of an Event.
const (
	SeverityCritical = "critical"
	SeverityWarning  = "warning"
	SeverityInfo     = "info"

	ActionTrigger = "trigger"
	ActionResolve = "resolve"
)

// Event is one notification. The generic webhook body is its JSON.
type Event struct {
	Kind     string    `json:"kind"` // Event* constant
	At       time.Time `json:"at"`
	Node     string    `json:"node,omitempty"` // the node that sent it (set by the Notifier)
	Service  string    `json:"service,omitempty"`
	Endpoint string    `json:"endpoint,omitempty"`
	Cluster  string    `json:"cluster,omitempty"`
	From     string    `json:"from,omitempty"`
	To       string    `json:"to,omitempty"`
	Reason   string    `json:"reason,omitempty"`
	Voters   []string  `json:"voters,omitempty"`
	Severity string    `json:"severity"`         // critical, warning or info
	Action   string    `json:"action,omitempty"` // trigger, resolve or empty (informational: not sent to PagerDuty)
	DedupKey string    `json:"dedup_key,omitempty"`
	Summary  string    `json:"summary"` // one line for people
}

// slackBody is the Slack incoming-webhook format (also read by Mattermost,
// Rocket.Chat and Teams' Slack-compatible connectors).
type slackBody struct {
	Text string `json:"text"`
}

// slackText is the event's line in Slack mrkdwn; every piece that is not
// Meridian's own text (the summary, which holds names and reasons such as
// an abort_if query or Prometheus's error, the node name) is escaped.
func slackText(e Event) string {
	icon := map[string]string{SeverityCritical: ":red_circle:", SeverityWarning: ":warning:", SeverityInfo: ":information_source:"}[e.Severity]
	t := fmt.Sprintf("%s *Meridian %s*: %s", icon, slackEscape(e.Kind), slackEscape(e.Summary))
	if e.Node != "" {
		t += " — node " + slackEscape(e.Node)
	}
	return strings.TrimSpace(t) + " at " + e.At.UTC().Format(time.RFC3339)
}

// slackEscaper replaces the three characters Slack's mrkdwn gives a meaning
// (<!channel>, <@U123>, <http://x|y> links), as its formatting rules
// require; & first so an escape is not escaped again.
var slackEscaper = strings.NewReplacer("&", "&amp;", "<", "&lt;", ">", "&gt;")

func slackEscape(s string) string { return slackEscaper.Replace(s) }

// pagerDutyBody is a PagerDuty Events API v2 event.
type pagerDutyBody struct {
	RoutingKey  string            `json:"routing_key"`
	EventAction string            `json:"event_action"` // trigger or resolve
	DedupKey    string            `json:"dedup_key,omitempty"`
	Payload     *pagerDutyPayload `json:"payload,omitempty"` // trigger only
}

type pagerDutyPayload struct {
	Summary       string         `json:"summary"` // at most 1024 characters
	Source        string         `json:"source"`
	Severity      string         `json:"severity"` // critical, error, warning or info
	Timestamp     string         `json:"timestamp,omitempty"`
	Component     string         `json:"component,omitempty"`
	Group         string         `json:"group,omitempty"`
	Class         string         `json:"class,omitempty"`
	CustomDetails map[string]any `json:"custom_details,omitempty"`
}

func pagerDuty(e Event, key string) pagerDutyBody {
	b := pagerDutyBody{RoutingKey: key, EventAction: e.Action, DedupKey: e.DedupKey}
	if e.Action != ActionTrigger {
		return b
	}
	src := e.Node
	if src == "" {
		src = "meridian"
	}
	sum := e.Summary
	if len(sum) > 1024 {
		sum = sum[:1021] + "..."
	}
	comp := e.Endpoint
	if comp == "" {
		comp = e.Cluster
	}
	b.Payload = &pagerDutyPayload{Summary: sum, Source: src, Severity: e.Severity, Timestamp: e.At.UTC().Format(time.RFC3339Nano),
		Component: comp, Group: e.Service, Class: e.Kind,
		CustomDetails: map[string]any{"from": e.From, "to": e.To, "reason": e.Reason, "voters": e.Voters, "cluster": e.Cluster}}
	return b
}

// ShiftEvent is a progressive shift's step of service (started, advanced,
// paused, resumed, finished, aborted): informational, not sent to PagerDuty.
func ShiftEvent(service, summary string, at time.Time) Event {
	return Event{Kind: EventShift, At: at, Service: service, Severity: SeverityInfo, Summary: summary,
		DedupKey: "meridian:shift " + service}
}

// RollbackEvent is a progressive shift of service returned from step
// from to its last safe step to, because of reason: a warning that
// triggers PagerDuty, keyed by the service's shift (a shift finishing or
// aborted later does not resolve it: the rollback needs a look).
func RollbackEvent(service, from, to, reason string, at time.Time) Event {
	return Event{Kind: EventRollback, At: at, Service: service, From: from, To: to, Reason: reason,
		Severity: SeverityWarning, Action: ActionTrigger, DedupKey: "meridian:shift " + service,
		Summary: fmt.Sprintf("shift of %s rolled back from %s to %s: %s", service, from, to, reason)}
}
