package httpapi

import (
	"context"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"

	"github.com/hopperq/hopper"
	"github.com/hopperq/hopper/httpauth"
	"github.com/hopperq/hopper/internal/logtest"
)

// count returns how many jobs the store holds.
func (e *env) count() int {
	e.t.Helper()
	n, err := e.c.Count(context.Background(), hopper.ListOptions{})
	if err != nil {
		e.t.Fatal(err)
	}
	return n
}

// withExec lets the test client take jobs of the exec kind (it runs none).
func withExec(c *hopper.Config) { c.ExternalKinds = append(c.ExternalKinds, "exec") }

// TestExecScope: enqueueing exec jobs — one, or one in a batch — needs the
// exec scope; a write token is refused with 403 naming it, and nothing is
// stored. Scheduling them needs admin (which includes exec).
func TestExecScope(t *testing.T) {
	t.Parallel()
	e := newEnv(t, envOpts{auth: tokens(t), cfg: withExec})
	const execJob = `{"kind":"exec","args":{"command":"touch","args":["/tmp/pwned"]}}`
	batch := `{"jobs":[{"kind":"ok"},` + execJob + `]}`
	for _, tc := range []struct{ path, body string }{
		{"/api/v1/jobs", execJob},
		{"/api/v1/jobs", `{"kind":"exec","max_attempts":0}`}, // refused for its scope before its fields are read
		{"/api/v1/jobs/batch", batch},
	} {
		e.doAs(writeToken, "POST", tc.path, tc.body).fails(403, CodeForbidden, "",
			"enqueueing exec jobs runs commands on the server: it needs an exec or admin token (this one has write scope)")
	}
	// A read token is told at once what enqueueing an exec job needs, not
	// "write" and then, with a write token, "exec".
	for _, path := range []string{"/api/v1/jobs", "/api/v1/jobs/batch"} {
		e.doAs(readToken, "POST", path, batch).fails(403, CodeForbidden, "",
			"enqueueing needs write scope, and exec jobs exec or admin (this token has read scope)")
	}
	if n := e.count(); n != 0 {
		t.Fatalf("a write token's refused exec jobs: %d jobs stored", n)
	}
	e.doAs(writeToken, "POST", "/api/v1/jobs", `{"kind":"ok"}`).ok(201, nil)
	e.doAs(execToken, "POST", "/api/v1/jobs", execJob).ok(201, nil)
	e.doAs(adminToken, "POST", "/api/v1/jobs", execJob).ok(201, nil)
	var res batchResult
	e.doAs(execToken, "POST", "/api/v1/jobs/batch", batch).ok(201, &res)
	if res.Enqueued != 2 {
		t.Errorf("exec token's batch: %+v", res)
	}
	sched := `{"name":"nightly","every":"24h","kind":"exec","args":{"command":"true"}}`
	e.doAs(execToken, "POST", "/api/v1/schedules", sched).fails(403, CodeForbidden, "", "needs admin")
	e.doAs(adminToken, "POST", "/api/v1/schedules", sched).ok(201, nil)

	ro := tokens(t)
	ro.ReadOnly = true
	e2 := newEnv(t, envOpts{auth: ro, cfg: withExec})
	e2.doAs(adminToken, "POST", "/api/v1/jobs", execJob).fails(403, CodeForbidden, "", "read-only")
	// Without tokens (a loopback server), every request is admin.
	e3 := newEnv(t, envOpts{cfg: withExec})
	e3.doAs("", "POST", "/api/v1/jobs", execJob).ok(201, nil)
}

// TestThrottled: an address that keeps sending bad tokens gets 429 with
// Retry-After, for every token it sends until the window ends.
func TestThrottled(t *testing.T) {
	t.Parallel()
	auth := tokens(t)
	auth.MaxFailures = 2
	e := newEnv(t, envOpts{auth: auth})
	for range 2 {
		e.doAs("not-a-token-at-all", "GET", "/api/v1/jobs", "").fails(401, CodeUnauthorized, "", "invalid token")
	}
	r := e.doAs("not-a-token-at-all", "GET", "/api/v1/jobs", "")
	r.fails(429, CodeTooManyRequests, "", "too many failed authentications")
	if s, err := strconv.Atoi(r.header.Get("Retry-After")); err != nil || s < 1 || s > 60 {
		t.Errorf("Retry-After %q", r.header.Get("Retry-After"))
	}
	// Not even a valid token is checked now: guessing stops.
	e.doAs(readToken, "GET", "/api/v1/jobs", "").fails(429, CodeTooManyRequests, "")
	e.doAs("", "GET", "/api/v1/jobs", "").fails(401, CodeUnauthorized, "", "Bearer")
}

