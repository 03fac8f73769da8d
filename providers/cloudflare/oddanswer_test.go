package cloudflare

import (
	"context"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/meridian-gslb/meridian/internal/model"
	"github.com/meridian-gslb/meridian/providers"
)

// oddAnswers puts a proxy in front of e's fake that answers the requests
// odd matches (method and path suffix) with 200 and body, and passes every
// other request on; e's Provider then talks to the proxy.
func oddAnswers(t *testing.T, e *env, odd map[string]string) {
	t.Helper()
	u, err := url.Parse(e.srv.URL)
	require.NoError(t, err)
	rp := &httputil.ReverseProxy{Rewrite: func(r *httputil.ProxyRequest) {
		r.Out.URL.Scheme, r.Out.URL.Host = u.Scheme, u.Host
		r.Out.Host = u.Host
	}}
	proxy := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		for k, body := range odd {
			method, suffix, _ := strings.Cut(k, " ")
			if r.Method == method && strings.HasSuffix(r.URL.Path, suffix) {
				w.Header().Set("Content-Type", "application/json")
				_, _ = w.Write([]byte(body))
				return
			}
		}
		rp.ServeHTTP(w, r)
	}))
	t.Cleanup(proxy.Close)
	opts := e.p.opts
	e.p = New(NewAPI(testToken, APIOptions{BaseURL: proxy.URL, HTTPClient: e.hc}), opts)
}

func TestOddCloudflareAnswersAreErrorsNamingTheCall(t *testing.T) {
	const (
		null      = `null`
		nullList  = `{"success":true,"errors":[],"messages":[],"result":null}`
		emptyItem = `{"success":true,"errors":[],"messages":[],"result":{}}`
	)
	tests := []struct {
		name string
		odd  map[string]string
		call string // what the error names
	}{
		{"a load balancer list answered with null", map[string]string{"GET /load_balancers": null}, "list load balancers"},
		{"a pool list answered with null", map[string]string{"GET /load_balancers/pools": null}, "list pools"},
		{"a monitor list answered with a null result", map[string]string{"GET /load_balancers/monitors": nullList}, "list monitors"},
		{"a created pool answered without an id", map[string]string{"POST /load_balancers/pools": emptyItem}, "create pool"},
		{"a created load balancer answered without an id", map[string]string{"POST /load_balancers": emptyItem}, "create load balancer"},
		{"a created monitor answered without an id", map[string]string{"POST /load_balancers/monitors": emptyItem}, "create monitor"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := newLBEnv(t, model.LoadBalancingRequired, Options{Backstop: true})
			odd := map[string]string{}
			for k, v := range tt.odd {
				odd[strings.ReplaceAll(k, "{zone}", e.zone)] = v
			}
			oddAnswers(t, e, odd)
			v := checked(8080)
			var err error
			require.NotPanics(t, func() {
				_, err = e.p.PrepareObjects(context.Background(), zoneName, []providers.ServiceView{v}, false)
			})
			require.Error(t, err)
			assert.ErrorIs(t, err, errNoResult)
			assert.Contains(t, err.Error(), tt.call)
			for _, lb := range e.srv.LoadBalancers(e.zone) {
				assert.NotContains(t, lb.DefaultPools, "", "no load balancer refers to a pool without an id")
			}
		})
	}
}

func TestOddCloudflareRecordAnswersAreErrorsNamingTheCall(t *testing.T) {
	for _, tc := range []struct{ name, odd, call string }{
		{"a record list answered with null", "GET /dns_records", "list records"},
		{"a zone list answered with null", "GET /zones", "list zones"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t, Options{})
			oddAnswers(t, e, map[string]string{tc.odd: `null`})
			var err error
			require.NotPanics(t, func() { _, err = e.p.Records(context.Background(), zoneName) })
			require.Error(t, err)
			assert.ErrorIs(t, err, errNoResult)
			assert.Contains(t, err.Error(), tc.call)
		})
	}
}

func TestALoadBalancerNamingAPoolWithoutAnIDIsNotWritten(t *testing.T) {
	e := newLBEnv(t, model.LoadBalancingRequired, Options{})
	specs, _ := TranslateLB([]providers.ServiceView{weighted("app.example.com.", up("10.0.0.1", "eu", 70), up("10.0.1.1", "us", 30))}, zoneName, LBOptions{Owner: ownerID})
	require.Len(t, specs, 1)
	sp := specs[0]
	// The eu pool came back without an id; the us pool is not known at all.
	st := &lbZone{served: map[string]bool{}, zoneID: e.zone, pools: []Pool{{Name: sp.Pools[0].Name}}}
	var res providers.ObjectResult
	s := &lbSync{p: e.p, st: st, zone: zoneName, cz: "example.com", res: &res, names: map[string]string{}}
	var err error
	require.NotPanics(t, func() {
		err = s.loadBalancer(context.Background(), sp, map[string]int{}, map[string]int{sp.Pools[0].Name: 0}, map[string]bool{})
	})
	require.Error(t, err)
	assert.Contains(t, err.Error(), "load balancer app.example.com")
	assert.Contains(t, err.Error(), sp.Pools[0].Name)
	assert.Contains(t, err.Error(), sp.Pools[1].Name)
	assert.Empty(t, e.srv.LoadBalancers(e.zone), "nothing written")
	assert.Zero(t, res.Calls)
}
