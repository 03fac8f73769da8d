package api

import (
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/meridian-gslb/meridian/internal/admin"
	"github.com/meridian-gslb/meridian/internal/model"
)

// fakeAdmin validates against a small desired state and keeps overrides in memory.
type fakeAdmin struct {
	d   *model.Desired
	ovs []admin.Override
	// lastOne: east is a service's last healthy cluster, so draining or
	// forcing it down breaks min_healthy 1 (as serving's guard decides).
	lastOne bool
}

func (f *fakeAdmin) List() []admin.Override { return f.ovs }
func (f *fakeAdmin) Add(req admin.Request, who string) (admin.Override, error) {
	o, err := req.Validate(f.d, time.Now())
	if err != nil {
		return o, err
	}
	if f.lastOne && (o.Kind == admin.KindDrain || o.Kind == admin.KindForceDown) {
		gerr := &admin.GuardError{Shortfalls: []admin.Shortfall{{Service: "app.x.test.", MinHealthy: 1, Before: 1, After: 0}}}
		if !req.Force {
			return o, gerr
		}
		o.Forced = gerr.Rule()
	}
	o.ID, o.Who = "id1", who
	f.ovs = append(f.ovs, o)
	return o, nil
}
func (f *fakeAdmin) Remove(id, _ string) (admin.Override, error) {
	for i, o := range f.ovs {
		if o.ID == id {
			f.ovs = append(f.ovs[:i], f.ovs[i+1:]...)
			return o, nil
		}
	}
	return admin.Override{}, admin.ErrNotFound
}

// PauseShift and ResumeShift make fakeAdmin a ShiftControl.
func (f *fakeAdmin) PauseShift(service, _, reason string) (admin.Override, error) {
	return f.shiftOp(service, reason)
}
func (f *fakeAdmin) ResumeShift(service, _ string) (admin.Override, error) {
	return f.shiftOp(service, "")
}
func (f *fakeAdmin) shiftOp(service, reason string) (admin.Override, error) {
	for _, o := range f.ovs {
		if o.Kind == admin.KindShift && strings.TrimSuffix(o.Service, ".") == strings.TrimSuffix(service, ".") {
			o.Reason = reason
			return o, nil
		}
	}
	return admin.Override{}, fmt.Errorf("%w for %s", ErrNoShift, service)
}

func adminServer(t *testing.T, withTokens bool) (*httptest.Server, *fakeAdmin) {
	t.Helper()
	fa := &fakeAdmin{d: &model.Desired{Clusters: []model.Cluster{{Name: "east", Region: "r"}}}}
	var toks *Tokens
	if withTokens {
		p := filepath.Join(t.TempDir(), "tokens")
		require.NoError(t, os.WriteFile(p, []byte("# operators\nalice 0123456789abcdef0123\n"), 0o600))
		var err error
		toks, err = LoadTokens(p)
		require.NoError(t, err)
	}
	r := newRouter(toks, nil, nil)
	registerAdmin(r, fa)
	srv := httptest.NewServer(r.mux)
	t.Cleanup(srv.Close)
	return srv, fa
}

func call(t *testing.T, srv *httptest.Server, method, path, token, body string) (int, string) {
	t.Helper()
	req, err := http.NewRequest(method, srv.URL+path, strings.NewReader(body))
	require.NoError(t, err)
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

func TestAdminAPI(t *testing.T) {
	const good = "0123456789abcdef0123"
	drain := `{"kind":"drain","cluster":"east","reason":"maintenance"}`
	srv, fa := adminServer(t, true)
	tests := []struct {
		name, method, path, token, body string
		code                            int
		contains                        string
	}{
		{"a change without a token is refused", "POST", "/v1/admin/overrides", "", drain, 401, "missing bearer token"},
		{"a change with a wrong token is refused", "POST", "/v1/admin/overrides", "not-the-token-at-all", drain, 401, "invalid bearer token"},
		{"an unknown field is named", "POST", "/v1/admin/overrides", good, `{"kind":"drain","cluster":"east","reason":"x","ttl":5}`, 400, `unknown field \"ttl\"`},
		{"a bad value is named with what is allowed", "POST", "/v1/admin/overrides", good, `{"kind":"drain","cluster":"mars","reason":"x"}`, 400, `cluster: \"mars\" is not a cluster (allowed: east)`},
		{"an oversized body is refused", "POST", "/v1/admin/overrides", good, `{"kind":"drain","cluster":"east","reason":"` + strings.Repeat("x", 20000) + `"}`, 413, "larger than"},
		{"a body that is not JSON is refused", "POST", "/v1/admin/overrides", good, `kind=drain`, 400, "not a JSON object"},
		{"trailing data is refused", "POST", "/v1/admin/overrides", good, drain + `{}`, 400, "data after"},
		{"a valid change is recorded with who", "POST", "/v1/admin/overrides", good, drain, 201, `"who": "alice"`},
		{"reading needs no token", "GET", "/v1/admin/overrides", "", "", 200, `"reason": "maintenance"`},
		{"removing an unknown id is 404", "DELETE", "/v1/admin/overrides/nope", good, "", 404, "no such override"},
		{"removing needs a token", "DELETE", "/v1/admin/overrides/id1", "", "", 401, "missing bearer token"},
		{"removing with a token works", "DELETE", "/v1/admin/overrides/id1", good, "", 200, `"id": "id1"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, body := call(t, srv, tt.method, tt.path, tt.token, tt.body)
			assert.Equal(t, tt.code, code, body)
			assert.Contains(t, body, tt.contains)
		})
	}
	assert.Empty(t, fa.ovs, "refused requests changed nothing; the one added was removed")
}

func TestAdminChangesAreDisabledWithoutATokenFile(t *testing.T) {
	srv, fa := adminServer(t, false)
	code, body := call(t, srv, "POST", "/v1/admin/overrides", "anything-anything", `{"kind":"drain","cluster":"east","reason":"x"}`)
	assert.Equal(t, 403, code)
	assert.Contains(t, body, "server.admin.token_file")
	assert.Empty(t, fa.ovs)
}

func TestLoadTokensNamesTheBadLine(t *testing.T) {
	p := filepath.Join(t.TempDir(), "tokens")
	require.NoError(t, os.WriteFile(p, []byte("alice 0123456789abcdef\nbob short\n"), 0o600))
	_, err := LoadTokens(p)
	assert.ErrorContains(t, err, "tokens:2: the token of bob is shorter than 16 characters")
}

func TestAdminAPIMinHealthy(t *testing.T) {
	const good = "0123456789abcdef0123"
	srv, fa := adminServer(t, true)
	fa.lastOne = true
	code, body := call(t, srv, "POST", "/v1/admin/overrides", good, `{"kind":"drain","cluster":"east","reason":"x"}`)
	assert.Equal(t, http.StatusConflict, code, body)
	assert.Contains(t, body, "refused by rule min_healthy: service app.x.test would keep 0 healthy endpoint(s), below min_healthy 1 (now 1)")
	assert.Empty(t, fa.ovs)
	code, body = call(t, srv, "POST", "/v1/admin/overrides", good, `{"kind":"force-down","cluster":"east","reason":"x","force":true}`)
	assert.Equal(t, http.StatusCreated, code, body)
	assert.Contains(t, body, `"forced": "min_healthy: service app.x.test would keep 0`)
	code, body = call(t, srv, "POST", "/v1/admin/overrides", good, `{"kind":"drain","cluster":"east","reason":"x","force":"yes"}`)
	assert.Equal(t, http.StatusBadRequest, code, body)
}
