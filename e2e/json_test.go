//go:build e2e

package e2e

import (
	"encoding/json"
	"net/http"

	"github.com/meridian-gslb/meridian/internal/api"
)

type apiHealth = api.HealthReport

func decodeJSON(resp *http.Response, v any) error { return json.NewDecoder(resp.Body).Decode(v) }
