package httpapi

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/hopperq/hopper"
	"github.com/hopperq/hopper/httpauth"
	"github.com/hopperq/hopper/internal/logtest"
)

func TestDLQ(t *testing.T) {
	t.Parallel()
	e := newEnv(t, envOpts{})
	var dead []hopper.ID
	for range 3 {
		_, d, _ := e.finished()
		dead = append(dead, d)
	}
	var p jobPage
	e.do("GET", "/api/v1/dlq?limit=2", "").ok(200, &p)
	if len(p.Jobs) != 2 || p.Jobs[0].ID != dead[0] || p.NextCursor != fmt.Sprint(dead[1]) {
		t.Errorf("dlq page: %d jobs, cursor %q", len(p.Jobs), p.NextCursor)
	}
	e.do("GET", "/api/v1/dlq?cursor="+p.NextCursor, "").ok(200, &p)
	if len(p.Jobs) != 1 || p.Jobs[0].ID != dead[2] || p.NextCursor != "" {
		t.Errorf("dlq page 2: %+v", p)
	}
	e.do("GET", "/api/v1/dlq?state=dead", "").fails(400, CodeInvalid, "state")

	for _, tc := range []struct{ path, body, field string }{
		{"/api/v1/dlq/retry", `{}`, "ids"},
		{"/api/v1/dlq/retry", `{"ids":[]}`, "ids"},
		{"/api/v1/dlq/retry", `{"all":false}`, "ids"},
		{"/api/v1/dlq/retry", `{"ids":[1],"all":true}`, "all"},
		{"/api/v1/dlq/retry", `{"ids":[0]}`, "ids[0]"},
		{"/api/v1/dlq/purge", `{}`, "ids"},
		{"/api/v1/dlq/purge", `{"all":false}`, "ids"},
		{"/api/v1/dlq/purge", `{"ids":[]}`, "ids"},
		{"/api/v1/dlq/purge", `{"ids":[1],"all":true}`, "ids"},
		{"/api/v1/dlq/purge", `{"older_than":"1h","all":true}`, "ids"},
		{"/api/v1/dlq/purge", `{"older_than":"0s"}`, "older_than"},
		{"/api/v1/dlq/purge", `{"older_than":"a week"}`, "older_than"},
		{"/api/v1/dlq/purge", `{"older_than":-3600}`, "older_than"},
	} {
		e.do("POST", tc.path, tc.body).fails(400, CodeInvalid, tc.field)
	}
	if n, _ := e.c.Count(context.Background(), hopper.ListOptions{States: []hopper.State{hopper.StateDead}}); n != 3 {
		t.Fatalf("%d dead jobs after bad requests, want 3", n)
	}

	var n struct{ Retried, Purged int }
	e.do("POST", "/api/v1/dlq/retry", fmt.Sprintf(`{"ids":[%d,12345]}`, dead[0])).ok(200, &n)
	if n.Retried != 1 || !e.job(dead[0]).State.Waiting() {
		t.Errorf("retried %d; job %s", n.Retried, e.job(dead[0]).State)
	}
	e.do("POST", "/api/v1/dlq/purge", `{"older_than":"1h"}`).ok(200, &n)
	if n.Purged != 0 {
		t.Errorf("purged %d jobs dead for less than an hour", n.Purged)
	}
	e.do("POST", "/api/v1/dlq/purge", fmt.Sprintf(`{"ids":[%d]}`, dead[1])).ok(200, &n)
	if n.Purged != 1 {
		t.Errorf("purged %d", n.Purged)
	}
	e.do("POST", "/api/v1/dlq/retry", `{"all":true}`).ok(200, &n)
	if n.Retried != 1 {
		t.Errorf("retried all: %d", n.Retried)
	}
	e.run() // dies again
	e.do("POST", "/api/v1/dlq/purge", `{"all":true}`).ok(200, &n)
	if n.Purged != 1 {
		t.Errorf("purged all: %d", n.Purged)
	}
}

