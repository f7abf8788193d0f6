// Package job holds Hopper's domain model: the Job record, its states and the
// one function that says which state changes are allowed, the recurring
// Schedule record, and the domain errors every store translates into.
//
// It depends on the standard library and package backoff only, so every other
// package can import it.
package job

import (
	"context"
	"encoding/json"
	"strings"
	"time"

	"github.com/hopperq/hopper/backoff"
)

// ID identifies a job. IDs are positive and increase in enqueue order within
// one store.
type ID int64

// Func is a job given as a plain Go closure. Only the in-memory store can
// hold one; a durable store rejects it with ErrNotDurable. Its first return
// value becomes the job's result (JSON-encoded).
type Func func(ctx context.Context) (any, error)

// DefaultQueue is the queue of a job enqueued without one.
const DefaultQueue = "default"

// Job is one unit of work and everything Hopper knows about it. Values
// returned by stores and the client are copies: changing them changes
// nothing stored.
type Job struct {
	ID   ID     `json:"id"`
	Kind string `json:"kind"` // the handler's name, e.g. "send_email"; "func" for closures
	// Args is the JSON payload handed to the handler.
	Args json.RawMessage `json:"args,omitempty"`
	// Func is set instead of a handler for closures (in-memory store only).
	Func Func `json:"-"`

	Queue    string    `json:"queue"`
	Priority int       `json:"priority"` // lower runs first; any int, default 0
	RunAt    time.Time `json:"run_at"`   // the earliest time the next attempt may start

	MaxAttempts int           `json:"max_attempts"`
	Attempt     int           `json:"attempt"` // attempts started so far
	Timeout     time.Duration `json:"timeout,omitempty"`
	UniqueKey   string        `json:"unique_key,omitempty"`
	// Retry overrides the retry policy for this job; nil uses the kind's or
	// the client's.
	Retry *backoff.Policy `json:"retry,omitempty"`

	State     State           `json:"state"`
	Result    json.RawMessage `json:"result,omitempty"`
	LastError string          `json:"last_error,omitempty"`
	Attempts  []Attempt       `json:"attempts,omitempty"` // history, oldest first

	CreatedAt  time.Time `json:"created_at"`
	StartedAt  time.Time `json:"started_at,omitzero"`  // start of the latest attempt
	FinishedAt time.Time `json:"finished_at,omitzero"` // when it became completed, cancelled or dead

	// Worker and LeaseUntil are set while running: who owns the attempt and
	// until when, unless the lease is renewed.
	Worker     string    `json:"worker,omitempty"`
	LeaseUntil time.Time `json:"lease_until,omitzero"`
	// Crashes counts consecutive attempts interrupted because the worker
	// died (lease expired). It resets when an attempt ends normally.
	Crashes int `json:"crashes,omitempty"`
	// CancelRequested is set when Cancel hits a running job: the worker
	// cancels the handler's context and the job ends cancelled if it fails.
	CancelRequested bool `json:"cancel_requested,omitempty"`

	// Schedule and FireTime are set on jobs fired by a recurring schedule;
	// (Schedule, FireTime) is unique in a store.
	Schedule string    `json:"schedule,omitempty"`
	FireTime time.Time `json:"fire_time,omitzero"`
}

// Attempt records one attempt of a job.
type Attempt struct {
	Attempt   int           `json:"attempt"` // 1-based
	StartedAt time.Time     `json:"started_at"`
	Duration  time.Duration `json:"duration"`
	Worker    string        `json:"worker,omitempty"`
	// Outcome is the state the attempt led to, or "interrupted" when the
	// worker died or was shut down.
	Outcome string `json:"outcome"`
	Error   string `json:"error,omitempty"`
	// Backoff is the delay chosen before the next attempt, if any.
	Backoff time.Duration `json:"backoff,omitempty"`
}

// Outcome names for attempts that did not end in a state change of their own.
const (
	OutcomeInterrupted = "interrupted" // worker died (lease expired)
	OutcomeReleased    = "released"    // shutdown gave the job back; the attempt does not count
)

// Clone returns a deep copy of j that shares nothing mutable with it.
func (j *Job) Clone() *Job {
	c := *j
	c.Attempts = append([]Attempt(nil), j.Attempts...)
	if j.Retry != nil {
		r := *j.Retry
		r.Delays = append([]time.Duration(nil), j.Retry.Delays...)
		c.Retry = &r
	}
	return &c
}

// Validate checks a job about to be enqueued and fills its defaults
// (queue, max attempts, state from run-at). It names the first bad field.
func (j *Job) Validate(now time.Time, defaultMaxAttempts int) error {
	if j.Func == nil {
		if strings.TrimSpace(j.Kind) == "" {
			return Invalid("kind", "must not be empty")
		}
		if len(j.Args) > 0 && !json.Valid(j.Args) {
			return Invalid("args", "not valid JSON")
		}
	} else if j.Kind == "" {
		j.Kind = "func"
	}
	if len(j.Kind) > 255 {
		return Invalid("kind", "longer than 255 bytes")
	}
	if j.Queue == "" {
		j.Queue = DefaultQueue
	}
	if len(j.Queue) > 255 {
		return Invalid("queue", "longer than 255 bytes")
	}
	if j.MaxAttempts == 0 {
		j.MaxAttempts = defaultMaxAttempts
	}
	if j.MaxAttempts < 1 {
		return Invalid("max_attempts", "must be at least 1, got %d", j.MaxAttempts)
	}
	if j.Timeout < 0 {
		return Invalid("timeout", "must not be negative, got %s", j.Timeout)
	}
	if j.Retry != nil {
		if err := j.Retry.Validate(); err != nil {
			return Invalid("retry", "%v", err)
		}
	}
	if j.RunAt.IsZero() {
		j.RunAt = now
	}
	if y := j.RunAt.Year(); y < 1970 || y > 2200 {
		return Invalid("run_at", "year %d is outside 1970-2200", y)
	}
	j.CreatedAt = now
	j.State = WaitingState(j.RunAt, now)
	return nil
}
