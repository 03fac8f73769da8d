//go:build e2e

package e2e

import (
	"crypto/rand"
	"fmt"
	"math/big"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/miekg/dns"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/meridian-gslb/meridian/providers/cloudflare/cffake"
	"github.com/meridian-gslb/meridian/providers/route53/route53fake"
)

// parentConf is a BIND primary of example.com, signed by BIND itself
// (dnssec-policy default: one ECDSA P-256 CSK; inline signing), that takes
// updates and transfers signed with the key meridian-update, and lets it
// change gslb.example.com and the names below it only.
const parentConf = bindPrimaryOptions + `zone "example.com" {
	type primary;
	file "%[1]s/example.com.db";
	key-directory "%[1]s";
	dnssec-policy default;
	inline-signing yes;
	update-policy { grant meridian-update subdomain gslb.example.com. ANY; };
	allow-transfer { key meridian-update; };
};
`

// parentZone has records Meridian does not own, one of them inside the
// subtree its key may change.
const parentZone = `$TTL 300
@ IN SOA ns1.example.com. hostmaster.example.com. 1 3600 600 86400 300
@ IN NS ns1.example.com.
ns1 IN A 127.0.0.1
www IN A 192.0.2.80
_acme-challenge.gslb IN TXT "not-meridians"
`

// delegationConfig serves gslb.example.com signed, from ADDR:53 (the glue
// of both nameservers), delegated from example.com by %[3]s.
const delegationConfig = `
zones:
  - apex: gslb.example.com
    nameservers:
%[2]s
    dnssec: {key_files: [%[1]s]}
    delegation: {provider: %[3]s, parent: example.com}
clusters:
  - {name: east, region: us-east}
  - {name: west, region: us-west}
services:
  - name: app.gslb.example.com
    endpoints:
      - {address: 192.0.2.1, cluster: east}
      - {address: 192.0.2.2, cluster: west}
providers:
  owner_id: e2e-deleg
  debounce: 100ms
  resync_interval: 10s
%[4]s
`

func nameservers(addr string, names ...string) string {
	var b strings.Builder
	for _, n := range names {
		fmt.Fprintf(&b, "      - {name: %s.gslb.example.com, ipv4: [%s]}\n", n, addr)
	}
	return strings.TrimRight(b.String(), "\n")
}

// loopbackOn53 picks a random loopback address whose port 53 is free for
// UDP and TCP: a resolver follows glue to port 53 only.
func loopbackOn53(t *testing.T) string {
	t.Helper()
	for range 50 {
		n, err := rand.Int(rand.Reader, big.NewInt(250*250))
		require.NoError(t, err)
		addr := fmt.Sprintf("127.53.%d.%d", n.Int64()/250+1, n.Int64()%250+1)
		tl, err := net.Listen("tcp", addr+":53")
		if err != nil {
			continue
		}
		u, err := net.ListenPacket("udp", addr+":53")
		tl.Close()
		if err != nil {
			continue
		}
		u.Close()
		return addr
	}
	t.Skip("no loopback address with a free port 53 (the test binds port 53: it needs root or CAP_NET_BIND_SERVICE)")
	return ""
}

// axfr transfers example.com from the primary with the key and returns its
// records (DNSSEC records left out) as "name TYPE rdata" lines, sorted.
func axfr(port int, secret string) ([]string, error) {
	tr := &dns.Transfer{TsigSecret: map[string]string{"meridian-update.": secret}}
	q := new(dns.Msg)
	q.SetAxfr("example.com.")
	q.SetTsig("meridian-update.", dns.HmacSHA256, 300, time.Now().Unix())
	ch, err := tr.In(q, fmt.Sprintf("127.0.0.1:%d", port))
	if err != nil {
		return nil, err
	}
	var out []string
	var ferr error
	for env := range ch {
		if env.Error != nil {
			ferr = env.Error
			continue
		}
		for _, rr := range env.RR {
			switch rr.Header().Rrtype {
			case dns.TypeRRSIG, dns.TypeNSEC, dns.TypeNSEC3, dns.TypeNSEC3PARAM, dns.TypeSOA, dns.TypeDNSKEY, 65534:
				continue
			}
			data := strings.TrimSpace(strings.TrimPrefix(rr.String(), rr.Header().String()))
			if ds, ok := rr.(*dns.DS); ok {
				data = fmt.Sprintf("%d %d %d %s", ds.KeyTag, ds.Algorithm, ds.DigestType, strings.ToUpper(ds.Digest))
			}
			out = append(out, fmt.Sprintf("%s %s %s", rr.Header().Name, dns.TypeToString[rr.Header().Rrtype], data))
		}
	}
	slices.Sort(out)
	return slices.Compact(out), ferr
}

// parentRecords are the records of the parent at and below name, or the
// transfer's error.
func parentRecords(port int, secret, name string) ([]string, error) {
	all, err := axfr(port, secret)
	return under(all, name), err
}

