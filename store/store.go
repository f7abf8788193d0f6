// Package store defines Hopper's storage seam: the Store interface that every
// backend implements, shaped by operations. Each method is one atomic state
// transition of one or more jobs (see job.CanTransition), takes a context and
// a params struct carrying an explicit Now, and returns domain errors from
// package job (job.ErrNotFound, job.ErrNotWaiting, ...), never driver errors
// to match on.
//
// Backends live in subpackages (memstore, sqlitestore); package storetest is
// the conformance suite every backend passes.
package store

import (
	"context"
	"time"

	"github.com/hopperq/hopper/job"
)

// Store keeps jobs and schedules. Implementations are safe for concurrent use
// by many goroutines (and, for durable stores, many processes).
type Store interface {
	// Enqueue inserts jobs, already validated (job.Job.Validate), in order,
	// assigning IDs. A job whose UniqueKey matches a job that is waiting or
	// running is not inserted: its result carries the existing ID and
	// Duplicate. A job with a Func fails with job.ErrNotDurable on durable
	// stores. Either all jobs are inserted or none.
	Enqueue(ctx context.Context, p EnqueueParams) ([]EnqueueResult, error)

	// Claim promotes waiting jobs whose run-at has come to available, then
	// moves up to p.Limit available jobs to running — lowest priority number
	// first, then earliest run-at, then lowest ID — giving each a lease until
	// p.LeaseUntil, and returns them with Attempt incremented. A job is never
	// returned by two concurrent claims. The result also carries the earliest
	// run-at among jobs still waiting in the claimed queues, so the caller
	// knows when to ask again.
	Claim(ctx context.Context, p ClaimParams) (ClaimResult, error)

	// Finish applies the outcomes of attempts. Each outcome applies only if
	// the job is still running the same attempt (otherwise it is skipped and
	// reported false: the lease was lost). Returns one bool per outcome.
	Finish(ctx context.Context, p FinishParams) ([]bool, error)

	// Heartbeat extends the leases of running jobs the worker still owns and
	// returns the IDs among them whose cancellation was requested.
	Heartbeat(ctx context.Context, p HeartbeatParams) ([]job.ID, error)

	// Rescue moves running jobs whose lease expired before p.Now back to
	// available, recording an interrupted attempt, or to dead once their
	// consecutive crashes reach p.MaxCrashes. It returns the jobs it moved.
	Rescue(ctx context.Context, p RescueParams) ([]*job.Job, error)

	// Get returns a copy of a job, or job.ErrNotFound.
	Get(ctx context.Context, id job.ID) (*job.Job, error)
	// List returns jobs matching p, ordered by ID (ascending, or descending
	// with p.Desc).
	List(ctx context.Context, p ListParams) ([]*job.Job, error)
	// Count counts the jobs matching p's filters (States, Queue, Kind;
	// its paging fields are ignored).
	Count(ctx context.Context, p ListParams) (int, error)
	// Stats counts jobs by state and queue.
	Stats(ctx context.Context, p StatsParams) (Stats, error)

	// Cancel cancels a waiting job (returned in state cancelled), or, for a
	// running job, sets CancelRequested and returns it still running. A
	// finished job is returned unchanged with job.ErrNotWaiting.
	Cancel(ctx context.Context, p CancelParams) (*job.Job, error)
	// Reschedule moves a waiting job to a new run-at and/or priority;
	// job.ErrNotWaiting otherwise.
	Reschedule(ctx context.Context, p RescheduleParams) (*job.Job, error)
	// RetryDead moves dead jobs back to available with their attempt count
	// reset, and returns how many moved.
	RetryDead(ctx context.Context, p RetryDeadParams) (int, error)
	// Purge deletes finished jobs matching p and returns how many it deleted.
	Purge(ctx context.Context, p PurgeParams) (int, error)

	// AddSchedule inserts a recurring schedule, or job.ErrDuplicate if the
	// name is taken (unless p.Replace).
	AddSchedule(ctx context.Context, p AddScheduleParams) error
	// GetSchedule returns a schedule by name, or job.ErrNotFound.
	GetSchedule(ctx context.Context, name string) (*job.Schedule, error)
	// ListSchedules returns all schedules ordered by name.
	ListSchedules(ctx context.Context) ([]*job.Schedule, error)
	// UpdateSchedule changes a schedule's Paused flag and/or moves its next
	// tick, atomically; see UpdateScheduleParams.
	UpdateSchedule(ctx context.Context, p UpdateScheduleParams) (*job.Schedule, error)
	// RemoveSchedule deletes a schedule (its jobs stay), or job.ErrNotFound.
	RemoveSchedule(ctx context.Context, name string) error
	// FireSchedule enqueues the job of one tick and advances the schedule,
	// atomically, only if the schedule's NextRunAt still equals p.FireTime
	// (compare-and-set) and no job exists for (schedule, fire time). It
	// reports whether it fired; a tick is thus fired at most once, even by
	// several processes racing.
	FireSchedule(ctx context.Context, p FireScheduleParams) (FireResult, error)

	// Close releases the store's resources. Operations after Close return
	// job.ErrClosed.
	Close() error
}

