package webhook

import (
	"encoding/base64"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/meridian-gslb/meridian/internal/extdns"
	"github.com/meridian-gslb/meridian/internal/model"
)

const (
	eastToken = "east-token-0123456789"
	westToken = "west-token-0123456789"
)

type fixture struct {
	srv     *httptest.Server
	store   *extdns.Store
	m       *Metrics
	changed atomic.Int32
	panicky atomic.Bool
}

func newFixture(t *testing.T) *fixture {
	t.Helper()
	fx := &fixture{m: NewMetrics(prometheus.NewRegistry())}
	fx.store, _ = extdns.OpenStore("")
	d := &model.Desired{Zones: []model.Zone{{Apex: "gslb.example.com.", TTL: 30, Nameservers: []model.Nameserver{{Name: "ns1.gslb.example.com."}}}},
		Kubernetes: model.Kubernetes{Claims: []model.Claim{{Namespaces: []string{"team-a"}, Suffixes: []string{"team-a.gslb.example.com"}}}}}
	h, err := Handler(Options{Store: fx.store, Clients: []Client{{"east", eastToken}, {"west", westToken}}, Metrics: fx.m, MaxBody: 2048,
		Rules: func() *extdns.Rules {
			if fx.panicky.Load() {
				panic("rules broke")
			}
			return extdns.NewRules(d, extdns.Limits{}, nil)
		},
		Changed: func() { fx.changed.Add(1) }})
	require.NoError(t, err)
	fx.srv = httptest.NewServer(h)
	t.Cleanup(fx.srv.Close)
	return fx
}

// do sends a request as user:token ("" token: none) and returns the code and body.
func (fx *fixture) do(t *testing.T, method, path, user, token, body string) (int, string, http.Header) {
	t.Helper()
	req, err := http.NewRequest(method, fx.srv.URL+path, strings.NewReader(body))
	require.NoError(t, err)
	if token != "" {
		req.SetBasicAuth(user, token)
	}
	req.Header.Set("Accept", extdns.MediaType)
	if body != "" {
		req.Header.Set("Content-Type", extdns.MediaType)
	}
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b), resp.Header
}

func TestAuthentication(t *testing.T) {
	fx := newFixture(t)
	for _, tc := range []struct {
		name, user, token string
		code              int
	}{
		{"a request without a token is refused", "", "", 401},
		{"an unknown token is refused", "east", "not-a-token-at-all", 401},
		{"a token sent with another cluster's name is refused", "west", eastToken, 401},
		{"a cluster's token with its name is accepted", "east", eastToken, 200},
		{"a token without a name is accepted for its cluster", "", westToken, 200},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, _, _ := fx.do(t, "GET", "/records", tc.user, tc.token, "")
			assert.Equal(t, tc.code, code)
		})
	}
	req, _ := http.NewRequest("GET", fx.srv.URL+"/records", nil)
	req.Header.Set("Authorization", "Bearer "+eastToken)
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	resp.Body.Close()
	assert.Equal(t, 200, resp.StatusCode, "a Bearer token is accepted")
	code, _, _ := fx.do(t, "GET", "/healthz", "", "", "")
	assert.Equal(t, 200, code, "/healthz needs no token")
	assert.Equal(t, 3.0, testutil.ToFloat64(fx.m.requests.WithLabelValues("GET /records", "401")))
}

func TestATokenIdentifiesOneCluster(t *testing.T) {
	_, err := Handler(Options{Clients: []Client{{"east", eastToken}, {"west", eastToken}}})
	require.ErrorContains(t, err, "the same token")
	_, err = Handler(Options{Clients: []Client{{"east", ""}}})
	require.ErrorContains(t, err, "empty token")
}

func TestNegotiateGivesTheMediaTypeAndTheServedZones(t *testing.T) {
	fx := newFixture(t)
	code, body, hdr := fx.do(t, "GET", "/", "east", eastToken, "")
	require.Equal(t, 200, code)
	assert.Equal(t, extdns.MediaType, hdr.Get("Content-Type"))
	assert.JSONEq(t, `{"include":["gslb.example.com"]}`, body)
}

