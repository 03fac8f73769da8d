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
// snippet of docs/dns.md, Catalog zone): xfr_test.go's namedConf with the
// catalog in place of its zone.
func namedCatalogConf(t *testing.T) string {
	return replaceOnce(t, replaceOnce(t, replaceOnce(t, namedConf,
		"\tallow-transfer { none; };\n", `	allow-transfer { none; };
	catalog-zones {
		zone "catalog.meridian.test"
			default-primaries { 127.0.0.1 port %[4]d key "xfr-key"; }
			in-memory yes
			min-update-interval 1;
	};
`),
		`zone "xfr.test"`, `zone "catalog.meridian.test"`),
		"/xfr.test.db", "/catalog.meridian.test.db")
}

// knotCatalogConf is Knot configured with Meridian's catalog alone (the
// snippet of docs/dns.md, Catalog zone): xfr_test.go's knotConf with the
// catalog in place of its zone, and the template of its members.
func knotCatalogConf(t *testing.T) string {
	return replaceOnce(t, replaceOnce(t, replaceOnce(t, knotConf,
		"    acl: notify-from-meridian\n", `    acl: notify-from-meridian
    catalog-role: interpret
    catalog-template: meridian-member
`),
		"\nzone:\n", `
  - id: meridian-member
    storage: "%[1]s"
    master: meridian
    acl: notify-from-meridian
    zonefile-load: none
    zonefile-sync: -1
    journal-content: none
zone:
`),
		"domain: xfr.test", "domain: catalog.meridian.test")
}

// replaceOnce replaces the one occurrence of old in s (a changed
// xfr_test.go config fails the test here).
func replaceOnce(t *testing.T, s, old, new string) string {
	t.Helper()
	require.Equal(t, 1, strings.Count(s, old), "%q is in the secondary's config once", old)
	return strings.Replace(s, old, new, 1)
}

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
	named, knotd := sbin(t, "named"), sbin(t, "knotd")
	t.Logf("secondaries: %s, %s", strings.TrimSpace(runNoFail(named, "-v")), strings.TrimSpace(runNoFail(knotd, "-V")))
	// 32 random bytes; the key file in its one-line form (xfr_test.go
	// writes the BIND form).
	dir, secret := t.TempDir(), base64.StdEncoding.EncodeToString([]byte(rand.Text() + rand.Text())[:32])
	keyFile := filepath.Join(dir, "xfr.key")
	require.NoError(t, os.WriteFile(keyFile, []byte("hmac-sha256:xfr-key:"+secret+"\n"), 0o600))
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
	require.NoError(t, os.WriteFile(filepath.Join(bindDir, "named.conf"), []byte(fmt.Sprintf(namedCatalogConf(t), bindDir, bindPort, secret, m.dnsPort)), 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(knotDir, "knot.conf"), []byte(fmt.Sprintf(knotCatalogConf(t), knotDir, knotPort, secret, m.dnsPort)), 0o644))
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
	// Queries into the catalog: answered to the addresses that may
	// transfer it, REFUSED to others.
	out := runNoFail("dig", "@127.0.0.1", "-p", fmt.Sprint(m.dnsPort), "+time=1", "+tries=1", "-b", "127.0.0.2", "catalog.meridian.test", "SOA")
	assert.Contains(t, out, "status: REFUSED", out)
	assert.Contains(t, out, "EDE: 18 (Prohibited): (meridian: query not allowed)", out)

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
