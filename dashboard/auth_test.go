package dashboard

import (
	"log/slog"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/hopperq/hopper"
	"github.com/hopperq/hopper/httpauth"
	"github.com/hopperq/hopper/internal/dashtest"
	"github.com/hopperq/hopper/internal/logtest"
)

// signIn posts the sign-in form with token and returns the session cookie.
func (e *env) signIn(token string, hdr http.Header) *http.Cookie {
	e.t.Helper()
	if hdr == nil {
		hdr = http.Header{}
	}
	hdr.Set("Sec-Fetch-Site", "same-origin")
	r := e.do(http.MethodPost, "/login", "", url.Values{"token": {token}}, hdr).want(e.t, http.StatusSeeOther)
	for _, c := range r.Cookies() {
		if c.Name == httpauth.CookieName {
			return c
		}
	}
	e.t.Fatalf("sign-in set no session cookie: %v", r.Cookies())
	return nil
}

func withCookies(cs ...*http.Cookie) http.Header {
	var parts []string
	for _, c := range cs {
		parts = append(parts, c.Name+"="+c.Value)
	}
	return http.Header{"Cookie": {strings.Join(parts, "; ")}, "Sec-Fetch-Site": {"same-origin"}}
}

// TestSessionCookie: the cookie holds a session, not the token; it works
// until sign-out and not after (replayed); the cookie older versions set
// to the token itself does not sign in, and sign-in deletes it.
func TestSessionCookie(t *testing.T) {
	t.Parallel()
	e := newEnv(t, Options{Auth: dashtest.Tokens(t)})
	legacy := &http.Cookie{Name: "hopper_token", Value: dashtest.AdminToken}
	r := e.do(http.MethodGet, "/jobs", "", nil, withCookies(legacy)).want(t, http.StatusSeeOther)
	if !strings.HasPrefix(r.Header.Get("Location"), "/login") {
		t.Errorf("the old cookie holding the token: to %q, want the sign-in page", r.Header.Get("Location"))
	}
	r = e.do(http.MethodPost, "/login", "", url.Values{"token": {dashtest.AdminToken}}, withCookies(legacy)).want(t, http.StatusSeeOther)
	var session *http.Cookie
	deleted := false
	for _, c := range r.Cookies() {
		switch {
		case c.Name == httpauth.CookieName:
			session = c
		case c.Name == "hopper_token" && c.MaxAge < 0:
			deleted = true
		}
	}
	if session == nil || strings.Contains(session.Value, dashtest.AdminToken) || !deleted {
		t.Fatalf("sign-in: session %v, old cookie deleted %v", session, deleted)
	}
	page := e.do(http.MethodGet, "/jobs", "", nil, withCookies(session)).want(t, http.StatusOK)
	if !strings.Contains(page.body, `class="scope"`) || !strings.Contains(page.body, ">admin<") {
		t.Errorf("signed in: no admin scope shown")
	}
	e.do(http.MethodPost, "/logout", "", url.Values{}, withCookies(session)).want(t, http.StatusSeeOther)
	// The browser forgets the cookie; a copy of it no longer works.
	r = e.do(http.MethodGet, "/jobs", "", nil, withCookies(session)).want(t, http.StatusSeeOther)
	if loc := r.Header.Get("Location"); !strings.Contains(loc, "expired=1") {
		t.Errorf("after sign-out: to %q", loc)
	}
	id := e.enqueue("ok", &hopper.EnqueueOptions{Delay: time.Hour})
	e.do(http.MethodPost, "/jobs/"+strconv.FormatInt(int64(id), 10)+"/cancel", "", url.Values{}, withCookies(session)).want(t, http.StatusUnauthorized)
	if st := e.job(id).State; st != hopper.StateScheduled {
		t.Errorf("a signed-out cookie cancelled a job: %s", st)
	}
	if body := e.get("/login?expired=1", "").body; !strings.Contains(body, "session has ended") {
		t.Errorf("the sign-in page after an ended session says nothing")
	}
}

// TestSignInThrottled: after repeated bad tokens, sign-ins and tokens from
// the address get 429 with Retry-After, a good token too; a session signed
// in before keeps working.
func TestSignInThrottled(t *testing.T) {
	t.Parallel()
	auth := dashtest.Tokens(t)
	auth.MaxFailures = 2
	e := newEnv(t, Options{Auth: auth})
	session := e.signIn(dashtest.ReadToken, nil)
	for range 2 {
		e.post("/login", "", url.Values{"token": {"wrong-token-000000000"}}).want(t, http.StatusUnauthorized)
	}
	r := e.post("/login", "", url.Values{"token": {"wrong-token-000000000"}}).want(t, http.StatusTooManyRequests)
	if r.Header.Get("Retry-After") == "" || !strings.Contains(r.body, "Too many failed sign-ins") {
		t.Errorf("throttled sign-in: Retry-After %q, %s", r.Header.Get("Retry-After"), clip(r.body))
	}
	e.get("/jobs", "wrong-token-000000000").want(t, http.StatusTooManyRequests)
	// A right guess is not checked either; a session signed in before
	// keeps working.
	e.post("/login", "", url.Values{"token": {dashtest.ReadToken}}).want(t, http.StatusTooManyRequests)
	e.get("/jobs", dashtest.ReadToken).want(t, http.StatusTooManyRequests)
	e.do(http.MethodGet, "/jobs", "", nil, withCookies(session)).want(t, http.StatusOK)
}

