package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"

	"github.com/hopperq/hopper"
	"github.com/spf13/pflag"
)

// serving is a stderr that reports the "hopper serving" log line.
type serving struct {
	syncBuffer
	once sync.Once
	line chan string
}

func newServing() *serving { return &serving{line: make(chan string, 1)} }

func (s *serving) Write(p []byte) (int, error) {
	n, err := s.syncBuffer.Write(p)
	if bytes.Contains(p, []byte("hopper serving")) {
		s.once.Do(func() { s.line <- string(p) })
	}
	return n, err
}

var httpAttr = regexp.MustCompile(`http=(http://\S+)`)

// server is a hopper serve running in-process.
type server struct {
	t      *testing.T
	url    string // "" without --http
	stderr *serving
	cancel context.CancelFunc
	code   chan int
}

// startServe runs hopper serve with args on db until stop, and waits until
// it serves.
func startServe(t *testing.T, db string, args ...string) *server {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	s := &server{t: t, stderr: newServing(), cancel: cancel, code: make(chan int, 1)}
	go func() {
		s.code <- Run(ctx, append([]string{"--db", db, "serve", "--log-level", "info", "--shutdown-timeout", "5s"}, args...),
			IO{In: strings.NewReader(""), Out: io.Discard, Err: s.stderr})
	}()
	select {
	case line := <-s.stderr.line:
		if m := httpAttr.FindStringSubmatch(line); m != nil {
			s.url = m[1]
		}
	case c := <-s.code:
		t.Fatalf("serve exited %d before serving: %s", c, s.stderr.String())
	}
	t.Cleanup(func() { s.stop() })
	return s
}

// stop stops the server and fails unless it exited 0.
func (s *server) stop() string {
	s.t.Helper()
	s.cancel()
	if c := <-s.code; c != 0 {
		s.t.Errorf("serve exited %d: %s", c, s.stderr.String())
	}
	s.code <- 0 // for a second stop
	return s.stderr.String()
}

