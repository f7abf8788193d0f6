package httpauth

import (
	"errors"
	"net/http"
	"strings"
	"testing"
	"testing/synctest"
	"time"
)

const (
	opsSecret    = "ops-secret-0123456789"
	viewerSecret = "viewer-secret-0123456789"
)

// auth returns an Auth with spec's tokens.
func auth(t *testing.T, spec string) *Auth {
	t.Helper()
	a := &Auth{Logger: quiet}
	if err := a.ParseTokens(spec); err != nil {
		t.Fatal(err)
	}
	return a
}

// TestSessions: a session cookie holds no secret, signs the browser in
// with its token's name and scope on every server holding the token, and
// ends at sign-out (on the server that signed out), at the end of its
// lifetime, and when its token changes or goes.
func TestSessions(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		tokens := "ops=admin:" + opsSecret + ",viewer=read:" + viewerSecret
		a := auth(t, tokens)
		a.SessionLifetime = time.Hour
		s, err := a.NewSession(request("", "", ""), " "+opsSecret+" ")
		if err != nil {
			t.Fatal(err)
		}
		if strings.Contains(s.Value, opsSecret) || strings.Contains(s.Value, "ops-secret") {
			t.Fatalf("the cookie holds the secret: %s", s.Value)
		}
		want := Principal{Name: "ops", Scope: Admin, Session: true}
		if s.Principal != want || !s.Expires.Equal(time.Now().Add(time.Hour)) {
			t.Errorf("session: %+v, expires %v", s.Principal, s.Expires)
		}
		valid := func(a *Auth, value string) error {
			t.Helper()
			p, err := a.Authenticate(request("", value, ""))
			if err == nil && p != want {
				t.Errorf("session of %+v", p)
			}
			return err
		}
		if err := valid(a, s.Value); err != nil {
			t.Fatalf("the session does not sign in: %v", err)
		}
		// Another server with the same tokens, or this one restarted.
		if err := valid(auth(t, tokens), s.Value); err != nil {
			t.Errorf("another Auth with the same tokens: %v", err)
		}
		// The token changed, went, or was renamed.
		for _, other := range []string{
			"ops=admin:another-secret-0123456789,viewer=read:" + viewerSecret,
			"viewer=read:" + viewerSecret,
			"root=admin:" + opsSecret,
		} {
			if err := valid(auth(t, other), s.Value); !errors.Is(err, ErrBadSession) {
				t.Errorf("tokens %q: %v, want ErrBadSession", other, err)
			}
		}
		// Forged, altered or cut cookies; the secret itself.
		parts := strings.Split(s.Value, ".")
		viewer := b64.EncodeToString([]byte("viewer"))
		for _, v := range []string{
			strings.Join([]string{parts[0], viewer, parts[2], parts[3], parts[4]}, "."),
			strings.Join([]string{parts[0], parts[1], "99999999999", parts[3], parts[4]}, "."),
			strings.Join([]string{"2", parts[1], parts[2], parts[3], parts[4]}, "."),
			strings.Join(parts[:4], "."),
			s.Value + "x",
			opsSecret,
		} {
			if err := valid(a, v); !errors.Is(err, ErrBadSession) {
				t.Errorf("cookie %q: %v, want ErrBadSession", v, err)
			}
		}
		// The cookie of old versions held the token: it is not read.
		r := request("", "", "")
		r.AddCookie(&http.Cookie{Name: "hopper_token", Value: opsSecret})
		if _, err := a.Authenticate(r); !errors.Is(err, ErrNoToken) {
			t.Errorf("old hopper_token cookie: %v, want ErrNoToken", err)
		}
		// Read-only caps a session, as it caps a token.
		ro := auth(t, tokens)
		ro.ReadOnly = true
		if p, _ := ro.Authenticate(request("", s.Value, "")); p.Scope != Read {
			t.Errorf("read-only: %v", p.Scope)
		}

		// Sign-out ends the session here, not on another server.
		other := auth(t, tokens)
		if p, ok := a.EndSession(request("", s.Value, "")); !ok || p != want {
			t.Errorf("EndSession: %+v, %v", p, ok)
		}
		if err := valid(a, s.Value); !errors.Is(err, ErrBadSession) {
			t.Errorf("after sign-out: %v", err)
		}
		if _, ok := a.EndSession(request("", s.Value, "")); ok {
			t.Errorf("EndSession of an ended session: ok")
		}
		if err := valid(other, s.Value); err != nil {
			t.Errorf("another server after the sign-out: %v", err)
		}

		// The lifetime.
		s2, err := a.NewSession(request("", "", ""), opsSecret)
		if err != nil {
			t.Fatal(err)
		}
		time.Sleep(time.Hour - time.Second)
		if err := valid(a, s2.Value); err != nil {
			t.Errorf("a second before its end: %v", err)
		}
		time.Sleep(time.Second)
		if err := valid(a, s2.Value); !errors.Is(err, ErrBadSession) {
			t.Errorf("at its end: %v", err)
		}
		// Shortening the lifetime ends the older sessions.
		s3, _ := a.NewSession(request("", "", ""), opsSecret)
		time.Sleep(10 * time.Minute)
		a.SessionLifetime = 5 * time.Minute
		if err := valid(a, s3.Value); !errors.Is(err, ErrBadSession) {
			t.Errorf("older than the new lifetime: %v", err)
		}

		if _, err := a.NewSession(request("", "", ""), "wrong-secret-0123456789"); !errors.Is(err, ErrBadToken) {
			t.Errorf("a wrong secret: %v", err)
		}
		var open Auth
		if _, err := open.NewSession(request("", "", ""), opsSecret); !errors.Is(err, ErrNoToken) {
			t.Errorf("no tokens: %v", err)
		}
	})
}

