package httpapi

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"

	"github.com/hopperq/hopper"
	"github.com/hopperq/hopper/httpauth"
)

// The statuses of the OpenAPI document are checked both ways:
//
//   - the statuses every route answers by its shape (its scope, its path's
//     {id} or {name}, whether it reads a body) are declared exactly where
//     they apply (statusRules; TestOpenAPIStatuses);
//   - every other declared status is answered by some request
//     (TestOpenAPIStatuses' recipes);
//   - every status any test of this package saw a route answer is
//     declared for it (observe, checked when the tests end).

// statusRules returns the statuses route rt answers by its shape: 400 (a
// query parameter it does not take), 405 (a method its path does not
// take), 421 (a Host the server does not answer for) and 500 (a store
// failure or a bug) on every route; 401 and 429 (too many failed
// authentications) where a token is checked, 503 (the client stopped, the
// request cancelled) where the client is called, 403 where a read token
// is not enough or a cross-origin browser could post; 404 where the path
// names a job or a schedule (a queue exists by its name alone); 408 (its body did not arrive in time) where
// the route reads a body.
func statusRules(rt route, readsBody bool) []string {
	out := []string{"400", "405", "421", "500"}
	if rt.scope != httpauth.None {
		out = append(out, "401", "429", "503")
		out = append(out, "403") // a read token below write, a worker token on any other route

	}
	// A queue's routes, and adding a channel, take any name: no 404.
	if strings.Contains(rt.pattern, "{") && !strings.HasPrefix(rt.pattern, Prefix+"/queues/") &&
		(rt.method != "POST" || rt.pattern != Prefix+"/channels/{name}") {
		out = append(out, "404")
	}
	if readsBody {
		out = append(out, "408")
	}
	sort.Strings(out)
	return out
}

// ruled are the statuses statusRules decides, for every route.
var ruled = []string{"400", "401", "403", "404", "405", "408", "421", "429", "500", "503"}

// declaredStatuses returns the statuses the OpenAPI document declares for
// each operation, "METHOD PATH" → sorted statuses.
func declaredStatuses() (map[string][]string, error) {
	var doc struct {
		Paths map[string]map[string]json.RawMessage `json:"paths"`
	}
	if err := json.Unmarshal(OpenAPI(), &doc); err != nil {
		return nil, fmt.Errorf("openapi.json: %w", err)
	}
	out := map[string][]string{}
	for path, item := range doc.Paths {
		for method, raw := range item {
			var op struct {
				Responses map[string]json.RawMessage `json:"responses"`
			}
			if method == "parameters" || json.Unmarshal(raw, &op) != nil {
				continue
			}
			var codes []string
			for c := range op.Responses {
				codes = append(codes, c)
			}
			sort.Strings(codes)
			out[strings.ToUpper(method)+" "+path] = codes
		}
	}
	return out, nil
}

// concrete is a route's path with its {id} and {name} filled in.
func concrete(pattern, id, name string) string {
	return strings.NewReplacer("{id}", id, "{name}", name).Replace(pattern)
}

// bodyProbe is a request body that notes whether it was read.
type bodyProbe struct {
	r    io.Reader
	read bool
}

func (b *bodyProbe) Read(p []byte) (int, error) { b.read = true; return b.r.Read(p) }
func (b *bodyProbe) Close() error               { return nil }

// readsBody reports whether rt's handler reads the body of a request that
// passes its path and query checks.
func readsBody(t *testing.T, a *api, rt route) bool {
	t.Helper()
	probe := &bodyProbe{r: strings.NewReader("{}")}
	r := httptest.NewRequest(rt.method, concrete(rt.pattern, "1", "nightly"), nil)
	r.Body = probe
	a.ServeHTTP(httptest.NewRecorder(), r)
	return probe.read
}

