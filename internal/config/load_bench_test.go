package config

import (
	"bytes"
	"os"
	"strconv"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/meridian-gslb/meridian/internal/config/scalegen"
	"github.com/meridian-gslb/meridian/internal/engine"
	"github.com/meridian-gslb/meridian/internal/model"
)

// BenchmarkLoad measures the load path of `meridian check-config` and
// `meridian serve` on a generated file (internal/config/scalegen: one
// zone, N services of 3 endpoints, weighted/geo/failover), step by step:
// parse (the YAML decode of a good file: its services in batches on
// every core), parse-whole (the same from one node tree), parse-positioned (the decode
// that keeps positions, for a file that fails), validate (model.Normalize and the server section),
// compile (engine.Compile) and the whole of Prepare. N is 10 000, or
// $MERIDIAN_SCALE_SERVICES (e.g. 100000). Profile with
//
//	go test -run '^$' -bench Load -benchmem -memprofile mem.out ./internal/config/
//	go tool pprof -sample_index=alloc_space -top mem.out
func BenchmarkLoad(b *testing.B) {
	data := scaleData(b)
	b.Run("parse", func(b *testing.B) {
		b.ReportAllocs()
		b.SetBytes(int64(len(data)))
		defer reportCPU(b)()
		for b.Loop() {
			if _, ok := decodeFast(data); !ok {
				b.Fatal("the fast decode refused the generated file")
			}
		}
	})
	b.Run("parse-whole", func(b *testing.B) {
		b.ReportAllocs()
		b.SetBytes(int64(len(data)))
		defer reportCPU(b)()
		for b.Loop() {
			if _, ok := decodeWhole(data); !ok {
				b.Fatal("the whole-file decode refused the generated file")
			}
		}
	})
	b.Run("parse-positioned", func(b *testing.B) {
		b.ReportAllocs()
		b.SetBytes(int64(len(data)))
		defer reportCPU(b)()
		for b.Loop() {
			var f File
			if err := decode(data, &f); err != nil {
				b.Fatal(err)
			}
		}
	})
	var f File
	require.NoError(b, decode(data, &f))
	b.Run("validate", func(b *testing.B) {
		b.ReportAllocs()
		defer reportCPU(b)()
		for b.Loop() {
			if _, err := model.Normalize(&f.Desired); err != nil {
				b.Fatal(err)
			}
			if errs := f.Server.validate(); len(errs) > 0 {
				b.Fatal(errs)
			}
		}
	})
	d, err := model.Normalize(&f.Desired)
	require.NoError(b, err)
	b.Run("compile", func(b *testing.B) {
		b.ReportAllocs()
		defer reportCPU(b)()
		for b.Loop() {
			if _, err := engine.Compile(d, engine.Options{}); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("prepare", func(b *testing.B) {
		b.ReportAllocs()
		b.SetBytes(int64(len(data)))
		defer reportCPU(b)()
		for b.Loop() {
			f, loc, err := Prepare("scale.yaml", data, "")
			if err != nil {
				b.Fatal(err)
			}
			loc.Close()
			_ = f
		}
	})
}

// reportCPU reports the process's CPU time (user+system, every thread:
// the GC's too) per op, the figure to compare on a shared machine where
// wall time depends on the neighbours: defer reportCPU(b)().
func reportCPU(b *testing.B) func() {
	start := cpuTime()
	return func() {
		if b.N > 0 {
			b.ReportMetric((cpuTime()-start).Seconds()/float64(b.N), "cpu-s/op")
		}
	}
}

func cpuTime() time.Duration {
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

var scale struct {
	once sync.Once
	data []byte
	err  error
}

// scaleData is the generated file of $MERIDIAN_SCALE_SERVICES services
// (default 10 000), made once per test binary.
func scaleData(tb testing.TB) []byte {
	tb.Helper()
	scale.once.Do(func() {
		n := 10_000
		if s := os.Getenv("MERIDIAN_SCALE_SERVICES"); s != "" {
			if n, scale.err = strconv.Atoi(s); scale.err != nil {
				return
			}
		}
		var buf bytes.Buffer
		scale.err = scalegen.Write(&buf, scalegen.Options{Services: n})
		scale.data = buf.Bytes()
	})
	require.NoError(tb, scale.err, "MERIDIAN_SCALE_SERVICES")
	return scale.data
}
