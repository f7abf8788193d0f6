// Package httpapi serves Hopper's JSON API under /api/v1 as an
// http.Handler that an application mounts on its own mux:
//
//	mux.Handle("/api/v1/", httpapi.New(client, httpapi.Options{Auth: auth}))
//
// Through it a program in any language enqueues jobs (one, or a batch in one
// store operation), gets, lists, counts, cancels, reschedules and deletes
// them, works the dead-letter queue, manages recurring schedules, pauses
// and resumes queues, reads
// the counts by queue and state and lists the servers working the store.
// Every route is listed in the OpenAPI 3 document served at
// /api/v1/openapi.json; docs/api.md describes them with curl examples.
//
// Requests and responses are JSON in the public form of package job (what
// `hopper --json` prints): durations as strings ("1m30s"), times in RFC
// 3339, states by name. Input is checked strictly — unknown fields and
// unknown query parameters are refused, a field given as zero or empty
// where that would mean "the default" is refused rather than replaced — and
// every failure is one JSON shape with a stable code and the field at
// fault:
//
//	{"error": {"code": "invalid", "field": "run_at", "message": "..."}}
//
// Each code has one status (the Code constants; hopper's errors are
// mapped by one table, errorStatus in errors.go): invalid and too_large 400, unauthorized 401, forbidden 403,
// not_found 404, method_not_allowed 405, timeout 408 (a body that did not
// arrive within Options.BodyTimeout), conflict and duplicate 409,
// misdirected_request 421 (HostDenied), too_many_requests 429 (with
// Retry-After), unavailable 503, internal 500 (a store failure or a bug:
// logged, never shown).
//
// Access is checked by an *httpauth.Auth: read scope for every GET, write
// for enqueue, cancel, reschedule, DLQ retry, schedule and queue pause
// and resume, run now and backfill, and asking a remote worker to go
// quiet or stop, worker (or admin) for the worker protocol under /workers
// (docs/workers.md), exec for whatever makes a job that runs a command
// run (kinds.RunsCommand: exec jobs and notifications) — enqueueing one
// (one in a batch is enough), retrying one dead, running or backfilling
// its schedule —, admin for purge, delete, adding or removing schedules,
// notification channels and enqueueing notifications. An address
// that keeps sending bad tokens gets 429. Every request that changes
// something is logged at info with its token's name, its address, its
// route, its status and its targets (httpauth.Audit). Cross-origin browser
// requests that would change something are refused
// (http.CrossOriginProtection), so the dashboard's session cookie cannot
// be used by another site; a server that listens on loopback without
// tokens also needs an httpauth.HostCheck around it against DNS
// rebinding (hopper serve has one).
//
// The handlers talk to the *hopper.Client only, so they work on every
// store. The package is separate from package hopper: a program that does
// not serve HTTP does not link it.
package httpapi

import (
	"cmp"
	"errors"
	"log/slog"
	"net/http"
	"strings"
	"time"

	"github.com/hopperq/hopper"
	"github.com/hopperq/hopper/httpauth"
	"github.com/hopperq/hopper/internal/reqbody"
	"github.com/hopperq/hopper/kinds"
)

// Prefix is the path every route of the API starts with.
const Prefix = "/api/v1"

// Defaults of Options, applied by New.
const (
	// DefaultMaxBodyBytes bounds a request body: room for one job with the
	// largest args the core accepts (1 MiB), or a batch of small jobs.
	DefaultMaxBodyBytes = 2 << 20
	// DefaultBodyTimeout bounds the time a client takes to send a request
	// body: 2 MiB in 30s is 70 KB/s, a slow mobile link.
	DefaultBodyTimeout = 30 * time.Second
	// DefaultStatsMaxAge is how old the counts /api/v1/stats serves may be
	// (Client.StatsCached): many pollers share one count of the store.
	DefaultStatsMaxAge = 2 * time.Second
	// DefaultListLimit is a page of jobs without ?limit (the library's
	// and every store's), and MaxPageLimit bounds ?limit: the API's pages
	// are smaller than a List's (hopper.MaxListLimit), as a page of 10,000
	// jobs of 1 MiB args each would be too large an answer.
	DefaultListLimit = hopper.DefaultListLimit
	MaxPageLimit     = 1000
	// MaxListLimit is MaxPageLimit's older name.
	//
	// Deprecated: use MaxPageLimit; hopper.MaxListLimit is the library's
	// bound, which differs.
	MaxListLimit = MaxPageLimit
	// DefaultMaxPageBytes bounds the JSON of a page of jobs: 1,000 jobs
	// with args of 1 MiB each would make a response of a gigabyte, and a
	// server holding it.
	DefaultMaxPageBytes = 8 << 20
	// MaxBatch bounds the jobs of one batch enqueue and the IDs of one
	// request.
	MaxBatch = 10_000
	// NextRuns is how many upcoming fire times each schedule lists.
	NextRuns = 5
)