// TestSignOutsForgotten: the sign-outs are kept until the sessions would
// have expired, then forgotten.
func TestSignOutsForgotten(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		a := auth(t, "ops=admin:"+opsSecret)
		a.SessionLifetime = time.Hour
		for range 1100 {
			s, _ := a.NewSession(request("", "", ""), opsSecret)
			a.EndSession(request("", s.Value, ""))
		}
		time.Sleep(time.Hour)
		s, _ := a.NewSession(request("", "", ""), opsSecret)
		a.EndSession(request("", s.Value, ""))
		if n := len(a.revoked); n > 1024 {
			t.Errorf("%d sign-outs kept after their sessions expired", n)
		}
	})
}

// TestSignOutsBounded: the sign-outs remembered one by one are bounded (a
// client holding a token could otherwise sign in and out until the
// server's memory ran out); beyond the bound, a sign-out ends every
// session of its token signed in until then, and no other token's, and
// that too is forgotten once those sessions would have expired.
func TestSignOutsBounded(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		a := auth(t, "ops=admin:"+opsSecret+",viewer=read:"+viewerSecret)
		a.SessionLifetime, a.signOuts = time.Hour, 10
		signIn := func(secret string) string {
			t.Helper()
			s, err := a.NewSession(request("", "", ""), secret)
			if err != nil {
				t.Fatal(err)
			}
			return s.Value
		}
		valid := func(cookie string) bool {
			_, err := a.Authenticate(request("", cookie, ""))
			return err == nil
		}
		kept, other := signIn(opsSecret), signIn(viewerSecret)
		time.Sleep(time.Second)
		for range 10 {
			a.EndSession(request("", signIn(opsSecret), ""))
		}
		if !valid(kept) || len(a.revoked) != 10 {
			t.Fatalf("10 sign-outs: %d remembered, the session signed in before valid: %v", len(a.revoked), valid(kept))
		}
		time.Sleep(time.Second)
		last := signIn(opsSecret)
		if _, ok := a.EndSession(request("", last, "")); !ok {
			t.Fatal("the 11th sign-out failed")
		}
		if len(a.revoked) > 10 {
			t.Errorf("%d sign-outs remembered one by one, beyond the bound of 10", len(a.revoked))
		}
		if valid(last) || valid(kept) {
			t.Errorf("beyond the bound, the session signed out is valid: %v; one of its token signed in before: %v", valid(last), valid(kept))
		}
		if !valid(other) {
			t.Error("another token's session ended")
		}
		time.Sleep(time.Second)
		if later := signIn(opsSecret); !valid(later) {
			t.Error("a session signed in after the sign-out is refused")
		}
		time.Sleep(time.Hour)
		a.EndSession(request("", signIn(opsSecret), ""))
		if len(a.ended) != 0 {
			t.Errorf("the token's cut is kept after its sessions expired: %v", a.ended)
		}
	})
}
