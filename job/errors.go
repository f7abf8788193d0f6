package job

import (
	"errors"
	"fmt"
)

// Domain errors. Stores translate their driver errors into these at the
// boundary, so callers can use errors.Is whatever the backend.
var (
	// ErrNotFound means no job (or schedule) has the given ID (or name).
	ErrNotFound = errors.New("not found")
	// ErrNotWaiting means the operation needs a waiting job (scheduled,
	// available or retrying) and the job is in another state.
	ErrNotWaiting = errors.New("job is not waiting")
	// ErrLeaseLost means a worker tried to finish or extend an attempt it no
	// longer owns: the job was rescued, cancelled or finished meanwhile.
	ErrLeaseLost = errors.New("job lease lost")
	// ErrDuplicate means a unique key (or schedule name) is already taken.
	ErrDuplicate = errors.New("duplicate")
	// ErrNotDurable means a job carries a Go closure and the store keeps jobs
	// on disk, where a closure cannot be saved.
	ErrNotDurable = errors.New("closures cannot be stored durably: register a handler for a kind and enqueue args instead")
	// ErrConflict means a compare-and-set lost: someone else changed the
	// record first.
	ErrConflict = errors.New("changed concurrently")
	// ErrClosed means the store or client has been closed.
	ErrClosed = errors.New("store closed")
	// ErrCancelled is the cause (context.Cause) of the context of a
	// handler whose job was cancelled (Cancel, an OverlapCancel tick): the
	// job ends cancelled, and the handler may clean up before it returns
	// (the exec kind sends its process group SIGTERM, then SIGKILL after
	// a grace).
	ErrCancelled = errors.New("job cancelled")
	// ErrTerminated is the cause of the context of a handler whose job
	// was terminated (killed) rather than cancelled: a tick of an
	// OverlapTerminate schedule, or Terminate. A handler that sees it
	// should stop at once, without the clean-up a cancel allows; the
	// exec kind sends SIGKILL instead of SIGTERM. The job ends cancelled.
	ErrTerminated = errors.New("job terminated")
	// ErrUnknownKind means no handler is registered for a job's kind.
	ErrUnknownKind = errors.New("no handler registered for this kind")
)

// TransitionError reports a state change the state machine forbids.
type TransitionError struct {
	ID       ID
	From, To State
}

// Error implements error.
func (e *TransitionError) Error() string {
	return fmt.Sprintf("job %d: illegal transition %s -> %s", e.ID, e.From, e.To)
}

// FieldError reports invalid input: the field and the reason. Nothing is
// changed when an operation returns one. Its parts are fields, so that no
// layer parses another's message: the API names "jobs[3].args" and the
// hopper command "line 4" from InBatch and Index, and errors.Is sees Err.
type FieldError struct {
	// InBatch says the input was one item of a batch (EnqueueMany of two
	// or more jobs), at Index, counted from 0; Field is then a field of
	// that item.
	InBatch bool
	Index   int
	// Field names the input at fault in the document's own terms
	// ("max_attempts", "retry.base").
	Field  string
	Reason string
	// Err, if set, is a sentinel the condition also matches with
	// errors.Is (ErrUnknownKind, say), or the error behind Reason.
	Err error
}

// Error implements error: "field: reason", or "[index].field: reason" for
// an item of a batch.
func (e *FieldError) Error() string {
	if e.InBatch {
		return fmt.Sprintf("[%d].%s: %s", e.Index, e.Field, e.Reason)
	}
	return e.Field + ": " + e.Reason
}

// Unwrap returns Err.
func (e *FieldError) Unwrap() error { return e.Err }

// At returns a copy of e about item i of a batch, its cause kept.
func (e *FieldError) At(i int) *FieldError {
	c := *e
	c.InBatch, c.Index = true, i
	return &c
}

// Invalid returns a *FieldError for field.
func Invalid(field, format string, args ...any) error {
	return &FieldError{Field: field, Reason: fmt.Sprintf(format, args...)}
}
