package kube

import (
	"fmt"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// longName is a 253-byte host name under gslb.example.com.
var longName = strings.Repeat("a", 44) + "." + strings.Repeat("b", 63) + "." + strings.Repeat("c", 63) + "." + strings.Repeat("d", 63) + ".gslb.example.com"

// bigDNSEndpoint is a DNSEndpoint of about 1.4 MB: n targets of one name
// with the 253-byte longName, each made by target(i).
func bigDNSEndpoint(n int, target func(i int) string) *unstructured.Unstructured {
	targets := make([]any, n)
	for i := range targets {
		targets[i] = target(i)
	}
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "externaldns.k8s.io/v1alpha1", "kind": KindDNSEndpoint,
		"metadata": map[string]any{"namespace": "shop", "name": "big", "uid": "u1", "resourceVersion": "1"},
		"spec":     map[string]any{"endpoints": []any{map[string]any{"dnsName": longName, "recordType": "A", "targets": targets}}},
	}}
}

func distinctV4(i int) string { return fmt.Sprintf("10.%d.%d.%d", i>>16&255, i>>8&255, i&255) }

// badTarget is a valid target first (so the object is watched), then
// targets that are not IPv4 addresses.
func badTarget(i int) string {
	if i == 0 {
		return "198.51.100.1"
	}
	return fmt.Sprintf("bad-%06d", i)
}

// widestDNSEndpoint is the largest DNSEndpoint read whole: the most
// endpoints, each with the most targets, all distinct and of one name.
func widestDNSEndpoint() *unstructured.Unstructured {
	eps := make([]any, MaxDNSEndpointEndpoints)
	for i := range eps {
		targets := make([]any, MaxDNSEndpointTargets)
		for j := range targets {
			targets[j] = distinctV4(i*MaxDNSEndpointTargets + j)
		}
		eps[i] = map[string]any{"dnsName": longName, "recordType": "A", "targets": targets}
	}
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "externaldns.k8s.io/v1alpha1", "kind": KindDNSEndpoint,
		"metadata": map[string]any{"namespace": "shop", "name": "wide", "uid": "u2", "resourceVersion": "1"},
		"spec":     map[string]any{"endpoints": eps},
	}}
}

// BenchmarkABigDNSEndpoint reads a 1.4 MB DNSEndpoint (100 000 targets)
// as an informer event does: the slim transform, then the source's read.
func BenchmarkABigDNSEndpoint(b *testing.B) {
	for _, c := range []struct {
		name string
		obj  func() *unstructured.Unstructured
	}{
		{"100k distinct A targets", func() *unstructured.Unstructured { return bigDNSEndpoint(100_000, distinctV4) }},
		{"100k bad A targets", func() *unstructured.Unstructured { return bigDNSEndpoint(100_000, badTarget) }},
		{"the most endpoints with the most distinct targets of one name", widestDNSEndpoint},
	} {
		b.Run(c.name, func(b *testing.B) {
			m := gwMember(&testing.T{})
			u := c.obj()
			b.ReportAllocs()
			for b.Loop() {
				s, _ := slimDNSEndpoint(u.DeepCopy())
				in, _ := m.dnsEndpoints.read(s.(*unstructured.Unstructured))
				problemBytes := 0
				for _, p := range in.problems {
					problemBytes += len(p)
				}
				b.ReportMetric(float64(problemBytes), "problem-bytes")
				b.ReportMetric(float64(len(in.targets)), "targets")
			}
		})
	}
}
