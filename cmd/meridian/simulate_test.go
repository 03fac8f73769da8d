package main

import (
	"bytes"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestSimulateCommand(t *testing.T) {
	var got string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got = r.URL.RawQuery
		w.Header().Set("Content-Type", "application/json")
		w.Write([]byte(`{"changes":["--fail cluster=us-east"],"services":[{"service":"app.demo.meridian.test.","strategy":"weighted",
"places":[{"place":"everywhere","before":[{"cluster":"us-east","percent":50},{"cluster":"us-west","percent":50}],"after":[{"cluster":"us-west","percent":100}],
"answer_before":["app.demo.meridian.test. 30 IN A 127.0.0.11","app.demo.meridian.test. 30 IN A 127.0.0.12"],"answer_after":["app.demo.meridian.test. 30 IN A 127.0.0.12"],
"fail_open_before":false,"fail_open_after":false}],
"load":[{"cluster":"us-east","before":50,"after":0,"ready_share":50,"vs_ready":0},{"cluster":"us-west","before":50,"after":100,"ready":80,"ready_share":50,"vs_ready":2}]}],"unchanged":2}`))
	}))
	t.Cleanup(srv.Close)

	t.Run("the flags become the query and the report is printed as shares, answers and load", func(t *testing.T) {
		cmd := newRoot()
		var out bytes.Buffer
		cmd.SetOut(&out)
		cmd.SetArgs([]string{"simulate", "--http", srv.URL, "--fail", "cluster=us-east", "--weight", "app/1.2.3.4=5"})
		require.NoError(t, cmd.Execute())
		assert.Equal(t, "fail=cluster%3Dus-east&weight=app%2F1.2.3.4%3D5", got)
		for _, want := range []string{
			"simulated (nothing changed): --fail cluster=us-east",
			"app.demo.meridian.test. (weighted)",
			"  everywhere: us-east 50%, us-west 50% -> us-west 100%",
			"    answers after: app.demo.meridian.test. 30 IN A 127.0.0.12\n",
			"  us-west  50.0%  100.0%  80%    50.0%        2.00x",
			"2 service(s) unchanged",
		} {
			assert.Contains(t, out.String(), want)
		}
	})

	t.Run("without a change nothing is asked", func(t *testing.T) {
		cmd := newRoot()
		cmd.SetArgs([]string{"simulate", "--http", srv.URL})
		got = ""
		require.ErrorContains(t, cmd.Execute(), "give at least one --fail, --drain or --weight")
		assert.Empty(t, got)
	})
}
