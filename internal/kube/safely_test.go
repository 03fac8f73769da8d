package kube

import (
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestAPanicWhileHandlingAWatchedObjectIsRecoveredAndCounted(t *testing.T) {
	l := newLab(t)
	svc := lb("team-a", "web", "app.gslb.example.com", "192.0.2.10", time.Now())
	assert.NotPanics(t, func() { l.mem.safely(svc, func(any) { panic("a bug some object runs into") }) })
	assert.Equal(t, 1.0, testutil.ToFloat64(l.mg.m.panics.WithLabelValues("east")))
	l.mem.safely(svc, l.mem.services.upsert)
	assert.Len(t, l.mem.objects(), 1, "the next object is handled as usual")
}

func TestBuildSafeTurnsAPanicIntoAnError(t *testing.T) {
	_, _, err := BuildSafe([]Object{{Valid: true}}, nil, nil, nil, nil, time.Time{}) // no desired state: Build cannot run
	require.Error(t, err)
	assert.Contains(t, err.Error(), "panicked (recovered)")
}
