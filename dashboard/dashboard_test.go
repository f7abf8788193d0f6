package dashboard

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"maps"
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hopperq/hopper"
	"github.com/hopperq/hopper/httpapi"
	"github.com/hopperq/hopper/httpauth"
	"github.com/hopperq/hopper/internal/dashtest"
)

// TestPages: every page answers with its status, the security headers and
// what it is about.
func TestPages(t *testing.T) {
	t.Parallel()
	e := newEnv(t, Options{})
	ok := e.enqueue("ok", nil)
	dead := e.enqueue("fail", nil)
	e.run()
	ctx := context.Background()
	if _, err := e.c.AddSchedule(ctx, "nightly", hopper.ScheduleOptions{Cron: "0 2 * * *", TimeZone: "Europe/Berlin", Kind: "ok"}); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		path   string
		status int
		want   string
	}{
		{"/", 200, "Throughput"},
		{"/jobs", 200, fmt.Sprintf(`id="job-%d"`, ok)},
		{"/jobs?state=dead", 200, fmt.Sprintf(`id="job-%d"`, dead)},
		{"/jobs?queue=default&kind=ok", 200, fmt.Sprintf(`id="job-%d"`, ok)},
		{"/dlq", 200, "smtp: 550 mailbox unavailable"},
		{fmt.Sprintf("/jobs/%d", ok), 200, "sent"},
		{fmt.Sprintf("/jobs/%d", dead), 200, "smtp: 550 mailbox unavailable"},
		{"/schedules", 200, "Europe/Berlin"},
		{"/servers", 200, "No servers"},
		{"/queues", 200, `data-queue="default"`},
		{"/jobs/999999", 404, "Not found"},
		{"/jobs/abc", 404, "No such job"},
		{"/jobs?state=bogus", 400, "state"},
		{"/jobs?after=-3", 400, "after"},
		{"/nowhere", 404, "No such page"},
	} {
		r := e.get(tc.path, "").want(t, tc.status)
		if !strings.Contains(r.body, tc.want) {
			t.Errorf("GET %s: no %q in the page", tc.path, tc.want)
		}
		hd := r.Header
		if got := hd.Get("Content-Security-Policy"); got != csp {
			t.Errorf("GET %s: Content-Security-Policy %q, want %q", tc.path, got, csp)
		}
		if !strings.Contains(hd.Get("Content-Security-Policy"), "script-src 'self'") || strings.Contains(hd.Get("Content-Security-Policy"), "unsafe-inline") {
			t.Errorf("GET %s: the CSP allows inline script", tc.path)
		}
		if hd.Get("X-Frame-Options") != "DENY" || hd.Get("X-Content-Type-Options") != "nosniff" {
			t.Errorf("GET %s: headers %v", tc.path, hd)
		}
		if strings.Contains(r.body, "<script>") || strings.Contains(r.body, " style=") || strings.Contains(r.body, " onclick=") {
			t.Errorf("GET %s: inline script or style in the page", tc.path)
		}
		if tc.status == 200 && hd.Get("Cache-Control") != "no-store" {
			t.Errorf("GET %s: Cache-Control %q", tc.path, hd.Get("Cache-Control"))
		}
	}
	// The sign-in page of a dashboard without tokens leads to the overview.
	if r := e.get("/login", "").want(t, http.StatusSeeOther); r.Header.Get("Location") != "/" {
		t.Errorf("GET /login without tokens: to %q", r.Header.Get("Location"))
	}
}

// TestStatic: the embedded files, cacheable for good under their hash.
func TestStatic(t *testing.T) {
	t.Parallel()
	e := newEnv(t, Options{})
	page := e.get("/", "").want(t, 200).body
	for name, ctype := range map[string]string{"app.css": "text/css", "app.js": "text/javascript", "icon.svg": "image/svg+xml"} {
		u := assetURL("")(name)
		if !strings.Contains(page, strings.ReplaceAll(u, "&", "&amp;")) {
			t.Errorf("the page does not link %s", u)
		}
		r := e.get(u, "").want(t, 200)
		if !strings.HasPrefix(r.Header.Get("Content-Type"), ctype) || !strings.Contains(r.Header.Get("Cache-Control"), "immutable") || len(r.body) == 0 {
			t.Errorf("GET %s: %v", u, r.Header)
		}
	}
	if r := e.get("/static/app.js", "").want(t, 200); r.Header.Get("Cache-Control") != "no-cache" {
		t.Errorf("app.js without its hash: Cache-Control %q", r.Header.Get("Cache-Control"))
	}
	e.get("/static/nope.js", "").want(t, 404)
}

// TestOverviewCounts: the overview shows the store's counts by queue and
// state, with totals.
func TestOverviewCounts(t *testing.T) {
	t.Parallel()
	e := newEnv(t, Options{})
	for range 3 {
		e.enqueue("ok", nil)
	}
	e.enqueue("fail", &hopper.EnqueueOptions{Queue: "mail"})
	e.run()
	for range 2 {
		e.enqueue("ok", &hopper.EnqueueOptions{Queue: "mail"})
	}
	e.enqueue("ok", &hopper.EnqueueOptions{Delay: time.Hour})
	page := e.get("/", "").want(t, 200).body
	for _, tc := range []struct {
		queue, state string
		want         int
	}{
		{"default", "completed", 3}, {"default", "scheduled", 1}, {"mail", "dead", 1}, {"mail", "available", 2},
		{"mail", "completed", 0}, {"*", "completed", 3}, {"*", "available", 2}, {"*", "dead", 1},
	} {
		if got := cell(t, page, tc.queue, tc.state); got != tc.want {
			t.Errorf("queue %s, %s: %d, want %d", tc.queue, tc.state, got, tc.want)
		}
	}
	if !strings.Contains(page, `id="total-jobs">7<`) {
		t.Errorf("total: want 7")
	}
	if !strings.Contains(page, `id="nav-dead" data-live>1<`) {
		t.Errorf("navigation: want 1 dead job")
	}
}

