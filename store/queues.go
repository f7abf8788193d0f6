package store

import (
	"context"
	"time"

	"github.com/hopperq/hopper/job"
)

// QueueControl is implemented by stores that keep each queue's
// flow-control state — whether it is paused — in the store itself, so
// that every process sharing the store obeys it and it survives restarts
// and leader changes. Every store of this module implements it
// (docs/flow-control.md).
//
// A queue's state is one small row (QueueState). Claim reads it inside its
// transaction: a claim never returns a job of a queue that is paused when
// it runs. A pause does not touch running jobs: they finish; nothing new
// starts until the queue is resumed.
//
// A queue with a Concurrency limit never has more than that many jobs
// running across every process sharing the store: a claim takes at most
// the queue's free slots, Concurrency less its running jobs, counted by
// the store in the same transaction as every move into and out of running
// (claim, finish, rescue), never by a COUNT over the jobs. A slot belongs
// to a job's attempt: a rescue frees it, and an attempt holds one slot at
// most. Jobs that were running when the limit was set count from then on
// where the store counts every running job (memory, SQLite), and not at
// all where it counts the attempts it claimed under the limit
// (PostgreSQL); either way the limit holds for every claim made after it.
//
// A queue with a Rate is throttled (docs/flow-control.md): a claim takes
// at most the starts its GCRA state allows at the claim's Now (Throttle.
// Free), and moves that state on by the jobs it took (Throttle.Take), in
// its transaction, the state locked or the claim serialised so that
// concurrent claims see each other's starts. A throttle that holds back
// ready jobs sets ClaimResult.ThrottledUntil. A queue whose Rate has Drop
// drops its excess instead: let want be the jobs the claim would take
// from the queue but for its rate (the least of the claim's Limit, its
// QueueLimits for the queue and the queue's free slots) and allowed what
// the rate allows; when allowed < want, the claim takes its allowed jobs
// and drops (ApplyDrop) the next want − allowed available jobs of the
// queue, in claim order, of the claim's kinds, returning them in
// ClaimResult.Dropped. A keyed queue (KeyControl) whose Rate has Drop
// drops over its walk of the keys instead: of the jobs the walk comes to
// in want, the first allowed that their keys would start start and the
// rest are dropped (RateSplit).
//
// A queue with a KeyRate throttles each of its keys the same way, each
// key's GCRA state its own (KeyState.Throttle, one small row per key that
// started recently): KeyBlocked refuses a throttled key like a key at its
// limit, a claim takes at most the starts a key's state allows and moves
// it by the jobs it took of the key, and a claim that a key's throttle
// held back sets ClaimResult.ThrottledUntil. A key's excess waits, unless
// the KeyRate has Drop: then the claim walks the queue's keys in turn as
// if no key were throttled (KeyWalk), and each job it so comes to whose
// key's throttle allows no more starts is dropped (ApplyDrop, with
// KeyDropReason) instead of started, returned in ClaimResult.Dropped. A
// key's share of the walk is what it could start but for its throttle:
// at most its free slots under KeyConcurrency; the queue's starts and
// drops together are at most what the claim may start of it (its Limit,
// its QueueLimits for the queue, its free slots, its own rate's
// allowance unless that rate drops too). So a key paused, held or at its
// limit drops nothing, and neither does a queue paused, at its limit or
// held by its own rate without Drop. A job both rates would drop is
// dropped for its key's (RateSplit).
// A key's row is deleted once Throttle.Collectable, by the claims of its
// queue (decision 98).
type QueueControl interface {
	// SetQueue changes the state of queue p.Name as p says and returns
	// it. A queue without a row has the zero state (not paused); setting
	// a queue back to the zero state deletes its row. Invalid p (see its
	// Validate) is a *job.FieldError and changes nothing. A store that
	// tells other processes when jobs may have become available
	// (store.Waker) does so when a queue is resumed.
	SetQueue(ctx context.Context, p SetQueueParams) (QueueState, error)
	// ListQueues returns the state of every queue that has a row (one not
	// in the zero state), ordered by name.
	ListQueues(ctx context.Context) ([]QueueState, error)
}

// FinishClaimer is implemented by stores that can write outcomes and
// claim in one transaction. FinishClaim(ctx, f, c) does what Finish(ctx, f)
// and then Claim(ctx, c) would do, atomically: the claim sees what the
// outcomes changed, the slots of queue concurrency limits they gave back
// included, and either both happen or neither (an error changes
// nothing). Its results are those of the two calls.
//
// The engine uses it while a limit holds jobs back (ClaimResult.Held): a
// claim made beside the Finish that frees its slots would find the queue
// still full, and one made after it costs a second round trip, so a limit
// equal to the number of workers would bind for the length of every
// Finish (decisions.md, 70). Every store of this module implements it.
type FinishClaimer interface {
	FinishClaim(ctx context.Context, f FinishParams, c ClaimParams) ([]job.State, ClaimResult, error)
}

