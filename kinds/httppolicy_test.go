package kinds

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"net/url"
	"os"
	"os/exec"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hopperq/hopper"
	"github.com/hopperq/hopper/store/memstore"
)

// victim is a server that http jobs must not reach: it counts the
// connections it accepts.
type victim struct {
	srv   *httptest.Server
	conns atomic.Int32
	port  string
}

// newVictim starts a victim listening on addr ("127.0.0.1:0"); it skips
// the test if the address cannot be listened on (no IPv6).
func newVictim(t *testing.T, network, addr string) *victim {
	t.Helper()
	ln, err := net.Listen(network, addr)
	if err != nil {
		t.Skipf("cannot listen on %s: %v", addr, err)
	}
	v := &victim{srv: httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Write([]byte("the victim's secret"))
	}))}
	v.srv.Listener.Close()
	v.srv.Listener = ln
	v.srv.Config.ConnState = func(_ net.Conn, s http.ConnState) {
		if s == http.StateNew {
			v.conns.Add(1)
		}
	}
	v.srv.Start()
	t.Cleanup(v.srv.Close)
	_, v.port, _ = net.SplitHostPort(ln.Addr().String())
	return v
}

// untouched checks that nothing connected to v: the server accepts
// connections in order and counts each before serving it, so once a
// request of the test's own is answered, any connection made before it
// has been counted.
func (v *victim) untouched(t *testing.T) {
	t.Helper()
	resp, err := v.srv.Client().Get(v.srv.URL)
	if err != nil {
		t.Fatalf("the test's own request to the victim: %v", err)
	}
	resp.Body.Close()
	if n := v.conns.Load() - 1; n != 0 {
		t.Errorf("the victim on %s accepted %d connections besides the test's own", v.srv.URL, n)
	}
	v.srv.CloseClientConnections()
}

// listenOn starts a server of h on addr, skipping the test if it cannot
// listen there, and returns its URL.
func listenOn(t *testing.T, addr string, h http.HandlerFunc) string {
	t.Helper()
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		t.Skipf("cannot listen on %s: %v", addr, err)
	}
	s := httptest.NewUnstartedServer(h)
	s.Listener.Close()
	s.Listener = ln
	s.Start()
	t.Cleanup(s.Close)
	return s.URL
}

// refusal is a URL the default policy refuses, the address it names and
// what the error must say.
type refusal struct {
	url  string
	addr string
	why  string
}

// literalRefusals are URLs whose host is an IP address the default policy
// refuses, in the forms an attacker would write; port is the loopback
// victim's.
func literalRefusals(port string) []refusal {
	return []refusal{
		{"http://127.0.0.1:" + port + "/", "127.0.0.1", "127.0.0.1 is a loopback address"},
		{"http://[::ffff:127.0.0.1]:" + port + "/", "::ffff:127.0.0.1", "::ffff:127.0.0.1 is an IPv4-mapped form of 127.0.0.1, a loopback address"},
		{"http://[::ffff:7f00:2]:" + port + "/", "::ffff:127.0.0.2", "an IPv4-mapped form of 127.0.0.2, a loopback address"},
		{"http://2130706433:" + port + "/", "127.0.0.1", "2130706433 is 127.0.0.1, a loopback address"},
		{"http://0x7f.1:" + port + "/", "127.0.0.1", "0x7f.1 is 127.0.0.1, a loopback address"},
		{"http://0177.0.0.1:" + port + "/", "127.0.0.1", "0177.0.0.1 is 127.0.0.1"},
		{"http://127.0.0.1.:" + port + "/", "127.0.0.1", "127.0.0.1. is 127.0.0.1"},
		{"http://0.0.0.0:" + port + "/", "0.0.0.0", "0.0.0.0 is the unspecified address"},
		{"http://0:" + port + "/", "0.0.0.0", "0 is 0.0.0.0, the unspecified address"},
		{"http://169.254.169.254/latest/meta-data/", "169.254.169.254", "169.254.169.254 is a link-local address"},
		{"http://[::ffff:169.254.169.254]/", "::ffff:169.254.169.254", "an IPv4-mapped form of 169.254.169.254, a link-local address"},
		{"http://[64:ff9b::a9fe:a9fe]/", "64:ff9b::a9fe:a9fe", "a NAT64 form (64:ff9b::/96) of 169.254.169.254"},
		{"http://10.0.0.1/", "10.0.0.1", "10.0.0.1 is a private address (10.0.0.0/8)"},
		{"https://192.168.1.1/", "192.168.1.1", "a private address (192.168.0.0/16)"},
		{"http://100.64.0.1/", "100.64.0.1", "a shared address"},
		{"http://[fd00::1]/", "fd00::1", "a unique-local address"},
		{"http://[fe80::1%25lo]/", "fe80::1", "fe80::1%lo is a link-local address (fe80::/10)"},
	}
}

