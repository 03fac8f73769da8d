package model

import "time"

// Provider modes.
const (
	ModeDirect   = "direct"   // publish the decided answers as records
	ModeDelegate = "delegate" // publish NS + glue for Meridian's zones
)

// Defaults of the providers section.
const (
	DefaultProviderDebounce   = time.Second
	DefaultProviderResync     = 5 * time.Minute
	DefaultRoute53RPS         = 2.0
	DefaultRoute53Region      = "us-east-1"
	DefaultRoute53SyncTimeout = 2 * time.Minute
	DefaultCloudflareBudget   = 1200 // requests per 5 minutes
)

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
	Zone              string   `yaml:"zone"`                // hosted zone name, e.g. example.com (required)
	ZoneID            string   `yaml:"zone_id"`             // hosted zone id (default: looked up by name)
	Mode              string   `yaml:"mode"`                // direct (default) or delegate
	Region            string   `yaml:"region"`              // AWS region for the API client (default us-east-1)
	Endpoint          string   `yaml:"endpoint"`            // API endpoint override (tests, fakes)
	RequestsPerSecond float64  `yaml:"requests_per_second"` // request budget (default 2)
	SyncTimeout       Duration `yaml:"sync_timeout"`        // wait for INSYNC at most (default 2m)
}

// CloudflareZone is one Cloudflare zone Meridian writes to.
type CloudflareZone struct {
	Zone          string `yaml:"zone"`           // zone name, e.g. example.com (required)
	ZoneID        string `yaml:"zone_id"`        // zone id (default: looked up by name)
	Mode          string `yaml:"mode"`           // direct (default) or delegate
	Proxied       bool   `yaml:"proxied"`        // proxy records through Cloudflare (default false)
	TTL           int    `yaml:"ttl"`            // record TTL; 1 = automatic; 0 = the service's TTL
	APITokenFile  string `yaml:"api_token_file"` // file with the API token (default: env CLOUDFLARE_API_TOKEN)
	Endpoint      string `yaml:"endpoint"`       // API base URL override (tests, fakes)
	RequestBudget int    `yaml:"request_budget"` // requests per 5 minutes (default 1200)
	LoadBalancing bool   `yaml:"load_balancing"` // use Cloudflare Load Balancing pools (accounts that have it)
}
