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

// QueueState is the flow-control state of one queue.
type QueueState struct {
	Name   string
	Paused bool
	// PausedAt is when the queue was paused (SetQueueParams.Now), zero if
	// it is not.
	PausedAt time.Time
	// UpdatedAt is when the state last changed.
	UpdatedAt time.Time
}

// Zero reports whether q is the state of a queue without a row: not paused.
func (q QueueState) Zero() bool { return !q.Paused }

// SetQueueParams are the arguments of QueueControl.SetQueue. Nil fields
// leave the state as it is.
type SetQueueParams struct {
	Now    time.Time
	Name   string
	Paused *bool // pause (true) or resume (false)
}

// Validate returns a *job.FieldError unless p names a queue as job.CheckName
// accepts a queue's name ("name").
func (p SetQueueParams) Validate() error {
	return job.CheckName("name", p.Name)
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
	if q.UpdatedAt.IsZero() {
		q.UpdatedAt = now
	}
	return q
}
