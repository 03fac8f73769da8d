package benchenv

import (
	"bufio"
	"os/exec"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestStop(t *testing.T) {
	for _, tc := range []struct {
		name, script string
		wantKilled   bool
	}{
		{"a process that exits on SIGTERM is not killed", "echo ready; exec sleep 30", false},
		{"a process that ignores SIGTERM is killed after the grace", "trap '' TERM; echo ready; while :; do sleep 1; done", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cmd := exec.Command("sh", "-c", tc.script)
			out, err := cmd.StdoutPipe()
			require.NoError(t, err)
			require.NoError(t, cmd.Start())
			line, err := bufio.NewReader(out).ReadString('\n')
			require.NoError(t, err)
			require.Equal(t, "ready\n", line, "the script must set its trap first")
			exited := make(chan struct{})
			go func() { _ = cmd.Wait(); close(exited) }()
			assert.Equal(t, tc.wantKilled, Stop(cmd.Process, exited, time.Second))
		})
	}
}
