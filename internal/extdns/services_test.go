package extdns

import (
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/meridian-gslb/meridian/internal/model"
)

func TestBuild(t *testing.T) {
	w := func(e *Endpoint, v string) *Endpoint { return withProp(e, PropWeight, v) }
	a := func(addr, cluster string, weight *int) model.Endpoint {
		return model.Endpoint{Address: addr, Cluster: cluster, Weight: weight}
	}
	tcp := &model.Check{Kind: model.CheckTCP, Port: 443}
	for _, tc := range []struct {
		name    string
		records map[string][]*Endpoint
		opts    BuildOptions
		want    []model.Service
		dropped map[string]string
	}{
		{"the same name from two clusters becomes one weighted service",
			map[string][]*Endpoint{
				"west": {w(withTTL(ep("app.gslb.example.com", "A", "198.51.100.2"), 30), "30")},
				"east": {w(withTTL(ep("app.gslb.example.com", "A", "198.51.100.1"), 30), "70")}},
			BuildOptions{},
			[]model.Service{{Name: "app.gslb.example.com.", Strategy: model.StrategyWeighted, TTL: 30,
				Endpoints: []model.Endpoint{a("198.51.100.1", "east", intp(70)), a("198.51.100.2", "west", intp(30))}}}, nil},
		{"each target of a record gets the record's weight, and no weight is the default",
			map[string][]*Endpoint{
				"east": {w(ep("app.gslb.example.com", "A", "198.51.100.1", "198.51.100.3"), "70")},
				"west": {ep("app.gslb.example.com", "AAAA", "2001:db8::2")}},
			BuildOptions{},
			[]model.Service{{Name: "app.gslb.example.com.", Strategy: model.StrategyWeighted,
				Endpoints: []model.Endpoint{a("198.51.100.1", "east", intp(70)), a("198.51.100.3", "east", intp(70)), a("2001:db8::2", "west", nil)}}}, nil},
		{"the service's TTL is the smallest of its records",
			map[string][]*Endpoint{"east": {withTTL(ep("app.gslb.example.com", "A", "198.51.100.1"), 60)}, "west": {withTTL(ep("app.gslb.example.com", "A", "198.51.100.2"), 20)}},
			BuildOptions{},
			[]model.Service{{Name: "app.gslb.example.com.", Strategy: model.StrategyWeighted, TTL: 20,
				Endpoints: []model.Endpoint{a("198.51.100.1", "east", nil), a("198.51.100.2", "west", nil)}}}, nil},
		{"TXT ownership records are not served",
			map[string][]*Endpoint{"east": {ep("a-app.gslb.example.com", "TXT", `"heritage=external-dns"`)}},
			BuildOptions{}, nil, nil},
		{"a CNAME record becomes a CNAME endpoint",
			map[string][]*Endpoint{"east": {ep("www.gslb.example.com", "CNAME", "lb-east.example.net")}},
			BuildOptions{},
			[]model.Service{{Name: "www.gslb.example.com.", Strategy: model.StrategyWeighted,
				Endpoints: []model.Endpoint{{CNAME: "lb-east.example.net", Cluster: "east"}}}}, nil},
		{"a name mixing a CNAME and addresses across clusters is not served",
			map[string][]*Endpoint{"east": {ep("www.gslb.example.com", "CNAME", "lb-east.example.net")}, "west": {ep("www.gslb.example.com", "A", "198.51.100.2")}},
			BuildOptions{}, nil, map[string]string{"www.gslb.example.com.": "mixes CNAME and address records across clusters (a name is either)"}},
		{"a name the config file or a Kubernetes source defines stays theirs",
			map[string][]*Endpoint{"east": {ep("app.gslb.example.com", "A", "198.51.100.1")}},
			BuildOptions{Taken: func(n string) bool { return n == "app.gslb.example.com." }},
			nil, map[string]string{"app.gslb.example.com.": "defined by the config file or a Kubernetes source (they win)"}},
		{"records of a cluster that is not configured are not served",
			map[string][]*Endpoint{"east": {ep("app.gslb.example.com", "A", "198.51.100.1")}, "gone": {ep("app.gslb.example.com", "A", "198.51.100.9")}},
			BuildOptions{Clusters: map[string]bool{"east": true}},
			[]model.Service{{Name: "app.gslb.example.com.", Strategy: model.StrategyWeighted, Endpoints: []model.Endpoint{a("198.51.100.1", "east", nil)}}},
			map[string]string{"app.gslb.example.com.": `written by cluster "gone", which is not in clusters`}},
		{"the default health check applies when no record sets one",
			map[string][]*Endpoint{"east": {ep("app.gslb.example.com", "A", "198.51.100.1")}},
			BuildOptions{HealthCheck: &model.Check{Kind: model.CheckNone}},
			[]model.Service{{Name: "app.gslb.example.com.", Strategy: model.StrategyWeighted, HealthCheck: &model.Check{Kind: model.CheckNone},
				Endpoints: []model.Endpoint{a("198.51.100.1", "east", nil)}}}, nil},
		{"the default health check does not probe a CNAME service",
			map[string][]*Endpoint{"east": {ep("www.gslb.example.com", "CNAME", "lb-east.example.net")}},
			BuildOptions{HealthCheck: tcp},
			[]model.Service{{Name: "www.gslb.example.com.", Strategy: model.StrategyWeighted,
				Endpoints: []model.Endpoint{{CNAME: "lb-east.example.net", Cluster: "east"}}}}, nil},
		{"the first cluster's health check property beats the default",
			map[string][]*Endpoint{"west": {withProp(ep("app.gslb.example.com", "A", "198.51.100.2"), PropHealthCheck, "none")},
				"east": {withProp(ep("app.gslb.example.com", "A", "198.51.100.1"), PropHealthCheck, "tcp:443")}},
			BuildOptions{HealthCheck: &model.Check{Kind: model.CheckNone}, ParseCheck: parseCheck},
			[]model.Service{{Name: "app.gslb.example.com.", Strategy: model.StrategyWeighted, HealthCheck: tcp,
				Endpoints: []model.Endpoint{a("198.51.100.1", "east", nil), a("198.51.100.2", "west", nil)}}}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if tc.opts.Clusters == nil {
				tc.opts.Clusters = map[string]bool{"east": true, "west": true}
			}
			if tc.dropped == nil {
				tc.dropped = map[string]string{}
			}
			svcs, dropped := Build(tc.records, tc.opts)
			assert.Equal(t, tc.want, svcs)
			assert.Equal(t, tc.dropped, dropped)
		})
	}
}
