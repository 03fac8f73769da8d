//go:build e2e

package e2e

import (
	"crypto/rand"
	"encoding/base64"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// corednsTransferCorefile serves xfr.test from the meridian plugin, with
// CoreDNS's tsig plugin (transfers must be signed with the key in %[1]s,
// the file `meridian serve` reads too) and its transfer plugin (transfers
// to 127.0.0.1, NOTIFY to the BIND secondary at port %[3]d). The plugin's
// config is %[2]s, a file of the test's own: the test changes it, and
// startCoreDNS does not say where it wrote the one it was given. Formatted
// once here, then by startCoreDNS (%%[1]d: the DNS port).
const corednsTransferCorefile = `
xfr.test:%%[1]d {
    errors
    log
    tsig {
        secrets %[1]s
        require AXFR IXFR
    }
    meridian {
        config %[2]s
    }
    transfer {
        to 127.0.0.1:%[3]d
    }
}
`

// transferConfigs are the config of `meridian serve` (xfrConfig with a
// fixed zones[].soa.serial: NOTIFY to the port notify and to an unused
// one) and the plugin's: the same without the transfer section, which the
// Corefile's transfer and tsig plugins replace.
func transferConfigs(t *testing.T, keyFile string, notify int, serial uint32, eastState string) (serve, plugin string) {
	serve = fmt.Sprintf(xfrConfig, keyFile, notify, freePort(t), eastState)
	serve = strings.Replace(serve, "    nameservers:", fmt.Sprintf("    soa: {serial: %d}\n    nameservers:", serial), 1)
	i, j := strings.Index(serve, "    transfer:"), strings.Index(serve, "clusters:")
	require.True(t, i > 0 && j > i, serve)
	return serve, serve[:i] + serve[j:]
}

// bindKeyFile writes a fresh HMAC-SHA256 key named xfr-key to dir in the
// format tsig-keygen writes, which `meridian serve`, CoreDNS's tsig plugin
// and BIND read, and returns the file and the key's secret (base64).
func bindKeyFile(t *testing.T, dir string) (file, secret string) {
	t.Helper()
	raw := make([]byte, 32) // as tsig-keygen makes them
	rand.Read(raw)
	secret = base64.StdEncoding.EncodeToString(raw)
	file = filepath.Join(dir, "xfr.key")
	text := fmt.Sprintf("key \"xfr-key\" {\n\talgorithm hmac-sha256;\n\tsecret \"%s\";\n};\n", secret)
	require.NoError(t, os.WriteFile(file, []byte(text), 0o600))
	return file, secret
}

// digAXFRLines returns the records of dig's AXFR of xfr.test from port (args: the
// key, the source address), one per line, sorted, without TSIG records and
// comments; nil when the transfer failed.
func digAXFRLines(port int, args ...string) []string {
	out := runNoFail("dig", append([]string{"@127.0.0.1", "-p", fmt.Sprint(port), "+time=2", "+tries=1", "AXFR", "xfr.test"}, args...)...)
	if strings.Contains(out, "Transfer failed") || strings.Contains(out, "communications error") {
		return nil
	}
	var rrs []string
	for _, l := range strings.Split(out, "\n") {
		if l == "" || strings.HasPrefix(l, ";") || strings.Contains(l, "\tTSIG\t") {
			continue
		}
		rrs = append(rrs, strings.Join(strings.Fields(l), " "))
	}
	slices.Sort(rrs)
	return rrs
}

// TestCoreDNSTransfersTheZoneAsMeridianServeDoes: a BIND secondary of
// CoreDNS (meridian plugin, transfer and tsig plugins) and one of `meridian
// serve` on the same config hold the same serial and the same records, at
// start and after a change that CoreDNS announces by NOTIFY.
func TestCoreDNSTransfersTheZoneAsMeridianServeDoes(t *testing.T) {
	sbin(t, "named")
	dir := t.TempDir()
	keyFile, secret := bindKeyFile(t, dir)
	key := "hmac-sha256:xfr-key:" + secret

	const serial0 = 2026120401
	serveBIND, coreBIND := freePort(t), freePort(t)
	serveText, pluginText := transferConfigs(t, keyFile, serveBIND, serial0, "up")
	pluginCfg := filepath.Join(dir, "plugin.yaml")
	require.NoError(t, os.WriteFile(pluginCfg, []byte(pluginText), 0o644))
	m := startMeridian(t, serveText)
	c := startCoreDNS(t, fmt.Sprintf(corednsTransferCorefile, keyFile, pluginCfg, coreBIND), pluginText)

	// Two BIND secondaries with the same key, each of one primary; they
	// allow transfers from 127.0.0.1 so that the test can read all they hold.
	var secs []*secondary
	type primary struct {
		name          string
		port, primary int // the secondary's port, its primary's
	}
	for _, s := range []primary{{"serve", serveBIND, m.dnsPort}, {"coredns", coreBIND, c.port}} {
		d := filepath.Join(dir, "bind-"+s.name)
		require.NoError(t, os.MkdirAll(d, 0o755))
		conf := strings.Replace(fmt.Sprintf(namedConf, d, s.port, secret, s.primary), "allow-transfer { none; };", "allow-transfer { 127.0.0.1; };", 1)
		require.NoError(t, os.WriteFile(filepath.Join(d, "named.conf"), []byte(conf), 0o644))
		secs = append(secs, startSecondary(t, "named", s.port, "-g", "-n", "1", "-c", filepath.Join(d, "named.conf")))
		secs[len(secs)-1].name = "named (secondary of " + s.name + ")"
	}

	// sameEverywhere checks that both primaries transfer, and both
	// secondaries hold, the same records.
	sameEverywhere := func(t *testing.T) {
		t.Helper()
		fromServe := digAXFRLines(m.dnsPort, "-y", key)
		require.NotEmpty(t, fromServe, "dig AXFR from meridian serve")
		assert.Equal(t, 2, countContaining(fromServe, " SOA "), "the SOA opens and closes the transfer:\n%s", strings.Join(fromServe, "\n"))
		assert.Equal(t, fromServe, digAXFRLines(c.port, "-y", key), "dig AXFR from CoreDNS")
		for _, s := range secs {
			assert.Equal(t, fromServe, digAXFRLines(s.port), "dig AXFR from %s", s.name)
		}
	}

	took := waitServes(t, secs, time.Now(), fmt.Sprint(serial0), []string{"192.0.2.1", "192.0.2.2"}, []string{"192.0.2.11"}, 20*time.Second)
	t.Logf("initial transfers at serial %d: %v", serial0, took)
	sameEverywhere(t)
	t.Logf("the zone, as both primaries transfer it and both secondaries hold it:\n%s", strings.Join(digAXFRLines(coreBIND), "\n"))

	// CoreDNS's transfer and tsig plugins decide who may transfer.
	assert.Nil(t, digAXFRLines(c.port), "an unsigned AXFR from CoreDNS is refused (tsig: require AXFR IXFR)")
	assert.Nil(t, digAXFRLines(c.port, "-b", "127.0.0.2", "-y", key), "an AXFR from an address outside transfer's to is refused")
	ixfr := runNoFail("dig", "@127.0.0.1", "-p", fmt.Sprint(c.port), "+time=2", "+tries=1", "-y", key, fmt.Sprintf("IXFR=%d", serial0), "xfr.test")
	assert.Equal(t, 1, strings.Count(ixfr, "\tSOA\t"), "an up-to-date IXFR from CoreDNS gets the SOA alone:\n%s", ixfr)
	assert.Contains(t, ixfr, fmt.Sprint(serial0))

	// East goes down and the configured serial stays as it is: both
	// primaries give the changed zone the next serial themselves (serve for
	// zones[].transfer, the plugin under CoreDNS's transfer plugin). Serve
	// reloads on SIGHUP, the plugin on the file's change; both secondaries
	// follow their primary's NOTIFY (the SOA refresh is an hour).
	serveText, pluginText = transferConfigs(t, keyFile, serveBIND, serial0, "down")
	start := time.Now()
	writeAtomic(t, pluginCfg, pluginText)
	writeAtomic(t, m.config, serveText)
	m.cmd.Process.Signal(syscall.SIGHUP)
	took = waitServes(t, secs, start, fmt.Sprint(serial0+1), []string{"192.0.2.2"}, []string{"192.0.2.12"}, 15*time.Second)
	t.Logf("after the change, serial %d: %v", serial0+1, took)
	sameEverywhere(t)
	assert.Contains(t, c.log(), "Outgoing transfer of", "CoreDNS's transfer plugin served the transfers")
}

func countContaining(lines []string, sub string) int {
	n := 0
	for _, l := range lines {
		if strings.Contains(l, sub) {
			n++
		}
	}
	return n
}
