package model

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestKubernetesStatusRateValidation(t *testing.T) {
	tests := []struct {
		name       string
		qps, burst int
		path, msg  string
	}{
		{"unset fields take the defaults", 0, 0, "", ""},
		{"the lowest rate and burst are one", 1, 1, "", ""},
		{"the highest rate and burst are allowed", 1000, 5000, "", ""},
		{"a negative rate is refused with the range", -5, 0, "kubernetes.status_qps", "-5 is out of range (allowed 1..1000"},
		{"a rate over 1000 per second is refused", 1001, 0, "kubernetes.status_qps", "1001 is out of range (allowed 1..1000"},
		{"a negative burst is refused", 0, -1, "kubernetes.status_burst", "-1 is out of range (allowed 1..5000)"},
		{"a burst over 5000 is refused", 0, 5001, "kubernetes.status_burst", "5001 is out of range (allowed 1..5000)"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			in := minimal()
			in.Kubernetes.StatusQPS, in.Kubernetes.StatusBurst = tt.qps, tt.burst
			requireFieldError(t, Validate(in), tt.path, tt.msg)
		})
	}
}

func TestTheStatusRateDefaultsAreFilledIn(t *testing.T) {
	out, err := Normalize(minimal())
	require.NoError(t, err)
	assert.Equal(t, DefaultKubeStatusQPS, out.Kubernetes.StatusQPS)
	assert.Equal(t, DefaultKubeStatusBurst, out.Kubernetes.StatusBurst)
}
