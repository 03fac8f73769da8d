package runner

import (
	"testing"

	"go.uber.org/goleak"

	"github.com/meridian-gslb/meridian/internal/serving/servingtest"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// The pipeline helpers shared with the other pipeline packages' tests.
const baseConfig = servingtest.BaseConfig

var (
	load        = servingtest.Load
	newPipeline = servingtest.New
	memoryAdmin = servingtest.MemoryAdmin
)
