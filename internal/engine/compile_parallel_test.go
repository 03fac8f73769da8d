package engine

import (
	"bytes"
	"math"
	"os"
	"reflect"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/meridian-gslb/meridian/internal/config"
	"github.com/meridian-gslb/meridian/internal/config/scalegen"
	"github.com/meridian-gslb/meridian/internal/model"
)

// everyThirdDown is a Health with some endpoints down, so that the
// compiled pools are not all the everything-up ones.
type everyThirdDown struct{}

func (everyThirdDown) Endpoint(service, target string) State {
	if (len(service)+len(target))%3 == 0 {
		return Down
	}
	return Up
}

func (everyThirdDown) Cluster(string) State { return Unknown }

// withCompile runs f with the compile of many services on workers
// goroutines (1: one after the other).
func withCompile(t *testing.T, workers int, f func()) {
	t.Helper()
	minimum, count := parallelCompileMin, compileWorkers
	t.Cleanup(func() { parallelCompileMin, compileWorkers = minimum, count })
	parallelCompileMin, compileWorkers = 1, func() int { return workers }
	if workers == 1 {
		parallelCompileMin = math.MaxInt
	}
	f()
}

func scaleDesired(t *testing.T, n int) *model.Desired {
	t.Helper()
	var buf bytes.Buffer
	require.NoError(t, scalegen.Write(&buf, scalegen.Options{Services: n}))
	f, err := config.Parse("scale.yaml", buf.Bytes())
	require.NoError(t, err)
	return &f.Desired
}

func TestParallelCompile(t *testing.T) {
	d := scaleDesired(t, 3000) // 12 chunks of compileChunk
	now := time.Unix(1_700_000_000, 0)
	compile := func(workers int, opts Options) *Snapshot {
		var s *Snapshot
		withCompile(t, workers, func() {
			var err error
			s, err = Compile(d, opts)
			require.NoError(t, err)
		})
		return s
	}

	t.Run("a compile on several goroutines gives the snapshot of a compile one service after the other", func(t *testing.T) {
		for _, h := range []Health{NoHealth{}, everyThirdDown{}} {
			opts := Options{Now: now, Health: h}
			serial, parallel := compile(1, opts), compile(4, opts)
			require.Len(t, serial.services, len(d.Services))
			assert.True(t, reflect.DeepEqual(serial, parallel), "health %T", h)
		}
	})

	t.Run("an incremental compile on several goroutines shares and compiles the same services", func(t *testing.T) {
		prev := compile(1, Options{Now: now})
		serial := compile(1, Options{Now: now, Health: everyThirdDown{}, Previous: prev})
		parallel := compile(4, Options{Now: now, Health: everyThirdDown{}, Previous: prev})
		require.NotEmpty(t, serial.fresh)
		assert.Equal(t, serial.fresh, parallel.fresh)
		assert.Equal(t, serial.shared, parallel.shared)
		assert.True(t, reflect.DeepEqual(serial, parallel))
	})

	t.Run("a service outside every zone fails the compile with its name, after the services before it", func(t *testing.T) {
		bad := *d
		bad.Services = append([]model.Service(nil), d.Services...)
		bad.Services[2500].Name = "s2500.elsewhere.test."
		withCompile(t, 4, func() {
			_, err := Compile(&bad, Options{Now: now})
			require.EqualError(t, err, "service s2500.elsewhere.test.: no zone contains it")
		})
	})

	t.Run("a panic while compiling a service on a worker is raised on the caller's goroutine", func(t *testing.T) {
		bad := *d
		bad.Services = append([]model.Service(nil), d.Services...)
		eps := append([]model.Endpoint(nil), bad.Services[1700].Endpoints...)
		eps[0].Address = "not an address" // a desired state that was not validated
		bad.Services[1700].Endpoints = eps
		withCompile(t, 4, func() {
			assert.Panics(t, func() { _, _ = Compile(&bad, Options{Now: now}) })
		})
	})
}

// BenchmarkCompileServices compiles a generated state of
// $MERIDIAN_SCALE_SERVICES services (default 10 000; see
// internal/config/scalegen) one service after the other and on every core:
//
//	MERIDIAN_SCALE_SERVICES=100000 go test -run '^$' -bench CompileServices -benchmem ./internal/engine/
func BenchmarkCompileServices(b *testing.B) {
	n := 10_000
	if s := os.Getenv("MERIDIAN_SCALE_SERVICES"); s != "" {
		var err error
		n, err = strconv.Atoi(s)
		require.NoError(b, err, "MERIDIAN_SCALE_SERVICES")
	}
	var buf bytes.Buffer
	require.NoError(b, scalegen.Write(&buf, scalegen.Options{Services: n}))
	f, err := config.Parse("scale.yaml", buf.Bytes())
	require.NoError(b, err)
	for _, bc := range []struct {
		name    string
		minimum int
	}{{"serial", math.MaxInt}, {"parallel", parallelCompileMin}} {
		b.Run(bc.name, func(b *testing.B) {
			defer func(m int) { parallelCompileMin = m }(parallelCompileMin)
			parallelCompileMin = bc.minimum
			b.ReportAllocs()
			for b.Loop() {
				if _, err := Compile(&f.Desired, Options{}); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
