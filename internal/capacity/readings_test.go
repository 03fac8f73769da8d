package capacity

import (
	"math"
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestFromEndpointCounts(t *testing.T) {
	cases := []struct {
		name   string
		counts EndpointCounts
		ok     bool
		want   float64
		detail string
	}{
		{"ten endpoints with eight failing readiness read 0.2", EndpointCounts{Ready: 2, NotReady: 8, Slices: 1}, true, 0.2, "2 of 10 endpoints ready"},
		{"a Deployment scaled from 10 to 2 on purpose reads 1", EndpointCounts{Ready: 2, Slices: 1}, true, 1, "2 of 2 endpoints ready"},
		{"slices without endpoints read 0", EndpointCounts{Slices: 2}, true, 0, "0 of 0 endpoints ready"},
		{"no EndpointSlice gives no reading", EndpointCounts{}, false, 0, ""},
		{"negative counts give no reading", EndpointCounts{Ready: -1, Slices: 1}, false, 0, ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r, ok := FromEndpointCounts(tc.counts, t0)
			assert.Equal(t, tc.ok, ok)
			if ok {
				assert.InDelta(t, tc.want, r.Fraction, 1e-9)
				assert.Equal(t, tc.detail, r.Detail)
				assert.Equal(t, t0, r.At)
			}
		})
	}
	assert.Equal(t, EndpointCounts{Ready: 3, NotReady: 1, Slices: 3}, EndpointCounts{Ready: 1, Slices: 1}.Add(EndpointCounts{Ready: 2, NotReady: 1, Slices: 2}))
}

func TestFromSamples(t *testing.T) {
	svc := Service{Name: app, Endpoints: []Endpoint{
		{Target: "192.0.2.1", Cluster: "east", Weight: 50},
		{Target: "192.0.2.2", Cluster: "west", Weight: 50},
		{Target: "2001:db8::3", Cluster: "west", Weight: 50},
	}}
	sample := func(v float64, kv ...string) Sample {
		l := map[string]string{}
		for i := 0; i+1 < len(kv); i += 2 {
			l[kv[i]] = kv[i+1]
		}
		return Sample{Labels: l, Value: v}
	}
	cases := []struct {
		name     string
		samples  []Sample
		want     map[string]float64 // target -> fraction
		problems []string           // reasons
	}{
		{"a sample per cluster is the reading of the cluster's endpoints",
			[]Sample{sample(0.2, "cluster", "east"), sample(1, "cluster", "west")},
			map[string]float64{"192.0.2.1": 0.2, "192.0.2.2": 1, "2001:db8::3": 1}, nil},
		{"an endpoint sample wins over its cluster's",
			[]Sample{sample(1, "cluster", "west"), sample(0.5, "endpoint", "2001:DB8:0::3", "cluster", "west")},
			map[string]float64{"192.0.2.2": 1, "2001:db8::3": 0.5}, nil},
		{"NaN and infinities are left out", []Sample{sample(math.NaN(), "cluster", "east"), sample(math.Inf(1), "cluster", "west")},
			map[string]float64{}, []string{"nan", "nan"}},
		{"a negative value is left out", []Sample{sample(-0.1, "cluster", "east")}, map[string]float64{}, []string{"negative"}},
		{"a value above one is used as one", []Sample{sample(1.2, "cluster", "east")}, map[string]float64{"192.0.2.1": 1}, []string{"above-one"}},
		{"two samples for one cluster leave it without a reading",
			[]Sample{sample(0.2, "cluster", "east", "pod", "a"), sample(0.9, "cluster", "east", "pod", "b"), sample(0.3, "cluster", "east", "pod", "c")},
			map[string]float64{}, []string{"duplicate", "duplicate"}},
		{"a sample for another cluster is ignored", []Sample{sample(0.5, "cluster", "eu"), sample(0.5, "job", "x")},
			map[string]float64{}, []string{"unmatched", "unmatched"}},
		{"an endpoint label naming a host name is compared in canonical form", []Sample{sample(0.5, "endpoint", "192.0.2.1")},
			map[string]float64{"192.0.2.1": 0.5}, nil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, problems := FromSamples(svc, tc.samples, t0)
			fractions := map[string]float64{}
			for target, r := range got {
				fractions[target] = r.Fraction
				assert.Equal(t, t0, r.At)
				assert.Contains(t, r.Detail, "prometheus {")
			}
			assert.Equal(t, tc.want, fractions)
			var reasons []string
			for _, p := range problems {
				reasons = append(reasons, p.Reason)
				assert.NotEmpty(t, p.Detail)
			}
			assert.Equal(t, tc.problems, reasons)
		})
	}
}

func TestFromSamplesBoundsWhatItReads(t *testing.T) {
	svc := Service{Name: app, Endpoints: []Endpoint{{Target: "web.example.org.", Cluster: "east", Weight: 1}}}
	samples := make([]Sample, MaxSamples+5)
	for i := range samples {
		samples[i] = Sample{Labels: map[string]string{"cluster": "elsewhere"}, Value: 1}
	}
	samples[0] = Sample{Labels: map[string]string{"endpoint": "WEB.example.org"}, Value: 0.4}
	samples[MaxSamples+1] = Sample{Labels: map[string]string{"cluster": "east"}, Value: 0}
	got, problems := FromSamples(svc, samples, t0)
	assert.InDelta(t, 0.4, got["web.example.org."].Fraction, 1e-9, "a CNAME target matches in any case, without the trailing dot")
	assert.Equal(t, ProblemTooMany, problems[0].Reason)
	assert.Len(t, problems, MaxSamples, "the first MaxSamples are read: one too-many and the unmatched ones")
	long := Sample{Labels: map[string]string{"cluster": string(make([]byte, 500))}, Value: 1}
	_, problems = FromSamples(svc, []Sample{long}, t0)
	assert.Less(t, len(problems[0].Detail), 200, "label values are cut in problems")
}
