package httpauth

import (
	"errors"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

var quiet = slog.New(slog.DiscardHandler)

// request is a GET with an Authorization header and a session cookie,
// each if set, from remote.
func request(header, cookie, remote string) *http.Request {
	r, _ := http.NewRequest(http.MethodGet, "/", nil)
	if header != "" {
		r.Header.Set("Authorization", header)
	}
	if cookie != "" {
		r.AddCookie(&http.Cookie{Name: CookieName, Value: cookie})
	}
	r.RemoteAddr = remote
	if remote == "" {
		r.RemoteAddr = "192.0.2.1:1234"
	}
	return r
}

func TestScopes(t *testing.T) {
	t.Parallel()
	a := Auth{Logger: quiet}
	if err := a.ParseTokens("read:rrrrrrrrrrrrrrrr, write:wwwwwwwwwwwwwwww\nrunner=exec:eeeeeeeeeeeeeeee,admin:aaaaaaaaaaaaaaaa"); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		header string
		want   Principal
		err    error
	}{
		{"Bearer rrrrrrrrrrrrrrrr", Principal{Name: "#1", Scope: Read}, nil},
		{"bearer wwwwwwwwwwwwwwww", Principal{Name: "#2", Scope: Write}, nil},
		{"Bearer eeeeeeeeeeeeeeee", Principal{Name: "runner", Scope: Exec}, nil},
		{"Bearer aaaaaaaaaaaaaaaa", Principal{Name: "#4", Scope: Admin}, nil},
		{"", Principal{}, ErrNoToken},
		{"Bearer nope-nope-nope-nope", Principal{}, ErrBadToken},
		{"Basic aaaaaaaaaaaaaaaa", Principal{}, ErrBadToken},
		{"Bearer aaaaaaaaaaaaaaa", Principal{}, ErrBadToken}, // a prefix
	} {
		got, err := a.Authenticate(request(tc.header, "", ""))
		if got != tc.want || !errors.Is(err, tc.err) {
			t.Errorf("Authenticate(%q) = %+v, %v; want %+v, %v", tc.header, got, err, tc.want, tc.err)
		}
	}
	// The scopes are ordered: each includes the ones below it.
	for _, tc := range []struct {
		secret string
		need   Scope
		ok     bool
	}{
		{"wwwwwwwwwwwwwwww", Write, true},
		{"wwwwwwwwwwwwwwww", Exec, false},
		{"eeeeeeeeeeeeeeee", Exec, true},
		{"eeeeeeeeeeeeeeee", Admin, false},
		{"aaaaaaaaaaaaaaaa", Exec, true},
	} {
		_, err := a.Allow(request("Bearer "+tc.secret, "", ""), tc.need)
		var se *ScopeError
		if tc.ok != (err == nil) || !tc.ok && !errors.As(err, &se) {
			t.Errorf("Allow(%s, %v): %v", tc.secret[:1], tc.need, err)
		}
	}
	a.ReadOnly = true
	p, err := a.Allow(request("Bearer aaaaaaaaaaaaaaaa", "", ""), Write)
	var se *ScopeError
	if p.Scope != Read || !errors.As(err, &se) || !se.ReadOnly || !strings.Contains(err.Error(), "read-only") {
		t.Errorf("read-only admin token: %v, %v", p, err)
	}
	var open Auth
	if got, err := open.Authenticate(request("", "", "")); got != (Principal{Scope: Admin}) || err != nil || !open.Open() {
		t.Errorf("no tokens: %v, %v; want admin", got, err)
	}
	for s, name := range map[Scope]string{Read: "read", Write: "write", Exec: "exec", Admin: "admin"} {
		if got, err := ParseScope(strings.ToUpper(name)); got != s || err != nil || s.String() != name {
			t.Errorf("ParseScope(%q) = %v, %v", name, got, err)
		}
	}
}

