//go:build e2e

package e2e

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// answersBindConf is a BIND primary of example.com (unsigned) that takes
// updates and transfers signed with meridian-update and lets it change
// gslb.example.com and the names below it only.
const answersBindConf = bindPrimaryOptions + `zone "example.com" {
	type primary;
	file "%[1]s/example.com.db";
	update-policy { grant meridian-update subdomain gslb.example.com. ANY; };
	allow-transfer { key meridian-update; };
};
`

// answersKnotConf is a Knot primary of example.net in %[1]s on
// 127.0.0.1:%[2]d that takes updates and transfers signed with
// meridian-update (secret %[3]s), updates only at or below
// gslb.example.net.
const answersKnotConf = `server:
    rundir: "%[1]s"
    listen: 127.0.0.1@%[2]d
    udp-workers: 1
    tcp-workers: 1
    background-workers: 1
database:
    storage: "%[1]s"
log:
  - target: stderr
    any: info
key:
  - id: meridian-update
    algorithm: hmac-sha256
    secret: %[3]s
acl:
  - id: meridian
    address: 127.0.0.1
    key: meridian-update
    action: [transfer, update]
    update-owner: name
    update-owner-match: sub-or-equal
    update-owner-name: gslb.example.net.
template:
  - id: default
    storage: "%[1]s"
    zonefile-sync: -1
zone:
  - domain: example.net
    file: "%[1]s/example.net.zone"
    acl: meridian
`

// answersZone is the zone the primaries start with (%[1]s: com or net):
// nothing of Meridian's, and records of someone else's at the apex, beside
// Meridian's names (a TXT at the very name Meridian writes an A to, a
// neighbour name) and inside the subtree the key may change.
const answersZone = `$TTL 300
@ IN SOA ns1.example.%[1]s. hostmaster.example.%[1]s. 1 3600 600 86400 300
@ IN NS ns1.example.%[1]s.
@ IN MX 10 mail.example.%[1]s.
@ IN TXT "v=spf1 -all"
ns1 IN A 127.0.0.1
www IN A 192.0.2.80
app.gslb 600 IN TXT "owned-by-someone-else"
app-legacy.gslb IN A 192.0.2.90
_acme-challenge.gslb IN TXT "not-meridians"
mail.gslb IN MX 10 mx.example.org.
`

// answersForeign are the name and type of every record of answersZone
// (example.%s) but the SOA.
var answersForeign = []string{"example.%s. NS", "example.%s. MX", "example.%s. TXT", "ns1.example.%s. A", "www.example.%s. A",
	"app.gslb.example.%s. TXT", "app-legacy.gslb.example.%s. A", "_acme-challenge.gslb.example.%s. TXT", "mail.gslb.example.%s. MX"}

// answersConfig: app (weighted) and web (failover east → west) in
// gslb.example.com and gslb.example.net, probed over HTTP; the decided
// answers go to BIND (example.com) and Knot (example.net) by RFC 2136.
const answersConfig = `
zones:
  - apex: gslb.example.com
    nameservers: [{name: ns1.gslb.example.com, ipv4: [127.0.0.1]}]
  - apex: gslb.example.net
    nameservers: [{name: ns1.gslb.example.net, ipv4: [127.0.0.1]}]
health: {interval: 500ms, timeout: 400ms, fall: 2, rise: 2}
ring: {enabled: true, node_name: solo, region: r1, bind: "127.0.0.1:%[1]d"}
decision: {hold_down: 2s}
clusters:
  - {name: east, region: r1}
  - {name: west, region: r1}
services:
%[2]s
providers:
  owner_id: e2e-answers
  debounce: 100ms
  resync_interval: 10s
  rfc2136:
    - {zone: example.com, mode: direct, server: "127.0.0.1:%[3]d", tsig_key_file: %[5]s}
    - {zone: example.net, mode: direct, server: "127.0.0.1:%[4]d", tsig_key_file: %[5]s}
`

const answersServices = `  - name: app.gslb.example.%[1]s
    ttl: 30
    health_check: {kind: http, port: %[2]d, path: /healthz}
    endpoints:
      - {address: 127.0.0.71, cluster: east, weight: 600}
      - {address: 127.0.0.72, cluster: west, weight: 400}
  - name: web.gslb.example.%[1]s
    ttl: 20
    strategy: failover
    failover: {order: [east, west]}
    health_check: {kind: http, port: %[2]d, path: /healthz}
    endpoints:
      - {address: 127.0.0.71, cluster: east}
      - {address: 127.0.0.72, cluster: west}
`

