package cffake

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

const token = "fake-token"

// answer is a decoded v4 envelope.
type answer struct {
	status     int
	header     http.Header
	Success    bool            `json:"success"`
	Errors     []errorJSON     `json:"errors"`
	Result     json.RawMessage `json:"result"`
	ResultInfo *resultInfo     `json:"result_info"`
}

func (a answer) code() int {
	if len(a.Errors) == 0 {
		return 0
	}
	return a.Errors[0].Code
}

type client struct {
	t   *testing.T
	srv *Server
	hc  *http.Client
	tok string
}

func start(t *testing.T) (*Server, *client) {
	srv := New(token)
	hc := &http.Client{Transport: &http.Transport{}}
	t.Cleanup(func() { hc.CloseIdleConnections(); srv.Close() })
	return srv, &client{t: t, srv: srv, hc: hc, tok: token}
}

func (c *client) do(method, path string, body any) answer {
	c.t.Helper()
	var rd *bytes.Reader
	if body != nil {
		b, err := json.Marshal(body)
		require.NoError(c.t, err)
		rd = bytes.NewReader(b)
	} else {
		rd = bytes.NewReader(nil)
	}
	req, err := http.NewRequest(method, strings.TrimSuffix(c.srv.URL, "/")+path, rd)
	require.NoError(c.t, err)
	if c.tok != "" {
		req.Header.Set("Authorization", "Bearer "+c.tok)
	}
	res, err := c.hc.Do(req)
	require.NoError(c.t, err)
	defer res.Body.Close()
	var a answer
	require.NoError(c.t, json.NewDecoder(res.Body).Decode(&a))
	a.status, a.header = res.StatusCode, res.Header
	return a
}

func (c *client) create(zid string, r map[string]any) answer {
	return c.do(http.MethodPost, "/zones/"+zid+"/dns_records", r)
}

func rec(name, typ, content string) map[string]any {
	return map[string]any{"name": name, "type": typ, "content": content, "ttl": 300}
}

const dsDigest = "C988EC423E3880EB8DD8A46E3F01C2E4B18D6A6D4DC3C2D2A0D5C0D8AB1A3F6F"

// delegation is an NS record of sub.example.com, where a DS may go.
var delegation = []Record{{Name: "sub.example.com", Type: "NS", Content: "ns1.sub.example.com", TTL: 300}}

// ds is a DS record body as Cloudflare takes it: data, no content.
func ds(name string, digestType int, digest string) map[string]any {
	return map[string]any{"name": name, "type": "DS", "ttl": 300,
		"data": map[string]any{"key_tag": 2371, "algorithm": 13, "digest_type": digestType, "digest": digest}}
}

func TestTheLastNSUnderADSCannotBeDeleted(t *testing.T) {
	srv, c := start(t)
	zid := srv.AddZone("example.com")
	ns1, err := srv.Put(zid, Record{Name: "sub.example.com", Type: "NS", Content: "ns1.sub.example.com", TTL: 300})
	require.NoError(t, err)
	ns2, err := srv.Put(zid, Record{Name: "sub.example.com", Type: "NS", Content: "ns2.sub.example.com", TTL: 300})
	require.NoError(t, err)
	d := c.create(zid, ds("sub.example.com", 2, strings.ToLower(dsDigest)))
	require.True(t, d.Success, "%+v", d.Errors)
	var stored recordJSON
	require.NoError(t, json.Unmarshal(d.Result, &stored))
	assert.Equal(t, "2371 13 2 "+dsDigest, stored.Content, "content is made from data, digest upper case")

	a := c.do(http.MethodDelete, "/zones/"+zid+"/dns_records/"+ns1.ID, nil)
	assert.True(t, a.Success, "one NS of two may go")
	a = c.do(http.MethodDelete, "/zones/"+zid+"/dns_records/"+ns2.ID, nil)
	assert.False(t, a.Success)
	assert.Equal(t, CodeDSPlacement, a.code())
	a = c.do(http.MethodDelete, "/zones/"+zid+"/dns_records/"+stored.ID, nil)
	require.True(t, a.Success)
	a = c.do(http.MethodDelete, "/zones/"+zid+"/dns_records/"+ns2.ID, nil)
	assert.True(t, a.Success, "without its DS the NS may go")
}

