// Package providers pushes Meridian's decisions into external DNS providers
// (Route53, Cloudflare). A Provider reads a zone's records and applies a
// change set; the pure providers/plan computes the changes; Services turns
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
	// Name is the provider kind: route53 or cloudflare.
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
