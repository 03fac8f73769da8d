package model

import (
	"math"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestCapacityValidation(t *testing.T) {
	d := func(v time.Duration) Duration { return Duration(v) }
	f := func(x float64) *float64 { return &x }
	kube := func(svc string) *CapacityKubernetes { return &CapacityKubernetes{Service: svc} }
	prom := &CapacityPrometheus{URL: "http://prometheus.monitoring:9090", Query: `meridian:ready_fraction`}
	tests := []struct {
		name     string
		c        Capacity
		strategy string
		path     string // the field with an error; "" means valid
		msg      string
	}{
		{"a kubernetes source with a Service is valid", Capacity{Source: "kubernetes", Kubernetes: kube("shop/web")}, "", "", ""},
		{"a prometheus source with url and query is valid", Capacity{Source: "prometheus", Prometheus: prom}, "", "", ""},
		{"every tuning field in range is valid",
			Capacity{Source: "prometheus", Prometheus: &CapacityPrometheus{URL: "https://thanos.example.com/prom/", Query: "x", Interval: d(10 * time.Second), Timeout: d(2 * time.Second)},
				MinChangeInterval: d(5 * time.Second), Step: 0.1, Hysteresis: f(0), StaleAfter: d(time.Minute)}, "failover", "", ""},
		{"the source is required", Capacity{}, "", "services[0].capacity.source", "is required (allowed: kubernetes, prometheus)"},
		{"an unknown source is named with the allowed ones", Capacity{Source: "datadog"}, "", "services[0].capacity.source", `"datadog" is not allowed (allowed: kubernetes, prometheus)`},
		{"roundrobin cannot be capacity-aware", Capacity{Source: "kubernetes", Kubernetes: kube("shop/web")}, "roundrobin", "services[0].capacity", "does not apply to strategy roundrobin"},
		{"a config-file service needs the Service to read", Capacity{Source: "kubernetes"}, "", "services[0].capacity.kubernetes.service", "is required with source kubernetes"},
		{"a Kubernetes-sourced service reads the Services behind its objects", Capacity{Source: "kubernetes", FromObjects: true}, "", "", ""},
		{"the Service must be NAMESPACE/NAME", Capacity{Source: "kubernetes", Kubernetes: kube("web")}, "", "services[0].capacity.kubernetes.service", `"web" is not NAMESPACE/NAME`},
		{"the Service name must be a Kubernetes name", Capacity{Source: "kubernetes", Kubernetes: kube("shop/Web_1")}, "", "services[0].capacity.kubernetes.service", `service "Web_1" is not a Kubernetes name`},
		{"a prometheus section with source kubernetes is refused", Capacity{Source: "kubernetes", Kubernetes: kube("shop/web"), Prometheus: prom}, "", "services[0].capacity.prometheus", "only applies with source prometheus"},
		{"source prometheus needs its section", Capacity{Source: "prometheus"}, "", "services[0].capacity.prometheus", "is required with source prometheus"},
		{"a kubernetes section with source prometheus is refused", Capacity{Source: "prometheus", Prometheus: prom, Kubernetes: kube("shop/web")}, "", "services[0].capacity.kubernetes", "only applies with source kubernetes"},
		{"the url is required", Capacity{Source: "prometheus", Prometheus: &CapacityPrometheus{Query: "x"}}, "", "services[0].capacity.prometheus.url", "is required"},
		{"the url must be http or https", Capacity{Source: "prometheus", Prometheus: &CapacityPrometheus{URL: "ftp://p:9090", Query: "x"}}, "", "services[0].capacity.prometheus.url", "is not an http or https URL"},
		{"credentials in the url are refused", Capacity{Source: "prometheus", Prometheus: &CapacityPrometheus{URL: "http://u:secret@p:9090", Query: "x"}}, "", "services[0].capacity.prometheus.url", "must not carry credentials"},
		{"a url with a query string is refused", Capacity{Source: "prometheus", Prometheus: &CapacityPrometheus{URL: "http://p:9090/?x=1", Query: "x"}}, "", "services[0].capacity.prometheus.url", "has a query or fragment"},
		{"the query is required", Capacity{Source: "prometheus", Prometheus: &CapacityPrometheus{URL: "http://p:9090", Query: "  "}}, "", "services[0].capacity.prometheus.query", "is required"},
		{"an oversized query is refused", Capacity{Source: "prometheus", Prometheus: &CapacityPrometheus{URL: "http://p:9090", Query: strings.Repeat("x", 5000)}}, "", "services[0].capacity.prometheus.query", "at most 4096"},
		{"a query with control characters is refused", Capacity{Source: "prometheus", Prometheus: &CapacityPrometheus{URL: "http://p:9090", Query: "up\x00"}}, "", "services[0].capacity.prometheus.query", "control characters"},
		{"an interval under a second is refused", Capacity{Source: "prometheus", Prometheus: &CapacityPrometheus{URL: "http://p:9090", Query: "x", Interval: d(500 * time.Millisecond)}}, "", "services[0].capacity.prometheus.interval", "allowed 1s..1h"},
		{"a timeout longer than the interval is refused", Capacity{Source: "prometheus", Prometheus: &CapacityPrometheus{URL: "http://p:9090", Query: "x", Interval: d(2 * time.Second), Timeout: d(3 * time.Second)}}, "", "services[0].capacity.prometheus.timeout", "allowed 100ms..interval 2s"},
		{"a min change interval over an hour is refused", Capacity{Source: "kubernetes", Kubernetes: kube("shop/web"), MinChangeInterval: d(2 * time.Hour)}, "", "services[0].capacity.min_change_interval", "allowed 1s..1h"},
		{"a step of one per cent is the finest", Capacity{Source: "kubernetes", Kubernetes: kube("shop/web"), Step: 0.001}, "", "services[0].capacity.step", "allowed 0.01..0.5"},
		{"a NaN step is refused", Capacity{Source: "kubernetes", Kubernetes: kube("shop/web"), Step: math.NaN()}, "", "services[0].capacity.step", "allowed 0.01..0.5"},
		{"a negative hysteresis is refused", Capacity{Source: "kubernetes", Kubernetes: kube("shop/web"), Hysteresis: f(-0.1)}, "", "services[0].capacity.hysteresis", "allowed 0..0.5"},
		{"stale_after shorter than two prometheus intervals is refused", Capacity{Source: "prometheus", Prometheus: &CapacityPrometheus{URL: "http://p:9090", Query: "x", Interval: d(time.Minute)}, StaleAfter: d(90 * time.Second)}, "", "services[0].capacity.stale_after", "shorter than two prometheus intervals (2m0s)"},
		{"stale_after under ten seconds is refused", Capacity{Source: "kubernetes", Kubernetes: kube("shop/web"), StaleAfter: d(5 * time.Second)}, "", "services[0].capacity.stale_after", "at least 10s"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			in := minimal()
			in.Services[0].Strategy = tt.strategy
			if tt.strategy == StrategyFailover {
				in.Services[0].Failover = &FailoverPolicy{Order: []string{"east"}}
			}
			c := tt.c
			in.Services[0].Capacity = &c
			err := Validate(in)
			if tt.path == "" {
				require.NoError(t, err)
				return
			}
			var verr *ValidationError
			require.ErrorAs(t, err, &verr)
			require.Len(t, verr.Fields, 1, "one error: %v", err)
			assert.Equal(t, tt.path, verr.Fields[0].Path)
			assert.Contains(t, verr.Fields[0].Msg, tt.msg)
		})
	}
}

