package hopper

import (
	"errors"
	"time"

	"github.com/hopperq/hopper/job"
)

// The domain types, re-exported so that most programs import only hopper.
type (
	// Job is a job record; see job.Job.
	Job = job.Job
	// ID identifies a job.
	ID = job.ID
	// State is a job's state; see job.State and docs/state-machine.md.
	State = job.State
	// Event is one transition of one job.
	Event = job.Event
	// EventType names a transition.
	EventType = job.EventType
	// Schedule is a recurring schedule; see job.Schedule.
	Schedule = job.Schedule
	// Overlap is a schedule's overlap policy; see job.Overlap.
	Overlap = job.Overlap
	// JitterMode says how a schedule's jitter delays its jobs; see
	// job.JitterMode.
	JitterMode = job.JitterMode
	// FieldError reports invalid input, naming the field and the reason.
	FieldError = job.FieldError
	// Attempt records one attempt in a job's history.
	Attempt = job.Attempt
	// Monitor is what a schedule's monitor watches; see job.Monitor.
	Monitor = job.Monitor
	// Incident is one problem a monitor found; see job.Incident.
	Incident = job.Incident
	// Channel is a notification channel; see job.Channel.
	Channel = job.Channel
	// Notification is what a channel is sent; see job.Notification.
	Notification = job.Notification
)

// The job states.
const (
	StateScheduled = job.StateScheduled
	StateAvailable = job.StateAvailable
	StateRunning   = job.StateRunning
	StateRetrying  = job.StateRetrying
	StateCompleted = job.StateCompleted
	StateCancelled = job.StateCancelled
	StateDead      = job.StateDead
)

// Errors returned by the client; match them with errors.Is. Each condition
// has one sentinel, shared with the stores.
var (
	// ErrClosed: the client was stopped or its store closed; it accepts no
	// more jobs. A stopped client's own refusal is ErrClientStopped, which
	// matches ErrClosed too.
	ErrClosed = job.ErrClosed
	// ErrClientStopped: the client was stopped (Stop, StopNow); its text is
	// "hopper: client stopped", and errors.Is(ErrClientStopped, ErrClosed)
	// holds.
	ErrClientStopped error = stoppedError{}
	// ErrNotFound: no job or schedule with that ID or name.
	ErrNotFound = job.ErrNotFound
	// ErrNotWaiting: the job has started or finished, so it can no longer
	// be rescheduled.
	ErrNotWaiting = job.ErrNotWaiting
	// ErrDuplicate: a unique key or schedule name is taken (with
	// UniqueError).
	ErrDuplicate = job.ErrDuplicate
	// ErrNotDurable: closures cannot be stored by a durable store.
	ErrNotDurable = job.ErrNotDurable
	// ErrUnknownKind: no handler is registered for the kind. Enqueue and
	// AddSchedule return it (inside a *FieldError on "kind") for a kind
	// neither registered nor in Config.ExternalKinds; an attempt of a job
	// whose kind this client cannot run fails with it.
	ErrUnknownKind = job.ErrUnknownKind
	// ErrLeaseLost: a job's lease passed to another worker while it ran
	// (ProcessNext returns it when the outcome could not be recorded).
	ErrLeaseLost = job.ErrLeaseLost
	// ErrCancelled: the cause (context.Cause) of the context of a
	// handler whose job was cancelled (Cancel, an OverlapCancel tick).
	ErrCancelled = job.ErrCancelled
	// ErrTerminated: the cause (context.Cause) of the context of a
	// handler whose job was terminated (Terminate, an OverlapTerminate
	// tick) rather than cancelled: stop at once.
	ErrTerminated = job.ErrTerminated
	// ErrScheduleBusy: RunSchedule refused to run a schedule whose overlap
	// policy is skip while its previous job is available or running (with
	// a *ScheduleBusyError naming that job).
	ErrScheduleBusy = errors.New("hopper: the schedule's previous job has not finished")
)

// Permanent wraps a handler error so that the job fails permanently: it goes
// to the dead-letter queue at once, whatever attempts remain.
func Permanent(err error) error { return job.Permanent(err) }

// IsPermanent reports whether err was wrapped by Permanent.
func IsPermanent(err error) bool { return job.IsPermanent(err) }

// Snooze returns the error a handler returns to run its job again after d
// without burning an attempt — on meeting a rate limit (an HTTP 429), say:
// the job goes back to waiting (scheduled, EventSnoozed) with run-at
// now+d, its attempt not counted against MaxAttempts, with no backoff and
// no dead-letter queue; the attempt's record says "snoozed for d", and the
// job's LastError stays what it was. A negative d is 0. At most
// Config.MaxSnoozes snoozes in a row are taken so; a further one counts
// as a failed attempt. A job whose cancel was requested ends cancelled.
// Wrap a cause in a SnoozeError to keep it in the record.
func Snooze(d time.Duration) error { return job.Snooze(d) }

// HoldKey returns the error a handler returns to back off its whole key:
// on a 429 from a tenant's API, say. The job is snoozed for d (as Snooze:
// its attempt not counted, at most Config.MaxSnoozes in a row), and its
// key (EnqueueOptions.Key) is held in its queue for d, in the store, for
// every process: no other job of the key starts before the hold ends,
// while the queue's other keys go on. A job without a key is only
// snoozed. A negative d is 0.
func HoldKey(d time.Duration) error { return job.HoldKey(d) }

// SnoozeError is the error Snooze returns: Delay, and Err, an optional
// cause shown in the attempt's record ("snoozed for 30s: 429 Too Many
// Requests").
type SnoozeError = job.SnoozeError

// stoppedError is ErrClientStopped: a condition of its own that is also
// ErrClosed.
type stoppedError struct{}

func (stoppedError) Error() string        { return "hopper: client stopped" }
func (stoppedError) Is(target error) bool { return target == job.ErrClosed }
