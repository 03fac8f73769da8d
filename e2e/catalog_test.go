//go:build e2e

package e2e

import (
	"crypto/rand"
	"encoding/base64"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// catalogZones are the zones of the catalog test; the reload drops the last.
var catalogZones = []string{"one.cat.test", "two.cat.test", "three.cat.test"}

const catalogZoneConfig = `
  - apex: %[1]s
    nameservers: [{name: ns1.%[1]s, ipv4: [127.0.0.1]}]
    transfer: {allow: [127.0.0.1], tsig_key_file: %[2]s, notify: [127.0.0.1:%[3]d, 127.0.0.1:%[4]d]}`

const catalogConfig = `
catalog:
  zone: catalog.meridian.test
  transfer:
    allow: [127.0.0.1]
    tsig_key_file: %[1]s
    notify: [127.0.0.1:%[2]d, 127.0.0.1:%[3]d]
clusters:
  - {name: east, region: us-east}
services:
  - name: app.one.cat.test
    endpoints: [{address: 192.0.2.1, cluster: east}]
zones:`

// namedCatalogConf is BIND configured with Meridian's catalog alone (the
// snippet of docs/dns.md, Catalog zone).
const namedCatalogConf = `options {
	directory "%[1]s";
	pid-file "%[1]s/named.pid";
	session-keyfile "%[1]s/session.key";
	managed-keys-directory "%[1]s";
	listen-on port %[2]d { 127.0.0.1; };
	listen-on-v6 { none; };
	recursion no;
	notify no;
	dnssec-validation no;
	allow-query { any; };
	allow-transfer { none; };
	catalog-zones {
		zone "catalog.meridian.test"
			default-primaries { 127.0.0.1 port %[4]d key "xfr-key"; }
			in-memory yes
			min-update-interval 1;
	};
};
controls { };
key "xfr-key" { algorithm hmac-sha256; secret "%[3]s"; };
zone "catalog.meridian.test" {
	type secondary;
	primaries { 127.0.0.1 port %[4]d key "xfr-key"; };
	file "%[1]s/catalog.meridian.test.db";
};
`

// knotCatalogConf is Knot configured with Meridian's catalog alone (the
// snippet of docs/dns.md, Catalog zone).
const knotCatalogConf = `server:
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
  - id: xfr-key
    algorithm: hmac-sha256
    secret: %[3]s
remote:
  - id: meridian
    address: 127.0.0.1@%[4]d
    key: xfr-key
acl:
  - id: notify-from-meridian
    address: 127.0.0.1
    key: xfr-key
    action: notify
template:
  - id: default
    storage: "%[1]s"
    zonefile-load: none
    zonefile-sync: -1
    journal-content: none
  - id: meridian-member
    storage: "%[1]s"
    master: meridian
    acl: notify-from-meridian
    zonefile-load: none
    zonefile-sync: -1
    journal-content: none
zone:
  - domain: catalog.meridian.test
    master: meridian
    acl: notify-from-meridian
    catalog-role: interpret
    catalog-template: meridian-member
`

// soaSerial is the serial of dig +short SOA lines ("" when none).
func soaSerial(lines []string) string {
	if len(lines) != 1 {
		return ""
	}
	if f := strings.Fields(lines[0]); len(f) == 7 {
		return f[2]
	}
	return ""
}

// TestCatalogProvisionsBINDAndKnot: a BIND and a Knot secondary that know
// only Meridian's catalog zone serve every zone with transfers at
// Meridian's serial, and drop a zone removed from Meridian's config.
func TestCatalogProvisionsBINDAndKnot(t *testing.T) {
	sbin(t, "named")
	sbin(t, "knotd")
	dir := t.TempDir()
	raw := make([]byte, 32)
	rand.Read(raw)
	secret := base64.StdEncoding.EncodeToString(raw)
	keyFile := filepath.Join(dir, "xfr.key")
	require.NoError(t, os.WriteFile(keyFile, []byte(fmt.Sprintf("key \"xfr-key\" {\n\talgorithm hmac-sha256;\n\tsecret \"%s\";\n};\n", secret)), 0o600))
	bindPort, knotPort := freePort(t), freePort(t)
	cfg := func(zones []string) string {
		out := fmt.Sprintf(catalogConfig, keyFile, bindPort, knotPort)
		for _, z := range zones {
			out += fmt.Sprintf(catalogZoneConfig, z, keyFile, bindPort, knotPort)
		}
		return out + "\n"
	}
	m := startMeridian(t, cfg(catalogZones))
	primary := &secondary{name: "meridian", port: m.dnsPort} // for its query helper

	bindDir, knotDir := filepath.Join(dir, "bind"), filepath.Join(dir, "knot")
	require.NoError(t, os.MkdirAll(bindDir, 0o755))
	require.NoError(t, os.MkdirAll(knotDir, 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(bindDir, "named.conf"), []byte(fmt.Sprintf(namedCatalogConf, bindDir, bindPort, secret, m.dnsPort)), 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(knotDir, "knot.conf"), []byte(fmt.Sprintf(knotCatalogConf, knotDir, knotPort, secret, m.dnsPort)), 0o644))
	start := time.Now()
	secs := []*secondary{
		startSecondary(t, "named", bindPort, "-g", "-n", "1", "-c", filepath.Join(bindDir, "named.conf")),
		startSecondary(t, "knotd", knotPort, "-c", filepath.Join(knotDir, "knot.conf")),
	}

	// serves reports whether s serves every zone of want at Meridian's
	// serial ("": the zone must not be served, s must not answer its SOA),
	// and if not, why. Knot answers no query into a catalog it interprets
	// (REFUSED): the catalog's own serial is checked on BIND only.
	serves := func(s *secondary, want map[string]string) (bool, string) {
		for zone, serial := range want {
			if zone == "catalog.meridian.test" && s.name == "knotd" {
				continue
			}
			if got := soaSerial(s.query(zone, "SOA")); got != serial {
				return false, fmt.Sprintf("%s: serial %q, want %q", zone, got, serial)
			}
		}
		return true, ""
	}
	// waitAll polls every secondary every 150 ms until it serves want, for
	// at most timeout after from, and returns how long each took from from.
	waitAll := func(want map[string]string, from time.Time, timeout time.Duration) map[string]time.Duration {
		t.Helper()
		took := map[string]time.Duration{}
		for time.Since(from) < timeout && len(took) < len(secs) {
			for _, s := range secs {
				if _, done := took[s.name]; !done {
					if ok, _ := serves(s, want); ok {
						took[s.name] = time.Since(from)
					}
				}
			}
			time.Sleep(150 * time.Millisecond)
		}
		for _, s := range secs {
			ok, why := serves(s, want)
			require.True(t, ok, "%s after %v: %s", s.name, timeout, why)
		}
		return took
	}
	want := map[string]string{}
	for _, z := range append([]string{"catalog.meridian.test"}, catalogZones...) {
		want[z] = soaSerial(primary.query(z, "SOA"))
		require.NotEmpty(t, want[z], "meridian answers the SOA of %s", z)
	}
	took := waitAll(want, start, 30*time.Second)
	t.Logf("provisioned from the catalog (%d zones) after the secondaries started: named %v, knotd %v",
		len(catalogZones), took["named"].Round(time.Millisecond), took["knotd"].Round(time.Millisecond))
	for _, s := range secs {
		assert.Equal(t, []string{"192.0.2.1"}, s.query("app.one.cat.test", "A"), "%s serves the member's records", s.name)
	}

	// A reload without three.cat.test: the catalog gets the next serial, is
	// notified, and the secondaries drop the zone.
	prev := want["catalog.meridian.test"]
	writeAtomic(t, m.config, cfg(catalogZones[:2]))
	reloaded := time.Now()
	m.cmd.Process.Signal(syscall.SIGHUP)
	require.Eventually(t, func() bool {
		return soaSerial(primary.query("catalog.meridian.test", "SOA")) == fmt.Sprint(mustAtoi(t, prev)+1)
	}, 5*time.Second, 100*time.Millisecond, "the catalog's serial moves by one")
	want["catalog.meridian.test"] = fmt.Sprint(mustAtoi(t, prev) + 1)
	want["three.cat.test"] = ""
	took = waitAll(want, reloaded, 20*time.Second)
	t.Logf("three.cat.test dropped after the reload: named %v, knotd %v",
		took["named"].Round(time.Millisecond), took["knotd"].Round(time.Millisecond))

	mt := m.metrics(t)
	assert.GreaterOrEqual(t, metricValue(t, mt, `meridian_xfr_notify_total{result="ok",zone="catalog.meridian.test"}`), 2.0, "a NOTIFY per secondary for each catalog version")
	assert.Contains(t, m.log(), `msg="zone transfer" zone=catalog.meridian.test. type=ixfr mode=incremental`, "the secondaries pull the catalog's change by IXFR")
}
