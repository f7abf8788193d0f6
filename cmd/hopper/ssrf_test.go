package main

import (
	"encoding/json"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hopperq/hopper"
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

var apiAddrRE = regexp.MustCompile(`http=(http://\S+)`)

// TestHTTPJobsCannotReachLocalServices runs the SSRF that http jobs
// allowed (reading another local server's job list, the cloud's metadata
// service...) against a real hopper serve: an http job whose URL's host is
// a refused address is refused by the API (400, naming the address and how
// to allow it); one enqueued earlier under a wider policy, or naming a host
// that resolves to loopback, or redirected there by an allowed server, dies
// at its first attempt with the policy's error; the servers aimed at accept
// no connection; HTTP_PROXY, set to a proxy on an allowed address, is not
// used; and --http-allow 127.0.0.2/32 lets a job reach the server there.
func TestHTTPJobsCannotReachLocalServices(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary and runs it; skipped with -short")
	}
	t.Parallel()
	dir := t.TempDir()
	c := &hop{t: t, bin: hopperBin(t), db: filepath.Join(dir, "hopper.db"), logs: filepath.Join(dir, "logs")}
	os.Mkdir(c.logs, 0o755)

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

	c.env = []string{"HTTP_PROXY=" + proxy.URL, "HTTPS_PROXY=" + proxy.URL, "http_proxy=" + proxy.URL, "https_proxy=" + proxy.URL, "NO_PROXY=", "no_proxy="}
	srv := c.serve(2, "--http", "127.0.0.1:0", "--http-allow", "127.0.0.2/32")
	t.Cleanup(func() { c.stop(srv) })
	m := apiAddrRE.FindStringSubmatch(srv.log.waitLine(t, time.Minute, `msg="hopper serving"`, "http_allow=127.0.0.2/32"))
	if m == nil {
		t.Fatal("no API address in the serving line")
	}
	api := m[1] + "/api/v1/jobs"
	_, apiPort, _ := net.SplitHostPort(strings.TrimPrefix(m[1], "http://"))
	enqueue := func(u string) (int, string) {
		t.Helper()
		body, _ := json.Marshal(map[string]any{"kind": "http", "args": map[string]string{"url": u}, "max_attempts": 3})
		resp, err := http.Post(api, "application/json", strings.NewReader(string(body)))
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}

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
		code, body := enqueue(tg.url)
		if code != http.StatusBadRequest || !strings.Contains(body, `"field":"args"`) || !strings.Contains(body, tg.why) || !strings.Contains(body, "--http-allow") {
			t.Errorf("POST %s: %d %s; want 400 on args saying %q and how to allow it", tg.url, code, body, tg.why)
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
		code, body := enqueue(tg.url)
		var res struct{ ID hopper.ID }
		if code != http.StatusCreated || json.Unmarshal([]byte(body), &res) != nil {
			t.Fatalf("POST %s: %d %s", tg.url, code, body)
		}
		ids, dead = append(ids, res.ID), append(dead, tg)
	}
	base := c.env
	c.env = append(append([]string(nil), base...), "HOPPER_HTTP_ALLOW=0.0.0.0/0,::/0")
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

	// Completed: the allowed server. Dead, without a proxy: a name that
	// resolves nowhere (through the proxy, it would have completed).
	code, body := enqueue(allowed.URL + "/ok")
	var okJob struct{ ID hopper.ID }
	if code != http.StatusCreated || json.Unmarshal([]byte(body), &okJob) != nil {
		t.Fatalf("POST the allowed server: %d %s", code, body)
	}
	b, _ := json.Marshal(map[string]any{"kind": "http", "args": map[string]string{"url": "http://hopper-ssrf-test.invalid/"}, "max_attempts": 1})
	resp, err := http.Post(api, "application/json", strings.NewReader(string(b)))
	if err != nil {
		t.Fatal(err)
	}
	var noProxy struct{ ID hopper.ID }
	json.NewDecoder(resp.Body).Decode(&noProxy)
	resp.Body.Close()
	if resp.StatusCode != http.StatusCreated {
		t.Fatalf("POST the unresolvable name: %d", resp.StatusCode)
	}

	want := len(ids) + 2
	srv.log.until(t, 2*time.Minute, "every job finished", func(completed, dead int) bool { return completed+dead >= want })
	for i, id := range ids {
		j := c.job(id)
		if j.State != hopper.StateDead || j.Attempt != 1 || !strings.Contains(j.LastError, dead[i].why) || !strings.Contains(j.LastError, "--http-allow") {
			t.Errorf("job %d (%s): %s after %d attempts, %q; want dead at once with the policy's error %q", id, dead[i].url, j.State, j.Attempt, j.LastError, dead[i].why)
		}
	}
	var res struct {
		BodyExcerpt string `json:"body_excerpt"`
	}
	if j := c.job(okJob.ID); j.State != hopper.StateCompleted || json.Unmarshal(j.Result, &res) != nil || res.BodyExcerpt != "allowed" {
		t.Errorf("the job to the allowed server: %s, %s, %q", j.State, j.Result, j.LastError)
	}
	if j := c.job(noProxy.ID); j.State != hopper.StateDead || strings.Contains(string(j.Result), "from the proxy") {
		t.Errorf("the job to an unresolvable name: %s, %s, %q; want dead, not proxied", j.State, j.Result, j.LastError)
	}
	victim.untouched(t)
	if victim6 != nil {
		victim6.untouched(t)
	}
	if n := proxied.Load(); n != 0 {
		t.Errorf("the proxy of HTTP_PROXY got %d requests", n)
	}
}
