package model

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestTheMCSZoneIsValidatedAgainstTheServedZones(t *testing.T) {
	tests := []struct {
		name, zone string
		off        bool
		path, msg  string
	}{
		{name: "no mcs section leaves the source off", off: true},
		{name: "a served zone is accepted in any case and without the final dot", zone: "EXAMPLE.test"},
		{name: "a served zone with the final dot is accepted", zone: "example.test."},
		{name: "an empty zone is refused as required", zone: " ", path: "kubernetes.mcs.zone", msg: "is required"},
		{name: "a zone Meridian does not serve is refused with the served ones", zone: "other.test",
			path: "kubernetes.mcs.zone", msg: `"other.test" is not a served zone (allowed: one of zones[].apex: example.test.)`},
		{name: "a name under a served zone is not a zone", zone: "sub.example.test", path: "kubernetes.mcs.zone", msg: "is not a served zone"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			in := minimal()
			if !tt.off {
				in.Kubernetes.MCS = &KubeMCS{Zone: tt.zone}
			}
			requireFieldError(t, Validate(in), tt.path, tt.msg)
		})
	}
}

func TestTheMCSZoneIsNormalizedToItsCanonicalName(t *testing.T) {
	in := minimal()
	in.Kubernetes.MCS = &KubeMCS{Zone: "Example.TEST"}
	out, err := Normalize(in)
	require.NoError(t, err)
	assert.Equal(t, "example.test.", out.Kubernetes.MCS.Zone)
	assert.Equal(t, "example.test.", out.Kubernetes.MCSZone())
	assert.Equal(t, "Example.TEST", in.Kubernetes.MCS.Zone, "input unchanged")
	assert.Empty(t, minimal().Kubernetes.MCSZone(), "off without the section")
}
