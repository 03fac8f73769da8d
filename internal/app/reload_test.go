package app

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"os"
	"strings"
	"syscall"
	"testing"
	"time"

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

func TestASIGHUPOnceServingReloadsInsteadOfEndingTheProcess(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan error, 1)
	hupped := make(chan string, 1)
	go func() {
		done <- Run(ctx, Options{ConfigPath: writeConfig(t), DNSListen: []string{"127.0.0.1:0"}, HTTPListen: "127.0.0.1:0",
			LogOutput: io.Discard, Started: func(_ []string, h string) {
				// The earliest a supervisor that saw /readyz can send it
				// (without a handler the test binary would end here).
				assert.NoError(t, syscall.Kill(os.Getpid(), syscall.SIGHUP))
				hupped <- h
			}})
	}()
	var httpAddr string
	select {
	case httpAddr = <-hupped:
	case err := <-done:
		t.Fatalf("Run returned before it started: %v", err)
	case <-time.After(30 * time.Second):
		t.Fatal("not started after 30s")
	}
	require.Eventually(t, func() bool {
		resp, err := http.Get("http://" + httpAddr + "/metrics")
		if err != nil {
			return false
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		return strings.Contains(string(body), `meridian_config_reloads_total{result="success"} 1`)
	}, 30*time.Second, 50*time.Millisecond, "the SIGHUP is counted as a reload")
	cancel()
	select {
	case err := <-done:
		require.NoError(t, err)
	case <-time.After(30 * time.Second):
		t.Fatal("Run did not return after its context was cancelled")
	}
}