func TestEachClusterReadsAndChangesOnlyItsOwnRecords(t *testing.T) {
	fx := newFixture(t)
	create := `{"create":[{"dnsName":"app.gslb.example.com","targets":["198.51.100.1"],"recordType":"A","labels":{"owner":"east"}},
		{"dnsName":"a-app.gslb.example.com","targets":["\"heritage=external-dns,external-dns/owner=east\""],"recordType":"TXT"}]}`
	code, body, _ := fx.do(t, "POST", "/records", "east", eastToken, create)
	require.Equal(t, 204, code, body)
	assert.Equal(t, int32(1), fx.changed.Load())

	code, body, _ = fx.do(t, "GET", "/records", "west", westToken, "")
	require.Equal(t, 200, code)
	assert.JSONEq(t, `[]`, body, "west sees none of east's records")
	code, _, _ = fx.do(t, "POST", "/records", "west", westToken, `{"delete":[{"dnsName":"app.gslb.example.com","targets":["198.51.100.1"],"recordType":"A"}]}`)
	require.Equal(t, 204, code)
	assert.Equal(t, int32(1), fx.changed.Load(), "west's delete changed nothing")

	code, body, _ = fx.do(t, "GET", "/records", "east", eastToken, "")
	require.Equal(t, 200, code)
	var got []extdns.Endpoint
	require.NoError(t, json.Unmarshal([]byte(body), &got))
	require.Len(t, got, 2)
	assert.Equal(t, "a-app.gslb.example.com", got[0].DNSName)
	assert.Equal(t, extdns.Endpoint{DNSName: "app.gslb.example.com", Targets: []string{"198.51.100.1"}, RecordType: "A", RecordTTL: 30,
		Labels: map[string]string{"owner": "east"}}, got[1])
	assert.Equal(t, 2.0, testutil.ToFloat64(fx.m.changes.WithLabelValues("east", "create")))
	assert.Equal(t, 2.0, testutil.ToFloat64(fx.m.records.WithLabelValues("east")))
}

func TestBadChangesAreRefusedWithTheirField(t *testing.T) {
	fx := newFixture(t)
	for _, tc := range []struct {
		name, body string
		code       int
		msg        string
	}{
		{"a name outside the zones", `{"create":[{"dnsName":"app.example.org","targets":["198.51.100.1"],"recordType":"A"}]}`, 400, "create[0] app.example.org A: dnsName"},
		{"a target that does not parse", `{"create":[{"dnsName":"app.gslb.example.com","targets":["lb"],"recordType":"A"}]}`, 400, "targets[0]"},
		{"a body that is not JSON", `{"create":`, 400, "not the webhook's JSON"},
		{"a body beyond the limit", `{"create":[{"dnsName":"` + strings.Repeat("a", 4096) + `"}]}`, 413, "larger than 2048 bytes"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, body, _ := fx.do(t, "POST", "/records", "east", eastToken, tc.body)
			assert.Equal(t, tc.code, code)
			assert.Contains(t, body, tc.msg)
		})
	}
	fx.do(t, "POST", "/records", "east", eastToken, `{"create":[{"dnsName":"app.gslb.example.com","targets":["198.51.100.1"],"recordType":"A"}]}`)
	code, body, _ := fx.do(t, "POST", "/records", "east", eastToken, `{"create":[{"dnsName":"app.gslb.example.com","targets":["198.51.100.2"],"recordType":"A"}]}`)
	assert.Equal(t, 409, code)
	assert.Contains(t, body, "exists already")
}

func TestAdjustEndpointsNormalizesAndLeavesOutWhatWouldBeRefused(t *testing.T) {
	fx := newFixture(t)
	in := `[{"dnsName":"App.gslb.example.com.","targets":["198.51.100.2","198.51.100.1"],"recordType":"A",
		"providerSpecific":[{"name":"aws/weight","value":"1"},{"name":"webhook/meridian-weight","value":"70"}]},
		{"dnsName":"app.example.org","targets":["198.51.100.1"],"recordType":"A"}]`
	code, body, hdr := fx.do(t, "POST", "/adjustendpoints", "east", eastToken, in)
	require.Equal(t, 200, code, body)
	assert.Equal(t, extdns.MediaType, hdr.Get("Content-Type"))
	assert.JSONEq(t, `[{"dnsName":"app.gslb.example.com","targets":["198.51.100.1","198.51.100.2"],"recordType":"A","recordTTL":30,
		"providerSpecific":[{"name":"webhook/meridian-weight","value":"70"}]}]`, body)
	assert.Equal(t, 1.0, testutil.ToFloat64(fx.m.adjusted.WithLabelValues("east")))
}

func TestAPanicIsAnsweredAndCounted(t *testing.T) {
	fx := newFixture(t)
	fx.panicky.Store(true)
	code, _, _ := fx.do(t, "GET", "/", "east", eastToken, "")
	assert.Equal(t, 500, code)
	assert.Equal(t, 1.0, testutil.ToFloat64(fx.m.panics))
	fx.panicky.Store(false)
	code, _, _ = fx.do(t, "GET", "/", "east", eastToken, "")
	assert.Equal(t, 200, code, "the server goes on")
}

func TestAnotherMethodOrPathIsNotServed(t *testing.T) {
	fx := newFixture(t)
	code, _, _ := fx.do(t, "DELETE", "/records", "east", eastToken, "")
	assert.Equal(t, 405, code)
	code, _, _ = fx.do(t, "GET", "/nothing", "east", eastToken, "")
	assert.Equal(t, 404, code)
	assert.Equal(t, 1.0, testutil.ToFloat64(fx.m.requests.WithLabelValues("other", "404")))
}

