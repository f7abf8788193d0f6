package kinds

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/hopperq/hopper"
)

// KindHTTP is the kind of jobs that make an HTTP request.
const KindHTTP = "http"

// DefaultHTTPTimeout bounds a request whose HTTPArgs.Timeout is zero.
const DefaultHTTPTimeout = time.Minute

// HTTPArgs are the args of an http job: one request.
//
// A 2xx or 3xx response completes the job. A 5xx response, a timeout or a
// connection error fails the attempt, which is retried. A 4xx response fails
// the job permanently (the request itself is wrong), except 408 Request
// Timeout and 429 Too Many Requests, which are retried; RetryOn4xx retries
// every 4xx. A 429 or 503 response with a Retry-After header snoozes the
// job instead (hopper.Snooze): it runs again after the delay the server
// asked for, kept within MinHTTPRetryAfter to MaxHTTPRetryAfter, without
// burning an attempt (at most hopper's Config.MaxSnoozes times in a row).
//
// The URL, the header values and the body must be valid UTF-8: args are
// JSON text, which cannot carry other bytes exactly (a binary body cannot
// be sent).
type HTTPArgs struct {
	Method     string            `json:"method,omitempty"` // default GET
	URL        string            `json:"url"`              // http or https
	Headers    map[string]string `json:"headers,omitempty"`
	Body       string            `json:"body,omitempty"`
	Timeout    Duration          `json:"timeout,omitempty"` // default DefaultHTTPTimeout
	RetryOn4xx bool              `json:"retry_on_4xx,omitempty"`
}

// HTTPResult is what an http job's attempt got once a response came: the
// job's result when the attempt completed it, and the result kept with a
// failed attempt (hopper's Attempt.Result) on a 4xx or 5xx status or a body
// that broke off. An attempt that got no response (a connection error, a
// timeout) has no result.
type HTTPResult struct {
	// Status is the response's status code.
	Status int `json:"status"`
	// Duration is the time from sending the request to reading the
	// excerpt.
	Duration Duration `json:"duration"`
	// BodyExcerpt is the first TailSize bytes of the body, as text: each
	// run of bytes that are not UTF-8 is replaced by one U+FFFD, and a
	// character cut by the end of the excerpt is dropped.
	BodyExcerpt string `json:"body_excerpt"`
}

// Validate reports what is wrong with a, if anything, naming the field.
func (a *HTTPArgs) Validate() error {
	if a.URL == "" {
		return errors.New("http: url must not be empty")
	}
	if err := checkText(KindHTTP, "url", a.URL); err != nil {
		return err
	}
	u, err := url.Parse(a.URL)
	if err != nil {
		return fmt.Errorf("http: bad url %q: %v", a.URL, err)
	}
	if u.Scheme != "http" && u.Scheme != "https" {
		return fmt.Errorf("http: bad url %q: scheme must be http or https", redactURL(a.URL))
	}
	if u.Hostname() == "" {
		return fmt.Errorf("http: bad url %q: no host", redactURL(a.URL))
	}
	if m := a.Method; m != "" && !isToken(m) {
		return fmt.Errorf("http: bad method %q", m)
	}
	for k, v := range a.Headers {
		if !isToken(k) {
			return fmt.Errorf("http: bad header name %q", k)
		}
		if err := checkText(KindHTTP, "headers."+k, v); err != nil {
			return err
		}
		if strings.ContainsAny(v, "\r\n\x00") {
			return fmt.Errorf("http: header %s: value must not contain CR, LF or NUL", k)
		}
	}
	if err := checkText(KindHTTP, "body", a.Body); err != nil {
		return err
	}
	if a.Timeout < 0 {
		return fmt.Errorf("http: timeout must not be negative, got %s", a.Timeout)
	}
	return nil
}

// isToken reports whether s is an HTTP token (a method or header name).
func isToken(s string) bool {
	if s == "" {
		return false
	}
	for _, r := range s {
		if r <= ' ' || r >= 0x7f || strings.ContainsRune(`"(),/:;<=>?@[\]{}`, r) {
			return false
		}
	}
	return true
}

// The bounds of the delay a Retry-After header snoozes an http job for: a
// server cannot make a job wait longer than MaxHTTPRetryAfter at a time,
// nor call it again at once (Retry-After: 0) — and Config.MaxSnoozes bounds
// how many times in a row it can do either.
const (
	MinHTTPRetryAfter = time.Second
	MaxHTTPRetryAfter = time.Hour
)

// retryAfter returns the delay resp's Retry-After header asks for (seconds,
// or an HTTP date counted from now), within MinHTTPRetryAfter to
// MaxHTTPRetryAfter, and whether it has one that parses.
func retryAfter(resp *http.Response, now time.Time) (time.Duration, bool) {
	v := strings.TrimSpace(resp.Header.Get("Retry-After"))
	if v == "" {
		return 0, false
	}
	var d time.Duration
	if n, err := strconv.ParseUint(v, 10, 64); err == nil || errors.Is(err, strconv.ErrRange) {
		d = MaxHTTPRetryAfter // also for more seconds than a uint64 holds
		if err == nil && n < uint64(MaxHTTPRetryAfter/time.Second) {
			d = time.Duration(n) * time.Second
		}
	} else if t, err := http.ParseTime(v); err == nil {
		d = t.Sub(now)
	} else {
		return 0, false
	}
	return min(max(d, MinHTTPRetryAfter), MaxHTTPRetryAfter), true
}

