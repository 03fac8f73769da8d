package app

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestWriterRole(t *testing.T) {
	t.Run("nobody writes before the election starts", func(t *testing.T) {
		var w writerRole
		var seen []bool
		w.OnChange(func(b bool) { seen = append(seen, b) })
		assert.False(t, w.Writer())
		assert.Equal(t, []bool{false}, seen, "a subscriber learns the role at once")
	})
	t.Run("without the ring the process writes and every subscriber is told", func(t *testing.T) {
		var w writerRole
		var seen []bool
		w.OnChange(func(b bool) { seen = append(seen, b) })
		w.solo.Store(true)
		w.changed(true)
		assert.True(t, w.Writer())
		assert.Equal(t, []bool{false, true}, seen)
		var late []bool
		w.OnChange(func(b bool) { late = append(late, b) })
		assert.Equal(t, []bool{true}, late, "a later subscriber starts as the writer")
	})
}
