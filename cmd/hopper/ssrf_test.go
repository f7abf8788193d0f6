package main

import (
	"encoding/json"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/hopperq/hopper"
	"github.com/hopperq/hopper/internal/cli"
	"github.com/hopperq/hopper/kinds"
)

// countingServer is a test server that counts the connections it accepts.
type countingServer struct {
	*httptest.Server
	conns atomic.Int32
}

// startCounting starts a server of h on addr ("127.0.0.1:0"), or returns
// nil if the address cannot be listened on (no IPv6).
func startCounting(t *testing.T, addr string, h http.HandlerFunc) *countingServer {
	t.Helper()
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil
	}
	s := &countingServer{Server: httptest.NewUnstartedServer(h)}
	s.Listener.Close()
	s.Listener = ln
	s.Config.ConnState = func(_ net.Conn, st http.ConnState) {
		if st == http.StateNew {
			s.conns.Add(1)
		}
	}
	s.Start()
	t.Cleanup(s.Close)
	return s
}

// port is the server's port.
func (s *countingServer) port() string {
	_, p, _ := net.SplitHostPort(s.Listener.Addr().String())
	return p
}

// untouched checks that no one but the test connected to s: the server
// counts each connection before serving it, in the order they came, so
// once the test's own request is answered every earlier one is counted.
func (s *countingServer) untouched(t *testing.T) {
	t.Helper()
	resp, err := s.Client().Get(s.URL)
	if err != nil {
		t.Fatalf("the test's own request to %s: %v", s.URL, err)
	}
	resp.Body.Close()
	if n := s.conns.Load() - 1; n != 0 {
		t.Errorf("%s accepted %d connections besides the test's own", s.URL, n)
	}
}

// httpBody is the JSON of an http job to u, with three attempts (a
// refusal must use one).
func httpBody(u string) string {
	b, _ := json.Marshal(map[string]any{"kind": "http", "args": kinds.HTTPArgs{URL: u}, "max_attempts": 3})
	return string(b)
}

