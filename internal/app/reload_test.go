package app

import (
	"io"
	"log/slog"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/meridian-gslb/meridian/internal/serving"
)

func TestAReloadThatPanicsKeepsThePreviousConfigServing(t *testing.T) {
	path := writeConfig(t)
	l, err := serving.Load(path, nil, "")
	require.NoError(t, err)
	reg := prometheus.NewRegistry()
	m := serving.NewMetrics(reg)
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	pipe, err := serving.New(l, serving.Options{Logger: log, Metrics: m})
	require.NoError(t, err)
	a := &App{opts: Options{ConfigPath: path}, log: log, reg: reg, pipe: pipe}
	before := pipe.State().Snapshot

	loadConfig = func(string, []byte, string) (*serving.Loaded, error) { panic("test: the decoder panics") }
	t.Cleanup(func() { loadConfig = serving.Load })
	err = a.Reload("SIGHUP")
	require.Error(t, err)
	assert.Contains(t, err.Error(), "panicked (test: the decoder panics)")
	assert.Same(t, before, pipe.State().Snapshot, "the previous snapshot keeps serving")
	assert.Contains(t, pipe.State().ReloadErr, "panicked")
	assert.InDelta(t, 1, reloads(t, reg, "failure"), 0, "counted as a failed reload")

	loadConfig = serving.Load
	require.NoError(t, a.Reload("SIGHUP"), "the next good reload is served")
	assert.NotSame(t, before, pipe.State().Snapshot)
	assert.Empty(t, pipe.State().ReloadErr)
	assert.InDelta(t, 1, reloads(t, reg, "success"), 0)
}

// reloads is meridian_config_reloads_total{result} in reg.
func reloads(t *testing.T, reg *prometheus.Registry, result string) float64 {
	t.Helper()
	mfs, err := reg.Gather()
	require.NoError(t, err)
	for _, mf := range mfs {
		if mf.GetName() != "meridian_config_reloads_total" {
			continue
		}
		for _, m := range mf.GetMetric() {
			for _, lp := range m.GetLabel() {
				if lp.GetName() == "result" && lp.GetValue() == result {
					return m.GetCounter().GetValue()
				}
			}
		}
	}
	t.Fatalf("meridian_config_reloads_total{result=%q} not found", result)
	return 0
}
