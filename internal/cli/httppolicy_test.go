package cli

import (
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"testing"

	"github.com/hopperq/hopper"
)

// TestServeHTTPAllowFlag: serve refuses a bad --http-allow before opening
// the database, naming the entry; with a good one it logs what it allows,
// and its API enqueues http jobs under that policy: the allowed address,
// not the others.
func TestServeHTTPAllowFlag(t *testing.T) {
	t.Parallel()
	db := newDB(t)
	for _, tc := range []struct {
		args []string
		want []string
	}{
		{[]string{"serve", "--http-allow", "10.0.0.0/33"}, []string{`bad --http-allow: allow entry "10.0.0.0/33": not a CIDR prefix`}},
		{[]string{"serve", "--http-allow", "10.0.0.0/8,http://hooks.internal/"}, []string{`allow entry "http://hooks.internal/": a URL`}},
		{[]string{"serve", "--http-allow", "2130706433"}, []string{`allow entry "2130706433"`, "a.b.c.d"}},
		{[]string{"serve", "--kinds", "exec", "--http-allow", "10.0.0.0/8"}, []string{"--http-allow applies to http jobs", "--kinds exec"}},
		{[]string{"serve", "--kinds", "exec", "--http-proxy-from-env"}, []string{"--http-proxy-from-env applies to http jobs"}},
	} {
		hop(t, db, tc.args...).fails(t, ExitUsage, tc.want...)
	}
	if _, err := os.Stat(db); !os.IsNotExist(err) {
		t.Errorf("a refused serve created the database: %v", err)
	}

	s := startServe(t, db, "--workers", "0", "--http", "127.0.0.1:0", "--http-allow", "127.0.0.2/32", "--http-allow", " 10.1.0.0/16 , hooks.internal")
	if log := s.stderr.String(); !strings.Contains(log, "http_allow=127.0.0.2/32,10.1.0.0/16,hooks.internal") {
		t.Errorf("the serving line does not say what is allowed: %s", log)
	}
	s.want("", "POST", "/api/v1/jobs", `{"kind":"http","args":{"url":"http://127.0.0.2:8080/hook"}}`, http.StatusCreated)
	s.want("", "POST", "/api/v1/jobs", `{"kind":"http","args":{"url":"http://hooks.internal/"}}`, http.StatusCreated)
	s.want("", "POST", "/api/v1/jobs", `{"kind":"http","args":{"url":"http://127.0.0.1:8080/api/v1/jobs"}}`, http.StatusBadRequest,
		`"field":"args"`, "127.0.0.1 is a loopback address", "--http-allow 127.0.0.1")
	s.want("", "POST", "/api/v1/jobs", `{"kind":"http","args":{"url":"http://169.254.169.254/latest/meta-data/"}}`, http.StatusBadRequest,
		"169.254.169.254 is a link-local address")
}

// TestEnqueueHTTPPolicy: the commands that enqueue apply the default
// policy, or $HOPPER_HTTP_ALLOW's: an http job to a refused IP address is
// refused (exit 2, naming the address and how to allow it), one to a host
// name is not (it is checked when it runs). Not parallel: it sets the
// environment.
func TestEnqueueHTTPPolicy(t *testing.T) {
	db := newDB(t)
	t.Setenv(HTTPAllowEnv, "")
	hop(t, db, "enqueue", "http", "--url", "http://127.0.0.1:8080/").fails(t, ExitUsage, "127.0.0.1 is a loopback address", "--http-allow 127.0.0.1",
		HTTPAllowEnv+"=127.0.0.1 for hopper enqueue") // what allows it here, not only in serve
	hop(t, db, "enqueue", "http", "--url", "http://[::ffff:10.0.0.1]/").fails(t, ExitUsage, "an IPv4-mapped form of 10.0.0.1, a private address")
	hop(t, db, "schedule", "add", "s", "--every", "1m", "http", "--url", "http://169.254.169.254/").fails(t, ExitUsage, "169.254.169.254 is a link-local address")
	hopIn(t, db, `{"kind":"http","args":{"url":"https://example.com/"}}`+"\n"+`{"kind":"http","args":{"url":"http://10.0.0.1/"}}`+"\n",
		"enqueue", "--bulk").fails(t, ExitUsage, "line 2", "10.0.0.1 is a private address")
	hop(t, db, "enqueue", "http", "--url", "http://localhost:8080/").ok(t)

	t.Setenv(HTTPAllowEnv, "127.0.0.0/8, 10.0.0.0/8")
	hop(t, db, "enqueue", "http", "--url", "http://127.0.0.1:8080/").ok(t)
	hopIn(t, db, `{"kind":"http","args":{"url":"http://10.0.0.1/"}}`+"\n", "enqueue", "--bulk").ok(t)
	hop(t, db, "enqueue", "http", "--url", "http://192.168.0.1/").fails(t, ExitUsage, "192.168.0.1 is a private address")

	t.Setenv(HTTPAllowEnv, "10.0.0.0/8,nope/8")
	hop(t, db, "enqueue", "http", "--url", "https://example.com/").fails(t, ExitUsage, "bad $"+HTTPAllowEnv, `allow entry "nope/8"`)
}

// TestServeRunsHTTPJobsUnderPolicy: serve's workers run http jobs under
// its policy, here from $HOPPER_HTTP_ALLOW (the default of --http-allow),
// which enqueue applies too: a job to the allowed address completes, one
// to a name that resolves to loopback dies with the policy's error, and
// its target sees nothing. Not parallel: it sets the environment.
func TestServeRunsHTTPJobsUnderPolicy(t *testing.T) {
	t.Setenv(HTTPAllowEnv, "127.0.0.2")
	ln, err := net.Listen("tcp", "127.0.0.2:0")
	if err != nil {
		t.Skipf("cannot listen on 127.0.0.2: %v", err)
	}
	allowed := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.Write([]byte("allowed")) }))
	allowed.Listener.Close()
	allowed.Listener = ln
	allowed.Start()
	defer allowed.Close()
	hits := make(chan string, 10)
	victim := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { hits <- r.URL.Path }))
	defer victim.Close()
	_, port, _ := net.SplitHostPort(victim.Listener.Addr().String())

	db := newDB(t)
	ok := hop(t, db, "enqueue", "--max-attempts", "3", "http", "--url", allowed.URL+"/ok").ok(t).id(t)
	refused := hop(t, db, "enqueue", "--max-attempts", "3", "http", "--url", "http://localhost:"+port+"/secret").ok(t).id(t)
	startServe(t, db, "--workers", "2")
	jobs := waitFinished(t, db, ok, refused)
	if j := jobs[0]; j.State != hopper.StateCompleted || !strings.Contains(string(j.Result), `"body_excerpt":"allowed"`) {
		t.Errorf("job to the allowed address: %s, result %s, error %q", j.State, j.Result, j.LastError)
	}
	if j := jobs[1]; j.State != hopper.StateDead || j.Attempt != 1 || !strings.Contains(j.LastError, "localhost resolves to 127.0.0.1, a loopback address") {
		t.Errorf("job to localhost: %s after %d attempts, %q; want dead at once with the policy's error", j.State, j.Attempt, j.LastError)
	}
	select {
	case p := <-hits:
		t.Errorf("the refused server got a request for %s", p)
	default:
	}
}
