package model

import "time"

// Provider kinds: the providers.<kind>[] lists, the provider of
// zones[].delegation and the provider label of the metrics.
const (
	ProviderRoute53    = "route53"
	ProviderCloudflare = "cloudflare"
	ProviderRFC2136    = "rfc2136"
)

// ProviderKinds lists the provider kinds, in documentation order.
var ProviderKinds = []string{ProviderRoute53, ProviderCloudflare, ProviderRFC2136}

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
	DefaultRFC2136Budget      = 10   // requests (transfers and updates) per second

	// The request budgets, as request_budget per request_budget_window.
	DefaultRoute53Budget          = 2 // requests per second (Route 53 allows 5 per account)
	DefaultRoute53BudgetWindow    = time.Second
	DefaultCloudflareBudgetWindow = 5 * time.Minute // Cloudflare allows 1200 requests per 5 minutes per user
	DefaultRFC2136BudgetWindow    = time.Second
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
	RFC2136        []RFC2136Zone    `yaml:"rfc2136"` // zones on a primary that takes RFC 2136 dynamic updates (BIND, Knot, PowerDNS): delegations (mode delegate) or answers (mode direct)
}

// Delegation makes Meridian write a zone's delegation into its parent zone:
// NS records at the apex, glue for the nameservers inside the zone and,
// when the zone is signed, the DS records of its keys. The parent's account
// settings are those of the providers.<provider>[] entry whose zone is
// parent; for route53 and cloudflare an entry with the defaults (mode
// delegate) is implied when there is none, rfc2136 needs one (server, key).
// Validation: validate_delegation.go.
type Delegation struct {
	Provider string `yaml:"provider"` // route53, cloudflare or rfc2136 (required)
	Parent   string `yaml:"parent"`   // the parent zone that delegates this one, e.g. example.com (required)
}

// RFC2136Zone is a zone Meridian changes by DNS UPDATE (RFC 2136) signed
// with TSIG (RFC 8945): it reads the zone by AXFR and writes, in mode
// delegate (the default), the delegations of the Meridian zones below it,
// or, in mode direct, the decided answers of the services inside it (plain
// A, AAAA and CNAME records: the set of targets that receive traffic now).
// The budget and retry settings count transfers and updates.
type RFC2136Zone struct {
	Zone        string           `yaml:"zone"`          // the zone, e.g. example.com (required)
	Server      string           `yaml:"server"`        // its primary: IP or IP:port (port 53 by default) (required)
	TSIGKeyFile string           `yaml:"tsig_key_file"` // the TSIG key the primary accepts updates and transfers with (required): BIND format or hmac-sha256:NAME:BASE64
	ProviderAPI `yaml:",inline"` // request_budget (default 10), request_budget_window (default 1s), max_attempts, backoff, max_backoff, request_timeout
	Mode        string           `yaml:"mode"` // delegate (default: NS, glue, DS of the Meridian zones below) or direct (the answers of the services inside)
}

// DelegatingEntry is the providers entry (kind, canonical zone) that
// writes the delegation of zone z: the one its delegation names, or ""
// when z has none.
func (z *Zone) DelegatingEntry() (kind, parent string) {
	if z.Delegation == nil {
		return "", ""
	}
	return z.Delegation.Provider, CanonicalName(z.Delegation.Parent)
}

// providerZones counts the provider zones of d, the entries its zones'
// delegations imply included.
func (d *Desired) providerZones() int {
	n := len(d.Providers.Route53) + len(d.Providers.Cloudflare) + len(d.Providers.RFC2136)
	for i := range d.Zones {
		if d.Zones[i].Delegation != nil {
			n++
		}
	}
	return n
}

// HasProviderZones reports whether d writes to any provider zone (an entry
// of providers.route53, cloudflare or rfc2136, or a zone's delegation).
func (d *Desired) HasProviderZones() bool { return d.providerZones() > 0 }

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