// checkRefusal checks that err is the policy's refusal r.
func checkRefusal(t *testing.T, r refusal, res *HTTPResult, err error) {
	t.Helper()
	var re *RefusedAddrError
	switch {
	case res != nil:
		t.Errorf("%s: a result: %+v", r.url, res)
	case !errors.As(err, &re) || !hopper.IsPermanent(err):
		t.Errorf("%s: %v, want a permanent *RefusedAddrError", r.url, err)
	case re.Addr != netip.MustParseAddr(r.addr):
		t.Errorf("%s: refused %s, want %s", r.url, re.Addr, r.addr)
	case !strings.Contains(err.Error(), r.why) || !strings.Contains(err.Error(), "--http-allow "+r.addr):
		t.Errorf("%s: error %q, want it to say %q and how to allow %s", r.url, err, r.why, r.addr)
	}
}

// TestHTTPRefusesLiteralAddresses: under the default policy, a URL whose
// host is a refused address, in any form, is refused before any
// connection, permanently, saying which address, why and how to allow it.
func TestHTTPRefusesLiteralAddresses(t *testing.T) {
	t.Parallel()
	v4 := newVictim(t, "tcp4", "127.0.0.1:0")
	for _, r := range literalRefusals(v4.port) {
		// Check connects to nothing: the refusal needs no connection.
		if err := defaultHTTPRunner().Check(HTTPArgs{URL: r.url}); !errors.As(err, new(*RefusedAddrError)) {
			t.Errorf("Check(%s): %v, want the refusal before any connection", r.url, err)
		}
		res, err := HTTP(context.Background(), HTTPArgs{URL: r.url})
		checkRefusal(t, r, res, err)
	}
	v4.untouched(t)

	v6 := newVictim(t, "tcp6", "[::1]:0")
	r := refusal{"http://[::1]:" + v6.port + "/", "::1", "::1 is a loopback address"}
	res, err := HTTP(context.Background(), HTTPArgs{URL: r.url})
	checkRefusal(t, r, res, err)
	v6.untouched(t)
}

// TestHTTPRefusesNameResolvingToLoopback: a host name is checked on the
// address it resolves to, when connecting; a name allowed by the policy
// connects wherever it resolves.
func TestHTTPRefusesNameResolvingToLoopback(t *testing.T) {
	t.Parallel()
	v := newVictim(t, "tcp4", "127.0.0.1:0")
	u := "http://localhost:" + v.port + "/"
	res, err := HTTP(context.Background(), HTTPArgs{URL: u})
	var re *RefusedAddrError
	if res != nil || !hopper.IsPermanent(err) || !errors.As(err, &re) || re.Host != "localhost" || !re.Addr.IsLoopback() ||
		!strings.Contains(err.Error(), "localhost resolves to "+re.Addr.String()+", a loopback address") {
		t.Fatalf("%s: %+v, %v; want a permanent refusal of localhost's address", u, res, err)
	}
	v.untouched(t)

	byName, err := NewHTTPRunner(HTTPPolicy{Allow: []string{"LocalHost."}})
	if err != nil {
		t.Fatal(err)
	}
	if res, err := byName.Run(context.Background(), HTTPArgs{URL: u}); err != nil || res.BodyExcerpt != "the victim's secret" {
		t.Fatalf("localhost allowed by name: %+v, %v", res, err)
	}
}

