package model

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// delegated is a config whose zone gslb.example.com is delegated from
// example.com (no providers entries: each case adds what it needs).
func delegated(del *Delegation) *Desired {
	d := minimal()
	d.Zones = []Zone{{Apex: "gslb.example.com", Nameservers: []Nameserver{{Name: "ns1.gslb.example.com", IPv4: []string{"192.0.2.53"}}}, Delegation: del}}
	d.Services = []Service{{Name: "app.gslb.example.com", Endpoints: []Endpoint{{Address: "192.0.2.1", Cluster: "east"}}}}
	d.Providers.OwnerID = "meridian-test"
	return d
}

func TestZoneDelegationValidation(t *testing.T) {
	rfc := RFC2136Zone{Zone: "example.com", Server: "192.0.2.10", TSIGKeyFile: "update.key"}
	for _, tc := range []struct {
		name    string
		del     *Delegation
		pr      Providers
		path    string // "" = valid
		message string
	}{
		{name: "an rfc2136 delegation with its providers entry is accepted",
			del: &Delegation{Provider: "rfc2136", Parent: "Example.COM."}, pr: Providers{RFC2136: []RFC2136Zone{rfc}}},
		{name: "a route53 delegation without an entry is accepted (one is implied)",
			del: &Delegation{Provider: "route53", Parent: "example.com"}},
		{name: "a cloudflare delegation with a delegate-mode entry is accepted",
			del: &Delegation{Provider: "cloudflare", Parent: "example.com"}, pr: Providers{Cloudflare: []CloudflareZone{{Zone: "example.com", Mode: ModeDelegate}}}},
		{name: "a delegation from a grandparent is accepted",
			del: &Delegation{Provider: "route53", Parent: "com"}},
		{name: "a missing provider is refused naming the allowed kinds",
			del:  &Delegation{Parent: "example.com"},
			path: "zones[0].delegation.provider", message: "is required (allowed: route53, cloudflare, rfc2136)"},
		{name: "an unknown provider is refused naming the allowed kinds",
			del:  &Delegation{Provider: "bind", Parent: "example.com"},
			path: "zones[0].delegation.provider", message: `"bind" is not allowed (allowed: route53, cloudflare, rfc2136)`},
		{name: "a missing parent is refused",
			del:  &Delegation{Provider: "route53"},
			path: "zones[0].delegation.parent", message: "is required"},
		{name: "a parent below the zone is refused naming the zone's parent",
			del:  &Delegation{Provider: "route53", Parent: "sub.gslb.example.com"},
			path: "zones[0].delegation.parent", message: `"sub.gslb.example.com." is not above the zone "gslb.example.com.": the parent is the zone that delegates it (here example.com.)`},
		{name: "the zone itself as its parent is refused",
			del:  &Delegation{Provider: "route53", Parent: "gslb.example.com"},
			path: "zones[0].delegation.parent", message: "is not above the zone"},
		{name: "an unrelated parent is refused",
			del:  &Delegation{Provider: "route53", Parent: "example.net"},
			path: "zones[0].delegation.parent", message: `"example.net." is not above the zone`},
		{name: "an rfc2136 delegation without its providers entry is refused saying what to add",
			del:  &Delegation{Provider: "rfc2136", Parent: "example.com"},
			path: "zones[0].delegation.parent", message: "no providers.rfc2136[] entry for zone example.com.: add one with its server and tsig_key_file"},
		{name: "a provider that differs from the parent's entry is refused naming the entry",
			del: &Delegation{Provider: "route53", Parent: "example.com"}, pr: Providers{RFC2136: []RFC2136Zone{rfc}},
			path: "zones[0].delegation.provider", message: `"route53" does not match: the parent zone example.com. is configured under providers.rfc2136[0]: set provider: rfc2136`},
		{name: "a parent entry in direct mode is refused",
			del: &Delegation{Provider: "route53", Parent: "example.com"}, pr: Providers{Route53: []Route53Zone{{Zone: "example.com"}}},
			path: "zones[0].delegation.parent", message: "providers.route53[0] (zone example.com.) has mode direct: a delegated zone needs mode delegate there"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d := delegated(tc.del)
			d.Providers.Route53, d.Providers.Cloudflare, d.Providers.RFC2136 = tc.pr.Route53, tc.pr.Cloudflare, tc.pr.RFC2136
			requireFieldError(t, Validate(d), tc.path, tc.message)
		})
	}
}

func TestADelegationFromAnotherMeridianZoneIsRefused(t *testing.T) {
	d := delegated(&Delegation{Provider: "route53", Parent: "example.com"})
	d.Zones = append(d.Zones, Zone{Apex: "example.com", Nameservers: []Nameserver{{Name: "ns1.example.com", IPv4: []string{"192.0.2.54"}}}})
	requireFieldError(t, Validate(d), "zones[0].delegation.parent", `"example.com." is one of Meridian's own zones`)
}

