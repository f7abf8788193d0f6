package job

import (
	"errors"
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
