package dashboard

import (
	"cmp"
	"errors"
	"fmt"
	"html/template"
	"log/slog"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/hopperq/hopper"
	"github.com/hopperq/hopper/httpauth"
	"github.com/hopperq/hopper/internal/reqbody"
)

// The dashboard's defaults, applied once by New to the zero fields of
// Options.
const (
	DefaultTitle        = "Hopper"
	DefaultPageSize     = 50
	DefaultStatsMaxAge  = 2 * time.Second
	DefaultPollInterval = 2 * time.Second
	// MaxPageSize bounds Options.PageSize.
	MaxPageSize = 500
	// DefaultBodyTimeout bounds the time a browser takes to send a form.
	DefaultBodyTimeout = 30 * time.Second
	// MaxFormBytes bounds a posted form: the largest, a bulk action on
	// MaxBulkIDs jobs, is some 20 KB.
	MaxFormBytes = 1 << 20
)

// statsWindow is the window of the finished-job counts the overview's
// cards show. It is the HTTP API's (httpapi.StatsWindow, a test checks):
// the client's stats cache holds one window at a time, and callers asking
// for different windows would each count the store anew. Counting an
// hour's finished jobs scans them (0.2 s for 950,000 on SQLite); the hub
// does it in the background, so pages do not wait for it.
const statsWindow = time.Hour

// Options configure the dashboard. The zero value is usable: no tokens
// (every request may do everything: listen on loopback only), mounted at the
// root, 50 jobs a page. Each field's comment gives its default.
type Options struct {
	// Auth decides what a request may see and do (default: no tokens, every
	// request admin). With tokens, a browser signs in with a form that
	// sets the httpauth.CookieName cookie to a session (Auth.NewSession:
	// no secret, Auth.SessionLifetime long); a read token sees no action
	// buttons and its posts are refused. Every action and sign-in is
	// logged with the token's name (httpauth.Audit) to Logger.
	Auth *httpauth.Auth
	// Prefix is the path the handler is mounted at, such as "/dashboard"
	// (default "", the root). Requests keep their full path: mount it with
	// mux.Handle(Prefix+"/", h), not behind http.StripPrefix.
	Prefix string
	// Logger receives the errors pages hit and the audit lines of actions
	// (default slog.Default()).
	Logger *slog.Logger

	// Title names the installation in the header and the page titles
	// (default "Hopper").
	Title string
	// PageSize is the number of jobs a list shows (default 50, at most
	// MaxPageSize).
	PageSize int
	// StatsMaxAge is how old the counts may get before they are counted
	// again (default 2s). They come from Client.StatsCached, so one count
	// of the store serves every page and every viewer within it, and the
	// count runs in the background: a page shows the latest counts at once
	// and waits for a count only when there is none younger than 30s (or
	// ten times StatsMaxAge).
	StatsMaxAge time.Duration
	// PollInterval is how often, while someone watches a page, the
	// dashboard looks for changes other processes made to the store
	// (default 2s). Changes this client makes are pushed at once.
	PollInterval time.Duration
	// Location is the time zone of the times shown and of the run-at time
	// the reschedule form takes (default time.Local). The form names the
	// zone: Location's IANA name, or, for a location without one (such as
	// time.Local when $TZ does not name it), its UTC offset at the job's
	// run time ("UTC+01:00"), in which the form's input is then read. A
	// schedule's next fire times are shown in the schedule's own zone.
	Location *time.Location
	// TrustedOrigins are origins other than the dashboard's own allowed to
	// post to it, such as "https://ops.example.com" when a proxy changes
	// the Host header (http.CrossOriginProtection.AddTrustedOrigin).
	TrustedOrigins []string
	// SecureCookie sets the Secure attribute on the sign-in cookie even
	// when the request did not come over TLS (set it behind a proxy that
	// ends TLS). Requests that came over TLS always get it.
	SecureCookie bool
	// BodyTimeout bounds the time from the start of a request's handling
	// to the end of its body, such as a posted form (default
	// DefaultBodyTimeout, 30s): a form not sent whole by then is refused
	// with 408 and changes nothing. The dashboard sets the connection's
	// read deadline for the body itself, replacing the server's
	// ReadTimeout.
	BodyTimeout time.Duration
}

// handler is the dashboard. It also implements io.Closer.
type handler struct {
	c      *hopper.Client
	o      Options
	auth   *httpauth.Auth
	prefix string
	log    *slog.Logger
	loc    *time.Location

	mux   *http.ServeMux
	cop   *http.CrossOriginProtection
	hub   *hub
	pages map[string]*template.Template
	start time.Time

	bulks      *bulkRunner
	bulkInline time.Duration // how long a bulk action's request waits for it (bulkInline)
}