// TestScheduleTimesInZone: a schedule's next_run_at (and its other times)
// is in its zone with the zone's offset, as its next_runs are, whether
// added, got or listed; a schedule without a zone shows UTC.
func TestScheduleTimesInZone(t *testing.T) {
	t.Parallel()
	for _, store := range stores {
		t.Run(store, func(t *testing.T) {
			t.Parallel()
			e := newEnv(t, envOpts{store: store})
			type sched struct {
				NextRunAt string   `json:"next_run_at"`
				CreatedAt string   `json:"created_at"`
				NextRuns  []string `json:"next_runs"`
			}
			check := func(how string, s sched, offsets ...string) {
				t.Helper()
				if len(s.NextRuns) == 0 || s.NextRunAt != s.NextRuns[0] {
					t.Errorf("%s: next_run_at %q, next_runs %q: want next_run_at = next_runs[0]", how, s.NextRunAt, s.NextRuns)
				}
				for _, ts := range []string{s.NextRunAt, s.CreatedAt} {
					if !slices.ContainsFunc(offsets, func(o string) bool { return strings.HasSuffix(ts, o) }) {
						t.Errorf("%s: %q, want a time with offset %q", how, ts, offsets)
					}
				}
			}
			var s sched
			e.do("POST", "/api/v1/schedules", `{"name":"ny","cron":"0 9 * * *","time_zone":"America/New_York","kind":"ok"}`).ok(http.StatusCreated, &s)
			check("added", s, "-05:00", "-04:00")
			e.do("GET", "/api/v1/schedules/ny", "").ok(http.StatusOK, &s)
			check("got", s, "-05:00", "-04:00")
			e.do("POST", "/api/v1/schedules/ny/pause", "").ok(http.StatusOK, &s)
			if !strings.HasSuffix(s.NextRunAt, "-05:00") && !strings.HasSuffix(s.NextRunAt, "-04:00") {
				t.Errorf("paused: next_run_at %q, want New York time", s.NextRunAt)
			}
			e.do("POST", "/api/v1/schedules/ny/resume", "").ok(http.StatusOK, &s)
			check("resumed", s, "-05:00", "-04:00")
			e.do("POST", "/api/v1/schedules", `{"name":"utc","every":"1h","kind":"ok"}`).ok(http.StatusCreated, &s)
			check("no zone", s, "Z")
			var all struct {
				Schedules []sched `json:"schedules"`
			}
			e.do("GET", "/api/v1/schedules", "").ok(http.StatusOK, &all)
			if len(all.Schedules) != 2 {
				t.Fatalf("listed %d schedules, want 2", len(all.Schedules))
			}
			check("listed", all.Schedules[0], "-05:00", "-04:00")
			check("listed", all.Schedules[1], "Z")
		})
	}
}

