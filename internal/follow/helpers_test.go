package follow

import (
	"bytes"
	"log/slog"
	"os"
	"strconv"
	"syscall"
	"testing"

	"github.com/miekg/dns"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/meridian-gslb/meridian/internal/config/scalegen"
	"github.com/meridian-gslb/meridian/internal/engine"
	"github.com/meridian-gslb/meridian/internal/model"
	"github.com/meridian-gslb/meridian/internal/serving"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

const baseConfig = `
zones:
  - apex: gslb.test
    soa: {serial: 7, minimum: 20}
    nameservers: [{name: ns1.gslb.test, ipv4: [192.0.2.53]}]
clusters:
  - {name: east, region: us-east}
  - {name: west, region: us-west}
services:
  - name: app.gslb.test
    endpoints:
      - {address: 192.0.2.1, cluster: east}
      - {address: 192.0.2.2, cluster: west}
`

func load(t *testing.T, text string) *serving.Loaded {
	t.Helper()
	l, err := serving.Load("test.yaml", []byte(text), "")
	require.NoError(t, err)
	return l
}

// answers returns the A records the pipeline's snapshot gives for name:
// enough draws that every address in the answer set shows up.
func answers(t testing.TB, p *serving.Pipeline, name string) map[string]bool {
	t.Helper()
	out := map[string]bool{}
	snap := p.Store().Load()
	require.NotNil(t, snap)
	for range 64 {
		var r engine.Result
		snap.Lookup(name, dns.TypeA, engine.Client{}, &r)
		for _, rr := range r.Answer {
			if a, ok := rr.(*dns.A); ok {
				out[a.A.String()] = true
			}
		}
	}
	return out
}

func newPipeline(t *testing.T, l *serving.Loaded, opts serving.Options) *serving.Pipeline {
	t.Helper()
	if opts.Metrics == nil {
		opts.Metrics = serving.NewMetrics(prometheus.NewRegistry())
	}
	if opts.Logger == nil {
		opts.Logger = discard()
	}
	p, err := serving.New(l, opts)
	require.NoError(t, err)
	return p
}

func discard() *slog.Logger { return slog.New(slog.DiscardHandler) }

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
