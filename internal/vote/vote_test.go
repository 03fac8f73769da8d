package vote

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
)

func TestNewer(t *testing.T) {
	at := time.Date(2026, 12, 5, 0, 0, 0, 0, time.UTC)
	old := Vote{Seq: 5, ObservedAt: at}
	for _, tc := range []struct {
		name string
		v    Vote
		want bool
	}{
		{"a higher sequence replaces a lower one", Vote{Seq: 6, ObservedAt: at.Add(-time.Hour)}, true},
		{"a lower sequence never replaces a higher one", Vote{Seq: 4, ObservedAt: at.Add(time.Hour)}, false},
		{"the same sequence observed later replaces it", Vote{Seq: 5, ObservedAt: at.Add(time.Second)}, true},
		{"the same vote does not replace itself", old, false},
	} {
		t.Run(tc.name, func(t *testing.T) { assert.Equal(t, tc.want, tc.v.Newer(old)) })
	}
}

func TestSubjectsAndStatusesReadAsTheyAreLogged(t *testing.T) {
	assert.Equal(t, "app.example. 192.0.2.1", EndpointSubject("app.example.", "192.0.2.1").String())
	assert.Equal(t, "cluster east", ClusterSubject("east").String())
	assert.True(t, ClusterSubject("east").IsCluster())
	assert.False(t, EndpointSubject("app.example.", "192.0.2.1").IsCluster())
	assert.Equal(t, []string{"unknown", "up", "down"}, []string{Unknown.String(), Up.String(), Down.String()})
}