// answersPrimary is one primary of the test: its zone's TLD and port.
type answersPrimary struct {
	tld    string
	port   int
	secret string
}

func (p answersPrimary) zone() string { return "example." + p.tld + "." }

// split sorts the dig AXFR lines of p's zone into the foreign ones (as dig
// printed them) and Meridian's (name TTL TYPE value, its names only).
func (p answersPrimary) split(t *testing.T) (foreign, ours []string) {
	t.Helper()
	keys := map[string]bool{}
	for _, k := range answersForeign {
		keys[fmt.Sprintf(k, p.tld)] = true
	}
	for _, l := range digAXFR(t, p.port, p.secret, p.zone()) {
		f := strings.Fields(l)
		if len(f) < 5 {
			continue
		}
		switch {
		case keys[f[0]+" "+f[3]]:
			foreign = append(foreign, l)
		case f[3] != "SOA":
			ours = append(ours, strings.Join(append([]string{f[0], f[1], f[3]}, f[4:]...), " "))
		}
	}
	slices.Sort(foreign)
	slices.Sort(ours)
	return slices.Compact(foreign), slices.Compact(ours)
}

// await waits until Meridian's records in p's zone are want (polling every
// 50ms, at most timeout).
func (p answersPrimary) await(t *testing.T, want []string, timeout time.Duration, what string) {
	t.Helper()
	var ours []string
	assert.Eventually(t, func() bool {
		_, ours = p.split(t)
		return slices.Equal(ours, want)
	}, timeout, 50*time.Millisecond, "%s holds %s", p.zone(), what)
	require.Equal(t, want, ours)
}

// serial is the SOA serial p's zone has now.
func (p answersPrimary) serial(t *testing.T) string {
	out := strings.Fields(runNoFail("dig", "@127.0.0.1", "-p", fmt.Sprint(p.port), "+short", "+time=2", "+tries=1", p.zone(), "SOA"))
	if len(out) < 3 {
		return ""
	}
	return out[2]
}

// ours is what Meridian holds in example.<tld> with the app and web sets.
func answersOurs(tld string, app, web []string) []string {
	owner := func(name string) string {
		return fmt.Sprintf(`_meridian-owner.%s.gslb.example.%s. 300 TXT "heritage=meridian,owner=e2e-answers,types=A"`, name, tld)
	}
	out := []string{owner("app"), owner("web")}
	for _, a := range app {
		out = append(out, fmt.Sprintf("app.gslb.example.%s. 30 A %s", tld, a))
	}
	for _, a := range web {
		out = append(out, fmt.Sprintf("web.gslb.example.%s. 20 A %s", tld, a))
	}
	slices.Sort(out)
	return out
}

