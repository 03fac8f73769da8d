package merge

import (
	"testing"

	"go.uber.org/goleak"

	"github.com/meridian-gslb/meridian/internal/serving/servingtest"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// The pipeline helpers shared with the other pipeline packages' tests.
var (
	load            = servingtest.Load
	answers         = servingtest.Answers
	snapshotAnswers = servingtest.SnapshotAnswers
	discard         = servingtest.Discard
)