// StatsWindow is the window of the "finished lately" counts of the API's
// stats: the dashboard's, so that the two share one count of the store in
// the client's stats cache (Client.StatsCached caches each window apart).
const StatsWindow = time.Hour

// Options configure the API. The zero value is usable: no authentication
// (every request may do everything — for a server on loopback only), the
// defaults below.
type Options struct {
	// Auth decides what each request may do (nil: no tokens, every request
	// is allowed everything). With Auth.ReadOnly every change is refused.
	Auth *httpauth.Auth
	// Logger receives internal errors (500s), with the cause the response
	// does not show. Default: slog.Default().
	Logger *slog.Logger
	// MaxBodyBytes bounds a request body (default DefaultMaxBodyBytes, 2 MiB);
	// a larger one is refused with code too_large.
	MaxBodyBytes int64
	// BodyTimeout bounds the time from the start of a request's handling
	// to the end of its body (zero or negative: DefaultBodyTimeout, 30s): a
	// body not sent whole by then is a 408 with code timeout. The API sets the
	// connection's read deadline for the body itself (replacing the
	// server's ReadTimeout), so that a client cannot hold a request open
	// by sending its body slowly, whatever server it is mounted on.
	BodyTimeout time.Duration
	// StatsMaxAge is how old the counts of /api/v1/stats may be (default
	// DefaultStatsMaxAge, 2s).
	StatsMaxAge time.Duration
	// MaxPageBytes bounds the JSON of a page of jobs (GET /jobs, GET /dlq;
	// default DefaultMaxPageBytes, 8 MiB): a page holds fewer jobs than
	// its limit when the next would pass it, with next_cursor, and at
	// least one job whatever its size.
	MaxPageBytes int64
}

// api is the handler New returns.
type api struct {
	c       *hopper.Client
	auth    *httpauth.Auth
	log     *slog.Logger
	maxBody int64
	bodyDue time.Duration
	maxAge  time.Duration
	maxPage int64
	mux     *http.ServeMux
	routes  []route
	handler http.Handler
}

// New returns the API's handler for c. Every path it answers starts with
// Prefix: mount it with mux.Handle("/api/v1/", h) (and mux.Handle("/api/v1",
// h), or the mux answers /api/v1 with a redirect), or serve it alone. A
// path or method it does not know is a JSON 404 or 405. c may be started
// or not: the API only reads and changes the store through it. New panics
// if c is nil.
func New(c *hopper.Client, o Options) http.Handler {
	if c == nil {
		panic("httpapi: New: nil client")
	}
	a := &api{
		c:       c,
		auth:    o.Auth,
		log:     cmp.Or(o.Logger, slog.Default()),
		maxBody: cmp.Or(o.MaxBodyBytes, DefaultMaxBodyBytes),
		bodyDue: cmp.Or(max(o.BodyTimeout, 0), DefaultBodyTimeout),
		maxAge:  cmp.Or(o.StatsMaxAge, DefaultStatsMaxAge),
		maxPage: cmp.Or(max(o.MaxPageBytes, 0), DefaultMaxPageBytes),
		mux:     http.NewServeMux(),
	}
	if a.auth == nil {
		a.auth = &httpauth.Auth{}
	}
	a.routes = a.table()
	// The mux routes by path alone, and each path by method: a literal
	// path (/jobs/batch) is then the route of every request for it, so a
	// method it does not take is a 405 with Allow rather than a request
	// for the job called "batch" (DELETE /jobs/{id}).
	var paths []string
	byPath := map[string][]route{}
	for _, rt := range a.routes {
		if byPath[rt.pattern] == nil {
			paths = append(paths, rt.pattern)
		}
		byPath[rt.pattern] = append(byPath[rt.pattern], rt)
	}
	for _, p := range paths {
		a.mux.Handle(p, a.byMethod(byPath[p]))
	}
	a.mux.HandleFunc("/", a.unknown)
	cop := http.NewCrossOriginProtection()
	cop.SetDenyHandler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		writeError(w, &Error{Status: http.StatusForbidden, Code: CodeForbidden,
			Message: "cross-origin request refused: call the API from a script or the same origin"})
	}))
	a.handler = cop.Handler(a.mux)
	return a
}

