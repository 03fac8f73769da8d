package app

import (
	"bytes"
	"log/slog"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/meridian-gslb/meridian/internal/extdns"
	"github.com/meridian-gslb/meridian/internal/extdns/webhook"
	"github.com/meridian-gslb/meridian/internal/model"
)

func TestTheWebhookWarnsWhenTokensCrossTheNetworkInClear(t *testing.T) {
	for _, tc := range []struct {
		name   string
		listen string
		tls    bool
		warn   bool
	}{
		{"plain HTTP on every address warns", "0.0.0.0:8888", false, true},
		{"plain HTTP on a routable address warns", "10.0.0.5:8888", false, true},
		{"plain HTTP on every IPv6 address warns", "[::]:8888", false, true},
		{"plain HTTP on IPv4 loopback does not warn", "127.0.0.1:8888", false, false},
		{"plain HTTP on IPv6 loopback does not warn", "[::1]:8888", false, false},
		{"TLS on every address does not warn", "0.0.0.0:8888", true, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			assert.Equal(t, tc.warn, tokensInClear(tc.listen, tc.tls))
		})
	}
}

func TestAStateFileRecordTheConfigNoLongerAcceptsIsDroppedWithAWarning(t *testing.T) {
	path := filepath.Join(t.TempDir(), "externaldns.json")
	require.NoError(t, os.WriteFile(path, []byte(`{"clusters":{"east":[
		{"dnsName":"app.gslb.example.com","targets":["198.51.100.1"],"recordType":"A","recordTTL":30},
		{"dnsName":"app.removed.example.org","targets":["198.51.100.1"],"recordType":"A","recordTTL":30}]}}`), 0o600))
	store, err := extdns.OpenStore(path)
	require.NoError(t, err)
	var buf bytes.Buffer
	log := slog.New(slog.NewTextHandler(&buf, nil))
	d := &model.Desired{Zones: []model.Zone{{Apex: "gslb.example.com", TTL: 30}}}
	pruneStore(log, store, extdns.NewRules(d, extdns.Limits{}, nil), []webhook.Client{{Cluster: "east", Token: "x"}})
	assert.Contains(t, buf.String(), "level=WARN")
	assert.Contains(t, buf.String(), "name=app.removed.example.org")
	assert.Contains(t, buf.String(), "not under a served zone")
	assert.Len(t, store.Records("east"), 1, "the start goes on with the records still accepted")
}