func TestSchedules(t *testing.T) {
	t.Parallel()
	for _, store := range stores {
		t.Run(store, func(t *testing.T) {
			t.Parallel()
			e := newEnv(t, envOpts{store: store})
			type sched struct {
				Name     string      `json:"name"`
				Spec     string      `json:"spec"`
				TimeZone string      `json:"time_zone"`
				Paused   bool        `json:"paused"`
				Overlap  string      `json:"overlap"`
				Queue    string      `json:"queue"`
				Timeout  string      `json:"timeout"`
				NextRuns []time.Time `json:"next_runs"`
			}
			var s sched
			e.do("POST", "/api/v1/schedules", `{"name":"nightly","cron":"30 2 * * *","time_zone":"Europe/Berlin","kind":"typed","args":{"n":1},
				"queue":"reports","timeout":"10m","overlap":"allow"}`).ok(http.StatusCreated, &s)
			if s.Name != "nightly" || s.Spec != "30 2 * * *" || s.Overlap != "allow" || s.Queue != "reports" || s.Timeout != "10m0s" || len(s.NextRuns) != NextRuns {
				t.Fatalf("added: %+v", s)
			}
			for i, r := range s.NextRuns {
				if _, off := r.Zone(); r.Hour() != 2 || r.Minute() != 30 || (off != 3600 && off != 7200) {
					t.Errorf("next run %d: %s, want 02:30 Berlin time", i, r)
				}
				if i > 0 && !r.After(s.NextRuns[i-1]) {
					t.Errorf("next runs not increasing: %v", s.NextRuns)
				}
			}
			e.do("POST", "/api/v1/schedules", `{"name":"ping","every":"30s","kind":"ok"}`).ok(http.StatusCreated, &s)
			if len(s.NextRuns) != NextRuns || s.NextRuns[1].Sub(s.NextRuns[0]) != 30*time.Second {
				t.Errorf("every 30s: %v", s.NextRuns)
			}
			e.do("POST", "/api/v1/schedules", `{"name":"later","every":"1m","fixed_delay":true,"kind":"ok"}`).ok(http.StatusCreated, &s)
			if len(s.NextRuns) != 1 {
				t.Errorf("fixed delay: %v", s.NextRuns)
			}
			e.do("POST", "/api/v1/schedules", `{"name":"ping","every":"1m","kind":"ok"}`).fails(409, CodeDuplicate, "name", "replace")
			e.do("POST", "/api/v1/schedules", `{"name":"ping","every":"1m","kind":"ok","replace":true}`).ok(http.StatusCreated, &s)

			for _, tc := range []struct{ body, field string }{
				{`{"name":"x","cron":"61 * * * *","kind":"ok"}`, "cron"},
				{`{"name":"x","cron":"@sometimes","kind":"ok"}`, "cron"},
				{`{"name":"x","cron":"0 0 30 2 *","kind":"ok"}`, "cron"},
				{`{"name":"x","cron":"0 3 * * *","time_zone":"Mars/Olympus","kind":"ok"}`, "time_zone"},
				{`{"name":"x","cron":"TZ=Europe/Paris 0 3 * * *","time_zone":"America/New_York","kind":"ok"}`, "time_zone"},
				{`{"name":"x","cron":"@every 1h","time_zone":"America/New_York","kind":"ok"}`, "time_zone"},
				{`{"name":"x","every":0,"kind":"ok"}`, "every"},
				{`{"name":"x","cron":"0 3 * * *","time_zone":"","kind":"ok"}`, "time_zone"},
				{`{"name":"x","cron":"","kind":"ok"}`, "cron"},
				{`{"name":"x","kind":"ok"}`, "cron"},
				{`{"name":"x","cron":"0 3 * * *","every":"1m","kind":"ok"}`, "cron"},
				{`{"name":"x","every":"500ms","kind":"ok"}`, "every"},
				{`{"name":"x","every":"0s","kind":"ok"}`, "every"},
				{`{"name":"x","every":"often","kind":"ok"}`, "every"},
				{`{"name":"x","every":"1m","time_zone":"UTC","kind":"ok"}`, "time_zone"},
				{`{"name":"x","cron":"0 3 * * *","fixed_delay":true,"kind":"ok"}`, "fixed_delay"},
				{`{"name":"x","every":"1m","overlap":"sometimes","kind":"ok"}`, "overlap"},
				{`{"name":"x","every":"1m","fixed_delay":true,"overlap":"cancel","kind":"ok"}`, "overlap"},
				{`{"name":"x","every":"1m","catch_up":"some","kind":"ok"}`, "catch_up"},
				{`{"name":"x","every":"1m","jitter":"25h","kind":"ok"}`, "jitter"},
				{`{"name":"x","every":"1m","jitter":"0s","kind":"ok"}`, "jitter"},
				{`{"name":"x","every":"1m","jitter_mode":"stable","kind":"ok"}`, "jitter_mode"},
				{`{"name":"x","every":"1m","jitter":"1m","jitter_mode":"sometimes","kind":"ok"}`, "jitter_mode"},
				{`{"name":"x","every":"1m","catch_up_max":5,"kind":"ok"}`, "catch_up_max"},
				{`{"name":"x","every":"1m","catch_up":"all","catch_up_max":10001,"kind":"ok"}`, "catch_up_max"},
				{`{"name":"x","every":"1m","catch_up":"all","catch_up_window":"0s","kind":"ok"}`, "catch_up_window"},
				{`{"name":"x","every":"1m","catch_up":"all","catch_up_window":"200h","kind":"ok"}`, "catch_up_window"},
				{`{"name":"","every":"1m","kind":"ok"}`, "name"},
				{`{"name":"x","every":"1m"}`, "kind"},
				{`{"name":"x","every":"1m","kind":"nope"}`, "kind"},
				{`{"name":"x","every":"1m","kind":"typed","args":{"n":"x"}}`, "args"},
				{`{"name":"x","every":"1m","kind":"ok","queue":""}`, "queue"},
				{`{"name":"x","every":"1m","kind":"ok","max_attempts":0}`, "max_attempts"},
				{`{"name":"x","every":"1m","kind":"ok","delay":"1m"}`, "delay"},
				{`{"name":"x","every":"1m","kind":"ok","unique_key":"k"}`, "unique_key"},
				{`{"name":"` + strings.Repeat("n", 256) + `","every":"1m","kind":"ok"}`, "name"},
			} {
				e.do("POST", "/api/v1/schedules", tc.body).fails(400, CodeInvalid, tc.field)
			}

			var list struct{ Schedules []sched }
			e.do("GET", "/api/v1/schedules", "").ok(200, &list)
			if len(list.Schedules) != 3 || list.Schedules[0].Name != "later" || list.Schedules[2].Name != "ping" {
				t.Errorf("list: %+v", list)
			}
			e.do("POST", "/api/v1/schedules/nightly/pause", "").ok(200, &s)
			if !s.Paused || len(s.NextRuns) != 0 {
				t.Errorf("paused: %+v", s)
			}
			e.do("POST", "/api/v1/schedules/nightly/pause", "").ok(200, &s) // already: fine
			e.do("GET", "/api/v1/schedules/nightly", "").ok(200, &s)
			if !s.Paused {
				t.Errorf("get after pause: %+v", s)
			}
			e.do("POST", "/api/v1/schedules/nightly/resume", "").ok(200, &s)
			if s.Paused || len(s.NextRuns) != NextRuns {
				t.Errorf("resumed: %+v", s)
			}
			e.do("GET", "/api/v1/schedules/nope", "").fails(404, CodeNotFound, "name")
			e.do("POST", "/api/v1/schedules/nope/pause", "").fails(404, CodeNotFound, "name")
			e.do("POST", "/api/v1/schedules/nope/resume", "").fails(404, CodeNotFound, "name")
			e.do("POST", "/api/v1/schedules/nightly/pause", `{"until":"tomorrow"}`).fails(400, CodeInvalid, "until")
			e.do("DELETE", "/api/v1/schedules/nope", "").fails(404, CodeNotFound, "name")
			e.do("GET", "/api/v1/schedules/"+strings.Repeat("n", 256), "").fails(400, CodeInvalid, "name")

			// A name that needs escaping.
			e.do("POST", "/api/v1/schedules", `{"name":"a b/c","every":"1h","kind":"ok"}`).ok(http.StatusCreated, &s)
			e.do("GET", "/api/v1/schedules/"+url.PathEscape("a b/c"), "").ok(200, &s)
			if s.Name != "a b/c" {
				t.Errorf("escaped name: %q", s.Name)
			}
			var removed map[string]string
			e.do("DELETE", "/api/v1/schedules/"+url.PathEscape("a b/c"), "").ok(200, &removed)
			e.do("DELETE", "/api/v1/schedules/ping", "").ok(200, &removed)
			if removed["removed"] != "ping" {
				t.Errorf("removed: %v", removed)
			}
			if scs, _ := e.c.Schedules(context.Background()); len(scs) != 2 {
				t.Errorf("%d schedules left, want 2", len(scs))
			}
		})
	}
}