// New returns the dashboard of client c. It panics if o is invalid (a
// Prefix without a leading slash, a PageSize out of range, a negative
// duration, an invalid trusted origin), naming the field, as
// http.ServeMux panics on a bad pattern.
//
// The handler watches c's events for the live pages and the throughput
// chart; that ends when c stops. It runs confirmed bulk actions in the
// background, one at a time, whatever becomes of the request that started
// them. The handler also implements io.Closer: Close stops a bulk action
// that runs (its batches done stay done), ends the watching sooner, and
// ends the live streams of open pages.
func New(c *hopper.Client, o Options) http.Handler {
	if c == nil {
		panic("dashboard.New: nil client")
	}
	h := &handler{c: c, start: time.Now()}
	h.o = o.withDefaults()
	h.auth = h.o.Auth
	h.prefix = h.o.Prefix
	h.log = h.o.Logger
	h.loc = h.o.Location
	h.cop = http.NewCrossOriginProtection()
	for _, origin := range h.o.TrustedOrigins {
		if err := h.cop.AddTrustedOrigin(origin); err != nil {
			panic(fmt.Sprintf("dashboard.New: Options.TrustedOrigins: %v", err))
		}
	}
	h.pages = h.parseTemplates()
	h.hub = newHub(c, h.o, h.log)
	h.bulks, h.bulkInline = newBulkRunner(), bulkInline
	h.routes()
	return h
}

// withDefaults validates o and applies the defaults.
func (o Options) withDefaults() Options {
	bad := func(field, format string, args ...any) {
		panic(fmt.Sprintf("dashboard.New: Options.%s: %s", field, fmt.Sprintf(format, args...)))
	}
	if o.Auth == nil {
		o.Auth = &httpauth.Auth{}
	}
	if o.Prefix != "" {
		if !strings.HasPrefix(o.Prefix, "/") || strings.ContainsAny(o.Prefix, "{}?#") {
			bad("Prefix", "%q: want a path such as /dashboard", o.Prefix)
		}
		o.Prefix = strings.TrimRight(o.Prefix, "/")
	}
	if o.PageSize < 0 || o.PageSize > MaxPageSize {
		bad("PageSize", "must be between 0 (default %d) and %d, got %d", DefaultPageSize, MaxPageSize, o.PageSize)
	}
	if o.StatsMaxAge < 0 {
		bad("StatsMaxAge", "must not be negative, got %s", o.StatsMaxAge)
	}
	if o.PollInterval < 0 {
		bad("PollInterval", "must not be negative, got %s", o.PollInterval)
	}
	if o.BodyTimeout < 0 {
		bad("BodyTimeout", "must not be negative, got %s", o.BodyTimeout)
	}
	o.Logger = cmp.Or(o.Logger, slog.Default())
	o.Title = cmp.Or(o.Title, DefaultTitle)
	o.PageSize = cmp.Or(o.PageSize, DefaultPageSize)
	o.StatsMaxAge = cmp.Or(o.StatsMaxAge, DefaultStatsMaxAge)
	o.PollInterval = cmp.Or(o.PollInterval, DefaultPollInterval)
	o.BodyTimeout = cmp.Or(o.BodyTimeout, DefaultBodyTimeout)
	if o.Location == nil {
		o.Location = time.Local
	}
	return o
}

// Close stops the bulk action that runs, if any, and waits for it (the
// batches it committed stay done), then ends the handler's watching of the
// client's events and the live streams of open pages. Pages still render
// after Close, without live updates; bulk actions are refused. Calling
// Close again does nothing.
func (h *handler) Close() error {
	h.bulks.close()
	h.hub.close()
	return nil
}

// routes registers every page and action on h.mux. Pages need a read
// scope; actions a write scope, deleting an admin one (see httpauth).
// Actions, sign-in and sign-out are audited (httpauth.Audit). Every
// post's form is read (h.form) before its handler runs.
func (h *handler) routes() {
	p := h.prefix
	m := http.NewServeMux()
	page := func(pattern string, fn http.HandlerFunc) { m.Handle("GET "+p+pattern, h.need(httpauth.Read, fn)) }
	action := func(pattern string, s httpauth.Scope, fn http.HandlerFunc) {
		m.Handle("POST "+p+pattern, h.need(s, httpauth.Audit(h.log, "dashboard POST "+pattern, h.form(fn))))
	}

	page("/{$}", h.overview)
	page("/jobs", h.jobs)
	page("/jobs/{id}", h.jobPage)
	page("/jobs/{id}/output", h.outputPage)
	page("/dlq", h.dlq)
	page("/schedules", h.schedules)
	page("/queues", h.queues)
	page("/servers", h.servers)
	page("/alerts", h.alerts)
	page("/bulk", h.bulkPage)
	page("/events", h.events)

	action("/jobs/{id}/cancel", httpauth.Write, h.cancelJob)
	action("/jobs/{id}/retry", httpauth.Write, h.retryJob)
	action("/jobs/{id}/reschedule", httpauth.Write, h.rescheduleJob)
	action("/bulk", httpauth.Write, h.bulk) // delete checks for admin itself
	action("/schedules/{name}/pause", httpauth.Write, h.pauseSchedule)
	action("/schedules/{name}/resume", httpauth.Write, h.resumeSchedule)
	action("/queues/{name}/pause", httpauth.Write, h.pauseQueue)
	action("/queues/{name}/resume", httpauth.Write, h.resumeQueue)
	action("/schedules/{name}/run", httpauth.Write, h.runSchedule) // exec schedules need exec: checked inside

	m.HandleFunc("GET "+p+"/login", h.loginPage)
	m.Handle("POST "+p+"/login", httpauth.Audit(h.log, "dashboard sign-in", h.form(h.login)))
	m.Handle("POST "+p+"/logout", httpauth.Audit(h.log, "dashboard sign-out", h.form(h.logout)))
	m.HandleFunc("GET "+p+"/static/{file}", h.static)
	if p != "" {
		m.Handle("GET "+p, http.RedirectHandler(p+"/", http.StatusMovedPermanently))
	}
	m.HandleFunc(p+"/", h.notFound)
	h.mux = m
}

