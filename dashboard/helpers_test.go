package dashboard

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/hopperq/hopper"
	"github.com/hopperq/hopper/internal/dashtest"
)

// env is a client on the in-memory store with a few kinds, and its
// dashboard.
type env struct {
	t *testing.T
	c *hopper.Client
	h *handler
}

func newEnv(t *testing.T, o Options) *env {
	t.Helper()
	c, err := hopper.NewClient(hopper.Config{Workers: dashtest.Kinds(), Logger: dashtest.Quiet()})
	if err != nil {
		t.Fatal(err)
	}
	return newEnvOn(t, c, o)
}

// newEnvOn makes the dashboard of c; the test's end closes it and stops c.
func newEnvOn(t *testing.T, c *hopper.Client, o Options) *env {
	t.Helper()
	if o.Logger == nil {
		o.Logger = dashtest.Quiet()
	}
	if o.Location == nil {
		o.Location = time.UTC
	}
	h := New(c, o).(*handler)
	// A confirmed bulk action's request waits for it to end, whatever the
	// machine's load: the tests of its progress page set 0.
	h.bulkInline = time.Minute
	t.Cleanup(func() {
		h.Close()
		c.StopNow()
	})
	return &env{t: t, c: c, h: h}
}

// enqueue adds a job and returns its ID.
func (e *env) enqueue(kind string, opts *hopper.EnqueueOptions) hopper.ID {
	e.t.Helper()
	res, err := e.c.Enqueue(context.Background(), kind, nil, opts)
	if err != nil {
		e.t.Fatal(err)
	}
	return res.ID
}

// run runs every job due now, in this goroutine.
func (e *env) run() {
	e.t.Helper()
	if _, err := e.c.RunReady(context.Background(), time.Now()); err != nil {
		e.t.Fatal(err)
	}
}

// job returns a job as it is now.
func (e *env) job(id hopper.ID) *hopper.Job {
	e.t.Helper()
	j, err := e.c.Get(context.Background(), id)
	if err != nil {
		e.t.Fatal(err)
	}
	return j
}

// response is a recorded response with its body.
type response struct {
	*http.Response
	body string
}

// do sends a request to the handler. token, if set, goes in the
// Authorization header.
func (e *env) do(method, target, token string, form url.Values, hdr http.Header) response {
	e.t.Helper()
	var body io.Reader
	if form != nil {
		body = strings.NewReader(form.Encode())
	}
	r := httptest.NewRequest(method, target, body)
	if form != nil {
		r.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	}
	if token != "" {
		r.Header.Set("Authorization", "Bearer "+token)
	}
	for k, vs := range hdr {
		r.Header[k] = vs
	}
	w := httptest.NewRecorder()
	e.h.ServeHTTP(w, r)
	res := w.Result()
	res.Request = r // for want's message
	b, _ := io.ReadAll(res.Body)
	return response{Response: res, body: string(b)}
}

func (e *env) get(target, token string) response {
	return e.do(http.MethodGet, target, token, nil, nil)
}

// post sends a form as a same-origin browser would.
func (e *env) post(target, token string, form url.Values) response {
	return e.do(http.MethodPost, target, token, form, http.Header{"Sec-Fetch-Site": {"same-origin"}})
}

// want fails unless the response has status code.
func (r response) want(t *testing.T, code int) response {
	t.Helper()
	if r.StatusCode != code {
		t.Fatalf("%s %s: status %d, want %d; body:\n%s", r.Request.Method, r.Request.URL, r.StatusCode, code, clip(r.body))
	}
	return r
}

func clip(s string) string {
	if len(s) > 3000 {
		return s[:3000] + "…"
	}
	return s
}

// cell returns the count the overview shows for a queue ("*": all) and a
// state.
func cell(t *testing.T, html, queue, state string) int {
	t.Helper()
	re := regexp.MustCompile(`data-queue="` + regexp.QuoteMeta(queue) + `" data-state="` + state + `"><a [^>]*>([0-9,]+)</a>`)
	m := re.FindStringSubmatch(html)
	if m == nil {
		t.Fatalf("no count for queue %q, state %s in the overview", queue, state)
	}
	n, _ := strconv.Atoi(strings.ReplaceAll(m[1], ",", ""))
	return n
}

// rowIDs returns the job IDs a list page shows, in order.
func rowIDs(html string) []hopper.ID {
	var ids []hopper.ID
	for _, m := range regexp.MustCompile(`<tr id="job-(\d+)"`).FindAllStringSubmatch(html, -1) {
		n, _ := strconv.ParseInt(m[1], 10, 64)
		ids = append(ids, hopper.ID(n))
	}
	return ids
}

// link returns the href of the element with id, unescaped.
func link(html, id string) string {
	m := regexp.MustCompile(`href="([^"]*)"[^>]*id="` + id + `"`).FindStringSubmatch(html)
	if m == nil {
		return ""
	}
	return strings.ReplaceAll(m[1], "&amp;", "&")
}