func TestStats(t *testing.T) {
	t.Parallel()
	e := newEnv(t, envOpts{api: Options{StatsMaxAge: time.Nanosecond}})
	e.finished()
	e.enqueue(`{"kind":"ok","queue":"q2"}`)
	var st statsView
	e.do("GET", "/api/v1/stats", "").ok(200, &st)
	if st.Total != 4 || st.Waiting != 1 || st.Totals["dead"] != 1 || st.Queues["q2"]["available"] != 1 ||
		st.Finished["completed"] != 1 || st.OldestAvailable["q2"].IsZero() || st.At.IsZero() {
		t.Errorf("stats: %+v", st)
	}
	e.do("GET", "/api/v1/stats?window=1h", "").fails(400, CodeInvalid, "window")
}

// TestServers: GET /servers lists the started client, on every store,
// with its running job; a body or a query parameter is refused.
func TestServers(t *testing.T) {
	t.Parallel()
	for _, st := range stores {
		t.Run(st, func(t *testing.T) {
			t.Parallel()
			leading := make(chan struct{}, 1)
			e := newEnv(t, envOpts{store: st, cfg: func(c *hopper.Config) {
				c.Concurrency, c.Logger = 3, logtest.Signal("leading maintenance", leading)
			}})
			var got serversView
			e.do("GET", "/api/v1/servers", "").ok(200, &got)
			if got.Servers == nil || len(got.Servers) != 0 {
				t.Errorf("before Start: %+v, want an empty list", got)
			}
			if err := e.c.Start(); err != nil {
				t.Fatal(err)
			}
			e.enqueue(`{"kind":"block"}`)
			<-e.started
			<-leading
			e.do("GET", "/api/v1/servers", "").ok(200, &got)
			if len(got.Servers) != 1 {
				t.Fatalf("servers: %+v, want the started client", got)
			}
			if s := got.Servers[0]; s.ID != e.c.WorkerID() || s.Workers != 3 || !s.Alive || !s.Leader || s.Running != 1 ||
				s.PID != os.Getpid() || s.StartedAt.IsZero() || s.HeartbeatAt.IsZero() {
				t.Errorf("server: %+v, want %s alive, leading, 3 workers, 1 running", s, e.c.WorkerID())
			}
			close(e.release)
			e.do("GET", "/api/v1/servers?all=1", "").fails(400, CodeInvalid, "all")
			e.do("GET", "/api/v1/servers", `{"x":1}`).fails(400, CodeInvalid, "x")
		})
	}
}

