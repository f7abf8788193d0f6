package httpapi

import (
	"encoding/json"
	"maps"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/hopperq/hopper"
	"github.com/hopperq/hopper/job"
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

// TestOpenAPICheckSchemas: the document's Check and Ping schemas list the
// fields the API writes — job.CheckView, which the dashboard shows too,
// and job.Ping — and require those written always.
func TestOpenAPICheckSchemas(t *testing.T) {
	t.Parallel()
	var doc struct {
		Components struct {
			Schemas map[string]struct {
				Required   []string                   `json:"required"`
				Properties map[string]json.RawMessage `json:"properties"`
			} `json:"schemas"`
		} `json:"components"`
	}
	if err := json.Unmarshal(OpenAPI(), &doc); err != nil {
		t.Fatal(err)
	}
	code := 1
	full := map[string]any{
		"Check": job.CheckView{Name: "c", Status: job.CheckUp, PingID: "p", PingPath: "/ping/p", Period: 1, Cron: "* * * * *",
			TimeZone: "UTC", Grace: 1, Channels: []string{"ops"}, Paused: true, CreatedAt: time.Unix(1, 0), LastPingAt: time.Unix(2, 0),
			Due: time.Unix(3, 0), DownAt: time.Unix(4, 0), Runs: []job.CheckRun{{RID: "r"}}, LastDuration: 1, Pings: 1},
		"Ping": job.Ping{Seq: 1, Check: "c", Kind: job.PingFail, ExitCode: &code, RID: "r", At: time.Unix(1, 0), Duration: 1,
			Method: "GET", RemoteAddr: "127.0.0.1", UserAgent: "curl", Body: "b", Truncated: true},
	}
	zero := map[string]any{"Check": job.CheckView{}, "Ping": job.Ping{}}
	keys := func(v any) []string {
		b, err := json.Marshal(v)
		if err != nil {
			t.Fatal(err)
		}
		var m map[string]json.RawMessage
		if err := json.Unmarshal(b, &m); err != nil {
			t.Fatal(err)
		}
		return slices.Sorted(maps.Keys(m))
	}
	for name, v := range full {
		s, ok := doc.Components.Schemas[name]
		if !ok {
			t.Errorf("openapi.json has no schema %s", name)
			continue
		}
		if got, want := slices.Sorted(maps.Keys(s.Properties)), keys(v); !slices.Equal(got, want) {
			t.Errorf("schema %s: properties %q, the API writes %q", name, got, want)
		}
		if got, want := slices.Sorted(slices.Values(s.Required)), keys(zero[name]); !slices.Equal(got, want) {
			t.Errorf("schema %s: required %q, the API always writes %q", name, got, want)
		}
	}
}
