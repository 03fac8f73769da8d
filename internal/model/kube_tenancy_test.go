package model

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestKubernetesTenantLimitValidation(t *testing.T) {
	tests := []struct {
		name      string
		set       func(*Kubernetes)
		path, msg string
	}{
		{"unset limits take the defaults", func(*Kubernetes) {}, "", ""},
		{"the widest limits are allowed", func(k *Kubernetes) {
			k.MaxHostnamesPerObject, k.MaxHostnamesPerNamespace, k.ClaimReleaseAfter = 10000, 100000, Duration(720*time.Hour)
		}, "", ""},
		{"a negative per-object limit is refused with the range", func(k *Kubernetes) { k.MaxHostnamesPerObject = -1 },
			"kubernetes.max_hostnames_per_object", "-1 is out of range (allowed 1..10000; default 100)"},
		{"a per-object limit over 10000 is refused", func(k *Kubernetes) { k.MaxHostnamesPerObject = 10001 },
			"kubernetes.max_hostnames_per_object", "10001 is out of range (allowed 1..10000"},
		{"a per-namespace limit over 100000 is refused", func(k *Kubernetes) { k.MaxHostnamesPerNamespace = 100001 },
			"kubernetes.max_hostnames_per_namespace", "100001 is out of range (allowed 1..100000; default 1000)"},
		{"a release time under a minute is refused", func(k *Kubernetes) { k.ClaimReleaseAfter = Duration(time.Second) },
			"kubernetes.claim_release_after", "1s is out of range (allowed 1m..720h; default 1h0m0s)"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			in := minimal()
			tt.set(&in.Kubernetes)
			requireFieldError(t, Validate(in), tt.path, tt.msg)
		})
	}
}

func TestTheTenantLimitDefaultsAreFilledIn(t *testing.T) {
	out, err := Normalize(minimal())
	require.NoError(t, err)
	assert.Equal(t, 100, out.Kubernetes.MaxHostnamesPerObject)
	assert.Equal(t, 1000, out.Kubernetes.MaxHostnamesPerNamespace)
	assert.Equal(t, time.Hour, out.Kubernetes.ClaimReleaseAfter.D())
}