// tokens returns an Auth with a read, a write, an exec and an admin token
// that never throttles (tests send many bad tokens from one address).
func tokens(t *testing.T) *httpauth.Auth {
	t.Helper()
	auth := &httpauth.Auth{MaxFailures: -1, Logger: slog.New(slog.DiscardHandler)}
	if err := auth.ParseTokens("read:" + readToken + ",write:" + writeToken + ",runner=exec:" + execToken + ",admin:" + adminToken); err != nil {
		t.Fatal(err)
	}
	return auth
}

func TestAuth(t *testing.T) {
	t.Parallel()
	e := newEnv(t, envOpts{auth: tokens(t)})
	e.token = adminToken
	_, dead, _ := e.finished()
	// Every route with each token: the scope it needs and no less.
	for _, tc := range []struct {
		method, path, body string
		need               httpauth.Scope
		status             int // with enough scope
	}{
		{"GET", "/api/v1/jobs", "", httpauth.Read, 200},
		{"GET", "/api/v1/jobs/count", "", httpauth.Read, 200},
		{"GET", "/api/v1/jobs/1", "", httpauth.Read, 200},
		{"GET", "/api/v1/dlq", "", httpauth.Read, 200},
		{"GET", "/api/v1/schedules", "", httpauth.Read, 200},
		{"GET", "/api/v1/schedules/nope", "", httpauth.Read, 404},
		{"GET", "/api/v1/stats", "", httpauth.Read, 200},
		{"GET", "/api/v1/servers", "", httpauth.Read, 200},
		{"POST", "/api/v1/jobs", `{"kind":"ok","delay":"1h"}`, httpauth.Write, 201},
		{"POST", "/api/v1/jobs/batch", `{"jobs":[{"kind":"ok","delay":"1h"}]}`, httpauth.Write, 201},
		{"POST", "/api/v1/jobs/1/cancel", "", httpauth.Write, 409},
		{"POST", "/api/v1/jobs/1/reschedule", `{"delay":"1m"}`, httpauth.Write, 409},
		{"POST", "/api/v1/dlq/retry", `{"ids":[12345]}`, httpauth.Write, 200},
		{"POST", "/api/v1/schedules/nope/pause", "", httpauth.Write, 404},
		{"POST", "/api/v1/schedules/nope/resume", "", httpauth.Write, 404},
		{"POST", "/api/v1/dlq/purge", `{"ids":[12345]}`, httpauth.Admin, 200},
		{"POST", "/api/v1/jobs/delete", `{"ids":[12345]}`, httpauth.Admin, 200},
		{"DELETE", "/api/v1/jobs/12345", "", httpauth.Admin, 404},
		{"POST", "/api/v1/schedules", `{"name":"s","every":"1h","kind":"ok","replace":true}`, httpauth.Admin, 201},
		{"DELETE", "/api/v1/schedules/nope", "", httpauth.Admin, 404},
	} {
		e.doAs("", tc.method, tc.path, tc.body).fails(401, CodeUnauthorized, "", "Bearer")
		e.doAs("not-a-token-at-all", tc.method, tc.path, tc.body).fails(401, CodeUnauthorized, "", "invalid token")
		for scope, token := range map[httpauth.Scope]string{httpauth.Read: readToken, httpauth.Write: writeToken, httpauth.Exec: execToken, httpauth.Admin: adminToken} {
			r := e.doAs(token, tc.method, tc.path, tc.body)
			if scope < tc.need {
				r.fails(403, CodeForbidden, "", "needs "+tc.need.String())
			} else if r.status != tc.status {
				t.Errorf("%s %s as %s: %d, want %d: %s", tc.method, tc.path, scope, r.status, tc.status, r.body)
			}
		}
	}
	if r := e.doAs("", "GET", "/api/v1/openapi.json", ""); r.status != 200 {
		t.Errorf("openapi.json without a token: %d", r.status)
	}
	r := e.doAs("", "GET", "/api/v1/jobs", "")
	if h := r.header.Get("WWW-Authenticate"); !strings.HasPrefix(h, "Bearer") {
		t.Errorf("WWW-Authenticate %q", h)
	}

	// Read-only: every change refused, whatever the token.
	ro := tokens(t)
	ro.ReadOnly = true
	e2 := newEnv(t, envOpts{auth: ro})
	e2.doAs(adminToken, "POST", "/api/v1/jobs", `{"kind":"ok"}`).fails(403, CodeForbidden, "", "read-only")
	e2.doAs(adminToken, "GET", "/api/v1/jobs", "").ok(200, nil)
	if j := e.job(dead); j.State != hopper.StateDead {
		t.Errorf("job %d: %s", dead, j.State)
	}
}

