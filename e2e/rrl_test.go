//go:build e2e

package e2e

import (
	"net"
	"net/netip"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/miekg/dns"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// rrlConfig limits each client prefix to 100 responses per second with one
// second of burst (a small limit keeps the test short). The prefixes are
// the default /24: the flooding client (127.0.1.50) and the quiet one
// (127.0.2.60) sit in different /24s of the loopback network, so they have
// separate buckets. (Two addresses in 127.0.0.0/24 would share one.)
const rrlConfig = `
server:
  dns:
    rrl: {responses_per_second: 100, window: 1}
zones:
  - apex: rrl.test
    nameservers: [{name: ns1.rrl.test, ipv4: [192.0.2.53]}]
clusters:
  - {name: east, region: us-east}
services:
  - name: app.rrl.test
    endpoints: [{address: 192.0.2.1, cluster: east}]
`

// udpFrom opens a UDP socket bound to a loopback address (any of 127/8 is
// ours on Linux) for use as a client source.
func udpFrom(t *testing.T, ip string) *net.UDPConn {
	t.Helper()
	c, err := net.ListenUDP("udp", net.UDPAddrFromAddrPort(netip.MustParseAddrPort(ip+":0")))
	require.NoError(t, err)
	t.Cleanup(func() { c.Close() })
	return c
}

func packQuery(t *testing.T, id uint16) []byte {
	t.Helper()
	q := new(dns.Msg)
	q.SetQuestion("app.rrl.test.", dns.TypeA)
	q.Id = id
	b, err := q.Pack()
	require.NoError(t, err)
	return b
}

func TestRRLLimitsAFloodingPrefixAndSparesOthers(t *testing.T) {
	const (
		rate     = 100
		window   = 1
		flood    = 20_000
		duration = 2 * time.Second
	)
	m := startMeridian(t, rrlConfig)
	server := net.UDPAddrFromAddrPort(netip.MustParseAddrPort(m.dns))

	// Flood: 20 000 queries paced over 2 s from 127.0.1.50; a reader counts
	// full answers and truncated (slipped) replies.
	fc := udpFrom(t, "127.0.1.50")
	var answered, slipped atomic.Int64
	readerDone := make(chan struct{})
	go func() {
		defer close(readerDone)
		buf := make([]byte, 4096)
		for {
			fc.SetReadDeadline(time.Now().Add(time.Second))
			n, err := fc.Read(buf)
			if err != nil {
				return // quiet for a second after the flood: done
			}
			r := new(dns.Msg)
			if r.Unpack(buf[:n]) != nil {
				continue
			}
			switch {
			case r.Truncated && len(r.Answer) == 0:
				slipped.Add(1)
			case len(r.Answer) == 1:
				answered.Add(1)
			}
		}
	}()

	// The quiet client: 200 queries, one at a time, about 80 per second
	// (under its own limit), from 127.0.2.60, during the flood. A query
	// unanswered in 500ms is retried twice, as a resolver would.
	qc := udpFrom(t, "127.0.2.60")
	var wg sync.WaitGroup
	var quietAnswered, quietRetries int
	quietPkts := make([][]byte, 200)
	for i := range quietPkts {
		quietPkts[i] = packQuery(t, uint16(i))
	}
	wg.Add(1)
	go func() {
		defer wg.Done()
		buf := make([]byte, 4096)
		for i, pkt := range quietPkts {
		try:
			for attempt := range 3 {
				if attempt > 0 {
					quietRetries++
				}
				if _, err := qc.WriteToUDP(pkt, server); err != nil {
					continue
				}
				qc.SetReadDeadline(time.Now().Add(500 * time.Millisecond))
				for {
					n, err := qc.Read(buf)
					if err != nil {
						break // timeout: retry
					}
					r := new(dns.Msg)
					if r.Unpack(buf[:n]) == nil && r.Id == uint16(i) {
						if !r.Truncated && len(r.Answer) == 1 {
							quietAnswered++
						}
						break try
					}
				}
			}
			time.Sleep(12 * time.Millisecond)
		}
	}()

	start := time.Now()
	const tick = 5 * time.Millisecond
	perTick := flood / int(duration/tick)
	sent := 0
	for next := start; sent < flood; next = next.Add(tick) {
		time.Sleep(time.Until(next))
		for range perTick {
			if _, err := fc.WriteToUDP(packQuery(t, uint16(sent)), server); err == nil {
				sent++
			}
		}
	}
	elapsed := time.Since(start)
	<-readerDone
	wg.Wait()

	secs := elapsed.Seconds()
	t.Logf("FIGURE rrl: flood from 127.0.1.50: %.0f queries/s sent, %.0f answered/s (+%.0f/s slipped) at a limit of %d/s with %ds of burst (%d answered in %.1fs); second client %d/200 answered (%d retries)",
		float64(sent)/secs, float64(answered.Load())/secs, float64(slipped.Load())/secs, rate, window, answered.Load(), secs, quietAnswered, quietRetries)

	// The flooding prefix gets its burst plus the rate, no more (10% slack
	// for the edges of the measurement), and a good share of it.
	limit := float64(rate) * (secs + window)
	assert.LessOrEqual(t, float64(answered.Load()), limit*1.1+10, "answers to the flooding prefix are held to the limit")
	assert.GreaterOrEqual(t, float64(answered.Load()), float64(rate)*secs*0.5, "the flooding prefix still gets answers at about the limit")
	assert.Greater(t, slipped.Load(), int64(sent/10), "about every second limited reply is slipped (TC=1)")
	assert.Equal(t, 200, quietAnswered, "the quiet client in another /24 gets every answer")

	metrics := m.metrics(t)
	dropped := metricValue(t, metrics, "meridian_dns_rrl_dropped_total")
	slips := metricValue(t, metrics, "meridian_dns_rrl_slipped_total")
	t.Logf("metrics: meridian_dns_rrl_dropped_total %.0f, meridian_dns_rrl_slipped_total %.0f", dropped, slips)
	assert.Greater(t, dropped, 0.0)
	assert.Greater(t, slips, 0.0)
	assert.InDelta(t, dropped, slips, 0.1*(dropped+slips)+10, "slip 2: as many slipped as dropped")

	// A slipped client retries over TCP, which is not rate limited.
	c := &dns.Client{Net: "tcp", Timeout: 2 * time.Second}
	q := new(dns.Msg)
	q.SetQuestion("app.rrl.test.", dns.TypeA)
	r, _, err := c.Exchange(q, m.dns)
	require.NoError(t, err)
	assert.Len(t, r.Answer, 1)
}
