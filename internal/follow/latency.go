package follow

import (
	"context"
	"log/slog"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/meridian-gslb/meridian/internal/latency"
	"github.com/meridian-gslb/meridian/internal/model"
	"github.com/meridian-gslb/meridian/internal/ring"
	"github.com/meridian-gslb/meridian/internal/serving"
	"github.com/meridian-gslb/meridian/internal/vote"
)

// RTTRing is where a LatencyFollower reads the probers' RTT summaries
// (*ring.Ring: every listed prober's, validated on receipt).
type RTTRing interface {
	RTTs() []ring.RTTReport
}

// LatencyFollower turns the RTT summaries on the ring into the latency
// view the latency services are compiled with (internal/latency), like
// every node of the ring does. It republishes only when the view changes,
// which the view's hysteresis keeps to real moves.
type LatencyFollower struct {
	Pipeline *serving.Pipeline
	Ring     RTTRing
	Logger   *slog.Logger
	Metrics  *Metrics // nil: on a private registry

	m lazyMetrics

	mu   sync.Mutex
	view *latency.View
}

// Run updates the view after each wake (new RTT summaries: ring.Config.OnRTT)
// and at least every interval (entries going stale) until ctx is done.
func (f *LatencyFollower) Run(ctx context.Context, wake <-chan struct{}, interval time.Duration) {
	tick := time.NewTicker(interval)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-wake:
		case <-tick.C:
		}
		if _, err := f.Update(time.Now()); err != nil {
			f.log().Error("republish after an RTT change failed: previous snapshot keeps serving", "err", err)
		}
	}
}

func (f *LatencyFollower) log() *slog.Logger { return loggerOr(f.Logger, f.Pipeline) }

func (f *LatencyFollower) metrics() *Metrics { return f.m.get(f.Metrics) }

// Update builds the view from the summaries held now and hands it to the
// pipeline when it changed. Without a latency service nothing is built.
func (f *LatencyFollower) Update(now time.Time) (bool, error) {
	d := &f.Pipeline.State().Effective.Desired
	subjects := LatencySubjects(d)
	f.mu.Lock()
	defer f.mu.Unlock()
	if len(subjects) == 0 {
		if f.view.Len() == 0 {
			return false, nil
		}
		f.view = nil
		f.metrics().latency.record(nil)
		return true, f.Pipeline.SetLatency(nil)
	}
	var ms []latency.Measurement
	for _, x := range f.Ring.RTTs() {
		if !subjects[x.Subject] {
			continue
		}
		ms = append(ms, latency.Measurement{Prober: x.Prober, Region: x.Region, Key: latency.Key{Service: x.Subject.Service, Target: x.Subject.Target},
			RTT: x.RTT, Samples: x.Samples, At: x.At})
	}
	next := latency.Build(f.view, ms, now, latency.DefaultParams(d.Health.Interval.D()))
	if next.Equal(f.view) {
		return false, nil
	}
	f.view = next
	f.metrics().latency.record(next)
	f.log().Debug("latency view changed", "entries", next.Len(), "regions", next.Regions())
	return true, f.Pipeline.SetLatency(next)
}

// LatencySubjects lists the endpoints of the latency services of d: the
// only ones whose RTTs are gossiped and ranked.
func LatencySubjects(d *model.Desired) map[vote.Subject]bool {
	out := map[vote.Subject]bool{}
	for i := range d.Services {
		s := &d.Services[i]
		if s.Strategy != model.StrategyLatency {
			continue
		}
		for _, e := range s.Endpoints {
			if e.Address != "" {
				out[vote.EndpointSubject(s.Name, e.Address)] = true
			}
		}
	}
	return out
}

// latencyMetrics are the latency view's gauges: one series per prober
// region and endpoint of a latency service, so bounded by the config.
type latencyMetrics struct {
	rtt     *prometheus.GaugeVec
	changes prometheus.Counter
}

func newLatencyMetrics(reg prometheus.Registerer) latencyMetrics {
	m := latencyMetrics{
		rtt: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "meridian_latency_rtt_seconds",
			Help: "RTT in effect from a prober region to an endpoint of a latency service (the median of the region's probers, moved only past the 10% hysteresis).",
		}, []string{"region", "service", "endpoint"}),
		changes: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "meridian_latency_view_changes_total",
			Help: "Changes of the RTT view latency services are compiled with (each one republishes the snapshot).",
		}),
	}
	reg.MustRegister(m.rtt, m.changes)
	return m
}

// record sets the gauges to v (series of entries that left are removed).
func (m latencyMetrics) record(v *latency.View) {
	if m.rtt == nil {
		return
	}
	m.changes.Inc()
	m.rtt.Reset()
	v.Each(func(region string, k latency.Key, e latency.Entry) {
		m.rtt.WithLabelValues(region, k.Service, k.Target).Set(e.RTT.Seconds())
	})
}
