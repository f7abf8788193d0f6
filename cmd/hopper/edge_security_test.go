package main

import (
	"errors"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"
)

// Black-box tests of who may do what through a real hopper serve --http,
// from where, and what its log says of it (docs/security.md).

const (
	edgeWrite = "edge-write-secret-0123"
	edgeExec  = "edge-exec-secret-01234"
	edgeAdmin = "edge-admin-secret-0123"
)

// web is a hopper serve --http child, its base URL and its port.
type web struct {
	*apiServer
	base string // http://127.0.0.1:PORT
	port string
}

// noRedirects is a client that shows redirects rather than following
// them, and keeps no connection open (goleak).
var noRedirects = &http.Client{
	Transport:     &http.Transport{DisableKeepAlives: true},
	CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	Timeout:       time.Minute,
}

// newEdge returns a hopper on a fresh database in a temporary directory.
func newEdge(t *testing.T) *hop {
	if testing.Short() {
		t.Skip("builds the binary and runs it; skipped with -short")
	}
	dir := t.TempDir()
	c := newHop(t, dir)
	return c
}

// serveWeb starts hopper serve --http 127.0.0.1:0 with flags (serveHTTP)
// and waits until it serves.
func (c *hop) serveWeb(flags ...string) *web {
	c.t.Helper()
	s := c.serveHTTP(flags...)
	u, err := url.Parse(s.url)
	if err != nil || u.Port() == "" {
		c.t.Fatalf("serving at %q", s.url)
	}
	return &web{apiServer: s, base: s.url, port: u.Port()}
}

// do sends a request and returns its response with the body read.
func (w *web) do(t *testing.T, method, path, body string, hdr http.Header) (*http.Response, string) {
	t.Helper()
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	req, err := http.NewRequest(method, w.base+path, rd)
	if err != nil {
		t.Fatal(err)
	}
	for k, vs := range hdr {
		req.Header[k] = vs
	}
	if h := hdr.Get("Host"); h != "" {
		req.Host = h
	}
	res, err := noRedirects.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	return res, string(b)
}

// want sends a request and fails unless it gets status and a body with
// every part.
func (w *web) want(t *testing.T, method, path, body string, hdr http.Header, status int, parts ...string) (*http.Response, string) {
	t.Helper()
	res, got := w.do(t, method, path, body, hdr)
	if res.StatusCode != status {
		t.Fatalf("%s %s: %d, want %d: %s", method, path, res.StatusCode, status, got)
	}
	for _, p := range parts {
		if !strings.Contains(got, p) {
			t.Errorf("%s %s: the body lacks %q: %s", method, path, p, got)
		}
	}
	return res, got
}

func bearer(token string) http.Header { return http.Header{"Authorization": {"Bearer " + token}} }

// TestEdgeExecScope: over HTTP, a write token may not enqueue exec jobs
// (commands run as the server's user), alone or in a batch; an exec token
// may. The audit lines name the token and the job, never the secret.
func TestEdgeExecScope(t *testing.T) {
	t.Parallel()
	c := newEdge(t)
	marker := filepath.Join(t.TempDir(), "pwned")
	w := c.serveWeb("--token", "ci=write:"+edgeWrite, "--token", "runner=exec:"+edgeExec)
	job := `{"kind":"exec","args":{"command":"touch","args":["` + marker + `"]}}`
	w.want(t, "POST", "/api/v1/jobs", job, bearer(edgeWrite), 403, `"forbidden"`, "it needs an exec or admin token")
	w.want(t, "POST", "/api/v1/jobs/batch", `{"jobs":[{"kind":"http","args":{"url":"http://127.0.0.1:1/"},"delay":"1h"},`+job+`]}`,
		bearer(edgeWrite), 403, "exec")
	if s := c.stats(); s.Waiting+s.Running+s.Totals["completed"] != 0 {
		t.Fatalf("refused requests stored jobs: %+v", s)
	}
	_, body := w.want(t, "POST", "/api/v1/jobs", job, bearer(edgeExec), 201, `"id"`)
	id := regexp.MustCompile(`"id":(\d+)`).FindStringSubmatch(body)[1]
	w.log.waitLine(t, time.Minute, `msg="job completed"`, " job="+id+" ")
	if _, err := os.Stat(marker); err != nil {
		t.Errorf("the exec token's job did not run: %v", err)
	}
	line := w.log.waitLine(t, time.Minute, "msg=audit", "token=runner")
	for _, p := range []string{`action="POST /api/v1/jobs"`, "remote=127.0.0.1:", "status=201", "job=" + id, "kind=exec"} {
		if !strings.Contains(line, p) {
			t.Errorf("the audit line lacks %q: %s", p, line)
		}
	}
	w.log.waitLine(t, time.Minute, "msg=\"http: forbidden\"", "token=ci", "needs exec")
	for _, l := range w.log.all() {
		if strings.Contains(l, edgeWrite) || strings.Contains(l, edgeExec) {
			t.Errorf("a log line holds a secret: %s", l)
		}
	}
}

