package httpauth

import (
	"cmp"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// Sessions. A browser signs in to the dashboard with a token once; the
// cookie it gets holds no secret but
//
//	1.NAME.ISSUED.ID.MAC
//
// the token's name (base64url), the Unix time of the sign-in, a random ID
// of sidLen bytes (base64url), and an HMAC-SHA256 of the four under a key
// derived from the token's secret (Add). So a session is valid on every
// server holding the same token, across restarts; it ends when its
// lifetime since ISSUED is over, when the token is removed, renamed or
// given another secret (the MAC no longer matches), and when it is signed
// out (EndSession: this process refuses its ID until it would have
// expired anyway). The session's scope is its token's, as the token is
// now.

// maxSignOuts bounds the sign-outs an Auth remembers one by one (some 8
// MB): each sign-out is kept until its session would have expired, and a
// client holding any token could otherwise sign in and out until the
// server's memory ran out (a few hundred a second, for the 12 hours of a
// session). Beyond it, a sign-out ends every session of its token signed
// in until then (see EndSession).
const maxSignOuts = 100_000

// sidLen is the length of a session's random ID.
const sidLen = 16

// maxSkew is how far in the future a session's sign-in time may be: the
// clock of the server that signed it in may run ahead of this one's.
const maxSkew = time.Minute

var b64 = base64.RawURLEncoding

// Session is a signed-in browser's session, made by NewSession.
type Session struct {
	// Value is the cookie's value (CookieName): it holds no secret.
	Value string
	// Expires is when the session ends, unless signed out sooner.
	Expires time.Time
	// Principal is who signed in.
	Principal Principal
}

// NewSession signs r in with secret, a token's secret typed in a sign-in
// form: it returns the session to set as the CookieName cookie, or why
// not — ErrBadToken for a secret that is no token's, a *ThrottledError
// when r's address failed too often (the secret is then not checked). A
// refusal counts as a failure, as in Allow. With no tokens (Open) there is nothing to sign in to: it
// returns ErrNoToken.
func (a *Auth) NewSession(r *http.Request, secret string) (Session, error) {
	now := time.Now()
	if a.Open() {
		return Session{}, ErrNoToken
	}
	if err := a.throttled(r, now); err != nil {
		return Session{}, err
	}
	t := a.lookup(strings.TrimSpace(secret))
	if t == nil {
		return Session{}, a.refuse(r, ErrBadToken, now)
	}
	if t.scope == Worker { // for programs: the dashboard needs read
		err := &ScopeError{Have: Worker, Need: Read}
		a.failed(r, ReasonScope, err, now, "token", t.name)
		return Session{}, err
	}
	var sid [sidLen]byte
	rand.Read(sid[:])
	payload := "1." + b64.EncodeToString([]byte(t.name)) + "." + strconv.FormatInt(now.Unix(), 10) + "." + b64.EncodeToString(sid[:])
	return Session{
		Value:     payload + "." + b64.EncodeToString(sign(t.key, payload)),
		Expires:   time.Unix(now.Unix(), 0).Add(a.sessionLifetime()),
		Principal: Principal{Name: t.name, Scope: a.limit(t.scope), Session: true},
	}, nil
}

func sign(key []byte, payload string) []byte {
	mac := hmac.New(sha256.New, key)
	mac.Write([]byte(payload))
	return mac.Sum(nil)
}

// parsed is a session cookie's value, taken apart.
type parsed struct {
	name   string
	issued time.Time
	sid    [sidLen]byte
}

// session returns the session whose cookie holds value and its token, or
// ErrBadSession.
func (a *Auth) session(value string, now time.Time) (parsed, *token, error) {
	s, t, ok := a.verify(value)
	if !ok {
		return s, nil, ErrBadSession
	}
	if !now.Before(s.issued.Add(a.sessionLifetime())) || s.issued.After(now.Add(maxSkew)) {
		return s, nil, ErrBadSession
	}
	a.mu.Lock()
	_, revoked := a.revoked[s.sid]
	if cut, ok := a.ended[s.name]; ok && !s.issued.After(cut) {
		revoked = true
	}
	a.mu.Unlock()
	if revoked {
		return s, nil, ErrBadSession
	}
	return s, t, nil
}

// verify takes a cookie's value apart and checks its MAC against the key
// of the token it names.
func (a *Auth) verify(value string) (parsed, *token, bool) {
	var s parsed
	parts := strings.Split(value, ".")
	if len(parts) != 5 || parts[0] != "1" {
		return s, nil, false
	}
	name, err := b64.DecodeString(parts[1])
	if err != nil {
		return s, nil, false
	}
	issued, err := strconv.ParseInt(parts[2], 10, 64)
	if err != nil || issued < 0 {
		return s, nil, false
	}
	sid, err := b64.DecodeString(parts[3])
	if err != nil || len(sid) != sidLen {
		return s, nil, false
	}
	mac, err := b64.DecodeString(parts[4])
	if err != nil {
		return s, nil, false
	}
	var t *token
	for i := range a.tokens {
		if a.tokens[i].name == string(name) {
			t = &a.tokens[i]
		}
	}
	if t == nil || !hmac.Equal(mac, sign(t.key, value[:len(value)-len(parts[4])-1])) {
		return s, nil, false
	}
	s.name, s.issued = string(name), time.Unix(issued, 0)
	copy(s.sid[:], sid)
	return s, t, true
}

// EndSession signs out the session of r's cookie, if it holds a valid
// one, and returns who it was. From then on this Auth refuses the session
// until it would have expired anyway; other processes serving the same
// tokens, and this one after a restart, do not know of the sign-out (the
// browser forgets the cookie, though: a sign-out only matters against a
// copy of it). To end every session of a token everywhere, change the
// token's secret. It remembers up to 100,000 sign-outs of sessions not yet
// expired; beyond that, a sign-out ends every session of its token signed
// in until the second of the one signed out, the others' too.
func (a *Auth) EndSession(r *http.Request) (Principal, bool) {
	c, err := r.Cookie(CookieName)
	if err != nil {
		return Principal{}, false
	}
	now := time.Now()
	s, t, err := a.session(c.Value, now)
	if err != nil {
		return Principal{}, false
	}
	end := s.issued.Add(a.sessionLifetime())
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.revoked == nil {
		a.revoked = make(map[[sidLen]byte]time.Time)
		a.ended = make(map[string]time.Time)
	}
	// Forget the sessions that expired, now and then: when the sign-outs
	// doubled, or a lifetime after the last time.
	if len(a.revoked) >= a.nextPrune || now.Sub(a.lastPrune) >= a.sessionLifetime() {
		for sid, until := range a.revoked {
			if !now.Before(until) {
				delete(a.revoked, sid)
			}
		}
		for name, cut := range a.ended {
			if !now.Before(cut.Add(a.sessionLifetime())) {
				delete(a.ended, name)
			}
		}
		a.nextPrune, a.lastPrune = max(1024, 2*len(a.revoked)), now
	}
	if len(a.revoked) < cmp.Or(a.signOuts, maxSignOuts) {
		a.revoked[s.sid] = end
	} else if s.issued.After(a.ended[t.name]) {
		a.ended[t.name] = s.issued
	}
	return Principal{Name: t.name, Scope: a.limit(t.scope), Session: true}, true
}