// TestTokenSpecs: tokens are named in their spec or after where they were
// written; bad specs are refused with the place of the bad item (its line
// in a file), and never echo a secret.
func TestTokenSpecs(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ spec, err string }{
		{"read", "token #1: want [NAME=]SCOPE:SECRET"},
		{"read:rrrrrrrrrrrrrrrr,root:aaaaaaaaaaaaaaaa", `token #2: scope "root": want read, write, exec, admin or worker`},
		{"read:short", "token #1: secret shorter than 16"},
		{"read:has space in it!!", "token #1: secret must not contain spaces"},
		{"a b=read:rrrrrrrrrrrrrrrr", `token #1: token name "a b"`},
		{"=read:rrrrrrrrrrrrrrrr", `token #1: token name ""`},
		{"ops=read:rrrrrrrrrrrrrrrr,ops=admin:aaaaaaaaaaaaaaaa", "token #2: the name ops is taken"},
		{"one=read:rrrrrrrrrrrrrrrr,two=admin:rrrrrrrrrrrrrrrr", "token #2: same secret as token one"},
	} {
		var a Auth
		err := a.ParseTokens(tc.spec)
		if err == nil || !strings.Contains(err.Error(), tc.err) {
			t.Errorf("ParseTokens(%q): %v, want %q", tc.spec, err, tc.err)
		} else if strings.Contains(err.Error(), "rrrrrrrr") || strings.Contains(err.Error(), "aaaaaaaa") {
			t.Errorf("ParseTokens(%q): the error shows the secret: %v", tc.spec, err)
		}
	}

	var a Auth
	if err := a.ParseTokensFrom("$HOPPER_TOKENS", "read:rrrrrrrrrrrrrrrr,ci=write:wwwwwwwwwwwwwwww"); err != nil {
		t.Fatal(err)
	}
	if err := a.ParseTokens("admin:aaaaaaaaaaaaaaaa"); err != nil {
		t.Fatal(err)
	}
	if err := a.ParseTokensFrom("--token", "x=read:zzzzzzzzzzzzzzzz,read"); err == nil || !strings.HasPrefix(err.Error(), "--token #2: want") {
		t.Errorf("ParseTokensFrom: %v", err)
	}
	if a.Valid("zzzzzzzzzzzzzzzz") {
		t.Errorf("a spec with an error added its good tokens")
	}
	dir := t.TempDir()
	path := filepath.Join(dir, "tokens")
	os.WriteFile(path, []byte("# ops\nexec:eeeeeeeeeeeeeeee\n\nalice=read:1111111111111111\r\nread:2222222222222222, read:3333333333333333\n"), 0o600)
	if err := a.LoadFile(path); err != nil {
		t.Fatal(err)
	}
	for secret, name := range map[string]string{
		"rrrrrrrrrrrrrrrr": "$HOPPER_TOKENS#1",
		"wwwwwwwwwwwwwwww": "ci",
		"aaaaaaaaaaaaaaaa": "#3",
		"eeeeeeeeeeeeeeee": "tokens:2",
		"1111111111111111": "alice",
		"2222222222222222": "tokens:5",
		"3333333333333333": "tokens:5#2",
	} {
		if p, err := a.Authenticate(request("Bearer "+secret, "", "")); p.Name != name || err != nil {
			t.Errorf("token %s…: named %q (%v), want %q", secret[:4], p.Name, err, name)
		}
	}
	// Errors in a file name the line, not the token's position.
	os.WriteFile(path, []byte("# header\n\nread:4444444444444444\n# more\nwrite:short\n"), 0o600)
	var b Auth
	if err := b.LoadFile(path); err == nil || err.Error() != "tokens file "+path+": line 5: secret shorter than 16 characters" {
		t.Errorf("LoadFile: %v", err)
	}
	if !b.Open() {
		t.Errorf("a file with an error added its good tokens")
	}
}

// TestWorkerScopes: the worker scope stands beside the ladder: a worker
// token may do what needs Worker and nothing else, admin may do both,
// read, write and exec may not run jobs; a read-only Auth refuses worker
// tokens everything; a worker token is limited to the queues its spec
// names and cannot sign in to the dashboard.
func TestWorkerScopes(t *testing.T) {
	t.Parallel()
	a := Auth{Logger: quiet}
	if err := a.ParseTokens("read:rrrrrrrrrrrrrrrr,write:wwwwwwwwwwwwwwww,exec:eeeeeeeeeeeeeeee,admin:aaaaaaaaaaaaaaaa," +
		"w=worker:kkkkkkkkkkkkkkkk,mail=worker/emails/ reports:mmmmmmmmmmmmmmmm"); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		secret string
		need   Scope
		ok     bool
	}{
		{"kkkkkkkkkkkkkkkk", Worker, true},
		{"kkkkkkkkkkkkkkkk", Read, false},
		{"kkkkkkkkkkkkkkkk", Write, false},
		{"kkkkkkkkkkkkkkkk", Admin, false},
		{"aaaaaaaaaaaaaaaa", Worker, true},
		{"rrrrrrrrrrrrrrrr", Worker, false},
		{"wwwwwwwwwwwwwwww", Worker, false},
		{"eeeeeeeeeeeeeeee", Worker, false},
	} {
		_, err := a.Allow(request("Bearer "+tc.secret, "", ""), tc.need)
		var se *ScopeError
		if tc.ok != (err == nil) || !tc.ok && !errors.As(err, &se) {
			t.Errorf("Allow(%s, %v): %v", tc.secret[:1], tc.need, err)
		}
	}
	if q := a.Queues("mail"); len(q) != 2 || q[0] != "emails" || q[1] != "reports" {
		t.Errorf("queues of the mail token: %q", q)
	}
	if q := a.Queues("w"); q != nil {
		t.Errorf("queues of an unlimited worker token: %q", q)
	}
	if _, err := a.NewSession(request("", "", ""), "kkkkkkkkkkkkkkkk"); err == nil {
		t.Error("a worker token signed in to the dashboard")
	}
	for _, bad := range []string{"write/emails:xxxxxxxxxxxxxxxx", "worker/:xxxxxxxxxxxxxxxx", "worker/a//b:xxxxxxxxxxxxxxxx"} {
		if err := (&Auth{}).ParseTokens(bad); err == nil {
			t.Errorf("ParseTokens(%q) took it", bad)
		}
	}
	a.ReadOnly = true
	if _, err := a.Allow(request("Bearer kkkkkkkkkkkkkkkk", "", ""), Worker); err == nil {
		t.Error("a read-only Auth let a worker token work")
	}
	if _, err := a.Allow(request("Bearer kkkkkkkkkkkkkkkk", "", ""), Read); err == nil {
		t.Error("a read-only Auth let a worker token read")
	}
}