// TestDashboardAudit: actions, sign-ins and sign-outs are logged with the
// token's name and the targets; pages and refused posts are not.
func TestDashboardAudit(t *testing.T) {
	t.Parallel()
	var logs logtest.Buffer
	auth := dashtest.Tokens(t)
	e := newEnv(t, Options{Auth: auth, Logger: slog.New(slog.NewTextHandler(&logs, nil))})
	waiting := e.enqueue("ok", &hopper.EnqueueOptions{Delay: time.Hour})
	other := e.enqueue("ok", &hopper.EnqueueOptions{Delay: time.Hour})
	ids := []string{strconv.FormatInt(int64(waiting), 10), strconv.FormatInt(int64(other), 10)}
	session := e.signIn(dashtest.ExecToken, nil)
	e.get("/jobs", dashtest.ReadToken).want(t, http.StatusOK)
	e.post("/jobs/"+ids[0]+"/cancel", dashtest.ReadToken, url.Values{}).want(t, http.StatusForbidden)
	e.do(http.MethodPost, "/jobs/"+ids[0]+"/cancel", "", url.Values{}, withCookies(session)).want(t, http.StatusSeeOther)
	e.post("/bulk", dashtest.WriteToken, url.Values{"action": {"cancel"}, "ids": ids, "confirm": {"1"}}).want(t, http.StatusSeeOther)
	e.post("/bulk", dashtest.AdminToken, url.Values{"action": {"delete"}, "all": {"1"}, "state": {"cancelled"}, "confirm": {"1"}, "upto": {ids[1]}}).want(t, http.StatusSeeOther)
	e.do(http.MethodPost, "/logout", "", url.Values{}, withCookies(session)).want(t, http.StatusSeeOther)

	want := [][]string{
		{`action="dashboard sign-in"`, "token=runner", "remote=192.0.2.1:1234", "status=303"},
		{`action="dashboard POST /jobs/{id}/cancel"`, "token=runner", "path=/jobs/" + ids[0] + "/cancel", `result="Job ` + ids[0] + ` cancelled."`},
		{`action="dashboard POST /bulk"`, "token=#2", "bulk=cancel", "ids=" + ids[0] + "," + ids[1], "refused=false"},
		{`action="dashboard POST /bulk"`, "token=#3", "bulk=delete", "filter=", "upto=" + ids[1], `result="Deleted 2 of 2 jobs."`},
		{`action="dashboard sign-out"`, "token=runner"},
	}
	lines := logs.Lines("msg=audit")
	if len(lines) != len(want) {
		t.Fatalf("%d audit lines, want %d:\n%s", len(lines), len(want), strings.Join(lines, "\n"))
	}
	for i, parts := range want {
		for _, p := range parts {
			if !strings.Contains(lines[i], p) {
				t.Errorf("audit line %d lacks %q: %s", i, p, lines[i])
			}
		}
		if strings.Contains(lines[i], "-token-0123456789") || strings.Contains(lines[i], session.Value) {
			t.Errorf("audit line %d holds a secret or a session: %s", i, lines[i])
		}
	}
}

// TestExecScopeInDashboard: an exec token acts as a write token in the
// dashboard (it enqueues nothing): cancel yes, delete no.
func TestExecScopeInDashboard(t *testing.T) {
	t.Parallel()
	e := newEnv(t, Options{Auth: dashtest.Tokens(t)})
	id := e.enqueue("ok", &hopper.EnqueueOptions{Delay: time.Hour})
	path := "/jobs/" + strconv.FormatInt(int64(id), 10)
	body := e.get(path, dashtest.ExecToken).want(t, http.StatusOK).body
	if !strings.Contains(body, `id="cancel"`) || strings.Contains(body, `id="delete"`) {
		t.Errorf("exec token: want cancel and no delete")
	}
	del := url.Values{"action": {"delete"}, "ids": {strconv.FormatInt(int64(id), 10)}, "confirm": {"1"}}
	if r := e.post("/bulk", dashtest.ExecToken, del).want(t, http.StatusForbidden); !strings.Contains(r.body, "change jobs but not delete them") {
		t.Errorf("exec token deleting: %s", clip(r.body))
	}
}