// TestPaging walks a list by its keyset links: newest first, older and
// newer pages, no job twice or missed.
func TestPaging(t *testing.T) {
	t.Parallel()
	e := newEnv(t, Options{PageSize: 50})
	var all []hopper.ID
	for range 120 {
		all = append(all, e.enqueue("ok", nil))
	}
	slices.Reverse(all) // newest first
	page := e.get("/jobs", "").want(t, 200).body
	var seen []hopper.ID
	var pages [][]hopper.ID
	for {
		ids := rowIDs(page)
		pages = append(pages, ids)
		seen = append(seen, ids...)
		next := link(page, "page-older")
		if next == "" {
			break
		}
		page = e.get(next, "").want(t, 200).body
	}
	if !slices.Equal(seen, all) {
		t.Fatalf("walking older: %v\nwant %v", seen, all)
	}
	if len(pages) != 3 || len(pages[2]) != 20 {
		t.Fatalf("pages of %d, %d, %d jobs; want 50, 50, 20", len(pages[0]), len(pages[1]), len(pages[2]))
	}
	// And back: newer from the last page gives the middle one.
	newer := link(page, "page-newer")
	mid := e.get(newer, "").want(t, 200).body
	if got := rowIDs(mid); !slices.Equal(got, pages[1]) {
		t.Errorf("newer from the last page: %v, want %v", got, pages[1])
	}
	first := e.get(link(mid, "page-newer"), "").want(t, 200).body
	if got := rowIDs(first); !slices.Equal(got, pages[0]) || link(first, "page-newer") != "" {
		t.Errorf("newer again: %v (newer link %q), want the first page", got, link(first, "page-newer"))
	}
	if link(first, "page-first") == "" {
		t.Errorf("a page reached by a cursor has no link to the newest")
	}
	// Filters go with the cursor.
	e.enqueue("fail", &hopper.EnqueueOptions{Queue: "q2"})
	p := e.get("/jobs?queue=q2", "").want(t, 200).body
	if ids := rowIDs(p); len(ids) != 1 || link(p, "page-older") != "" {
		t.Errorf("queue q2: %v", ids)
	}
}

// TestSearch: an ID opens the job, anything else is a kind.
func TestSearch(t *testing.T) {
	t.Parallel()
	e := newEnv(t, Options{})
	id := e.enqueue("ok", nil)
	other := e.enqueue("fail", nil)
	r := e.get("/jobs?q="+strconv.FormatInt(int64(id), 10), "").want(t, http.StatusSeeOther)
	if r.Header.Get("Location") != "/jobs/"+strconv.FormatInt(int64(id), 10) {
		t.Errorf("search by ID: to %q", r.Header.Get("Location"))
	}
	if ids := rowIDs(e.get("/jobs?q=fail", "").want(t, 200).body); !slices.Equal(ids, []hopper.ID{other}) {
		t.Errorf("search by kind: %v, want [%d]", ids, other)
	}
	if body := e.get("/jobs?q=424242", "").want(t, 200).body; !strings.Contains(body, "No job 424242") {
		t.Errorf("search for a missing ID: no message")
	}
}

// TestScopes: a read token sees no action and is refused when it posts
// anyway; deleting needs an admin token; no token goes to the sign-in
// page.
func TestScopes(t *testing.T) {
	t.Parallel()
	e := newEnv(t, Options{Auth: dashtest.Tokens(t)})
	waiting := e.enqueue("ok", &hopper.EnqueueOptions{Delay: time.Hour})
	dead := e.enqueue("fail", nil)
	e.run()
	jobPath := func(id hopper.ID) string { return "/jobs/" + strconv.FormatInt(int64(id), 10) }

	// No token.
	r := e.get("/jobs", "").want(t, http.StatusSeeOther)
	if loc := r.Header.Get("Location"); loc != "/login?next=%2Fjobs" {
		t.Errorf("no token: to %q", loc)
	}
	e.post(jobPath(waiting)+"/cancel", "", url.Values{}).want(t, http.StatusUnauthorized)
	e.get("/events", "").want(t, http.StatusSeeOther)
	if r := e.get("/jobs", "not-a-token-at-all-0000"); !strings.Contains(r.Header.Get("Location"), "expired=1") {
		t.Errorf("bad token: to %q", r.Header.Get("Location"))
	}

	// Read: pages without buttons, actions refused.
	for _, path := range []string{"/", "/jobs", "/dlq", jobPath(waiting), jobPath(dead), "/schedules", "/servers", "/queues"} {
		body := e.get(path, dashtest.ReadToken).want(t, 200).body
		for _, button := range []string{`name="action"`, `id="cancel"`, `id="retry"`, `id="delete"`, `id="reschedule"`, `name="ids"`} {
			if strings.Contains(body, button) {
				t.Errorf("read token, %s: shows %s", path, button)
			}
		}
	}
	for _, a := range []struct {
		path string
		form url.Values
	}{
		{jobPath(waiting) + "/cancel", url.Values{}},
		{jobPath(dead) + "/retry", url.Values{}},
		{jobPath(waiting) + "/reschedule", url.Values{"now": {"1"}}},
		{"/bulk", url.Values{"action": {"cancel"}, "ids": {strconv.FormatInt(int64(waiting), 10)}, "confirm": {"1"}}},
		{"/schedules/x/pause", url.Values{}},
		{"/queues/x/pause", url.Values{}},
	} {
		e.post(a.path, dashtest.ReadToken, a.form).want(t, http.StatusForbidden)
	}
	if st := e.job(waiting).State; st != hopper.StateScheduled {
		t.Fatalf("after refused posts, the waiting job is %s", st)
	}

	// Write: cancel yes, delete no.
	body := e.get(jobPath(waiting), dashtest.WriteToken).want(t, 200).body
	if !strings.Contains(body, `id="cancel"`) || strings.Contains(body, `id="delete"`) {
		t.Errorf("write token, waiting job: want cancel and no delete")
	}
	if strings.Contains(e.get(jobPath(dead), dashtest.WriteToken).body, `id="delete"`) {
		t.Errorf("write token: offered delete")
	}
	del := url.Values{"action": {"delete"}, "ids": {strconv.FormatInt(int64(dead), 10)}, "confirm": {"1"}}
	if body := e.post("/bulk", dashtest.WriteToken, del).want(t, http.StatusForbidden).body; !strings.Contains(body, "you need an admin token") {
		t.Errorf("write token deleting: %s", body)
	}
	e.post(jobPath(waiting)+"/cancel", dashtest.WriteToken, url.Values{}).want(t, http.StatusSeeOther)
	if st := e.job(waiting).State; st != hopper.StateCancelled {
		t.Errorf("write token's cancel: %s", st)
	}

	// Admin: delete.
	if !strings.Contains(e.get(jobPath(dead), dashtest.AdminToken).body, `id="delete"`) {
		t.Errorf("admin token: no delete button")
	}
	e.post("/bulk", dashtest.AdminToken, del).want(t, http.StatusSeeOther)
	if _, err := e.c.Get(context.Background(), dead); err == nil {
		t.Errorf("admin delete: the job is still there")
	}

	// ReadOnly caps every token.
	e.h.auth.ReadOnly = true
	e.post(jobPath(waiting)+"/cancel", dashtest.AdminToken, url.Values{}).want(t, http.StatusForbidden)
}