// TestHTTPRedirectChecked: a redirect from an allowed server to a refused
// address (written as an address or as a name) or to another scheme is
// not followed, permanently; the refused server sees nothing.
func TestHTTPRedirectChecked(t *testing.T) {
	t.Parallel()
	v := newVictim(t, "tcp4", "127.0.0.1:0")
	allowed := listenOn(t, "127.0.0.2:0", func(w http.ResponseWriter, r *http.Request) {
		if to := r.URL.Query().Get("to"); to != "" {
			http.Redirect(w, r, to, http.StatusFound)
			return
		}
		w.Write([]byte("allowed"))
	})
	h, err := NewHTTPRunner(HTTPPolicy{Allow: []string{"127.0.0.2/32"}})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	// The allowed server is reached, and so is a redirect to it.
	if res, err := h.Run(ctx, HTTPArgs{URL: allowed + "/?to=" + url.QueryEscape(allowed+"/ok")}); err != nil || res.BodyExcerpt != "allowed" {
		t.Fatalf("the allowed server, through a redirect: %+v, %v", res, err)
	}
	for _, tc := range []struct{ to, want string }{
		{"http://127.0.0.1:" + v.port + "/secret", "127.0.0.1 is a loopback address"},
		{"http://localhost:" + v.port + "/secret", "localhost resolves to 127.0.0.1, a loopback address"},
		{"http://[::ffff:127.0.0.1]:" + v.port + "/", "an IPv4-mapped form of 127.0.0.1"},
		{"http://2130706433:" + v.port + "/", "2130706433 is 127.0.0.1"},
		{"http://169.254.169.254/latest/meta-data/", "169.254.169.254 is a link-local address"},
		{"ftp://127.0.0.2/x", `scheme "ftp": must be http or https`},
		{"file:///etc/passwd", `scheme "file": must be http or https`},
	} {
		res, err := h.Run(ctx, HTTPArgs{URL: allowed + "/?to=" + url.QueryEscape(tc.to)})
		if res != nil || !hopper.IsPermanent(err) || !strings.Contains(err.Error(), "redirect to "+tc.to+": ") || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("redirect to %s: %+v, %v; want a permanent error saying %q", tc.to, res, err, tc.want)
		}
	}
	v.untouched(t)
}

// TestHTTPRedirectCap: redirects are followed up to the policy's limit
// (DefaultHTTPMaxRedirects), then the job fails permanently; a negative
// limit follows none and the 3xx completes the job.
func TestHTTPRedirectCap(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		max, limit, requests int
		ok                   bool
	}{
		{0, DefaultHTTPMaxRedirects, DefaultHTTPMaxRedirects + 1, false},
		{2, 2, 3, false},
		{-1, 0, 1, true},
	} {
		var requests atomic.Int32
		u := listenOn(t, "127.0.0.2:0", func(w http.ResponseWriter, r *http.Request) {
			requests.Add(1)
			http.Redirect(w, r, fmt.Sprintf("/loop/%d", requests.Load()), http.StatusFound)
		})
		h, err := NewHTTPRunner(HTTPPolicy{Allow: []string{"127.0.0.2"}, MaxRedirects: tc.max})
		if err != nil {
			t.Fatal(err)
		}
		res, err := h.Run(context.Background(), HTTPArgs{URL: u})
		switch {
		case tc.ok && (err != nil || res.Status != http.StatusFound):
			t.Errorf("MaxRedirects %d: %+v, %v; want the 302 as the result", tc.max, res, err)
		case !tc.ok && (!hopper.IsPermanent(err) || !strings.Contains(err.Error(), fmt.Sprintf("stopped after %d redirects, the policy's limit", tc.limit))):
			t.Errorf("MaxRedirects %d: %v; want a permanent error saying where it stopped", tc.max, err)
		}
		if n := int(requests.Load()); n != tc.requests {
			t.Errorf("MaxRedirects %d: %d requests, want %d", tc.max, n, tc.requests)
		}
	}
}

// proxyChildEnv, when set, makes TestHTTPProxyChild run (in a process of
// its own, as TestHTTPProxyEnvironment starts it): its value is the case.
const proxyChildEnv = "HOPPER_KINDS_TEST_PROXY_CHILD"

// TestHTTPProxyEnvironment: HTTP_PROXY and HTTPS_PROXY are ignored unless
// the policy says ProxyFromEnvironment; then the proxy's own address is
// checked like any other, and an IP-literal URL is still checked. Each
// case runs in a process of its own: the standard library reads the
// proxy variables once per process.
func TestHTTPProxyEnvironment(t *testing.T) {
	t.Parallel()
	var hits atomic.Int32
	proxy := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
		w.Write([]byte("from the proxy"))
	}))
	defer proxy.Close()
	for _, tc := range []struct {
		name string
		hits int32
	}{{"ignored", 0}, {"refused", 0}, {"used", 1}} {
		cmd := exec.Command(os.Args[0], "-test.run=^TestHTTPProxyChild$", "-test.v", "-test.count=1")
		cmd.Env = append(os.Environ(), proxyChildEnv+"="+tc.name,
			"HTTP_PROXY="+proxy.URL, "HTTPS_PROXY="+proxy.URL, "http_proxy="+proxy.URL, "https_proxy="+proxy.URL,
			"NO_PROXY=", "no_proxy=", "REQUEST_METHOD=")
		out, err := cmd.CombinedOutput()
		if err != nil || !strings.Contains(string(out), "--- PASS: TestHTTPProxyChild") {
			t.Errorf("case %s: %v\n%s", tc.name, err, out)
		}
		if n := hits.Swap(0); n != tc.hits {
			t.Errorf("case %s: the proxy got %d requests, want %d", tc.name, n, tc.hits)
		}
	}
}

