package model

import "time"

// Provider modes.
const (
	ModeDirect   = "direct"   // publish the decided answers as records
	ModeDelegate = "delegate" // publish NS + glue for Meridian's zones
)

// Values of providers.cloudflare[].load_balancing.
const (
	LoadBalancingOff       = "off"       // plain DNS records (default)
	LoadBalancingRequired  = "required"  // Cloudflare load balancers; without the entitlement the sync fails
	LoadBalancingPreferred = "preferred" // load balancers; plain records while the account has no Load Balancing
)

// Values of providers.*[].health_checks.
const (
	HealthChecksOff      = "off"      // Meridian alone decides (default)
	HealthChecksBackstop = "backstop" // the provider's own checks also take endpoints out, also while no Meridian node runs
)

// Defaults of the providers section.
const (
	DefaultProviderDebounce   = time.Second
	DefaultProviderResync     = 5 * time.Minute
	DefaultRoute53RPS         = 2.0
	DefaultRoute53Region      = "us-east-1"
	DefaultRoute53SyncTimeout = 2 * time.Minute
	DefaultCloudflareBudget   = 1200 // requests per 5 minutes

	// The request budgets, as request_budget per request_budget_window.
	DefaultRoute53Budget          = 2 // requests per second (Route 53 allows 5 per account)
	DefaultRoute53BudgetWindow    = time.Second
	DefaultCloudflareBudgetWindow = 5 * time.Minute // Cloudflare allows 1200 requests per 5 minutes per user
	DefaultProviderMaxAttempts    = 5
	DefaultProviderBackoff        = time.Second
	DefaultProviderMaxBackoff     = 30 * time.Second
	DefaultProviderRequestTimeout = 30 * time.Second
	MaxProviderRetryAfter         = 5 * time.Minute // a provider's Retry-After is honoured up to this
)

// ProviderAPI are the API call settings every provider zone has, under the
// same names in providers.route53[] and providers.cloudflare[]: the request
// budget and how one request is retried (providers/apicall). Retries cover
// throttling (Route 53 Throttling, Cloudflare 429: Retry-After is honoured,
// up to 5m), server errors, timeouts and broken connections; a request
// still failing after max_attempts ends the sync pass, which the reconciler
// repeats.
type ProviderAPI struct {
	RequestBudget       int      `yaml:"request_budget"`        // requests per request_budget_window, reads, writes, polls and retries together (default: route53 2, cloudflare 1200)
	RequestBudgetWindow Duration `yaml:"request_budget_window"` // the budget's period (default: route53 1s, spread evenly as a token bucket; cloudflare 5m, a sliding window)
	MaxAttempts         int      `yaml:"max_attempts"`          // attempts of one request, the first included (default 5)
	Backoff             Duration `yaml:"backoff"`               // delay before the second attempt, doubled per attempt, drawn from its upper half (default 1s)
	MaxBackoff          Duration `yaml:"max_backoff"`           // cap of the doubled delay (default 30s)
	RequestTimeout      Duration `yaml:"request_timeout"`       // bound of one attempt (default 30s)
}

// Providers configures pushing decisions to external DNS providers.
type Providers struct {
	OwnerID        string           `yaml:"owner_id"`        // identifies this installation's records (required with any zone)
	Writers        []string         `yaml:"writers"`         // ring nodes allowed to push (default: every prober)
	Debounce       Duration         `yaml:"debounce"`        // wait after a change before pushing (default 1s)
	ResyncInterval Duration         `yaml:"resync_interval"` // full resync period (default 5m)
	Route53        []Route53Zone    `yaml:"route53"`
	Cloudflare     []CloudflareZone `yaml:"cloudflare"`
}

// Route53Zone is one hosted zone Meridian writes to.
type Route53Zone struct {
	Zone        string   `yaml:"zone"`         // hosted zone name, e.g. example.com (required)
	ZoneID      string   `yaml:"zone_id"`      // hosted zone id (default: looked up by name)
	Mode        string   `yaml:"mode"`         // direct (default) or delegate
	Region      string   `yaml:"region"`       // AWS region for the API client (default us-east-1)
	Endpoint    string   `yaml:"endpoint"`     // API endpoint override (tests, fakes)
	SyncTimeout Duration `yaml:"sync_timeout"` // wait for INSYNC at most (default 2m)
	// RequestsPerSecond is the old form of the budget: requests_per_second: N
	// is request_budget: N with request_budget_window: 1s (a fraction r is 1
	// request per 1/r seconds). Normalize moves it into ProviderAPI; it may
	// not be set together with request_budget or request_budget_window.
	RequestsPerSecond float64          `yaml:"requests_per_second"`
	HealthChecks      string           `yaml:"health_checks"` // off (default) or backstop: Route 53 health checks on the record sets keep failing over with every Meridian node down
	ProviderAPI       `yaml:",inline"` // request_budget, request_budget_window, max_attempts, backoff, max_backoff, request_timeout
}

// CloudflareZone is one Cloudflare zone Meridian writes to.
type CloudflareZone struct {
	Zone          string           `yaml:"zone"`           // zone name, e.g. example.com (required)
	ZoneID        string           `yaml:"zone_id"`        // zone id (default: looked up by name)
	Mode          string           `yaml:"mode"`           // direct (default) or delegate
	Proxied       bool             `yaml:"proxied"`        // proxy records through Cloudflare (default false)
	TTL           int              `yaml:"ttl"`            // record TTL; 1 = automatic; 0 = the service's TTL
	APITokenFile  string           `yaml:"api_token_file"` // file with the API token (default: env CLOUDFLARE_API_TOKEN)
	Endpoint      string           `yaml:"endpoint"`       // API base URL override (tests, fakes)
	AccountID     string           `yaml:"account_id"`     // account of the load balancing pools and monitors (default: the zone's account)
	LoadBalancing string           `yaml:"load_balancing"` // off (default: plain records), required (load balancers; a sync fails without the entitlement) or preferred (load balancers, plain records when the account has no Load Balancing)
	HealthChecks  string           `yaml:"health_checks"`  // off (default) or backstop: Cloudflare monitors on the pools keep failing over with every Meridian node down (needs load_balancing)
	ProviderAPI   `yaml:",inline"` // request_budget, request_budget_window, max_attempts, backoff, max_backoff, request_timeout
}

// withDefaults fills the zero fields, with the provider's budget.
func (c ProviderAPI) withDefaults(budget int, window time.Duration) ProviderAPI {
	c.RequestBudget = orDefault(c.RequestBudget, budget)
	c.RequestBudgetWindow = orDefaultDuration(c.RequestBudgetWindow, window)
	c.MaxAttempts = orDefault(c.MaxAttempts, DefaultProviderMaxAttempts)
	c.Backoff = orDefaultDuration(c.Backoff, DefaultProviderBackoff)
	c.MaxBackoff = orDefaultDuration(c.MaxBackoff, DefaultProviderMaxBackoff)
	c.RequestTimeout = orDefaultDuration(c.RequestTimeout, DefaultProviderRequestTimeout)
	return c
}