// TestCrossOrigin: a post from another site is refused (CSRF), whatever
// the token; the same post from the dashboard's own pages works.
func TestCrossOrigin(t *testing.T) {
	t.Parallel()
	e := newEnv(t, Options{})
	id := e.enqueue("ok", &hopper.EnqueueOptions{Delay: time.Hour})
	path := "/jobs/" + strconv.FormatInt(int64(id), 10) + "/cancel"
	for _, hdr := range []http.Header{
		{"Sec-Fetch-Site": {"cross-site"}},
		{"Sec-Fetch-Site": {"same-site"}},
		{"Origin": {"https://evil.example"}},
	} {
		r := e.do(http.MethodPost, path, "", url.Values{}, hdr).want(t, http.StatusForbidden)
		if !strings.Contains(r.body, "another site") || r.Header.Get("Content-Security-Policy") != csp {
			t.Errorf("cross-origin post %v: %s", hdr, clip(r.body))
		}
	}
	for _, p := range []string{"/login", "/logout", "/bulk"} {
		e.do(http.MethodPost, p, "", url.Values{}, http.Header{"Sec-Fetch-Site": {"cross-site"}}).want(t, http.StatusForbidden)
	}
	if st := e.job(id).State; st != hopper.StateScheduled {
		t.Fatalf("after cross-origin posts the job is %s", st)
	}
	// A cross-site GET (a link from elsewhere) is fine: it changes nothing.
	e.do(http.MethodGet, "/", "", nil, http.Header{"Sec-Fetch-Site": {"cross-site"}}).want(t, 200)
	e.do(http.MethodPost, path, "", url.Values{}, http.Header{"Origin": {"http://example.com"}}).want(t, http.StatusSeeOther)
	if st := e.job(id).State; st != hopper.StateCancelled {
		t.Errorf("same-origin cancel: %s", st)
	}
	// A trusted origin may post.
	e2 := newEnv(t, Options{TrustedOrigins: []string{"https://ops.example"}})
	id2 := e2.enqueue("ok", &hopper.EnqueueOptions{Delay: time.Hour})
	e2.do(http.MethodPost, "/jobs/"+strconv.FormatInt(int64(id2), 10)+"/cancel", "", url.Values{},
		http.Header{"Origin": {"https://ops.example"}, "Sec-Fetch-Site": {"cross-site"}}).want(t, http.StatusSeeOther)
}

// TestSignIn: the form sets the httpauth cookie (HttpOnly,
// SameSite=Strict) to a session that holds no secret, refuses bad tokens,
// never redirects off the dashboard; sign-out forgets the cookie.
func TestSignIn(t *testing.T) {
	t.Parallel()
	e := newEnv(t, Options{Auth: dashtest.Tokens(t), Prefix: "/ops"})
	body := e.get("/ops/login?next=%2Fops%2Fdlq", "").want(t, 200).body
	if !strings.Contains(body, `name="token"`) || !strings.Contains(body, `value="/ops/dlq"`) {
		t.Fatalf("sign-in page: %s", clip(body))
	}
	r := e.post("/ops/login", "", url.Values{"token": {"wrong-token-000000000"}, "next": {"/ops/dlq"}}).want(t, http.StatusUnauthorized)
	if len(r.Cookies()) != 0 || !strings.Contains(r.body, "not valid") {
		t.Errorf("bad token: cookies %v", r.Cookies())
	}
	r = e.post("/ops/login", "", url.Values{"token": {dashtest.ReadToken}, "next": {"/ops/dlq"}}).want(t, http.StatusSeeOther)
	if loc := r.Header.Get("Location"); loc != "/ops/dlq" {
		t.Errorf("signed in: to %q", loc)
	}
	var cookie *http.Cookie
	for _, c := range r.Cookies() {
		if c.Name == httpauth.CookieName {
			cookie = c
		}
	}
	if cookie == nil || strings.Contains(cookie.Value, dashtest.ReadToken) || !cookie.HttpOnly || cookie.SameSite != http.SameSiteStrictMode || cookie.Path != "/ops/" || cookie.Secure ||
		cookie.MaxAge != int(httpauth.DefaultSessionLifetime.Seconds()) && cookie.MaxAge != int(httpauth.DefaultSessionLifetime.Seconds())-1 {
		t.Fatalf("cookie: %+v", cookie)
	}
	// The cookie signs the browser in.
	page := e.do(http.MethodGet, "/ops/dlq", "", nil, http.Header{"Cookie": {cookie.String()}}).want(t, 200)
	if !strings.Contains(page.body, "Sign out") || !strings.Contains(page.body, `class="scope"`) {
		t.Errorf("signed-in page: no sign-out")
	}
	for _, next := range []string{"//evil.example/x", "https://evil.example/", "/elsewhere", "/ops\\@evil", ""} {
		r := e.post("/ops/login", "", url.Values{"token": {dashtest.ReadToken}, "next": {next}})
		if loc := r.Header.Get("Location"); loc != "/ops/" {
			t.Errorf("next=%q: to %q, want /ops/", next, loc)
		}
	}
	// Secure over TLS, or when told.
	e2 := newEnv(t, Options{Auth: dashtest.Tokens(t), SecureCookie: true})
	r = e2.post("/login", "", url.Values{"token": {dashtest.AdminToken}})
	if c := r.Cookies(); len(c) != 1 || !c[0].Secure {
		t.Errorf("SecureCookie: %v", c)
	}
	r = e.post("/ops/logout", "", url.Values{}).want(t, http.StatusSeeOther)
	if c := r.Cookies(); len(c) != 1 || c[0].MaxAge >= 0 || r.Header.Get("Location") != "/ops/login" {
		t.Errorf("sign-out: %v to %q", c, r.Header.Get("Location"))
	}
}