func TestTheCapacityServiceMustBeInAWatchedNamespace(t *testing.T) {
	in := minimal()
	in.Kubernetes.Namespaces = []string{"ops", "web"}
	in.Services[0].Capacity = &Capacity{Source: "kubernetes", Kubernetes: &CapacityKubernetes{Service: "shop/web"}}
	err := Validate(in)
	var verr *ValidationError
	require.ErrorAs(t, err, &verr)
	require.Len(t, verr.Fields, 1)
	assert.Equal(t, FieldError{Path: "services[0].capacity.kubernetes.service", Msg: `namespace "shop" is not watched (kubernetes.namespaces: ops, web)`}, verr.Fields[0])
	in.Kubernetes.Namespaces = append(in.Kubernetes.Namespaces, "shop")
	require.NoError(t, Validate(in))
}

func TestCapacityDefaults(t *testing.T) {
	in := minimal()
	in.Services[0].Capacity = &Capacity{Source: "prometheus", Prometheus: &CapacityPrometheus{URL: "http://p:9090/", Query: "x", Interval: Duration(5 * time.Minute)}}
	out, err := Normalize(in)
	require.NoError(t, err)
	c := out.Services[0].Capacity
	assert.Equal(t, DefaultCapacityMinChangeInterval, c.MinChangeInterval.D())
	assert.Equal(t, DefaultCapacityStep, c.Step)
	assert.Equal(t, DefaultCapacityHysteresis, *c.Hysteresis)
	assert.Equal(t, 10*time.Minute, c.StaleAfter.D(), "at least two intervals")
	assert.Equal(t, "http://p:9090", c.Prometheus.URL)
	assert.Equal(t, DefaultCapacityPromTimeout, c.Prometheus.Timeout.D())
	assert.Nil(t, in.Services[0].Capacity.Hysteresis, "input unchanged")

	in.Services[0].Capacity = &Capacity{Source: "kubernetes", Kubernetes: &CapacityKubernetes{Service: "shop/web"}}
	out, err = Normalize(in)
	require.NoError(t, err)
	assert.Equal(t, DefaultCapacityStaleAfter, out.Services[0].Capacity.StaleAfter.D())
	assert.NotSame(t, in.Services[0].Capacity.Kubernetes, out.Services[0].Capacity.Kubernetes)
}
