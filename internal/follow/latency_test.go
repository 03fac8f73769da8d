package follow

import (
	"net/netip"
	"sync"
	"testing"
	"time"

	"github.com/miekg/dns"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/meridian-gslb/meridian/internal/engine"
	"github.com/meridian-gslb/meridian/internal/ring"
	"github.com/meridian-gslb/meridian/internal/serving"
	"github.com/meridian-gslb/meridian/internal/vote"
)

const latencyConfig = `
zones:
  - apex: gslb.test
    nameservers: [{name: ns1.gslb.test, ipv4: [192.0.2.53]}]
health: {interval: 1s}
clusters:
  - {name: east, region: us-east}
  - {name: west, region: us-west}
geo:
  networks:
    - {cidr: 10.1.0.0/16, region: us-east}
    - {cidr: 10.2.0.0/16, region: us-west}
services:
  - name: near.gslb.test
    strategy: latency
    health_check: {kind: tcp, port: 443}
    endpoints:
      - {address: 192.0.2.1, cluster: east}
      - {address: 192.0.2.2, cluster: west}
  - name: app.gslb.test
    endpoints:
      - {address: 192.0.2.9, cluster: east}
`

type fakeRTTRing struct {
	mu sync.Mutex
	r  []ring.RTTReport
}

func (f *fakeRTTRing) RTTs() []ring.RTTReport {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]ring.RTTReport(nil), f.r...)
}

func (f *fakeRTTRing) set(at time.Time, rows ...ring.RTTReport) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.r = nil
	for _, x := range rows {
		x.At, x.Samples = at, 3
		f.r = append(f.r, x)
	}
}

func rtt(prober, region, service, target string, ms float64) ring.RTTReport {
	return ring.RTTReport{Prober: prober, Region: region, Subject: vote.EndpointSubject(service, target), RTT: time.Duration(ms * float64(time.Millisecond))}
}

func nearFrom(t *testing.T, p *serving.Pipeline, client string) map[string]bool {
	t.Helper()
	out := map[string]bool{}
	for range 64 {
		var r engine.Result
		p.Store().Load().Lookup("near.gslb.test.", dns.TypeA, engine.Client{Addr: netip.MustParseAddr(client), Bits: 24, HasECS: true}, &r)
		for _, rr := range r.Answer {
			out[rr.(*dns.A).A.String()] = true
		}
	}
	return out
}

func TestLatencyFollowerRepublishesOnlyWhenTheViewChanges(t *testing.T) {
	p := newPipeline(t, load(t, latencyConfig), serving.Options{})
	r := &fakeRTTRing{}
	f := &LatencyFollower{Pipeline: p, Ring: r, Logger: discard()}
	now := time.Now()
	gen := func() uint64 { return p.Store().Load().Generation() }

	changed, err := f.Update(now)
	require.NoError(t, err)
	assert.False(t, changed, "nothing measured: nothing to publish")
	assert.Equal(t, map[string]bool{"192.0.2.1": true, "192.0.2.2": true}, nearFrom(t, p, "10.1.7.0"), "unmeasured: by weight")

	r.set(now, rtt("e1", "us-east", "near.gslb.test.", "192.0.2.1", 5), rtt("e1", "us-east", "near.gslb.test.", "192.0.2.2", 60),
		rtt("w1", "us-west", "near.gslb.test.", "192.0.2.1", 60), rtt("w1", "us-west", "near.gslb.test.", "192.0.2.2", 4),
		rtt("w1", "us-west", "app.gslb.test.", "192.0.2.9", 1))
	g := gen()
	changed, err = f.Update(now)
	require.NoError(t, err)
	assert.True(t, changed)
	assert.Equal(t, g+1, gen(), "one republish")
	assert.Equal(t, map[string]bool{"192.0.2.1": true}, nearFrom(t, p, "10.1.7.0"), "us-east clients get the east site")
	assert.Equal(t, map[string]bool{"192.0.2.2": true}, nearFrom(t, p, "10.2.7.0"), "us-west clients get the west site")
	assert.Equal(t, 5e-3, testutil.ToFloat64(f.metrics().latency.rtt.WithLabelValues("us-east", "near.gslb.test.", "192.0.2.1")))
	assert.Equal(t, 4, testutil.CollectAndCount(f.metrics().latency.rtt), "one series per region and endpoint of a latency service, not of others")

	t.Run("noise below the hysteresis republishes nothing", func(t *testing.T) {
		g := gen()
		r.set(now.Add(time.Second), rtt("e1", "us-east", "near.gslb.test.", "192.0.2.1", 5.4), rtt("e1", "us-east", "near.gslb.test.", "192.0.2.2", 57),
			rtt("w1", "us-west", "near.gslb.test.", "192.0.2.1", 62), rtt("w1", "us-west", "near.gslb.test.", "192.0.2.2", 4.3))
		changed, err := f.Update(now.Add(time.Second))
		require.NoError(t, err)
		assert.False(t, changed)
		assert.Equal(t, g, gen())
	})
	t.Run("a site that became slow from a region moves that region's clients", func(t *testing.T) {
		r.set(now.Add(2*time.Second), rtt("e1", "us-east", "near.gslb.test.", "192.0.2.1", 90), rtt("e1", "us-east", "near.gslb.test.", "192.0.2.2", 60),
			rtt("w1", "us-west", "near.gslb.test.", "192.0.2.1", 60), rtt("w1", "us-west", "near.gslb.test.", "192.0.2.2", 4))
		changed, err := f.Update(now.Add(2 * time.Second))
		require.NoError(t, err)
		assert.True(t, changed)
		assert.Equal(t, map[string]bool{"192.0.2.2": true}, nearFrom(t, p, "10.1.7.0"))
	})
	t.Run("a reload keeps the view", func(t *testing.T) {
		_, err := p.Reload(load(t, latencyConfig), nil)
		require.NoError(t, err)
		assert.Equal(t, map[string]bool{"192.0.2.2": true}, nearFrom(t, p, "10.1.7.0"))
	})
	t.Run("without a latency service the view is dropped", func(t *testing.T) {
		_, err := p.Reload(load(t, baseConfig), nil)
		require.NoError(t, err)
		changed, err := f.Update(now.Add(3 * time.Second))
		require.NoError(t, err)
		assert.True(t, changed)
		assert.Nil(t, p.State().Latency)
		changed, _ = f.Update(now.Add(4 * time.Second))
		assert.False(t, changed)
	})
}
