package api

import (
	"encoding/json"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/meridian-gslb/meridian/internal/config"
	"github.com/meridian-gslb/meridian/internal/engine"
	"github.com/meridian-gslb/meridian/internal/geo"
)

const explainConfig = `
zones:
  - apex: gslb.test
    nameservers: [{name: ns1.gslb.test, ipv4: [192.0.2.53]}]
clusters:
  - {name: east, region: us-east, continent: NA, country: US}
  - {name: eu, region: eu-west, continent: EU, country: DE}
services:
  - name: app.gslb.test
    endpoints:
      - {address: 192.0.2.1, cluster: east, weight: 700}
      - {address: 192.0.2.2, cluster: eu, weight: 300}
      - {address: "2001:db8::1", cluster: east}
  - name: www.gslb.test
    strategy: geo
    geo: {default: [east]}
    endpoints:
      - {address: 203.0.113.1, cluster: east}
      - {address: 203.0.113.3, cluster: eu}
geo:
  networks:
    - {cidr: 10.3.0.0/16, region: eu-west, country: DE, continent: EU}
`

type fixedSource struct{ s *engine.Snapshot }

func (f fixedSource) Load() *engine.Snapshot { return f.s }

func explainSource(t *testing.T) fixedSource {
	t.Helper()
	f, err := config.Parse("explain.yaml", []byte(explainConfig))
	require.NoError(t, err)
	loc, err := geo.New([]geo.Network{{Prefix: netip.MustParsePrefix("10.3.0.0/16"), Region: "eu-west", Country: "DE", Continent: "EU"}}, "")
	require.NoError(t, err)
	s, err := engine.Compile(&f.Desired, engine.Options{Locator: loc})
	require.NoError(t, err)
	return fixedSource{s}
}

func TestExplainHandler(t *testing.T) {
	h := ExplainHandler(explainSource(t))
	tests := []struct {
		name  string
		query string
		code  int
		check func(t *testing.T, e engine.Explanation, body string)
	}{
		{"a weighted name answers with its candidates and shares", "name=app.gslb.test", 200, func(t *testing.T, e engine.Explanation, _ string) {
			assert.Equal(t, "A", e.Type)
			assert.Equal(t, "gslb.test.", e.Zone)
			assert.Equal(t, "weighted", e.Strategy)
			assert.Equal(t, "none", e.Client.Source)
			require.Len(t, e.Candidates, 3)
			assert.InDelta(t, 70, e.Candidates[0].Share, 0.01)
		}},
		{"the type may be given by name in any case", "name=app.gslb.test&type=aaaa", 200, func(t *testing.T, e engine.Explanation, _ string) {
			assert.Equal(t, "AAAA", e.Type)
			assert.Equal(t, []string{"app.gslb.test. 30 IN AAAA 2001:db8::1"}, e.Answer)
		}},
		{"the type may be given as a number", "name=app.gslb.test&type=28", 200, func(t *testing.T, e engine.Explanation, _ string) {
			assert.Equal(t, "AAAA", e.Type)
		}},
		{"a subnet inside a mapped network is an ECS client located by the custom map", "name=www.gslb.test&subnet=10.3.1.0/24", 200, func(t *testing.T, e engine.Explanation, _ string) {
			assert.Equal(t, "ecs", e.Client.Source)
			assert.Equal(t, "custom map", e.Client.LocatedBy)
			assert.Equal(t, 24, e.Client.Bits)
			assert.True(t, e.Candidates[1].Kept)
		}},
		{"host bits of a subnet are cleared as in an ECS option", "name=www.gslb.test&subnet=10.3.1.7/24", 200, func(t *testing.T, e engine.Explanation, _ string) {
			assert.Equal(t, "10.3.1.0", e.Client.Addr)
		}},
		{"a client address is used as the source address", "name=www.gslb.test&client=10.9.9.9", 200, func(t *testing.T, e engine.Explanation, _ string) {
			assert.Equal(t, "client", e.Client.Source)
			assert.False(t, e.Client.Located)
			assert.True(t, e.Candidates[0].Kept)
		}},
		{"a name outside our zones is explained as REFUSED", "name=example.org", 200, func(t *testing.T, e engine.Explanation, _ string) {
			assert.Equal(t, "REFUSED", e.Rcode)
		}},
		{"a missing name is a bad request naming the parameter", "", 400, func(t *testing.T, _ engine.Explanation, body string) {
			assert.Contains(t, body, "parameter name is required")
		}},
		{"a bad type is a bad request naming the parameter and what is allowed", "name=app.gslb.test&type=BOGUS", 400, func(t *testing.T, _ engine.Explanation, body string) {
			assert.Contains(t, body, `parameter type \"BOGUS\" is not allowed`)
			assert.Contains(t, body, "allowed:")
		}},
		{"a bad client is a bad request naming the parameter", "name=app.gslb.test&client=nope", 400, func(t *testing.T, _ engine.Explanation, body string) {
			assert.Contains(t, body, "parameter client")
		}},
		{"a bad subnet is a bad request naming the parameter", "name=app.gslb.test&subnet=10.0.0.0/33", 400, func(t *testing.T, _ engine.Explanation, body string) {
			assert.Contains(t, body, "parameter subnet")
		}},
		{"client and subnet together are a bad request", "name=app.gslb.test&client=10.0.0.1&subnet=10.0.0.0/24", 400, func(t *testing.T, _ engine.Explanation, body string) {
			assert.Contains(t, body, "client and subnet are exclusive")
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			rec := httptest.NewRecorder()
			h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/v1/explain?"+tc.query, nil))
			require.Equal(t, tc.code, rec.Code, rec.Body.String())
			assert.Equal(t, "application/json", rec.Header().Get("Content-Type"))
			var e engine.Explanation
			if tc.code == 200 {
				require.NoError(t, json.Unmarshal(rec.Body.Bytes(), &e))
			}
			tc.check(t, e, rec.Body.String())
		})
	}
}

func TestExplainHandlerBeforeTheFirstSnapshot(t *testing.T) {
	rec := httptest.NewRecorder()
	ExplainHandler(fixedSource{}).ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/v1/explain?name=a.test", nil))
	assert.Equal(t, http.StatusServiceUnavailable, rec.Code)
}

func TestExplainIsServedByHandler(t *testing.T) {
	src := explainSource(t)
	h := Handler(src, prometheus.NewRegistry(), func() error { return nil }, nil, slog.New(slog.DiscardHandler), Options{})
	code, body := get(t, h, "/v1/explain?name=app.gslb.test")
	assert.Equal(t, 200, code)
	assert.Contains(t, body, `"strategy": "weighted"`)
}