// TestJobActions: cancel, retry, reschedule and delete one job, each
// ending with a message on the page it returns to.
func TestJobActions(t *testing.T) {
	t.Parallel()
	e := newEnv(t, Options{})
	waiting := e.enqueue("ok", &hopper.EnqueueOptions{Delay: time.Hour})
	flaky := e.enqueue("flaky", nil)
	e.run()
	path := func(id hopper.ID, action string) string {
		return "/jobs/" + strconv.FormatInt(int64(id), 10) + action
	}

	// Reschedule to a time, with a priority.
	at := time.Now().Add(3 * time.Hour).UTC().Truncate(time.Minute)
	r := e.post(path(waiting, "/reschedule"), "", url.Values{"run_at": {at.Format(datetimeLocal)}, "priority": {"-5"}, "back": {path(waiting, "")}}).want(t, http.StatusSeeOther)
	if j := e.job(waiting); !j.RunAt.Equal(at) || j.Priority != -5 {
		t.Errorf("rescheduled: run at %v, priority %d; want %v, -5", j.RunAt, j.Priority, at)
	}
	msg := e.do(http.MethodGet, r.Header.Get("Location"), "", nil, http.Header{"Cookie": {cookies(r)}}).want(t, 200).body
	if !strings.Contains(msg, "rescheduled") || !strings.Contains(msg, `class="flash"`) {
		t.Errorf("no message after rescheduling")
	}
	// The run time sent back as the form showed it, with a new priority:
	// the run time stays exact (the form shows minutes only).
	exact := time.Now().Add(2*time.Hour + 1234567*time.Microsecond).UTC()
	if _, err := e.c.Reschedule(t.Context(), waiting, exact, nil); err != nil {
		t.Fatal(err)
	}
	shown := exact.Format(datetimeLocal) // the env shows UTC
	if body := e.get(path(waiting, ""), "").want(t, 200).body; !strings.Contains(body, `name="run_at_was" value="`+shown+`"`) {
		t.Fatalf("the form does not carry the run time it shows (%s)", shown)
	}
	e.post(path(waiting, "/reschedule"), "", url.Values{"run_at": {shown}, "run_at_was": {shown}, "priority": {"-6"}}).want(t, http.StatusSeeOther)
	if j := e.job(waiting); !j.RunAt.Equal(exact) || j.Priority != -6 {
		t.Errorf("priority changed with the run time as shown: run at %v, priority %d; want %v, -6", j.RunAt, j.Priority, exact)
	}
	e.post(path(waiting, "/reschedule"), "", url.Values{"run_at": {at.Format(datetimeLocal)}, "run_at_was": {shown}}).want(t, http.StatusSeeOther)
	if j := e.job(waiting); !j.RunAt.Equal(at) {
		t.Errorf("a changed run time: run at %v, want %v", j.RunAt, at)
	}
	// Bad input changes nothing and says why.
	r = e.post(path(waiting, "/reschedule"), "", url.Values{"run_at": {"tomorrow"}}).want(t, http.StatusSeeOther)
	if !strings.Contains(cookies(r), "err") || !e.job(waiting).RunAt.Equal(at) {
		t.Errorf("bad run_at: %q", cookies(r))
	}
	e.post(path(waiting, "/reschedule"), "", url.Values{"now": {"1"}}).want(t, http.StatusSeeOther)
	if st := e.job(waiting).State; st != hopper.StateAvailable {
		t.Errorf("run now: %s", st)
	}

	// Cancel, twice.
	e.post(path(waiting, "/cancel"), "", url.Values{}).want(t, http.StatusSeeOther)
	if st := e.job(waiting).State; st != hopper.StateCancelled {
		t.Errorf("cancelled: %s", st)
	}
	if r := e.post(path(waiting, "/cancel"), "", url.Values{}); !strings.Contains(cookies(r), "err") {
		t.Errorf("cancelling a cancelled job: no error message")
	}
	if r := e.post(path(waiting, "/reschedule"), "", url.Values{"now": {"1"}}); !strings.Contains(cookies(r), "no+longer") {
		t.Errorf("rescheduling a cancelled job: %q", cookies(r))
	}

	// Retry the dead job; it completes.
	if st := e.job(flaky).State; st != hopper.StateDead {
		t.Fatalf("flaky: %s", st)
	}
	e.post(path(flaky, "/retry"), "", url.Values{"back": {"/dlq"}}).want(t, http.StatusSeeOther)
	e.run()
	if j := e.job(flaky); j.State != hopper.StateCompleted || len(j.Attempts) != 2 {
		t.Errorf("retried: %s after %d attempts", j.State, len(j.Attempts))
	}
	page := e.get(path(flaky, ""), "").want(t, 200).body
	if !strings.Contains(page, "upstream timed out") || !strings.Contains(page, "ok the second time") || strings.Count(page, `<article class="attempt`) != 2 {
		t.Errorf("job page: no attempt history")
	}

	// Delete goes through a confirmation.
	form := url.Values{"action": {"delete"}, "ids": {strconv.FormatInt(int64(flaky), 10)}, "back": {"/jobs"}}
	confirm := e.post("/bulk", "", form).want(t, 200).body
	if !strings.Contains(confirm, "Delete 1 job?") || !strings.Contains(confirm, `name="confirm" value="1"`) {
		t.Fatalf("confirmation: %s", clip(confirm))
	}
	if _, err := e.c.Get(context.Background(), flaky); err != nil {
		t.Fatalf("deleted before confirming")
	}
	form.Set("confirm", "1")
	e.post("/bulk", "", form).want(t, http.StatusSeeOther)
	if _, err := e.c.Get(context.Background(), flaky); err == nil {
		t.Errorf("not deleted")
	}
	// Back never leaves the dashboard.
	if r := e.post(path(flaky, "/retry"), "", url.Values{"back": {"https://evil.example/"}}); r.Header.Get("Location") != path(flaky, "") {
		t.Errorf("back to another site: %q", r.Header.Get("Location"))
	}
}

