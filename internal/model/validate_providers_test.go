package model

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestProviderZoneValidation(t *testing.T) {
	for _, tc := range []struct {
		name    string
		r53     Route53Zone
		cf      CloudflareZone
		path    string // "" = valid
		message string
	}{
		{name: "zones with every API setting at its default are accepted"},
		{name: "the same API settings are accepted under both providers",
			r53: Route53Zone{Zone: "example.com", ProviderAPI: ProviderAPI{RequestBudget: 4, RequestBudgetWindow: Duration(time.Second), MaxAttempts: 3, Backoff: Duration(time.Second), MaxBackoff: Duration(10 * time.Second), RequestTimeout: Duration(5 * time.Second)}},
			cf:  CloudflareZone{Zone: "example.net", ProviderAPI: ProviderAPI{RequestBudget: 600, RequestBudgetWindow: Duration(5 * time.Minute), MaxAttempts: 3}}},
		{name: "load_balancing required and preferred are accepted with backstop monitors",
			cf: CloudflareZone{Zone: "example.net", LoadBalancing: LoadBalancingRequired, HealthChecks: HealthChecksBackstop}},
		{name: "a load_balancing of true is refused naming the allowed values",
			cf:   CloudflareZone{Zone: "example.net", LoadBalancing: "true"},
			path: "providers.cloudflare[0].load_balancing", message: `"true" is not allowed (allowed: off, required, preferred)`},
		{name: "load balancing in a delegated zone is refused",
			cf:   CloudflareZone{Zone: "test", Mode: ModeDelegate, LoadBalancing: LoadBalancingPreferred},
			path: "providers.cloudflare[0].load_balancing", message: "preferred needs mode direct"},
		{name: "backstop monitors without load balancing are refused, saying what they attach to",
			cf:   CloudflareZone{Zone: "example.net", HealthChecks: HealthChecksBackstop},
			path: "providers.cloudflare[0].health_checks", message: "backstop attaches Cloudflare monitors to load balancing pools"},
		{name: "Route 53 backstop health checks are accepted",
			r53: Route53Zone{Zone: "example.com", HealthChecks: HealthChecksBackstop}},
		{name: "an unknown health_checks value is refused naming the allowed values",
			r53:  Route53Zone{Zone: "example.com", HealthChecks: "always"},
			path: "providers.route53[0].health_checks", message: `"always" is not allowed (allowed: off, backstop)`},
		{name: "an account id that is not 32 hex digits is refused",
			cf:   CloudflareZone{Zone: "example.net", AccountID: "my-account"},
			path: "providers.cloudflare[0].account_id", message: `"my-account" is not a Cloudflare account id (32 hex digits)`},
		{name: "the old requests_per_second is still accepted alone",
			r53: Route53Zone{Zone: "example.com", RequestsPerSecond: 20}},
		{name: "the old requests_per_second with the new budget is refused naming the new field",
			r53:  Route53Zone{Zone: "example.com", RequestsPerSecond: 20, ProviderAPI: ProviderAPI{RequestBudget: 20}},
			path: "providers.route53[0].requests_per_second", message: "is the old name of request_budget (per request_budget_window 1s): set request_budget and request_budget_window only"},
		{name: "a Route 53 budget above 100 requests per second is refused",
			r53:  Route53Zone{Zone: "example.com", ProviderAPI: ProviderAPI{RequestBudget: 500, RequestBudgetWindow: Duration(time.Second)}},
			path: "providers.route53[0].request_budget", message: "500 per 1s is more than 100 requests per second"},
		{name: "a negative request budget is refused with the provider's default",
			cf:   CloudflareZone{Zone: "example.net", ProviderAPI: ProviderAPI{RequestBudget: -1}},
			path: "providers.cloudflare[0].request_budget", message: "-1 is out of range (allowed 1..100000 requests per request_budget_window; 0 = default 1200 per 5m0s)"},
		{name: "a budget window of a day is refused",
			cf:   CloudflareZone{Zone: "example.net", ProviderAPI: ProviderAPI{RequestBudgetWindow: Duration(24 * time.Hour)}},
			path: "providers.cloudflare[0].request_budget_window", message: "24h0m0s is out of range (allowed 100ms..1h; 0 = default 5m0s)"},
		{name: "more than 20 attempts are refused",
			r53:  Route53Zone{Zone: "example.com", ProviderAPI: ProviderAPI{MaxAttempts: 50}},
			path: "providers.route53[0].max_attempts", message: "50 is out of range (allowed 1..20; 0 = default 5)"},
		{name: "a backoff cap below the first backoff is refused",
			r53:  Route53Zone{Zone: "example.com", ProviderAPI: ProviderAPI{Backoff: Duration(2 * time.Second), MaxBackoff: Duration(time.Second)}},
			path: "providers.route53[0].max_backoff", message: "1s is shorter than backoff 2s"},
		{name: "a request timeout of a microsecond is refused",
			cf:   CloudflareZone{Zone: "example.net", ProviderAPI: ProviderAPI{RequestTimeout: Duration(time.Microsecond)}},
			path: "providers.cloudflare[0].request_timeout", message: "1µs is out of range (allowed 100ms..10m; 0 = default 30s)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d := minimal()
			d.Providers.OwnerID = "meridian-test"
			if tc.r53.Zone == "" {
				tc.r53.Zone = "example.com"
			}
			if tc.cf.Zone == "" {
				tc.cf.Zone = "example.net"
			}
			d.Providers.Route53 = []Route53Zone{tc.r53}
			d.Providers.Cloudflare = []CloudflareZone{tc.cf}
			requireFieldError(t, Validate(d), tc.path, tc.message)
		})
	}
}