func TestRules(t *testing.T) {
	tests := []struct {
		name     string
		existing []Record
		create   map[string]any
		code     int // 0: accepted
	}{
		{"an A record next to a CNAME is refused", []Record{{Name: "www.example.com", Type: "CNAME", Content: "cdn.net", TTL: 1}}, rec("www.example.com", "A", "10.0.0.1"), CodeHostConflict},
		{"an AAAA record next to a CNAME is refused", []Record{{Name: "www.example.com", Type: "CNAME", Content: "cdn.net", TTL: 1}}, rec("www.example.com", "AAAA", "2001:db8::1"), CodeHostConflict},
		{"a CNAME next to an A record is refused", []Record{{Name: "www.example.com", Type: "A", Content: "10.0.0.1", TTL: 1}}, rec("www.example.com", "CNAME", "cdn.net"), CodeHostConflict},
		{"a second CNAME at a name is refused", []Record{{Name: "www.example.com", Type: "CNAME", Content: "a.net", TTL: 1}}, rec("www.example.com", "CNAME", "b.net"), CodeHostConflict},
		{"a TXT record next to a CNAME is refused", []Record{{Name: "www.example.com", Type: "CNAME", Content: "a.net", TTL: 1}}, rec("www.example.com", "TXT", "hi"), CodeCNAMEConflict},
		{"an NS record next to an A record is refused", []Record{{Name: "sub.example.com", Type: "A", Content: "10.0.0.1", TTL: 1}}, rec("sub.example.com", "NS", "ns1.other.net"), CodeNSConflict},
		{"an identical record is refused", []Record{{Name: "www.example.com", Type: "A", Content: "10.0.0.1", TTL: 1}}, rec("WWW.example.com.", "A", "10.0.0.1"), CodeIdentical},
		{"a second A value at a name is accepted", []Record{{Name: "www.example.com", Type: "A", Content: "10.0.0.1", TTL: 1}}, rec("www.example.com", "A", "10.0.0.2"), 0},
		{"a TXT record next to an A record is accepted", []Record{{Name: "www.example.com", Type: "A", Content: "10.0.0.1", TTL: 1}}, rec("www.example.com", "TXT", `"hi"`), 0},
		{"an A record must hold an IPv4 address", nil, rec("a.example.com", "A", "2001:db8::1"), CodeBadContentA},
		{"an AAAA record must hold an IPv6 address", nil, rec("a.example.com", "AAAA", "10.0.0.1"), CodeBadContentAAAA},
		{"a CNAME must hold a host name", nil, rec("a.example.com", "CNAME", "not a name"), CodeBadContentName},
		{"a CNAME cannot point to itself", nil, rec("a.example.com", "CNAME", "a.example.com."), CodeBadContentName},
		{"a TXT string is at most 255 characters", nil, rec("a.example.com", "TXT", `"`+strings.Repeat("x", 256)+`"`), CodeBadContentTXT},
		{"TXT quotes must be balanced", nil, rec("a.example.com", "TXT", `"open`), CodeBadContentTXT},
		{"bare TXT content up to 2048 characters is accepted", nil, rec("a.example.com", "TXT", strings.Repeat("x", 2048)), 0},
		{"a TTL under 30 is refused", nil, map[string]any{"name": "a.example.com", "type": "A", "content": "10.0.0.1", "ttl": 20}, CodeBadTTL},
		{"a TTL over a day is refused", nil, map[string]any{"name": "a.example.com", "type": "A", "content": "10.0.0.1", "ttl": 86401}, CodeBadTTL},
		{"the automatic TTL is accepted", nil, map[string]any{"name": "a.example.com", "type": "A", "content": "10.0.0.1", "ttl": 1}, 0},
		{"a TXT record cannot be proxied", nil, map[string]any{"name": "a.example.com", "type": "TXT", "content": "x", "ttl": 1, "proxied": true}, CodeNotProxiable},
		{"an unknown type is refused", nil, rec("a.example.com", "SPF", "x"), CodeBadType},
		{"a record without content is refused", nil, map[string]any{"name": "a.example.com", "type": "A"}, CodeBadRequest},
		{"a DS beside the NS of its delegation is accepted", delegation, ds("sub.example.com", 2, dsDigest), 0},
		{"a DS without an NS of its name is refused", nil, ds("sub.example.com", 2, dsDigest), CodeDSPlacement},
		{"a DS at the zone apex is refused", nil, ds("example.com", 2, dsDigest), CodeDSPlacement},
		{"a DS without data is refused (its content is read-only)", delegation, rec("sub.example.com", "DS", "2371 13 2 "+dsDigest), CodeBadDS},
		{"a DS digest of the wrong length for its type is refused", delegation, ds("sub.example.com", 2, "C988EC42"), CodeBadDS},
		{"a DS of an unknown digest type is refused", delegation, ds("sub.example.com", 3, dsDigest), CodeBadDS},
		{"an NS next to a DS is accepted", []Record{{Name: "sub.example.com", Type: "NS", Content: "ns1.sub.example.com", TTL: 300}, {Name: "sub.example.com", Type: "DS", Content: "2371 13 2 " + dsDigest, TTL: 300}}, rec("sub.example.com", "NS", "ns2.sub.example.com"), 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv, c := start(t)
			zid := srv.AddZone("example.com")
			for _, r := range tt.existing {
				_, err := srv.Put(zid, r)
				require.NoError(t, err)
			}
			a := c.create(zid, tt.create)
			if tt.code == 0 {
				assert.True(t, a.Success, "%+v", a.Errors)
				assert.Equal(t, 200, a.status)
				assert.Len(t, srv.Records(zid), len(tt.existing)+1)
				return
			}
			assert.False(t, a.Success)
			assert.Equal(t, 400, a.status)
			assert.Equal(t, tt.code, a.code(), "%+v", a.Errors)
			assert.Len(t, srv.Records(zid), len(tt.existing), "nothing stored")
		})
	}
}