func under(lines []string, suffix string) []string {
	var out []string
	for _, l := range lines {
		if name, _, _ := strings.Cut(l, " "); strings.HasSuffix(name, suffix) {
			out = append(out, l)
		}
	}
	return out
}

// TestTheZoneIsDelegatedForYou: Meridian writes the delegation of its
// signed zone — NS, glue, DS — into a BIND parent by RFC 2136 with TSIG; a
// validating Unbound that knows only BIND and BIND's key resolves through
// it with the AD bit; records Meridian does not own stay; a removed
// nameserver takes its glue; the same delegation lands in Route 53 and
// Cloudflare (the fakes) through `meridian push`.
func TestTheZoneIsDelegatedForYou(t *testing.T) {
	addr := loopbackOn53(t)
	dir := t.TempDir()
	key := keygen(t, dir, "gslb.example.com", "ecdsap256")
	ds := dsOf(t, "gslb.example.com", key)
	dsRdata := strings.Join(strings.Fields(ds)[4:], " ")

	// The parent: BIND, signed, taking updates from the key.
	secret, keyFile := updateKey(t, dir)
	bind, bindPort := startBindPrimary(t, dir, parentConf, secret, map[string]string{"example.com.db": parentZone})
	var parentKey string
	require.Eventually(t, func() bool {
		for _, l := range bind.query("example.com", "DNSKEY") {
			if strings.HasPrefix(l, "257 ") {
				parentKey = "example.com. DNSKEY " + l
				return true
			}
		}
		return false
	}, 20*time.Second, 100*time.Millisecond, "BIND signs example.com")
	foreign := []string{"www.example.com. A 192.0.2.80"}
	foreignBelow := []string{`_acme-challenge.gslb.example.com. TXT "not-meridians"`}

	// Meridian: gslb.example.com signed, delegated by RFC 2136.
	rfc := fmt.Sprintf("  rfc2136:\n    - {zone: example.com, server: \"127.0.0.1:%d\", tsig_key_file: %s}", bindPort, keyFile)
	cfg := func(ns ...string) string {
		return fmt.Sprintf(delegationConfig, key, nameservers(addr, ns...), "rfc2136", rfc)
	}
	m := startMeridian(t, cfg("ns1", "ns2"), "--dns-listen", addr+":53")
	want := []string{
		"_meridian-owner.gslb.example.com. TXT \"heritage=meridian,owner=e2e-deleg,types=DS+NS\"",
		"_meridian-owner.ns1.gslb.example.com. TXT \"heritage=meridian,owner=e2e-deleg,types=A\"",
		"_meridian-owner.ns2.gslb.example.com. TXT \"heritage=meridian,owner=e2e-deleg,types=A\"",
		foreignBelow[0],
		"gslb.example.com. DS " + dsRdata,
		"gslb.example.com. NS ns1.gslb.example.com.",
		"gslb.example.com. NS ns2.gslb.example.com.",
		"ns1.gslb.example.com. A " + addr,
		"ns2.gslb.example.com. A " + addr,
	}
	slices.Sort(want)
	start := time.Now()
	var got []string
	var xerr error
	assert.Eventually(t, func() bool {
		got, xerr = parentRecords(bindPort, secret, "gslb.example.com.")
		return xerr == nil && slices.Equal(got, want)
	}, 20*time.Second, 100*time.Millisecond, "BIND holds NS, glue and DS")
	require.NoError(t, xerr)
	require.Equal(t, want, got)
	t.Logf("FIGURE delegation e2e: Meridian start → NS + glue + DS in BIND %s", time.Since(start).Round(10*time.Millisecond))
	www, err := parentRecords(bindPort, secret, "www.example.com.")
	require.NoError(t, err)
	assert.Equal(t, foreign, www, "records Meridian does not own stay")

	// The CDS at Meridian's apex names the key the DS names.
	out := m.dig(t, "+dnssec", "gslb.example.com", "CDS")
	var cds []string
	for _, l := range section(out, "ANSWER") {
		if f := strings.Fields(l); len(f) >= 8 && f[3] == "CDS" { // dig splits the digest
			cds = append(cds, strings.Join(f[4:7], " ")+" "+strings.Join(f[7:], ""))
		}
	}
	assert.Equal(t, []string{dsRdata}, cds, "CDS = DS")
	assert.Contains(t, rrTypes(section(out, "ANSWER")), "RRSIG", "the CDS is signed")

	// A validating resolver that knows only BIND, and BIND's key.
	u := startUnbound(t, bindPort, []string{"example.com"}, []string{parentKey})
	out = u.dig(t, "app.gslb.example.com", "A")
	assert.Equal(t, "NOERROR", status(out), out)
	assert.Contains(t, flags(out), "ad", "validated through BIND's DS: %s", out)
	var ips []string
	for _, l := range section(out, "ANSWER") {
		if f := strings.Fields(l); len(f) == 5 && f[3] == "A" {
			ips = append(ips, f[4])
		}
	}
	require.NotEmpty(t, ips, out)
	assert.Subset(t, []string{"192.0.2.1", "192.0.2.2"}, ips, "the pick (and, the sites being equal, the other as fallback)")

	// A site goes: its nameserver's NS and glue go, nothing else changes.
	writeAtomic(t, m.config, cfg("ns1"))
	want = []string{
		"_meridian-owner.gslb.example.com. TXT \"heritage=meridian,owner=e2e-deleg,types=DS+NS\"",
		"_meridian-owner.ns1.gslb.example.com. TXT \"heritage=meridian,owner=e2e-deleg,types=A\"",
		foreignBelow[0],
		"gslb.example.com. DS " + dsRdata,
		"gslb.example.com. NS ns1.gslb.example.com.",
		"ns1.gslb.example.com. A " + addr,
	}
	slices.Sort(want)
	assert.Eventually(t, func() bool {
		got, xerr = parentRecords(bindPort, secret, "gslb.example.com.")
		return xerr == nil && slices.Equal(got, want)
	}, 20*time.Second, 100*time.Millisecond, "ns2 and its glue leave BIND")
	require.NoError(t, xerr)
	require.Equal(t, want, got)
	www, err = parentRecords(bindPort, secret, "www.example.com.")
	require.NoError(t, err)
	assert.Equal(t, foreign, www)
	metrics := m.metrics(t)
	assert.Contains(t, metrics, `meridian_provider_rfc2136_responses_total{operation="update",rcode="NOERROR",zone="example.com."}`)
	assert.Contains(t, metrics, `meridian_provider_syncs_total{provider="rfc2136",result="success",zone="example.com."}`)
	assert.NotContains(t, m.log(), secret, "the TSIG secret is never logged")
	m.stop(t)

	// The same delegation through Route 53 and Cloudflare (`meridian push`).
	t.Setenv("AWS_ACCESS_KEY_ID", "AKIDE2E")
	t.Setenv("AWS_SECRET_ACCESS_KEY", "e2e-secret")
	t.Setenv("AWS_EC2_METADATA_DISABLED", "true")
	const token = "e2e-cloudflare-token"
	t.Setenv("CLOUDFLARE_API_TOKEN", token)
	r53 := route53fake.New(route53fake.Options{})
	defer r53.Close()
	zid := r53.AddZone("example.com")
	cf := cffake.New(token)
	defer cf.Close()
	cfz := cf.AddZone("example.com")
	for _, tc := range []struct {
		kind, entry string
		records     func() []string
	}{
		{"route53", fmt.Sprintf("  route53:\n    - {zone: example.com, mode: delegate, endpoint: %q, sync_timeout: 5s}", r53.URL()), func() []string {
			var out []string
			for _, s := range r53.Records(zid) {
				for _, v := range s.Values {
					out = append(out, s.Name+" "+s.Type+" "+v)
				}
			}
			return under(out, "gslb.example.com.")
		}},
		{"cloudflare", fmt.Sprintf("  cloudflare:\n    - {zone: example.com, mode: delegate, endpoint: %q}", cf.URL), func() []string {
			var out []string
			for _, r := range cf.Records(cfz) {
				out = append(out, r.Name+". "+r.Type+" "+r.Content)
			}
			return under(out, "gslb.example.com.")
		}},
	} {
		conf := filepath.Join(dir, tc.kind+".yaml")
		require.NoError(t, os.WriteFile(conf, []byte(fmt.Sprintf(delegationConfig, key, nameservers(addr, "ns1", "ns2"), tc.kind, tc.entry)), 0o644))
		out, err := exec.Command(meridianBin, "push", "--config", conf).CombinedOutput()
		require.NoError(t, err, "%s", out)
		recs := tc.records()
		assert.Contains(t, recs, "gslb.example.com. DS "+dsRdata, "%s: the DS:\n%s", tc.kind, strings.Join(recs, "\n"))
		for _, n := range []string{"ns1", "ns2"} {
			assert.Contains(t, recs, fmt.Sprintf("gslb.example.com. NS %s.gslb.example.com%s", n, map[string]string{"route53": ".", "cloudflare": ""}[tc.kind]), tc.kind)
			assert.Contains(t, recs, fmt.Sprintf("%s.gslb.example.com. A %s", n, addr), tc.kind)
		}
		out, err = exec.Command(meridianBin, "push", "--config", conf, "--dry-run").CombinedOutput()
		require.NoError(t, err, "%s", out)
		assert.Contains(t, string(out), tc.kind+" example.com.: 0 create, 0 update, 0 delete, 0 conflict", "%s reads back what it wrote", tc.kind)
	}
}
