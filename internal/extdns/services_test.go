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
		{"a name the config file or a Kubernetes source defines stays theirs",
			map[string][]*Endpoint{"east": {ep("app.gslb.example.com", "A", "198.51.100.1")}},
			BuildOptions{Taken: func(n string) bool { return n == "app.gslb.example.com." }},
			nil, map[string]string{"app.gslb.example.com.": "defined by the config file or a Kubernetes source (they win)"}},
		{"records of a cluster that is not configured are not served",
			map[string][]*Endpoint{"east": {ep("app.gslb.example.com", "A", "198.51.100.1")}, "gone": {ep("app.gslb.example.com", "A", "198.51.100.9")}},
			BuildOptions{Clusters: map[string]bool{"east": true}},
			[]model.Service{{Name: "app.gslb.example.com.", Strategy: model.StrategyWeighted, Endpoints: []model.Endpoint{a("198.51.100.1", "east", nil)}}},
			nil},
		{"a name whose every record is of a cluster that is not configured is not served",
			map[string][]*Endpoint{"gone": {ep("app.gslb.example.com", "A", "198.51.100.9")}},
			BuildOptions{Clusters: map[string]bool{"east": true}},
			nil, map[string]string{"app.gslb.example.com.": `written by cluster "gone", which is not in clusters`}},
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
			svcs, dropped, _ := Build(tc.records, tc.opts)
			assert.Equal(t, tc.want, svcs)
			assert.Equal(t, tc.dropped, dropped)
		})
	}
}

func TestWhatOneClusterWritesNeverRemovesAnotherClustersTargets(t *testing.T) {
	a := func(addr, cluster string) model.Endpoint { return model.Endpoint{Address: addr, Cluster: cluster} }
	const app = "app.gslb.example.com."
	tcp := &model.Check{Kind: model.CheckTCP, Port: 443}
	for _, tc := range []struct {
		name    string
		records map[string][]*Endpoint
		want    []model.Endpoint
		check   *model.Check
		partial string
	}{
		{"a CNAME from one cluster leaves the other cluster's addresses served",
			map[string][]*Endpoint{"east": {ep("app.gslb.example.com", "CNAME", "lb-east.example.net")}, "west": {ep("app.gslb.example.com", "A", "198.51.100.2")}},
			[]model.Endpoint{a("198.51.100.2", "west")}, nil,
			`the CNAME of cluster "east" is not served: other records of the name are addresses (a name is either)`},
		{"an address another cluster already writes is served once, as the first cluster's, and the rest of both is served",
			map[string][]*Endpoint{"east": {ep("app.gslb.example.com", "A", "198.51.100.1")}, "west": {ep("app.gslb.example.com", "A", "198.51.100.1", "198.51.100.2")}},
			[]model.Endpoint{a("198.51.100.1", "east"), a("198.51.100.2", "west")}, nil,
			`198.51.100.1 of cluster "west" is served once, as cluster "east"'s`},
		{"clusters that disagree on the health check get the first cluster's, and the other is reported",
			map[string][]*Endpoint{"east": {withProp(ep("app.gslb.example.com", "A", "198.51.100.1"), PropHealthCheck, "tcp:443")},
				"west": {withProp(ep("app.gslb.example.com", "A", "198.51.100.2"), PropHealthCheck, "none")}},
			[]model.Endpoint{a("198.51.100.1", "east"), a("198.51.100.2", "west")}, tcp,
			`cluster "west"'s health check "none" is not used: cluster "east"'s "tcp:443" is`},
		{"records of a cluster that is not configured leave the name served from the others",
			map[string][]*Endpoint{"east": {ep("app.gslb.example.com", "A", "198.51.100.1")}, "gone": {ep("app.gslb.example.com", "A", "198.51.100.9")}},
			[]model.Endpoint{a("198.51.100.1", "east")}, nil,
			`written by cluster "gone", which is not in clusters`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			svcs, dropped, partial := Build(tc.records, BuildOptions{Clusters: map[string]bool{"east": true, "west": true}, ParseCheck: parseCheck})
			assert.Empty(t, dropped)
			if assert.Len(t, svcs, 1) {
				assert.Equal(t, tc.want, svcs[0].Endpoints)
				assert.Equal(t, tc.check, svcs[0].HealthCheck)
			}
			assert.Equal(t, map[string]string{app: tc.partial}, partial)
			// What is built validates: the name is served, not dropped by the model.
			d := stageFile(t).Desired
			d.Services = append(d.Services, svcs...)
			_, err := model.Normalize(&d)
			assert.NoError(t, err)
		})
	}
}
