package kinds

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hopperq/hopper"
	"github.com/hopperq/hopper/store/memstore"
)

// allowLoopback is the policy of the tests whose servers listen on
// loopback, which the default policy refuses (httppolicy_test.go tests
// that).
var allowLoopback = HTTPPolicy{Allow: []string{"127.0.0.0/8", "::1"}}

// loopback runs http jobs under allowLoopback.
var loopback = sync.OnceValue(func() *HTTPRunner {
	r, err := NewHTTPRunner(allowLoopback)
	if err != nil {
		panic(err)
	}
	return r
})

func server(t *testing.T, h http.HandlerFunc) string {
	t.Helper()
	s := httptest.NewServer(h)
	t.Cleanup(s.Close)
	return s.URL
}

func TestHTTPSuccess(t *testing.T) {
	t.Parallel()
	url := server(t, func(w http.ResponseWriter, r *http.Request) {
		w.Write([]byte(strings.Repeat("x", 10000)))
	})
	res, err := loopback().Run(context.Background(), HTTPArgs{URL: url})
	if err != nil {
		t.Fatal(err)
	}
	if res.Status != 200 || len(res.BodyExcerpt) != TailSize || res.Duration <= 0 {
		t.Fatalf("status %d excerpt %d duration %s", res.Status, len(res.BodyExcerpt), res.Duration)
	}
}

func TestHTTPSendsMethodHeadersBody(t *testing.T) {
	t.Parallel()
	type seen struct{ method, auth, ctype, body string }
	got := make(chan seen, 1)
	url := server(t, func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		got <- seen{r.Method, r.Header.Get("Authorization"), r.Header.Get("Content-Type"), string(b)}
		w.WriteHeader(http.StatusAccepted)
	})
	res, err := loopback().Run(context.Background(), HTTPArgs{
		Method: "post", URL: url + "/hook", Body: `{"a":1}`,
		Headers: map[string]string{"Authorization": "Bearer t", "Content-Type": "application/json"},
	})
	if err != nil || res.Status != http.StatusAccepted {
		t.Fatalf("%v %+v", err, res)
	}
	if s := <-got; s != (seen{"POST", "Bearer t", "application/json", `{"a":1}`}) {
		t.Fatalf("server saw %+v", s)
	}
}

func TestHTTPStatusClassification(t *testing.T) {
	t.Parallel()
	url := server(t, func(w http.ResponseWriter, r *http.Request) {
		code := map[string]int{"/500": 500, "/503": 503, "/404": 404, "/400": 400, "/429": 429, "/302": 302}[r.URL.Path]
		if code == 302 {
			http.Redirect(w, r, "/ok", http.StatusFound)
			return
		}
		if code == 0 {
			code = 200
		}
		http.Error(w, "status "+r.URL.Path, code)
	})
	for _, tc := range []struct {
		path       string
		retry4xx   bool
		ok, perm   bool
		wantInText string
	}{
		{path: "/500", wantInText: "500 Internal Server Error"},
		{path: "/503", wantInText: "503"},
		{path: "/404", perm: true, wantInText: "404 Not Found: status /404"},
		{path: "/400", perm: true, wantInText: "400"},
		{path: "/404", retry4xx: true, wantInText: "404"},
		{path: "/429", wantInText: "429"},
		{path: "/302", ok: true},
	} {
		res, err := loopback().Run(context.Background(), HTTPArgs{URL: url + tc.path, RetryOn4xx: tc.retry4xx})
		switch {
		case tc.ok && (err != nil || res.Status != 200):
			t.Errorf("%s: want success, got %v", tc.path, err)
		case !tc.ok && err == nil:
			t.Errorf("%s: want an error", tc.path)
		case !tc.ok && hopper.IsPermanent(err) != tc.perm:
			t.Errorf("%s retry4xx=%v: permanent=%v, want %v (%v)", tc.path, tc.retry4xx, hopper.IsPermanent(err), tc.perm, err)
		case !tc.ok && !strings.Contains(err.Error(), tc.wantInText):
			t.Errorf("%s: error %q lacks %q", tc.path, err, tc.wantInText)
		}
	}
}

// TestHTTPFailureKeepsResult checks that a failed request returns its
// result (status, duration, body excerpt) with a short error.
func TestHTTPFailureKeepsResult(t *testing.T) {
	t.Parallel()
	long := strings.Repeat("0123456789", 100)
	url := server(t, func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/long" {
			http.Error(w, long, http.StatusBadGateway)
			return
		}
		http.Error(w, "boom\nsecond line", http.StatusInternalServerError)
	})
	res, err := loopback().Run(context.Background(), HTTPArgs{URL: url})
	if err == nil || hopper.IsPermanent(err) || err.Error() != "http GET "+url+": 500 Internal Server Error: boom" {
		t.Fatalf("error %v", err)
	}
	if res == nil || res.Status != 500 || res.BodyExcerpt != "boom\nsecond line\n" || res.Duration <= 0 {
		t.Fatalf("result %+v", res)
	}
	res, err = loopback().Run(context.Background(), HTTPArgs{URL: url + "/long"})
	if err == nil || len(err.Error()) > 300 || !strings.HasSuffix(err.Error(), "0123456789…") {
		t.Fatalf("error of %d bytes: %v", len(err.Error()), err)
	}
	if res == nil || res.Status != 502 || res.BodyExcerpt != long+"\n" {
		t.Fatalf("result %+v", res)
	}
}

