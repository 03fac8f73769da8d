//go:build e2e

package e2e

import (
	"fmt"
	"net"
	"net/netip"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/miekg/dns"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// rrlSignedConfig: a signed zone with 1 000 services, RRL at 5 responses/s
// with a 1 s window, and no signing limit (so that RRL alone is measured:
// issue 31 found that only sign_limit stopped random names with DO).
const rrlSignedConfig = `
server:
  dns:
    rrl: {responses_per_second: 5, window: 1, slip: 2}
    sign_limit: {enabled: false}
zones:
  - apex: rrl.test
    nameservers: [{name: ns1.rrl.test, ipv4: [192.0.2.53]}]
    dnssec: {key_files: [%s]}
clusters:
  - {name: east, region: us-east}
  - {name: west, region: us-west}
services:
%s`

// udpLoadResult is what one load got back: replies with data (answers and
// denials), error replies (NOTIMP, REFUSED, ...), slipped replies (TC=1,
// empty), the bytes sent and received, and which query IDs were answered.
type udpLoadResult struct {
	sent, answered, errors, slipped int
	bytesIn, bytesOut               int
	elapsed                         time.Duration
	got                             []bool // by query index: answered with data
}

func (r udpLoadResult) String() string {
	return fmt.Sprintf("%d sent in %.1fs, %d answered (+%d errors), %d slipped, %d dropped; %d bytes in, %d bytes out: amplification %.2f",
		r.sent, r.elapsed.Seconds(), r.answered, r.errors, r.slipped, r.sent-r.answered-r.errors-r.slipped,
		r.bytesIn, r.bytesOut, float64(r.bytesOut)/float64(r.bytesIn))
}

// udpLoad sends n queries (the i-th is query(i), with ID i) to server at
// rate queries/s, round-robin from one UDP socket per source address, and
// tallies the replies until every socket has been quiet for a second. n
// must be at most 65 536 (IDs are unique).
func udpLoad(t *testing.T, server string, sources []string, n, rate int, query func(i int) *dns.Msg) udpLoadResult {
	t.Helper()
	require.LessOrEqual(t, n, 1<<16)
	to := net.UDPAddrFromAddrPort(netip.MustParseAddrPort(server))
	res := udpLoadResult{got: make([]bool, n)}
	var mu sync.Mutex
	var wg sync.WaitGroup
	conns := make([]*net.UDPConn, len(sources))
	for k, src := range sources {
		conns[k] = udpFrom(t, src)
		wg.Add(1)
		go func(c *net.UDPConn) {
			defer wg.Done()
			buf := make([]byte, 65535)
			for {
				c.SetReadDeadline(time.Now().Add(time.Second))
				k, err := c.Read(buf)
				if err != nil {
					return // quiet for a second after the load (or closed): done
				}
				r := new(dns.Msg)
				if r.Unpack(buf[:k]) != nil {
					continue
				}
				mu.Lock()
				res.bytesOut += k
				switch {
				case r.Truncated && len(r.Answer)+len(r.Ns) == 0:
					res.slipped++
				case r.Rcode != dns.RcodeSuccess && r.Rcode != dns.RcodeNameError:
					res.errors++
				case int(r.Id) < n && !res.got[r.Id]:
					res.answered++
					res.got[r.Id] = true
				}
				mu.Unlock()
			}
		}(conns[k])
	}
	const tick = 5 * time.Millisecond
	perTick := max(rate*int(tick)/int(time.Second), 1)
	start := time.Now()
	for next := start; res.sent < n; next = next.Add(tick) {
		time.Sleep(time.Until(next))
		for j := 0; j < perTick && res.sent < n; j++ {
			i := res.sent
			q := query(i)
			q.Id = uint16(i)
			b, err := q.Pack()
			require.NoError(t, err)
			if _, err := conns[i%len(conns)].WriteToUDP(b, to); err == nil {
				mu.Lock()
				res.bytesIn += len(b)
				mu.Unlock()
			}
			res.sent++
		}
	}
	res.elapsed = time.Since(start)
	wg.Wait()
	return res
}

// withDO is a query for name and qtype with DO and a 1232-byte payload.
func withDO(name string, qtype uint16) *dns.Msg {
	q := new(dns.Msg)
	q.SetQuestion(name, qtype)
	q.SetEdns0(1232, true)
	return q
}

// TestRRLHoldsFloodsThatVaryTheQueryOnASignedZone runs `meridian serve`
// with a signed zone and RRL at 5/s (issue 31, finding 3), and sends from
// loopback sources in three /24s: 5 000 queries with DO cycling the type
// on one name, 5 000 queries with DO for random names, and, during the
// first flood, a resolver asking 2 000 queries/s over 1 000 names.
func TestRRLHoldsFloodsThatVaryTheQueryOnASignedZone(t *testing.T) {
	const (
		limit     = 5
		window    = 1
		floodN    = 5000
		floodRate = 1000
		normalN   = 10_000
		normRate  = 2000
		names     = 1000
	)
	var svc strings.Builder
	for i := range names {
		fmt.Fprintf(&svc, "  - {name: n%d.rrl.test, endpoints: [{address: 192.0.2.1, cluster: east, weight: 700}, {address: 192.0.2.2, cluster: west, weight: 300}]}\n", i)
	}
	key := keygen(t, t.TempDir(), "rrl.test", "ecdsap256")
	m := startMeridian(t, fmt.Sprintf(rrlSignedConfig, key, svc.String()))
	sources := func(net24 string) []string {
		return []string{net24 + ".11", net24 + ".12", net24 + ".13", net24 + ".14"}
	}
	// Every data type from 1 to 250 but OPT; TKEY and TSIG (249, 250) are
	// answered NOTIMP, counted apart (the prefix's error bucket).
	cycled := func(i int) uint16 {
		q := uint16(1 + i%249)
		if q >= dns.TypeOPT {
			q++
		}
		return q
	}
	// The most a flood may get in d: the burst and the rate (10% slack for
	// the edges of the measurement).
	bound := func(d time.Duration) int { return int(float64(limit)*(d.Seconds()+window)*1.1) + 2 }

	var cycle, normal udpLoadResult
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		normal = udpLoad(t, m.dns, sources("127.0.32"), normalN, normRate, func(i int) *dns.Msg {
			return withDO(fmt.Sprintf("n%d.rrl.test.", i%names), dns.TypeA)
		})
	}()
	cycle = udpLoad(t, m.dns, sources("127.0.30"), floodN, floodRate, func(i int) *dns.Msg {
		return withDO("n7.rrl.test.", cycled(i))
	})
	wg.Wait()
	random := udpLoad(t, m.dns, sources("127.0.31"), floodN, floodRate, func(i int) *dns.Msg {
		return withDO(fmt.Sprintf("r%08x.rrl.test.", uint32(i)*2654435761), dns.TypeA)
	})

	t.Logf("FIGURE rrl-dnssec: RRL %d/s, window %ds, slip 2, sign_limit off; from 127.0.30.0/24, cycling the type with DO on one name: %s", limit, window, cycle)
	t.Logf("FIGURE rrl-dnssec: from 127.0.31.0/24, random names with DO: %s", random)
	t.Logf("FIGURE rrl-dnssec: from 127.0.32.0/24 during the first flood, %d queries/s over %d names with DO: %s (%.2f%% answered)",
		normRate, names, normal, 100*float64(normal.answered)/float64(normal.sent))
	metrics := m.metrics(t)
	for _, class := range []string{"answer", "nodata", "nxdomain", "error"} {
		t.Logf("meridian_dns_rrl_limited_total{class=%q} %.0f", class,
			metricValue(t, metrics, fmt.Sprintf(`meridian_dns_rrl_limited_total{class=%q}`, class)))
	}

	assert.Equal(t, floodN, cycle.sent)
	assert.LessOrEqual(t, cycle.answered, bound(cycle.elapsed), "cycling the type: data answered at most rate × time + burst")
	assert.LessOrEqual(t, cycle.errors, bound(cycle.elapsed), "cycling the type: errors (NOTIMP) at most their own bucket's rate × time + burst")
	assert.Greater(t, cycle.slipped, floodN/4, "about every second limited reply is slipped")
	assert.Less(t, cycle.bytesOut, cycle.bytesIn, "cycling the type: the flood gets back less than it sends")

	assert.Equal(t, floodN, random.sent)
	assert.LessOrEqual(t, random.answered, bound(random.elapsed), "random names with DO: limited as one class")
	assert.Greater(t, metricValue(t, metrics, `meridian_dns_rrl_limited_total{class="nxdomain"}`), float64(floodN/2),
		"compact denials of random names are limited in the zone's denial bucket")
	assert.Less(t, random.bytesOut, random.bytesIn, "random names: the flood gets back less than it sends")

	assert.GreaterOrEqual(t, float64(normal.answered)/float64(normalN), 0.999, "the resolver in another /24 keeps ≥ 99.9%% of its answers")
}