func TestARecordOfANameItsNamespaceMayNotServeIsRefusedAndLeftOut(t *testing.T) {
	fx := newFixture(t)
	for _, tc := range []struct {
		name, record, msg string
	}{
		{"the zone apex",
			`{"dnsName":"gslb.example.com","targets":["198.51.100.1"],"recordType":"A","labels":{"resource":"service/team-b/web"}}`,
			"create[0] gslb.example.com A: dnsName: hostname conflict: gslb.example.com. is the apex of zone gslb.example.com."},
		{"a nameserver name",
			`{"dnsName":"ns1.gslb.example.com","targets":["198.51.100.1"],"recordType":"A","labels":{"resource":"service/team-b/web"}}`,
			"ns1.gslb.example.com. is a nameserver name of zone gslb.example.com."},
		{"a name claimed by another namespace",
			`{"dnsName":"app.team-a.gslb.example.com","targets":["198.51.100.1"],"recordType":"A","labels":{"resource":"service/team-b/web"}}`,
			"kubernetes.claims gives app.team-a.gslb.example.com. to namespace team-a; objects in namespace team-b are not served for it"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, body, _ := fx.do(t, "POST", "/records", "east", eastToken, `{"create":[`+tc.record+`]}`)
			assert.Equal(t, 400, code)
			assert.Contains(t, body, tc.msg)
			code, body, _ = fx.do(t, "POST", "/adjustendpoints", "east", eastToken, `[`+tc.record+`]`)
			require.Equal(t, 200, code)
			assert.JSONEq(t, `[]`, body, "adjustendpoints leaves it out, so ExternalDNS does not send it")
		})
	}
	assert.Equal(t, 3.0, testutil.ToFloat64(fx.m.requests.WithLabelValues("POST /records", "400")))
	assert.Equal(t, 3.0, testutil.ToFloat64(fx.m.adjusted.WithLabelValues("east")))
	assert.Equal(t, int32(0), fx.changed.Load())
	code, _, _ := fx.do(t, "POST", "/records", "east", eastToken,
		`{"create":[{"dnsName":"app.team-a.gslb.example.com","targets":["198.51.100.1"],"recordType":"A","labels":{"resource":"service/team-a/web"}}]}`)
	assert.Equal(t, 204, code, "the namespace the claim names may")
}

func TestTheAuthorizationHeaderMustNameBasicOrBearer(t *testing.T) {
	fx := newFixture(t)
	for _, tc := range []struct {
		name, header string
		code         int
		msg          string
	}{
		{"a Bearer token is accepted", "Bearer " + eastToken, 200, ""},
		{"the Bearer scheme is case-insensitive", "bearer " + eastToken, 200, ""},
		{"the Basic scheme is case-insensitive", "basic " + base64.StdEncoding.EncodeToString([]byte("east:"+eastToken)), 200, ""},
		{"a bare token is refused", eastToken, 401, "neither Basic nor Bearer (a bare token is not accepted)"},
		{"another scheme is refused", "Token " + eastToken, 401, "neither Basic nor Bearer"},
		{"Bearer without a token is refused", "Bearer ", 401, "carries no token"},
		{"no header is refused", "", 401, "no Authorization header"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			req, err := http.NewRequest("GET", fx.srv.URL+"/records", nil)
			require.NoError(t, err)
			if tc.header != "" {
				req.Header.Set("Authorization", tc.header)
			}
			resp, err := http.DefaultClient.Do(req)
			require.NoError(t, err)
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			assert.Equal(t, tc.code, resp.StatusCode, string(b))
			assert.Contains(t, string(b), tc.msg)
			assert.NotContains(t, string(b), eastToken, "the token is never echoed")
		})
	}
}

func TestARequestWithMoreRecordsThanTwiceTheLimitIsRefusedBeforeItIsStored(t *testing.T) {
	store, _ := extdns.OpenStore("")
	d := &model.Desired{Zones: []model.Zone{{Apex: "gslb.example.com.", TTL: 30}}}
	h, err := Handler(Options{Store: store, Clients: []Client{{"east", eastToken}},
		Rules: func() *extdns.Rules { return extdns.NewRules(d, extdns.Limits{MaxRecords: 2}, nil) }})
	require.NoError(t, err)
	fx := &fixture{srv: httptest.NewServer(h)}
	t.Cleanup(fx.srv.Close)
	five := strings.TrimSuffix(strings.Repeat(`{},`, 5), ",")
	for _, tc := range []struct{ name, path, body string }{
		{"changes over several lists", "/records", `{"create":[{},{},{}],"delete":[{},{}]}`},
		{"the list of adjustendpoints", "/adjustendpoints", `[` + five + `]`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, body, _ := fx.do(t, "POST", tc.path, "east", eastToken, tc.body)
			assert.Equal(t, http.StatusRequestEntityTooLarge, code)
			assert.Contains(t, body, "too many records in one request (allowed at most 4")
		})
	}
	code, body, _ := fx.do(t, "POST", "/records", "east", eastToken, `{"create":{}}`)
	assert.Equal(t, 400, code)
	assert.Contains(t, body, "create is not a list of records")
}