// TestEdgeDNSRebinding: a page re-pointed at 127.0.0.1 sends its own host
// name in Host, with a matching Origin: a tokenless loopback server
// answers 421 to its posts and its reads, and stores nothing.
func TestEdgeDNSRebinding(t *testing.T) {
	t.Parallel()
	c := newEdge(t)
	marker := filepath.Join(t.TempDir(), "pwned")
	w := c.serveWeb()
	evil := "evil.example:" + w.port
	hdr := http.Header{"Host": {evil}, "Origin": {"http://" + evil}, "Sec-Fetch-Site": {"same-origin"}}
	job := `{"kind":"exec","args":{"command":"touch","args":["` + marker + `"]}}`
	w.want(t, "POST", "/api/v1/jobs", job, hdr, 421, `"misdirected_request"`, "--allowed-hosts")
	w.want(t, "GET", "/api/v1/jobs", "", hdr, 421, `"misdirected_request"`)
	_, page := w.want(t, "GET", "/", "", hdr, 421, "--allowed-hosts")
	if strings.Contains(page, "<html") {
		t.Errorf("the dashboard answered a foreign Host: %s", page)
	}
	w.want(t, "GET", "/healthz", "", hdr, 200, `"ok"`) // exempt: it tells nothing
	if s := c.stats(); s.Waiting+s.Running+s.Totals["completed"]+s.Totals["dead"] != 0 {
		t.Fatalf("a rebinding page stored jobs: %+v", s)
	}
	w.log.waitLine(t, time.Minute, "DNS rebinding", "host="+evil)
	// The same requests by the server's own names and address work.
	for _, host := range []string{"localhost:" + w.port, "127.0.0.1:" + w.port} {
		w.want(t, "GET", "/api/v1/jobs", "", http.Header{"Host": {host}}, 200, `"jobs"`)
	}
	// Allowed hosts are answered.
	w2 := c.serveWeb("--allowed-hosts", "hopper.example.com")
	w2.want(t, "GET", "/api/v1/jobs", "", http.Header{"Host": {"hopper.example.com:" + w2.port}}, 200)
	w2.want(t, "GET", "/api/v1/jobs", "", http.Header{"Host": {"evil.example:" + w2.port}}, 421)
	if _, err := os.Stat(marker); err == nil {
		t.Errorf("the command ran")
	}
}

// TestEdgeSessions: the dashboard's sign-in cookie holds no secret; it
// works across a restart with the same token, and ends at sign-out and
// when the token's secret changes.
func TestEdgeSessions(t *testing.T) {
	t.Parallel()
	c := newEdge(t)
	w := c.serveWeb("--token", "ops=admin:"+edgeAdmin)
	form := http.Header{"Content-Type": {"application/x-www-form-urlencoded"}, "Sec-Fetch-Site": {"same-origin"}}
	signIn := func(w *web) *http.Cookie {
		t.Helper()
		res, _ := w.want(t, "POST", "/login", url.Values{"token": {edgeAdmin}}.Encode(), form, 303)
		for _, ck := range res.Cookies() {
			if ck.Name == "hopper_session" {
				return ck
			}
		}
		t.Fatalf("no session cookie: %v", res.Header["Set-Cookie"])
		return nil
	}
	cookie := signIn(w)
	if strings.Contains(cookie.Value, edgeAdmin) || strings.Contains(cookie.Value, "edge-admin") || !cookie.HttpOnly {
		t.Fatalf("the cookie: %s", cookie)
	}
	with := func(ck *http.Cookie) http.Header { return http.Header{"Cookie": {ck.Name + "=" + ck.Value}} }
	signedIn := func(w *web, ck *http.Cookie) bool {
		t.Helper()
		res, body := w.do(t, "GET", "/jobs", "", with(ck))
		if res.StatusCode == 303 && strings.Contains(res.Header.Get("Location"), "/login") {
			return false
		}
		if res.StatusCode != 200 || !strings.Contains(body, "Sign out") {
			t.Fatalf("GET /jobs with a cookie: %d %s", res.StatusCode, body)
		}
		return true
	}
	if !signedIn(w, cookie) {
		t.Fatal("the session does not sign in")
	}
	// The old cookie, which held the token itself, does nothing.
	if signedIn(w, &http.Cookie{Name: "hopper_token", Value: edgeAdmin}) {
		t.Error("the old hopper_token cookie signs in")
	}
	// A restart with the same token keeps the session.
	c.stop(w.apiServer.server)
	w = c.serveWeb("--token", "ops=admin:"+edgeAdmin)
	if !signedIn(w, cookie) {
		t.Fatal("the session did not survive a restart with the same token")
	}
	// Sign-out ends it, also for a copy of the cookie.
	hdr := with(cookie)
	hdr.Set("Sec-Fetch-Site", "same-origin")
	w.want(t, "POST", "/logout", "", hdr, 303)
	if signedIn(w, cookie) {
		t.Error("the session works after sign-out")
	}
	w.log.waitLine(t, time.Minute, "msg=audit", `action="dashboard sign-out"`, "token=ops")
	// Another secret for the token ends every session of the old one.
	cookie = signIn(w)
	c.stop(w.apiServer.server)
	w = c.serveWeb("--token", "ops=admin:edge-other-secret-01234")
	if signedIn(w, cookie) {
		t.Error("the session works after the token's secret changed")
	}
}

