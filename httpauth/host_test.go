package httpauth

import (
	"context"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"net/url"
	"strconv"
	"strings"
	"testing"
)

// TestHostCheck: loopback names and addresses, the address the request
// arrived at and the allowed hosts pass; every other Host — those of DNS
// rebinding pages first — is refused, however it is written.
func TestHostCheck(t *testing.T) {
	t.Parallel()
	c, err := NewHostCheck(HostOptions{Allowed: []string{"hopper.example.com", "*.Ops.Example.", "192.0.2.7", "[2001:db8::7]", " fd00::1 "}})
	if err != nil {
		t.Fatal(err)
	}
	local := netip.MustParseAddr("198.51.100.1")
	for _, tc := range []struct {
		host string
		ok   bool
	}{
		{"localhost", true},
		{"localhost:8080", true},
		{"LocalHost:8080", true},
		{"localhost.:8080", true},
		{"localhost:", true},
		{"127.0.0.1", true},
		{"127.0.0.1:8080", true},
		{"127.255.0.9:1", true},
		{"127.0.0.1.:80", true},
		{"[::1]", true},
		{"[::1]:8080", true},
		{"[0:0:0:0:0:0:0:1]:80", true},
		{"[::ffff:127.0.0.1]:80", true},
		{"198.51.100.1:8080", true}, // the address it was reached at
		{"hopper.example.com", true},
		{"HOPPER.example.com:443", true},
		{"a.ops.example", true},
		{"a.b.ops.example:1", true},
		{"192.0.2.7:8080", true},
		{"[2001:db8::7]:8080", true},
		{"[2001:db8:0::7]", true},
		{"[fd00::1]:80", true},

		{"evil.example", false},
		{"evil.example:8080", false},
		{"ops.example", false}, // the wildcard is for names under it
		{"evilops.example", false},
		{"hopper.example.com.evil.example", false},
		{"localhost.evil.example", false},
		{"evil.localhost", false},
		{"", false},
		{":8080", false},
		{"localhost:8080:80", false},
		{"localhost:99999", false},
		{"localhost:65536", false},
		{"localhost:+80", false},
		{"localhost:0x50", false},
		{"localhost: 80", false},
		{"localhost..", false},
		{".localhost", false},
		{"local%68ost", false},
		{"evil.example@localhost", false},
		{"localhost@evil.example", false},
		{"user:pass@localhost", false},
		{"localhost/x", false},
		{"localhost\\x", false},
		{"localhost#", false},
		{"::1", false},
		{"[::1", false},
		{"[::1]x", false},
		{"[::1]:", true},
		{"[::1%25lo]:80", false},
		{"[127.0.0.1]", false},
		{"127.1", false},
		{"127.0.1", false},
		{"0x7f.0.0.1", false},
		{"0177.0.0.1", false},
		{"2130706433", false},
		{"127.0.0.1.evil.example", false},
		{"0.0.0.0:8080", true},
		{"[::]:8080", true},
		{"10.0.0.1", false},
		{"198.51.100.2", false},
		{"löcalhost", false},
		{"xn--lcalhost-o4a", false},
		{"localhost\x00", false},
		{"local host", false},
		{strings.Repeat("a.", 200) + "localhost", false},
	} {
		if got := c.allows(tc.host, local); got != tc.ok {
			t.Errorf("Host %q: allowed %v, want %v", tc.host, got, tc.ok)
		}
	}
}

// TestHostOptions: a bad allowed host is refused, naming it and why.
func TestHostOptions(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ entry, err string }{
		{"", "empty"},
		{"example.com:8080", "without a port"},
		{"*", "*.NAME"},
		{"*.com", "*.example.com"},
		{"*.*.example.com", "*.example.com"},
		{"a*.example.com", "want a host name"},
		{"bücher.example", "xn--"},
		{"0.0.0.0", "no address a client connects to"},
		{"[::]", "no address a client connects to"},
		{"fe80::1%eth0", "zone"},
		{"[::1", "lacks its ]"},
		{"127.1", "want a host name"},
		{"ex ample.com", "want a host name"},
		{"http://example.com", "without a port"},
	} {
		_, err := NewHostCheck(HostOptions{Allowed: []string{"ok.example", tc.entry}})
		if err == nil || !strings.Contains(err.Error(), tc.err) || !strings.Contains(err.Error(), "allowed host") {
			t.Errorf("allowed host %q: %v, want %q", tc.entry, err, tc.err)
		}
	}
}