// csp allows the dashboard's own script, stylesheet and images, and
// nothing inline: no inline script, no style attributes.
const csp = "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; " +
	"connect-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'"

// ServeHTTP implements http.Handler: it bounds the request's body
// (reqbody.Limit: Options.BodyTimeout and MaxFormBytes, first, so that a
// body no handler reads is bounded too), sets the security headers,
// refuses cross-origin posts and hands the request to its page or action.
func (h *handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	reqbody.Limit(w, r, h.o.BodyTimeout, MaxFormBytes)
	hd := w.Header()
	hd.Set("Content-Security-Policy", csp)
	hd.Set("X-Content-Type-Options", "nosniff")
	hd.Set("X-Frame-Options", "DENY")
	hd.Set("Referrer-Policy", "same-origin")
	hd.Set("Cross-Origin-Opener-Policy", "same-origin")
	if err := h.cop.Check(r); err != nil {
		h.crossOrigin(w, r)
		return
	}
	h.mux.ServeHTTP(w, r)
}

// form returns fn behind the reading of the request's form (bounded by
// ServeHTTP): a form that does not arrive whole in time is a 408, one over
// MaxFormBytes a 413, one that does not parse a 400, and fn does not run.
// Handlers then read the parsed form (PostFormValue, r.PostForm), never
// the body.
func (h *handler) form(fn http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		err := r.ParseForm()
		var te *reqbody.TimeoutError
		var mb *http.MaxBytesError
		switch {
		case err == nil:
			fn(w, r)
		case errors.As(err, &te):
			h.fail(w, r, http.StatusRequestTimeout, "Refused: "+te.Error()+". Nothing was done: send the form again.")
		case errors.As(err, &mb):
			h.fail(w, r, http.StatusRequestEntityTooLarge, fmt.Sprintf("The form is larger than the limit of %d bytes. Nothing was done.", mb.Limit))
		default:
			h.fail(w, r, http.StatusBadRequest, "Bad form. Nothing was done.")
		}
	}
}

// crossOrigin refuses a cross-origin post (CSRF).
func (h *handler) crossOrigin(w http.ResponseWriter, r *http.Request) {
	h.fail(w, r, http.StatusForbidden, "Refused: this request came from another site (cross-origin request forgery protection). Use the dashboard's own buttons.")
}

// need wraps fn so that it runs only for requests whose token grants
// scope s; others are sent to the sign-in page (no valid token), refused
// with 403 (a token too weak for an action) or with 429 (an address that
// failed too often).
func (h *handler) need(s httpauth.Scope, fn http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		p, err := h.auth.Allow(r, s)
		if err != nil {
			h.refused(w, r, err)
			return
		}
		fn.ServeHTTP(w, r.WithContext(httpauth.NewContext(r.Context(), p)))
	})
}

// refused answers a request httpauth.Auth.Allow refused.
func (h *handler) refused(w http.ResponseWriter, r *http.Request, err error) {
	var se *httpauth.ScopeError
	var te *httpauth.ThrottledError
	switch {
	case errors.As(err, &te):
		w.Header().Set("Retry-After", strconv.Itoa(te.RetryAfterSeconds()))
		h.fail(w, r, http.StatusTooManyRequests, fmt.Sprintf("Too many failed sign-ins from your address: try again in %s.", te.RetryAfter.Round(time.Second)))
	case errors.As(err, &se) && se.ReadOnly:
		h.fail(w, r, http.StatusForbidden, "This dashboard is read-only: it changes nothing, whatever the token.")
	case errors.As(err, &se):
		h.fail(w, r, http.StatusForbidden, fmt.Sprintf("Your token may %s; this needs %s %s token.", scopeVerb(se.Have), article(se.Need.String()), se.Need))
	default:
		h.unauthorized(w, r, err)
	}
}

func scopeVerb(s httpauth.Scope) string {
	switch s {
	case httpauth.Read:
		return "only look"
	case httpauth.Write, httpauth.Exec:
		return "change jobs but not delete them"
	}
	return "do nothing"
}

// notFound is the page of unknown paths.
func (h *handler) notFound(w http.ResponseWriter, r *http.Request) {
	if s, _ := h.auth.Scope(r); s == httpauth.None {
		h.unauthorized(w, r, nil)
		return
	}
	h.fail(w, r, http.StatusNotFound, "No such page.")
}

// url returns the dashboard path of a page: url("/jobs") is
// Prefix+"/jobs".
func (h *handler) url(path string) string { return h.prefix + path }
