package httpapi

import (
	"cmp"
	"errors"
	"io"
	"log/slog"
	"math"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"
	"unicode"

	"github.com/hopperq/hopper"
	"github.com/hopperq/hopper/internal/reqbody"
	"github.com/hopperq/hopper/job"
)

// PingPrefix is the path of the ping routes, outside Prefix: a ping URL
// is PingPrefix + "/" + the check's ping ID, as Healthchecks.io's.
const PingPrefix = "/ping"

// Defaults of PingOptions.
const (
	// DefaultPingRate and DefaultPingBurst bound the pings to one ping ID:
	// a token bucket of DefaultPingBurst refilled at DefaultPingRate a
	// second (a run that pings start, log and success at once fits).
	DefaultPingRate  = 1.0
	DefaultPingBurst = 10
	// DefaultPingGlobalRate and DefaultPingGlobalBurst bound every ping
	// the handler takes, known IDs or not: the store's load.
	DefaultPingGlobalRate  = 100.0
	DefaultPingGlobalBurst = 200
	// MaxPingRequestBytes bounds the body read of a ping's request: the
	// first job.MaxPingBody bytes are kept, the rest up to this bound is
	// read and dropped, and beyond it the connection is closed after the
	// answer (the ping still counts).
	MaxPingRequestBytes = 1 << 20
	// maxPingBuckets bounds the per-ID buckets kept: beyond it, idle
	// buckets are dropped, and if all are busy, every bucket.
	maxPingBuckets = 10_000
)

// PingOptions configure the ping handler (NewPing). The zero value is
// the defaults.
type PingOptions struct {
	// Rate and Burst: the token bucket of each ping ID (pings a second,
	// default DefaultPingRate; default DefaultPingBurst).
	Rate  float64
	Burst int
	// GlobalRate and GlobalBurst: the bucket of all pings together
	// (defaults DefaultPingGlobalRate, DefaultPingGlobalBurst).
	GlobalRate  float64
	GlobalBurst int
	// BodyTimeout bounds the time to send a body (default
	// DefaultBodyTimeout).
	BodyTimeout time.Duration
	// Logger receives store failures (500s); it never gets a ping ID.
	Logger *slog.Logger
	// Now is the limiter's clock (default time.Now), for tests.
	Now func() time.Time
}

// NewPing returns the handler of Healthchecks.io's ping protocol for c's
// external checks (hopper.Check), to mount at PingPrefix + "/":
//
//	/ping/ID            success
//	/ping/ID/start      a run started
//	/ping/ID/fail       failure
//	/ping/ID/EXIT_CODE  0 success, 1–255 failure
//	/ping/ID/log        a message: stored, the check's state unchanged
//
// with GET, HEAD or POST, and ?rid=RUN_ID pairing a run's start and
// finish. It needs no token: the ping ID is the secret. An answer is
// text: 200 "OK", 404 "not found" for an unknown ID (nothing changes),
// 400 for a bad exit code or run ID, 405 for another method, 429 with
// Retry-After beyond the rate limits (Options), 503 when the client is
// stopped. The request's body (its first job.MaxPingBody bytes), user
// agent and remote address are kept in the check's ping log. Nothing is
// logged with the ping ID.
func NewPing(c *hopper.Client, o PingOptions) http.Handler {
	if c == nil {
		panic("httpapi: NewPing: nil client")
	}
	now := o.Now
	if now == nil {
		now = time.Now
	}
	return &pinger{
		c:       c,
		log:     cmp.Or(o.Logger, slog.Default()),
		bodyDue: cmp.Or(max(o.BodyTimeout, 0), DefaultBodyTimeout),
		now:     now,
		rate:    cmp.Or(o.Rate, DefaultPingRate),
		burst:   float64(cmp.Or(o.Burst, DefaultPingBurst)),
		global: bucket{rate: cmp.Or(o.GlobalRate, DefaultPingGlobalRate), burst: float64(cmp.Or(o.GlobalBurst, DefaultPingGlobalBurst)),
			tokens: float64(cmp.Or(o.GlobalBurst, DefaultPingGlobalBurst))},
		byID: make(map[string]*bucket),
	}
}

type pinger struct {
	c       *hopper.Client
	log     *slog.Logger
	bodyDue time.Duration
	now     func() time.Time

	mu          sync.Mutex
	rate, burst float64
	global      bucket
	byID        map[string]*bucket
}

// bucket is a token bucket.
type bucket struct {
	rate, burst, tokens float64
	at                  time.Time
}

// take takes a token at now, or returns how long until one is there.
func (b *bucket) take(now time.Time) (bool, time.Duration) {
	if !b.at.IsZero() {
		b.tokens = min(b.burst, b.tokens+now.Sub(b.at).Seconds()*b.rate)
	}
	b.at = now
	if b.tokens >= 1 {
		b.tokens--
		return true, 0
	}
	return false, time.Duration((1 - b.tokens) / b.rate * float64(time.Second))
}

