//go:build e2e

package e2e

import (
	"fmt"
	"os"
	"os/exec"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

const e2eConfig = `
zones:
  - apex: gslb.test
    ttl: 30
    soa: {minimum: 20, ttl: 3600}
    nameservers:
      - {name: ns1.gslb.test, ipv4: [192.0.2.53], ipv6: ["2001:db8::53"]}
      - {name: ns.provider.example}
  - apex: big.test
    nameservers:
%s
clusters:
  - {name: east, region: us-east, continent: NA, country: US}
  - {name: west, region: us-west, continent: NA, country: US}
  - {name: eu, region: eu-west, continent: EU, country: DE}
geo:
  networks:
    - {cidr: 10.1.0.0/16, region: us-east}
    - {cidr: 10.3.0.0/16, region: eu-west, country: DE, continent: EU}
services:
  - name: app.gslb.test
    endpoints:
      - {address: 192.0.2.1, cluster: east, weight: 700}
      - {address: 192.0.2.2, cluster: eu, weight: 300}
      - {address: "2001:db8::1", cluster: east}
  - name: api.gslb.test
    strategy: failover
    failover: {order: [east, west]}
    endpoints:
      - {address: 198.51.100.1, cluster: east, state: down}
      - {address: 198.51.100.2, cluster: west}
  - name: www.gslb.test
    strategy: geo
    geo: {default: [east]}
    endpoints:
      - {address: 203.0.113.1, cluster: east}
      - {address: 203.0.113.3, cluster: eu}
  - name: docs.gslb.test
    endpoints: [{cname: app.gslb.test, cluster: east}]
  - name: svc.deep.gslb.test
    endpoints: [{address: 192.0.2.9, cluster: west}]
  - name: dead.gslb.test
    endpoints:
      - {address: 192.0.2.81, cluster: east, state: down}
      - {address: 192.0.2.82, cluster: west, state: down}
`

func bigNameservers() string {
	var b strings.Builder
	for i := range 40 {
		fmt.Fprintf(&b, "      - {name: nameserver-number-%02d.big.test, ipv4: [192.0.2.%d], ipv6: [\"2001:db8::%d\"]}\n", i, 100+i, 100+i)
	}
	return b.String()
}

func configText() string { return fmt.Sprintf(e2eConfig, bigNameservers()) }

var (
	statusRe = regexp.MustCompile(`status: (\w+)`)
	flagsRe  = regexp.MustCompile(`;; flags: ([a-z ]+);`)
)

func status(out string) string {
	m := statusRe.FindStringSubmatch(out)
	if m == nil {
		return ""
	}
	return m[1]
}

func flags(out string) []string {
	m := flagsRe.FindStringSubmatch(out)
	if m == nil {
		return nil
	}
	return strings.Fields(m[1])
}

// section returns the lines of a dig section (ANSWER, AUTHORITY, ADDITIONAL).
func section(out, name string) []string {
	var lines []string
	in := false
	for _, l := range strings.Split(out, "\n") {
		switch {
		case strings.HasPrefix(l, ";; "+name+" SECTION:"):
			in = true
		case in && (strings.TrimSpace(l) == "" || strings.HasPrefix(l, ";;")):
			in = false
		case in:
			lines = append(lines, strings.Join(strings.Fields(l), " "))
		}
	}
	return lines
}

func TestDigProtocolBehaviour(t *testing.T) {
	m := startMeridian(t, configText())
	tests := []struct {
		name  string
		args  []string
		check func(t *testing.T, out string)
	}{
		{"a weighted name gets one authoritative answer from the weighted set", []string{"app.gslb.test", "A"}, func(t *testing.T, out string) {
			assert.Equal(t, "NOERROR", status(out))
			assert.Contains(t, flags(out), "aa")
			ans := section(out, "ANSWER")
			require.Len(t, ans, 1)
			assert.Regexp(t, `^app\.gslb\.test\. 30 IN A 192\.0\.2\.[12]$`, ans[0])
		}},
		{"the apex SOA is served", []string{"gslb.test", "SOA"}, func(t *testing.T, out string) {
			ans := section(out, "ANSWER")
			require.Len(t, ans, 1)
			assert.Regexp(t, `^gslb\.test\. 3600 IN SOA ns1\.gslb\.test\. hostmaster\.gslb\.test\. \d+ 3600 600 1209600 20$`, ans[0])
		}},
		{"the apex NS comes with glue for in-zone nameservers", []string{"gslb.test", "NS"}, func(t *testing.T, out string) {
			assert.ElementsMatch(t, []string{"gslb.test. 3600 IN NS ns1.gslb.test.", "gslb.test. 3600 IN NS ns.provider.example."}, section(out, "ANSWER"))
			assert.ElementsMatch(t, []string{"ns1.gslb.test. 3600 IN A 192.0.2.53", "ns1.gslb.test. 3600 IN AAAA 2001:db8::53"}, section(out, "ADDITIONAL"))
		}},
		{"a missing name is NXDOMAIN with the SOA at the negative TTL", []string{"nope.gslb.test", "A"}, func(t *testing.T, out string) {
			assert.Equal(t, "NXDOMAIN", status(out))
			assert.Contains(t, flags(out), "aa")
			auth := section(out, "AUTHORITY")
			require.Len(t, auth, 1)
			assert.True(t, strings.HasPrefix(auth[0], "gslb.test. 20 IN SOA"), auth[0])
		}},
		{"an existing name with another type is NODATA", []string{"app.gslb.test", "MX"}, func(t *testing.T, out string) {
			assert.Equal(t, "NOERROR", status(out))
			assert.Empty(t, section(out, "ANSWER"))
			require.Len(t, section(out, "AUTHORITY"), 1)
		}},
		{"an empty non-terminal is NODATA", []string{"deep.gslb.test", "A"}, func(t *testing.T, out string) {
			assert.Equal(t, "NOERROR", status(out))
			assert.Empty(t, section(out, "ANSWER"))
			require.Len(t, section(out, "AUTHORITY"), 1)
		}},
		{"a name outside every zone is REFUSED and recursion is not offered", []string{"example.com", "A", "+rec"}, func(t *testing.T, out string) {
			assert.Equal(t, "REFUSED", status(out))
			assert.Contains(t, flags(out), "rd")
			assert.NotContains(t, flags(out), "ra")
			assert.NotContains(t, flags(out), "aa")
		}},
		{"the query's case is echoed", []string{"ApP.GsLb.TeSt", "A"}, func(t *testing.T, out string) {
			assert.Contains(t, out, ";ApP.GsLb.TeSt.\t")
			ans := section(out, "ANSWER")
			require.Len(t, ans, 1)
			assert.True(t, strings.HasPrefix(ans[0], "ApP.GsLb.TeSt. "), ans[0])
		}},
		{"EDNS0 is echoed with a 1232-byte payload", []string{"app.gslb.test", "A", "+edns=0", "+bufsize=4096"}, func(t *testing.T, out string) {
			assert.Contains(t, out, "EDNS: version: 0, flags:; udp: 1232")
		}},
		{"EDNS version 1 gets BADVERS", []string{"app.gslb.test", "A", "+edns=1", "+noednsnegotiation"}, func(t *testing.T, out string) {
			assert.Equal(t, "BADVERS", status(out))
			assert.Contains(t, out, "EDNS: version: 0")
		}},
		{"an unknown EDNS option is ignored", []string{"app.gslb.test", "A", "+ednsopt=65001:abcd"}, func(t *testing.T, out string) {
			assert.Equal(t, "NOERROR", status(out))
			assert.Len(t, section(out, "ANSWER"), 1)
		}},
		{"ECS on a geo name is answered for the subnet with the matched scope", []string{"www.gslb.test", "A", "+subnet=10.3.1.0/24"}, func(t *testing.T, out string) {
			assert.Contains(t, out, "CLIENT-SUBNET: 10.3.1.0/24/16")
			assert.Equal(t, []string{"www.gslb.test. 30 IN A 203.0.113.3"}, section(out, "ANSWER"))
		}},
		{"ECS on a non-geo name gets scope 0", []string{"app.gslb.test", "A", "+subnet=10.3.1.0/24"}, func(t *testing.T, out string) {
			assert.Contains(t, out, "CLIENT-SUBNET: 10.3.1.0/24/0")
		}},
		{"a geo name without ECS places the source address", []string{"www.gslb.test", "A"}, func(t *testing.T, out string) {
			assert.Equal(t, []string{"www.gslb.test. 30 IN A 203.0.113.1"}, section(out, "ANSWER"), "127.0.0.1 is unplaced: default cluster")
		}},
		{"a malformed ECS option (non-zero scope in a query) gets FORMERR", []string{"www.gslb.test", "A", "+ednsopt=8:0001180c0a0301"}, func(t *testing.T, out string) {
			assert.Equal(t, "FORMERR", status(out))
		}},
		{"ANY gets a single HINFO per RFC 8482", []string{"app.gslb.test", "ANY"}, func(t *testing.T, out string) {
			ans := section(out, "ANSWER")
			require.Len(t, ans, 1)
			assert.Contains(t, ans[0], `IN HINFO "RFC8482" ""`)
		}},
		{"a CNAME service returns the CNAME and the in-zone target's records", []string{"docs.gslb.test", "A"}, func(t *testing.T, out string) {
			ans := section(out, "ANSWER")
			require.Len(t, ans, 2)
			assert.Equal(t, "docs.gslb.test. 30 IN CNAME app.gslb.test.", ans[0])
			assert.Regexp(t, `^app\.gslb\.test\. 30 IN A 192\.0\.2\.[12]$`, ans[1])
		}},
		{"failover answers from the next cluster when the first is down", []string{"api.gslb.test", "A"}, func(t *testing.T, out string) {
			assert.Equal(t, []string{"api.gslb.test. 30 IN A 198.51.100.2"}, section(out, "ANSWER"))
		}},
		{"a name whose endpoints are all forced down answers NODATA: fail-open never answers an operator's down", []string{"dead.gslb.test", "A"}, func(t *testing.T, out string) {
			assert.Equal(t, "NOERROR", status(out))
			assert.Empty(t, section(out, "ANSWER"))
			require.Len(t, section(out, "AUTHORITY"), 1, "the SOA for the negative answer")
		}},
		{"an unknown opcode gets NOTIMP", []string{"app.gslb.test", "A", "+opcode=status"}, func(t *testing.T, out string) {
			assert.Equal(t, "NOTIMP", status(out))
		}},
		{"a large answer is truncated over UDP without EDNS", []string{"big.test", "NS", "+noedns", "+ignore"}, func(t *testing.T, out string) {
			assert.Contains(t, flags(out), "tc")
		}},
		{"the same answer is complete over TCP", []string{"big.test", "NS", "+tcp"}, func(t *testing.T, out string) {
			assert.NotContains(t, flags(out), "tc")
			assert.Len(t, section(out, "ANSWER"), 40)
			assert.Len(t, section(out, "ADDITIONAL"), 80, "A and AAAA glue for 40 nameservers")
		}},
		{"dig retries a truncated answer over TCP by itself", []string{"big.test", "NS", "+noedns"}, func(t *testing.T, out string) {
			assert.Contains(t, out, "Truncated, retrying in TCP mode")
			assert.Len(t, section(out, "ANSWER"), 40)
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			tc.check(t, m.dig(t, tc.args...))
		})
	}
}

func TestKdigAgrees(t *testing.T) {
	m := startMeridian(t, configText())
	tests := []struct {
		name  string
		args  []string
		check func(t *testing.T, out string)
	}{
		{"kdig gets an authoritative weighted answer", []string{"app.gslb.test", "A"}, func(t *testing.T, out string) {
			assert.Contains(t, out, "status: NOERROR")
			assert.Regexp(t, `;; Flags: qr aa( rd)?;`, out)
			assert.NotContains(t, out, " ra;")
			assert.Regexp(t, `app\.gslb\.test\.\s+30\s+IN\s+A\s+192\.0\.2\.[12]`, out)
		}},
		{"kdig over TCP gets the same", []string{"app.gslb.test", "AAAA", "+tcp"}, func(t *testing.T, out string) {
			assert.Regexp(t, `app\.gslb\.test\.\s+30\s+IN\s+AAAA\s+2001:db8::1`, out)
			assert.Contains(t, out, "(TCP)")
		}},
		{"kdig sees NXDOMAIN with the SOA", []string{"nope.gslb.test", "A"}, func(t *testing.T, out string) {
			assert.Contains(t, out, "status: NXDOMAIN")
			assert.Regexp(t, `gslb\.test\.\s+20\s+IN\s+SOA`, out)
		}},
		{"kdig's ECS gets the scope back", []string{"www.gslb.test", "A", "+subnet=10.3.1.0/24"}, func(t *testing.T, out string) {
			assert.Regexp(t, `CLIENT-SUBNET: 10\.3\.1\.0/24/16`, out)
			assert.Regexp(t, `203\.0\.113\.3`, out)
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			tc.check(t, m.kdig(t, tc.args...))
		})
	}
}

func TestCheckConfigNamesTheLine(t *testing.T) {
	dir := t.TempDir()
	good := dir + "/good.yaml"
	bad := dir + "/bad.yaml"
	require.NoError(t, os.WriteFile(good, []byte(configText()), 0o644))
	require.NoError(t, os.WriteFile(bad, []byte(strings.Replace(configText(), "weight: 700", "weight: 7000", 1)), 0o644))
	out := run(t, meridianBin, "check-config", good)
	assert.Contains(t, out, "ok (2 zones, 3 clusters, 6 services)")
	cmd := exec.Command(meridianBin, "check-config", bad)
	outb, err := cmd.CombinedOutput()
	require.Error(t, err)
	assert.Regexp(t, `bad\.yaml:\d+:\d+: services\[0\]\.endpoints\[0\]\.weight: 7000 is out of range \(allowed 0\.\.1000\)`, string(outb))
}

func TestDemoConfigIsEmbedded(t *testing.T) {
	// `meridian serve` without --config serves deploy/examples/demo.yaml.
	port, httpPort := freePort(t), freePort(t)
	cmd := exec.Command(meridianBin, "serve", "--dns-listen", fmt.Sprintf("127.0.0.1:%d", port), "--http-listen", fmt.Sprintf("127.0.0.1:%d", httpPort))
	require.NoError(t, cmd.Start())
	defer func() { cmd.Process.Kill(); cmd.Wait() }()
	var out string
	for range 50 {
		out = runNoFail("dig", "@127.0.0.1", "-p", fmt.Sprint(port), "+time=1", "+tries=1", "app.demo.meridian.test", "A")
		if strings.Contains(out, "status: NOERROR") {
			break
		}
	}
	assert.Regexp(t, `app\.demo\.meridian\.test\.\s+30\s+IN\s+A\s+127\.0\.0\.1[12]`, out)
}
