//go:build e2e

package e2e

import (
	"context"
	"os/exec"
	"time"
)

// runNoFail runs a command with a short timeout and returns its output even on failure.
func runNoFail(name string, args ...string) string {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	out, _ := exec.CommandContext(ctx, name, args...).CombinedOutput()
	return string(out)
}