// TestOpenAPIStatuses: the document declares, for each route, exactly the
// statuses statusRules gives it, and each other status it declares is
// answered by a request (a recipe below) — so a status dropped from a
// handler, or a route's change of shape, shows here.
func TestOpenAPIStatuses(t *testing.T) {
	t.Parallel()
	// tokens returns an Auth of its own (failures are counted per Auth)
	// with a read, a write and an admin token.
	tokens := func(t *testing.T, maxFailures int) *httpauth.Auth {
		a := &httpauth.Auth{MaxFailures: maxFailures, Logger: slog.New(slog.DiscardHandler)}
		if err := a.ParseTokens("read:" + readToken + ",write:" + writeToken + ",admin:" + adminToken + ",worker:" + workerToken); err != nil {
			t.Fatal(err)
		}
		return a
	}
	declared, err := declaredStatuses()
	if err != nil {
		t.Fatal(err)
	}
	c, err := hopper.NewClient(hopper.Config{})
	if err != nil {
		t.Fatal(err)
	}
	defer c.StopNow()
	probeAPI := New(c, Options{}).(*api)

	// The ruled statuses, both ways.
	for _, rt := range probeAPI.routes {
		op := rt.method + " " + rt.pattern
		var got []string
		for _, s := range declared[op] {
			if slices.Contains(ruled, s) {
				got = append(got, s)
			}
		}
		if want := statusRules(rt, readsBody(t, probeAPI, rt)); !slices.Equal(got, want) {
			t.Errorf("%s declares %v of the statuses its shape decides, want %v", op, got, want)
		}
	}

	// Every other declared status is answered by a recipe: a request to
	// an environment that makes it happen.
	type recipe struct {
		op, status string
		run        func(t *testing.T) int // returns the status answered
	}
	// env returns a fresh environment with admin rights and a job in
	// each of the states completed (1), dead (2), cancelled (3) and
	// scheduled (4), and the schedule "nightly".
	type wenv = *env // env is the function below from here on
	env := func(t *testing.T, o envOpts) *env {
		e := newEnv(t, o)
		if o.auth != nil {
			e.token = adminToken
		}
		e.finished()
		e.enqueue(`{"kind":"ok","delay":"1h","unique_key":"u"}`)
		if _, err := e.c.AddSchedule(context.Background(), "nightly", hopper.ScheduleOptions{Cron: "0 2 * * *", Kind: "ok"}); err != nil {
			t.Fatal(err)
		}
		return e
	}
	send := func(o envOpts, method, path, body string) func(t *testing.T) int {
		return func(t *testing.T) int { return env(t, o).do(method, path, body).status }
	}
	unique := envOpts{cfg: func(c *hopper.Config) { c.UniqueConflict = hopper.UniqueError }}
	recipes := []recipe{
		{"GET /api/v1/openapi.json", "200", send(envOpts{}, "GET", "/api/v1/openapi.json", "")},
		{"POST /api/v1/jobs", "201", send(envOpts{}, "POST", "/api/v1/jobs", `{"kind":"ok"}`)},
		{"POST /api/v1/jobs", "200", send(envOpts{}, "POST", "/api/v1/jobs", `{"kind":"ok","unique_key":"u"}`)},
		{"POST /api/v1/jobs", "409", send(unique, "POST", "/api/v1/jobs", `{"kind":"ok","unique_key":"u"}`)},
		{"GET /api/v1/jobs", "200", send(envOpts{}, "GET", "/api/v1/jobs", "")},
		{"POST /api/v1/jobs/batch", "201", send(envOpts{}, "POST", "/api/v1/jobs/batch", `{"jobs":[{"kind":"ok"}]}`)},
		{"POST /api/v1/jobs/batch", "200", send(envOpts{}, "POST", "/api/v1/jobs/batch", `{"jobs":[{"kind":"ok","unique_key":"u"}]}`)},
		{"GET /api/v1/jobs/count", "200", send(envOpts{}, "GET", "/api/v1/jobs/count", "")},
		{"POST /api/v1/jobs/delete", "200", send(envOpts{}, "POST", "/api/v1/jobs/delete", `{"ids":[1]}`)},
		{"GET /api/v1/jobs/{id}", "200", send(envOpts{}, "GET", "/api/v1/jobs/1", "")},
		{"GET /api/v1/jobs/{id}/output", "200", send(envOpts{}, "GET", "/api/v1/jobs/2/output", "")},
		{"DELETE /api/v1/jobs/{id}", "200", send(envOpts{}, "DELETE", "/api/v1/jobs/1", "")},
		{"DELETE /api/v1/jobs/{id}", "409", send(envOpts{}, "DELETE", "/api/v1/jobs/4", "")},
		{"POST /api/v1/jobs/{id}/cancel", "200", send(envOpts{}, "POST", "/api/v1/jobs/4/cancel", "")},
		{"POST /api/v1/jobs/{id}/cancel", "409", send(envOpts{}, "POST", "/api/v1/jobs/1/cancel", "")},
		{"POST /api/v1/jobs/{id}/reschedule", "200", send(envOpts{}, "POST", "/api/v1/jobs/4/reschedule", `{"delay":"2h"}`)},
		{"POST /api/v1/jobs/{id}/reschedule", "409", send(envOpts{}, "POST", "/api/v1/jobs/1/reschedule", `{"delay":"2h"}`)},
		{"GET /api/v1/dlq", "200", send(envOpts{}, "GET", "/api/v1/dlq", "")},
		{"POST /api/v1/dlq/retry", "200", send(envOpts{}, "POST", "/api/v1/dlq/retry", `{"ids":[2]}`)},
		{"POST /api/v1/dlq/purge", "200", send(envOpts{}, "POST", "/api/v1/dlq/purge", `{"ids":[2]}`)},
		{"GET /api/v1/schedules", "200", send(envOpts{}, "GET", "/api/v1/schedules", "")},
		{"POST /api/v1/schedules", "201", send(envOpts{}, "POST", "/api/v1/schedules", `{"name":"hourly","cron":"@hourly","kind":"ok"}`)},
		{"POST /api/v1/schedules", "409", send(envOpts{}, "POST", "/api/v1/schedules", `{"name":"nightly","cron":"@hourly","kind":"ok"}`)},
		{"GET /api/v1/schedules/{name}", "200", send(envOpts{}, "GET", "/api/v1/schedules/nightly", "")},
		{"DELETE /api/v1/schedules/{name}", "200", send(envOpts{}, "DELETE", "/api/v1/schedules/nightly", "")},
		{"POST /api/v1/schedules/{name}/pause", "200", send(envOpts{}, "POST", "/api/v1/schedules/nightly/pause", "")},
		{"POST /api/v1/schedules/{name}/resume", "200", send(envOpts{}, "POST", "/api/v1/schedules/nightly/resume", "")},
		{"GET /api/v1/queues", "200", send(envOpts{}, "GET", "/api/v1/queues", "")},
		{"POST /api/v1/queues/{name}/pause", "200", send(envOpts{}, "POST", "/api/v1/queues/nightly/pause", "")},
		{"POST /api/v1/queues/{name}/resume", "200", send(envOpts{}, "POST", "/api/v1/queues/nightly/resume", "")},
		{"POST /api/v1/queues/{name}/limits", "200", send(envOpts{}, "POST", "/api/v1/queues/nightly/limits", `{"concurrency":2}`)},
		{"POST /api/v1/schedules/{name}/run", "201", send(envOpts{}, "POST", "/api/v1/schedules/nightly/run", "")},
		{"POST /api/v1/schedules/{name}/run", "409", func(t *testing.T) int {
			e := env(t, envOpts{}) // not started: the first run stays available
			e.do("POST", "/api/v1/schedules/nightly/run", "")
			return e.do("POST", "/api/v1/schedules/nightly/run", "").status
		}},
		{"POST /api/v1/schedules/{name}/run", "202", func(t *testing.T) int {
			e := env(t, envOpts{}) // not started: the first run stays available
			e.do("POST", "/api/v1/schedules", `{"name":"b","every":"1h","overlap":"buffer-all","kind":"ok"}`)
			e.do("POST", "/api/v1/schedules/b/run", "")
			return e.do("POST", "/api/v1/schedules/b/run", "").status
		}},
		{"POST /api/v1/schedules/{name}/backfill", "200", send(envOpts{}, "POST", "/api/v1/schedules/nightly/backfill",
			`{"from":"2020-01-01T00:00:00Z","to":"2020-01-03T00:00:00Z"}`)},
		{"GET /api/v1/stats", "200", send(envOpts{}, "GET", "/api/v1/stats", "")},
		{"GET /api/v1/servers", "200", send(envOpts{}, "GET", "/api/v1/servers", "")},
		{"POST /api/v1/workers", "201", send(envOpts{}, "POST", "/api/v1/workers", `{"kinds":["remote"],"slots":1}`)},
		{"GET /api/v1/workers", "200", send(envOpts{}, "GET", "/api/v1/workers", "")},
		{"GET /api/v1/incidents", "200", send(envOpts{}, "GET", "/api/v1/incidents", "")},
		{"GET /api/v1/channels", "200", send(envOpts{}, "GET", "/api/v1/channels", "")},
		{"POST /api/v1/channels/{name}", "200", send(envOpts{}, "POST", "/api/v1/channels/ops", `{"type":"webhook","url":"https://example.com/h"}`)},
		{"DELETE /api/v1/channels/{name}", "200", func(t *testing.T) int {
			e := env(t, envOpts{})
			e.do("POST", "/api/v1/channels/nightly", `{"type":"webhook","url":"https://example.com/h"}`)
			return e.do("DELETE", "/api/v1/channels/nightly", "").status
		}},
		{"POST /api/v1/channels/{name}/test", "201", func(t *testing.T) int {
			e := env(t, envOpts{})
			e.do("POST", "/api/v1/channels/nightly", `{"type":"webhook","url":"https://example.com/h"}`)
			return e.do("POST", "/api/v1/channels/nightly/test", "").status
		}},
		{"GET /api/v1/checks", "200", send(envOpts{}, "GET", "/api/v1/checks", "")},
		{"POST /api/v1/checks", "201", send(envOpts{}, "POST", "/api/v1/checks", `{"name":"c","period":"1h"}`)},
		{"POST /api/v1/checks", "409", func(t *testing.T) int {
			e := env(t, envOpts{})
			e.do("POST", "/api/v1/checks", `{"name":"c","period":"1h"}`)
			return e.do("POST", "/api/v1/checks", `{"name":"c","period":"1h"}`).status
		}},
		{"GET /api/v1/checks/{name}", "200", checkRecipe(env, "GET", "")},
		{"DELETE /api/v1/checks/{name}", "200", checkRecipe(env, "DELETE", "")},
		{"POST /api/v1/checks/{name}/pause", "200", checkRecipe(env, "POST", "/pause")},
		{"POST /api/v1/checks/{name}/resume", "200", checkRecipe(env, "POST", "/resume")},
	}
	// The worker protocol's answers need a registered worker and a lease.
	worker := func(f func(e wenv, id string, l hopper.Lease) response) func(t *testing.T) int {
		return func(t *testing.T) int {
			e := env(t, envOpts{})
			id := e.register("")
			return f(e, id, e.fetchOne(id)).status
		}
	}
	wpath := func(id, verb string) string { return "/api/v1/workers/" + id + verb }
	for _, x := range []struct {
		op, status string
		f          func(e wenv, id string, l hopper.Lease) response
	}{
		{"DELETE /api/v1/workers/{id}", "204", func(e wenv, id string, l hopper.Lease) response { return e.do("DELETE", wpath(id, ""), "") }},
		{"POST /api/v1/workers/{id}/fetch", "200", func(e wenv, id string, l hopper.Lease) response {
			return e.do("POST", wpath(id, "/fetch"), `{"max":1}`)
		}},
		{"POST /api/v1/workers/{id}/heartbeat", "200", func(e wenv, id string, l hopper.Lease) response {
			return e.do("POST", wpath(id, "/heartbeat"), `{"tokens":["`+l.Token+`"]}`)
		}},
		{"POST /api/v1/workers/{id}/complete", "200", func(e wenv, id string, l hopper.Lease) response {
			return e.do("POST", wpath(id, "/complete"), `{"token":"`+l.Token+`"}`)
		}},
		{"POST /api/v1/workers/{id}/complete", "409", func(e wenv, id string, l hopper.Lease) response {
			e.do("POST", wpath(id, "/complete"), `{"token":"`+l.Token+`"}`)
			return e.do("POST", wpath(id, "/complete"), `{"token":"`+l.Token+`"}`)
		}},
		{"POST /api/v1/workers/{id}/complete/batch", "200", func(e wenv, id string, l hopper.Lease) response {
			return e.do("POST", wpath(id, "/complete/batch"), `{"completions":[{"token":"`+l.Token+`"}]}`)
		}},
		{"POST /api/v1/workers/{id}/complete/batch", "409", func(e wenv, id string, l hopper.Lease) response {
			e.do("POST", wpath(id, "/complete"), `{"token":"`+l.Token+`"}`)
			return e.do("POST", wpath(id, "/complete/batch"), `{"completions":[{"token":"`+l.Token+`"}]}`)
		}},
		{"POST /api/v1/workers/{id}/fail", "200", func(e wenv, id string, l hopper.Lease) response {
			return e.do("POST", wpath(id, "/fail"), `{"token":"`+l.Token+`","error":"e"}`)
		}},
		{"POST /api/v1/workers/{id}/fail", "409", func(e wenv, id string, l hopper.Lease) response {
			e.do("POST", wpath(id, "/complete"), `{"token":"`+l.Token+`"}`)
			return e.do("POST", wpath(id, "/fail"), `{"token":"`+l.Token+`","error":"e"}`)
		}},
		{"POST /api/v1/workers/{id}/fail/batch", "200", func(e wenv, id string, l hopper.Lease) response {
			return e.do("POST", wpath(id, "/fail/batch"), `{"failures":[{"token":"`+l.Token+`","error":"e"}]}`)
		}},
		{"POST /api/v1/workers/{id}/fail/batch", "409", func(e wenv, id string, l hopper.Lease) response {
			e.do("POST", wpath(id, "/complete"), `{"token":"`+l.Token+`"}`)
			return e.do("POST", wpath(id, "/fail/batch"), `{"failures":[{"token":"`+l.Token+`","error":"e"}]}`)
		}},
		{"POST /api/v1/workers/{id}/snooze", "200", func(e wenv, id string, l hopper.Lease) response {
			return e.do("POST", wpath(id, "/snooze"), `{"token":"`+l.Token+`","delay":"1m"}`)
		}},
		{"POST /api/v1/workers/{id}/snooze", "409", func(e wenv, id string, l hopper.Lease) response {
			e.do("POST", wpath(id, "/complete"), `{"token":"`+l.Token+`"}`)
			return e.do("POST", wpath(id, "/snooze"), `{"token":"`+l.Token+`","delay":"1m"}`)
		}},
		{"POST /api/v1/workers/{id}/snooze/batch", "200", func(e wenv, id string, l hopper.Lease) response {
			return e.do("POST", wpath(id, "/snooze/batch"), `{"snoozes":[{"token":"`+l.Token+`","delay":"1m","hold_key":true}]}`)
		}},
		{"POST /api/v1/workers/{id}/snooze/batch", "409", func(e wenv, id string, l hopper.Lease) response {
			e.do("POST", wpath(id, "/complete"), `{"token":"`+l.Token+`"}`)
			return e.do("POST", wpath(id, "/snooze/batch"), `{"snoozes":[{"token":"`+l.Token+`","delay":"1m"}]}`)
		}},
		{"POST /api/v1/workers/{id}/quiet", "200", func(e wenv, id string, l hopper.Lease) response { return e.do("POST", wpath(id, "/quiet"), "") }},
		{"POST /api/v1/workers/{id}/stop", "200", func(e wenv, id string, l hopper.Lease) response { return e.do("POST", wpath(id, "/stop"), "") }},
	} {
		recipes = append(recipes, recipe{x.op, x.status, worker(x.f)})
	}
	bodies := map[string]string{
		"POST /api/v1/jobs":                        `{"kind":"ok"}`,
		"POST /api/v1/jobs/batch":                  `{"jobs":[{"kind":"ok"}]}`,
		"POST /api/v1/jobs/delete":                 `{"ids":[1]}`,
		"POST /api/v1/jobs/{id}/reschedule":        `{"delay":"2h"}`,
		"POST /api/v1/dlq/retry":                   `{"ids":[2]}`,
		"POST /api/v1/dlq/purge":                   `{"ids":[2]}`,
		"POST /api/v1/schedules":                   `{"name":"hourly","cron":"@hourly","kind":"ok"}`,
		"POST /api/v1/workers":                     `{"kinds":["remote"],"slots":1}`,
		"POST /api/v1/workers/{id}/fetch":          `{"max":1}`,
		"POST /api/v1/workers/{id}/heartbeat":      `{"tokens":[]}`,
		"POST /api/v1/workers/{id}/complete":       `{"token":"1.1.AAAAAAAAAAAAAAAAAAAAAA"}`,
		"POST /api/v1/workers/{id}/complete/batch": `{"completions":[{"token":"1.1.AAAAAAAAAAAAAAAAAAAAAA"}]}`,
		"POST /api/v1/workers/{id}/fail":           `{"token":"1.1.AAAAAAAAAAAAAAAAAAAAAA","error":"e"}`,
		"POST /api/v1/workers/{id}/fail/batch":     `{"failures":[{"token":"1.1.AAAAAAAAAAAAAAAAAAAAAA","error":"e"}]}`,
		"POST /api/v1/workers/{id}/snooze":         `{"token":"1.1.AAAAAAAAAAAAAAAAAAAAAA","delay":"1m"}`,
		"POST /api/v1/workers/{id}/snooze/batch":   `{"snoozes":[{"token":"1.1.AAAAAAAAAAAAAAAAAAAAAA","delay":"1m"}]}`,
		"POST /api/v1/queues/{name}/limits":        `{"concurrency":2}`,
		"POST /api/v1/schedules/{name}/backfill":   `{"from":"1999-12-31T00:00:00Z","to":"1999-12-31T23:00:00Z"}`,
		"POST /api/v1/channels/{name}":             `{"type":"webhook","url":"https://example.com/h"}`,
		"POST /api/v1/checks":                      `{"name":"c","period":"1h"}`,
	}
	// The ruled statuses the API answers itself, on every route they
	// apply to. 408 and 421 come from the server's bounds and Host check
	// in front of the handlers (tested there), and 500 from a.fail and
	// wrap's recover, shared by every route.
	for _, rt := range probeAPI.routes {
		op := rt.method + " " + rt.pattern
		path := concrete(rt.pattern, "1", "nightly")
		body := bodies[op] // a body the route takes, if it takes one
		for _, s := range declared[op] {
			var run func(t *testing.T) int
			switch s {
			case "400":
				run = send(envOpts{}, rt.method, path+"?bogus=1", body)
			case "401":
				run = func(t *testing.T) int {
					e := env(t, envOpts{auth: tokens(t, 0)})
					return e.doAs("", rt.method, path, body).status
				}
			case "403":
				run = func(t *testing.T) int {
					e := env(t, envOpts{auth: tokens(t, 0)})
					tok := readToken // a worker token may do what it may not, and the reverse
					if rt.scope == httpauth.Read {
						tok = workerToken
					}
					return e.doAs(tok, rt.method, path, body).status
				}
			case "429":
				run = func(t *testing.T) int {
					e := env(t, envOpts{auth: tokens(t, 1)})
					status := 0
					for range 3 { // a guess, a second one over the limit, then refused unchecked
						if status = e.doAs("guess-guess-guess-guess", rt.method, path, body).status; status == http.StatusTooManyRequests {
							break
						}
					}
					return status
				}
			case "404":
				run = send(envOpts{}, rt.method, concrete(rt.pattern, "999", "nowhere"), body)
			case "405":
				run = send(envOpts{}, "PUT", path, body)
			case "503":
				run = func(t *testing.T) int {
					e := env(t, envOpts{})
					e.c.StopNow()
					return e.do(rt.method, path, body).status
				}
			default:
				continue
			}
			recipes = append(recipes, recipe{op, s, run})
		}
	}
	exempt := []string{"408", "421", "500"}
	for op, codes := range declared {
		for _, s := range codes {
			if !slices.Contains(exempt, s) && !slices.ContainsFunc(recipes, func(r recipe) bool { return r.op == op && r.status == s }) {
				t.Errorf("%s declares %s, but no recipe answers it", op, s)
			}
		}
	}
	for _, r := range recipes {
		t.Run(strings.ReplaceAll(r.op, "/", "_")+"_"+r.status, func(t *testing.T) {
			t.Parallel()
			if !slices.Contains(declared[r.op], r.status) {
				t.Errorf("%s answers %s, which the document does not declare", r.op, r.status)
			}
			if got := r.run(t); fmt.Sprint(got) != r.status {
				t.Errorf("%s: the recipe for %s got %d", r.op, r.status, got)
			}
		})
	}
}

