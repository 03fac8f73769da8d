package api

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/meridian-gslb/meridian/internal/admin"
	"github.com/meridian-gslb/meridian/internal/whatif"
)

// fakeSimulator parses the changes as the pipeline does and reports one
// affected service with every field set; cluster "mars" is unknown.
type fakeSimulator struct{}

func (fakeSimulator) Simulate(changes []whatif.Change) (whatif.Report, error) {
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
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			code, body := call(t, srv, "GET", "/v1/simulate"+tc.query, "", "")
			assert.Equal(t, tc.code, code, body)
			assert.Contains(t, body, tc.contains)
			if code == http.StatusOK {
				var rep whatif.Report
				require.NoError(t, json.Unmarshal([]byte(body), &rep))
			}
		})
	}
	code, _ := call(t, srv, "POST", "/v1/simulate?fail=cluster%3Deast", "", "")
	assert.Equal(t, http.StatusMethodNotAllowed, code, "a read: only GET")
}
