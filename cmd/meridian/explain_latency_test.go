package main

import (
	"bytes"
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/meridian-gslb/meridian/internal/engine"
)

func TestExplainPrintsTheRTTTableOfALatencyAnswer(t *testing.T) {
	var b bytes.Buffer
	printExplanation(&b, engine.Explanation{Name: "lat.example.test.", Type: "A", Rcode: "NOERROR", Zone: "example.test.",
		Service: "lat.example.test.", Strategy: "latency", Bucket: "RTTs from region us-east",
		Latency: &engine.ExplainLatency{Region: "us-east", MatchedBy: "region", TolerancePercent: 20, BestMs: 5, BoundMs: 6,
			Regions: []string{"us-east", "us-west"}, RTTs: []engine.ExplainRTT{
				{Target: "192.0.2.1", Cluster: "east", Measured: true, RTTMs: 5, ByRegionMs: map[string]float64{"us-east": 5, "us-west": 60}, InTolerance: true},
				{Target: "192.0.2.2", Cluster: "west", Measured: true, RTTMs: 60.25, ByRegionMs: map[string]float64{"us-east": 60.25}},
			}}}, "")
	out := b.String()
	assert.Contains(t, out, "rtt:      from region us-east (matched by region); tolerance 20%; best 5 ms, bound 6 ms")
	assert.Regexp(t, `TARGET\s+CLUSTER\s+RTT\s+us-east\s+us-west\s+IN TOLERANCE`, out)
	assert.Regexp(t, `192\.0\.2\.1\s+east\s+5 ms\s+5 ms\s+60 ms\s+yes`, out)
	assert.Regexp(t, `192\.0\.2\.2\s+west\s+60\.25 ms\s+60\.25 ms\s+-\s+no`, out)
}