// TestHTTPProxyChild is one case of TestHTTPProxyEnvironment, with the
// proxy variables set to a proxy on loopback.
func TestHTTPProxyChild(t *testing.T) {
	which := os.Getenv(proxyChildEnv)
	if which == "" {
		t.Skip("run by TestHTTPProxyEnvironment")
	}
	ctx := context.Background()
	target := HTTPArgs{URL: "http://hopper-test-proxied.invalid/", Timeout: Duration(time.Minute)}
	run := func(p HTTPPolicy, a HTTPArgs) (*HTTPResult, error) {
		t.Helper()
		h, err := NewHTTPRunner(p)
		if err != nil {
			t.Fatal(err)
		}
		defer h.CloseIdleConnections() // the proxy is the parent's: its connections would outlive the test
		return h.Run(ctx, a)
	}
	switch which {
	case "ignored":
		// The proxy's address is allowed: only ignoring the variables
		// keeps the request from it. The name does not resolve.
		res, err := run(HTTPPolicy{Allow: []string{"127.0.0.0/8"}}, target)
		if err == nil || res != nil {
			t.Fatalf("%+v, %v; want the name not to resolve, without a proxy", res, err)
		}
	case "refused":
		res, err := run(HTTPPolicy{ProxyFromEnvironment: true}, target)
		var re *RefusedAddrError
		if res != nil || !hopper.IsPermanent(err) || !errors.As(err, &re) || !re.Proxy || !strings.Contains(err.Error(), "the proxy 127.0.0.1 is a loopback address") {
			t.Fatalf("%+v, %v; want the proxy's address refused", res, err)
		}
	case "used":
		p := HTTPPolicy{ProxyFromEnvironment: true, Allow: []string{"127.0.0.1"}}
		if res, err := run(p, HTTPArgs{URL: "http://10.0.0.1/"}); res != nil || !errors.As(err, new(*RefusedAddrError)) {
			t.Fatalf("10.0.0.1 through the proxy: %+v, %v; want it refused before reaching the proxy", res, err)
		}
		if res, err := run(p, target); err != nil || res.BodyExcerpt != "from the proxy" {
			t.Fatalf("%+v, %v; want the proxy's response", res, err)
		}
	default:
		t.Fatalf("unknown case %q", which)
	}
}

