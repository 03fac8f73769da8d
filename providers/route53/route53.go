// Package route53 publishes Meridian's decisions to an Amazon Route 53
// hosted zone: Translate maps the service views to Route 53 record sets
// (weighted, failover, geolocation, IP-based, simple), and Provider reads
// and writes them through the calls of API, under a request budget, in
// atomic batches within Route 53's limits, retrying throttles and isolating
// the changes Route 53 refuses. As a providers.ObjectSyncer it keeps the
// backstop health checks and the geo.networks CIDR collection the sets
// refer to. See README.md.
package route53

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/config"
	r53 "github.com/aws/aws-sdk-go-v2/service/route53"
	"github.com/aws/aws-sdk-go-v2/service/route53/types"

	"github.com/meridian-gslb/meridian/internal/model"
	"github.com/meridian-gslb/meridian/providers"
	"github.com/meridian-gslb/meridian/providers/apicall"
	"github.com/meridian-gslb/meridian/providers/plan"
)

// Options of a Provider. Zero fields take their defaults.
type Options struct {
	ZoneID            string        // hosted zone id, with or without "/hostedzone/"; a Provider serves one hosted zone (default: looked up by name, once)
	RequestsPerSecond float64       // budget of API calls, reads, writes and polls together (default 2; Route 53 allows 5 per account)
	SyncTimeout       time.Duration // wait at most this long for INSYNC after writing (default 2m; negative: do not wait)
	PollInterval      time.Duration // between GetChange polls (default 1s)
	RequestTimeout    time.Duration // one HTTP attempt (default 30s, apicall.DefaultRequestTimeout)
	MaxAttempts       int           // attempts of one API call before giving up with providers.ErrTransient (default 5, apicall.DefaultMaxAttempts)
	Backoff           time.Duration // first retry delay, doubled per attempt, with jitter (default 1s, apicall.DefaultBackoff)
	MaxBackoff        time.Duration // cap of the retry delay (default 30s, apicall.DefaultMaxBackoff)
	Owner             string        // the installation's owner id (providers.owner_id): tags and names of the health checks and CIDR collection
	HealthChecks      string        // off (default) or backstop: Route 53 health checks on the record sets (model.HealthChecks*)
	Logger            *slog.Logger  // (default slog.Default())
	Metrics           *Metrics      // (default: apicall.apicall.NewMetrics(nil), unregistered)
	Now               func() time.Time
	// Sleep waits between retries and polls; it returns ctx's error when ctx
	// ends first (default: a timer).
	Sleep func(ctx context.Context, d time.Duration) error
}

