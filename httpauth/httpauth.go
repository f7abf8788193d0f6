// Package httpauth checks the bearer tokens of Hopper's HTTP API and
// dashboard. A token grants a scope: read (inspect), write (enqueue, cancel,
// reschedule, retry, pause and resume schedules) or admin (also purge and
// delete jobs, add and remove schedules). Tokens come from flags, the
// environment or a file, are compared in constant time, and travel in the
// Authorization header (API clients) or in a cookie set by the dashboard's
// sign-in form (browsers).
package httpauth

import (
	"bufio"
	"crypto/sha256"
	"crypto/subtle"
	"errors"
	"fmt"
	"net/http"
	"os"
	"strings"
)

// Scope is what a token may do; each scope includes the ones below it.
type Scope int

// The scopes, weakest first.
const (
	None  Scope = iota // no valid token
	Read               // list, get, count, stats, schedules: nothing changes
	Write              // also enqueue, cancel, reschedule, retry, pause, resume
	Admin              // also purge, delete, add and remove schedules
)

var scopeNames = [...]string{None: "none", Read: "read", Write: "write", Admin: "admin"}

// String returns "read", "write", "admin" or "none".
func (s Scope) String() string {
	if s >= None && s <= Admin {
		return scopeNames[s]
	}
	return fmt.Sprintf("scope(%d)", int(s))
}

// ParseScope parses "read", "write" or "admin".
func ParseScope(s string) (Scope, error) {
	for sc := Read; sc <= Admin; sc++ {
		if scopeNames[sc] == strings.ToLower(strings.TrimSpace(s)) {
			return sc, nil
		}
	}
	return None, fmt.Errorf("scope %q: want read, write or admin", s)
}

// CookieName is the cookie the dashboard's sign-in form sets to a token.
const CookieName = "hopper_token"

// Auth decides what a request may do. The zero value has no tokens and
// grants every request Admin: for a server listening on loopback only
// (the hopper command refuses to listen further without tokens unless told
// to).
type Auth struct {
	tokens []token
	// ReadOnly caps every request at Read, whatever its token.
	ReadOnly bool
}

type token struct {
	name  string
	sum   [sha256.Size]byte // of the secret: compared in constant time, whatever its length
	scope Scope
}

// MinSecretLen is the shortest secret Add accepts.
const MinSecretLen = 16

// Add adds a token with its secret and scope; name labels it in logs.
func (a *Auth) Add(name, secret string, scope Scope) error {
	if len(secret) < MinSecretLen {
		return fmt.Errorf("token %s: secret shorter than %d characters", name, MinSecretLen)
	}
	if strings.ContainsAny(secret, " \t\r\n,;") {
		return fmt.Errorf("token %s: secret must not contain spaces, commas or semicolons", name)
	}
	if scope < Read || scope > Admin {
		return fmt.Errorf("token %s: bad scope %v", name, scope)
	}
	a.tokens = append(a.tokens, token{name: name, sum: sha256.Sum256([]byte(secret)), scope: scope})
	return nil
}

// Open reports whether a has no tokens: every request is granted Admin (or
// Read with ReadOnly).
func (a *Auth) Open() bool { return len(a.tokens) == 0 }

// ParseTokens adds tokens written as "SCOPE:SECRET" items separated by
// commas or newlines, as the --token flag and HOPPER_TOKENS take them.
func (a *Auth) ParseTokens(spec string) error {
	n := 0
	for _, item := range strings.FieldsFunc(spec, func(r rune) bool { return r == ',' || r == '\n' }) {
		item = strings.TrimSpace(item)
		if item == "" || strings.HasPrefix(item, "#") {
			continue
		}
		n++
		sc, secret, ok := strings.Cut(item, ":")
		if !ok {
			return fmt.Errorf("token #%d: want SCOPE:SECRET, such as read:%s", n, strings.Repeat("x", MinSecretLen))
		}
		scope, err := ParseScope(sc)
		if err != nil {
			return fmt.Errorf("token #%d: %w", n, err)
		}
		if err := a.Add(fmt.Sprintf("#%d", n), strings.TrimSpace(secret), scope); err != nil {
			return err
		}
	}
	return nil
}

// LoadFile adds the tokens of a file: one "SCOPE:SECRET" per line, blank
// lines and lines starting with # ignored.
func (a *Auth) LoadFile(path string) error {
	f, err := os.Open(path)
	if err != nil {
		return fmt.Errorf("tokens file: %w", err)
	}
	defer f.Close()
	var b strings.Builder
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		b.WriteString(sc.Text())
		b.WriteByte('\n')
	}
	if err := sc.Err(); err != nil {
		return fmt.Errorf("tokens file %s: %w", path, err)
	}
	if err := a.ParseTokens(b.String()); err != nil {
		return fmt.Errorf("tokens file %s: %w", path, err)
	}
	return nil
}

// ErrNoToken and ErrBadToken are why Scope grants nothing: no token came
// with the request, or the one that came is not known.
var (
	ErrNoToken  = errors.New("authentication required: send Authorization: Bearer TOKEN")
	ErrBadToken = errors.New("invalid token")
)

// Scope returns what r may do: the scope of its token (from the
// Authorization header, else the dashboard's cookie), capped at Read in
// ReadOnly mode; Admin (or Read) when a is open. It returns None and
// ErrNoToken or ErrBadToken when r may do nothing.
func (a *Auth) Scope(r *http.Request) (Scope, error) {
	limit := Admin
	if a.ReadOnly {
		limit = Read
	}
	if a.Open() {
		return limit, nil
	}
	secret := ""
	if h := r.Header.Get("Authorization"); h != "" {
		kind, s, ok := strings.Cut(h, " ")
		if !ok || !strings.EqualFold(kind, "Bearer") {
			return None, ErrBadToken
		}
		secret = strings.TrimSpace(s)
	} else if c, err := r.Cookie(CookieName); err == nil {
		secret = c.Value
	}
	if secret == "" {
		return None, ErrNoToken
	}
	sum := sha256.Sum256([]byte(secret))
	found := None
	for _, t := range a.tokens { // every token compared: the time does not say which matched
		if subtle.ConstantTimeCompare(sum[:], t.sum[:]) == 1 {
			found = t.scope
		}
	}
	if found == None {
		return None, ErrBadToken
	}
	return min(found, limit), nil
}

// Valid reports whether secret is one of a's tokens, for a sign-in form.
func (a *Auth) Valid(secret string) bool {
	r, _ := http.NewRequest(http.MethodGet, "/", nil)
	r.Header.Set("Authorization", "Bearer "+secret)
	s, err := a.Scope(r)
	return err == nil && s > None
}