// Waker is implemented by stores that can tell when jobs may have become
// available through another process (or connection) — for example the
// SQLite store watching its file, or PostgreSQL's LISTEN/NOTIFY. The runtime
// claims again whenever the channel receives.
type Waker interface {
	Wake() <-chan struct{}
}

// EnqueueParams are the arguments of Store.Enqueue.
type EnqueueParams struct {
	Now  time.Time
	Jobs []*job.Job // validated; the store sets ID and keeps its own copy
}

// EnqueueResult is the outcome of one enqueued job.
type EnqueueResult struct {
	ID        job.ID
	Duplicate bool      // an unfinished job with the same unique key exists; ID is that job's
	State     job.State // state of the job with ID
}

// ClaimParams are the arguments of Store.Claim.
type ClaimParams struct {
	Now        time.Time
	Limit      int       // at most this many jobs
	Worker     string    // owner recorded on the jobs
	LeaseUntil time.Time // lease deadline given to each claimed job
	// Queues, if not empty, restricts the claim to these queues.
	Queues []string
	// QueueLimits caps how many jobs of a queue this claim may take
	// (absent: no cap beyond Limit; 0: none from that queue).
	QueueLimits map[string]int
}

// ClaimResult is the outcome of Store.Claim.
type ClaimResult struct {
	Jobs []*job.Job
	// NextRunAt is the earliest run-at of jobs still scheduled or retrying
	// in the claimed queues, zero if there is none.
	NextRunAt time.Time
}

// FinishParams are the arguments of Store.Finish.
type FinishParams struct {
	Now      time.Time
	Outcomes []Outcome
}

// Outcome is how one attempt ended and what happens next.
type Outcome struct {
	ID      job.ID
	Attempt int // the attempt being finished; fences against lost leases
	// State is the job's next state: Completed, Retrying (with RunAt),
	// Dead, Cancelled, or Available for an attempt released by shutdown
	// (the attempt is then not counted).
	State  job.State
	RunAt  time.Time   // next run-at for Retrying
	Result []byte      // JSON result for Completed
	Error  string      // the attempt's error, if it failed
	Record job.Attempt // the attempt's history entry
}

// HeartbeatParams are the arguments of Store.Heartbeat.
type HeartbeatParams struct {
	Now        time.Time
	Worker     string
	IDs        []job.ID
	LeaseUntil time.Time
}

// RescueParams are the arguments of Store.Rescue.
type RescueParams struct {
	Now time.Time
	// MaxCrashes: a job whose consecutive interrupted attempts reach this
	// goes to dead as a poison pill; 0 means never.
	MaxCrashes int
}

// ListParams filters Store.List. Zero fields do not filter.
type ListParams struct {
	States  []job.State
	Queue   string
	Kind    string
	AfterID job.ID // with Desc, IDs below it
	Limit   int    // default 100
	Desc    bool
}

// StatsParams are the arguments of Store.Stats.
type StatsParams struct {
	Now time.Time
	// FinishedSince, if set, also counts jobs finished at or after it.
	FinishedSince time.Time
}

// Stats are job counts.
type Stats struct {
	// ByQueue maps queue → state → count; every queue with a job appears.
	ByQueue map[string]map[job.State]int
	// Finished counts jobs finished since StatsParams.FinishedSince, by
	// final state.
	Finished map[job.State]int
}

// CancelParams are the arguments of Store.Cancel.
type CancelParams struct {
	Now time.Time
	ID  job.ID
}

// RescheduleParams are the arguments of Store.Reschedule.
type RescheduleParams struct {
	Now      time.Time
	ID       job.ID
	RunAt    time.Time // zero keeps the current run-at
	Priority *int      // nil keeps the current priority
}

// RetryDeadParams are the arguments of Store.RetryDead.
type RetryDeadParams struct {
	Now time.Time
	IDs []job.ID // empty means every dead job
}

// PurgeParams select finished jobs to delete. States must name only
// finished states (completed, cancelled, dead).
type PurgeParams struct {
	States []job.State
	IDs    []job.ID  // if set, only these
	Before time.Time // if set, only jobs finished before it
	// KeepNewest, if positive, spares the newest N matching jobs (by finish
	// time) per state.
	KeepNewest int
}

// AddScheduleParams are the arguments of Store.AddSchedule.
type AddScheduleParams struct {
	Schedule *job.Schedule
	Replace  bool // overwrite a schedule of the same name
}

// UpdateScheduleParams are the arguments of Store.UpdateSchedule.
type UpdateScheduleParams struct {
	Name   string
	Paused *bool // nil leaves it
	// SetNext moves NextRunAt to Next if it still equals IfNext
	// (compare-and-set); on a mismatch nothing changes and the error is
	// job.ErrConflict.
	SetNext bool
	IfNext  time.Time
	Next    time.Time
}

// FireScheduleParams are the arguments of Store.FireSchedule.
type FireScheduleParams struct {
	Now      time.Time
	Name     string
	FireTime time.Time // must equal the schedule's NextRunAt
	Next     time.Time // the schedule's NextRunAt afterwards (zero: wait for completion)
	Job      *job.Job  // validated job to enqueue, with Schedule and FireTime set
}

// FireResult is the outcome of Store.FireSchedule.
type FireResult struct {
	Fired bool
	ID    job.ID // the job enqueued, when Fired
}
