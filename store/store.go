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
	"errors"
	"time"

	"github.com/hopperq/hopper/job"
)

// Store keeps jobs and schedules. Implementations are safe for concurrent use
// by many goroutines (and, for durable stores, many processes).
type Store interface {
	// Enqueue inserts jobs, already validated (job.Job.Validate), in order,
	// assigning IDs. A job whose UniqueKey matches a job that is waiting or
	// running is not inserted: its result carries the existing ID and
	// Duplicate — unless the job has a Debounce: then a waiting holder
	// takes it in (ApplyDebounce; the result carries the holder's ID and
	// Debounced), and a running holder gives up its key (TakeOverKey) to
	// the job, which is inserted. A job with a Func fails with
	// job.ErrNotDurable on durable stores. Either all jobs are inserted
	// (or merged) or none. Jobs are taken in order: a debounced job merges
	// into an earlier job of the same call too.
	Enqueue(ctx context.Context, p EnqueueParams) ([]EnqueueResult, error)

	// Claim promotes waiting jobs whose run-at has come to available, then
	// moves up to p.Limit available jobs of p.Queues and p.Kinds to running
	// (ApplyClaim) — lowest priority number first, then earliest run-at,
	// then lowest ID — giving each a lease until p.LeaseUntil and a new
	// claim number (job.Job.Claims, one more than its last), and returns
	// them. A job is never returned by two concurrent claims. The result
	// also carries the earliest run-at among jobs still waiting in the
	// claimed queues, so the caller knows when to ask again.
	Claim(ctx context.Context, p ClaimParams) (ClaimResult, error)

	// Finish applies the outcomes of attempts, each as ApplyFinish says:
	// only to a job still running the same claim (Outcome.Claim) of the
	// same attempt. It returns, per
	// outcome, the state the job reached (FinishState: a cancel requested
	// meanwhile wins over a failure), or zero if the outcome was skipped:
	// the lease was lost. An outcome whose target state is not a running
	// job's next state fails the call with a *job.TransitionError, changing
	// nothing.
	Finish(ctx context.Context, p FinishParams) ([]job.State, error)

	// Heartbeat extends the leases of the claims the worker still owns
	// (the job still running, under p.Worker, the claim Lease.Claim names)
	// and reports those whose cancellation was requested, and those it no
	// longer owns (finished, snoozed, released, rescued or deleted
	// meanwhile, even if the same worker claimed the job again since).
	Heartbeat(ctx context.Context, p HeartbeatParams) (HeartbeatResult, error)

	// Rescue applies ApplyRescue to the running jobs whose lease expired
	// before p.Now (or whose worker the store knows to be dead): back to
	// available with an interrupted attempt recorded, to cancelled if their
	// cancellation was requested, or to dead once their consecutive crashes
	// reach p.MaxCrashes or their attempts are used up. It returns the jobs
	// as it left them.
	Rescue(ctx context.Context, p RescueParams) ([]*job.Job, error)

	// Get returns a copy of a job, or job.ErrNotFound.
	Get(ctx context.Context, id job.ID) (*job.Job, error)
	// List returns jobs matching p, ordered by ID (ascending, or descending
	// with p.Desc).
	List(ctx context.Context, p ListParams) ([]*job.Job, error)
	// Count counts the jobs matching p's States, Queue and Kind (the
	// paging fields and the creation range are List's only).
	Count(ctx context.Context, p ListParams) (int, error)
	// Stats counts jobs by state and queue.
	Stats(ctx context.Context, p StatsParams) (Stats, error)

	// Cancel applies ApplyCancel: a waiting job is returned cancelled; a
	// running job is returned still running with CancelRequested set. A
	// finished job is returned unchanged with job.ErrNotWaiting.
	Cancel(ctx context.Context, p CancelParams) (*job.Job, error)
	// Reschedule applies ApplyReschedule to a waiting job and returns it;
	// a job in another state is returned unchanged with job.ErrNotWaiting.
	Reschedule(ctx context.Context, p RescheduleParams) (*job.Job, error)
	// RetryDead applies ApplyRetryDead to the dead jobs p selects and
	// returns how many moved. A dead job whose unique key another
	// unfinished job holds stays dead. Invalid p (see its Validate) is a
	// *job.FieldError.
	RetryDead(ctx context.Context, p RetryDeadParams) (int, error)
	// Purge deletes the finished jobs p selects and returns how many it
	// deleted. Invalid p (see its Validate) is a *job.FieldError. A store
	// may delete a large selection in several transactions (bounded
	// batches keep locks short); finished jobs change no more, so each
	// batch is still exactly the selection's jobs.
	Purge(ctx context.Context, p PurgeParams) (int, error)

	// CancelMatching applies ApplyCancel, in one transaction, to the next
	// batch of the jobs p selects that are waiting or running
	// (CancelStates): those with the lowest IDs above p.AfterID, at most
	// p.Size() of them, among the IDs up to p.Last(). A waiting job is
	// cancelled; a running job gets CancelRequested (and is listed in
	// Running). Invalid p (see its Validate) is a *job.FieldError. See
	// MatchParams.Next for where the next batch starts.
	CancelMatching(ctx context.Context, p MatchParams) (MatchResult, error)
	// RetryMatching applies ApplyRetryDead, in one transaction, to the
	// next batch of the dead jobs p selects (as CancelMatching picks its
	// batch), except those whose unique key another unfinished job holds:
	// they stay dead and are counted as Skipped.
	RetryMatching(ctx context.Context, p MatchParams) (MatchResult, error)
	// DeleteMatching deletes, in one transaction, the next batch of the
	// finished jobs p selects (as CancelMatching picks its batch).
	DeleteMatching(ctx context.Context, p MatchParams) (MatchResult, error)

	// AddSchedule inserts a recurring schedule, or job.ErrDuplicate if the
	// name is taken (unless p.Replace). Once it succeeded, p.Schedule's
	// times (NextRunAt, CreatedAt, …) are those stored, as GetSchedule
	// returns them: a store keeping a coarser precision (PostgreSQL:
	// microseconds) truncates them in p.Schedule too.
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
	// FireSchedule handles one tick atomically, only if the schedule's
	// NextRunAt still equals p.FireTime (compare-and-set) and the schedule
	// is not paused (a pause that commits while a tick is being fired wins):
	// it enqueues the
	// tick's job unless one exists for (schedule, fire time) or p.SkipIfBusy
	// finds the previous job busy, and advances the schedule. A tick is thus
	// fired at most once, even by several processes racing. See
	// FireScheduleParams and FireResult.
	FireSchedule(ctx context.Context, p FireScheduleParams) (FireResult, error)

	// Monitor: the schedules' incidents, the notification channels and
	// the latest runs of a schedule (monitor.go).
	Monitoring
	// Checks: the external checks and their ping logs (checks.go).
	Checks
	// Outputs returns the outputs of job p.ID's attempts that wrote any
	// (an Outcome's Output), ordered by attempt, or only that of
	// p.Attempt if positive: none (no error) if there is none, or no such
	// job. The job's schedule and each attempt's success and finish time
	// are filled in.
	Outputs(ctx context.Context, p OutputsParams) ([]*job.Output, error)
	// PruneOutputs deletes the outputs of p.Schedule's runs that p.Keep
	// does not keep, and returns how many it deleted. Invalid p (see its
	// Validate) is a *job.FieldError. A job's outputs are deleted with the
	// job too, however it is deleted.
	PruneOutputs(ctx context.Context, p PruneOutputsParams) (int, error)

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

// DeathWatcher is implemented by stores that notice soon, by themselves,
// that another process using the store died — the SQLite store sees a
// dead process's lock file become lockable, within a second. Deaths
// receives then (at most one signal pending); the jobs that process was
// running are up for Rescue at once (their leases count as expired), and
// the client rescues them and holds an election without waiting for its
// rescue interval or its leader's lease to run out.
type DeathWatcher interface {
	Deaths() <-chan struct{}
}

// Identity is implemented by stores that name the process in leases
// themselves (the SQLite store ties the name to its lock file). A client
// on such a store uses WorkerID as its ClaimParams.Worker.
type Identity interface {
	WorkerID() string
}

// Clock is implemented by stores that processes on several hosts share. Now
// returns the store's idea of the current time — the database server's
// clock, as this process best knows it — and a client on such a store
// stamps every operation with it, so that leases and run-at times mean the
// same on every host whatever each host's own clock says.
type Clock interface {
	Now() time.Time
}

// Leader is implemented by stores that several processes share. Of the
// processes asking to lead under one name, one at a time holds a lease and
// runs the maintenance services (rescue, retention, schedules); it renews
// the lease while it runs, and another takes over once it expires. Each
// take-over starts a new term. A holder whose lease expired — a frozen
// process that woke up — learns it at its next Lead and must stop.
type Leader interface {
	// Lead acquires, renews or reports the lease of p.Name: if it is free,
	// expired or p.Holder's, p.Holder holds it until p.Now+p.TTL (a new
	// term unless p.Holder held it unexpired); otherwise the result names
	// the current holder.
	Lead(ctx context.Context, p LeadParams) (LeadResult, error)
	// Resign gives the lease up if p.Holder holds it in term p.Term.
	Resign(ctx context.Context, p LeadParams) error
}

// LeadParams are the arguments of Leader.Lead and Leader.Resign.
type LeadParams struct {
	Now    time.Time
	Name   string // what is led, e.g. "maintenance"
	Holder string // the process asking (its worker ID)
	TTL    time.Duration
	Term   int64 // for Resign: the term being given up
}

// LeadResult is the outcome of Leader.Lead.
type LeadResult struct {
	Leader bool      // p.Holder holds the lease
	Holder string    // the holder
	Term   int64     // its term; grows by one at each take-over
	Until  time.Time // when the lease expires unless renewed
}

// Pinger is implemented by stores that can be unreachable or out of date:
// Ping returns nil when the store answers and its schema is the one this
// binary knows (for a readiness check), or an error saying what is wrong:
// ErrNoSchema, ErrSchemaTooOld or ErrSchemaTooNew among others.
type Pinger interface {
	Ping(ctx context.Context) error
}

// TxEnqueuer is implemented by stores that can enqueue inside a transaction
// of the application's own — a pgx.Tx for PostgreSQL, a *sql.Tx for SQLite —
// so that the jobs exist if and only if that transaction commits. tx of
// another type is an error.
type TxEnqueuer interface {
	EnqueueTx(ctx context.Context, tx any, p EnqueueParams) ([]EnqueueResult, error)
}

// EnqueueParams are the arguments of Store.Enqueue.
type EnqueueParams struct {
	Now time.Time
	// Jobs are validated. The store keeps its own copy of what it needs:
	// it holds no reference to them, or to anything they point to, once
	// Enqueue returns.
	Jobs []*job.Job
}

// CheckNewJob returns an error unless j, job i (from 0) of the n an
// Enqueue, EnqueueTx or FireSchedule call was given, is one those take:
// not nil, prepared by job.Job.Validate (scheduled or available, run-at and
// creation time set), and within the bounds of its integer fields
// (job.CheckMaxAttempts, job.CheckPriority), its Debounce, if any, valid
// and with a unique key. Every store calls it on each
// job before it changes anything, so that all of them refuse what one of
// them could not hold; the error is a *job.FieldError naming the field.
func CheckNewJob(j *job.Job, i, n int) error {
	if j == nil {
		return job.Invalid("jobs", "job %d of %d is nil", i+1, n)
	}
	if st := j.State; (st != job.StateScheduled && st != job.StateAvailable) || j.RunAt.IsZero() || j.CreatedAt.IsZero() {
		return job.Invalid("state", "job %d of %d (%s) is %s, run-at %v: Enqueue takes jobs validated by job.Job.Validate",
			i+1, n, j.Kind, j.State, j.RunAt)
	}
	err := job.CheckMaxAttempts("max_attempts", j.MaxAttempts)
	if err == nil {
		err = job.CheckPriority("priority", j.Priority)
	}
	if err == nil {
		err = j.Debounce.Check("debounce")
	}
	if err == nil && !j.Debounce.IsZero() && j.UniqueKey == "" {
		err = job.Invalid("debounce", "needs a unique key")
	}
	if fe := (*job.FieldError)(nil); errors.As(err, &fe) {
		return job.Invalid(fe.Field, "job %d of %d (%s): %s", i+1, n, j.Kind, fe.Reason)
	}
	return nil
}

// EnqueueResult is the outcome of one enqueued job.
type EnqueueResult struct {
	ID        job.ID
	Duplicate bool      // an unfinished job with the same unique key exists; ID is that job's
	Debounced bool      // the job was merged into the waiting job holding its key (ApplyDebounce); ID is that job's
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
	// Kinds, if not empty, restricts the claim to jobs of these kinds: a
	// worker claims only what it can run.
	Kinds []string
	// QueueLimits caps how many jobs of a queue this claim may take
	// (absent: no cap beyond Limit; 0: none from that queue).
	QueueLimits map[string]int
	// Reuse, if set, holds jobs the caller has done with: a store may
	// overwrite Reuse[i] with the i-th claimed job and return it as
	// ClaimResult.Jobs[i] instead of allocating a new one. It keeps no
	// reference to them. Stores are free to ignore it.
	Reuse []*job.Job
}

// ClaimResult is the outcome of Store.Claim.
type ClaimResult struct {
	Jobs []*job.Job
	// NextRunAt is the earliest run-at of jobs still scheduled or retrying
	// in the claimed queues, zero if there is none.
	NextRunAt time.Time
	// Held reports that a queue's concurrency limit (QueueControl) may
	// have left ready jobs behind: a queue the claim could take from
	// has, after it, no free slot (or had no more than the claim could
	// take). The caller should claim again once one of its own attempts
	// ends, best with that attempt's outcome (FinishClaimer).
	Held bool
	// ThrottledUntil is, when a queue's throttle (Rate) held back ready
	// jobs the claim could otherwise have taken, the earliest time one of
	// those throttles allows a start again: the caller should claim again
	// then. Zero if no throttle held a job back.
	ThrottledUntil time.Time
	// Dropped are the jobs the claim dropped, as it left them (cancelled,
	// LastError DropReason or KeyDropReason): ready jobs of a queue whose
	// Rate drops its excess, or of a key of a queue whose KeyRate does,
	// which the claim would have taken but for the rate. The caller
	// should claim again at once when it is not empty.
	Dropped []*job.Job
}

// FinishParams are the arguments of Store.Finish.
type FinishParams struct {
	Now      time.Time
	Outcomes []Outcome
}

// Outcome is how one attempt ended and what happens next.
type Outcome struct {
	ID      job.ID
	Attempt int // the attempt being finished: its number in outputs and the fence
	// Claim is the claim being finished (job.Job.Claims as the claim
	// returned it): the fence against lost leases. The outcome applies
	// only while the job still runs this claim, so an outcome of an
	// earlier claim is refused even when the attempt number is the same
	// (a snoozed or released attempt's number is used again).
	Claim int64
	// State is the job's next state: Completed, Retrying (with RunAt),
	// Dead, Cancelled, Scheduled (with RunAt) for an attempt whose handler
	// snoozed the job, or Available for an attempt released by shutdown
	// (the attempt is then not counted, snoozed or released).
	State  job.State
	RunAt  time.Time   // next run-at for Retrying
	Result []byte      // JSON result for Completed
	Error  string      // the attempt's error, if it failed
	Record job.Attempt // the attempt's history entry
	// HoldKeyUntil, if set, holds the job's key (job.Job.Key) in its queue
	// until then, in the transaction that ends the attempt (a handler's
	// HoldKey: KeyControl); a job without a key ignores it.
	HoldKeyUntil time.Time
	// Output, if set, is what the attempt wrote, kept apart from the job
	// (Outputs) when the outcome applies, replacing the output of an
	// earlier run of the same attempt number (one released or snoozed).
	Output *PackedOutput
}

// HeartbeatParams are the arguments of Store.Heartbeat.
type HeartbeatParams struct {
	Now        time.Time
	Worker     string
	Jobs       []Lease // the claims the worker runs
	LeaseUntil time.Time
}

// Lease names one claim of a job a worker holds: the job and its claim
// number (job.Job.Claims as the claim returned it), which no other claim
// of the job has.
type Lease struct {
	ID    job.ID
	Claim int64
}

// HeartbeatResult is the outcome of Store.Heartbeat.
type HeartbeatResult struct {
	// Cancel lists the renewed jobs whose cancellation was requested.
	Cancel []job.ID
	// Terminate lists those of Cancel whose cancel is a terminate
	// (TerminateRequested): their handlers are killed.
	Terminate []job.ID
	// Lost lists the claims the worker no longer owns: the job is no
	// longer running that claim under this worker. Their handlers must
	// stop; their outcomes will not apply.
	Lost []Lease
}

// RescueParams are the arguments of Store.Rescue.
type RescueParams struct {
	Now time.Time
	// MaxCrashes: a job whose consecutive interrupted attempts reach this
	// goes to dead as a poison pill; 0 means never.
	MaxCrashes int
}

// ListParams filters Store.List and Store.Count. Zero fields do not
// filter: they only read.
type ListParams struct {
	States []job.State
	Queue  string
	Kind   string
	// Tag, if set, keeps jobs whose Tags hold it; Count filters by it
	// too. Backends index it so that a page of a tag's jobs, and their
	// count, do not scan the jobs without it.
	Tag     string
	AfterID job.ID // with Desc, IDs below it
	Limit   int    // 0: DefaultListLimit (PageLimit)
	Desc    bool
	// CreatedAfter and CreatedBefore, if set, keep jobs created at or
	// after, and before, these times.
	CreatedAfter  time.Time
	CreatedBefore time.Time
}

// DefaultListLimit is the page of a List whose Limit is 0: every store's
// and the API's.
const DefaultListLimit = 100

// PageLimit is the number of jobs a List of p returns at most: Limit, or
// DefaultListLimit for 0.
func (p ListParams) PageLimit() int {
	if p.Limit <= 0 {
		return DefaultListLimit
	}
	return p.Limit
}

// StatsParams are the arguments of Store.Stats.
type StatsParams struct {
	Now time.Time
	// FinishedSince, if set, also counts jobs finished at or after it.
	FinishedSince time.Time
	// Step, if set with FinishedSince, also counts those jobs by step of
	// this length from FinishedSince (Stats.Series).
	Step time.Duration
}

// Stats are job counts.
type Stats struct {
	// ByQueue maps queue → state → count; every queue with a job appears.
	ByQueue map[string]map[job.State]int
	// Finished counts jobs finished since StatsParams.FinishedSince, by
	// final state.
	Finished map[job.State]int
	// FirstFinished is the earliest FinishedAt among the jobs Finished
	// counts (zero if none).
	FirstFinished time.Time
	// OldestAvailable maps each queue with available jobs to the earliest
	// RunAt among them: how long its most overdue job has waited for a
	// worker.
	OldestAvailable map[string]time.Time
	// Series counts, by final state, the jobs finished in each step of
	// StatsParams.Step from FinishedSince: Series[s][i] those finished in
	// [FinishedSince + i×Step, FinishedSince + (i+1)×Step), for the steps
	// up to Now. Nil without a Step.
	Series map[job.State][]int
}

// Steps returns how many steps of step fit from since up to now, the last
// one partial: the length of each of Stats.Series's slices.
func Steps(since, now time.Time, step time.Duration) int {
	if step <= 0 || now.Before(since) {
		return 0
	}
	return int(now.Sub(since)/step) + 1
}

// CancelParams are the arguments of Store.Cancel.
type CancelParams struct {
	Now time.Time
	ID  job.ID
	// Terminate applies ApplyTerminate instead of ApplyCancel: a running
	// job's worker kills it (HeartbeatResult.Terminate).
	Terminate bool
}

// RescheduleParams are the arguments of Store.Reschedule.
type RescheduleParams struct {
	Now      time.Time
	ID       job.ID
	RunAt    time.Time // zero keeps the current run-at
	Priority *int      // nil keeps the current priority
}

// RetryDeadParams are the arguments of Store.RetryDead: the given IDs, or
// every dead job with All. An empty selection never means all.
type RetryDeadParams struct {
	Now time.Time
	IDs []job.ID
	All bool
}

// Validate returns a *job.FieldError unless p selects jobs explicitly: IDs
// or All, not both.
func (p RetryDeadParams) Validate() error {
	switch {
	case len(p.IDs) == 0 && !p.All:
		return job.Invalid("ids", "give job IDs, or All to retry every dead job")
	case len(p.IDs) > 0 && p.All:
		return job.Invalid("ids", "give job IDs or All, not both")
	}
	return nil
}

// PurgeParams select finished jobs to delete: of States (finished states
// only), those matching every filter given. At least one of IDs, Before,
// KeepNewest or All must be given: an empty selection never means all.
type PurgeParams struct {
	States []job.State
	IDs    []job.ID  // only these
	Before time.Time // only jobs finished before it
	// KeepNewest, if positive, spares the newest N matching jobs (by finish
	// time, then ID) per state.
	KeepNewest int
	// All selects every job of States; it excludes the other filters.
	All bool
}

// Validate returns a *job.FieldError unless p is a selection Purge takes.
func (p PurgeParams) Validate() error {
	if len(p.States) == 0 {
		return job.Invalid("states", "give the finished states to purge")
	}
	for _, st := range p.States {
		if !st.Finished() {
			return job.Invalid("states", "can only purge completed, cancelled or dead jobs, not %s", st)
		}
	}
	filtered := len(p.IDs) > 0 || !p.Before.IsZero() || p.KeepNewest > 0
	switch {
	case !filtered && !p.All:
		return job.Invalid("ids", "give job IDs, a finish time, a number to keep, or All to purge every job of the states")
	case filtered && p.All:
		return job.Invalid("ids", "All excludes the other filters")
	case p.KeepNewest < 0:
		return job.Invalid("keep_newest", "must not be negative")
	}
	return nil
}

// AddScheduleParams are the arguments of Store.AddSchedule.
type AddScheduleParams struct {
	Schedule *job.Schedule
	Replace  bool // overwrite a schedule of the same name
}

// Validate returns a *job.FieldError unless p's schedule is one every store
// can keep: named, with a MaxAttempts of zero (the default) or within
// job.CheckMaxAttempts's bounds and a Priority within job.CheckPriority's
// or job.PriorityZero.
// Stores call it before they change anything.
func (p AddScheduleParams) Validate() error {
	sc := p.Schedule
	if sc == nil || sc.Name == "" {
		return job.Invalid("name", "must not be empty")
	}
	if sc.MaxAttempts != 0 {
		if err := job.CheckMaxAttempts("max_attempts", sc.MaxAttempts); err != nil {
			return err
		}
	}
	if err := sc.OutputRetention.Check("output_retention"); err != nil {
		return err
	}
	if sc.Priority == job.PriorityZero {
		return nil
	}
	return job.CheckPriority("priority", sc.Priority)
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
	FireTime time.Time // must equal the schedule's NextRunAt (IfNext, if set)
	Next     time.Time // the schedule's NextRunAt afterwards (zero: wait for completion)
	Job      *job.Job  // validated job to enqueue, with Schedule and FireTime set
	// IfNext, if set, is the NextRunAt the tick is fired from instead of
	// FireTime, a later tick: a catch-up's first step passes over the
	// missed ticks it does not run and fires FireTime in one
	// compare-and-set, so no process sees NextRunAt at FireTime before
	// it fires. Ignored with Manual, Backfill and Release.
	IfNext time.Time
	// SkipIfBusy applies the skip overlap policy to the schedule's last job
	// (LastJobID): if it is available or running, the tick is skipped
	// (SkippedTicks+1, LastSkipAt=FireTime); if it is retrying it is
	// superseded (ApplySupersede) and the tick fires; if it is gone or in
	// another state the tick fires.
	SkipIfBusy bool
	// Manual makes this a run now of the schedule, not a tick: the job is
	// enqueued as a manual run (FireTime zero, job.Job.Manual), whether
	// or not the schedule is paused and whatever its NextRunAt; FireTime
	// and Next are ignored, and NextRunAt, LastFireAt and the skip
	// counters do not change. LastJobID becomes the new job, so the
	// overlap policy of the next tick sees it. SkipIfBusy applies as to a
	// tick, but a skipped run now is not counted in SkippedTicks.
	Manual bool
	// Backfill makes this a backfill of the tick FireTime (at or before
	// Now), outside the chain of ticks: the job is that tick's, unless one
	// exists for (Name, FireTime) already (then nothing changes, and
	// FireResult.Existed), whether or not the schedule is paused and
	// whatever its NextRunAt. As for Manual, Next is ignored, NextRunAt,
	// LastFireAt and the skip counters do not change, LastJobID becomes
	// the new job, and SkipIfBusy and Buffer apply (a tick buffered keeps
	// its time).
	Backfill bool
	// Buffer applies a buffer overlap policy (job.Overlap.Buffer: at
	// most this many runs wait) by ApplyBuffer: while the schedule's last
	// job is unfinished, or runs are already buffered, the tick (a run
	// now: a zero time) is appended to the schedule's Buffered instead of
	// firing (FireResult.Buffered), or skipped when Buffer runs already
	// wait (a tick: SkippedTicks+1, LastSkipAt=FireTime; a run now
	// changes nothing); a tick advances NextRunAt to Next either way.
	Buffer int
	// Release fires the schedule's first buffered run instead of a tick,
	// by ApplyRelease: only if that run's time equals FireTime (zero: a
	// run now) and the schedule's last job has finished or is gone, and
	// the schedule is not paused. The run leaves Buffered, its job
	// (FireTime as the tick's; a zero one a manual run) becomes LastJobID,
	// and a tick's time LastFireAt; NextRunAt and the skip counters do not
	// change. A tick whose job exists only leaves Buffered. Otherwise
	// nothing changes (FireResult zero, but Busy when the last job is
	// unfinished). Next, Manual, SkipIfBusy and Buffer are ignored.
	Release bool
	// With are more validated jobs (checked as Enqueue checks its own,
	// before any change) enqueued in the same transaction as the step,
	// only when the step fires, skips or buffers (FireResult.Fired,
	// Skipped or Buffered), never when nothing changes (the
	// compare-and-set lost, the schedule paused, the tick's job there
	// already, Existed): a catch-up's notification that it went over its
	// cap is stored exactly when its first firing is. Their Schedule and
	// FireTime are kept as given.
	With []*job.Job
}

// CheckWith checks p.With's jobs with CheckNewJob.
func (p FireScheduleParams) CheckWith() error {
	for i, j := range p.With {
		if err := CheckNewJob(j, i, len(p.With)); err != nil {
			return err
		}
	}
	return nil
}

// Changed reports whether the step changed the schedule, so that
// FireScheduleParams.With is enqueued: it fired, skipped or buffered.
func (r FireResult) Changed() bool {
	return r.Fired || r.Skipped || r.Buffered
}

// From returns the NextRunAt FireSchedule compares with: p.IfNext if set,
// else p.FireTime.
func (p FireScheduleParams) From() time.Time {
	if !p.IfNext.IsZero() {
		return p.IfNext
	}
	return p.FireTime
}

// FireResult is the outcome of Store.FireSchedule. When NextRunAt no longer
// equalled FireTime (or IfNext: another process handled the tick) all
// fields are zero.
type FireResult struct {
	Fired bool
	ID    job.ID // the job enqueued, when Fired
	// Skipped is set when SkipIfBusy skipped the tick (or the run now).
	Skipped bool
	// Busy is, when Skipped, the state of the previous job that made
	// SkipIfBusy skip the tick: available (waiting for a worker) or
	// running.
	Busy job.State
	// Superseded is the retrying job SkipIfBusy sent to dead, if any.
	Superseded job.ID
	// Existed is set when Backfill found the tick's job already there.
	Existed bool
	// Buffered is set when Buffer kept the tick (or the run now) waiting
	// in the schedule's Buffered; Busy is then the state of the last job
	// (0 if it had finished and earlier runs were waiting).
	Buffered bool
}
