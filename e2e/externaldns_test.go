//go:build e2e

package e2e

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/meridian-gslb/meridian/e2e/kubelab"
)

// extdnsConfig serves gslb.example.com with the ExternalDNS webhook on
// %[1]s over HTTPS (certificate %[4]s, key %[5]s) and one client (token
// file) per cluster. The Services' load-balancer addresses are 127.0.0.x,
// which tenant_targets refuses unless allow_loopback is set.
const extdnsConfig = `
server:
  dns: {rrl: {responses_per_second: 1000000}}
  externaldns:
    listen: "%[1]s"
    tls: {cert_file: "%[4]s", key_file: "%[5]s"}
    clients:
      - {cluster: east, token_file: "%[2]s"}
      - {cluster: west, token_file: "%[3]s"}
zones:
  - apex: gslb.example.com
    nameservers: [{name: ns1.gslb.example.com, ipv4: [127.0.0.1]}]
clusters:
  - {name: east, region: us-east}
  - {name: west, region: us-west}
tenant_targets: {allow_loopback: true}
`

// externalDNSBin is the real ExternalDNS that make e2e builds
// (scripts/peer-bins.sh); the test skips without it, except in CI.
func externalDNSBin(t *testing.T) string {
	t.Helper()
	bin := os.Getenv("EXTERNALDNS_BIN")
	if bin == "" {
		if os.Getenv("CI") != "" {
			t.Fatal("EXTERNALDNS_BIN is not set in CI: make e2e sets it from scripts/peer-bins.sh")
		}
		t.Skip("EXTERNALDNS_BIN is not set: run `make e2e`, or `make peer-bins` and set EXTERNALDNS_BIN to the external-dns in the dir it prints")
	}
	st, err := os.Stat(bin)
	require.NoError(t, err, "EXTERNALDNS_BIN=%s: run `make peer-bins`", bin)
	require.False(t, st.IsDir(), "EXTERNALDNS_BIN=%s is a directory", bin)
	return bin
}

// externalDNS is one cluster's ExternalDNS instance.
type externalDNS struct {
	bin, cluster, kubeconfig string
	url                      string // the webhook URL with the cluster's token in its userinfo
	ca                       string // the CA file of the webhook's certificate (SSL_CERT_FILE)
}

// sync runs one ExternalDNS sync (--once) and returns its log. The webhook
// URL (with the token) goes in through the environment, as a Secret would
// give it, not on the command line.
func (x externalDNS) sync(t *testing.T) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, x.bin, "--provider=webhook", "--source=service", "--registry=txt", "--policy=sync",
		"--txt-owner-id="+x.cluster, "--domain-filter=gslb.example.com", "--kubeconfig="+x.kubeconfig,
		"--once", fmt.Sprintf("--metrics-address=127.0.0.1:%d", freePort(t)))
	cmd.Env = append(os.Environ(), "EXTERNAL_DNS_WEBHOOK_PROVIDER_URL="+x.url, "SSL_CERT_FILE="+x.ca)
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, "external-dns --once for %s:\n%s", x.cluster, out)
	require.NotRegexp(t, `level=(error|fatal)`, string(out), "external-dns of %s logged an error", x.cluster)
	return string(out)
}

// webhookRecords is GET /records of the webhook as cluster (token tok),
// over HTTPS trusting the CA file ca.
func webhookRecords(t *testing.T, addr, ca, cluster, tok string) []map[string]any {
	t.Helper()
	req, err := http.NewRequest("GET", "https://"+addr+"/records", nil)
	require.NoError(t, err)
	req.SetBasicAuth(cluster, tok)
	resp, err := trusting(t, ca).Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	require.Equal(t, 200, resp.StatusCode)
	var out []map[string]any
	require.NoError(t, json.NewDecoder(resp.Body).Decode(&out))
	return out
}

// trusting is an HTTP client that trusts only the certificates of the CA
// file ca.
func trusting(t *testing.T, ca string) *http.Client {
	t.Helper()
	pem, err := os.ReadFile(ca)
	require.NoError(t, err)
	pool := x509.NewCertPool()
	require.True(t, pool.AppendCertsFromPEM(pem), "%s holds a PEM certificate", ca)
	return &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}}}
}

// changesTotal sums meridian_externaldns_changes_total over its series.
func changesTotal(t *testing.T, m *instance) float64 {
	t.Helper()
	sum := 0.0
	for _, l := range regexp.MustCompile(`(?m)^meridian_externaldns_changes_total\{[^}]*\} .*$`).FindAllString(m.metrics(t), -1) {
		var v float64
		_, err := fmt.Sscan(l[strings.LastIndexByte(l, ' ')+1:], &v)
		require.NoError(t, err)
		sum += v
	}
	return sum
}

