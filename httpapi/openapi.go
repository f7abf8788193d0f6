package httpapi

import (
	_ "embed"
	"net/http"
)

// openAPIDoc is the OpenAPI 3 document of the API. Tests check that it
// lists exactly the routes of api.table, that its references resolve, and
// that each route declares the statuses it answers, both ways
// (statuses_test.go).
//
//go:embed openapi.json
var openAPIDoc []byte

// OpenAPI returns the OpenAPI 3 document of the API (JSON), as served at
// /api/v1/openapi.json. The slice is a copy.
func OpenAPI() []byte { return append([]byte(nil), openAPIDoc...) }

// openAPI handles GET /openapi.json; it needs no token.
func (a *api) openAPI(w http.ResponseWriter, r *http.Request) error {
	h := w.Header()
	h.Set("Content-Type", "application/json; charset=utf-8")
	h.Set("X-Content-Type-Options", "nosniff")
	_, _ = w.Write(openAPIDoc)
	return nil
}
