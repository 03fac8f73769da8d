package app

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/meridian-gslb/meridian/internal/config"
	"github.com/meridian-gslb/meridian/providers/cloudflare/cffake"
	"github.com/meridian-gslb/meridian/providers/route53/route53fake"
)

// pushConfig has one service per strategy, each with an HTTP health check,
// and one provider zone (the %[1]s line).
const pushConfig = `
zones:
  - apex: example.net
    nameservers: [{name: ns1.example.net, ipv4: [192.0.2.53]}]
clusters:
  - {name: eu, region: eu-west, country: DE, continent: EU}
  - {name: us, region: us-east, country: US, continent: NA}
services:
  - name: web.example.net
    health_check: {kind: http, port: 8080, path: /healthz}
    endpoints:
      - {address: 198.51.100.1, cluster: eu, weight: 700}
      - {address: 198.51.100.2, cluster: us, weight: 300}
  - name: api.example.net
    strategy: failover
    failover: {order: [eu, us]}
    health_check: {kind: tcp, port: 443}
    endpoints:
      - {address: 198.51.100.3, cluster: eu}
      - {address: 198.51.100.4, cluster: us}
  - name: geo.example.net
    strategy: geo
    geo: {rules: [{countries: [DE], clusters: [eu]}], default: [us]}
    health_check: {kind: https, path: /}
    endpoints:
      - {address: 198.51.100.5, cluster: eu}
      - {address: "2001:db8::6", cluster: us}
  - name: www.example.net
    strategy: roundrobin
    endpoints:
      - {cname: web.example.net, cluster: eu}
providers:
  owner_id: unit
  %[1]s
`

// TestEveryProviderSettingThatValidatesAlsoSyncs runs meridian push on
// configs that check-config accepts, with every provider setting of issue
// 14 at a non-default value: none may pass validation and then fail to
// sync, and a second push finds nothing to change.
func TestEveryProviderSettingThatValidatesAlsoSyncs(t *testing.T) {
	const token = "unit-token"
	t.Setenv("CLOUDFLARE_API_TOKEN", token)
	t.Setenv("AWS_ACCESS_KEY_ID", "AKIDUNIT")
	t.Setenv("AWS_SECRET_ACCESS_KEY", "unit-secret")
	t.Setenv("AWS_EC2_METADATA_DISABLED", "true")
	for _, tc := range []struct {
		name string
		zone string // a providers line; %[1]s is the fake's URL, %[2]s the Cloudflare account id
	}{
		{name: "cloudflare plain records with a TTL", zone: `cloudflare: [{zone: example.net, endpoint: "%[1]s", ttl: 120}]`},
		{name: "cloudflare load balancers with backstop monitors and the account named",
			zone: `cloudflare: [{zone: example.net, endpoint: "%[1]s", load_balancing: required, health_checks: backstop, account_id: "%[2]s"}]`},
		{name: "cloudflare preferred load balancing, proxied", zone: `cloudflare: [{zone: example.net, endpoint: "%[1]s", load_balancing: preferred, proxied: true}]`},
		{name: "route53 native policies", zone: `route53: [{zone: example.net, endpoint: "%[1]s", request_budget: 50}]`},
		{name: "route53 with backstop health checks", zone: `route53: [{zone: example.net, endpoint: "%[1]s", request_budget: 50, health_checks: backstop}]`},
		{name: "route53 with backstop health checks and IP-based routing from geo.networks",
			zone: `route53: [{zone: example.net, endpoint: "%[1]s", request_budget: 50, health_checks: backstop}]
geo:
  networks:
    - {cidr: 203.0.114.0/24, country: DE, continent: EU}
    - {cidr: 100.100.0.0/16, region: us-east}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cf := cffake.New(token)
			defer cf.Close()
			cf.AddZone("example.net")
			r53 := route53fake.New(route53fake.Options{AllowPrivateIPs: true})
			defer r53.Close()
			r53.AddZone("example.net")
			url := cf.URL
			if strings.HasPrefix(tc.zone, "route53") {
				url = r53.URL()
			}
			cfg := fmt.Sprintf(pushConfig, fmt.Sprintf(tc.zone, url, cf.AccountID()))
			_, err := config.Parse("meridian.yaml", []byte(cfg))
			require.NoError(t, err, "check-config accepts it")
			path := filepath.Join(t.TempDir(), "meridian.yaml")
			require.NoError(t, os.WriteFile(path, []byte(cfg), 0o600))

			var out bytes.Buffer
			log := slog.New(slog.DiscardHandler)
			require.NoError(t, Push(context.Background(), PushOptions{ConfigPath: path, Out: &out, Logger: log}), "%s", out.String())
			assert.NotContains(t, out.String(), "x ", "no refused change:\n%s", out.String())
			out.Reset()
			require.NoError(t, Push(context.Background(), PushOptions{ConfigPath: path, Out: &out, Logger: log, DryRun: true}))
			assert.Contains(t, out.String(), ": 0 create, 0 update, 0 delete, 0 conflict (dry run", "the second push finds nothing to do:\n%s", out.String())
		})
	}
}

func TestPushDryRunWarnsOnceThatProviderAnswersAreNotSticky(t *testing.T) {
	const token = "unit-token"
	t.Setenv("CLOUDFLARE_API_TOKEN", token)
	t.Setenv("AWS_ACCESS_KEY_ID", "AKIDUNIT")
	t.Setenv("AWS_SECRET_ACCESS_KEY", "unit-secret")
	t.Setenv("AWS_EC2_METADATA_DISABLED", "true")
	for _, tc := range []struct {
		name, provider, zone string
	}{
		{"route53 says its answers are not sticky", "route53", `route53: [{zone: example.net, endpoint: "%[1]s", request_budget: 50}]`},
		{"cloudflare load balancers say their answers are not sticky", "cloudflare",
			`cloudflare: [{zone: example.net, endpoint: "%[1]s", load_balancing: required, account_id: "%[2]s"}]`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cf := cffake.New(token)
			defer cf.Close()
			cf.AddZone("example.net")
			r53 := route53fake.New(route53fake.Options{AllowPrivateIPs: true})
			defer r53.Close()
			r53.AddZone("example.net")
			url := cf.URL
			if tc.provider == "route53" {
				url = r53.URL()
			}
			cfg := fmt.Sprintf(pushConfig, fmt.Sprintf(tc.zone, url, cf.AccountID()))
			cfg = strings.Replace(cfg, "  - name: web.example.net\n", "  - name: web.example.net\n    sticky: subnet\n", 1)
			cfg = strings.Replace(cfg, "  - name: geo.example.net\n", "  - name: geo.example.net\n    sticky: subnet\n", 1)
			path := filepath.Join(t.TempDir(), "meridian.yaml")
			require.NoError(t, os.WriteFile(path, []byte(cfg), 0o600))
			var out bytes.Buffer
			require.NoError(t, Push(context.Background(), PushOptions{ConfigPath: path, Out: &out, Logger: slog.New(slog.DiscardHandler), DryRun: true}))
			assert.Equal(t, 1, strings.Count(out.String(), "  warning: "), out.String())
			assert.Contains(t, out.String(), "  warning: "+tc.provider+" cannot express sticky answers: web.example.net., geo.example.net. (sticky: subnet)")
		})
	}
}
