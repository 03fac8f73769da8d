package api

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/meridian-gslb/meridian/internal/admin"
	"github.com/meridian-gslb/meridian/internal/whatif"
)

// fakeSimulator parses the changes as the pipeline does and reports one
// affected service with every field set; cluster "mars" is unknown; a
// cluster "busy" answers as a pipeline does while another simulation runs;
// a request whose context ended gets the context's error, as from a
// pipeline.
type fakeSimulator struct{}

func (fakeSimulator) Simulate(ctx context.Context, changes []whatif.Change) (whatif.Report, error) {
	if len(changes) == 1 && changes[0].Spec == "cluster=busy" {
		return whatif.Report{}, ErrSimulationBusy
	}
	if err := ctx.Err(); err != nil {
		return whatif.Report{}, fmt.Errorf("simulate: %w", err)
	}
	if len(changes) == 0 {
		return whatif.Report{}, admin.FieldError{Field: "fail", Msg: "give at least one change (fail, drain or weight)"}
	}
	r := whatif.Report{Services: []whatif.ServiceReport{}}
	for _, c := range changes {
		req, err := c.Request()
		if err != nil {
			return whatif.Report{}, err
		}
		if req.Cluster == "mars" {
			return whatif.Report{}, admin.FieldError{Field: "cluster", Msg: `"mars" is not a cluster (allowed: east)`}
		}
		r.Changes = append(r.Changes, c.String())
	}
	ready := 80.0
	r.Services = append(r.Services, whatif.ServiceReport{Service: "app.gslb.test.", Strategy: "weighted",
		Places: []whatif.PlaceReport{{Place: "everywhere", Before: []whatif.Share{{Cluster: "east", Percent: 50}, {Cluster: "west", Percent: 50}},
			After: []whatif.Share{{Cluster: "west", Percent: 100}}, AnswerBefore: []string{"a"}, AnswerAfter: []string{"b"}, FailOpenAfter: true}},
		Load: []whatif.ClusterLoad{{Cluster: "west", Before: 50, After: 100, Ready: &ready, ReadyShare: 50, VsReady: 2}}})
	r.Same = 1
	return r, nil
}

func TestSimulateAPI(t *testing.T) {
	r := newRouter(nil, nil, nil)
	registerSimulate(r, fakeSimulator{})
	srv := httptest.NewServer(r.mux)
	t.Cleanup(srv.Close)
	tests := []struct {
		name, query string
		code        int
		contains    string
	}{
		{"a failed cluster is simulated without a token", "?fail=cluster%3Deast", 200, `"vs_ready": 2`},
		{"changes of every kind are passed on in kind order", "?weight=app/1.2.3.4%3D0&fail=cluster%3Deast&drain=endpoint%3Dapp/1.2.3.4", 200,
			`"--fail cluster=east",` + "\n" + `    "--drain endpoint=app/1.2.3.4",` + "\n" + `    "--weight app/1.2.3.4=0"`},
		{"no change is refused", "", 400, "give at least one change"},
		{"an unknown parameter is named", "?crash=east", 400, `query parameter \"crash\" is not known (allowed: fail, drain, weight)`},
		{"a bad spec is named with what is allowed", "?fail=east", 400, `is not cluster=NAME or endpoint=SERVICE/TARGET`},
		{"an unknown cluster is refused like an override", "?fail=cluster%3Dmars", 400, `not a cluster`},
		{"a simulation while another runs gets 429 saying one is already running", "?fail=cluster%3Dbusy", 429, `a simulation is already running on this node: one runs at a time; retry in 2s`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			code, body, hdr := callHeader(t, srv, "GET", "/v1/simulate"+tc.query)
			assert.Equal(t, tc.code, code, body)
			if code == http.StatusTooManyRequests {
				assert.Equal(t, "2", hdr.Get("Retry-After"))
			} else {
				assert.Empty(t, hdr.Get("Retry-After"))
			}
			assert.Contains(t, body, tc.contains)
			if code == http.StatusOK {
				var rep whatif.Report
				require.NoError(t, json.Unmarshal([]byte(body), &rep))
			}
		})
	}
	t.Run("a simulation whose client went away gets the request's context and ends without a report", func(t *testing.T) {
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		w := httptest.NewRecorder()
		r.mux.ServeHTTP(w, httptest.NewRequestWithContext(ctx, "GET", "/v1/simulate?fail=cluster%3Deast", nil))
		assert.Equal(t, http.StatusServiceUnavailable, w.Code)
		assert.Contains(t, w.Body.String(), "context canceled")
	})
	code, _ := call(t, srv, "POST", "/v1/simulate?fail=cluster%3Deast", "", "")
	assert.Equal(t, http.StatusMethodNotAllowed, code, "a read: only GET")
}

// callHeader is call for a GET that also returns the response headers.
func callHeader(t *testing.T, srv *httptest.Server, method, path string) (int, string, http.Header) {
	t.Helper()
	req, err := http.NewRequest(method, srv.URL+path, nil)
	require.NoError(t, err)
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return resp.StatusCode, string(b), resp.Header
}
