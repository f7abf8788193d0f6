package httpapi

import (
	"encoding/json"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"

	"github.com/hopperq/hopper"
)

// TestOpenAPIMatchesRoutes: every route the handler registers is in the
// OpenAPI document, and every operation of the document reaches the
// handler's pattern for it.
func TestOpenAPIMatchesRoutes(t *testing.T) {
	t.Parallel()
	c, err := hopper.NewClient(hopper.Config{})
	if err != nil {
		t.Fatal(err)
	}
	defer c.StopNow()
	a := New(c, Options{}).(*api)

	var doc struct {
		OpenAPI string                                `json:"openapi"`
		Paths   map[string]map[string]json.RawMessage `json:"paths"`
	}
	if err := json.Unmarshal(OpenAPI(), &doc); err != nil {
		t.Fatalf("openapi.json: %v", err)
	}
	if !strings.HasPrefix(doc.OpenAPI, "3.") {
		t.Errorf("openapi %q, want 3.x", doc.OpenAPI)
	}
	var inDoc []string
	for path, item := range doc.Paths {
		for method, op := range item {
			if method == "parameters" {
				continue
			}
			m := strings.ToUpper(method)
			inDoc = append(inDoc, m+" "+path)
			// The document's path, made concrete, reaches the pattern of
			// the same name in the handler's mux.
			concrete := strings.NewReplacer("{id}", "1", "{name}", "some-name").Replace(path)
			if _, pattern := a.mux.Handler(httptest.NewRequest(m, concrete, nil)); pattern != path {
				t.Errorf("document has %s %s: the handler routes %s to %q", m, path, concrete, pattern)
			}
			var o struct {
				OperationID string                     `json:"operationId"`
				Responses   map[string]json.RawMessage `json:"responses"`
			}
			if err := json.Unmarshal(op, &o); err != nil || o.OperationID == "" || len(o.Responses) == 0 {
				t.Errorf("%s %s: operation without an operationId or responses (%v)", m, path, err)
			}
		}
	}
	for _, rt := range a.routes {
		if !slices.Contains(inDoc, rt.method+" "+rt.pattern) {
			t.Errorf("route %s %s is not in openapi.json", rt.method, rt.pattern)
		}
	}
	if len(inDoc) != len(a.routes) {
		t.Errorf("openapi.json has %d operations, the handler %d routes", len(inDoc), len(a.routes))
	}
}

// TestOpenAPIRefs: every $ref of the document resolves.
func TestOpenAPIRefs(t *testing.T) {
	t.Parallel()
	var doc any
	if err := json.Unmarshal(OpenAPI(), &doc); err != nil {
		t.Fatal(err)
	}
	resolve := func(ref string) bool {
		var node any = doc
		for _, part := range strings.Split(strings.TrimPrefix(ref, "#/"), "/") {
			m, ok := node.(map[string]any)
			if !ok {
				return false
			}
			if node, ok = m[part]; !ok {
				return false
			}
		}
		return true
	}
	n := 0
	var walk func(v any)
	walk = func(v any) {
		switch x := v.(type) {
		case map[string]any:
			for k, c := range x {
				if k == "$ref" {
					n++
					if ref, _ := c.(string); !strings.HasPrefix(ref, "#/") || !resolve(ref) {
						t.Errorf("$ref %v does not resolve", c)
					}
				}
				walk(c)
			}
		case []any:
			for _, c := range x {
				walk(c)
			}
		}
	}
	walk(doc)
	if n < 50 {
		t.Errorf("only %d $refs found: the walk is broken", n)
	}
}