// TestEdgeThrottle: an address that keeps sending bad tokens gets 429
// with Retry-After, then for every token it sends, the good one too (so a
// guess is never checked); another address is not affected; the failures
// are counted in the metrics.
func TestEdgeThrottle(t *testing.T) {
	t.Parallel()
	c := newEdge(t)
	w := c.serveWeb("--token", "ops=admin:"+edgeAdmin)
	bad := bearer("edge-wrong-secret-0123")
	for range 10 {
		w.want(t, "GET", "/api/v1/jobs", "", bad, 401, `"unauthorized"`)
	}
	res, _ := w.want(t, "GET", "/api/v1/jobs", "", bad, 429, `"too_many_requests"`)
	if s, err := strconv.Atoi(res.Header.Get("Retry-After")); err != nil || s < 1 || s > 60 {
		t.Errorf("Retry-After %q", res.Header.Get("Retry-After"))
	}
	w.want(t, "GET", "/api/v1/jobs", "", bearer(edgeAdmin), 429, `"too_many_requests"`)
	// Another address (Linux routes all of 127.0.0.0/8 to lo) is served.
	other := &http.Client{Transport: &http.Transport{DisableKeepAlives: true,
		DialContext: (&net.Dialer{LocalAddr: &net.TCPAddr{IP: net.IPv4(127, 0, 0, 2)}}).DialContext}}
	req, _ := http.NewRequest("GET", w.base+"/metrics", nil)
	req.Header = bearer(edgeAdmin)
	res, err := other.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(res.Body)
	res.Body.Close()
	if res.StatusCode != 200 {
		t.Fatalf("GET /metrics from 127.0.0.2: %d: %s", res.StatusCode, body)
	}
	for _, want := range []string{`hopper_http_auth_failures_total{reason="bad_token"} 10`, `hopper_http_auth_failures_total{reason="throttled"} 2`} {
		if !strings.Contains(string(body), want) {
			t.Errorf("the metrics lack %s", want)
		}
	}
	w.log.waitLine(t, time.Minute, "too many failed authentications", "remote=127.0.0.1:")
}

// TestEdgeTokenConfig: a tokens file others may read gets a warning; an
// invalid $HOPPER_TOKENS stops serve --http, and is not read without
// --http.
func TestEdgeTokenConfig(t *testing.T) {
	t.Parallel()
	c := newEdge(t)
	file := filepath.Join(t.TempDir(), "tokens")
	os.WriteFile(file, []byte("ops=admin:"+edgeAdmin+"\n"), 0o644)
	os.Chmod(file, 0o644)
	w := c.serveWeb("--tokens-file", file)
	line, _ := w.log.find("readable by other users") // logged before the serving line
	if !strings.Contains(line, "level=WARN") || !strings.Contains(line, "file="+file) || strings.Contains(line, edgeAdmin) {
		t.Errorf("the warning: %s", line)
	}
	w.want(t, "GET", "/api/v1/jobs", "", bearer(edgeAdmin), 200)

	cmd := exec.Command(c.bin, "--db", c.db, "serve", "--http", "127.0.0.1:0")
	cmd.Env = append(os.Environ(), "HOPPER_TOKENS=admin:short")
	out, err := cmd.CombinedOutput()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != 2 || !strings.Contains(string(out), "bad $HOPPER_TOKENS #1: secret shorter") {
		t.Errorf("serve --http with a bad $HOPPER_TOKENS: %v: %s", err, out)
	}
	c.env = []string{"HOPPER_TOKENS=admin:short"}
	s := c.serve(1)
	s.log.waitLine(t, time.Minute, `msg="hopper serving"`)
	c.stop(s)
}
