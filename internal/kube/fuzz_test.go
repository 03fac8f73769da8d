package kube

import (
	"slices"
	"strings"
	"testing"

	"github.com/miekg/dns"

	"github.com/meridian-gslb/meridian/internal/model"
)

// FuzzParseAnnotations feeds arbitrary values of the meridian.io/*
// annotations to ParseAnnotations; present says which of them the object
// carries (bit i: InputAnnotations[i], all thirteen). It is seeded with the examples of
// annotations_test.go. Invariants: no panic; every error names one of the
// annotations the object carries, with its value, and leaves that setting
// unset; Settings hostnames are canonical (lower case, fully qualified,
// sorted, unique, valid names). `make fuzz` runs it for a bounded time.
func FuzzParseAnnotations(f *testing.F) {
	type seed struct {
		present                                                                                        uint16
		host, strategy, weight, order, ttl, hc, geo, drain, sticky, capa, latTol, minHealthy, fallback string
	}
	all := uint16(1<<13 - 1)
	for _, s := range []seed{
		{1, "App.GSLB.example.com", "", "", "", "", "", "", "", "", "", "", "", ""},
		{1, "b.gslb.example.com, a.gslb.example.com., b.gslb.example.com", "", "", "", "", "", "", "", "", "", "", "", ""},
		{all, "app.gslb.example.com", "failover", "70", "east, west", "1m", "http:8080/healthz", "eu-west,DE,EU,country:AS", "true", "subnet", "true", "30%", "2", "off"},
		{1 | 1<<8, "a.x.test", "", "", "", "", "", "", "", "cookie", "", "", "", ""},
		{1 | 1<<9, "a.x.test", "", "", "", "", "", "", "", "", "yes", "", "", ""},
		{1 | 1<<10, "a.x.test", "latency", "", "", "", "", "", "", "", "", "-5%", "", ""},
		{1 | 1<<11, "a.x.test", "", "", "", "", "", "", "", "", "", "", "1001", ""},
		{1 | 1<<11, "a.x.test", "", "", "", "", "", "", "", "", "", "", " 0 ", ""},
		{1 | 1<<1 | 1<<10, "a.x.test", "latency", "", "", "", "", "", "", "", "", "600%", "", ""},
		{1 | 1<<2, "a.x.test", "", "0", "", "", "", "", "", "", "", "", "", ""},
		{1 | 1<<4, "a.x.test", "", "", "", "45", "", "", "", "", "", "", "", ""},
		{1 << 2, "", "", "5", "", "", "", "", "", "", "", "", "", ""},
		{1, "*.x.test", "", "", "", "", "", "", "", "", "", "", "", ""},
		{1, "app", "", "", "", "", "", "", "", "", "", "", "", ""},
		{1 | 1<<2, "a.x.test", "", "1001", "", "", "", "", "", "", "", "", "", ""},
		{1 | 1<<2, "a.x.test", "", "-1", "", "", "", "", "", "", "", "", "", ""},
		{1 | 1<<2, "a.x.test", "", "heavy", "", "", "", "", "", "", "", "", "", ""},
		{1 | 1<<1, "a.x.test", "random", "", "", "", "", "", "", "", "", "", "", ""},
		{1 | 1<<3, "a.x.test", "", "", "east,east", "", "", "", "", "", "", "", "", ""},
		{1 | 1<<3, "a.x.test", "", "", "east,,west", "", "", "", "", "", "", "", "", ""},
		{1 | 1<<4, "a.x.test", "", "", "", "0", "", "", "", "", "", "", "", ""},
		{1 | 1<<4, "a.x.test", "", "", "", "1.5s", "", "", "", "", "", "", "", ""},
		{1 | 1<<7, "a.x.test", "", "", "", "", "", "", "yes please", "", "", "", "", ""},
		{1 | 1<<6, "a.x.test", "", "", "", "", "", "planet:mars", "", "", "", "", "", ""},
		{1 | 1<<2 | 1<<4, "a.x.test", "", "x", "", "y", "", "", "", "", "", "", "", ""},
		// ParseHealthCheck examples.
		{1 | 1<<5, "a.x.test", "", "", "", "", "https/ready", "", "", "", "", "", "", ""},
		{1 | 1<<5, "a.x.test", "", "", "", "", "tcp:443", "", "", "", "", "", "", ""},
		{1 | 1<<5, "a.x.test", "", "", "", "", "dns", "", "", "", "", "", "", ""},
		{1 | 1<<5, "a.x.test", "", "", "", "", "none", "", "", "", "", "", "", ""},
		{1 | 1<<5, "a.x.test", "", "", "", "", "tcp", "", "", "", "", "", "", ""},
		{1 | 1<<5, "a.x.test", "", "", "", "", "http:70000/", "", "", "", "", "", "", ""},
		{1 | 1<<5, "a.x.test", "", "", "", "", "tcp:443/x", "", "", "", "", "", "", ""},
		{1 | 1<<5, "a.x.test", "", "", "", "", "icmp", "", "", "", "", "", "", ""},
		{1 | 1<<5, "a.x.test", "", "", "", "", "none:80", "", "", "", "", "", "", ""},
		{1 | 1<<12, "a.x.test", "", "", "", "", "", "", "", "", "", "", "", "true"},
		{1 | 1<<12, "a.x.test", "", "", "", "", "", "", "", "", "", "", "", " on "},
	} {
		f.Add(s.present, s.host, s.strategy, s.weight, s.order, s.ttl, s.hc, s.geo, s.drain, s.sticky, s.capa, s.latTol, s.minHealthy, s.fallback)
	}
	f.Fuzz(func(t *testing.T, present uint16, host, strategy, weight, order, ttl, hc, geo, drain, sticky, capa, latTol, minHealthy, fallback string) {
		values := []string{host, strategy, weight, order, ttl, hc, geo, drain, sticky, capa, latTol, minHealthy, fallback}
		if len(values) != len(InputAnnotations) {
			t.Fatalf("the fuzzer covers %d annotations, InputAnnotations has %d", len(values), len(InputAnnotations))
		}
		in := map[string]string{}
		for i, anno := range InputAnnotations {
			if present&(1<<i) != 0 {
				in[anno] = values[i]
			}
		}
		s, errs := ParseAnnotations(in)

		rejected := map[string]bool{}
		for _, e := range errs {
			rejected[e.Annotation] = true
			if !slices.Contains(InputAnnotations, e.Annotation) {
				t.Fatalf("error names no input annotation: %q", e.Error())
			}
			if !strings.HasPrefix(e.Error(), e.Annotation+": ") {
				t.Fatalf("error does not start with its annotation: %q", e.Error())
			}
			if v, ok := in[e.Annotation]; ok && v != e.Value {
				t.Fatalf("error on %s carries value %q, not %q", e.Annotation, e.Value, v)
			}
			if _, ok := in[e.Annotation]; !ok && e.Annotation != AnnoHostname {
				t.Fatalf("error on %s, which the object does not carry: %q", e.Annotation, e.Error())
			}
		}
		if _, ok := in[AnnoHostname]; !ok && !rejected[AnnoHostname] {
			t.Fatalf("a missing hostname is not reported")
		}

		if rejected[AnnoHostname] != (len(s.Hostnames) == 0) {
			t.Fatalf("hostnames %q with hostname error %v", s.Hostnames, rejected[AnnoHostname])
		}
		for i, h := range s.Hostnames {
			if h != model.CanonicalName(h) || h != strings.ToLower(h) || !dns.IsFqdn(h) {
				t.Fatalf("hostname %q is not canonical", h)
			}
			if _, ok := dns.IsDomainName(h); !ok || strings.Contains(h, "*") || dns.CountLabel(h) < 2 {
				t.Fatalf("hostname %q is not a host name", h)
			}
			if i > 0 && s.Hostnames[i-1] >= h {
				t.Fatalf("hostnames %q are not sorted and unique", s.Hostnames)
			}
		}

		// A rejected value leaves its setting unset; an accepted one is in range.
		if rejected[AnnoStrategy] && s.Strategy != "" || s.Strategy != "" && !slices.Contains(model.Strategies, s.Strategy) {
			t.Fatalf("strategy %q (rejected: %v)", s.Strategy, rejected[AnnoStrategy])
		}
		if s.Weight != nil && (rejected[AnnoWeight] || *s.Weight < 0 || *s.Weight > model.MaxWeight) {
			t.Fatalf("weight %d (rejected: %v)", *s.Weight, rejected[AnnoWeight])
		}
		if s.TTL != 0 && (rejected[AnnoTTL] || s.TTL < 1 || s.TTL > model.MaxTTL) {
			t.Fatalf("ttl %d (rejected: %v)", s.TTL, rejected[AnnoTTL])
		}
		if s.MinHealthy != nil && (rejected[AnnoMinHealthy] || *s.MinHealthy < 0 || *s.MinHealthy > model.MaxMinHealthy) {
			t.Fatalf("min_healthy %d (rejected: %v)", *s.MinHealthy, rejected[AnnoMinHealthy])
		}
		if rejected[AnnoSticky] && s.Sticky != "" || s.Sticky != "" && !slices.Contains(model.StickyModes, s.Sticky) {
			t.Fatalf("sticky %q (rejected: %v)", s.Sticky, rejected[AnnoSticky])
		}
		if rejected[AnnoFallbackAnswer] && s.FallbackAnswer != "" || s.FallbackAnswer != "" && !slices.Contains(model.FallbackModes, s.FallbackAnswer) {
			t.Fatalf("fallback answer %q (rejected: %v)", s.FallbackAnswer, rejected[AnnoFallbackAnswer])
		}
		if rejected[AnnoFailoverOrder] && s.FailoverOrder != nil || rejected[AnnoHealthCheck] && s.HealthCheck != nil ||
			rejected[AnnoGeo] && s.Geo != nil || rejected[AnnoDrain] && s.Drain ||
			rejected[AnnoCapacity] && s.Capacity != nil || rejected[AnnoLatencyTolerance] && s.LatencyTolerance != nil {
			t.Fatalf("a rejected annotation set its setting: %+v %v", s, errs)
		}
		if c := s.HealthCheck; c != nil && (!slices.Contains(model.CheckKinds, c.Kind) || c.Port < 0 || c.Port > 65535) {
			t.Fatalf("health check %+v", *c)
		}
		if s.FailoverOrder != nil && (len(s.FailoverOrder) == 0 || firstDuplicate(s.FailoverOrder) != "") {
			t.Fatalf("failover order %q", s.FailoverOrder)
		}
	})
}
