package admin

import (
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/meridian-gslb/meridian/internal/engine"
)

// opaque is a Health that cannot tell what changed.
type opaque struct{ engine.NoHealth }

func (opaque) ChangedSince(engine.Health) (map[string]bool, bool) { return nil, false }

func TestForcedChangedSince(t *testing.T) {
	up := func(keys ...string) map[string]bool {
		m := map[string]bool{}
		for _, k := range keys {
			m[k] = true
		}
		return m
	}
	ep := engine.NoteKey("app.gslb.test.", "192.0.2.1")
	for _, tc := range []struct {
		name   string
		next   forced
		prev   engine.Health
		want   map[string]bool
		wantOK bool
	}{
		{"the same forced-up endpoints over the same health change nothing", forced{engine.NoHealth{}, up(ep)}, forced{engine.NoHealth{}, up(ep)}, map[string]bool{}, true},
		{"an endpoint newly forced up changes its service", forced{engine.NoHealth{}, up(ep)}, engine.NoHealth{}, map[string]bool{"app.gslb.test.": true}, true},
		{"an endpoint no longer forced up changes its service", forced{engine.NoHealth{}, up(engine.NoteKey("b.gslb.test.", "192.0.2.9"))}, forced{engine.NoHealth{}, up(ep)}, map[string]bool{"app.gslb.test.": true, "b.gslb.test.": true}, true},
		{"a cluster newly forced up cannot be told per service", forced{engine.NoHealth{}, up(engine.NoteKey("", "east"))}, engine.NoHealth{}, nil, false},
		{"an inner health that cannot tell makes it unknown", forced{opaque{}, up(ep)}, forced{opaque{}, up(ep)}, nil, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, ok := tc.next.ChangedSince(tc.prev)
			assert.Equal(t, tc.wantOK, ok)
			assert.Equal(t, tc.want, got)
		})
	}
}
