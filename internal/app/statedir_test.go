package app

import (
	"bytes"
	"log/slog"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestTheStateDirectoryIsMadeAndKept0700(t *testing.T) {
	tests := []struct {
		name   string
		before os.FileMode // 0: does not exist
		warns  bool
	}{
		{"a new state directory is created 0700", 0, false},
		{"an existing 0755 state directory is tightened to 0700, with a warning", 0o755, true},
		{"an existing 0770 state directory is tightened to 0700, with a warning", 0o770, true},
		{"an existing 0700 state directory is left as it is", 0o700, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "state")
			if tt.before != 0 {
				require.NoError(t, os.Mkdir(dir, 0o700))
				require.NoError(t, os.Chmod(dir, tt.before))
			}
			var logs bytes.Buffer
			require.NoError(t, prepareStateDir(dir, slog.New(slog.NewTextHandler(&logs, nil))))
			fi, err := os.Stat(dir)
			require.NoError(t, err)
			assert.Equal(t, os.FileMode(0o700), fi.Mode().Perm())
			if tt.warns {
				assert.Contains(t, logs.String(), "state directory tightened to 0700")
			} else {
				assert.Empty(t, logs.String())
			}
		})
	}
}

func TestAStateDirectoryPathThatIsAFileStopsTheStart(t *testing.T) {
	path := filepath.Join(t.TempDir(), "state")
	require.NoError(t, os.WriteFile(path, nil, 0o600))
	assert.Error(t, prepareStateDir(path, slog.New(slog.DiscardHandler)))
}
