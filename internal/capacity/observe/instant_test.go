package observe

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/meridian-gslb/meridian/internal/capacity"
)

// manySamples is a vector of n zero samples whose last one is 1.
func manySamples(n int) string {
	var b strings.Builder
	b.WriteString(`{"status":"success","data":{"resultType":"vector","result":[`)
	for i := range n {
		if i > 0 {
			b.WriteByte(',')
		}
		v := "0"
		if i == n-1 {
			v = "1"
		}
		fmt.Fprintf(&b, `{"metric":{"i":"%d"},"value":[1,"%s"]}`, i, v)
	}
	b.WriteString(`]}}`)
	return b.String()
}

func TestInstant(t *testing.T) {
	many := capacity.MaxSamples + 50
	manyWant := make([]float64, many)
	manyWant[many-1] = 1
	cases := []struct {
		name    string
		query   string
		body    string
		want    []float64
		wantErr string // substring; "" = no error
		reason  string // the queryError's reason when wantErr is set
	}{
		{name: "an instant vector gives every sample's value, with or without labels", query: "x",
			body: `{"status":"success","data":{"resultType":"vector","result":[{"metric":{"job":"a"},"value":[1,"0.4"]},{"metric":{},"value":[1,"0"]}]}}`,
			want: []float64{0.4, 0}},
		{name: "an empty vector gives no values", query: "x",
			body: `{"status":"success","data":{"resultType":"vector","result":[]}}`, want: []float64{}},
		{name: "a scalar that is true gives it as one sample", query: "scalar(x) > bool 1",
			body: `{"status":"success","data":{"resultType":"scalar","result":[1,"1"]}}`, want: []float64{1}},
		{name: "a scalar that is false gives one zero sample", query: "scalar(x) > bool 1",
			body: `{"status":"success","data":{"resultType":"scalar","result":[1,"0"]}}`, want: []float64{0}},
		{name: "every sample past the capacity limit is read, so a late non-zero one is seen", query: "x",
			body: manySamples(many), want: manyWant},
		{name: "a range vector is refused naming the query and its type, not labels", query: "x[5m]",
			body:    `{"status":"success","data":{"resultType":"matrix","result":[{"metric":{},"values":[[1,"0"]]}]}}`,
			wantErr: `abort_if "x[5m]" must return an instant vector or a scalar, got matrix`, reason: FailResult},
		{name: "a string is refused naming the query and its type", query: `"a"`,
			body:    `{"status":"success","data":{"resultType":"string","result":[1,"a"]}}`,
			wantErr: `abort_if "\"a\"" must return an instant vector or a scalar: bad_response: unexpected value type "string"`, reason: FailResult},
		{name: "a Prometheus error is an error", query: "x(",
			body: `{"status":"error","errorType":"bad_data","error":"parse error"}`, wantErr: "parse error", reason: FailStatus},
	}
	now := time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Content-Type", "application/json")
				_, _ = w.Write([]byte(tc.body))
			}))
			defer srv.Close()
			got, err := Instant(context.Background(), srv.URL, tc.query, time.Second, now)
			if tc.wantErr == "" {
				require.NoError(t, err)
				assert.Equal(t, tc.want, got)
				return
			}
			require.Error(t, err)
			assert.Contains(t, err.Error(), tc.wantErr)
			assert.NotContains(t, err.Error(), capacity.LabelEndpoint, "the guard needs no labels")
			var qe *queryError
			require.True(t, errors.As(err, &qe))
			assert.Equal(t, tc.reason, qe.reason)
		})
	}
}