// TestHTTPJobsCannotReachLocalServices runs the SSRF that http jobs
// allowed (reading another local server's token-protected job list, the
// cloud's metadata service...) against a real hopper serve --http: an http
// job whose URL's host is a refused address is refused by the API (400,
// naming the address and how to allow it); one enqueued earlier under a
// wider policy, or naming a host that resolves to loopback, or redirected
// there by an allowed server, dies at its first attempt with the policy's
// error; the servers aimed at accept no connection; HTTP_PROXY, set to a
// proxy on an allowed address, is not used; and --http-allow 127.0.0.2/32
// lets a job reach the server there.
func TestHTTPJobsCannotReachLocalServices(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary and runs it; skipped with -short")
	}
	t.Parallel()
	secret := func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "the victim's secret") }
	victim := startCounting(t, "127.0.0.1:0", secret)
	victim6 := startCounting(t, "[::1]:0", secret)
	var proxied atomic.Int32
	proxy := startCounting(t, "127.0.0.2:0", func(w http.ResponseWriter, r *http.Request) {
		proxied.Add(1)
		io.WriteString(w, "from the proxy")
	})
	allowed := startCounting(t, "127.0.0.2:0", func(w http.ResponseWriter, r *http.Request) {
		if to := r.URL.Query().Get("to"); to != "" {
			http.Redirect(w, r, to, http.StatusFound)
			return
		}
		io.WriteString(w, "allowed")
	})
	if victim == nil || proxy == nil || allowed == nil {
		t.Skip("cannot listen on 127.0.0.1 and 127.0.0.2")
	}

	c := newSecurityHop(t)
	c.env = append(c.env, cli.HTTPAllowEnv+"=", "HTTP_PROXY="+proxy.URL, "HTTPS_PROXY="+proxy.URL, "http_proxy="+proxy.URL, "https_proxy="+proxy.URL, "NO_PROXY=", "no_proxy=")
	s := c.serveHTTP("--http-allow", "127.0.0.2/32")
	if l, _ := s.log.find(`msg="hopper serving"`, "http_allow=127.0.0.2/32"); l == "" {
		t.Errorf("the serving line does not say http_allow: %q", s.log.all())
	}
	_, apiPort, _ := net.SplitHostPort(strings.TrimPrefix(s.url, "http://"))

	// Refused by the API: the host is a refused address, in any form.
	type target struct{ url, why string }
	literals := []target{
		{"http://127.0.0.1:" + apiPort + "/api/v1/jobs", "127.0.0.1 is a loopback address"}, // this very server's job list
		{"http://127.0.0.1:" + victim.port() + "/", "127.0.0.1 is a loopback address"},
		{"http://[::ffff:127.0.0.1]:" + victim.port() + "/", "an IPv4-mapped form of 127.0.0.1, a loopback address"},
		{"http://2130706433:" + victim.port() + "/", "2130706433 is 127.0.0.1, a loopback address"},
		{"http://0.0.0.0:" + victim.port() + "/", "0.0.0.0 is the unspecified address"},
		{"http://169.254.169.254/latest/meta-data/", "169.254.169.254 is a link-local address"},
		{"http://10.0.0.1/", "10.0.0.1 is a private address"},
	}
	if victim6 != nil {
		literals = append(literals, target{"http://[::1]:" + victim6.port() + "/", "::1 is a loopback address"})
	}
	for _, tg := range literals {
		status, _, e := s.enqueue(t, httpBody(tg.url))
		if status != http.StatusBadRequest || e.Error.Field != "args" || !strings.Contains(e.Error.Message, tg.why) || !strings.Contains(e.Error.Message, "--http-allow") {
			t.Errorf("POST %s: %d %+v; want 400 on args saying %q and how to allow it", tg.url, status, e, tg.why)
		}
	}

	// Dead at run time with the policy's error: names, redirects, and
	// literals enqueued by a command whose policy allowed them.
	var ids []hopper.ID
	var dead []target
	for _, tg := range []target{
		{"http://localhost:" + victim.port() + "/", "localhost resolves to 127.0.0.1, a loopback address"},
		{allowed.URL + "/?to=" + url.QueryEscape("http://127.0.0.1:"+victim.port()+"/secret"), "redirect to http://127.0.0.1:" + victim.port() + "/secret: 127.0.0.1 is a loopback address"},
		{allowed.URL + "/?to=" + url.QueryEscape("http://localhost:"+victim.port()+"/secret"), "localhost resolves to 127.0.0.1, a loopback address"},
		{allowed.URL + "/?to=" + url.QueryEscape("http://169.254.169.254/"), "169.254.169.254 is a link-local address"},
	} {
		ids, dead = append(ids, s.mustEnqueue(t, httpBody(tg.url))), append(dead, tg)
	}
	base := c.env
	c.env = append(append([]string(nil), base...), cli.HTTPAllowEnv+"=0.0.0.0/0,::/0")
	for _, tg := range literals[1:] {
		if strings.Contains(tg.url, "2130706433") {
			continue // no policy lets such a host in
		}
		id, err := strconv.ParseInt(strings.TrimSpace(c.run("", "enqueue", "--max-attempts", "3", "http", "--url", tg.url)), 10, 64)
		if err != nil {
			t.Fatal(err)
		}
		ids, dead = append(ids, hopper.ID(id)), append(dead, tg)
	}
	c.env = base
	for i, id := range ids {
		j := c.finished(s, id)
		if j.State != hopper.StateDead || j.Attempt != 1 || !strings.Contains(j.LastError, dead[i].why) || !strings.Contains(j.LastError, "--http-allow") {
			t.Errorf("job %d (%s): %s after %d attempts, %q; want dead at once with the policy's error %q", id, dead[i].url, j.State, j.Attempt, j.LastError, dead[i].why)
		}
	}

	// Completed: the allowed server. Dead, without a proxy: a name that
	// resolves nowhere (through the proxy, it would have completed).
	var res kinds.HTTPResult
	if j := c.finished(s, s.mustEnqueue(t, httpBody(allowed.URL+"/ok"))); j.State != hopper.StateCompleted || json.Unmarshal(j.Result, &res) != nil || res.BodyExcerpt != "allowed" {
		t.Errorf("the job to the allowed server: %s, %s, %q", j.State, j.Result, j.LastError)
	}
	unresolvable := `{"kind":"http","args":{"url":"http://hopper-ssrf-test.invalid/"},"max_attempts":1}`
	if j := c.finished(s, s.mustEnqueue(t, unresolvable)); j.State != hopper.StateDead || strings.Contains(string(j.Result), "from the proxy") {
		t.Errorf("the job to an unresolvable name: %s, %s, %q; want dead, not proxied", j.State, j.Result, j.LastError)
	}
	victim.untouched(t)
	if victim6 != nil {
		victim6.untouched(t)
	}
	if n := proxied.Load(); n != 0 {
		t.Errorf("the proxy of HTTP_PROXY got %d requests", n)
	}
	c.stop(s.server)
}
