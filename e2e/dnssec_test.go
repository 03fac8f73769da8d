//go:build e2e

package e2e

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/miekg/dns"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

const dnssecConfig = `
zones:
  - apex: sec.test
    ttl: 30
    soa: {minimum: 20}
    nameservers: [{name: ns1.sec.test, ipv4: [127.0.0.1]}]
    dnssec: {key_files: [%s]}
  - apex: ed.test
    ttl: 30
    nameservers: [{name: ns1.ed.test, ipv4: [127.0.0.1]}]
    dnssec: {key_files: [%s]}
  - apex: plain.test
    nameservers: [{name: ns1.plain.test, ipv4: [127.0.0.1]}]
clusters:
  - {name: east, region: us-east, continent: NA, country: US}
  - {name: west, region: us-west, continent: NA, country: US}
  - {name: eu, region: eu-west, continent: EU, country: DE}
geo:
  networks:
    - {cidr: 10.3.0.0/16, region: eu-west, country: DE, continent: EU}
services:
  - name: app.sec.test
    max_answers: 2
    endpoints:
      - {address: 192.0.2.1, cluster: east, weight: 500}
      - {address: 192.0.2.2, cluster: west, weight: 300}
      - {address: 192.0.2.3, cluster: eu, weight: 200}
  - name: www.sec.test
    strategy: geo
    geo: {default: [east]}
    endpoints:
      - {address: 203.0.113.1, cluster: east}
      - {address: 203.0.113.3, cluster: eu}
  - name: docs.sec.test
    endpoints: [{cname: app.sec.test, cluster: east}]
  - name: v6.sec.test
    endpoints: [{address: "2001:db8::6", cluster: east}]
  - name: app.ed.test
    endpoints:
      - {address: 192.0.2.11, cluster: east, weight: 700}
      - {address: 192.0.2.12, cluster: eu, weight: 300}
`

var wroteRe = regexp.MustCompile(`(?m)^wrote (\S+\.private)$`)

// keygen runs `meridian dnssec keygen` and returns the .private path.
func keygen(t *testing.T, dir, zone, alg string) string {
	t.Helper()
	out := run(t, meridianBin, "dnssec", "keygen", "--zone", zone, "--algorithm", alg, "--out", dir)
	m := wroteRe.FindStringSubmatch(out)
	require.NotNil(t, m, out)
	return m[1]
}

// dsOf runs `meridian dnssec ds` and returns the DS record on one line.
func dsOf(t *testing.T, zone, keyFile string) string {
	t.Helper()
	out := strings.TrimSpace(run(t, meridianBin, "dnssec", "ds", "--zone", zone, keyFile))
	require.Regexp(t, `^`+regexp.QuoteMeta(zone)+`\.\s+\d+\s+IN\s+DS\s+\d+ (13|15) 2 [0-9A-F]{64}$`, out)
	return strings.Join(strings.Fields(out), " ")
}

type unboundInstance struct {
	port int
	mu   sync.Mutex
	log  bytes.Buffer
}

func (u *unboundInstance) Write(p []byte) (int, error) {
	u.mu.Lock()
	defer u.mu.Unlock()
	return u.log.Write(p)
}

func (u *unboundInstance) logText() string {
	u.mu.Lock()
	defer u.mu.Unlock()
	return u.log.String()
}