func (o Options) withDefaults() Options {
	if o.RequestsPerSecond <= 0 {
		o.RequestsPerSecond = model.DefaultRoute53RPS
	}
	if o.SyncTimeout == 0 {
		o.SyncTimeout = model.DefaultRoute53SyncTimeout
	}
	if o.PollInterval <= 0 {
		o.PollInterval = time.Second
	}
	pol := o.policy().WithDefaults()
	o.MaxAttempts, o.Backoff, o.MaxBackoff, o.RequestTimeout = pol.MaxAttempts, pol.Backoff, pol.MaxBackoff, pol.RequestTimeout
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	if o.Metrics == nil {
		o.Metrics = apicall.NewMetrics(nil)
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.Sleep == nil {
		o.Sleep = apicall.Sleep
	}
	o.ZoneID = hostedZoneID(o.ZoneID)
	return o
}

func (o Options) policy() apicall.Policy {
	return apicall.Policy{MaxAttempts: o.MaxAttempts, Backoff: o.Backoff, MaxBackoff: o.MaxBackoff, RequestTimeout: o.RequestTimeout}
}

// Provider is one Route 53 hosted zone. It implements providers.Provider;
// like every Provider it is meant for one reconciler at a time: Apply sends
// its batches one after another, so writes never overlap.
type Provider struct {
	api    API
	opts   Options
	caller *apicall.Caller
	log    *slog.Logger
	m      *Metrics

	mu      sync.Mutex
	zoneIDs map[string]string                               // zone name → hosted zone id
	live    map[string]map[plan.Key]types.ResourceRecordSet // zone name → sets as last listed

	// Objects (objects.go, checks.go, cidrsync.go), under mu.
	objects   map[string]*zoneObjects      // zone → what the last PrepareObjects settled
	tags      map[string]map[string]string // health check id → its tags (read once per process)
	gens      map[string]int               // spec hash → next CallerReference generation to try
	refused   map[string]time.Time         // spec hash → when Route 53 refused to create it
	warned    map[string]bool              // "service reason" logged once
	swept     map[string]bool              // zone → no check of ours is left (health_checks off)
	cidrSwept map[string]bool              // zone → no collection of ours is left (no geo.networks)
}

var _ providers.Provider = (*Provider)(nil)

// New returns a provider calling api.
func New(api API, opts Options) *Provider {
	opts = opts.withDefaults()
	return &Provider{
		api: api, opts: opts, log: opts.Logger, m: opts.Metrics,
		caller: &apicall.Caller{
			Provider: providerLabel, Policy: opts.policy(), Budget: apicall.NewRate(opts.RequestsPerSecond),
			Classify: classify, Metrics: opts.Metrics, Logger: opts.Logger, Sleep: opts.Sleep,
		},
		zoneIDs: map[string]string{}, live: map[string]map[plan.Key]types.ResourceRecordSet{},
		objects: map[string]*zoneObjects{}, tags: map[string]map[string]string{}, gens: map[string]int{},
		refused: map[string]time.Time{}, warned: map[string]bool{}, swept: map[string]bool{}, cidrSwept: map[string]bool{},
	}
}

// NewFromConfig builds a provider for z with a real Route 53 client. The
// credentials come from the SDK's default chain (environment, shared config
// and credentials files, web identity / IRSA, container and instance roles)
// unless load overrides them (e.g. config.WithCredentialsProvider with static
// credentials for a fake). z.Endpoint, when set, replaces the API endpoint.
// z's zone id, request budget (request_budget per request_budget_window, as
// a rate; or the old requests_per_second), retry settings and sync timeout
// override opts'. The SDK's own
// retries are off: every attempt goes through the provider's budget.
func NewFromConfig(ctx context.Context, z model.Route53Zone, opts Options, load ...func(*config.LoadOptions) error) (*Provider, error) {
	region := z.Region
	if region == "" {
		region = model.DefaultRoute53Region
	}
	load = append([]func(*config.LoadOptions) error{config.WithRegion(region)}, load...)
	cfg, err := config.LoadDefaultConfig(ctx, load...)
	if err != nil {
		return nil, fmt.Errorf("route53 zone %s: aws config: %w", z.Zone, err)
	}
	client := r53.NewFromConfig(cfg, func(o *r53.Options) {
		o.Retryer = aws.NopRetryer{}
		if z.Endpoint != "" {
			o.BaseEndpoint = aws.String(z.Endpoint)
		}
	})
	if z.ZoneID != "" {
		opts.ZoneID = z.ZoneID
	}
	switch {
	case z.RequestBudget > 0:
		w := z.RequestBudgetWindow.D()
		if w <= 0 {
			w = model.DefaultRoute53BudgetWindow
		}
		opts.RequestsPerSecond = float64(z.RequestBudget) / w.Seconds()
	case z.RequestsPerSecond > 0: // the old form, in a config not normalized
		opts.RequestsPerSecond = z.RequestsPerSecond
	}
	pol := opts.policy().With(z.ProviderAPI)
	opts.MaxAttempts, opts.Backoff, opts.MaxBackoff, opts.RequestTimeout = pol.MaxAttempts, pol.Backoff, pol.MaxBackoff, pol.RequestTimeout
	if z.SyncTimeout > 0 {
		opts.SyncTimeout = z.SyncTimeout.D()
	}
	if z.HealthChecks != "" {
		opts.HealthChecks = z.HealthChecks
	}
	return New(client, opts), nil
}

// Name implements providers.Provider.
func (p *Provider) Name() string { return "route53" }

// hostedZoneID strips the "/hostedzone/" prefix Route 53 puts on ids.
func hostedZoneID(id string) string { return strings.TrimPrefix(id, "/hostedzone/") }

// zoneID returns the hosted zone id of zone, looking it up by name the first
// time. A name shared by several hosted zones (public and private, or
// duplicates) is an error: the config must name the id.
func (p *Provider) zoneID(ctx context.Context, zone string) (string, error) {
	if p.opts.ZoneID != "" {
		return p.opts.ZoneID, nil
	}
	p.mu.Lock()
	id, ok := p.zoneIDs[zone]
	p.mu.Unlock()
	if ok {
		return id, nil
	}
	var ids []string
	in := &r53.ListHostedZonesByNameInput{DNSName: aws.String(zone), MaxItems: aws.Int32(100)}
	for {
		var out *r53.ListHostedZonesByNameOutput
		err := p.call(ctx, opListZones, func(ctx context.Context) (err error) {
			out, err = p.api.ListHostedZonesByName(ctx, in)
			return answered(opListZones, out, err)
		})
		if err != nil {
			return "", fmt.Errorf("route53 zone %s: find hosted zone: %w", zone, err)
		}
		last := ""
		for _, hz := range out.HostedZones {
			last = canonicalName(aws.ToString(hz.Name))
			if last == zone {
				if aws.ToString(hz.Id) == "" {
					return "", fmt.Errorf("route53 zone %s: find hosted zone: %w", zone, malformed(opListZones, "hosted zone id"))
				}
				ids = append(ids, hostedZoneID(aws.ToString(hz.Id)))
			}
		}
		// Zones come sorted by name: stop once past ours.
		if !out.IsTruncated || last != zone {
			break
		}
		in = &r53.ListHostedZonesByNameInput{DNSName: out.NextDNSName, HostedZoneId: out.NextHostedZoneId, MaxItems: aws.Int32(100)}
	}
	switch len(ids) {
	case 0:
		return "", fmt.Errorf("route53 zone %s: no hosted zone of that name", zone)
	case 1:
	default:
		return "", fmt.Errorf("route53 zone %s: %d hosted zones of that name (%s): set zone_id", zone, len(ids), strings.Join(ids, ", "))
	}
	p.mu.Lock()
	p.zoneIDs[zone] = ids[0]
	p.mu.Unlock()
	p.log.Debug("route53 hosted zone found", "zone", zone, "zone_id", ids[0])
	return ids[0], nil
}