// QueueState is the flow-control state of one queue.
type QueueState struct {
	Name   string
	Paused bool
	// Concurrency caps the queue's running jobs across every process
	// (0: no limit). Running is how many of them count against it now
	// (ListQueues and SetQueue report it; 0 without a limit).
	Concurrency int
	Running     int
	// KeyConcurrency caps, for each flow-control key (job.Job.Key), how
	// many of the queue's jobs of that key run at once across every
	// process (0: no limit; KeyControl).
	KeyConcurrency int
	// Rate throttles the queue's starts across every process (the zero
	// Rate: none). TAT is its GCRA state, the queue's theoretical arrival
	// time (zero without a rate, or before its first start): Throttle
	// says when it next allows a start.
	Rate Rate
	TAT  time.Time
	// KeyRate throttles the starts of each key of the queue (the zero
	// Rate: none; with Drop, each key's excess is dropped): each key
	// keeps a GCRA state of its own (KeyState.Throttle). A queue with a
	// KeyRate is keyed (KeyControl).
	KeyRate Rate
	// PausedAt is when the queue was paused (SetQueueParams.Now), zero if
	// it is not.
	PausedAt time.Time
	// UpdatedAt is when the state last changed.
	UpdatedAt time.Time
}

// Zero reports whether q's settings are those of a queue without a row:
// not paused, no limit, no limit per key, no rate, no rate per key.
func (q QueueState) Zero() bool {
	return !q.Paused && q.Concurrency == 0 && q.KeyConcurrency == 0 && q.Rate.Zero() && q.KeyRate.Zero()
}

// Throttle returns q's GCRA state.
func (q QueueState) Throttle() Throttle { return Throttle{Rate: q.Rate, TAT: UnixNanos(q.TAT)} }

// MaxConcurrency bounds QueueState.Concurrency.
const MaxConcurrency = 1 << 20

// SetQueueParams are the arguments of QueueControl.SetQueue. Nil fields
// leave the state as it is.
type SetQueueParams struct {
	Now    time.Time
	Name   string
	Paused *bool // pause (true) or resume (false)
	// Concurrency sets the queue's limit across every process (0 clears
	// it).
	Concurrency *int
	// KeyConcurrency sets the queue's limit per key (0 clears it).
	KeyConcurrency *int
	// Rate sets the queue's throttle (the zero Rate clears it). A queue
	// keeps its GCRA state while its rate changes, and loses it when the
	// rate is cleared.
	Rate *Rate
	// KeyRate sets the queue's throttle per key (the zero Rate clears it
	// and deletes every key's state). Each key keeps its state while the
	// rate changes.
	KeyRate *Rate
}

// Validate returns a *job.FieldError unless p names a queue as job.CheckName
// accepts a queue's name ("name") and its Concurrency is between 0 and
// MaxConcurrency ("concurrency"), and so is its KeyConcurrency
// ("key_concurrency"), its Rate is valid (Rate.Validate) and so is its
// KeyRate (Rate.ValidateKey: "key_rate", "key_burst").
func (p SetQueueParams) Validate() error {
	if err := job.CheckName("name", p.Name); err != nil {
		return err
	}
	if c := p.Concurrency; c != nil && (*c < 0 || *c > MaxConcurrency) {
		return job.Invalid("concurrency", "must be between 0 (no limit) and %d, got %d", MaxConcurrency, *c)
	}
	if c := p.KeyConcurrency; c != nil && (*c < 0 || *c > MaxConcurrency) {
		return job.Invalid("key_concurrency", "must be between 0 (no limit) and %d, got %d", MaxConcurrency, *c)
	}
	if p.Rate != nil {
		if err := p.Rate.Validate(); err != nil {
			return err
		}
	}
	if p.KeyRate != nil {
		if err := p.KeyRate.ValidateKey(); err != nil {
			return err
		}
	}
	return nil
}

// ApplySetQueue applies p to q, the queue's current state (zero if it has
// no row), and returns the new state: the one rule every store follows.
// Pausing a paused queue keeps its PausedAt.
func ApplySetQueue(q QueueState, p SetQueueParams) QueueState {
	q.Name = p.Name
	now := p.Now.UTC()
	if p.Paused != nil && *p.Paused != q.Paused {
		q.Paused = *p.Paused
		q.PausedAt = time.Time{}
		if q.Paused {
			q.PausedAt = now
		}
		q.UpdatedAt = now
	}
	if p.Concurrency != nil && *p.Concurrency != q.Concurrency {
		q.Concurrency = *p.Concurrency
		q.UpdatedAt = now
	}
	if p.KeyConcurrency != nil && *p.KeyConcurrency != q.KeyConcurrency {
		q.KeyConcurrency = *p.KeyConcurrency
		q.UpdatedAt = now
	}
	if p.Rate != nil && p.Rate.Normalized() != q.Rate {
		q.Rate = p.Rate.Normalized()
		if q.Rate.Zero() {
			q.TAT = time.Time{}
		}
		q.UpdatedAt = now
	}
	if p.KeyRate != nil && p.KeyRate.Normalized() != q.KeyRate {
		q.KeyRate = p.KeyRate.Normalized()
		q.UpdatedAt = now
	}
	if q.UpdatedAt.IsZero() {
		q.UpdatedAt = now
	}
	return q
}