// startUnbound runs a validating Unbound that sends the given zones to
// Meridian (stub zones) with the given trust anchors (zone-file lines).
func startUnbound(t *testing.T, meridianPort int, zones, anchors []string) *unboundInstance {
	t.Helper()
	bin, err := exec.LookPath("unbound")
	if err != nil {
		bin = "/usr/sbin/unbound"
		if _, err := os.Stat(bin); err != nil {
			t.Fatal("unbound not found: run `make e2e`, which installs it")
		}
	}
	dir := t.TempDir()
	u := &unboundInstance{port: freePort(t)}
	var b strings.Builder
	fmt.Fprintf(&b, `server:
  interface: 127.0.0.1@%[1]d
  port: %[1]d
  do-ip6: no
  access-control: 127.0.0.0/8 allow
  do-not-query-localhost: no
  username: ""
  chroot: ""
  directory: "%[2]s"
  pidfile: "%[2]s/unbound.pid"
  use-syslog: no
  logfile: ""
  verbosity: 1
  val-log-level: 2
  module-config: "validator iterator"
  harden-dnssec-stripped: yes
  qname-minimisation: no
  local-zone: "test." nodefault
`, u.port, dir)
	for _, a := range anchors {
		fmt.Fprintf(&b, "  trust-anchor: %q\n", a)
	}
	for _, z := range zones {
		fmt.Fprintf(&b, "stub-zone:\n  name: %q\n  stub-addr: 127.0.0.1@%d\n", z, meridianPort)
	}
	conf := filepath.Join(dir, "unbound.conf")
	require.NoError(t, os.WriteFile(conf, []byte(b.String()), 0o644))
	ctx, cancel := context.WithCancel(context.Background())
	cmd := exec.CommandContext(ctx, bin, "-d", "-c", conf)
	cmd.Stdout, cmd.Stderr = u, u
	require.NoError(t, cmd.Start())
	exited := make(chan struct{})
	go func() { cmd.Wait(); close(exited) }()
	t.Cleanup(func() {
		cancel()
		<-exited
		if t.Failed() {
			t.Logf("unbound.conf:\n%s\nunbound log:\n%s", b.String(), u.logText())
		}
	})
	deadline := time.Now().Add(10 * time.Second)
	for {
		c := &dns.Client{Timeout: 300 * time.Millisecond}
		m := new(dns.Msg)
		m.SetQuestion("version.server.", dns.TypeTXT)
		m.Question[0].Qclass = dns.ClassCHAOS
		if _, _, err := c.Exchange(m, fmt.Sprintf("127.0.0.1:%d", u.port)); err == nil {
			return u
		}
		select {
		case <-exited:
			t.Fatalf("unbound exited:\n%s", u.logText())
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("unbound not answering after 10s:\n%s", u.logText())
		}
		time.Sleep(100 * time.Millisecond)
	}
}

func (u *unboundInstance) dig(t *testing.T, args ...string) string {
	t.Helper()
	return run(t, "dig", append([]string{"@127.0.0.1", "-p", fmt.Sprint(u.port), "+time=5", "+tries=1", "+dnssec"}, args...)...)
}

func rrTypes(lines []string) []string {
	var out []string
	for _, l := range lines {
		if f := strings.Fields(l); len(f) >= 4 {
			out = append(out, f[3])
		}
	}
	return out
}

func TestDNSSECValidatedByUnbound(t *testing.T) {
	keys := t.TempDir()
	secKey := keygen(t, keys, "sec.test", "ecdsap256")
	edKey := keygen(t, keys, "ed.test", "ed25519")
	m := startMeridian(t, fmt.Sprintf(dnssecConfig, secKey, edKey))

	// The anchors: sec.test by the DS that `meridian dnssec ds` prints
	// for the parent, ed.test by its DNSKEY (the .key file's record).
	secDS := dsOf(t, "sec.test", secKey)
	edDNSKEY, err := os.ReadFile(strings.TrimSuffix(edKey, ".private") + ".key")
	require.NoError(t, err)
	var edAnchor string
	for _, l := range strings.Split(string(edDNSKEY), "\n") {
		if strings.Contains(l, "DNSKEY") {
			edAnchor = strings.Join(strings.Fields(l), " ")
		}
	}
	require.NotEmpty(t, edAnchor)

	t.Run("meridian answers without DO are unsigned, with DO signed", func(t *testing.T) {
		out := m.dig(t, "app.sec.test", "A")
		assert.NotContains(t, rrTypes(section(out, "ANSWER")), "RRSIG")
		out = m.dig(t, "nosuch.sec.test", "A")
		assert.Equal(t, "NXDOMAIN", status(out))

		out = m.dig(t, "+dnssec", "app.sec.test", "A")
		assert.Contains(t, rrTypes(section(out, "ANSWER")), "RRSIG")
		out = m.dig(t, "+dnssec", "nosuch.sec.test", "A")
		assert.Equal(t, "NOERROR", status(out), "compact denial: NXDOMAIN becomes NODATA")
		auth := section(out, "AUTHORITY")
		assert.ElementsMatch(t, []string{"SOA", "NSEC", "RRSIG", "RRSIG"}, rrTypes(auth))
		assert.Contains(t, strings.Join(auth, "\n"), `nosuch.sec.test. 20 IN NSEC \000.nosuch.sec.test. RRSIG NSEC`)
	})

	t.Run("every draw of a weighted answer carries a valid signature", func(t *testing.T) {
		c := &dns.Client{Timeout: 2 * time.Second}
		q := new(dns.Msg)
		q.SetQuestion("sec.test.", dns.TypeDNSKEY)
		q.SetEdns0(1232, true)
		r, _, err := c.Exchange(q, m.dns)
		require.NoError(t, err)
		var key *dns.DNSKEY
		for _, rr := range r.Answer {
			if k, ok := rr.(*dns.DNSKEY); ok {
				key = k
			}
		}
		require.NotNil(t, key)
		sets := map[string]bool{}
		for range 60 {
			q := new(dns.Msg)
			q.SetQuestion("app.sec.test.", dns.TypeA)
			q.SetEdns0(1232, true)
			r, _, err := c.Exchange(q, m.dns)
			require.NoError(t, err)
			var set []dns.RR
			var sig *dns.RRSIG
			for _, rr := range r.Answer {
				if s, ok := rr.(*dns.RRSIG); ok {
					sig = s
				} else {
					set = append(set, rr)
				}
			}
			require.NotNil(t, sig)
			require.NoError(t, sig.Verify(key, set))
			var ips []string
			for _, rr := range set {
				ips = append(ips, rr.(*dns.A).A.String())
			}
			sets[strings.Join(ips, ",")] = true
		}
		assert.GreaterOrEqual(t, len(sets), 3, "draws vary: %v", sets)
	})

	u := startUnbound(t, m.dnsPort, []string{"sec.test", "ed.test", "plain.test"}, []string{secDS, edAnchor})
	assertValidated(t, u)

	// Another key as the anchor: nothing validates.
	other := keygen(t, t.TempDir(), "sec.test", "ecdsap256")
	otherEd := keygen(t, t.TempDir(), "ed.test", "ed25519")
	bad := startUnbound(t, m.dnsPort, []string{"sec.test", "ed.test"}, []string{dsOf(t, "sec.test", other), dsOf(t, "ed.test", otherEd)})
	for _, q := range [][2]string{{"app.sec.test", "A"}, {"www.sec.test", "A"}, {"nosuch.sec.test", "A"}, {"v6.sec.test", "A"}, {"app.ed.test", "A"}} {
		t.Run("tampered anchor "+q[0]+" "+q[1], func(t *testing.T) {
			out := bad.dig(t, q[0], q[1])
			assert.Equal(t, "SERVFAIL", status(out), out)
			assert.NotContains(t, flags(out), "ad")
		})
	}
	assert.Contains(t, bad.logText(), "validation failure", "val-log-level 2 logs why")
}