// TestHTTPBodyExcerptText checks how a body that is not UTF-8 is kept: a
// character cut by the excerpt's end is dropped, other bad bytes replaced.
func TestHTTPBodyExcerptText(t *testing.T) {
	t.Parallel()
	url := server(t, func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/bin" {
			w.Write([]byte("\x89PNG\r\n"))
			return
		}
		w.Write([]byte("x" + strings.Repeat("é", 3000)))
	})
	res, err := loopback().Run(context.Background(), HTTPArgs{URL: url})
	if err != nil {
		t.Fatal(err)
	}
	if want := "x" + strings.Repeat("é", (TailSize-2)/2); res.BodyExcerpt != want {
		t.Errorf("excerpt of %d bytes ends %q, want %d bytes", len(res.BodyExcerpt), res.BodyExcerpt[len(res.BodyExcerpt)-4:], len(want))
	}
	if res, err = loopback().Run(context.Background(), HTTPArgs{URL: url + "/bin"}); err != nil || res.BodyExcerpt != "\uFFFDPNG\r\n" {
		t.Errorf("binary body: %v, %q", err, res.BodyExcerpt)
	}
}

func TestHTTPTimeoutIsRetried(t *testing.T) {
	t.Parallel()
	url := server(t, func(w http.ResponseWriter, r *http.Request) { <-r.Context().Done() })
	_, err := loopback().Run(context.Background(), HTTPArgs{URL: url, Timeout: Duration(100 * time.Millisecond)})
	if err == nil || hopper.IsPermanent(err) || !strings.Contains(err.Error(), "timed out after 100ms") {
		t.Fatalf("want a retryable timeout, got %v", err)
	}
}

func TestHTTPConnectionErrorIsRetried(t *testing.T) {
	t.Parallel()
	s := httptest.NewServer(http.NotFoundHandler())
	url := s.URL
	s.Close()
	_, err := loopback().Run(context.Background(), HTTPArgs{URL: url})
	if err == nil || hopper.IsPermanent(err) {
		t.Fatalf("want a retryable error, got %v", err)
	}
}

func TestHTTPBadInputIsPermanent(t *testing.T) {
	t.Parallel()
	for _, a := range []HTTPArgs{
		{},
		{URL: "ftp://example.com/x"},
		{URL: "example.com/x"},
		{URL: "http://"},
		{URL: "http://[::1"},
		{URL: "http://localhost", Method: "GE T"},
		{URL: "http://localhost", Headers: map[string]string{"Bad Name": "x"}},
		{URL: "http://localhost", Headers: map[string]string{"X": "a\r\nb"}},
		{URL: "http://localhost/caf\xe9"},
		{URL: "http://localhost", Headers: map[string]string{"X": "caf\xe9"}},
		{URL: "http://localhost", Body: "\x89PNG"},
	} {
		_, err := HTTP(context.Background(), a)
		if !hopper.IsPermanent(err) || !strings.HasPrefix(err.Error(), "permanent: http: ") {
			t.Errorf("%+v: want a permanent, clear error, got %v", a, err)
		}
	}
	for field, a := range map[string]HTTPArgs{
		"url":       {URL: "http://localhost/caf\xe9"},
		"headers.X": {URL: "http://localhost", Headers: map[string]string{"X": "caf\xe9"}},
		"body":      {URL: "http://localhost", Body: "\x89PNG"},
	} {
		if err := a.Validate(); err == nil || !strings.Contains(err.Error(), "http: "+field+" is not valid UTF-8") {
			t.Errorf("%s: error %v", field, err)
		}
	}
}

