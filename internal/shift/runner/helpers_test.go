package runner

import (
	"log/slog"
	"testing"

	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/meridian-gslb/meridian/internal/admin"
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

func newPipeline(t *testing.T, l *serving.Loaded, opts serving.Options) *serving.Pipeline {
	t.Helper()
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	p, err := serving.New(l, opts)
	require.NoError(t, err)
	return p
}

func memoryAdmin(t *testing.T, node string) *admin.Store {
	t.Helper()
	s, err := admin.Open("", node, 0)
	require.NoError(t, err)
	return s
}
