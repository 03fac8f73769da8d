package api

import (
	_ "embed"
	"net/http"
)

// openAPISpec is the OpenAPI 3.0 description of every route Handler serves
// (openapi_test.go checks it against Routes and the real responses).
//
//go:embed openapi.yaml
var openAPISpec []byte

// OpenAPIHandler serves GET /v1/openapi.yaml: the description of this API.
func OpenAPIHandler() http.HandlerFunc {
	return func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/yaml; charset=utf-8")
		w.Header().Set("Cache-Control", "no-cache")
		w.Write(openAPISpec)
	}
}