// errHTTPTimeout is the cause of a context ended by the request's timeout.
var errHTTPTimeout = errors.New("http timeout")

// HTTP makes the request described by a under the default HTTPPolicy, as
// the handler that Register registers for KindHTTP does. See
// HTTPRunner.Run.
func HTTP(ctx context.Context, a HTTPArgs) (*HTTPResult, error) {
	return defaultHTTPRunner().Run(ctx, a)
}

// Run makes the request described by a under r's policy.
//
// A 2xx or 3xx response returns the result and a nil error. A 4xx or 5xx
// response, or a body that broke off, returns the result too, with an
// error that fails the attempt (permanent for a 4xx, as HTTPArgs says);
// the error message is short (the status and the start of the body's first
// line). No response (a timeout, a connection error) returns no result.
// A request the policy refuses (see Check and HTTPPolicy), at first or
// after a redirect, and a redirect it does not follow, return a permanent
// error, the first made without connecting.
func (r *HTTPRunner) Run(ctx context.Context, a HTTPArgs) (*HTTPResult, error) {
	if err := r.Check(a); err != nil {
		return nil, hopper.Permanent(err)
	}
	return r.do(ctx, a, r.client, redactURL(a.URL), redactURL)
}

// do is Run, after Check, through c, its messages naming the request's
// URL as shown and any other URL (a redirect's) through redact: they are
// stored in the job, shown to every read token and logged.
func (r *HTTPRunner) do(ctx context.Context, a HTTPArgs, c *http.Client, shown string, redact func(string) string) (*HTTPResult, error) {
	method := strings.ToUpper(a.Method)
	if method == "" {
		method = http.MethodGet
	}
	timeout := a.Timeout.D()
	if timeout == 0 {
		timeout = DefaultHTTPTimeout
	}
	ctx, cancel := context.WithTimeoutCause(ctx, timeout, errHTTPTimeout)
	defer cancel()
	var body io.Reader
	if a.Body != "" {
		body = strings.NewReader(a.Body)
	}
	req, err := http.NewRequestWithContext(ctx, method, a.URL, body)
	if err != nil {
		return nil, hopper.Permanent(fmt.Errorf("http: %w", err))
	}
	for k, v := range a.Headers {
		if strings.EqualFold(k, "Host") {
			req.Host = v
			continue
		}
		req.Header.Set(k, v)
	}
	start := time.Now()
	resp, err := c.Do(req)
	if err != nil {
		if errors.Is(context.Cause(ctx), errHTTPTimeout) {
			return nil, fmt.Errorf("http %s %s: timed out after %s", method, shown, timeout)
		}
		return nil, r.requestError(req, shown, err, redact)
	}
	defer resp.Body.Close()
	excerpt, err := io.ReadAll(io.LimitReader(resp.Body, TailSize+1))
	dur := time.Since(start)
	cut := len(excerpt) > TailSize
	if cut {
		excerpt = excerpt[:TailSize]
	}
	res := &HTTPResult{Status: resp.StatusCode, Duration: Duration(dur), BodyExcerpt: outputText(excerpt, false, cut || err != nil)}
	if err != nil && resp.StatusCode < 400 {
		// The status says success but the body broke off: the request
		// may not have been handled fully; try again.
		if errors.Is(context.Cause(ctx), errHTTPTimeout) {
			err = fmt.Errorf("timed out after %s", timeout)
		}
		return res, fmt.Errorf("http %s %s: %s, reading body: %w", method, shown, resp.Status, err)
	}
	// Drain a little more so the connection can be reused.
	io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
	switch code := resp.StatusCode; {
	case code < 400:
		return res, nil
	case code < 500:
		err := statusError(method, shown, resp, res.BodyExcerpt)
		if d, ok := retryAfter(resp, time.Now()); ok && code == http.StatusTooManyRequests {
			return res, &hopper.SnoozeError{Delay: d, Err: err}
		}
		if a.RetryOn4xx || code == http.StatusRequestTimeout || code == http.StatusTooManyRequests {
			return res, err
		}
		return res, hopper.Permanent(err)
	default:
		err := statusError(method, shown, resp, res.BodyExcerpt)
		if d, ok := retryAfter(resp, time.Now()); ok && resp.StatusCode == http.StatusServiceUnavailable {
			return res, &hopper.SnoozeError{Delay: d, Err: err}
		}
		return res, err
	}
}

// redactURL returns the URL s for an error message, with its user
// information, if any, replaced by "xxxxx": the password and the user
// name both, which some services take as a token
// (https://TOKEN@host/). Messages are stored in the job, shown to every
// read token and logged; the args themselves are shown to read tokens
// too, but not logged. A URL that does not parse is returned as it is.
func redactURL(s string) string {
	u, err := url.Parse(s)
	if err != nil || u.User == nil {
		return s
	}
	u.User = url.User("xxxxx")
	return u.String()
}

// statusError is the error of a 4xx or 5xx response: the status and the
// start of the body's first line.
func statusError(method, url string, resp *http.Response, body string) error {
	if body = firstLine(body); body != "" {
		body = ": " + body
	}
	return fmt.Errorf("http %s %s: %s%s", method, url, resp.Status, body)
}