func TestCrossOrigin(t *testing.T) {
	t.Parallel()
	e := newEnv(t, envOpts{})
	req, _ := http.NewRequest("POST", e.srv.URL+"/api/v1/jobs", strings.NewReader(`{"kind":"ok"}`))
	req.Header.Set("Sec-Fetch-Site", "cross-site")
	req.Header.Set("Origin", "https://evil.example")
	res, err := e.srv.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if res.StatusCode != 403 {
		t.Errorf("cross-origin POST: %d, want 403", res.StatusCode)
	}
	if n, _ := e.c.Count(context.Background(), hopper.ListOptions{}); n != 0 {
		t.Errorf("a cross-origin request enqueued %d jobs", n)
	}
}

func TestRoutingErrors(t *testing.T) {
	t.Parallel()
	e := newEnv(t, envOpts{api: Options{MaxBodyBytes: 1024}})
	e.do("GET", "/api/v1/nope", "").fails(404, CodeNotFound, "", "openapi.json")
	e.do("GET", "/api/v1/jobs/1/2/3", "").fails(404, CodeNotFound, "")
	r := e.do("PUT", "/api/v1/jobs", `{}`)
	r.fails(405, CodeMethodNotAllowed, "")
	if allow := r.header.Get("Allow"); allow != "GET, POST" {
		t.Errorf("Allow %q", allow)
	}
	e.do("DELETE", "/api/v1/stats", "").fails(405, CodeMethodNotAllowed, "")
	e.do("POST", "/api/v1/jobs", `{"kind":"ok","args":"`+strings.Repeat("a", 2000)+`"}`).fails(400, CodeTooLarge, "body", "1024")
	e.do("POST", "/api/v1/jobs?x=1", `{"kind":"ok"}`).fails(400, CodeInvalid, "x", "takes none")
	e.do("GET", "/api/v1/stats", `{"x":1}`).fails(400, CodeInvalid, "x")
	e.do("POST", "/api/v1/openapi.json", "").fails(405, CodeMethodNotAllowed, "")
	e.do("GET", "/api/v1/schedules?name=x", "").fails(400, CodeInvalid, "name")
}