func cookies(r response) string {
	var parts []string
	for _, c := range r.Cookies() {
		parts = append(parts, c.Name+"="+c.Value)
	}
	return strings.Join(parts, "; ")
}

// TestExecOutput: an exec job's attempts show exit code and output tails.
func TestExecOutput(t *testing.T) {
	t.Parallel()
	e := newEnv(t, Options{})
	id := e.enqueue("exec", nil)
	e.run()
	page := e.get("/jobs/"+strconv.FormatInt(int64(id), 10), "").want(t, 200).body
	for _, want := range []string{"exit code", ">2<", "linking…", "ld: cannot find -lfoo", "1.50s", "exit status 2"} {
		if !strings.Contains(page, want) {
			t.Errorf("exec job page: no %q", want)
		}
	}
}

// TestBulk: a selection, and every job matching a filter up to the
// TestJobJSONReadable: a job's args and result show <, > and & as
// themselves (escaped for HTML once, by the template), not as the
// \u003e escapes Go's JSON encoder stored: "echo x >&2" reads as written.
func TestJobJSONReadable(t *testing.T) {
	t.Parallel()
	e := newEnv(t, Options{})
	res, err := e.c.Enqueue(context.Background(), "ok", map[string]any{"command": "sh", "args": []string{"-c", "echo <b> >&2"}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	page := e.get("/jobs/"+strconv.FormatInt(int64(res.ID), 10), "").want(t, 200).body
	if want := "echo &lt;b&gt; &gt;&amp;2"; !strings.Contains(page, want) {
		t.Errorf("job page: no %q in\n%s", want, clip(page))
	}
	if strings.Contains(page, `\u003e`) || strings.Contains(page, `\u0026`) {
		t.Errorf("job page shows JSON's HTML escapes:\n%s", clip(page))
	}
}

// TestCancelRequestedShown: the "cancel requested" badge shows beside a
// job that completed although its cancellation was requested, and not
// beside a cancelled one, where it would only repeat the state.
func TestCancelRequestedShown(t *testing.T) {
	t.Parallel()
	ws := dashtest.Kinds()
	var c *hopper.Client
	// self cancels itself while it runs, then fails (ending cancelled) or,
	// with args true, completes.
	hopper.Register(ws, "self", func(ctx context.Context, complete bool) (any, error) {
		if _, err := c.Cancel(ctx, hopper.JobFromContext(ctx).ID); err != nil {
			return nil, hopper.Permanent(err)
		}
		if complete {
			return "done anyway", nil
		}
		return nil, errors.New("stopped")
	}, nil)
	c, err := hopper.NewClient(hopper.Config{Workers: ws, Logger: dashtest.Quiet()})
	if err != nil {
		t.Fatal(err)
	}
	e := newEnvOn(t, c, Options{})
	ctx := context.Background()
	ids := map[bool]hopper.ID{}
	for _, complete := range []bool{false, true} {
		res, err := c.Enqueue(ctx, "self", complete, nil)
		if err != nil {
			t.Fatal(err)
		}
		ids[complete] = res.ID
	}
	e.run()
	for complete, want := range map[bool]hopper.State{false: hopper.StateCancelled, true: hopper.StateCompleted} {
		j := e.job(ids[complete])
		if j.State != want || !j.CancelRequested {
			t.Fatalf("job %d: %s, cancel requested %v; want %s, true", j.ID, j.State, j.CancelRequested, want)
		}
		page := e.get("/jobs/"+strconv.FormatInt(int64(j.ID), 10), "").want(t, 200).body
		if got := strings.Contains(page, "cancel requested"); got != complete {
			t.Errorf("%s job's page shows \"cancel requested\": %v, want %v", j.State, got, complete)
		}
	}
	list := e.get("/jobs", "").want(t, 200).body
	if n := strings.Count(list, `title="cancel requested"`); n != 1 {
		t.Errorf("jobs list: %d cancel-requested marks, want 1 (the completed job's)", n)
	}
}

// TestBulkConfirmCountsNow: the confirmation page counts the matching jobs
// when it is shown, not from the stats the pages cache.
func TestBulkConfirmCountsNow(t *testing.T) {
	t.Parallel()
	e := newEnv(t, Options{StatsMaxAge: time.Hour})
	e.enqueue("ok", &hopper.EnqueueOptions{Delay: time.Hour, Queue: "bulk"})
	form := url.Values{"action": {"cancel"}, "all": {"1"}, "queue": {"bulk"}, "back": {"/jobs?queue=bulk"}}
	if body := e.post("/bulk", "", form).want(t, 200).body; !strings.Contains(body, "1 job matches now") {
		t.Fatalf("confirmation: %s", clip(body))
	}
	e.get("/", "").want(t, 200) // the stats cached for an hour
	e.enqueue("ok", &hopper.EnqueueOptions{Delay: time.Hour, Queue: "bulk"})
	e.enqueue("ok", &hopper.EnqueueOptions{Delay: time.Hour, Queue: "bulk"})
	if body := e.post("/bulk", "", form).want(t, 200).body; !strings.Contains(body, "3 jobs match now") {
		t.Errorf("confirmation after two more: %s", clip(body))
	}
}

// newest when confirmed (jobs enqueued after that are left alone).
func TestBulk(t *testing.T) {
	t.Parallel()
	e := newEnv(t, Options{})
	var ids []hopper.ID
	for range 7 {
		ids = append(ids, e.enqueue("ok", &hopper.EnqueueOptions{Delay: time.Hour, Queue: "bulk"}))
	}
	other := e.enqueue("ok", &hopper.EnqueueOptions{Delay: time.Hour})

	// A selection of two.
	sel := url.Values{"action": {"cancel"}, "ids": {strconv.FormatInt(int64(ids[0]), 10), strconv.FormatInt(int64(ids[1]), 10)}, "confirm": {"1"}}
	r := e.post("/bulk", "", sel).want(t, http.StatusSeeOther)
	if !strings.Contains(cookies(r), "Cancelled+2+of+2") {
		t.Errorf("selection: %q", cookies(r))
	}

	// Everything matching queue=bulk, state=scheduled: confirm first.
	form := url.Values{"action": {"cancel"}, "all": {"1"}, "queue": {"bulk"}, "state": {"scheduled"}, "back": {"/jobs?queue=bulk"}}
	confirm := e.post("/bulk", "", form).want(t, 200).body
	if !strings.Contains(confirm, "Cancel all scheduled jobs in queue &#34;bulk&#34;?") || !strings.Contains(confirm, "5 jobs match now") {
		t.Fatalf("confirmation: %s", clip(confirm))
	}
	upto := regexpValue(confirm, "upto")
	late := e.enqueue("ok", &hopper.EnqueueOptions{Delay: time.Hour, Queue: "bulk"})
	form.Set("confirm", "1")
	form.Set("upto", upto)
	r = e.post("/bulk", "", form).want(t, http.StatusSeeOther)
	if !strings.Contains(cookies(r), "Cancelled+5+of+5") || r.Header.Get("Location") != "/jobs?queue=bulk" {
		t.Errorf("all matching: %q to %q", cookies(r), r.Header.Get("Location"))
	}
	for _, id := range ids {
		if st := e.job(id).State; st != hopper.StateCancelled {
			t.Errorf("job %d: %s", id, st)
		}
	}
	if e.job(late).State != hopper.StateScheduled || e.job(other).State != hopper.StateScheduled {
		t.Errorf("jobs outside the selection were cancelled")
	}

	// Bad posts.
	for _, f := range []url.Values{
		{"action": {"explode"}, "ids": {"1"}},
		{"action": {"cancel"}, "ids": {"x"}},
		{"action": {"cancel"}, "all": {"1"}, "confirm": {"1"}},
		{"action": {"cancel"}, "all": {"1"}, "state": {"nope"}},
	} {
		e.post("/bulk", "", f).want(t, http.StatusBadRequest)
	}
	if r := e.post("/bulk", "", url.Values{"action": {"cancel"}}); r.StatusCode != http.StatusSeeOther || !strings.Contains(cookies(r), "Select+jobs") {
		t.Errorf("empty selection: %d %q", r.StatusCode, cookies(r))
	}
	// Retry every dead job of the DLQ.
	for range 3 {
		e.enqueue("flaky", nil)
	}
	e.run()
	f := url.Values{"action": {"retry"}, "all": {"1"}, "state": {"dead"}}
	f.Set("upto", regexpValue(e.post("/bulk", "", f).want(t, 200).body, "upto"))
	f.Set("confirm", "1")
	if r := e.post("/bulk", "", f); !strings.Contains(cookies(r), "Retried+3+of+3") {
		t.Errorf("retry all dead: %q", cookies(r))
	}
}

func regexpValue(html, name string) string {
	i := strings.Index(html, `name="`+name+`" value="`)
	if i < 0 {
		return ""
	}
	rest := html[i+len(`name="`+name+`" value="`):]
	return rest[:strings.IndexByte(rest, '"')]
}

// TestSchedules: the next five fire times, pause and resume.
func TestSchedules(t *testing.T) {
	t.Parallel()
	e := newEnv(t, Options{})
	ctx := context.Background()
	if _, err := e.c.AddSchedule(ctx, "weekday report", hopper.ScheduleOptions{Cron: "30 9 * * 1-5", TimeZone: "America/New_York", Kind: "ok"}); err != nil {
		t.Fatal(err)
	}
	page := e.get("/schedules", "").want(t, 200).body
	if n := strings.Count(page, "<li><time"); n != 5 {
		t.Errorf("%d fire times, want 5", n)
	}
	if !strings.Contains(page, "09:30:00 E") { // EST or EDT
		t.Errorf("fire times not in the schedule's zone")
	}
	r := e.post("/schedules/weekday%20report/pause", "", url.Values{}).want(t, http.StatusSeeOther)
	if r.Header.Get("Location") != "/schedules" {
		t.Errorf("pause: to %q", r.Header.Get("Location"))
	}
	if sc, _ := e.c.GetSchedule(ctx, "weekday report"); !sc.Paused {
		t.Errorf("not paused")
	}
	if page := e.get("/schedules", "").body; !strings.Contains(page, "if resumed now") || !strings.Contains(page, `data-action="resume"`) {
		t.Errorf("paused schedule's page")
	}
	e.post("/schedules/weekday%20report/resume", "", url.Values{}).want(t, http.StatusSeeOther)
	if sc, _ := e.c.GetSchedule(ctx, "weekday report"); sc.Paused {
		t.Errorf("not resumed")
	}
	if r := e.post("/schedules/nope/pause", "", url.Values{}); !strings.Contains(cookies(r), "Not+found") {
		t.Errorf("pausing a missing schedule: %q", cookies(r))
	}
}

// TestNextFires: the times come from the schedule's rule and zone.
func TestNextFires(t *testing.T) {
	t.Parallel()
	berlin, _ := time.LoadLocation("Europe/Berlin")
	now := time.Date(2026, 3, 27, 12, 0, 0, 0, time.UTC) // DST starts on the 29th
	created := time.Date(2026, 3, 27, 11, 59, 30, 0, time.UTC)
	cron := &hopper.Schedule{Name: "c", Spec: "30 2 * * *", TimeZone: "Europe/Berlin", CreatedAt: created,
		NextRunAt: time.Date(2026, 3, 28, 2, 30, 0, 0, berlin)}
	got, note, zone := nextFires(cron, now, 5)
	want := []string{"2026-03-28 02:30 CET", "2026-03-29 03:00 CEST", "2026-03-30 02:30 CEST", "2026-03-31 02:30 CEST", "2026-04-01 02:30 CEST"}
	if zone != "Europe/Berlin" || note != "" || len(got) != 5 {
		t.Fatalf("cron: %v %q %q", got, note, zone)
	}
	for i, g := range got {
		if s := g.Format("2006-01-02 15:04 MST"); s != want[i] {
			t.Errorf("cron fire %d: %s, want %s (the gap fires at its end)", i, s, want[i])
		}
	}
	every := &hopper.Schedule{Name: "e", Spec: "@every 10m", CreatedAt: created, NextRunAt: created.Add(10 * time.Minute)}
	got, _, _ = nextFires(every, now, 3)
	if len(got) != 3 || !got[0].Equal(created.Add(10*time.Minute)) || !got[2].Equal(created.Add(30*time.Minute)) {
		t.Errorf("every: %v", got)
	}
	paused := *cron
	paused.Paused = true
	got, note, _ = nextFires(&paused, now, 1)
	if note != "if resumed now" || !got[0].Equal(time.Date(2026, 3, 28, 2, 30, 0, 0, berlin)) {
		t.Errorf("paused: %v %q", got, note)
	}
	delay := &hopper.Schedule{Name: "d", Spec: "@every 5m", FixedDelay: true, CreatedAt: created, NextRunAt: now.Add(time.Minute)}
	if got, note, _ := nextFires(delay, now, 5); len(got) != 1 || !strings.Contains(note, "after each run ends") {
		t.Errorf("fixed delay: %v %q", got, note)
	}
	delay.NextRunAt = time.Time{}
	if got, note, _ := nextFires(delay, now, 5); len(got) != 0 || !strings.Contains(note, "after the running job ends") {
		t.Errorf("fixed delay, running: %v %q", got, note)
	}
	bad := &hopper.Schedule{Name: "b", Spec: "61 * * * *"}
	if got, note, _ := nextFires(bad, now, 5); got != nil || !strings.Contains(note, "minute") {
		t.Errorf("bad spec: %v %q", got, note)
	}
}

// TestLiveStream: /events sends the version at once and again when a job
// changes, tells the browser to retry after a heartbeat, and beats every
// heartbeat (the page's watchdog counts on it).
func TestLiveStream(t *testing.T) {
	t.Parallel()
	e := newEnv(t, Options{})
	srv := httptest.NewServer(e.h)
	defer srv.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, srv.URL+"/events", nil)
	req.Header.Set("Accept", "text/event-stream")
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	if res.Header.Get("Content-Type") != "text/event-stream" {
		t.Fatalf("Content-Type %q", res.Header.Get("Content-Type"))
	}
	sc := bufio.NewScanner(res.Body)
	// next returns the next event of type typ (skipping others) and the
	// stream's fields before it.
	var fields []string
	next := func(typ string) string {
		t.Helper()
		ev := ""
		for sc.Scan() {
			line := sc.Text()
			switch {
			case line == "":
				ev = ""
			case strings.HasPrefix(line, "event: "):
				ev = strings.TrimPrefix(line, "event: ")
			case strings.HasPrefix(line, "data: ") && ev == typ:
				return strings.TrimPrefix(line, "data: ")
			default:
				fields = append(fields, line)
			}
		}
		t.Fatalf("stream ended: %v", sc.Err())
		return ""
	}
	version := func() uint64 {
		t.Helper()
		n, err := strconv.ParseUint(next("version"), 10, 64)
		if err != nil {
			t.Fatal(err)
		}
		return n
	}
	first := version()
	ms := strconv.FormatInt(heartbeat.Milliseconds(), 10)
	if len(fields) == 0 || fields[0] != "retry: "+ms {
		t.Errorf("the stream starts with %q, want retry: %s", fields, ms)
	}
	e.enqueue("ok", nil)
	if v := version(); v <= first {
		t.Errorf("after an enqueue: version %d, was %d", v, first)
	}
	for range 2 {
		if got := next("beat"); got != ms {
			t.Errorf("beat: data %q, want the heartbeat %s", got, ms)
		}
	}
	// Close ends the stream.
	e.h.Close()
	for sc.Scan() {
	}
}

// TestPrefix: mounted under a path, every link and asset stays under it.
func TestPrefix(t *testing.T) {
	t.Parallel()
	e := newEnv(t, Options{Prefix: "/dash/"})
	id := e.enqueue("ok", nil)
	if r := e.get("/dash", "").want(t, http.StatusMovedPermanently); r.Header.Get("Location") != "/dash/" {
		t.Errorf("/dash: to %q", r.Header.Get("Location"))
	}
	page := e.get("/dash/", "").want(t, 200).body
	for _, m := range []string{`href="/`, `src="/`, `action="/`} {
		for rest := page; ; {
			i := strings.Index(rest, m)
			if i < 0 {
				break
			}
			rest = rest[i+len(m)-1:]
			if !strings.HasPrefix(rest, "/dash/") {
				t.Errorf("link outside the prefix: %.40s", rest)
			}
			rest = rest[1:]
		}
	}
	e.get("/dash/jobs/"+strconv.FormatInt(int64(id), 10), "").want(t, 200)
	e.get("/dash/static/app.css", "").want(t, 200)
	e.get("/jobs", "").want(t, 404)
}

// TestOptions: bad options panic naming the field; zero ones get the
// defaults.
func TestOptions(t *testing.T) {
	t.Parallel()
	o := Options{}.withDefaults()
	if o.PageSize != DefaultPageSize || o.StatsMaxAge != DefaultStatsMaxAge || o.Title != DefaultTitle || o.Auth == nil || o.Location == nil {
		t.Errorf("defaults: %+v", o)
	}
	for _, bad := range []Options{{Prefix: "dash"}, {PageSize: MaxPageSize + 1}, {StatsMaxAge: -1}, {TrustedOrigins: []string{"not a url"}}} {
		func() {
			defer func() {
				if r := recover(); r == nil || !strings.Contains(fmt.Sprint(r), "Options.") {
					t.Errorf("%+v: panic %v, want one naming the field", bad, r)
				}
			}()
			c, _ := hopper.NewClient(hopper.Config{Logger: dashtest.Quiet()})
			defer c.StopNow()
			New(c, bad)
		}()
	}
}

// TestFormat: the small helpers of the templates.
func TestFormat(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	for _, tc := range []struct{ got, want string }{
		{ago(now.Add(-45*time.Second), now), "45s ago"},
		{ago(now.Add(-200*time.Second), now), "3m 20s ago"},
		{ago(now.Add(90*time.Minute), now), "in 1h 30m"},
		{ago(now.Add(-50*time.Hour), now), "2d 2h ago"},
		{ago(time.Time{}, now), "—"},
		{ago(now, now), "just now"},
		{dur(1500 * time.Microsecond), "1ms"},
		{dur(1250 * time.Millisecond), "1.25s"},
		{dur(0), "—"},
		{num(1234567), "1,234,567"},
		{num(-1000), "-1,000"},
		{num(999), "999"},
		{rate(0.354), "0.35"},
		{rate(12.54), "12.5"},
		{rate(1250.4), "1,250"},
		{trunc(5, "abcdefgh"), "abcde…"},
		{trunc(20, "line one\nline two"), "line one …"},
		{pretty([]byte(`{"a":1}`)), "{\n  \"a\": 1\n}"},
		{pretty([]byte(`not json`)), "not json"},
	} {
		if tc.got != tc.want {
			t.Errorf("got %q, want %q", tc.got, tc.want)
		}
	}
}

// TestChart: the chart takes the store's series (completed as done, dead
// as failed), one bar a step, and scales its bars to the peak.
func TestChart(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 1, 1, 12, 30, 10, 0, time.UTC)
	st := hopper.Stats{Since: now.Add(-time.Hour), Step: time.Minute, Series: map[hopper.State][]int{
		hopper.StateCompleted: make([]int, 61), hopper.StateDead: make([]int, 61), hopper.StateCancelled: make([]int, 61)}}
	st.Series[hopper.StateCompleted][60], st.Series[hopper.StateDead][60] = 3, 1
	st.Series[hopper.StateCompleted][59] = 10
	st.Series[hopper.StateCompleted][0] = 1
	st.Series[hopper.StateCancelled][30] = 50 // not drawn
	bs := bucketsOf(st)
	if len(bs) != 61 || bs[60].Done != 3 || bs[60].Failed != 1 || bs[59].Done != 10 || bs[0].Done != 1 || !bs[1].Minute.Equal(st.Since.Add(time.Minute)) {
		t.Fatalf("buckets: last %+v, %+v, first %+v", bs[60], bs[59], bs[0])
	}
	c := newChart(bs, st.Since, time.UTC)
	if c.Done != 14 || c.Failed != 1 || c.Peak != 10 || c.Empty {
		t.Errorf("chart: %+v", c)
	}
	if len(c.Bars) != 61 || c.Bars[59].DoneH != plotBottom-plotTop || len(c.Labels) != 5 || c.Labels[4].Label != "now" {
		t.Errorf("bars: %+v, labels %+v", c.Bars[59], c.Labels)
	}
	if c := newChart(bucketsOf(hopper.Stats{}), now, time.UTC); !c.Empty || !strings.Contains(c.Description, "0 completed") {
		t.Errorf("empty chart: %+v", c)
	}
	for _, tc := range [][2]int{{0, 2}, {3, 4}, {7, 10}, {11, 20}, {25, 40}, {41, 100}, {1001, 2000}} {
		if got := niceCeil(tc[0]); got != tc[1] {
			t.Errorf("niceCeil(%d) = %d, want %d", tc[0], got, tc[1])
		}
	}
}