func TestNormalizeFillsTheProviderAPISettings(t *testing.T) {
	defaults := ProviderAPI{MaxAttempts: 5, Backoff: Duration(time.Second), MaxBackoff: Duration(30 * time.Second), RequestTimeout: Duration(30 * time.Second)}
	with := func(budget int, window time.Duration) ProviderAPI {
		c := defaults
		c.RequestBudget, c.RequestBudgetWindow = budget, Duration(window)
		return c
	}
	for _, tc := range []struct {
		name    string
		r53     Route53Zone
		cf      CloudflareZone
		wantR53 ProviderAPI
		wantCF  ProviderAPI
	}{
		{name: "each provider gets its own budget and the shared retry defaults",
			wantR53: with(2, time.Second), wantCF: with(1200, 5*time.Minute)},
		{name: "a whole requests_per_second becomes that budget per second",
			r53: Route53Zone{RequestsPerSecond: 20}, wantR53: with(20, time.Second), wantCF: with(1200, 5*time.Minute)},
		{name: "a fractional requests_per_second becomes one request per period",
			r53: Route53Zone{RequestsPerSecond: 0.5}, wantR53: with(1, 2*time.Second), wantCF: with(1200, 5*time.Minute)},
		{name: "set fields are kept",
			r53:     Route53Zone{ProviderAPI: ProviderAPI{RequestBudget: 4, MaxAttempts: 2}},
			cf:      CloudflareZone{ProviderAPI: ProviderAPI{RequestBudgetWindow: Duration(time.Minute), Backoff: Duration(time.Millisecond * 100)}},
			wantR53: func() ProviderAPI { c := with(4, time.Second); c.MaxAttempts = 2; return c }(),
			wantCF: func() ProviderAPI {
				c := with(1200, time.Minute)
				c.Backoff = Duration(100 * time.Millisecond)
				return c
			}()},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d := minimal()
			d.Providers.OwnerID = "meridian-test"
			tc.r53.Zone, tc.cf.Zone = "example.com", "example.net"
			d.Providers.Route53 = []Route53Zone{tc.r53}
			d.Providers.Cloudflare = []CloudflareZone{tc.cf}
			out, err := Normalize(d)
			require.NoError(t, err)
			assert.Equal(t, tc.wantR53, out.Providers.Route53[0].ProviderAPI)
			assert.Zero(t, out.Providers.Route53[0].RequestsPerSecond, "the old form is moved into the budget")
			assert.Equal(t, tc.wantCF, out.Providers.Cloudflare[0].ProviderAPI)
		})
	}
}