func TestStoredForm(t *testing.T) {
	srv, c := start(t)
	zid := srv.AddZone("Example.com.")
	a := c.create(zid, map[string]any{"name": "App.Example.COM.", "type": "aaaa", "content": "2001:DB8:0:0::1", "ttl": 300, "proxied": true})
	require.True(t, a.Success, "%+v", a.Errors)
	var got recordJSON
	require.NoError(t, json.Unmarshal(a.Result, &got))
	assert.Equal(t, "app.example.com", got.Name)
	assert.Equal(t, "AAAA", got.Type)
	assert.Equal(t, "2001:db8::1", got.Content)
	assert.Equal(t, 1, got.TTL, "proxied records have the automatic TTL")
	assert.True(t, got.Proxied)
	assert.True(t, got.Proxiable)
	assert.Equal(t, zid, got.ZoneID)

	a = c.create(zid, rec("www", "CNAME", "App.Example.com."))
	require.True(t, a.Success, "%+v", a.Errors)
	require.NoError(t, json.Unmarshal(a.Result, &got))
	assert.Equal(t, "www.example.com", got.Name, "a relative name is completed with the zone")
	assert.Equal(t, "app.example.com", got.Content)
}

func TestUpdates(t *testing.T) {
	srv, c := start(t)
	zid := srv.AddZone("example.com")
	a, err := srv.Put(zid, Record{Name: "a.example.com", Type: "A", Content: "10.0.0.1", TTL: 300, Proxied: true})
	require.NoError(t, err)
	_, err = srv.Put(zid, Record{Name: "a.example.com", Type: "A", Content: "10.0.0.2", TTL: 300})
	require.NoError(t, err)
	_, err = srv.Put(zid, Record{Name: "c.example.com", Type: "CNAME", Content: "x.net", TTL: 300})
	require.NoError(t, err)

	ans := c.do(http.MethodPatch, "/zones/"+zid+"/dns_records/"+a.ID, map[string]any{"content": "10.0.0.3"})
	require.True(t, ans.Success, "%+v", ans.Errors)
	byID := func(id string) Record {
		for _, r := range srv.Records(zid) {
			if r.ID == id {
				return r
			}
		}
		return Record{}
	}
	assert.Equal(t, "10.0.0.3", byID(a.ID).Content, "PATCH changes only the fields it names")
	assert.True(t, byID(a.ID).Proxied)

	ans = c.do(http.MethodPatch, "/zones/"+zid+"/dns_records/"+a.ID, map[string]any{"content": "10.0.0.2"})
	assert.Equal(t, CodeIdentical, ans.code(), "an update must not duplicate another record")
	ans = c.do(http.MethodPatch, "/zones/"+zid+"/dns_records/"+a.ID, map[string]any{"name": "c.example.com"})
	assert.Equal(t, CodeHostConflict, ans.code(), "nor move next to a CNAME")

	ans = c.do(http.MethodPut, "/zones/"+zid+"/dns_records/"+a.ID, map[string]any{"name": "a.example.com", "type": "A", "content": "10.0.0.4"})
	require.True(t, ans.Success, "%+v", ans.Errors)
	r := byID(a.ID)
	assert.Equal(t, Record{ID: a.ID, Name: "a.example.com", Type: "A", Content: "10.0.0.4", TTL: 1}, Record{ID: r.ID, Name: r.Name, Type: r.Type, Content: r.Content, TTL: r.TTL, Proxied: r.Proxied},
		"PUT replaces the whole record")
	ans = c.do(http.MethodPut, "/zones/"+zid+"/dns_records/"+a.ID, map[string]any{"content": "10.0.0.5"})
	assert.Equal(t, CodeBadRequest, ans.code(), "PUT needs name, type and content")

	ans = c.do(http.MethodDelete, "/zones/"+zid+"/dns_records/"+a.ID, nil)
	require.True(t, ans.Success)
	assert.JSONEq(t, fmt.Sprintf(`{"id":%q}`, a.ID), string(ans.Result))
	ans = c.do(http.MethodDelete, "/zones/"+zid+"/dns_records/"+a.ID, nil)
	assert.Equal(t, 404, ans.status)
	assert.Equal(t, CodeNotFound, ans.code())
	assert.Empty(t, srv.Gaps(), "a.example.com A kept 10.0.0.2 throughout")
}