// ServeHTTP implements http.Handler.
func (a *api) ServeHTTP(w http.ResponseWriter, r *http.Request) { a.handler.ServeHTTP(w, r) }

// route is one operation of the API.
type route struct {
	method  string // GET, POST or DELETE
	pattern string // a ServeMux path pattern, Prefix included
	scope   httpauth.Scope
	// query lists the query parameters the route takes; others are refused.
	query []string
	serve func(w http.ResponseWriter, r *http.Request) error
}

// table lists every route: the one place they are declared. The OpenAPI
// document lists the same (a test checks both ways).
func (a *api) table() []route {
	const r, wr, ad, wk = httpauth.Read, httpauth.Write, httpauth.Admin, httpauth.Worker
	listQuery := []string{"state", "queue", "kind", "tag", "created_after", "created_before", "limit", "cursor", "order"}
	return []route{
		{"GET", Prefix + "/openapi.json", httpauth.None, nil, a.openAPI},

		{"POST", Prefix + "/jobs", wr, nil, a.enqueue},
		{"POST", Prefix + "/jobs/batch", wr, nil, a.enqueueBatch},
		{"GET", Prefix + "/jobs", r, listQuery, a.list},
		{"GET", Prefix + "/jobs/count", r, []string{"state", "queue", "kind", "tag"}, a.count},
		{"GET", Prefix + "/jobs/{id}", r, nil, a.get},
		{"GET", Prefix + "/jobs/{id}/output", r, []string{"attempt", "stream"}, a.output},
		{"POST", Prefix + "/jobs/{id}/cancel", wr, nil, a.cancel},
		{"POST", Prefix + "/jobs/{id}/reschedule", wr, nil, a.reschedule},
		{"DELETE", Prefix + "/jobs/{id}", ad, nil, a.deleteOne},
		{"POST", Prefix + "/jobs/delete", ad, nil, a.deleteMany},

		{"GET", Prefix + "/dlq", r, []string{"limit", "cursor"}, a.dlqList},
		{"POST", Prefix + "/dlq/retry", wr, nil, a.dlqRetry},
		{"POST", Prefix + "/dlq/purge", ad, nil, a.dlqPurge},

		{"GET", Prefix + "/schedules", r, nil, a.schedules},
		{"POST", Prefix + "/schedules", ad, nil, a.addSchedule},
		{"GET", Prefix + "/schedules/{name}", r, []string{"n"}, a.getSchedule},
		{"POST", Prefix + "/schedules/{name}/pause", wr, nil, a.pauseSchedule},
		{"POST", Prefix + "/schedules/{name}/resume", wr, nil, a.resumeSchedule},
		{"POST", Prefix + "/schedules/{name}/run", wr, []string{"force"}, a.runSchedule},
		{"POST", Prefix + "/schedules/{name}/backfill", wr, nil, a.backfillSchedule},
		{"DELETE", Prefix + "/schedules/{name}", ad, nil, a.removeSchedule},

		{"GET", Prefix + "/incidents", r, []string{"schedule", "check", "open", "limit", "cursor"}, a.incidents},
		{"GET", Prefix + "/channels", ad, nil, a.channels},
		{"POST", Prefix + "/channels/{name}", ad, nil, a.putChannel},
		{"DELETE", Prefix + "/channels/{name}", ad, nil, a.removeChannel},
		{"POST", Prefix + "/channels/{name}/test", ad, nil, a.testChannel},

		{"GET", Prefix + "/checks", r, nil, a.checks},
		{"POST", Prefix + "/checks", ad, nil, a.addCheck},
		{"GET", Prefix + "/checks/{name}", r, []string{"pings"}, a.getCheck},
		{"POST", Prefix + "/checks/{name}/pause", wr, nil, a.pauseCheck(true)},
		{"POST", Prefix + "/checks/{name}/resume", wr, nil, a.pauseCheck(false)},
		{"DELETE", Prefix + "/checks/{name}", ad, nil, a.removeCheck},

		{"GET", Prefix + "/queues", r, nil, a.queues},
		{"POST", Prefix + "/queues/{name}/pause", wr, []string{"key"}, a.pauseQueue},
		{"POST", Prefix + "/queues/{name}/resume", wr, []string{"key"}, a.resumeQueue},
		{"POST", Prefix + "/queues/{name}/limits", wr, nil, a.setQueueLimits},

		{"GET", Prefix + "/stats", r, nil, a.stats},
		{"GET", Prefix + "/servers", r, nil, a.servers},

		{"POST", Prefix + "/workers", wk, nil, a.registerWorker},
		{"GET", Prefix + "/workers", r, nil, a.listWorkers},
		{"DELETE", Prefix + "/workers/{id}", wk, nil, a.deregisterWorker},
		{"POST", Prefix + "/workers/{id}/fetch", wk, nil, a.fetch},
		{"POST", Prefix + "/workers/{id}/heartbeat", wk, nil, a.heartbeat},
		{"POST", Prefix + "/workers/{id}/complete", wk, nil, a.completeOne},
		{"POST", Prefix + "/workers/{id}/complete/batch", wk, nil, a.completeBatch},
		{"POST", Prefix + "/workers/{id}/fail", wk, nil, a.failOne},
		{"POST", Prefix + "/workers/{id}/fail/batch", wk, nil, a.failBatch},
		{"POST", Prefix + "/workers/{id}/snooze", wk, nil, a.snoozeOne},
		{"POST", Prefix + "/workers/{id}/snooze/batch", wk, nil, a.snoozeBatch},
		{"POST", Prefix + "/workers/{id}/quiet", wr, nil, a.quietWorker(false)},
		{"POST", Prefix + "/workers/{id}/stop", wr, nil, a.quietWorker(true)},
	}
}

