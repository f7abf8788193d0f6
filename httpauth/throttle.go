package httpauth

import (
	"context"
	"log/slog"
	"maps"
	"net/netip"
	"slices"
	"sync"
	"time"
)

// The reasons of failures, as Auth.OnFailure and HostOptions.OnFailure
// report them: a small fixed set, for a metric's label.
const (
	ReasonNoToken    = "no_token"    // 401: no token and no session
	ReasonBadToken   = "bad_token"   // 401: an unknown token, or a refused sign-in
	ReasonBadSession = "bad_session" // 401: a session cookie expired, signed out, forged, or of a changed token
	ReasonScope      = "scope"       // 403: the token's scope is too small, or the server is read-only
	ReasonThrottled  = "throttled"   // 429: a failure from an address that failed too often
	ReasonHost       = "host"        // 421: the Host header names a host the server does not answer to
)

// Reasons returns every reason a failure may have.
func Reasons() []string {
	return []string{ReasonNoToken, ReasonBadToken, ReasonBadSession, ReasonScope, ReasonThrottled, ReasonHost}
}

// failures counts the failed authentications of each address, in fixed
// windows. Its memory is bounded: beyond maxTracked addresses with a
// window running, new addresses are not tracked (their failures are still
// refused, logged and counted; they are just never answered 429).
type failures struct {
	mu sync.Mutex
	by map[string]*failCount
}

type failCount struct {
	start time.Time
	n     int
}

const maxTracked = 10_000

// add records a failure of addr (a RemoteAddr) at now and returns how long
// until its window ends if addr has now failed more than limit times in
// it (0 otherwise), and whether this is the first such failure of the
// window. limit < 0 means no limit.
func (f *failures) add(addr string, now time.Time, limit int, window time.Duration) (wait time.Duration, first bool) {
	if limit < 0 {
		return 0, false
	}
	key := addrKey(addr)
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.by == nil {
		f.by = make(map[string]*failCount)
	}
	c := f.by[key]
	if c == nil || now.Sub(c.start) >= window {
		if c == nil && len(f.by) >= maxTracked {
			maps.DeleteFunc(f.by, func(_ string, c *failCount) bool { return now.Sub(c.start) >= window })
			if len(f.by) >= maxTracked {
				return 0, false
			}
		}
		c = &failCount{start: now}
		f.by[key] = c
	}
	c.n++
	if c.n <= limit {
		return 0, false
	}
	return c.start.Add(window).Sub(now), c.n == limit+1
}

// blocked returns how long until addr's window ends if addr already
// failed more than limit times in it, else 0: such an address gets no
// token or sign-in checked until then.
func (f *failures) blocked(addr string, now time.Time, limit int, window time.Duration) time.Duration {
	if limit < 0 {
		return 0
	}
	key := addrKey(addr)
	f.mu.Lock()
	defer f.mu.Unlock()
	c := f.by[key]
	if c == nil || c.n <= limit || now.Sub(c.start) >= window {
		return 0
	}
	return c.start.Add(window).Sub(now)
}

// addrKey is the address a RemoteAddr counts failures under: its IP, an
// IPv6 one by its /64 (one host usually has a whole /64), or RemoteAddr
// itself when it is no IP and port.
func addrKey(remote string) string {
	ap, err := netip.ParseAddrPort(remote)
	if err != nil {
		return remote
	}
	ip := ap.Addr().Unmap().WithZone("")
	if ip.Is6() {
		p, _ := ip.Prefix(64)
		return p.String()
	}
	return ip.String()
}

// logBurst is how many failure lines are logged in a minute; the rest are
// counted, and one line says how many at the end of the minute.
const logBurst = 20

// logLimiter bounds the lines logged about failures: a burst of logBurst a
// window (a minute), then one summary line at the window's end.
type logLimiter struct {
	mu      sync.Mutex
	start   time.Time
	logged  int
	dropped map[string]int // by reason
	timer   *time.Timer
}

const logWindow = time.Minute

// log logs msg with args unless the window's burst is spent; then it
// counts the line under reason, and the window's end logs the counts.
func (l *logLimiter) log(log *slog.Logger, now time.Time, level slog.Level, msg, reason string, args ...any) {
	l.mu.Lock()
	if now.Sub(l.start) >= logWindow && l.dropped == nil {
		l.start, l.logged = now, 0
	}
	if l.logged < logBurst {
		l.logged++
		l.mu.Unlock()
		log.Log(context.Background(), level, msg, args...)
		return
	}
	if l.dropped == nil {
		l.dropped = make(map[string]int)
		l.timer = time.AfterFunc(l.start.Add(logWindow).Sub(now), func() { l.summary(log) })
	}
	l.dropped[reason]++
	l.mu.Unlock()
}

// summary logs the lines the window dropped and opens the next window.
func (l *logLimiter) summary(log *slog.Logger) {
	l.mu.Lock()
	dropped := l.dropped
	l.dropped, l.timer = nil, nil
	l.start, l.logged = time.Now(), 0
	l.mu.Unlock()
	total := 0
	args := []any{}
	for _, reason := range slices.Sorted(maps.Keys(dropped)) {
		total += dropped[reason]
		args = append(args, reason, dropped[reason])
	}
	log.Warn("http: more failures were not logged", append([]any{"count", total, "within", logWindow}, args...)...)
}
