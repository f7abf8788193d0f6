// Package httpauth decides who may do what through Hopper's HTTP API and
// dashboard, from where, and records who did what.
//
// A token is a named secret with a scope: read (inspect), write (also
// enqueue, cancel, reschedule, retry, pause and resume schedules), exec
// (also enqueue jobs of the exec kind, which run commands on the server)
// or admin (also purge and delete jobs, add and remove schedules). Each
// scope includes the ones below it. Tokens come from flags, the
// environment or a file ("NAME=SCOPE:SECRET"), are compared in constant
// time, and travel in the Authorization header (API clients). Browsers
// sign in to the dashboard with a token once and then hold a session: a
// cookie with the token's name, the time of the sign-in and a random ID,
// signed with a key derived from the token's secret — never the secret
// itself (see NewSession).
//
// Auth.Allow is the check every handler makes: it answers who made a
// request (a Principal, the token's name and scope) or why not, logs
// failures at a bounded rate, reports them to a hook (for metrics), and
// answers an address that keeps failing with ErrThrottled. Audit logs what
// authenticated requests did; HostCheck refuses requests whose Host header
// names a host the server does not answer to (DNS rebinding).
package httpauth

import (
	"crypto/hmac"
	"crypto/sha256"
	"crypto/subtle"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"time"
)

// Scope is what a token may do. Read, Write, Exec and Admin form a ladder,
// each including the ones below it; Worker stands beside it: a worker
// token may run jobs over the worker protocol (register, fetch, heartbeat,
// complete, fail) and nothing else — not even read — and of the ladder
// only Admin may run jobs too (Includes).
type Scope int

// The scopes, weakest first. Their values are not stable across
// versions: compare them with Includes, never with numbers.
const (
	None   Scope = iota // no valid token
	Worker              // only the worker protocol: run jobs of its queues
	Read                // list, get, count, stats, schedules: nothing changes
	Write               // also enqueue, cancel, reschedule, retry, pause, resume
	Exec                // also enqueue jobs of the exec kind: commands run on the server
	Admin               // also purge, delete, add and remove schedules; and the worker protocol
)

var scopeNames = [...]string{None: "none", Worker: "worker", Read: "read", Write: "write", Exec: "exec", Admin: "admin"}

// String returns "read", "write", "exec", "admin", "worker" or "none".
func (s Scope) String() string {
	if s >= None && s <= Admin {
		return scopeNames[s]
	}
	return fmt.Sprintf("scope(%d)", int(s))
}

// Includes reports whether a request of scope s may do what needs need:
// Worker needs a worker or admin token; Read and above need that rung of
// the ladder or a higher one, which a worker token is not on; None needs
// nothing.
func (s Scope) Includes(need Scope) bool {
	switch {
	case need == None:
		return true
	case need == Worker:
		return s == Worker || s == Admin
	case s == Worker:
		return false
	}
	return s >= need
}

// ParseScope parses "read", "write", "exec", "admin" or "worker", in any
// case.
func ParseScope(s string) (Scope, error) {
	for sc := Worker; sc <= Admin; sc++ {
		if scopeNames[sc] == strings.ToLower(strings.TrimSpace(s)) {
			return sc, nil
		}
	}
	return None, fmt.Errorf("scope %q: want read, write, exec, admin or worker", s)
}

// CookieName is the cookie that holds a dashboard session (NewSession).
// Before sessions, a cookie named "hopper_token" held the token itself;
// that cookie is no longer read.
const CookieName = "hopper_session"

// Defaults of Auth's fields.
const (
	// DefaultSessionLifetime is how long a dashboard sign-in lasts.
	DefaultSessionLifetime = 12 * time.Hour
	// DefaultMaxFailures is how many failed authentications an address
	// may make within DefaultFailureWindow before its tokens and sign-ins
	// are answered with ErrThrottled.
	DefaultMaxFailures = 10
	// DefaultFailureWindow is the window DefaultMaxFailures counts in.
	DefaultFailureWindow = time.Minute
)

