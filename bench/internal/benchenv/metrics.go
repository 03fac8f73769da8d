package benchenv

import (
	"fmt"
	"io"
	"math"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

// Metrics is a parsed /metrics page (the Prometheus text format), read
// with the Prometheus parser itself.
type Metrics map[string]*dto.MetricFamily

// ParseMetrics reads a /metrics page.
func ParseMetrics(r io.Reader) (Metrics, error) {
	p := expfmt.NewTextParser(model.UTF8Validation)
	mf, err := p.TextToMetricFamilies(r)
	if err != nil {
		return nil, fmt.Errorf("metrics: %w", err)
	}
	return Metrics(mf), nil
}

// Sum adds the samples of name whose labels match every key, value pair of
// kv (0 when there is none). A histogram or summary adds its sum.
func (m Metrics) Sum(name string, kv ...string) float64 { return m.add(name, kv, value) }

// Count adds the observation counts of the histograms or summaries name
// whose labels match kv.
func (m Metrics) Count(name string, kv ...string) float64 { return m.add(name, kv, count) }

func (m Metrics) add(name string, kv []string, of func(*dto.Metric) float64) float64 {
	f, ok := m[name]
	if !ok {
		return 0
	}
	var t float64
next:
	for _, s := range f.GetMetric() {
		for i := 0; i+1 < len(kv); i += 2 {
			if labelOf(s, kv[i]) != kv[i+1] {
				continue next
			}
		}
		if v := of(s); !math.IsNaN(v) {
			t += v
		}
	}
	return t
}

func count(s *dto.Metric) float64 {
	switch {
	case s.Histogram != nil:
		return float64(s.GetHistogram().GetSampleCount())
	case s.Summary != nil:
		return float64(s.GetSummary().GetSampleCount())
	}
	return math.NaN()
}

// Label returns the value of key on the first sample of name ("" if none).
func (m Metrics) Label(name, key string) string {
	if f, ok := m[name]; ok && len(f.GetMetric()) > 0 {
		return labelOf(f.GetMetric()[0], key)
	}
	return ""
}

func labelOf(s *dto.Metric, key string) string {
	for _, l := range s.GetLabel() {
		if l.GetName() == key {
			return l.GetValue()
		}
	}
	return ""
}

func value(s *dto.Metric) float64 {
	switch {
	case s.Counter != nil:
		return s.GetCounter().GetValue()
	case s.Gauge != nil:
		return s.GetGauge().GetValue()
	case s.Untyped != nil:
		return s.GetUntyped().GetValue()
	case s.Histogram != nil:
		return s.GetHistogram().GetSampleSum()
	case s.Summary != nil:
		return s.GetSummary().GetSampleSum()
	}
	return math.NaN()
}