func TestPagination(t *testing.T) {
	srv, c := start(t)
	zid := srv.AddZone("example.com")
	for i := range 250 {
		_, err := srv.Put(zid, Record{Name: fmt.Sprintf("h%03d.example.com", i), Type: "A", Content: "10.0.0.1", TTL: 60})
		require.NoError(t, err)
	}
	seen := map[string]bool{}
	for p := 1; p <= 3; p++ {
		a := c.do(http.MethodGet, fmt.Sprintf("/zones/%s/dns_records?page=%d&per_page=100", zid, p), nil)
		require.True(t, a.Success)
		var rs []recordJSON
		require.NoError(t, json.Unmarshal(a.Result, &rs))
		assert.Equal(t, resultInfo{Page: p, PerPage: 100, Count: len(rs), TotalCount: 250, TotalPages: 3}, *a.ResultInfo)
		for _, r := range rs {
			seen[r.ID] = true
		}
	}
	assert.Len(t, seen, 250)

	a := c.do(http.MethodGet, "/zones/"+zid+"/dns_records", nil)
	assert.Equal(t, 100, a.ResultInfo.PerPage, "100 a page by default")
	a = c.do(http.MethodGet, "/zones/"+zid+"/dns_records?per_page=5001", nil)
	assert.Equal(t, CodeBadRequest, a.code(), "per_page is at most 5000")
	a = c.do(http.MethodGet, "/zones/"+zid+"/dns_records?name=h007.example.com&type=A", nil)
	assert.Equal(t, 1, a.ResultInfo.Count)
	a = c.do(http.MethodGet, "/zones/"+zid+"/dns_records?page=9", nil)
	assert.JSONEq(t, `[]`, string(a.Result))

	a = c.do(http.MethodGet, "/zones?name=example.com", nil)
	assert.Contains(t, string(a.Result), zid)
	a = c.do(http.MethodGet, "/zones?name=other.com", nil)
	assert.JSONEq(t, `[]`, string(a.Result))
}

