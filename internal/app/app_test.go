package app

import (
	"context"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/miekg/dns"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

const runConfig = `
server:
  state_dir: %s
  log: {level: warn}
zones:
  - apex: gslb.test
    nameservers: [{name: ns1.gslb.test, ipv4: [192.0.2.53]}]
clusters:
  - {name: east, region: r1}
health: {interval: 1s}
ring: {enabled: true, node_name: n1, region: r1, bind: "127.0.0.1:0"}
services:
  - name: app.gslb.test
    endpoints: [{address: 192.0.2.1, cluster: east}]
`

func writeConfig(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	p := filepath.Join(dir, "meridian.yaml")
	require.NoError(t, os.WriteFile(p, []byte(fmt.Sprintf(runConfig, filepath.Join(dir, "state"))), 0o644))
	return p
}

func TestRunStartsServesAndStopsCleanly(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	started := make(chan []string, 1)
	done := make(chan error, 1)
	go func() {
		done <- Run(ctx, Options{ConfigPath: writeConfig(t), DNSListen: []string{"127.0.0.1:0"}, HTTPListen: "127.0.0.1:0",
			LogOutput: io.Discard, Started: func(d []string, h string) { started <- append(d, h) }})
	}()
	var addrs []string
	select {
	case addrs = <-started:
	case err := <-done:
		t.Fatalf("Run returned before it started: %v", err)
	case <-time.After(30 * time.Second):
		t.Fatal("not started after 30s")
	}
	q := new(dns.Msg)
	q.SetQuestion("app.gslb.test.", dns.TypeA)
	r, _, err := (&dns.Client{Timeout: 2 * time.Second}).Exchange(q, addrs[0])
	require.NoError(t, err)
	require.Len(t, r.Answer, 1)
	assert.Equal(t, "192.0.2.1", r.Answer[0].(*dns.A).A.String())
	cancel()
	select {
	case err := <-done:
		require.NoError(t, err)
	case <-time.After(30 * time.Second):
		t.Fatal("Run did not return after its context was cancelled")
	}
	goleak.VerifyNone(t)
}

func TestAFailedStartStepUndoesTheStepsBefore(t *testing.T) {
	busy, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer busy.Close()
	err = Run(context.Background(), Options{ConfigPath: writeConfig(t), DNSListen: []string{"127.0.0.1:0"}, HTTPListen: busy.Addr().String(), LogOutput: io.Discard})
	require.ErrorContains(t, err, "http listen "+busy.Addr().String())
	// The DNS server, the ring and the prober started before HTTP failed:
	// all of them are gone.
	goleak.VerifyNone(t)
}
