package main

import (
	"bytes"
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/meridian-gslb/meridian/internal/engine"
)

func TestExplainPrintsConfiguredTimesReadyForCapacityAwareServices(t *testing.T) {
	eff := 10.0
	e := engine.Explanation{Name: "app.example.test.", Type: "A", Rcode: "NOERROR", Answer: []string{}, Candidates: []engine.ExplainCandidate{
		{Target: "192.0.2.1", Cluster: "east", Weight: 50, Share: 16.7, State: "up", Kept: true, Why: "up",
			Capacity: &engine.CapacityState{Percent: 20, Source: "kubernetes", Why: "2 of 10 endpoints ready"}, EffectiveWeight: &eff},
		{Target: "192.0.2.2", Cluster: "west", Weight: 50, Share: 83.3, State: "up", Kept: true, Why: "up"},
	}}
	var out bytes.Buffer
	printExplanation(&out, e, "")
	assert.Contains(t, out.String(), "192.0.2.1  east     50×20%=10  16.7%")
	assert.Contains(t, out.String(), "192.0.2.2  west     50         83.3%")
}
