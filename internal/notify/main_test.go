package notify

import (
	"testing"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m,
		// Idle keep-alive connections of httptest servers close asynchronously.
		goleak.IgnoreAnyFunction("net/http.(*conn).closeWriteAndWait"),
		goleak.IgnoreAnyFunction("internal/poll.runtime_pollWait"))
}