func TestAuthentication(t *testing.T) {
	srv, c := start(t)
	srv.AddZone("example.com")
	c.tok = ""
	a := c.do(http.MethodGet, "/zones", nil)
	assert.Equal(t, CodeHeaders, a.code())
	c.tok = "wrong"
	a = c.do(http.MethodGet, "/zones", nil)
	assert.Equal(t, 403, a.status)
	assert.Equal(t, CodeAuthentication, a.code())
}

func TestGaps(t *testing.T) {
	srv, c := start(t)
	zid := srv.AddZone("example.com")
	a := c.create(zid, rec("a.example.com", "A", "10.0.0.1"))
	var r recordJSON
	require.NoError(t, json.Unmarshal(a.Result, &r))
	c.do(http.MethodDelete, "/zones/"+zid+"/dns_records/"+r.ID, nil)
	c.create(zid, rec("a.example.com", "A", "10.0.0.2"))
	c.create(zid, rec("b.example.com", "A", "10.0.0.3")) // a first write is no gap

	gaps := srv.Gaps()
	require.Len(t, gaps, 1)
	g := gaps[0]
	assert.Equal(t, Gap{Name: "a.example.com", Type: "A", FromWrite: 2, ToWrite: 3, From: g.From, To: g.To, FromOp: "DELETE", ToOp: "POST",
		Content: "10.0.0.1", ReplacedContent: "10.0.0.2"}, g)
}

func TestFaults(t *testing.T) {
	t.Run("every n-th request is throttled with Retry-After", func(t *testing.T) {
		srv, c := start(t)
		srv.Inject(Fault{Status: 429, RetryAfter: 3 * time.Second, Every: 2})
		var codes []int
		for range 4 {
			a := c.do(http.MethodGet, "/zones", nil)
			codes = append(codes, a.status)
			if a.status == 429 {
				assert.Equal(t, "3", a.header.Get("Retry-After"))
			}
		}
		assert.Equal(t, []int{200, 429, 200, 429}, codes)
	})
	t.Run("a window of the server clock fails requests inside it only", func(t *testing.T) {
		srv, c := start(t)
		var mu sync.Mutex
		now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
		srv.SetClock(func() time.Time { mu.Lock(); defer mu.Unlock(); return now })
		srv.Inject(Fault{Status: 503, From: now.Add(time.Minute), Until: now.Add(2 * time.Minute)})
		var codes []int
		for range 3 {
			codes = append(codes, c.do(http.MethodGet, "/zones", nil).status)
			mu.Lock()
			now = now.Add(time.Minute)
			mu.Unlock()
		}
		assert.Equal(t, []int{200, 503, 200}, codes)
	})
	t.Run("a rate limit answers 429 past n requests a period", func(t *testing.T) {
		srv, c := start(t)
		var mu sync.Mutex
		now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
		srv.SetClock(func() time.Time { mu.Lock(); defer mu.Unlock(); return now })
		srv.RateLimit(2, time.Minute)
		assert.Equal(t, 200, c.do(http.MethodGet, "/zones", nil).status)
		assert.Equal(t, 200, c.do(http.MethodGet, "/zones", nil).status)
		a := c.do(http.MethodGet, "/zones", nil)
		assert.Equal(t, 429, a.status)
		assert.Equal(t, "60", a.header.Get("Retry-After"))
		mu.Lock()
		now = now.Add(61 * time.Second)
		mu.Unlock()
		assert.Equal(t, 200, c.do(http.MethodGet, "/zones", nil).status)
		assert.Equal(t, 4, srv.Calls(http.MethodGet, "/zones"))
	})
}