func TestRFC2136ZoneValidation(t *testing.T) {
	for _, tc := range []struct {
		name    string
		zone    RFC2136Zone
		path    string
		message string
	}{
		{name: "a server with a port is accepted",
			zone: RFC2136Zone{Zone: "example.com", Server: "[2001:db8::53]:5353", TSIGKeyFile: "k"}},
		{name: "a missing server is refused with an example",
			zone: RFC2136Zone{Zone: "example.com", TSIGKeyFile: "k"},
			path: "providers.rfc2136[0].server", message: "is required: the parent's primary that takes the updates, IP or IP:port"},
		{name: "a host name as server is refused saying why",
			zone: RFC2136Zone{Zone: "example.com", Server: "ns1.example.com:53", TSIGKeyFile: "k"},
			path: "providers.rfc2136[0].server", message: "a host name is not accepted"},
		{name: "a missing key file is refused: updates are always signed",
			zone: RFC2136Zone{Zone: "example.com", Server: "192.0.2.10"},
			path: "providers.rfc2136[0].tsig_key_file", message: "is required: updates and transfers of the parent are signed with TSIG"},
		{name: "a zone with no Meridian zone below it is refused",
			zone: RFC2136Zone{Zone: "example.net", Server: "192.0.2.10", TSIGKeyFile: "k"},
			path: "providers.rfc2136[0].zone", message: `an rfc2136 zone only holds delegations and needs a Meridian zone below "example.net."`},
		{name: "a budget of zero requests per window is the default, a negative one is refused",
			zone: RFC2136Zone{Zone: "example.com", Server: "192.0.2.10", TSIGKeyFile: "k", ProviderAPI: ProviderAPI{RequestBudget: -3}},
			path: "providers.rfc2136[0].request_budget", message: "0 = default 10 per 1s"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d := delegated(nil)
			d.Providers.RFC2136 = []RFC2136Zone{tc.zone}
			requireFieldError(t, Validate(d), tc.path, tc.message)
		})
	}
}

func TestAZoneDelegationNeedsAnOwnerID(t *testing.T) {
	d := delegated(&Delegation{Provider: "route53", Parent: "example.com"})
	d.Providers.OwnerID = ""
	requireFieldError(t, Validate(d), "providers.owner_id", "is required with route53, cloudflare or rfc2136 zones and zone delegations")
}

func TestNormalizeImpliesTheParentEntryOfADelegation(t *testing.T) {
	for _, tc := range []struct {
		name       string
		del        *Delegation
		pr         Providers
		route53    []string // zone mode
		cloudflare []string
	}{
		{name: "a route53 delegation without an entry gets one in mode delegate",
			del: &Delegation{Provider: "route53", Parent: "Example.com"}, route53: []string{"example.com. delegate"}},
		{name: "a cloudflare delegation without an entry gets one in mode delegate",
			del: &Delegation{Provider: "cloudflare", Parent: "example.com"}, cloudflare: []string{"example.com. delegate"}},
		{name: "an existing entry is used, not doubled",
			del: &Delegation{Provider: "route53", Parent: "example.com."}, pr: Providers{Route53: []Route53Zone{{Zone: "EXAMPLE.com", Mode: ModeDelegate, Region: "eu-west-1"}}},
			route53: []string{"example.com. delegate"}},
		{name: "an rfc2136 delegation implies nothing (its entry is required)",
			del: &Delegation{Provider: "rfc2136", Parent: "example.com"}, pr: Providers{RFC2136: []RFC2136Zone{{Zone: "example.com", Server: "192.0.2.10", TSIGKeyFile: "k"}}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d := delegated(tc.del)
			d.Providers.Route53, d.Providers.Cloudflare, d.Providers.RFC2136 = tc.pr.Route53, tc.pr.Cloudflare, tc.pr.RFC2136
			out, err := Normalize(d)
			require.NoError(t, err)
			var r53, cf []string
			for _, z := range out.Providers.Route53 {
				r53 = append(r53, z.Zone+" "+z.Mode)
				assert.Equal(t, DefaultRoute53Budget, z.RequestBudget, "the implied entry has the defaults")
			}
			for _, z := range out.Providers.Cloudflare {
				cf = append(cf, z.Zone+" "+z.Mode)
			}
			assert.Equal(t, tc.route53, r53)
			assert.Equal(t, tc.cloudflare, cf)
			assert.Equal(t, "example.com.", out.Zones[0].Delegation.Parent)
			assert.Len(t, d.Providers.Route53, len(tc.pr.Route53), "the input is not changed")
		})
	}
}

func TestNormalizeFillsTheRFC2136Entry(t *testing.T) {
	d := delegated(&Delegation{Provider: "rfc2136", Parent: "example.com"})
	d.Providers.RFC2136 = []RFC2136Zone{{Zone: "Example.com", Server: "192.0.2.10", TSIGKeyFile: "k"}}
	out, err := Normalize(d)
	require.NoError(t, err)
	z := out.Providers.RFC2136[0]
	assert.Equal(t, "example.com.", z.Zone)
	assert.Equal(t, "192.0.2.10:53", z.Server, "port 53 by default")
	assert.Equal(t, DefaultRFC2136Budget, z.RequestBudget)
	assert.Equal(t, Duration(DefaultRFC2136BudgetWindow), z.RequestBudgetWindow)
	assert.Equal(t, DefaultProviderMaxAttempts, z.MaxAttempts)
}