// allow takes a token of id's bucket and of the global one.
func (p *pinger) allow(id string) (bool, time.Duration) {
	p.mu.Lock()
	defer p.mu.Unlock()
	now := p.now()
	b := p.byID[id]
	if b == nil {
		if len(p.byID) >= maxPingBuckets {
			for k, v := range p.byID {
				if v.tokens+now.Sub(v.at).Seconds()*v.rate >= v.burst {
					delete(p.byID, k)
				}
			}
			if len(p.byID) >= maxPingBuckets {
				clear(p.byID)
			}
		}
		b = &bucket{rate: p.rate, burst: p.burst, tokens: p.burst}
		p.byID[id] = b
	}
	if ok, wait := b.take(now); !ok {
		return false, wait
	}
	if ok, wait := p.global.take(now); !ok {
		b.tokens++ // not used
		return false, wait
	}
	return true, 0
}

func pingReply(w http.ResponseWriter, status int, text string) {
	h := w.Header()
	h.Set("Content-Type", "text/plain; charset=utf-8")
	h.Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	io.WriteString(w, text)
}

// ServeHTTP implements http.Handler.
func (p *pinger) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	rest, ok := strings.CutPrefix(r.URL.Path, PingPrefix+"/")
	id, action, _ := strings.Cut(rest, "/")
	if !ok || job.CheckPingID(id) != nil || strings.Contains(action, "/") {
		pingReply(w, http.StatusNotFound, "not found")
		return
	}
	if r.Method != http.MethodGet && r.Method != http.MethodHead && r.Method != http.MethodPost {
		w.Header().Set("Allow", "GET, HEAD, POST")
		pingReply(w, http.StatusMethodNotAllowed, "method not allowed")
		return
	}
	ping := hopper.Ping{Method: r.Method, RemoteAddr: r.RemoteAddr, UserAgent: r.UserAgent()}
	switch action {
	case "":
		ping.Kind = job.PingSuccess
	case "start":
		ping.Kind = job.PingStart
	case "fail":
		ping.Kind = job.PingFail
	case "log":
		ping.Kind = job.PingLog
	default:
		code, err := strconv.Atoi(action)
		if err != nil || !isDigits(action) {
			pingReply(w, http.StatusNotFound, "not found")
			return
		}
		if code > 255 {
			pingReply(w, http.StatusBadRequest, "invalid exit code: want 0 to 255")
			return
		}
		ping.ExitCode, ping.Kind = &code, job.PingSuccess
		if code != 0 {
			ping.Kind = job.PingFail
		}
	}
	q := r.URL.Query()
	ping.RID = q.Get("rid")
	if len(ping.RID) > job.MaxRIDSize || strings.IndexFunc(ping.RID, unicode.IsControl) >= 0 {
		pingReply(w, http.StatusBadRequest, "invalid rid: at most 128 bytes, no control characters")
		return
	}
	if ok, wait := p.allow(id); !ok {
		w.Header().Set("Retry-After", strconv.Itoa(int(math.Ceil(max(wait.Seconds(), 1)))))
		pingReply(w, http.StatusTooManyRequests, "rate limited")
		return
	}
	if r.Method == http.MethodPost {
		reqbody.Limit(w, r, p.bodyDue, MaxPingRequestBytes)
		b, err := io.ReadAll(io.LimitReader(r.Body, job.MaxPingBody+1))
		if err == nil {
			// The rest, up to MaxPingRequestBytes, is read and dropped, so
			// that the connection can serve the client's next request.
			_, err = io.Copy(io.Discard, r.Body)
			var mb *http.MaxBytesError
			if errors.As(err, &mb) {
				err = nil // kept what it could; net/http closes the connection
			}
		}
		if err != nil {
			var te *reqbody.TimeoutError
			if errors.As(err, &te) {
				pingReply(w, http.StatusRequestTimeout, te.Error())
				return
			}
			pingReply(w, http.StatusBadRequest, "the request body could not be read")
			return
		}
		ping.Body = string(b) // PingCheck truncates it to job.MaxPingBody, Truncated set
	}
	_, _, err := p.c.PingCheck(r.Context(), id, ping)
	switch {
	case errors.Is(err, hopper.ErrNotFound):
		pingReply(w, http.StatusNotFound, "not found")
	case errors.Is(err, hopper.ErrClosed):
		pingReply(w, http.StatusServiceUnavailable, "unavailable")
	case err != nil:
		if r.Context().Err() == nil {
			p.log.Error("httpapi: ping", "kind", string(ping.Kind), "error", err)
		}
		pingReply(w, http.StatusInternalServerError, "internal error")
	default:
		pingReply(w, http.StatusOK, "OK")
	}
}

func isDigits(s string) bool {
	for _, r := range s {
		if r < '0' || r > '9' {
			return false
		}
	}
	return s != "" && len(s) <= 3
}