// TestMethodsOfEveryPath: every path of the API answers each method it
// does not take with 405 and an Allow header listing exactly the methods
// of its routes, and no method it takes with 405. A literal path is its
// own route whatever the method: DELETE /jobs/batch is a 405, not a
// request to delete the job called "batch" (a 400 once).
func TestMethodsOfEveryPath(t *testing.T) {
	t.Parallel()
	e := newEnv(t, envOpts{})
	a := New(e.c, Options{}).(*api)
	methods := map[string][]string{} // path → its methods, in Allow's order
	for _, m := range []string{"GET", "POST", "DELETE"} {
		for _, rt := range a.routes {
			if rt.method == m {
				methods[rt.pattern] = append(methods[rt.pattern], m)
			}
		}
	}
	for pattern, allowed := range methods {
		path := strings.NewReplacer("{id}", "1", "{name}", "nightly").Replace(pattern)
		for _, m := range []string{"GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"} {
			r := e.do(m, path, "")
			takes := slices.Contains(allowed, m) || m == "HEAD" && slices.Contains(allowed, "GET")
			switch {
			case takes && r.status == http.StatusMethodNotAllowed:
				t.Errorf("%s %s: 405, but the path takes %s", m, path, m)
			case !takes && (r.status != http.StatusMethodNotAllowed || r.header.Get("Allow") != strings.Join(allowed, ", ")):
				t.Errorf("%s %s: %d with Allow %q, want 405 with Allow %q", m, path, r.status, r.header.Get("Allow"), strings.Join(allowed, ", "))
			}
		}
	}
}

func TestHealth(t *testing.T) {
	t.Parallel()
	e := newEnv(t, envOpts{store: "sqlite"})
	mux := http.NewServeMux()
	mux.Handle("/healthz", Health())
	mux.Handle("/readyz", Ready(e.c, HealthOptions{Logger: slog.New(slog.DiscardHandler)}))
	mux.Handle("/", New(e.c, Options{}))
	for _, path := range []string{"/healthz", "/readyz"} {
		rec := recorder(mux, "GET", path)
		if rec.Code != 200 || !strings.Contains(rec.Body.String(), `"ok"`) {
			t.Errorf("%s: %d %s", path, rec.Code, rec.Body)
		}
	}
	e.c.StopNow()
	if rec := recorder(mux, "GET", "/readyz"); rec.Code != 503 || !strings.Contains(rec.Body.String(), CodeUnavailable) {
		t.Errorf("readyz after stop: %d %s", rec.Code, rec.Body)
	}
	if rec := recorder(mux, "GET", "/healthz"); rec.Code != 200 {
		t.Errorf("healthz after stop: %d", rec.Code)
	}
	// A stopped client: changes are 503.
	if rec := recorder(mux, "POST", "/api/v1/jobs"); rec.Code != 400 { // empty body: checked first
		t.Errorf("empty enqueue: %d", rec.Code)
	}
	e.do("POST", "/api/v1/jobs", `{"kind":"ok"}`).fails(503, CodeUnavailable, "")
}
