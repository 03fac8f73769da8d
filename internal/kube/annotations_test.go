package kube

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/meridian-gslb/meridian/internal/model"
)

func intp(v int) *int { return &v }

func TestParseAnnotations(t *testing.T) {
	const host = AnnoHostname
	tests := []struct {
		name    string
		in      map[string]string
		want    Settings
		wantErr []string // annotations rejected
	}{
		{"a hostname alone gives defaults everywhere else",
			map[string]string{host: "App.GSLB.example.com"},
			Settings{Hostnames: []string{"app.gslb.example.com."}}, nil},
		{"several hostnames are canonical, sorted and deduplicated",
			map[string]string{host: "b.gslb.example.com, a.gslb.example.com., b.gslb.example.com"},
			Settings{Hostnames: []string{"a.gslb.example.com.", "b.gslb.example.com."}}, nil},
		{"every setting is read",
			map[string]string{host: "app.gslb.example.com", AnnoStrategy: "failover", AnnoWeight: "70",
				AnnoFailoverOrder: "east, west", AnnoTTL: "1m", AnnoHealthCheck: "http:8080/healthz",
				AnnoGeo: "eu-west,DE,EU,country:AS", AnnoDrain: "true"},
			Settings{Hostnames: []string{"app.gslb.example.com."}, Strategy: "failover", Weight: intp(70),
				FailoverOrder: []string{"east", "west"}, TTL: 60, HealthCheck: &model.Check{Kind: "http", Port: 8080, Path: "/healthz"},
				Geo: &GeoPlaces{Regions: []string{"eu-west"}, Countries: []string{"DE", "AS"}, Continents: []string{"EU"}}, Drain: true}, nil},
		{"weight zero is allowed", map[string]string{host: "a.x.test", AnnoWeight: "0"},
			Settings{Hostnames: []string{"a.x.test."}, Weight: intp(0)}, nil},
		{"a ttl in seconds is read", map[string]string{host: "a.x.test", AnnoTTL: "45"},
			Settings{Hostnames: []string{"a.x.test."}, TTL: 45}, nil},
		{"a missing hostname is an error", map[string]string{AnnoWeight: "5"}, Settings{Weight: intp(5)}, []string{host}},
		{"a wildcard hostname is an error", map[string]string{host: "*.x.test"}, Settings{}, []string{host}},
		{"a single-label hostname is an error", map[string]string{host: "app"}, Settings{}, []string{host}},
		{"a weight above 1000 is an error", map[string]string{host: "a.x.test", AnnoWeight: "1001"}, Settings{Hostnames: []string{"a.x.test."}}, []string{AnnoWeight}},
		{"a negative weight is an error", map[string]string{host: "a.x.test", AnnoWeight: "-1"}, Settings{Hostnames: []string{"a.x.test."}}, []string{AnnoWeight}},
		{"a word as weight is an error", map[string]string{host: "a.x.test", AnnoWeight: "heavy"}, Settings{Hostnames: []string{"a.x.test."}}, []string{AnnoWeight}},
		{"an unknown strategy is an error", map[string]string{host: "a.x.test", AnnoStrategy: "random"}, Settings{Hostnames: []string{"a.x.test."}}, []string{AnnoStrategy}},
		{"a failover order with a cluster twice is an error", map[string]string{host: "a.x.test", AnnoFailoverOrder: "east,east"}, Settings{Hostnames: []string{"a.x.test."}}, []string{AnnoFailoverOrder}},
		{"a failover order with an empty item is an error", map[string]string{host: "a.x.test", AnnoFailoverOrder: "east,,west"}, Settings{Hostnames: []string{"a.x.test."}}, []string{AnnoFailoverOrder}},
		{"a ttl of zero is an error", map[string]string{host: "a.x.test", AnnoTTL: "0"}, Settings{Hostnames: []string{"a.x.test."}}, []string{AnnoTTL}},
		{"a fractional ttl is an error", map[string]string{host: "a.x.test", AnnoTTL: "1.5s"}, Settings{Hostnames: []string{"a.x.test."}}, []string{AnnoTTL}},
		{"a drain that is not a boolean is an error", map[string]string{host: "a.x.test", AnnoDrain: "yes please"}, Settings{Hostnames: []string{"a.x.test."}}, []string{AnnoDrain}},
		{"a geo place with an unknown prefix is an error", map[string]string{host: "a.x.test", AnnoGeo: "planet:mars"}, Settings{Hostnames: []string{"a.x.test."}}, []string{AnnoGeo}},
		{"sticky subnet is read", map[string]string{host: "a.x.test", AnnoSticky: " subnet "},
			Settings{Hostnames: []string{"a.x.test."}, Sticky: model.StickySubnet}, nil},
		{"sticky off is read", map[string]string{host: "a.x.test", AnnoSticky: "off"},
			Settings{Hostnames: []string{"a.x.test."}, Sticky: model.StickyOff}, nil},
		{"an unknown sticky mode is an error", map[string]string{host: "a.x.test", AnnoSticky: "cookie"}, Settings{Hostnames: []string{"a.x.test."}}, []string{AnnoSticky}},
		{"fallback-answer off is read", map[string]string{host: "a.x.test", AnnoFallbackAnswer: " off"},
			Settings{Hostnames: []string{"a.x.test."}, FallbackAnswer: model.FallbackOff}, nil},
		{"fallback-answer on is read", map[string]string{host: "a.x.test", AnnoFallbackAnswer: "on"},
			Settings{Hostnames: []string{"a.x.test."}, FallbackAnswer: model.FallbackOn}, nil},
		{"a fallback-answer that is a boolean is an error", map[string]string{host: "a.x.test", AnnoFallbackAnswer: "true"}, Settings{Hostnames: []string{"a.x.test."}}, []string{AnnoFallbackAnswer}},
		{"min-healthy is read", map[string]string{host: "a.x.test", AnnoMinHealthy: " 2 "},
			Settings{Hostnames: []string{"a.x.test."}, MinHealthy: new(2)}, nil},
		{"a negative min-healthy is an error", map[string]string{host: "a.x.test", AnnoMinHealthy: "-1"}, Settings{Hostnames: []string{"a.x.test."}}, []string{AnnoMinHealthy}},
		{"capacity true opts the name in", map[string]string{host: "a.x.test", AnnoCapacity: " true"},
			Settings{Hostnames: []string{"a.x.test."}, Capacity: new(true)}, nil},
		{"capacity false is a setting too", map[string]string{host: "a.x.test", AnnoCapacity: "false"},
			Settings{Hostnames: []string{"a.x.test."}, Capacity: new(false)}, nil},
		{"a capacity that is not a boolean is an error", map[string]string{host: "a.x.test", AnnoCapacity: "yes"}, Settings{Hostnames: []string{"a.x.test."}}, []string{AnnoCapacity}},
		{"two bad values are both reported", map[string]string{host: "a.x.test", AnnoWeight: "x", AnnoTTL: "y"}, Settings{Hostnames: []string{"a.x.test."}}, []string{AnnoWeight, AnnoTTL}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, errs := ParseAnnotations(tt.in)
			var annos []string
			for _, e := range errs {
				annos = append(annos, e.Annotation)
				assert.Contains(t, e.Error(), e.Annotation, "the message names the annotation")
				assert.Contains(t, e.Error(), "allowed", "the message says what is allowed")
			}
			assert.ElementsMatch(t, tt.wantErr, annos)
			if tt.in[AnnoFallbackAnswer] == "true" {
				assert.Equal(t, `meridian.io/fallback-answer: "true" is not a fallback mode (allowed: auto, on, off)`, errs[0].Error())
			}
			if tt.in[AnnoSticky] == "cookie" {
				assert.Equal(t, `meridian.io/sticky: "cookie" is not a sticky mode (allowed: off, subnet)`, errs[0].Error())
			}
			assert.Equal(t, tt.want, got)
		})
	}
}

func TestParseHealthCheck(t *testing.T) {
	tests := []struct {
		name string
		in   string
		want *model.Check
	}{
		{"http with port and path", "http:8080/healthz", &model.Check{Kind: "http", Port: 8080, Path: "/healthz"}},
		{"https with a path and the default port", "https/ready", &model.Check{Kind: "https", Path: "/ready"}},
		{"tcp with a port", "tcp:443", &model.Check{Kind: "tcp", Port: 443}},
		{"dns with the default port", "dns", &model.Check{Kind: "dns"}},
		{"none turns probing off", "none", &model.Check{Kind: "none"}},
		{"tcp without a port is rejected", "tcp", nil},
		{"a port out of range is rejected", "http:70000/", nil},
		{"a path on tcp is rejected", "tcp:443/x", nil},
		{"an unknown kind is rejected", "icmp", nil},
		{"none with a port is rejected", "none:80", nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := ParseHealthCheck(tt.in)
			if tt.want == nil {
				require.Error(t, err)
				assert.Contains(t, err.Error(), "allowed")
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tt.want, got)
		})
	}
}