// requireFieldError checks that err is nil when path is "", else a
// ValidationError of exactly one field, path, whose message contains msg.
func requireFieldError(t *testing.T, err error, path, msg string) {
	t.Helper()
	if path == "" {
		require.NoError(t, err)
		return
	}
	var verr *ValidationError
	require.ErrorAs(t, err, &verr)
	require.Len(t, verr.Fields, 1, err.Error())
	assert.Equal(t, path, verr.Fields[0].Path)
	assert.Contains(t, verr.Fields[0].Msg, msg)
}

func TestRoute53BackstopNeedsAddressesItsCheckersCanReach(t *testing.T) {
	for _, tc := range []struct {
		name       string
		address    string
		kind       string
		endpoint   string
		cloudflare bool
		path       string
		message    string
	}{
		{name: "a public address is accepted", address: "93.184.216.34", kind: "http"},
		{name: "a documentation address is refused naming the endpoint and the zone's setting", address: "2001:db8::1", kind: "http",
			path: "services[0].endpoints[0].address", message: "2001:db8::1 is in 2001:db8::/32, which Route 53 health checkers cannot reach: providers.route53[0].health_checks: backstop needs public endpoint addresses"},
		{name: "Cloudflare backstop monitors cannot reach a private address either", address: "192.168.1.10", kind: "https", cloudflare: true,
			path: "services[0].endpoints[0].address", message: "192.168.1.10 is in 192.168.0.0/16, which Cloudflare monitors cannot reach: providers.cloudflare[0].health_checks: backstop"},
		{name: "a private address is refused", address: "10.1.2.3", kind: "tcp",
			path: "services[0].endpoints[0].address", message: "10.1.2.3 is in 10.0.0.0/8"},
		{name: "a service without a check has no backstop to refuse", address: "10.1.2.3", kind: ""},
		{name: "a DNS check has no Route 53 form, so nothing is refused", address: "10.1.2.3", kind: "dns"},
		{name: "an endpoint override (a fake) leaves the rule to it", address: "127.0.0.1", kind: "http", endpoint: "http://127.0.0.1:9000"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d := minimal()
			d.Services[0].Endpoints[0].Address = tc.address
			if tc.kind != "" {
				d.Services[0].HealthCheck = &Check{Kind: tc.kind, Port: 80}
			}
			d.Providers.OwnerID = "meridian-test"
			if tc.cloudflare {
				d.Providers.Cloudflare = []CloudflareZone{{Zone: "example.test", LoadBalancing: LoadBalancingRequired, HealthChecks: HealthChecksBackstop, Endpoint: tc.endpoint}}
			} else {
				d.Providers.Route53 = []Route53Zone{{Zone: "example.test", HealthChecks: HealthChecksBackstop, Endpoint: tc.endpoint}}
			}
			requireFieldError(t, Validate(d), tc.path, tc.message)
		})
	}
}

func TestCountryCodesAreCheckedAgainstTheCodesInUse(t *testing.T) {
	for _, tc := range []struct {
		name, code, message string
	}{
		{name: "a code in use is accepted", code: "DE"},
		{name: "Kosovo's XK, used by GeoIP and the clouds, is accepted", code: "XK"},
		{name: "UK gets a hint to GB", code: "UK", message: `"UK" is not an ISO 3166-1 alpha-2 country code: did you mean GB?`},
		{name: "a code not in use is refused, as Route 53 and Cloudflare would", code: "ZZ", message: `"ZZ" is not an ISO 3166-1 alpha-2 country code in use`},
		{name: "a continent code in the countries list is refused", code: "EU", message: `"EU" is not an ISO 3166-1 alpha-2 country code in use`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d := minimal()
			d.Clusters[0].Country = tc.code
			path := ""
			if tc.message != "" {
				path = "clusters[0].country"
			}
			requireFieldError(t, Validate(d), path, tc.message)
		})
	}
}
