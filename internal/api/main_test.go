package api

import (
	"testing"

	"go.uber.org/goleak"
)

// TestMain fails the package's tests when a goroutine outlives them.
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m,
		// net/http's server, closing a connection whose request body was
		// not read (the limit tests), waits 500 ms before the reset
		// (rstAvoidanceDelay) in a goroutine of its own; it ends by itself
		// but can outlive goleak's retries on a busy machine.
		goleak.IgnoreAnyFunction("net/http.(*conn).closeWriteAndWait"),
	)
}
