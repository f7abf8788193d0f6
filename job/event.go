package job

import (
	"errors"
	"fmt"
	"time"
)

// EventType names a transition.
type EventType string

// The event types: one for each transition a caller may want to watch.
const (
	EventEnqueued        EventType = "enqueued"         // new job, waiting
	EventStarted         EventType = "started"          // claimed by a worker: running
	EventCompleted       EventType = "completed"        // attempt succeeded
	EventRetrying        EventType = "retrying"         // attempt failed, will retry after backoff
	EventDead            EventType = "dead"             // moved to the dead-letter queue
	EventCancelled       EventType = "cancelled"        // cancelled, waiting or running
	EventCancelRequested EventType = "cancel_requested" // Cancel hit a running job
	EventReleased        EventType = "released"         // given back by shutdown, waiting again
	EventSnoozed         EventType = "snoozed"          // its handler snoozed it (Snooze): waiting again, the attempt not counted
	EventRescued         EventType = "rescued"          // worker died; back to waiting (or dead)
	EventRescheduled     EventType = "rescheduled"      // new run-at or priority
	EventRetried         EventType = "retried"          // taken out of the dead-letter queue
)

// Event reports one transition of one job. Job is a snapshot taken at the
// transition, shared by every subscriber: read it, don't modify it.
type Event struct {
	Type EventType
	Job  *Job
	At   time.Time
}

// PermanentError marks a handler error that must not be retried: the job
// goes to the dead-letter queue at once, whatever attempts remain.
type PermanentError struct{ Err error }

// Error implements error.
func (e *PermanentError) Error() string { return "permanent: " + e.Err.Error() }

// Unwrap returns the wrapped error.
func (e *PermanentError) Unwrap() error { return e.Err }

// Permanent wraps err so that the attempt fails permanently. It returns nil
// for a nil err.
func Permanent(err error) error {
	if err == nil {
		return nil
	}
	return &PermanentError{Err: err}
}

// IsPermanent reports whether err wraps a *PermanentError.
func IsPermanent(err error) bool {
	var p *PermanentError
	return errors.As(err, &p)
}

// SnoozeError is a handler's request to run the job again after Delay
// without counting the attempt: the job goes back to waiting (scheduled)
// with run-at now+Delay, its attempt not counted against MaxAttempts, no
// backoff and no dead-letter queue. The attempt's record says "snoozed"
// with Error's text. Err, if set, says why (a 429 response, say).
//
// With HoldKey, the job's flow-control key (Job.Key) is held for Delay as
// well, in the same store transaction: no job of the key in the queue
// starts before the hold ends (HoldKey).
type SnoozeError struct {
	Delay   time.Duration
	Err     error
	HoldKey bool
}

// Error implements error: "snoozed for 30s" ("key held for 30s" with
// HoldKey), then ": " and Err's text.
func (e *SnoozeError) Error() string {
	what := "snoozed"
	if e.HoldKey {
		what = "key held"
	}
	if e.Err == nil {
		return fmt.Sprintf("%s for %s", what, e.Delay)
	}
	return fmt.Sprintf("%s for %s: %v", what, e.Delay, e.Err)
}

// Unwrap returns Err.
func (e *SnoozeError) Unwrap() error { return e.Err }

// Snooze returns the error a handler returns to run its job again after d
// without counting the attempt (see SnoozeError). A negative d is 0.
func Snooze(d time.Duration) error { return &SnoozeError{Delay: max(d, 0)} }

// HoldKey returns the error a handler returns to snooze its job for d and
// hold its key for d: the job and every other job of its key in its queue
// wait until the hold ends (see SnoozeError). A negative d is 0.
func HoldKey(d time.Duration) error { return &SnoozeError{Delay: max(d, 0), HoldKey: true} }

// SnoozeOf returns the *SnoozeError err wraps, or nil.
func SnoozeOf(err error) *SnoozeError {
	var s *SnoozeError
	if errors.As(err, &s) {
		return s
	}
	return nil
}

// FinishEvent is the event of an attempt's end that left its job in s, the
// state store Finish reported: completed, retrying, dead, cancelled,
// snoozed (scheduled again), or released (available again) for any other.
func FinishEvent(s State) EventType {
	switch s {
	case StateCompleted:
		return EventCompleted
	case StateRetrying:
		return EventRetrying
	case StateDead:
		return EventDead
	case StateCancelled:
		return EventCancelled
	case StateScheduled:
		return EventSnoozed
	default:
		return EventReleased
	}
}