// TestHostHandler: the handler refuses with 421 and the reason, reports
// the failure and serves the exempt paths whatever the Host; the address
// a connection arrived at comes from the server.
func TestHostHandler(t *testing.T) {
	t.Parallel()
	var failures counter
	c, err := NewHostCheck(HostOptions{Exempt: []string{"/healthz"}, Logger: quiet, OnFailure: failures.add})
	if err != nil {
		t.Fatal(err)
	}
	h := c.Handler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.Write([]byte("served")) }))
	serve := func(host, path string) *httptest.ResponseRecorder {
		r := httptest.NewRequest(http.MethodPost, path, nil)
		r.Host = host
		w := httptest.NewRecorder()
		h.ServeHTTP(w, r)
		return w
	}
	w := serve("evil.example:8080", "/api/v1/jobs")
	if w.Code != http.StatusMisdirectedRequest || !strings.Contains(w.Body.String(), `host "evil.example:8080"`) ||
		!strings.Contains(w.Body.String(), "--allowed-hosts") || w.Header().Get("Content-Type") != "text/plain; charset=utf-8" {
		t.Errorf("evil host: %d %q", w.Code, w.Body)
	}
	if failures.get(ReasonHost) != 1 {
		t.Errorf("failure not reported")
	}
	if w := serve("localhost:8080", "/api/v1/jobs"); w.Body.String() != "served" {
		t.Errorf("localhost: %d", w.Code)
	}
	if w := serve("evil.example", "/healthz"); w.Body.String() != "served" {
		t.Errorf("exempt path: %d", w.Code)
	}
	if w := serve("evil.example", "/healthz/x"); w.Code != http.StatusMisdirectedRequest {
		t.Errorf("under an exempt path: %d", w.Code)
	}

	// Through a server: the local address is the listener's.
	srv := httptest.NewServer(h)
	defer srv.Close()
	addr := srv.Listener.Addr().(*net.TCPAddr)
	port := strconv.Itoa(addr.Port)
	for host, want := range map[string]int{
		addr.String():          200,
		"localhost:" + port:    200,
		"evil.example:" + port: 421,
		"127.0.0.2:" + port:    200,
		"203.0.113.1:" + port:  421,
	} {
		req, _ := http.NewRequestWithContext(context.Background(), http.MethodGet, srv.URL, nil)
		req.Host = host
		res, err := srv.Client().Do(req)
		if err != nil {
			t.Fatal(err)
		}
		res.Body.Close()
		if res.StatusCode != want {
			t.Errorf("Host %q through a server: %d, want %d", host, res.StatusCode, want)
		}
	}
}

// FuzzHostCheck: whatever the Host, the check never panics; a Host it
// allows names, for Go's URL parser too, a loopback address, localhost,
// the local address or an allowed host; and it does not depend on case.
func FuzzHostCheck(f *testing.F) {
	for _, s := range []string{
		"localhost", "localhost:8080", "LOCALHOST.", "127.0.0.1:80", "[::1]:80", "[::ffff:127.0.0.1]",
		"evil.example:8080", "a.ops.example", "ops.example", "localhost@evil", "evil@localhost", "local%68ost",
		"[::1%25lo]", "127.1", "0x7f.1", "[::1]:", "localhost:", "localhost..", "xn--lcalhost-o4a", "löcalhost",
		"localhost:65536", "[127.0.0.1]", "localhost:8080:1", "198.51.100.1", "hopper.example.com.",
	} {
		f.Add(s)
	}
	c, err := NewHostCheck(HostOptions{Allowed: []string{"hopper.example.com", "*.ops.example", "192.0.2.7"}})
	if err != nil {
		f.Fatal(err)
	}
	local := netip.MustParseAddr("198.51.100.1")
	f.Fuzz(func(t *testing.T, host string) {
		ok := c.allows(host, local)
		if ok != c.allows(strings.ToUpper(host), local) || ok != c.allows(strings.ToLower(host), local) {
			t.Fatalf("Host %q: the answer depends on case", host)
		}
		if !ok {
			return
		}
		u, err := url.Parse("http://" + host + "/")
		if err != nil || u.User != nil || u.Path != "/" {
			t.Fatalf("Host %q allowed, but Go reads http://%s/ as %+v (%v)", host, host, u, err)
		}
		name := strings.TrimSuffix(strings.ToLower(u.Hostname()), ".")
		if ip, err := netip.ParseAddr(name); err == nil {
			ip = ip.Unmap()
			if !ip.IsLoopback() && !ip.IsUnspecified() && ip != local && ip != netip.MustParseAddr("192.0.2.7") {
				t.Fatalf("Host %q allowed: address %v", host, ip)
			}
			return
		}
		if name != "localhost" && name != "hopper.example.com" && !strings.HasSuffix(name, ".ops.example") {
			t.Fatalf("Host %q allowed: name %q", host, name)
		}
	})
}

// TestHostSecretPaths (docs/security.md, "External checks"): a refused
// request under a SecretPaths prefix is logged without the rest of its
// path, the ping ID.
func TestHostSecretPaths(t *testing.T) {
	t.Parallel()
	var logs strings.Builder
	c, err := NewHostCheck(HostOptions{Logger: slog.New(slog.NewTextHandler(&logs, nil)), SecretPaths: []string{"/ping/"}})
	if err != nil {
		t.Fatal(err)
	}
	h := c.Handler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {}))
	for _, path := range []string{"/ping/SECRETSECRETSECRET123/fail", "/api/v1/jobs"} {
		r := httptest.NewRequest(http.MethodGet, path, nil)
		r.Host = "evil.example"
		h.ServeHTTP(httptest.NewRecorder(), r)
	}
	if out := logs.String(); strings.Contains(out, "SECRET") || !strings.Contains(out, "path=/ping/…") || !strings.Contains(out, "path=/api/v1/jobs") {
		t.Errorf("logs:\n%s", out)
	}
}