// TestAudit: every change logs who made it (the token's name, never its
// secret), from where, the route, the status and the targets; reads and
// refused requests do not.
func TestAudit(t *testing.T) {
	t.Parallel()
	var buf logtest.Buffer
	auth := &httpauth.Auth{Logger: slog.New(slog.DiscardHandler)}
	if err := auth.ParseTokens("ci=admin:" + adminToken + ",read:" + readToken); err != nil {
		t.Fatal(err)
	}
	e := newEnv(t, envOpts{auth: auth, api: Options{Logger: slog.New(slog.NewTextHandler(&buf, nil))}})
	e.token = adminToken
	id := e.enqueue(`{"kind":"ok","delay":"1h"}`)
	e.do("GET", "/api/v1/jobs", "").ok(200, nil)
	e.doAs(readToken, "POST", "/api/v1/jobs", `{"kind":"ok"}`).fails(403, CodeForbidden, "")
	e.doAs("not-a-token-at-all", "POST", "/api/v1/jobs", `{"kind":"ok"}`).fails(401, CodeUnauthorized, "")
	e.do("POST", "/api/v1/jobs/"+strconv.FormatInt(int64(id), 10)+"/cancel", "").ok(200, nil)
	e.do("POST", "/api/v1/jobs/batch", `{"jobs":[{"kind":"ok"},{"kind":"typed","args":{"n":1}}]}`).ok(201, nil)
	e.do("POST", "/api/v1/dlq/purge", `{"ids":[7,8]}`).ok(200, nil)
	e.do("POST", "/api/v1/schedules", `{"name":"s1","every":"1h","kind":"ok"}`).ok(201, nil)
	e.do("POST", "/api/v1/schedules/s1/pause", "").ok(200, nil)
	e.do("DELETE", "/api/v1/schedules/nope", "").fails(404, CodeNotFound, "name")

	idStr := strconv.FormatInt(int64(id), 10)
	want := [][]string{
		{`action="POST /api/v1/jobs"`, "token=ci", "remote=127.0.0.1:", "status=201", "job=" + idStr, "kind=ok"},
		{`action="POST /api/v1/jobs/{id}/cancel"`, "path=/api/v1/jobs/" + idStr + "/cancel", "status=200"},
		{`action="POST /api/v1/jobs/batch"`, "jobs=2", "ids=" + strconv.Itoa(int(id)+1) + "," + strconv.Itoa(int(id)+2), "kinds=ok,typed"},
		{`action="POST /api/v1/dlq/purge"`, "ids=7,8", "purged=0"},
		{`action="POST /api/v1/schedules"`, "schedule=s1", "kind=ok"},
		{`action="POST /api/v1/schedules/{name}/pause"`, "path=/api/v1/schedules/s1/pause"},
		{`action="DELETE /api/v1/schedules/{name}"`, "status=404"},
	}
	lines := buf.Lines()
	if len(lines) != len(want) {
		t.Fatalf("%d audit lines, want %d:\n%s", len(lines), len(want), strings.Join(lines, "\n"))
	}
	for i, parts := range want {
		if !strings.Contains(lines[i], "level=INFO msg=audit ") {
			t.Errorf("line %d is no audit line: %s", i, lines[i])
		}
		for _, p := range parts {
			if !strings.Contains(lines[i], p) {
				t.Errorf("audit line %d lacks %q: %s", i, p, lines[i])
			}
		}
		if strings.Contains(lines[i], adminToken) || strings.Contains(lines[i], "admin-admin") {
			t.Errorf("audit line %d holds the secret: %s", i, lines[i])
		}
	}
}

// TestHostDenied: behind an httpauth.HostCheck with HostDenied, the API's
// paths answer a foreign Host with the API's JSON 421, others with the
// text page.
func TestHostDenied(t *testing.T) {
	t.Parallel()
	e := newEnv(t, envOpts{})
	hc, err := httpauth.NewHostCheck(httpauth.HostOptions{Deny: HostDenied, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	mux := http.NewServeMux()
	mux.Handle(Prefix+"/", New(e.c, Options{}))
	mux.Handle(Prefix, New(e.c, Options{}))
	mux.Handle("/", http.NotFoundHandler())
	h := hc.Handler(mux)
	for path, jsonBody := range map[string]bool{"/api/v1/jobs": true, "/api/v1": true, "/": false, "/api/v1x": false} {
		r := httptest.NewRequest("POST", path, strings.NewReader(`{"kind":"ok"}`))
		r.Host = "evil.example:8080"
		r.Header.Set("Origin", "http://evil.example:8080")
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, r)
		isJSON := strings.HasPrefix(rec.Header().Get("Content-Type"), "application/json")
		if rec.Code != http.StatusMisdirectedRequest || isJSON != jsonBody || !strings.Contains(rec.Body.String(), "evil.example") {
			t.Errorf("%s: %d %s", path, rec.Code, rec.Body)
		}
		if jsonBody && !strings.Contains(rec.Body.String(), `"code":"misdirected_request"`) {
			t.Errorf("%s: %s", path, rec.Body)
		}
	}
	if n := e.count(); n != 0 {
		t.Errorf("%d jobs enqueued through a foreign Host", n)
	}
	// GET /api/v1 itself is the API's 404, not a redirect.
	r := httptest.NewRequest("GET", "/api/v1", nil)
	r.Host = "localhost:8080"
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, r)
	if rec.Code != 404 || !strings.Contains(rec.Body.String(), "openapi.json") {
		t.Errorf("GET /api/v1: %d %s", rec.Code, rec.Body)
	}
}
