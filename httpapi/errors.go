package httpapi

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"strconv"
	"strings"

	"github.com/hopperq/hopper"
	"github.com/hopperq/hopper/httpauth"
	"github.com/hopperq/hopper/internal/jsonerr"
	"github.com/hopperq/hopper/internal/reqbody"
	"github.com/hopperq/hopper/job"
)

// The error codes of the API: stable, for programs to branch on. Each has
// one HTTP status (see errorStatus).
const (
	CodeInvalid          = "invalid"             // 400: bad input; Field names it
	CodeTooLarge         = "too_large"           // 400: the body is over Options.MaxBodyBytes
	CodeUnauthorized     = "unauthorized"        // 401: no token, an unknown one, or an ended session
	CodeForbidden        = "forbidden"           // 403: the token's scope is too small, read-only server, cross-origin
	CodeNotFound         = "not_found"           // 404: no such job, schedule or route
	CodeMethodNotAllowed = "method_not_allowed"  // 405
	CodeTimeout          = "timeout"             // 408: the body did not arrive within Options.BodyTimeout
	CodeConflict         = "conflict"            // 409: the job's state does not allow it (e.g. rescheduling a running job), or a lease token is stale or foreign
	CodeDuplicate        = "duplicate"           // 409: a unique key or schedule name is taken
	CodeMisdirected      = "misdirected_request" // 421: the Host header names a host the server does not answer to (HostDenied)
	CodeTooManyRequests  = "too_many_requests"   // 429: too many failed authentications from the address, or long polls waiting; see Retry-After
	CodeUnavailable      = "unavailable"         // 503: the client is stopped, or the store does not answer
	CodeInternal         = "internal"            // 500: a store failure or a bug; the cause is logged, not shown
)

// Error is the API's error: what the JSON error response says. Handlers
// return one for conditions they detect themselves; errors from the client
// are translated by errorStatus.
type Error struct {
	// Status is the HTTP status of the response; Code's (see the Code
	// constants).
	Status int `json:"-"`
	// Code is one of the Code constants: stable, for programs.
	Code string `json:"code"`
	// Field names the input at fault, if any: a body field ("run_at",
	// "jobs[3].args", "retry.base"), a query parameter, or the path's "id"
	// or "name".
	Field string `json:"field,omitempty"`
	// Message says what is wrong, for people.
	Message string `json:"message"`

	retryAfter int // seconds, for the Retry-After header of a 429
}

// Error implements error.
func (e *Error) Error() string {
	if e.Field != "" {
		return e.Field + ": " + e.Message
	}
	return e.Message
}

// invalid returns a 400 naming field.
func invalid(field, msg string) error {
	return &Error{Status: http.StatusBadRequest, Code: CodeInvalid, Field: field, Message: msg}
}

// errorStatus is the one table from errors to responses. The sentinels are
// hopper's; a *hopper.FieldError is bad input naming its field; a
// *http.MaxBytesError is a body over the limit; a *reqbody.TimeoutError a
// body that did not arrive in time. Anything else is a 500.
var errorStatus = []struct {
	err    error
	status int
	code   string
}{
	{hopper.ErrNotFound, http.StatusNotFound, CodeNotFound},
	{hopper.ErrNotWaiting, http.StatusConflict, CodeConflict},
	{job.ErrConflict, http.StatusConflict, CodeConflict}, // a compare-and-set lost to another change
	{hopper.ErrScheduleBusy, http.StatusConflict, CodeConflict},
	{hopper.ErrDuplicate, http.StatusConflict, CodeDuplicate},
	{hopper.ErrUnknownKind, http.StatusBadRequest, CodeInvalid},
	{hopper.ErrNotDurable, http.StatusBadRequest, CodeInvalid},
	{hopper.ErrUnknownWorker, http.StatusNotFound, CodeNotFound},
	{hopper.ErrLeaseLost, http.StatusConflict, CodeConflict},
	{hopper.ErrClosed, http.StatusServiceUnavailable, CodeUnavailable},
	{context.Canceled, http.StatusServiceUnavailable, CodeUnavailable},
	{context.DeadlineExceeded, http.StatusServiceUnavailable, CodeUnavailable},
}