// wrap bounds a request's body (reqbody.Limit: first, so that a body the
// route never reads is bounded too), checks its access and query
// parameters, runs the route and turns its error into the JSON error
// response. A route that changes something is audited (httpauth.Audit):
// the token's name, the remote address, the route, the status and the
// targets its handler notes.
func (a *api) wrap(rt route) http.Handler {
	var h http.Handler = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		reqbody.Limit(w, r, a.bodyDue, a.maxBody)
		defer func() {
			if p := recover(); p != nil {
				if p == http.ErrAbortHandler {
					panic(p)
				}
				a.log.Error("httpapi: panic", "method", r.Method, "path", r.URL.Path, "panic", p)
				writeError(w, &Error{Status: http.StatusInternalServerError, Code: CodeInternal, Message: "internal error"})
			}
		}()
		if rt.scope != httpauth.None {
			p, err := a.auth.Allow(r, rt.scope)
			if err != nil {
				writeError(w, rt.authError(err))
				return
			}
			httpauth.Identify(r, p)
			r = r.WithContext(httpauth.NewContext(r.Context(), p)) // for handlers that act as p (owner)
		}
		if err := checkQuery(r, rt.query); err != nil {
			a.fail(w, r, err)
			return
		}
		if err := rt.serve(w, r); err != nil {
			a.fail(w, r, err)
		}
	})
	if rt.method != http.MethodGet && !unaudited[rt.pattern] {
		h = httpauth.Audit(a.log, rt.method+" "+rt.pattern, h)
	}
	return h
}

// unaudited are the routes a remote worker calls for every job or every
// few seconds: an audit line each would drown the log. Their transitions
// are logged as the pool's are (job started, completed… at debug; failures
// at warn), and registering, leaving, quiet and stop are audited.
var unaudited = map[string]bool{
	Prefix + "/workers/{id}/fetch":          true,
	Prefix + "/workers/{id}/heartbeat":      true,
	Prefix + "/workers/{id}/complete":       true,
	Prefix + "/workers/{id}/complete/batch": true,
	Prefix + "/workers/{id}/fail":           true,
	Prefix + "/workers/{id}/fail/batch":     true,
	Prefix + "/workers/{id}/snooze":         true,
	Prefix + "/workers/{id}/snooze/batch":   true,
}

// authError is authError(err) for this route: a token that may not
// enqueue is told what enqueueing needs, exec jobs included, rather than
// only "write" and then, with a write token, "exec".
func (rt route) authError(err error) *Error {
	e := authError(err)
	var se *httpauth.ScopeError
	enqueue := rt.method == http.MethodPost && (rt.pattern == Prefix+"/jobs" || rt.pattern == Prefix+"/jobs/batch")
	if enqueue && errors.As(err, &se) && !se.ReadOnly {
		e.Message = "enqueueing needs write scope, and exec jobs exec or admin (this token has " + se.Have.String() + " scope)"
	}
	return e
}

