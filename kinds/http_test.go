package kinds

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/hopperq/hopper"
)

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
	res, err := HTTP(context.Background(), HTTPArgs{URL: url})
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
	res, err := HTTP(context.Background(), HTTPArgs{
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
		res, err := HTTP(context.Background(), HTTPArgs{URL: url + tc.path, RetryOn4xx: tc.retry4xx})
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

func TestHTTPTimeoutIsRetried(t *testing.T) {
	t.Parallel()
	url := server(t, func(w http.ResponseWriter, r *http.Request) { <-r.Context().Done() })
	_, err := HTTP(context.Background(), HTTPArgs{URL: url, Timeout: Duration(100 * time.Millisecond)})
	if err == nil || hopper.IsPermanent(err) || !strings.Contains(err.Error(), "timed out after 100ms") {
		t.Fatalf("want a retryable timeout, got %v", err)
	}
}

func TestHTTPConnectionErrorIsRetried(t *testing.T) {
	t.Parallel()
	s := httptest.NewServer(http.NotFoundHandler())
	url := s.URL
	s.Close()
	_, err := HTTP(context.Background(), HTTPArgs{URL: url})
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
	} {
		_, err := HTTP(context.Background(), a)
		if !hopper.IsPermanent(err) || !strings.HasPrefix(err.Error(), "permanent: http: ") {
			t.Errorf("%+v: want a permanent, clear error, got %v", a, err)
		}
	}
}

// TestRegisteredKinds runs both kinds through a client.
func TestRegisteredKinds(t *testing.T) {
	t.Parallel()
	url := server(t, func(w http.ResponseWriter, r *http.Request) { w.Write([]byte("pong")) })
	ws := hopper.NewWorkers()
	Register(ws)
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
	j = run(KindExec, json.RawMessage(`{"cmd":"echo"}`))
	if j.State != hopper.StateDead || !strings.Contains(j.LastError, `unknown field "cmd"`) {
		t.Fatalf("bad args: %s %q", j.State, j.LastError)
	}
}