// TestHTTPPolicyAtEnqueue: a client with the kinds registered refuses, at
// Enqueue, AddSchedule and CheckArgs, an http job whose URL's host is an
// address its policy refuses, and so does Options.ValidateArgs with the
// same policy. Jobs that reach the worker anyway (enqueued by a client
// without the kinds, or naming a host that resolves to a refused address)
// die at their first attempt with the policy's error, and the target sees
// nothing.
func TestHTTPPolicyAtEnqueue(t *testing.T) {
	t.Parallel()
	v := newVictim(t, "tcp4", "127.0.0.1:0")
	ctx := context.Background()
	st := memstore.New()
	ws := hopper.NewWorkers()
	Register(ws)
	c, err := hopper.NewClient(hopper.Config{Store: st, Workers: ws})
	if err != nil {
		t.Fatal(err)
	}
	refusals := literalRefusals(v.port)
	for _, r := range refusals {
		args := HTTPArgs{URL: r.url}
		raw, _ := json.Marshal(args)
		var fe *hopper.FieldError
		if _, err := c.Enqueue(ctx, KindHTTP, args, nil); !errors.As(err, &fe) || fe.Field != "args" || !strings.Contains(err.Error(), r.why) {
			t.Errorf("Enqueue(%s): %v, want a FieldError on args saying %q", r.url, err, r.why)
		}
		if _, err := c.AddSchedule(ctx, "s", hopper.ScheduleOptions{Every: time.Minute, Kind: KindHTTP, Args: args}); !errors.As(err, new(*RefusedAddrError)) {
			t.Errorf("AddSchedule(%s): %v, want the refusal", r.url, err)
		}
		if err := ws.CheckArgs(KindHTTP, raw); !errors.As(err, new(*RefusedAddrError)) {
			t.Errorf("CheckArgs(%s): %v, want the refusal", r.url, err)
		}
		if err := ValidateArgs(KindHTTP, raw); !errors.As(err, new(*RefusedAddrError)) || !strings.Contains(err.Error(), r.why) {
			t.Errorf("ValidateArgs(%s): %v, want the refusal", r.url, err)
		}
		u, _ := url.Parse(r.url)
		_, canonical, _ := hostAddr(u.Hostname())
		switch err := (Options{HTTP: HTTPPolicy{Allow: []string{"0.0.0.0/0", "::/0"}}}).ValidateArgs(KindHTTP, raw); {
		case canonical && err != nil:
			t.Errorf("ValidateArgs(%s) allowing every address: %v, want nil", r.url, err)
		case !canonical && (err == nil || !strings.Contains(err.Error(), "written in another form")):
			// Under any policy: resolvers read such hosts differently.
			t.Errorf("ValidateArgs(%s) allowing every address: %v, want the host refused", r.url, err)
		}
	}
	if n, err := c.Count(ctx, hopper.ListOptions{}); err != nil || n != 0 {
		t.Fatalf("%d jobs stored after refused enqueues (%v), want 0", n, err)
	}

	// Enqueued by a client that does not check them (no workers), or
	// naming a host: refused at run time.
	producer, err := hopper.NewClient(hopper.Config{Store: st})
	if err != nil {
		t.Fatal(err)
	}
	refusals = append(refusals, refusal{"http://localhost:" + v.port + "/", "127.0.0.1", "localhost resolves to 127.0.0.1, a loopback address"})
	ids := make([]hopper.ID, len(refusals))
	for i, r := range refusals {
		res, err := producer.Enqueue(ctx, KindHTTP, HTTPArgs{URL: r.url}, &hopper.EnqueueOptions{MaxAttempts: 5})
		if err != nil {
			t.Fatalf("enqueue %s without checks: %v", r.url, err)
		}
		ids[i] = res.ID
	}
	if err := c.Start(); err != nil {
		t.Fatal(err)
	}
	defer c.Stop(ctx)
	for i, r := range refusals {
		wctx, cancel := context.WithTimeout(ctx, time.Minute)
		j, err := c.Wait(wctx, ids[i])
		cancel()
		if err != nil {
			t.Fatal(err)
		}
		if j.State != hopper.StateDead || j.Attempt != 1 || !strings.Contains(j.LastError, r.why) || !strings.Contains(j.LastError, "--http-allow") {
			t.Errorf("%s: %s after %d attempts, %q; want dead after 1 with the policy's error %q", r.url, j.State, j.Attempt, j.LastError, r.why)
		}
	}
	v.untouched(t)

	// A policy allowing one address enqueues jobs to it, not to others.
	ws2 := hopper.NewWorkers()
	if err := RegisterWith(ws2, Options{HTTP: HTTPPolicy{Allow: []string{"127.0.0.2/32"}}}); err != nil {
		t.Fatal(err)
	}
	if err := ws2.CheckArgs(KindHTTP, json.RawMessage(`{"url":"http://127.0.0.2:8080/"}`)); err != nil {
		t.Errorf("127.0.0.2 allowed: %v", err)
	}
	if err := ws2.CheckArgs(KindHTTP, json.RawMessage(`{"url":"http://127.0.0.1:8080/"}`)); !errors.As(err, new(*RefusedAddrError)) {
		t.Errorf("127.0.0.1 with 127.0.0.2 allowed: %v, want the refusal", err)
	}
	if err := RegisterWith(hopper.NewWorkers(), Options{HTTP: HTTPPolicy{Allow: []string{"10.0.0.0/33"}}}); err == nil || !strings.Contains(err.Error(), `allow entry "10.0.0.0/33"`) {
		t.Errorf("RegisterWith with a bad allow entry: %v", err)
	}
}