// toError translates err into the response's error, naming the field of
// a *hopper.FieldError by rename (nil: its Field).
func toError(err error, rename func(*hopper.FieldError) string) *Error {
	var e *Error
	if errors.As(err, &e) {
		return e
	}
	var fe *hopper.FieldError
	if errors.As(err, &fe) {
		field := fe.Field
		if rename != nil {
			field = rename(fe)
		}
		return &Error{Status: http.StatusBadRequest, Code: CodeInvalid, Field: field, Message: jsonerr.ArgsReason(fe, fe.Reason)}
	}
	var mb *http.MaxBytesError
	if errors.As(err, &mb) {
		return &Error{Status: http.StatusBadRequest, Code: CodeTooLarge, Field: "body",
			Message: "the body is larger than the limit of " + strconv.FormatInt(mb.Limit, 10) + " bytes"}
	}
	var te *reqbody.TimeoutError
	if errors.As(err, &te) {
		return &Error{Status: http.StatusRequestTimeout, Code: CodeTimeout, Field: "body", Message: te.Error()}
	}
	if errors.Is(err, hopper.ErrBusy) || errors.Is(err, hopper.ErrTooManyWorkers) {
		return &Error{Status: http.StatusTooManyRequests, Code: CodeTooManyRequests, Message: err.Error(), retryAfter: 1}
	}
	for _, s := range errorStatus {
		if errors.Is(err, s.err) {
			return &Error{Status: s.status, Code: s.code, Message: err.Error()}
		}
	}
	return nil
}

// authError translates an error of httpauth.Auth.Allow: 401, 403 or 429.
func authError(err error) *Error {
	var se *httpauth.ScopeError
	var te *httpauth.ThrottledError
	switch {
	case errors.As(err, &te):
		return &Error{Status: http.StatusTooManyRequests, Code: CodeTooManyRequests, Message: err.Error(), retryAfter: te.RetryAfterSeconds()}
	case errors.As(err, &se):
		return &Error{Status: http.StatusForbidden, Code: CodeForbidden, Message: err.Error()}
	}
	return &Error{Status: http.StatusUnauthorized, Code: CodeUnauthorized, Message: err.Error()}
}

// HostDenied is the httpauth.HostOptions.Deny of a server that serves the
// API beside other handlers: a request under Prefix gets the API's JSON
// error (421, code misdirected_request), any other httpauth.DenyHost's
// page.
func HostDenied(w http.ResponseWriter, r *http.Request, err *httpauth.HostError) {
	if r.URL.Path != Prefix && !strings.HasPrefix(r.URL.Path, Prefix+"/") {
		httpauth.DenyHost(w, r, err)
		return
	}
	writeError(w, &Error{Status: http.StatusMisdirectedRequest, Code: CodeMisdirected, Message: err.Error()})
}

// fail writes err as the response: translated by the table, or a 500 whose
// cause goes to the log only.
func (a *api) fail(w http.ResponseWriter, r *http.Request, err error) {
	e := toError(err, nil)
	if e == nil {
		a.log.Error("httpapi: internal error", "method", r.Method, "path", r.URL.Path, "error", err)
		e = &Error{Status: http.StatusInternalServerError, Code: CodeInternal, Message: "internal error (logged by the server)"}
	}
	writeError(w, e)
}

func writeError(w http.ResponseWriter, e *Error) {
	if e.Status == http.StatusUnauthorized {
		w.Header().Set("WWW-Authenticate", `Bearer realm="hopper"`)
	}
	if e.retryAfter > 0 {
		w.Header().Set("Retry-After", strconv.Itoa(e.retryAfter))
	}
	reply(w, e.Status, struct {
		Error *Error `json:"error"`
	}{e})
}

// reply writes v as the JSON response with status.
func reply(w http.ResponseWriter, status int, v any) {
	b, err := json.Marshal(v)
	if err != nil {
		// Only values of this package are written; they always encode.
		status, b = http.StatusInternalServerError, []byte(`{"error":{"code":"internal","message":"cannot encode the response"}}`)
	}
	replyJSON(w, status, b)
}

// replyJSON writes b, a JSON value, as reply does.
func replyJSON(w http.ResponseWriter, status int, b []byte) {
	h := w.Header()
	h.Set("Content-Type", "application/json; charset=utf-8")
	h.Set("Cache-Control", "no-store")
	h.Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(status)
	b = append(b, '\n')
	_, _ = w.Write(b)
}