// seen is every status a test of this package saw an operation answer:
// "METHOD PATTERN STATUS", or "* PATTERN STATUS" for a method the path
// does not take.
var seen sync.Map

// observe wraps the API of a test environment to note in seen what each
// operation answers.
func observe(h http.Handler) http.Handler {
	a := h.(*api)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, pattern := a.mux.Handler(r)
		sw := &statusWriter{ResponseWriter: w}
		h.ServeHTTP(sw, r)
		if !strings.HasPrefix(pattern, Prefix+"/") {
			return // an unknown path, or a path to clean
		}
		m := r.Method
		if m == http.MethodHead {
			m = http.MethodGet
		}
		op := "* " + pattern
		if slices.ContainsFunc(a.routes, func(rt route) bool { return rt.method == m && rt.pattern == pattern }) {
			op = m + " " + pattern
		}
		seen.Store(fmt.Sprintf("%s %d", op, cmpStatus(sw.status)), true)
	})
}

func cmpStatus(s int) int {
	if s == 0 {
		return http.StatusOK
	}
	return s
}

// statusWriter notes a response's status.
type statusWriter struct {
	http.ResponseWriter
	status int
}

func (w *statusWriter) WriteHeader(code int) {
	if w.status == 0 {
		w.status = code
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *statusWriter) Write(b []byte) (int, error) {
	if w.status == 0 {
		w.status = http.StatusOK
	}
	return w.ResponseWriter.Write(b)
}

func (w *statusWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// undeclaredSeen returns the statuses the tests saw that the document
// does not declare for their operation (for a method a path does not
// take: 405, declared by each of the path's operations).
func undeclaredSeen() []string {
	declared, err := declaredStatuses()
	if err != nil {
		return []string{err.Error()}
	}
	var bad []string
	seen.Range(func(k, _ any) bool {
		key := k.(string)
		i := strings.LastIndexByte(key, ' ')
		op, status := key[:i], key[i+1:]
		if path, ok := strings.CutPrefix(op, "* "); ok {
			for dop, codes := range declared {
				if strings.HasSuffix(dop, " "+path) && !slices.Contains(codes, status) {
					bad = append(bad, dop+" answers "+status+" to another method")
				}
			}
			return true
		}
		if !slices.Contains(declared[op], status) {
			bad = append(bad, op+" answers "+status)
		}
		return true
	})
	sort.Strings(bad)
	return bad
}

// afterTests is testing.M with the check of the statuses seen.
type afterTests struct{ m *testing.M }

func (a afterTests) Run() int {
	code := a.m.Run()
	if code != 0 {
		return code
	}
	if bad := undeclaredSeen(); len(bad) > 0 {
		fmt.Fprintf(os.Stderr, "FAIL: statuses the tests saw that openapi.json does not declare:\n\t%s\n", strings.Join(bad, "\n\t"))
		return 1
	}
	return 0
}