// Auth decides what a request may do. The zero value has no tokens and
// grants every request Admin: for a server listening on loopback only
// (the hopper command refuses to listen further without tokens unless told
// to), behind a HostCheck. Set the fields and add the tokens before
// serving; an Auth must not be copied once used. Its methods are safe for
// concurrent use.
type Auth struct {
	// ReadOnly caps every request at Read, whatever its token.
	ReadOnly bool
	// SessionLifetime is how long a session lasts from its sign-in
	// (default DefaultSessionLifetime, 12h). It applies to the sessions
	// already given: shortening it ends those older than the new
	// lifetime.
	SessionLifetime time.Duration
	// MaxFailures is how many failed authentications (an unknown token, a
	// refused sign-in: guesses of a secret) one address may make within
	// FailureWindow; beyond it, every bearer token and sign-in of the
	// address gets ErrThrottled until the window ends, unchecked, so that a
	// right guess is refused like the others; its sessions keep working
	// (default DefaultMaxFailures, 10; negative: no limit). An
	// invalid session does not count: no one guesses a signed one, and a
	// tab left open past its session's end must not lock its user out.
	// Addresses are the requests' RemoteAddr, IPv6 ones by /64: behind a
	// proxy every client has the proxy's.
	MaxFailures int
	// FailureWindow is the window of MaxFailures (default
	// DefaultFailureWindow, 1m).
	FailureWindow time.Duration
	// Logger receives the failures (401, 403, 429), at most a burst of
	// logBurst lines a minute and then one line that counts the rest
	// (default slog.Default()). It never receives a secret.
	Logger *slog.Logger
	// OnFailure, if set, is called for every failure with its reason, one
	// of Reasons (for metrics: hopper_http_auth_failures_total). It must
	// be fast and must not block.
	OnFailure func(reason string)

	tokens []token

	mu        sync.Mutex
	revoked   map[[sidLen]byte]time.Time // ended sessions, until they would have expired
	ended     map[string]time.Time       // by token name: its sessions signed in until then are ended (EndSession beyond maxSignOuts)
	nextPrune int                        // prune revoked when it has that many
	lastPrune time.Time                  // or a lifetime after this
	signOuts  int                        // the bound of revoked; 0: maxSignOuts (tests lower it)
	fails     failures
	logs      logLimiter
}

// token is one of an Auth's tokens.
type token struct {
	name  string
	sum   [sha256.Size]byte // of the secret: compared in constant time, whatever its length
	key   []byte            // signs its sessions; derived from the secret
	scope Scope
	// queues, for a Worker token, are the only queues it may work (nil:
	// every queue).
	queues []string
}

// MinSecretLen is the shortest secret Add accepts.
const MinSecretLen = 16

// maxNameLen bounds a token's name.
const maxNameLen = 128

// Add adds a token: its name (which the logs show; unique, printable, no
// spaces), its secret and its scope. Two tokens may not share a name or a
// secret.
func (a *Auth) Add(name, secret string, scope Scope) error {
	if err := a.add(name, secret, scope, nil); err != nil {
		return fmt.Errorf("token %s: %w", name, err)
	}
	return nil
}

// AddWorker adds a token of scope Worker that may work only queues (none:
// every queue): its workers register for those queues alone.
func (a *Auth) AddWorker(name, secret string, queues []string) error {
	if err := a.add(name, secret, Worker, queues); err != nil {
		return fmt.Errorf("token %s: %w", name, err)
	}
	return nil
}

// add is Add, with errors that do not name the token (the parsers name
// it by where it was written).
func (a *Auth) add(name, secret string, scope Scope, queues []string) error {
	switch {
	case name == "" || len(name) > maxNameLen:
		return fmt.Errorf("name %q: want 1 to %d characters", name, maxNameLen)
	case strings.IndexFunc(name, func(r rune) bool { return r <= ' ' || r == 0x7f }) >= 0:
		return fmt.Errorf("name %q: must not contain spaces or control characters", name)
	case len(secret) < MinSecretLen:
		return fmt.Errorf("secret shorter than %d characters", MinSecretLen)
	case strings.ContainsAny(secret, " \t\r\n,;"):
		return fmt.Errorf("secret must not contain spaces, commas or semicolons")
	case scope < Worker || scope > Admin:
		return fmt.Errorf("bad scope %v", scope)
	case len(queues) > 0 && scope != Worker:
		return fmt.Errorf("only a worker token is limited to queues")
	}
	for _, q := range queues {
		if strings.TrimSpace(q) == "" {
			return fmt.Errorf("an empty queue name")
		}
	}
	sum := sha256.Sum256([]byte(secret))
	for _, t := range a.tokens {
		if t.name == name {
			return fmt.Errorf("the name %s is taken by another token", name)
		}
		if t.sum == sum {
			return fmt.Errorf("same secret as token %s", t.name)
		}
	}
	mac := hmac.New(sha256.New, []byte(secret))
	mac.Write([]byte("hopper dashboard session key v1"))
	a.tokens = append(a.tokens, token{name: name, sum: sum, key: mac.Sum(nil), scope: scope, queues: queues})
	return nil
}

// Open reports whether a has no tokens: every request is granted Admin (or
// Read with ReadOnly).
func (a *Auth) Open() bool { return len(a.tokens) == 0 }

