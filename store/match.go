package store

import (
	"slices"
	"time"

	"github.com/hopperq/hopper/job"
)

// Bulk actions on the jobs matching a filter: CancelMatching,
// RetryMatching and DeleteMatching. Each call acts on one bounded batch of
// the selection, in one transaction, and returns where the next batch
// starts; the caller calls again until the selection is exhausted. Workers
// keep claiming and finishing between the batches, a large action never
// holds locks (or SQLite's write lock) for long, and a process that dies
// half-way leaves every batch it committed done and the rest untouched.

// Limits of MatchParams.Limit.
const (
	// DefaultMatchLimit is the batch size of a call whose Limit is zero.
	DefaultMatchLimit = 1000
	// MaxMatchLimit bounds MatchParams.Limit.
	MaxMatchLimit = 10_000
	// MatchSpan bounds the IDs one call reads: at most MatchSpan×Limit
	// after AfterID, so that a call over a sparse selection (a few jobs
	// of a queue among millions) reads a bounded part of the table.
	MatchSpan = 16
	// MaxExceptKinds bounds MatchParams.ExceptKinds.
	MaxExceptKinds = 16
)

// The states each bulk action applies to.
var (
	// CancelStates are the states CancelMatching applies to, as Cancel
	// does: the waiting states, and running (cancel requested).
	CancelStates = []job.State{job.StateScheduled, job.StateAvailable, job.StateRunning, job.StateRetrying}
	// RetryStates are the states RetryMatching applies to: dead.
	RetryStates = []job.State{job.StateDead}
	// DeleteStates are the states DeleteMatching applies to: the finished
	// ones.
	DeleteStates = []job.State{job.StateCompleted, job.StateCancelled, job.StateDead}
)

// MatchParams select the jobs of a bulk action and the batch one call
// acts on: the jobs with an ID in (AfterID, UpTo] of States (any state if
// empty), Queue and Kind (any if empty), of none of ExceptKinds, that
// the action applies to.
type MatchParams struct {
	Now    time.Time
	States []job.State
	Queue  string
	Kind   string
	// ExceptKinds leaves the jobs of these kinds out of the selection (at
	// most MaxExceptKinds): a token that may not run commands retries
	// every dead job but those whose handler runs one.
	ExceptKinds []string
	// AfterID is where this batch starts: the previous call's
	// MatchResult.Next (0 for the first).
	AfterID job.ID
	// UpTo is the highest ID of the selection (required): jobs enqueued
	// after the selection was made are left alone, and the action ends.
	UpTo job.ID
	// Limit caps the jobs one call acts on (default DefaultMatchLimit, at
	// most MaxMatchLimit).
	Limit int
	// ReturnJobs asks for the jobs changed in MatchResult.Jobs (for
	// events); DeleteMatching ignores it.
	ReturnJobs bool
}

// Validate returns a *job.FieldError unless p is a selection the bulk
// actions take.
func (p MatchParams) Validate() error {
	switch {
	case p.UpTo <= 0:
		return job.Invalid("up_to", "give the highest job ID of the selection (jobs enqueued later are left alone), got %d", p.UpTo)
	case p.AfterID < 0:
		return job.Invalid("after_id", "must not be negative, got %d", p.AfterID)
	case p.Limit < 0 || p.Limit > MaxMatchLimit:
		return job.Invalid("limit", "must be between 0 (default %d) and %d, got %d", DefaultMatchLimit, MaxMatchLimit, p.Limit)
	case len(p.ExceptKinds) > MaxExceptKinds:
		return job.Invalid("except_kinds", "%d kinds, more than the limit of %d", len(p.ExceptKinds), MaxExceptKinds)
	}
	for _, st := range p.States {
		if !slices.Contains(job.States, st) {
			return job.Invalid("states", "unknown state %d", uint8(st))
		}
	}
	return nil
}

// Size is the batch size of a call: Limit, or its default.
func (p MatchParams) Size() int {
	if p.Limit <= 0 {
		return DefaultMatchLimit
	}
	return p.Limit
}

// Last is the highest ID this call reads: UpTo, or MatchSpan×Size after
// AfterID if that comes first.
func (p MatchParams) Last() job.ID {
	return min(p.UpTo, p.AfterID+job.ID(MatchSpan*p.Size()))
}

// Candidates returns the states of p's filter the action applies to (those
// of applies), in lifecycle order: empty means the call has nothing to do.
func (p MatchParams) Candidates(applies []job.State) []job.State {
	if len(p.States) == 0 {
		return applies
	}
	var out []job.State
	for _, st := range applies {
		if slices.Contains(p.States, st) {
			out = append(out, st)
		}
	}
	return out
}

// Next returns MatchResult.Next for a call that found n candidates (jobs
// of the selection the action applies to, up to Size, in ID order among
// the IDs up to Last), the highest of them last: the last candidate if the
// batch is full (more may follow it), else Last; zero once that reaches
// UpTo.
func (p MatchParams) Next(n int, last job.ID) job.ID {
	next := p.Last()
	if n >= p.Size() {
		next = last
	}
	if next >= p.UpTo {
		return 0
	}
	return next
}

// MatchResult is the outcome of one call of a bulk action.
type MatchResult struct {
	// Changed counts the jobs the call changed: cancelled (or, running,
	// their cancellation requested), retried, deleted.
	Changed int
	// Skipped counts the jobs of the batch the action left as they were:
	// a dead job whose unique key another unfinished job holds, or a job
	// that another process finished between the batch's read and its
	// write.
	Skipped int
	// Next is the AfterID of the next call, or zero once the selection is
	// exhausted.
	Next job.ID
	// Jobs holds, with MatchParams.ReturnJobs, the jobs changed as the
	// call left them, in ID order.
	Jobs []*job.Job
	// Running lists the running jobs whose cancellation CancelMatching
	// requested, in ID order, so that the caller can stop the handlers it
	// runs at once.
	Running []job.ID
}