// TestHTTPErrorsRedactUserinfo: the errors of http jobs, which are stored,
// shown to every read token and logged, never hold the user information
// of the URL (a password, or a token as the user name), whatever failed:
// a status, a refused address, a refused redirect, a connection error, a
// timeout, a bad scheme.
func TestHTTPErrorsRedactUserinfo(t *testing.T) {
	t.Parallel()
	const user, pass = "tok-user-secret", "pass-secret"
	withUser := func(u string) string { return strings.Replace(u, "://", "://"+user+":"+pass+"@", 1) }
	v := newVictim(t, "tcp4", "127.0.0.1:0")
	allowed := listenOn(t, "127.0.0.2:0", func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/to-literal":
			http.Redirect(w, r, withUser("http://127.0.0.1:"+v.port+"/"), http.StatusFound)
		case "/to-name":
			http.Redirect(w, r, withUser("http://localhost:"+v.port+"/"), http.StatusFound)
		case "/slow":
			<-r.Context().Done()
		default:
			http.Error(w, "broken", http.StatusInternalServerError)
		}
	})
	ln, err := net.Listen("tcp4", "127.0.0.2:0")
	if err != nil {
		t.Skip(err)
	}
	closed := ln.Addr().String() // nothing listens there once closed
	ln.Close()
	h, err := NewHTTPRunner(HTTPPolicy{Allow: []string{"127.0.0.2/32"}})
	if err != nil {
		t.Fatal(err)
	}
	for _, a := range []HTTPArgs{
		{URL: withUser(allowed + "/")},                      // 500
		{URL: withUser("http://localhost:" + v.port + "/")}, // refused when connecting
		{URL: withUser(allowed + "/to-literal")},            // refused redirect
		{URL: withUser(allowed + "/to-name")},               // redirect refused when connecting
		{URL: withUser("http://" + closed + "/")},           // connection refused
		{URL: withUser(allowed + "/slow"), Timeout: Duration(50 * time.Millisecond)},
		{URL: withUser("ftp://127.0.0.2/")},
	} {
		_, err := h.Run(context.Background(), a)
		if err == nil {
			t.Fatalf("%s: no error", a.URL)
		}
		if msg := err.Error(); strings.Contains(msg, user) || strings.Contains(msg, pass) {
			t.Errorf("the error holds the URL's user information: %s", msg)
		} else if !strings.Contains(msg, "xxxxx@") {
			t.Errorf("the error does not show the URL, redacted: %s", msg)
		}
	}
	v.untouched(t)
}

// TestHTTPReusesConnections: the http jobs of several workers calling one
// host keep their connections open for the next calls, and a host the
// policy refuses stays refused. With Go's default
// of two idle connections per host, six of eight concurrent calls closed
// theirs, and the next eight dialed six again.
func TestHTTPReusesConnections(t *testing.T) {
	t.Parallel()
	const workers = 8
	var opened atomic.Int64
	var arrived atomic.Int64
	release := make(chan struct{})
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if arrived.Add(1) == workers { // the first round: all in flight at once
			close(release)
		}
		<-release
		w.Write([]byte("ok"))
	}))
	srv.Config.ConnState = func(_ net.Conn, s http.ConnState) {
		if s == http.StateNew {
			opened.Add(1)
		}
	}
	srv.Start()
	t.Cleanup(srv.Close)
	h, err := NewHTTPRunner(HTTPPolicy{Allow: []string{"127.0.0.1/32"}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(h.CloseIdleConnections)
	round := func() {
		errs := make(chan error, workers)
		for range workers {
			go func() {
				_, err := h.Run(t.Context(), HTTPArgs{URL: srv.URL})
				errs <- err
			}()
		}
		for range workers {
			if err := <-errs; err != nil {
				t.Fatal(err)
			}
		}
	}
	round()
	if n := opened.Load(); n != workers {
		t.Fatalf("first round of %d concurrent calls opened %d connections, want %d", workers, n, workers)
	}
	round()
	if n := opened.Load(); n != workers {
		t.Errorf("a second round of %d calls opened %d connections in all, want %d: the first round's were not kept", workers, n, workers)
	}
	// The kept connections are to the allowed host only: another is
	// refused as ever.
	port := srv.URL[strings.LastIndex(srv.URL, ":")+1:]
	if res, err := h.Run(t.Context(), HTTPArgs{URL: "http://127.0.0.2:" + port + "/"}); res != nil || !hopper.IsPermanent(err) {
		t.Errorf("a refused host after kept connections: %+v, %v; want a permanent error", res, err)
	}
}