// call sends a request to the server with token ("" for none) and returns
// the status and body.
func (s *server) call(token, method, path, body string) (int, string) {
	s.t.Helper()
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	req, err := http.NewRequest(method, s.url+path, rd)
	if err != nil {
		s.t.Fatal(err)
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		s.t.Fatal(err)
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	return res.StatusCode, string(b)
}

func (s *server) want(token, method, path, body string, status int, has ...string) string {
	s.t.Helper()
	code, got := s.call(token, method, path, body)
	if code != status {
		s.t.Fatalf("%s %s: %d, want %d: %s", method, path, code, status, got)
	}
	for _, h := range has {
		if !strings.Contains(got, h) {
			s.t.Errorf("%s %s: body lacks %q:\n%s", method, path, h, got)
		}
	}
	return got
}

const (
	cliRead  = "cli-read-token-0123"
	cliAdmin = "cli-admin-token-0123"
)

func TestServeHTTP(t *testing.T) {
	t.Parallel()
	db := newDB(t)
	s := startServe(t, db, "--workers", "2", "--http", "127.0.0.1:0", "--token", "read:"+cliRead, "--token", "admin:"+cliAdmin)
	if !strings.HasPrefix(s.url, "http://127.0.0.1:") {
		t.Fatalf("serving on %q", s.url)
	}
	s.want("", "GET", "/healthz", "", 200, `"ok"`)
	s.want("", "GET", "/readyz", "", 200, `"ok"`)
	for _, path := range []string{"/healthz", "/readyz", "/metrics"} {
		s.want(cliAdmin, "POST", path, "", 405, `"method_not_allowed"`, "GET, HEAD")
	}
	s.want("", "GET", "/api/v1/jobs", "", 401, `"unauthorized"`)
	s.want(cliRead, "POST", "/api/v1/jobs", `{"kind":"exec","args":{"command":"echo","args":["hi"]}}`, 403, `"forbidden"`)
	body := s.want(cliAdmin, "POST", "/api/v1/jobs", `{"kind":"exec","args":{"command":"echo","args":["over http"]}}`, 201, `"id"`)
	var res struct{ ID hopper.ID }
	if err := json.Unmarshal([]byte(body), &res); err != nil {
		t.Fatal(err)
	}
	if j := waitFinished(t, db, res.ID)[0]; j.State != hopper.StateCompleted {
		t.Fatalf("job %d: %s", res.ID, j.State)
	}
	s.want(cliRead, "GET", fmt.Sprintf("/api/v1/jobs/%d", res.ID), "", 200, `"over http`)
	s.want(cliAdmin, "POST", "/api/v1/jobs", `{"kind":"send_email"}`, 400, `"field":"kind"`)
	// Args the built-in kind cannot run are refused, not stored to die.
	s.want(cliAdmin, "POST", "/api/v1/jobs", `{"kind":"exec","args":{"command":["echo","hi"]}}`, 400, `"field":"args"`, `"message":"\"command\": want a string, got array"`)
	s.want(cliAdmin, "POST", "/api/v1/schedules", `{"name":"t","every":"1m","kind":"http","args":{"url":"ftp://x"}}`, 400, `"field":"args"`, "http or https")
	s.want(cliRead, "GET", "/api/v1/jobs/count", "", 200, `"count":1}`)
	s.want(cliRead, "GET", "/api/v1/schedules", "", 200, `"schedules":[]`)
	// GET /api/v1 is the API's JSON 404, not the mux's redirect to /api/v1/.
	req, _ := http.NewRequest("GET", s.url+"/api/v1", nil)
	req.Header.Set("Authorization", "Bearer "+cliRead)
	if res, err := http.DefaultTransport.RoundTrip(req); err != nil {
		t.Fatal(err)
	} else {
		b, _ := io.ReadAll(res.Body)
		res.Body.Close()
		if res.StatusCode != 404 || !strings.Contains(string(b), `"not_found"`) || !strings.Contains(string(b), "openapi.json") {
			t.Errorf("GET /api/v1: %d %s", res.StatusCode, b)
		}
	}

	s.want("", "GET", "/metrics", "", 401)
	metrics := s.want(cliRead, "GET", "/metrics", "", 200,
		`hopper_jobs_enqueued_total{kind="exec",queue="default"} 1`, "hopper_workers 2", "hopper_stats_up 1",
		`hopper_store_operation_duration_seconds_count{op="enqueue"}`)
	if strings.Contains(metrics, "over http") {
		t.Error("job args in the metrics")
	}
	if code, _ := s.call("", "GET", "/", ""); code >= 500 || code == 404 {
		t.Errorf("dashboard at /: %d", code)
	}
	log := s.stop()
	for _, want := range []string{"http=http://127.0.0.1:", "auth=tokens", "shutting down", "stopped"} {
		if !strings.Contains(log, want) {
			t.Errorf("log lacks %q:\n%s", want, log)
		}
	}
}

// TestServeHTTPNoWorkers: --workers 0 serves the API and runs nothing.
func TestServeHTTPNoWorkers(t *testing.T) {
	t.Parallel()
	db := newDB(t)
	s := startServe(t, db, "--workers", "0", "--http", "127.0.0.1:0", "--external-kinds", "send_email")
	body := s.want("", "POST", "/api/v1/jobs", `{"kind":"exec","args":{"command":"true"}}`, 201, `"available"`)
	s.want("", "POST", "/api/v1/jobs", `{"kind":"send_email","args":{"to":"a@example.com"}}`, 201)
	s.want("", "POST", "/api/v1/schedules", `{"name":"tick","every":"1s","kind":"exec","args":{"command":"true"}}`, 201, `"next_runs"`)
	metrics := s.want("", "GET", "/metrics", "", 200, `hopper_jobs{queue="default",state="available"} 2`)
	if strings.Contains(metrics, "hopper_workers ") {
		t.Error("worker gauges exported without workers")
	}
	log := s.stop()
	if !strings.Contains(log, "workers=0") || !strings.Contains(log, "auth=\"none (loopback only)\"") {
		t.Errorf("log:\n%s", log)
	}
	var res struct{ ID hopper.ID }
	json.Unmarshal([]byte(body), &res)
	if j := getJobJSON(t, db, res.ID); j.State != hopper.StateAvailable || j.Attempt != 0 {
		t.Errorf("job %d ran without workers: %s, attempt %d", res.ID, j.State, j.Attempt)
	}
}

// TestServeHTTPBeyondLoopback: without tokens serve refuses an address
// others can reach, before creating anything, unless --insecure-listen.
func TestServeHTTPBeyondLoopback(t *testing.T) {
	t.Parallel()
	db := newDB(t)
	hop(t, db, "serve", "--http", "0.0.0.0:0").fails(t, ExitUsage, "refusing --http 0.0.0.0:0 without tokens", "--insecure-listen")
	if _, err := os.Stat(db); !os.IsNotExist(err) {
		t.Errorf("the refused serve created the database: %v", err)
	}
	s := startServe(t, db, "--http", "0.0.0.0:0", "--insecure-listen")
	log := s.stop()
	if !strings.Contains(log, "--insecure-listen") {
		t.Errorf("log:\n%s", log)
	}
	tokens := filepath.Join(t.TempDir(), "tokens")
	if err := os.WriteFile(tokens, []byte("# ops\nadmin:"+cliAdmin+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	s = startServe(t, db, "--http=0.0.0.0:0", "--tokens-file", tokens, "--read-only")
	s.url = strings.Replace(s.url, "0.0.0.0", "127.0.0.1", 1)
	s.want(cliAdmin, "GET", "/api/v1/jobs", "", 200)
	s.want(cliAdmin, "POST", "/api/v1/jobs", `{"kind":"exec","args":{"command":"true"}}`, 403, "read-only")
}

func TestServeHTTPUsage(t *testing.T) {
	t.Parallel()
	db := newDB(t)
	missing := filepath.Join(t.TempDir(), "nope")
	for _, tc := range []struct {
		args []string
		want []string
	}{
		{[]string{"serve", "--token", "read:" + cliRead}, []string{"--token applies to the HTTP server"}},
		{[]string{"serve", "--read-only"}, []string{"--read-only applies"}},
		{[]string{"serve", "--workers", "0"}, []string{"--workers 0 runs no jobs", "--http"}},
		{[]string{"serve", "--workers", "0", "--http", "127.0.0.1:0", "--queues", "a"}, []string{"--queues"}},
		{[]string{"serve", "--http", "nowhere"}, []string{`bad --http "nowhere"`}},
		{[]string{"serve", "--http", ":99999"}, []string{"bad --http", "port"}},
		{[]string{"serve", "--http", "127.0.0.1:0", "extra"}, []string{"takes no arguments"}},
		{[]string{"serve", "extra"}, []string{"takes no arguments"}},
		{[]string{"serve", "--http", "127.0.0.1:0", "--token", "read:short"}, []string{"bad --token #1", "shorter"}},
		{[]string{"serve", "--http", "127.0.0.1:0", "--token", "root:" + cliAdmin}, []string{"bad --token #1", "root"}},
		{[]string{"serve", "--http", "127.0.0.1:0", "--tokens-file", missing}, []string{"tokens file"}},
		{[]string{"serve", "--http", "127.0.0.1:0", "--allowed-hosts", "bücher.example"}, []string{"bad --allowed-hosts", "xn--"}},
		{[]string{"serve", "--allowed-hosts", "a.example"}, []string{"--allowed-hosts applies to the HTTP server"}},
		{[]string{"serve", "--external-kinds", strings.Repeat("k", 300)}, []string{"--external-kinds"}},
	} {
		hop(t, db, tc.args...).fails(t, ExitUsage, tc.want...)
	}
	if _, err := os.Stat(db); !os.IsNotExist(err) {
		t.Errorf("a refused serve created the database: %v", err)
	}
}

func TestHTTPAddr(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		args []string
		want string
		bad  bool
	}{
		{nil, "", false},
		{[]string{"--http"}, DefaultHTTPAddr, false},
		{[]string{"--http", ":9000"}, "127.0.0.1:9000", false},
		{[]string{"--http", "9000"}, "127.0.0.1:9000", false},
		{[]string{"--http=9000"}, "127.0.0.1:9000", false},
		{[]string{"--http", "0.0.0.0:80"}, "0.0.0.0:80", false},
		{[]string{"--http", "[::1]:80"}, "[::1]:80", false},
		{[]string{"--http", "localhost:80"}, "localhost:80", false},
		{[]string{"--http", "--read-only"}, DefaultHTTPAddr, false},
		{[]string{"--http", "80", "81"}, "", true},
		{[]string{"--http", "host"}, "", true},
		{[]string{"--http", "host:port"}, "", true},
		{[]string{"--read-only"}, "", true},
		{[]string{"--allowed-hosts", "hopper.example.com"}, "", true},
		{[]string{"--session-lifetime", "1h"}, "", true},
		{[]string{"--http", "--allowed-hosts", "hopper.example.com,*.ops.example,192.0.2.7"}, DefaultHTTPAddr, false},
		{[]string{"--http", "--allowed-hosts", "hopper.example.com:8080"}, "", true},
		{[]string{"--http", "--session-lifetime", "30s"}, "", true},
		{[]string{"--http", "--session-lifetime", "721h"}, "", true},
		{[]string{"--http", "--session-lifetime", "1h"}, DefaultHTTPAddr, false},
	} {
		var f serverFlags
		fs := pflag.NewFlagSet("serve", pflag.ContinueOnError)
		f.register(fs)
		if err := fs.Parse(tc.args); err != nil {
			t.Fatalf("%v: %v", tc.args, err)
		}
		got, err := f.resolve(fs, fs.Args())
		if got != tc.want || (err != nil) != tc.bad {
			t.Errorf("%v: %q, %v; want %q, error %v", tc.args, got, err, tc.want, tc.bad)
		}
	}
}

// TestTokenSources: tokens come from --token, the file and $HOPPER_TOKENS
// together, named as given or after where they were given; a tokens file
// others may read gets a warning; errors name the flag or the line.
func TestTokenSources(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	file := filepath.Join(dir, "tokens")
	if err := os.WriteFile(file, []byte("# ops\nwrite:file-token-0123456\nalice=exec:file-token-2-0123456\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	var logs syncBuffer
	log := slog.New(slog.NewTextHandler(&logs, nil))
	f := serverFlags{tokens: []string{"read:flag-token-0123456", "ci=write:flag-token-2-0123456"}, tokensFile: file}
	a, err := f.auth("admin:env-token-01234567, read:env-token-2-0123456", log)
	if err != nil {
		t.Fatal(err)
	}
	for tok, name := range map[string]string{
		"flag-token-0123456":   "--token#1",
		"flag-token-2-0123456": "ci",
		"file-token-0123456":   "tokens:2",
		"file-token-2-0123456": "alice",
		"env-token-01234567":   "$HOPPER_TOKENS#1",
		"env-token-2-0123456":  "$HOPPER_TOKENS#2",
	} {
		r, _ := http.NewRequest("GET", "/", nil)
		r.Header.Set("Authorization", "Bearer "+tok)
		if p, err := a.Authenticate(r); err != nil || p.Name != name {
			t.Errorf("token %s: named %q (%v), want %q", tok, p.Name, err, name)
		}
	}
	if logs.String() != "" {
		t.Errorf("a private tokens file: %s", logs.String())
	}
	if _, err := f.auth("admin:short", log); err == nil || !strings.Contains(err.Error(), "bad $"+TokensEnv+" #1: secret shorter") {
		t.Errorf("bad $%s: %v", TokensEnv, err)
	}
	bad := serverFlags{tokens: []string{"read:flag-token-0123456", "ops=root:flag-token-2-0123456"}}
	if _, err := bad.auth("", log); err == nil || !strings.Contains(err.Error(), `bad --token #2: scope "root"`) {
		t.Errorf("bad --token: %v", err)
	}
	// Errors in the file count lines, not tokens.
	os.WriteFile(file, []byte("# ops\n\nread:file-token-0123456\n# the next is bad\nwrite:short\n"), 0o600)
	if _, err := f.auth("", log); err == nil || !strings.Contains(err.Error(), "line 5: secret shorter") {
		t.Errorf("bad tokens file: %v", err)
	}
	os.WriteFile(file, []byte("read:file-token-0123456\n"), 0o644)
	os.Chmod(file, 0o644)
	if _, err := (&serverFlags{tokensFile: file}).auth("", log); err != nil {
		t.Fatal(err)
	}
	if out := logs.String(); !strings.Contains(out, "level=WARN") || !strings.Contains(out, "readable by other users") || !strings.Contains(out, "mode=-rw-r--r--") {
		t.Errorf("a world-readable tokens file: %q", out)
	}
}