// Principal is who made a request: the name of its token and what it may
// do.
type Principal struct {
	// Name is the token's name; "" when the Auth has no tokens.
	Name string
	// Scope is what the request may do (capped at Read by ReadOnly).
	Scope Scope
	// Session is set when the request came with a dashboard session
	// rather than the token itself.
	Session bool
}

// Queues returns the queues the worker token named name is limited to
// (nil: every queue, or no such worker token).
func (a *Auth) Queues(name string) []string {
	for i := range a.tokens {
		if a.tokens[i].name == name {
			return a.tokens[i].queues
		}
	}
	return nil
}

// Why requests are refused. ErrNoToken, ErrBadToken and ErrBadSession are
// 401s; a *ScopeError is a 403; ErrThrottled (a *ThrottledError) a 429.
var (
	ErrNoToken    = errors.New("authentication required: send Authorization: Bearer TOKEN")
	ErrBadToken   = errors.New("invalid token")
	ErrBadSession = errors.New("the session has ended (it expired, was signed out, or its token changed): sign in again")
	ErrThrottled  = errors.New("too many failed authentications from this address")
)

// ScopeError is why a request whose token is valid is refused: its scope
// is below what the operation needs, or the Auth is ReadOnly.
type ScopeError struct {
	Have, Need Scope
	// ReadOnly: the Auth is read-only, whatever the token.
	ReadOnly bool
}

// Error implements error.
func (e *ScopeError) Error() string {
	if e.ReadOnly {
		return "the server is read-only (--read-only, or Auth.ReadOnly): it takes no " + e.Need.String() + " operation, whatever the token"
	}
	return "this token has " + e.Have.String() + " scope; this operation needs " + e.Need.String()
}

// ThrottledError is the error of a failing request from an address that
// failed too often (Auth.MaxFailures): answer 429 with Retry-After. It
// matches ErrThrottled with errors.Is.
type ThrottledError struct {
	// RetryAfter is how long until the address's window ends.
	RetryAfter time.Duration
}

// Error implements error.
func (e *ThrottledError) Error() string {
	return fmt.Sprintf("%v: try again in %s", ErrThrottled, e.RetryAfter.Round(time.Second))
}

// Is reports whether target is ErrThrottled.
func (e *ThrottledError) Is(target error) bool { return target == ErrThrottled }

// RetryAfterSeconds is RetryAfter in whole seconds, rounded up, for a
// Retry-After header.
func (e *ThrottledError) RetryAfterSeconds() int {
	return int((e.RetryAfter + time.Second - 1) / time.Second)
}

// Authenticate returns who r is, from its Authorization header (a bearer
// token) or else its session cookie (CookieName), with the scope capped at
// Read in ReadOnly mode; with no tokens, an unnamed Principal with Admin
// (or Read). It returns ErrNoToken, ErrBadToken or ErrBadSession when r
// is no one. It has no side effects: handlers call Allow.
func (a *Auth) Authenticate(r *http.Request) (Principal, error) {
	return a.authenticate(r, time.Now())
}

func (a *Auth) authenticate(r *http.Request, now time.Time) (Principal, error) {
	if a.Open() {
		return Principal{Scope: a.limit(Admin)}, nil
	}
	if h := r.Header.Get("Authorization"); h != "" {
		kind, s, ok := strings.Cut(h, " ")
		if !ok || !strings.EqualFold(kind, "Bearer") {
			return Principal{}, ErrBadToken
		}
		t := a.lookup(strings.TrimSpace(s))
		if t == nil {
			return Principal{}, ErrBadToken
		}
		return Principal{Name: t.name, Scope: a.limit(t.scope)}, nil
	}
	if c, err := r.Cookie(CookieName); err == nil && c.Value != "" {
		_, t, err := a.session(c.Value, now)
		if err != nil {
			return Principal{}, err
		}
		return Principal{Name: t.name, Scope: a.limit(t.scope), Session: true}, nil
	}
	return Principal{}, ErrNoToken
}

// limit caps s at Read in ReadOnly mode, where a worker token, which
// would change jobs, may do nothing.
func (a *Auth) limit(s Scope) Scope {
	switch {
	case !a.ReadOnly:
		return s
	case s == Worker:
		return None
	}
	return min(s, Read)
}

// lookup returns the token whose secret is secret, or nil.
func (a *Auth) lookup(secret string) *token {
	if secret == "" {
		return nil
	}
	sum := sha256.Sum256([]byte(secret))
	var found *token
	for i := range a.tokens { // every token compared: the time does not say which matched
		if subtle.ConstantTimeCompare(sum[:], a.tokens[i].sum[:]) == 1 {
			found = &a.tokens[i]
		}
	}
	return found
}