// needToEnqueue checks that r may enqueue jobs of the kinds in ks: admin
// for notifications (hopper.NotifyKind), which only the server enqueues
// (they are signed, and go to the channels only admin sets, commands
// included), and the exec scope for a kind whose jobs run commands
// (kinds.RunsCommand).
func (a *api) needToEnqueue(r *http.Request, ks ...string) error {
	for _, k := range ks {
		if k == hopper.NotifyKind {
			if _, err := a.auth.Allow(r, httpauth.Admin); err != nil {
				e := authError(err)
				var se *httpauth.ScopeError
				if errors.As(err, &se) && !se.ReadOnly {
					e.Message = "jobs of kind " + hopper.NotifyKind + " are the server's notifications: enqueueing one needs an admin token (this one has " + se.Have.String() + " scope); POST /channels/{name}/test sends a test"
				}
				return e
			}
		}
	}
	for _, k := range ks {
		if kinds.RunsCommand(k) {
			return a.needExec(r, "enqueueing exec jobs")
		}
	}
	return nil
}

// mayRunCommands reports whether r's token may make jobs that run
// commands run (the exec scope), without counting a refusal.
func mayRunCommands(r *http.Request) bool {
	p, ok := httpauth.FromContext(r.Context())
	return ok && p.Scope.Includes(httpauth.Exec)
}

// needExec checks that r may do what, which makes a job that runs a
// command (kinds.RunsCommand) run: it needs the exec scope. A write token
// is not a shell: it may not enqueue such a job, nor retry one dead, nor
// run or backfill its schedule (docs/security.md).
func (a *api) needExec(r *http.Request, what string) error {
	if _, err := a.auth.Allow(r, httpauth.Exec); err != nil {
		e := authError(err)
		var se *httpauth.ScopeError
		if errors.As(err, &se) && !se.ReadOnly {
			e.Message = what + " runs commands on the server: it needs an exec or admin token (this one has " + se.Have.String() + " scope)"
		}
		return e
	}
	return nil
}

// GetOnly returns h for GET and HEAD requests; any other method gets the
// API's JSON 405 with Allow. For endpoints served beside the API (/metrics,
// /healthz, /readyz) on a mux whose catch-all would otherwise answer them.
func GetOnly(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodGet && r.Method != http.MethodHead {
			w.Header().Set("Allow", "GET, HEAD")
			writeError(w, &Error{Status: http.StatusMethodNotAllowed, Code: CodeMethodNotAllowed,
				Message: r.Method + " is not allowed here; allowed: GET, HEAD"})
			return
		}
		h.ServeHTTP(w, r)
	})
}

// Protect returns h behind auth: a request whose token has less than scope
// gets the API's JSON 401, 403 or 429 instead. It is for endpoints served
// beside the API, such as /metrics. A nil auth lets every request through.
func Protect(auth *httpauth.Auth, scope httpauth.Scope, h http.Handler) http.Handler {
	if auth == nil {
		return h
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		p, err := auth.Allow(r, scope)
		if err != nil {
			writeError(w, authError(err))
			return
		}
		h.ServeHTTP(w, r.WithContext(httpauth.NewContext(r.Context(), p)))
	})
}

// byMethod serves the routes of one path by the request's method (HEAD as
// GET); another method gets a 405 whose Allow lists the path's methods.
func (a *api) byMethod(rts []route) http.Handler {
	handlers := map[string]http.Handler{}
	var allowed []string
	for _, m := range []string{"GET", "POST", "DELETE"} {
		for _, rt := range rts {
			if rt.method == m {
				handlers[m] = a.wrap(rt)
				allowed = append(allowed, m)
			}
		}
	}
	allow := strings.Join(allowed, ", ")
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		m := r.Method
		if m == http.MethodHead {
			m = http.MethodGet
		}
		if h := handlers[m]; h != nil {
			h.ServeHTTP(w, r)
			return
		}
		w.Header().Set("Allow", allow)
		writeError(w, &Error{Status: http.StatusMethodNotAllowed, Code: CodeMethodNotAllowed,
			Message: r.Method + " is not allowed here; allowed: " + allow})
	})
}

// unknown answers requests for a path no route has: 404.
func (a *api) unknown(w http.ResponseWriter, r *http.Request) {
	writeError(w, &Error{Status: http.StatusNotFound, Code: CodeNotFound,
		Message: "no such route: " + r.URL.Path + " (the routes are listed at " + Prefix + "/openapi.json)"})
}
