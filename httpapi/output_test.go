package httpapi

import (
	"net/http"
	"strconv"
	"strings"
	"testing"

	"github.com/hopperq/hopper"
	"github.com/hopperq/hopper/httpauth"
)

// TestJobOutput: GET /jobs/{id}/output gives an attempt's streams as JSON,
// or one stream as written, as text/plain that a browser never sniffs into
// a page; what is missing is a 404 naming it; a read token is enough.
func TestJobOutput(t *testing.T) {
	t.Parallel()
	auth := &httpauth.Auth{}
	if err := auth.ParseTokens("ci=admin:" + adminToken + ",read:" + readToken); err != nil {
		t.Fatal(err)
	}
	e := newEnv(t, envOpts{auth: auth})
	e.token = adminToken
	ok, dead, _ := e.finished()
	var o outputView
	e.doAs(readToken, "GET", "/api/v1/jobs/"+idArg(dead)+"/output", "").ok(http.StatusOK, &o)
	if o.ID != dead || o.Attempt != 1 || o.Succeeded || o.Stdout.Text != "<script>alert(1)</script>\n" || o.Stdout.Truncated {
		t.Errorf("output: got %+v", o)
	}
	if !strings.Contains(o.Log.Text, `level=WARN msg="about to fail" why="<b>on purpose</b>"`) || o.Log.Kept != len(o.Log.Text) {
		t.Errorf("log: got %q", o.Log.Text)
	}
	r := e.doAs(readToken, "GET", "/api/v1/jobs/"+idArg(dead)+"/output?stream=stdout&attempt=1", "")
	if r.status != http.StatusOK || string(r.body) != "<script>alert(1)</script>\n" {
		t.Fatalf("?stream=stdout: %d %q", r.status, r.body)
	}
	for k, want := range map[string]string{
		"Content-Type": "text/plain; charset=utf-8", "X-Content-Type-Options": "nosniff",
		"Content-Security-Policy": "default-src 'none'; sandbox", "Hopper-Stream-Size": "26",
		"Hopper-Stream-Truncated": "false", "Hopper-Attempt": "1",
	} {
		if got := r.header.Get(k); got != want {
			t.Errorf("?stream=stdout: %s %q, want %q", k, got, want)
		}
	}
	e.do("GET", "/api/v1/jobs/"+idArg(dead)+"/output?attempt=2", "").fails(404, CodeNotFound, "attempt", "attempt 2 kept no output")
	e.do("GET", "/api/v1/jobs/"+idArg(ok)+"/output", "").fails(404, CodeNotFound, "attempt", "no attempt kept any output")
	e.do("GET", "/api/v1/jobs/999/output", "").fails(404, CodeNotFound, "id", "job 999 not found")
	e.do("GET", "/api/v1/jobs/"+idArg(dead)+"/output?stream=stdin", "").fails(400, CodeInvalid, "stream")
	e.do("GET", "/api/v1/jobs/"+idArg(dead)+"/output?attempt=0", "").fails(400, CodeInvalid, "attempt")
	e.doAs("", "GET", "/api/v1/jobs/"+idArg(dead)+"/output", "").fails(401, CodeUnauthorized, "")
}

func idArg(id hopper.ID) string { return strconv.FormatInt(int64(id), 10) }

// TestWorkerOutput: a remote worker's complete and fail may carry what the
// attempt wrote; it is kept with the attempt as a Go handler's is, cut to
// the client's caps.
func TestWorkerOutput(t *testing.T) {
	t.Parallel()
	e := newEnv(t, envOpts{cfg: func(c *hopper.Config) { c.OutputLimit = 8 }})
	id := e.register("")
	l := e.fetchOne(id)
	e.do("POST", "/api/v1/workers/"+id+"/complete", `{"token":"`+l.Token+`","output":{"stdout":"0123456789","log":"level=INFO msg=done\n"}}`).ok(http.StatusOK, nil)
	var o outputView
	e.do("GET", "/api/v1/jobs/"+idArg(l.Job.ID)+"/output", "").ok(http.StatusOK, &o)
	if o.Stdout.Text != "01234567" || o.Stdout.Size != 10 || !o.Stdout.Truncated || o.Log.Text != "level=INFO msg=done\n" || !o.Succeeded {
		t.Errorf("completed remote attempt's output: got %+v", o)
	}
	l = e.fetchOne(id)
	e.do("POST", "/api/v1/workers/"+id+"/fail", `{"token":"`+l.Token+`","error":"boom","permanent":true,"output":{"stderr":"traceback"}}`).ok(http.StatusOK, nil)
	e.do("GET", "/api/v1/jobs/"+idArg(l.Job.ID)+"/output", "").ok(http.StatusOK, &o)
	if o.Stderr.Text != "tracebac" || o.Stderr.Size != 9 || o.Succeeded {
		t.Errorf("failed remote attempt's output: got %+v", o)
	}
}