// TestArgsCheckedAtEnqueue: a client that registers the built-in kinds
// refuses their bad args at Enqueue and AddSchedule, naming the field, and
// stores nothing; the same args enqueued by a client that does not know the
// kinds fail the job permanently when it runs, without running anything.
func TestArgsCheckedAtEnqueue(t *testing.T) {
	t.Parallel()
	st := memstore.New()
	ws := hopper.NewWorkers()
	Register(ws)
	c, err := hopper.NewClient(hopper.Config{Store: st, Workers: ws})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	for _, tc := range []struct {
		kind string
		args any
		want string
	}{
		{KindExec, json.RawMessage(`{"cmd":"echo"}`), `unknown field "cmd"`},
		{KindExec, json.RawMessage(`{"command":["echo","hi"]}`), `"command": want a string, got array`},
		{KindExec, nil, "exec: command must not be empty"},
		{KindExec, ExecArgs{Command: "echo", Env: []string{"NOEQUALS"}}, "env[0]"},
		{KindHTTP, HTTPArgs{URL: "ftp://example.com"}, "scheme must be http or https"},
		{KindHTTP, json.RawMessage(`{"url":"http://example.com","timeout":"soon"}`), `"timeout": "soon" (want a Go duration`},
	} {
		var fe *hopper.FieldError
		_, err := c.Enqueue(ctx, tc.kind, tc.args, nil)
		if !errors.As(err, &fe) || fe.Field != "args" || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("Enqueue(%s, %s): %v, want a FieldError on args saying %q", tc.kind, tc.args, err, tc.want)
		}
		_, err = c.AddSchedule(ctx, "s", hopper.ScheduleOptions{Every: time.Minute, Kind: tc.kind, Args: tc.args})
		if !errors.As(err, &fe) || fe.Field != "args" || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("AddSchedule(%s, %s): %v, want a FieldError on args saying %q", tc.kind, tc.args, err, tc.want)
		}
	}
	if n, err := c.Count(ctx, hopper.ListOptions{}); err != nil || n != 0 {
		t.Fatalf("%d jobs stored after refused enqueues (%v), want 0", n, err)
	}
	if scs, err := c.Schedules(ctx); err != nil || len(scs) != 0 {
		t.Fatalf("schedules %v (%v), want none", scs, err)
	}

	producer, err := hopper.NewClient(hopper.Config{Store: st}) // knows no kinds: takes any args
	if err != nil {
		t.Fatal(err)
	}
	res, err := producer.Enqueue(ctx, KindExec, json.RawMessage(`{"cmd":"echo"}`), &hopper.EnqueueOptions{MaxAttempts: 5})
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Start(); err != nil {
		t.Fatal(err)
	}
	defer c.Stop(ctx)
	wctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	j, err := c.Wait(wctx, res.ID)
	if err != nil {
		t.Fatal(err)
	}
	if j.State != hopper.StateDead || j.Attempt != 1 || !strings.Contains(j.LastError, `unknown field "cmd"`) {
		t.Fatalf("bad args from another client: %s after %d attempts, %q; want dead after 1", j.State, j.Attempt, j.LastError)
	}
}

// TestRegisteredKinds runs both kinds through a client.
func TestRegisteredKinds(t *testing.T) {
	t.Parallel()
	url := server(t, func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/missing" {
			http.NotFound(w, r)
			return
		}
		w.Write([]byte("pong"))
	})
	ws := hopper.NewWorkers()
	if err := RegisterWith(ws, Options{HTTP: allowLoopback}); err != nil {
		t.Fatal(err)
	}
	c, err := hopper.NewClient(hopper.Config{Workers: ws, Concurrency: 2})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if err := c.Start(); err != nil {
		t.Fatal(err)
	}
	defer c.Stop(ctx)
	run := func(kind string, args any) *hopper.Job {
		t.Helper()
		res, err := c.Enqueue(ctx, kind, args, &hopper.EnqueueOptions{MaxAttempts: 1})
		if err != nil {
			t.Fatal(err)
		}
		wctx, cancel := context.WithTimeout(ctx, 30*time.Second)
		defer cancel()
		j, err := c.Wait(wctx, res.ID)
		if err != nil {
			t.Fatal(err)
		}
		return j
	}
	j := run(KindExec, ExecArgs{Command: "echo", Args: []string{"hi"}})
	var er ExecResult
	if err := json.Unmarshal(j.Result, &er); err != nil || j.State != hopper.StateCompleted || er.StdoutTail != "hi\n" {
		t.Fatalf("exec: %s %s %v", j.State, j.Result, err)
	}
	j = run(KindHTTP, HTTPArgs{URL: url})
	var hr HTTPResult
	if err := json.Unmarshal(j.Result, &hr); err != nil || hr.Status != 200 || hr.BodyExcerpt != "pong" {
		t.Fatalf("http: %s %s %v", j.State, j.Result, err)
	}
	// A failed attempt keeps its result in the attempt's history.
	j = run(KindExec, ExecArgs{Command: "sh", Args: []string{"-c", "echo out; echo err >&2; exit 3"}})
	er = ExecResult{}
	if j.State != hopper.StateDead || len(j.Attempts) != 1 || json.Unmarshal(j.Attempts[0].Result, &er) != nil ||
		er.ExitCode != 3 || er.StdoutTail != "out\n" || er.StderrTail != "err\n" {
		t.Fatalf("failed exec: %s, attempts %+v", j.State, j.Attempts)
	}
	j = run(KindHTTP, HTTPArgs{URL: url + "/missing", Method: "DELETE"})
	hr = HTTPResult{}
	if j.State != hopper.StateDead || len(j.Attempts) != 1 || json.Unmarshal(j.Attempts[0].Result, &hr) != nil || hr.Status != 404 {
		t.Fatalf("failed http: %s, attempts %+v", j.State, j.Attempts)
	}
	// A command that never ran has no result (not a JSON null).
	j = run(KindExec, ExecArgs{Command: "hopper-no-such-command"})
	if j.State != hopper.StateDead || len(j.Attempts) != 1 || j.Attempts[0].Result != nil {
		t.Fatalf("exec not found: %s, result %q", j.State, j.Attempts[0].Result)
	}
}
