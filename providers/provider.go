// Package providers pushes Meridian's decisions into external DNS providers
// (Route53, Cloudflare) and Meridian's delegations into parent zones
// (Route53, Cloudflare, RFC 2136 primaries). A Provider reads a zone's
// records and applies a change set; the pure providers/plan computes the changes; Services turns
// the desired state and the decided health into a provider-neutral view that
// each adapter translates into its own records.
package providers

import (
	"context"
	"errors"

	"github.com/meridian-gslb/meridian/providers/plan"
)

// Provider is one DNS provider account. Implementations are safe for use
// by one reconciler at a time.
type Provider interface {
	// Name is the provider kind: route53, cloudflare or rfc2136.
	Name() string
	// Records returns every record of zone (a zone name, e.g. example.com.).
	Records(ctx context.Context, zone string) ([]plan.Record, error)
	// Apply makes the changes. Changes that fail on their own (a bad record)
	// are reported in the result and do not stop the others; err is for
	// failures of the whole call (network, authentication, budget).
	Apply(ctx context.Context, zone string, cs plan.Changes) (Result, error)
}

// Result of an Apply.
type Result struct {
	Applied int            // changes the provider accepted
	Failed  []FailedChange // changes it refused, each with the provider's reason
	Calls   int            // write API calls made
	Synced  bool           // the provider reported the changes live (Route53 INSYNC)
}

// FailedChange is one change a provider refused.
type FailedChange struct {
	Key plan.Key
	Op  string // create, update, delete
	Err error
}

// ErrTransient marks errors worth retrying on the next pass (throttling,
// 5xx, timeouts) rather than reporting as configuration problems.
var ErrTransient = errors.New("transient provider error")

// ObjectSyncer is implemented by adapters that keep provider objects other
// than record sets in step with the decisions: Cloudflare load balancers,
// pools and monitors; Route 53 health checks and CIDR collections. Records
// may refer to such objects (a Route 53 set's health check id), so for a
// direct-mode zone the reconciler calls, in one pass:
//
//  1. PrepareObjects: creates and updates what the views need, so that
//     everything the records will refer to exists;
//  2. the zone's Translate, which may read what PrepareObjects settled
//     (ids), then the records' plan and Apply;
//  3. CollectObjects, only when the records were written without error:
//     deletes the owned objects nothing refers to any more.
//
// With dryRun both only plan and report. Objects that are not this
// installation's (by the adapter's ownership mark) are never changed.
type ObjectSyncer interface {
	PrepareObjects(ctx context.Context, zone string, views []ServiceView, dryRun bool) (ObjectResult, error)
	CollectObjects(ctx context.Context, zone string, dryRun bool) (ObjectResult, error)
}

// Kinds of provider objects (ObjectChange.Kind, metric label kind).
const (
	KindLoadBalancer   = "load_balancer"
	KindPool           = "pool"
	KindMonitor        = "monitor"
	KindHealthCheck    = "health_check"
	KindCIDRCollection = "cidr_collection"
)

// ObjectChange is one change to a provider object.
type ObjectChange struct {
	Kind   string // a Kind* constant
	Name   string // the object's name or, when it has none, what it is for
	Op     string // create, update, delete
	Detail string // what changes, for dry runs and logs (e.g. "weight 0.43 → 0.50")
	Err    error  // the provider refused it (nil: applied, or only planned in a dry run)
}

func (c ObjectChange) String() string {
	s := c.Kind + " " + c.Name
	if c.Detail != "" {
		s += ": " + c.Detail
	}
	return s
}

// ObjectResult is the outcome of one ObjectSyncer call.
type ObjectResult struct {
	Changes []ObjectChange // made (or planned, in a dry run), refused ones with Err
	Calls   int            // write API calls made
	// Notice is a standing condition of the zone an operator should see on
	// the status page and in the push output, e.g. that the account has no
	// Load Balancing and plain records are written instead. Empty: none.
	Notice string
}

// Failed counts the refused changes.
func (r ObjectResult) Failed() int {
	n := 0
	for _, c := range r.Changes {
		if c.Err != nil {
			n++
		}
	}
	return n
}

// add appends o's changes and calls and keeps the last non-empty notice.
func (r *ObjectResult) add(o ObjectResult) {
	r.Changes = append(r.Changes, o.Changes...)
	r.Calls += o.Calls
	if o.Notice != "" {
		r.Notice = o.Notice
	}
}