// waitAnswers waits (at most 10 s) until app's answers over 50 queries are
// exactly want.
func waitAnswers(t *testing.T, m *instance, name string, want ...string) {
	t.Helper()
	var got map[string]float64
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
		got = digShares(t, m, name, 50)
		if len(got) == len(want) {
			ok := true
			for _, w := range want {
				ok = ok && got[w] > 0
			}
			if ok {
				return
			}
		}
	}
	t.Fatalf("answers of %s: %v, want exactly %v", name, got, want)
}

// TestExternalDNSWebhookMergesTwoClusters: the real ExternalDNS, one per
// real kube-apiserver, each with its own owner id and token, writes
// app.gslb.example.com through Meridian's webhook: Meridian answers with
// both clusters' targets 70/30; a second sync changes nothing; deleting one
// cluster's Service removes only its targets.
func TestExternalDNSWebhookMergesTwoClusters(t *testing.T) {
	bin := externalDNSBin(t)
	start := time.Now()
	lab := kubelab.Start(t, kubelab.Bins(t), "east", "west")
	east, west := lab.Member("east"), lab.Member("west")
	dir := t.TempDir()
	tokens := map[string]string{"east": "east-0123456789abcdef0123456789abcdef", "west": "west-0123456789abcdef0123456789abcdef"}
	for c, tok := range tokens {
		require.NoError(t, os.WriteFile(filepath.Join(dir, c+".token"), []byte(tok+"\n"), 0o600))
	}
	hook := fmt.Sprintf("127.0.0.1:%d", freePort(t))
	ca := writeCert(t, dir, "webhook")
	m := startMeridian(t, fmt.Sprintf(extdnsConfig, hook, filepath.Join(dir, "east.token"), filepath.Join(dir, "west.token"),
		filepath.Join(dir, "cert.pem"), filepath.Join(dir, "key.pem")))

	const app = "app.gslb.example.com"
	ips := map[string]string{"east": "127.0.0.81", "west": "127.0.0.82"}
	xs := map[string]externalDNS{}
	for _, mem := range []*kubelab.Member{east, west} {
		weight := map[string]string{"east": "70", "west": "30"}[mem.Name]
		lbService(t, mem, "shop", "app", map[string]string{
			"external-dns.kubernetes.io/hostname":                app,
			"external-dns.kubernetes.io/webhook-meridian-weight": weight,
		}, ips[mem.Name])
		xs[mem.Name] = externalDNS{bin: bin, cluster: mem.Name, kubeconfig: mem.Kubeconfig(t, kubelab.AdminUser),
			url: fmt.Sprintf("https://%s:%s@%s", mem.Name, tokens[mem.Name], hook), ca: ca}
	}
	t.Logf("two kube-apiservers and meridian up in %s", time.Since(start).Round(time.Millisecond))

	syncStart := time.Now()
	xs["east"].sync(t)
	xs["west"].sync(t)
	waitAnswers(t, m, app, ips["east"], ips["west"])
	t.Logf("first sync of both clusters served in %s", time.Since(syncStart).Round(time.Millisecond))
	sh := digShares(t, m, app, 10000)
	t.Logf("shares over 10000 queries: east %.2f%%, west %.2f%%", sh[ips["east"]], sh[ips["west"]])
	assert.InDelta(t, 70, sh[ips["east"]], 2)
	assert.InDelta(t, 30, sh[ips["west"]], 2)

	// Each ExternalDNS owns its records: west reads back none of east's.
	for c, tok := range tokens {
		recs := webhookRecords(t, hook, ca, c, tok)
		var owned []string
		for _, r := range recs {
			owned = append(owned, fmt.Sprint(r["recordType"], " ", r["targets"]))
		}
		assert.Contains(t, owned, fmt.Sprintf("A [%s]", ips[c]), "%s reads its own A record", c)
		assert.NotContains(t, owned, fmt.Sprintf("A [%s]", ips[map[string]string{"east": "west", "west": "east"}[c]]), "%s reads none of the other's", c)
		assert.Contains(t, fmt.Sprint(recs), "external-dns/owner="+c, "%s reads its ownership TXT", c)
	}

	// A second sync of each plans nothing and sends no change.
	before := changesTotal(t, m)
	for _, c := range []string{"east", "west"} {
		assert.Contains(t, xs[c].sync(t), "All records are already up to date", "the second sync of %s", c)
	}
	assert.Equal(t, before, changesTotal(t, m), "the second syncs sent no change")

	// Deleting east's Service removes east's target only.
	require.NoError(t, east.Client(t).CoreV1().Services("shop").Delete(context.Background(), "app", metav1.DeleteOptions{}))
	xs["east"].sync(t)
	waitAnswers(t, m, app, ips["west"])
	assert.Equal(t, map[string]float64{ips["west"]: 100}, digShares(t, m, app, 200))
	assert.Len(t, webhookRecords(t, hook, ca, "east", tokens["east"]), 0, "east's records and its ownership TXT are gone")
	assert.Contains(t, fmt.Sprint(webhookRecords(t, hook, ca, "west", tokens["west"])), ips["west"], "west's record stays")
	t.Logf("wall time %s", time.Since(start).Round(time.Millisecond))
}
