package cli

import (
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"

	"github.com/hopperq/hopper"
	"github.com/hopperq/hopper/httpauth"
	"github.com/hopperq/hopper/metrics"
	"github.com/spf13/pflag"
)

// TestPublicURLFlag: --public-url takes an http or https URL of a host
// alone, and adds its host to the allowed ones.
func TestPublicURLFlag(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ value, err string }{
		{"https://hopper.example.com", ""},
		{"http://hopper.example.com:8443/", ""},
		{"hopper.example.com", "want an http or https URL"},
		{"ftp://hopper.example.com", "want an http or https URL"},
		{"https://", "no host"},
		{"https://hopper.example.com/hopper", "the scheme and host (and port) alone"},
		{"https://u:p@hopper.example.com", "the scheme and host (and port) alone"},
	} {
		var f serverFlags
		fs := pflag.NewFlagSet("serve", pflag.ContinueOnError)
		f.register(fs)
		if err := fs.Parse([]string{"--http", "--public-url", tc.value}); err != nil {
			t.Fatal(err)
		}
		_, err := f.resolve(fs, nil)
		switch {
		case tc.err == "" && err != nil:
			t.Errorf("--public-url %q: %v", tc.value, err)
		case tc.err == "" && (f.public == nil || f.allowedHosts[len(f.allowedHosts)-1] != "hopper.example.com"):
			t.Errorf("--public-url %q: public %v, allowed hosts %v", tc.value, f.public, f.allowedHosts)
		case tc.err != "" && (err == nil || !strings.Contains(err.Error(), tc.err)):
			t.Errorf("--public-url %q: %v, want an error saying %q", tc.value, err, tc.err)
		}
	}
}

// TestPublicURL: behind a proxy that ends TLS and sends its own Host, a
// sign-in gets a Secure cookie, the public origin may post to the
// dashboard, and other origins may not.
func TestPublicURL(t *testing.T) {
	t.Parallel()
	log := slog.New(slog.DiscardHandler)
	c, err := hopper.NewClient(hopper.Config{Logger: log})
	if err != nil {
		t.Fatal(err)
	}
	defer c.StopNow()
	m := metrics.New(metrics.Options{NoPool: true})
	m.Attach(c)
	auth := &httpauth.Auth{}
	const secret = "public-url-secret-0123"
	if err := auth.ParseTokens("ops=admin:" + secret); err != nil {
		t.Fatal(err)
	}
	public, _ := parsePublicURL("https://hopper.example.com")
	h, dash, err := httpHandler(c, m, auth, []string{public.Hostname()}, public, log)
	if err != nil {
		t.Fatal(err)
	}
	defer dash.Close()
	post := func(origin string) *http.Response {
		r := httptest.NewRequest("POST", "/login", strings.NewReader(url.Values{"token": {secret}}.Encode()))
		r.Host = "127.0.0.1:8080" // the proxy's
		r.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		r.Header.Set("Origin", origin)
		w := httptest.NewRecorder()
		h.ServeHTTP(w, r)
		return w.Result()
	}
	res := post("https://hopper.example.com")
	if res.StatusCode != http.StatusSeeOther {
		t.Fatalf("sign-in from the public origin: %d", res.StatusCode)
	}
	var cookie *http.Cookie
	for _, ck := range res.Cookies() {
		if ck.Name == httpauth.CookieName {
			cookie = ck
		}
	}
	if cookie == nil || !cookie.Secure {
		t.Errorf("the session cookie behind an https public URL: %+v, want Secure", cookie)
	}
	if res := post("https://evil.example"); res.StatusCode != http.StatusForbidden {
		t.Errorf("sign-in from another origin: %d, want 403", res.StatusCode)
	}
}
