package follow

import (
	"bytes"
	"os"
	"strconv"
	"syscall"
	"testing"

	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/meridian-gslb/meridian/internal/config/scalegen"
	"github.com/meridian-gslb/meridian/internal/model"
	"github.com/meridian-gslb/meridian/internal/serving"
	"github.com/meridian-gslb/meridian/internal/serving/servingtest"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// The pipeline helpers shared with the other pipeline packages' tests.
const baseConfig = servingtest.BaseConfig

var (
	load        = servingtest.Load
	answers     = servingtest.Answers
	newPipeline = servingtest.New
	discard     = servingtest.Discard
)

// scaleDesired is the desired state of n generated services
// (internal/config/scalegen: three endpoints each, weighted, geo and
// failover in turn), for the benchmarks.
func scaleDesired(tb testing.TB, n int) model.Desired {
	tb.Helper()
	var buf bytes.Buffer
	require.NoError(tb, scalegen.Write(&buf, scalegen.Options{Services: n}))
	l, err := serving.Load("scale.yaml", buf.Bytes(), "")
	require.NoError(tb, err)
	return l.File.Desired
}

// processCPU is the CPU time the process has used (user and system, all
// threads), in ns: steadier than the wall time on a shared machine.
func processCPU(tb testing.TB) int64 {
	var ru syscall.Rusage
	require.NoError(tb, syscall.Getrusage(syscall.RUSAGE_SELF, &ru))
	return ru.Utime.Nano() + ru.Stime.Nano()
}

func envInt(tb testing.TB, name string, def int) int {
	v := os.Getenv(name)
	if v == "" {
		return def
	}
	n, err := strconv.Atoi(v)
	require.NoError(tb, err, "%s", name)
	return n
}
