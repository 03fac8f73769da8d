// Package cloudflare writes Meridian's decisions into a Cloudflare zone as
// plain DNS records, through the v4 API (cloudflare-go v6). A plan.Record is
// a set of values; Cloudflare holds one record per value, so Apply turns
// every change into per-value requests and prefers changing a record in
// place to deleting and re-creating it. Every request goes through one
// sliding-window budget and one retry loop. Translate maps service views to
// records; cffake is a stateful fake of the API for tests.
package cloudflare

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/meridian-gslb/meridian/internal/model"
	"github.com/meridian-gslb/meridian/internal/secretfile"
	"github.com/meridian-gslb/meridian/providers"
	"github.com/meridian-gslb/meridian/providers/apicall"
	"github.com/meridian-gslb/meridian/providers/plan"
)

// TokenEnv is the environment variable read for the API token when a zone
// has no api_token_file.
const TokenEnv = "CLOUDFLARE_API_TOKEN"

// Options configures a Provider.
type Options struct {
	ZoneID        string        // zone id (default: looked up by zone name on first use, then cached)
	RequestBudget int           // API requests per BudgetWindow, reads and retries included (default 1200, Cloudflare's per-user limit)
	BudgetWindow  time.Duration // the budget's sliding window (default 5m)
	Proxied       bool          // Desired: proxy records through Cloudflare (default false)
	TTL           int           // Desired: record TTL; 1 = automatic, 0 = the service's TTL (default 0)
	PageSize      int           // records per list request, 1..5000 (default 5000)
	Logger        *slog.Logger  // (default slog.Default())
	Metrics       *Metrics      // (default: apicall.apicall.NewMetrics(nil), registered nowhere)

	// Load Balancing (the zone's load_balancing, account_id, health_checks).
	LoadBalancing string                // off (default: plain records), required or preferred (see PrepareObjects)
	AccountID     string                // account of the pools and monitors (default: the zone's, looked up once)
	Backstop      bool                  // health_checks: backstop: monitors on the pools (default false)
	OwnerID       string                // providers.owner_id: marks load balancers, pools and monitors as ours (required with LoadBalancing)
	Registerer    prometheus.Registerer // where meridian_provider_load_balancing is registered (default: nowhere)

	// Retries of one request after a 429, a 5xx or a timeout (zero fields:
	// the apicall defaults: 5 attempts, backoff 1s doubling up to 30s, 30s
	// per attempt). A 429 with Retry-After waits exactly that long.
	MaxAttempts    int
	Backoff        time.Duration
	MaxBackoff     time.Duration
	RequestTimeout time.Duration

	// Clock hooks for tests.
	Now   func() time.Time                                 // (default time.Now)
	Sleep func(ctx context.Context, d time.Duration) error // waits d or until ctx ends (default: a timer)
}

// DefaultPageSize is the default and largest Options.PageSize.
const DefaultPageSize = 5000

// Provider is one Cloudflare account (API token) seen through API. It is
// safe for concurrent use, but Apply calls on one zone must not overlap
// (the providers.Provider contract: one reconciler at a time).
type Provider struct {
	api     API
	opts    Options
	log     *slog.Logger
	metrics *Metrics
	budget  *apicall.Window
	caller  *apicall.Caller

	lbGauge *prometheus.GaugeVec

	mu         sync.Mutex
	zoneIDs    map[string]string  // zone name (no trailing dot) -> id
	accounts   map[string]string  // zone id -> account id
	lbZones    map[string]*lbZone // canonical zone -> the last PrepareObjects
	lbEntitled map[string]bool    // canonical zone -> the account had Load Balancing at the last check
	warned     map[string]bool    // translation warnings already logged
	lbCleaned  map[string]bool    // load_balancing off: zones already checked for our leftover objects
}

var _ providers.Provider = (*Provider)(nil)

