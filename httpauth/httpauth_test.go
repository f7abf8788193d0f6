package httpauth

import (
	"errors"
	"net/http"
	"os"
	"path/filepath"
	"testing"
)

func TestScopes(t *testing.T) {
	t.Parallel()
	var a Auth
	if err := a.ParseTokens("read:rrrrrrrrrrrrrrrr, write:wwwwwwwwwwwwwwww\nadmin:aaaaaaaaaaaaaaaa"); err != nil {
		t.Fatal(err)
	}
	req := func(header, cookie string) *http.Request {
		r, _ := http.NewRequest(http.MethodGet, "/", nil)
		if header != "" {
			r.Header.Set("Authorization", header)
		}
		if cookie != "" {
			r.AddCookie(&http.Cookie{Name: CookieName, Value: cookie})
		}
		return r
	}
	for _, tc := range []struct {
		header, cookie string
		want           Scope
		err            error
	}{
		{"Bearer rrrrrrrrrrrrrrrr", "", Read, nil},
		{"bearer wwwwwwwwwwwwwwww", "", Write, nil},
		{"Bearer aaaaaaaaaaaaaaaa", "", Admin, nil},
		{"", "aaaaaaaaaaaaaaaa", Admin, nil},
		{"", "", None, ErrNoToken},
		{"Bearer nope-nope-nope-nope", "", None, ErrBadToken},
		{"Basic aaaaaaaaaaaaaaaa", "", None, ErrBadToken},
		{"Bearer aaaaaaaaaaaaaaa", "", None, ErrBadToken}, // a prefix
	} {
		got, err := a.Scope(req(tc.header, tc.cookie))
		if got != tc.want || !errors.Is(err, tc.err) {
			t.Errorf("Scope(%q, cookie %q) = %v, %v; want %v, %v", tc.header, tc.cookie, got, err, tc.want, tc.err)
		}
	}
	a.ReadOnly = true
	if got, _ := a.Scope(req("Bearer aaaaaaaaaaaaaaaa", "")); got != Read {
		t.Errorf("read-only admin token: %v, want read", got)
	}
	var open Auth
	if got, err := open.Scope(req("", "")); got != Admin || err != nil || !open.Open() {
		t.Errorf("no tokens: %v, %v; want admin", got, err)
	}
}

func TestBadTokens(t *testing.T) {
	t.Parallel()
	for _, spec := range []string{"read", "root:aaaaaaaaaaaaaaaa", "read:short", "read:has space in it!!"} {
		var a Auth
		if err := a.ParseTokens(spec); err == nil {
			t.Errorf("ParseTokens(%q): want an error", spec)
		}
	}
	path := filepath.Join(t.TempDir(), "tokens")
	os.WriteFile(path, []byte("# ops\nadmin:aaaaaaaaaaaaaaaa\n\nread:rrrrrrrrrrrrrrrr\n"), 0o600)
	var a Auth
	if err := a.LoadFile(path); err != nil || !a.Valid("rrrrrrrrrrrrrrrr") || a.Valid("zzzzzzzzzzzzzzzz") {
		t.Errorf("LoadFile: %v", err)
	}
}