// Scope returns what r may do: Authenticate's scope and error.
func (a *Auth) Scope(r *http.Request) (Scope, error) {
	p, err := a.Authenticate(r)
	return p.Scope, err
}

// Valid reports whether secret is one of a's tokens. It has no side
// effects; a sign-in form calls NewSession.
func (a *Auth) Valid(secret string) bool { return a.lookup(secret) != nil }

// Allow returns who r is if r may do what needs scope need; else the
// error to answer with: ErrNoToken, ErrBadToken or ErrBadSession (401), a
// *ScopeError (403) or a *ThrottledError (429) when r's address failed
// too often. Every failure is logged (at a bounded rate) and reported to
// OnFailure; unknown tokens count towards MaxFailures, and once an address
// exceeds them its bearer tokens, valid or not, get the *ThrottledError
// until the window ends (its sessions still work).
func (a *Auth) Allow(r *http.Request, need Scope) (Principal, error) {
	now := time.Now()
	if r.Header.Get("Authorization") != "" && !a.Open() {
		if err := a.throttled(r, now); err != nil {
			return Principal{}, err
		}
	}
	p, err := a.authenticate(r, now)
	if err != nil {
		return p, a.refuse(r, err, now)
	}
	if !p.Scope.Includes(need) {
		err := &ScopeError{Have: p.Scope, Need: need, ReadOnly: a.ReadOnly && (need > Read || need == Worker)}
		a.failed(r, ReasonScope, err, now, "token", p.Name)
		return p, err
	}
	return p, nil
}

// refuse records the authentication failure err of r and returns the
// error to answer with: err, or a *ThrottledError.
func (a *Auth) refuse(r *http.Request, err error, now time.Time) error {
	reason := ReasonNoToken
	switch err {
	case ErrBadToken:
		reason = ReasonBadToken
	case ErrBadSession:
		reason = ReasonBadSession
	}
	if reason == ReasonBadToken {
		if wait, first := a.fails.add(r.RemoteAddr, now, a.maxFailures(), a.failureWindow()); wait > 0 {
			if first {
				a.failed(r, ReasonThrottled, err, now, "retry_after", wait.Round(time.Second))
			} else if a.OnFailure != nil {
				a.OnFailure(ReasonThrottled)
			}
			return &ThrottledError{RetryAfter: wait}
		}
	}
	a.failed(r, reason, err, now)
	return err
}

// throttled returns a *ThrottledError, counted as a failure, if r's
// address failed too often in the current window: its bearer tokens and
// sign-ins are then not checked at all, valid or not, so that the limit
// slows guessing. Sessions are still honoured (a signed session is not
// guessed, and a signed-in user behind the same address keeps working).
func (a *Auth) throttled(r *http.Request, now time.Time) error {
	wait := a.fails.blocked(r.RemoteAddr, now, a.maxFailures(), a.failureWindow())
	if wait <= 0 {
		return nil
	}
	if a.OnFailure != nil {
		a.OnFailure(ReasonThrottled)
	}
	return &ThrottledError{RetryAfter: wait}
}

func (a *Auth) maxFailures() int {
	if a.MaxFailures == 0 {
		return DefaultMaxFailures
	}
	return a.MaxFailures
}

func (a *Auth) failureWindow() time.Duration {
	if a.FailureWindow <= 0 {
		return DefaultFailureWindow
	}
	return a.FailureWindow
}

func (a *Auth) sessionLifetime() time.Duration {
	if a.SessionLifetime <= 0 {
		return DefaultSessionLifetime
	}
	return a.SessionLifetime
}

func (a *Auth) logger() *slog.Logger {
	if a.Logger == nil {
		return slog.Default()
	}
	return a.Logger
}

// failed logs a failure (at a bounded rate) and reports it to OnFailure.
func (a *Auth) failed(r *http.Request, reason string, err error, now time.Time, attrs ...any) {
	if a.OnFailure != nil {
		a.OnFailure(reason)
	}
	msg := "http: authentication failed"
	level := slog.LevelWarn
	switch reason {
	case ReasonNoToken:
		level = slog.LevelInfo
	case ReasonScope:
		msg = "http: forbidden"
	case ReasonThrottled:
		msg = "http: too many failed authentications from one address: its failing requests get 429"
	}
	a.logs.log(a.logger(), now, level, msg, reason,
		append([]any{"reason", reason, "remote", r.RemoteAddr, "method", r.Method, "path", r.URL.Path, "error", err.Error()}, attrs...)...)
}