// New returns a Provider that calls api.
func New(api API, opts Options) *Provider {
	if opts.RequestBudget <= 0 {
		opts.RequestBudget = model.DefaultCloudflareBudget
	}
	if opts.BudgetWindow <= 0 {
		opts.BudgetWindow = model.DefaultCloudflareBudgetWindow
	}
	if opts.PageSize <= 0 || opts.PageSize > DefaultPageSize {
		opts.PageSize = DefaultPageSize
	}
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	if opts.Metrics == nil {
		opts.Metrics = apicall.NewMetrics(nil)
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	if opts.Sleep == nil {
		opts.Sleep = apicall.Sleep
	}
	p := &Provider{
		api: api, opts: opts, log: opts.Logger, metrics: opts.Metrics,
		budget:  apicall.NewWindow(opts.RequestBudget, opts.BudgetWindow, opts.Now, opts.Sleep),
		zoneIDs: map[string]string{}, accounts: map[string]string{}, lbZones: map[string]*lbZone{}, lbEntitled: map[string]bool{}, lbCleaned: map[string]bool{}, warned: map[string]bool{},
		lbGauge: newLBGauge(opts.Registerer),
	}
	p.caller = &apicall.Caller{
		Provider: providerLabel, Budget: p.budget, Classify: classify, Metrics: opts.Metrics, Logger: opts.Logger, Sleep: opts.Sleep,
		Policy: opts.policy(),
	}
	return p
}

// NewFromConfig builds the Provider of one configured zone. The API token
// comes from z.APITokenFile, else from $CLOUDFLARE_API_TOKEN; it is never
// logged. opts supplies the logger, metrics and clock; z the rest. When
// z.ZoneID is empty the zone id is looked up now, within ctx, so a wrong
// token or zone name fails here (an outage fails with an error wrapping
// providers.ErrTransient).
// With load_balancing required or preferred, opts.OwnerID must be set (the
// mark of the objects Meridian owns).
func NewFromConfig(ctx context.Context, z model.CloudflareZone, opts Options) (*Provider, error) {
	opts.LoadBalancing, opts.AccountID, opts.Backstop = z.LoadBalancing, z.AccountID, z.HealthChecks == model.HealthChecksBackstop
	if lb := z.LoadBalancing; lb != "" && lb != model.LoadBalancingOff {
		if lb != model.LoadBalancingRequired && lb != model.LoadBalancingPreferred {
			return nil, fmt.Errorf("cloudflare zone %s: load_balancing %q is not allowed (allowed: off, required, preferred)", z.Zone, lb)
		}
		if opts.OwnerID == "" {
			return nil, fmt.Errorf("cloudflare zone %s: load_balancing %s needs providers.owner_id (it marks the load balancers, pools and monitors Meridian owns)", z.Zone, lb)
		}
	}
	token, err := readToken(z)
	if err != nil {
		return nil, err
	}
	opts.ZoneID, opts.Proxied, opts.TTL = z.ZoneID, z.Proxied, z.TTL
	if z.RequestBudget > 0 {
		opts.RequestBudget = z.RequestBudget
	}
	if z.RequestBudgetWindow > 0 {
		opts.BudgetWindow = z.RequestBudgetWindow.D()
	}
	pol := opts.policy().With(z.ProviderAPI)
	opts.MaxAttempts, opts.Backoff, opts.MaxBackoff, opts.RequestTimeout = pol.MaxAttempts, pol.Backoff, pol.MaxBackoff, pol.RequestTimeout
	p := New(NewAPI(token, APIOptions{BaseURL: z.Endpoint}), opts)
	p.budget = sharedBudget(token, p.budget)
	p.caller.Budget = p.budget
	if z.ZoneID == "" {
		if _, err := p.zoneID(ctx, z.Zone); err != nil {
			return nil, err
		}
	}
	return p, nil
}

// budgets are the request budgets of the API tokens in use, by SHA-256 of
// the token: Cloudflare counts requests per user, so zones written with one
// token share one budget (the smallest configured).
var (
	budgetsMu sync.Mutex
	budgets   = map[[sha256.Size]byte]*apicall.Window{}
)

func sharedBudget(token string, w *apicall.Window) *apicall.Window {
	budgetsMu.Lock()
	defer budgetsMu.Unlock()
	k := sha256.Sum256([]byte(token))
	if b, ok := budgets[k]; ok {
		b.Lower(w.Limit())
		return b
	}
	budgets[k] = w
	return w
}

func readToken(z model.CloudflareZone) (string, error) {
	if z.APITokenFile != "" {
		b, err := secretfile.Read(z.APITokenFile)
		if err != nil {
			return "", fmt.Errorf("cloudflare zone %s: api_token_file: %w", z.Zone, err)
		}
		if t := strings.TrimSpace(string(b)); t != "" {
			return t, nil
		}
		return "", fmt.Errorf("cloudflare zone %s: api_token_file %s is empty", z.Zone, z.APITokenFile)
	}
	if t := strings.TrimSpace(os.Getenv(TokenEnv)); t != "" {
		return t, nil
	}
	return "", fmt.Errorf("cloudflare zone %s: no API token: set api_token_file or the %s environment variable", z.Zone, TokenEnv)
}

// Name is the provider kind.
func (p *Provider) Name() string { return "cloudflare" }

// Desired translates views into the records of zone with the provider's TTL
// and proxied settings (see Translate), leaving out the services a load
// balancer of ours serves after the last PrepareObjects (their old plain
// records are then deleted by the records plan: a load balancer takes
// precedence over records of its name, so the name never goes empty).
func (p *Provider) Desired(views []providers.ServiceView, zone string) []plan.Record {
	served := p.served(zone)
	if len(served) > 0 {
		rest := make([]providers.ServiceView, 0, len(views))
		for _, v := range views {
			if !served[v.Name] {
				rest = append(rest, v)
			}
		}
		views = rest
	}
	return Translate(views, zone, p.opts.TTL, p.opts.Proxied)
}

// zoneID returns the id of zone, looking it up once.
func (p *Provider) zoneID(ctx context.Context, zone string) (string, error) {
	if p.opts.ZoneID != "" {
		return p.opts.ZoneID, nil
	}
	name := strings.ToLower(strings.TrimSuffix(zone, "."))
	p.mu.Lock()
	id, ok := p.zoneIDs[name]
	p.mu.Unlock()
	if ok {
		return id, nil
	}
	_, err := p.do(ctx, "list_zones", func(ctx context.Context) error {
		var err error
		id, err = p.api.ZoneID(ctx, name)
		return err
	})
	if err != nil {
		return "", fmt.Errorf("zone %s: look up id: %w", name, err)
	}
	p.mu.Lock()
	p.zoneIDs[name] = id
	p.mu.Unlock()
	return id, nil
}

// Records returns every record of zone, one plan.Record per name and type,
// with the Cloudflare record ids aligned with Values. Proxied is set only
// on proxied records. A set whose records disagree on TTL or proxied has
// TTL 0, so that any plan updates it to one setting.
func (p *Provider) Records(ctx context.Context, zone string) ([]plan.Record, error) {
	zid, err := p.zoneID(ctx, zone)
	if err != nil {
		return nil, err
	}
	var all []DNSRecord
	for page := 1; ; page++ {
		var recs []DNSRecord
		var pages int
		_, err := p.do(ctx, "list_records", func(ctx context.Context) error {
			var err error
			recs, pages, err = p.api.ListDNSRecords(ctx, zid, page, p.opts.PageSize)
			return err
		})
		if err != nil {
			return nil, fmt.Errorf("zone %s: list records page %d: %w", zone, page, err)
		}
		all = append(all, recs...)
		if len(recs) == 0 || (pages > 0 && page >= pages) || (pages == 0 && len(recs) < p.opts.PageSize) {
			break
		}
	}
	return group(all), nil
}

// isAuth reports whether err is Cloudflare refusing the token.
func isAuth(err error) bool {
	var ae *APIError
	return errors.As(err, &ae) && (ae.Status == 401 || ae.Status == 403 || ae.HasCode(CodeAuthentication))
}

func (o Options) policy() apicall.Policy {
	return apicall.Policy{MaxAttempts: o.MaxAttempts, Backoff: o.Backoff, MaxBackoff: o.MaxBackoff, RequestTimeout: o.RequestTimeout}
}
