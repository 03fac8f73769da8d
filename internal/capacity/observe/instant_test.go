package observe

import (
	"context"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func TestInstant(t *testing.T) {
	body := ""
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(body))
	}))
	defer srv.Close()
	now := time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)
	t.Run("an instant vector gives its values", func(t *testing.T) {
		body = `{"status":"success","data":{"resultType":"vector","result":[{"metric":{"job":"a"},"value":[1,"0.4"]},{"metric":{},"value":[1,"0"]}]}}`
		got, err := Instant(context.Background(), srv.URL, "x", time.Second, now)
		require.NoError(t, err)
		require.Equal(t, []float64{0.4, 0}, got)
	})
	t.Run("an empty vector gives no values", func(t *testing.T) {
		body = `{"status":"success","data":{"resultType":"vector","result":[]}}`
		got, err := Instant(context.Background(), srv.URL, "x", time.Second, now)
		require.NoError(t, err)
		require.Empty(t, got)
	})
	t.Run("a Prometheus error is an error", func(t *testing.T) {
		body = `{"status":"error","errorType":"bad_data","error":"parse error"}`
		_, err := Instant(context.Background(), srv.URL, "x(", time.Second, now)
		require.Error(t, err)
	})
}