// TestRFC2136AnswersFollowTheDecisions: `meridian serve` writes the decided
// answers of its services into a real BIND and a real Knot by RFC 2136 with
// TSIG (providers.rfc2136[].mode: direct). A backend that stops leaves both
// primaries' records within one sync; records Meridian does not own read
// back byte-identical by `dig AXFR` after every pass; a second sync sends
// no UPDATE (the counter of NOERROR updates and the SOA serials stay).
func TestRFC2136AnswersFollowTheDecisions(t *testing.T) {
	dir := t.TempDir()
	secret, keyFile := updateKey(t, dir)
	_, bindPort := startBindPrimary(t, dir, answersBindConf, secret, map[string]string{"example.com.db": fmt.Sprintf(answersZone, "com")})
	knotDir := filepath.Join(dir, "knot")
	require.NoError(t, os.MkdirAll(knotDir, 0o755))
	knotPort := freePort(t)
	require.NoError(t, os.WriteFile(filepath.Join(knotDir, "knot.conf"), []byte(fmt.Sprintf(answersKnotConf, knotDir, knotPort, secret)), 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(knotDir, "example.net.zone"), []byte(fmt.Sprintf(answersZone, "net")), 0o644))
	startSecondary(t, "knotd", knotPort, "-c", filepath.Join(knotDir, "knot.conf"))
	primaries := []answersPrimary{{"com", bindPort, secret}, {"net", knotPort, secret}}

	// Pass 0: the zones as their owners made them.
	foreign0 := map[string][]string{}
	for _, p := range primaries {
		require.Eventually(t, func() bool {
			f, _ := p.split(t)
			foreign0[p.tld] = f
			return len(f) == len(answersForeign)
		}, 20*time.Second, 100*time.Millisecond, "%s serves %s", p.zone(), p.zone())
	}

	port := freePort(t)
	backends := map[string]*backend{}
	for _, a := range []string{"127.0.0.71", "127.0.0.72"} {
		backends[a] = startBackend(t, fmt.Sprintf("%s:%d", a, port))
	}
	services := fmt.Sprintf(answersServices, "com", port) + fmt.Sprintf(answersServices, "net", port)
	m := startMeridian(t, fmt.Sprintf(answersConfig, freePort(t), services, bindPort, knotPort, keyFile))

	// Pass 1: both endpoints answer; web answers from its first group.
	both := []string{"127.0.0.71", "127.0.0.72"}
	start := time.Now()
	for _, p := range primaries {
		p.await(t, answersOurs(p.tld, both, []string{"127.0.0.71"}), 20*time.Second, "the decided answers")
	}
	t.Logf("FIGURE rfc2136 answers e2e: Meridian ready → answers in BIND and Knot %s", time.Since(start).Round(10*time.Millisecond))
	updates := func() map[string]float64 {
		metrics := m.metrics(t)
		out := map[string]float64{}
		for _, p := range primaries {
			out[p.tld] = metricValue(t, metrics, fmt.Sprintf(`meridian_provider_rfc2136_responses_total{operation="update",rcode="NOERROR",zone="%s"}`, p.zone()))
		}
		return out
	}
	before := updates()

	// (1) A backend stops: the sets of both primaries follow within one sync.
	require.NoError(t, backends["127.0.0.71"].srv.Close())
	decided := waitDecidedDown(t, m, "app.gslb.example.com. 127.0.0.71")
	for _, p := range primaries {
		p.await(t, answersOurs(p.tld, []string{"127.0.0.72"}, []string{"127.0.0.72"}), 10*time.Second, "the answers after the failover")
		t.Logf("FIGURE rfc2136 answers e2e: decided down → %s (%s) changed %s", p.zone(), map[string]string{"com": "BIND", "net": "Knot"}[p.tld],
			time.Since(decided).Round(10*time.Millisecond))
	}
	assert.Less(t, time.Since(decided), 10*time.Second, "within one sync (resync_interval 10s, debounce 100ms)")
	after := updates()
	for _, p := range primaries {
		assert.Positive(t, after[p.tld]-before[p.tld], "%s: the failover was written by UPDATE", p.zone())
	}

	// (3) The next periodic sync finds nothing to do: no UPDATE, the same serial.
	serials := map[string]string{}
	for _, p := range primaries {
		serials[p.tld] = p.serial(t)
	}
	syncs := func() float64 {
		metrics := m.metrics(t)
		var n float64
		for _, p := range primaries {
			n += metricValue(t, metrics, fmt.Sprintf(`meridian_provider_syncs_total{provider="rfc2136",result="success",zone="%s"}`, p.zone()))
		}
		return n
	}
	synced := syncs()
	require.Eventually(t, func() bool { return syncs() >= synced+2 }, 15*time.Second, 100*time.Millisecond, "a second sync of both zones")
	assert.Equal(t, after, updates(), "a second sync sends no UPDATE")
	for _, p := range primaries {
		assert.Equal(t, serials[p.tld], p.serial(t), "%s: the serial stays", p.zone())
	}
	out, err := exec.Command(meridianBin, "push", "--config", m.config, "--dry-run", "--from-http", m.http).CombinedOutput()
	require.NoError(t, err, "%s", out)
	for _, p := range primaries {
		assert.Contains(t, string(out), fmt.Sprintf("rfc2136 %s: 0 create, 0 update, 0 delete, 0 conflict (dry run: nothing written)", p.zone()))
	}

	// (2) Records Meridian does not own are byte-identical after the passes.
	for _, p := range primaries {
		foreign, _ := p.split(t)
		assert.Equal(t, foreign0[p.tld], foreign, "%s: dig AXFR lines of the foreign names", p.zone())
	}
	assert.NotContains(t, m.log(), secret, "the TSIG secret is never logged")
}