// TestStoreCalls: a page view costs one List (lists) or one Get (a job),
// never a Count, and the counts are taken from the store at most once per
// StatsMaxAge however many pages are viewed.
func TestStoreCalls(t *testing.T) {
	t.Parallel()
	var mu sync.Mutex
	calls := map[string]int{}
	c, err := hopper.NewClient(hopper.Config{Workers: dashtest.Kinds(), Logger: dashtest.Quiet(), OnStoreCall: func(op string, _ time.Duration, _ error) {
		mu.Lock()
		calls[op]++
		mu.Unlock()
	}})
	if err != nil {
		t.Fatal(err)
	}
	e := newEnvOn(t, c, Options{StatsMaxAge: time.Hour, PageSize: 10})
	var last hopper.ID
	for range 30 {
		last = e.enqueue("ok", nil)
	}
	count := func() map[string]int {
		mu.Lock()
		defer mu.Unlock()
		out := maps.Clone(calls)
		clear(calls)
		return out
	}
	count()
	for range 5 {
		e.get("/", "").want(t, 200)
	}
	if got := count(); got["stats"] != 1 || got["count"] != 0 || got["list"] != 0 {
		t.Errorf("five overviews: store calls %v, want one stats", got)
	}
	for _, path := range []string{"/jobs", "/jobs?state=available&after=20", "/dlq", "/jobs?kind=ok&queue=default"} {
		e.get(path, "").want(t, 200)
		if got := count(); got["list"] != 1 || got["count"] != 0 || got["stats"] != 0 || len(got) != 1 {
			t.Errorf("GET %s: store calls %v, want one list", path, got)
		}
	}
	e.get("/jobs/"+strconv.FormatInt(int64(last), 10), "").want(t, 200)
	if got := count(); got["get"] != 1 || len(got) != 1 {
		t.Errorf("a job's page: store calls %v, want one get", got)
	}
	// The counts shown are the cached ones: a new job shows in the list at
	// once, and in the counts once they are counted again.
	e.enqueue("ok", &hopper.EnqueueOptions{Queue: "new"})
	if page := e.get("/", "").body; strings.Contains(page, `data-queue="new"`) {
		t.Errorf("the counts were taken again within StatsMaxAge")
	}
}

// TestStatsWindow: the dashboard asks the stats cache for the HTTP API's
// window, so that the two share one count of the store.
func TestStatsWindow(t *testing.T) {
	t.Parallel()
	if statsWindow != httpapi.StatsWindow {
		t.Errorf("statsWindow %s, httpapi.StatsWindow %s: they would count the store in turn", statsWindow, httpapi.StatsWindow)
	}
}