// TestDNSSECThroughThePluginValidatedByUnbound: the CoreDNS plugin signs a
// zone with dnssec through the same pipeline and signer as serve, and
// Unbound validates its answers (AD).
func TestDNSSECThroughThePluginValidatedByUnbound(t *testing.T) {
	keys := t.TempDir()
	secKey := keygen(t, keys, "sec.test", "ecdsap256")
	edKey := keygen(t, keys, "ed.test", "ed25519")
	c := startCoreDNS(t, `
sec.test:%[1]d ed.test:%[1]d plain.test:%[1]d {
    meridian {
        config %[2]s
    }
}
`, fmt.Sprintf(dnssecConfig, secKey, edKey))
	assertValidated(t, startUnbound(t, c.port, []string{"sec.test", "ed.test", "plain.test"}, []string{dsOf(t, "sec.test", secKey), dsOf(t, "ed.test", edKey)}))
}

// assertValidated checks that Unbound validates dnssecConfig's answers
// (AD), positive and negative, in both signed zones, and not plain.test.
func assertValidated(t *testing.T, u *unboundInstance) {
	t.Helper()
	for _, c := range []struct {
		what, name, qtype string
		answer            bool
	}{
		{"weighted", "app.sec.test", "A", true},
		{"geo", "www.sec.test", "A", true},
		{"CNAME to a weighted name", "docs.sec.test", "A", true},
		{"DNSKEY", "sec.test", "DNSKEY", true},
		{"NXDOMAIN (compact denial)", "nosuch.sec.test", "A", false},
		{"NODATA", "v6.sec.test", "A", false},
		{"NODATA at the apex", "sec.test", "TXT", false},
		{"Ed25519 zone, weighted", "app.ed.test", "A", true},
		{"Ed25519 zone, NXDOMAIN", "nope.ed.test", "AAAA", false},
	} {
		t.Run("secure "+c.what, func(t *testing.T) {
			out := u.dig(t, c.name, c.qtype)
			assert.Equal(t, "NOERROR", status(out), out)
			assert.Contains(t, flags(out), "ad", out)
			if c.answer {
				assert.Contains(t, rrTypes(section(out, "ANSWER")), c.qtype, out)
				assert.Contains(t, rrTypes(section(out, "ANSWER")), "RRSIG", out)
			} else {
				assert.Empty(t, section(out, "ANSWER"), out)
			}
		})
	}
	t.Run("an unsigned zone is answered without AD", func(t *testing.T) {
		out := u.dig(t, "plain.test", "SOA")
		assert.Equal(t, "NOERROR", status(out))
		assert.NotContains(t, flags(out), "ad")
	})
}
