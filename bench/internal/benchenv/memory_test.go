package benchenv

import (
	"os"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestMemoryReadsThisProcess(t *testing.T) {
	rss, hwm, err := Memory(os.Getpid())
	require.NoError(t, err)
	assert.Positive(t, rss)
	assert.GreaterOrEqual(t, hwm, rss, "the peak is at least the current RSS")
	_, _, err = Memory(-1)
	assert.Error(t, err, "a process that does not exist is an error")
}
