package hopper

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/hopperq/hopper/backoff"
	"github.com/hopperq/hopper/job"
	"github.com/hopperq/hopper/store"
)

// Func is a job given as a Go closure (in-memory store only). Its first
// return value, JSON-encoded, becomes the job's result.
type Func = job.Func

// EnqueueOptions are the per-job options of Enqueue. A nil *EnqueueOptions
// means all defaults.
type EnqueueOptions struct {
	// Queue (default: the kind's KindOptions.Queue, else "default").
	Queue string
	// Priority: any int; lower runs first (default 0).
	Priority int
	// Delay runs the job no earlier than now+Delay. Set Delay or RunAt,
	// not both.
	Delay time.Duration
	// RunAt runs the job no earlier than this time.
	RunAt time.Time
	// MaxAttempts (default: the kind's, else Config.MaxAttempts).
	MaxAttempts int
	// Timeout of each attempt (default: the kind's, else Config.JobTimeout).
	Timeout time.Duration
	// UniqueKey, if set, makes the job unique among unfinished jobs: while
	// a job with the key is waiting or running, enqueueing another returns
	// the existing job (see Config.UniqueConflict).
	UniqueKey string
	// Retry overrides the backoff policy for this job.
	Retry *backoff.Policy
}

// EnqueueResult reports an enqueued job.
type EnqueueResult struct {
	ID ID
	// Duplicate is set when the unique key was taken: ID is the existing
	// job's and nothing was inserted.
	Duplicate bool
	// State is the job's state: scheduled, available, or the existing job's.
	State State
}

// EnqueueRequest is one job of EnqueueMany: a kind with args, or a Func.
type EnqueueRequest struct {
	Kind    string
	Args    any
	Func    Func
	Options *EnqueueOptions
}

// Enqueue adds a job of kind with args (encoded as JSON; a json.RawMessage
// or []byte is taken as already encoded). It returns once the store has
// accepted the job — on a durable store, once it is on disk. Invalid input
// returns a *FieldError and stores nothing; after Stop, ErrClosed.
func (c *Client) Enqueue(ctx context.Context, kind string, args any, opts *EnqueueOptions) (EnqueueResult, error) {
	res, err := c.EnqueueMany(ctx, []EnqueueRequest{{Kind: kind, Args: args, Options: opts}})
	if err != nil {
		return EnqueueResult{}, err
	}
	return c.uniqueCheck(res[0])
}

// EnqueueFunc adds a job that runs fn. Only the in-memory store can hold
// closures; a durable store returns ErrNotDurable.
func (c *Client) EnqueueFunc(ctx context.Context, fn Func, opts *EnqueueOptions) (EnqueueResult, error) {
	if fn == nil {
		return EnqueueResult{}, &FieldError{Field: "fn", Reason: "must not be nil"}
	}
	res, err := c.EnqueueMany(ctx, []EnqueueRequest{{Func: fn, Options: opts}})
	if err != nil {
		return EnqueueResult{}, err
	}
	return c.uniqueCheck(res[0])
}

func (c *Client) uniqueCheck(r EnqueueResult) (EnqueueResult, error) {
	if r.Duplicate && c.cfg.UniqueConflict == UniqueError {
		return r, fmt.Errorf("job %d holds the unique key: %w", r.ID, ErrDuplicate)
	}
	return r, nil
}

// EnqueueMany adds several jobs in one store operation (one commit on a
// durable store): all are accepted or none. Duplicates are reported per job
// in the results, whatever Config.UniqueConflict says. A bad request fails
// the call with a *FieldError whose field is prefixed with its index.
func (c *Client) EnqueueMany(ctx context.Context, reqs []EnqueueRequest) ([]EnqueueResult, error) {
	if c.closed() {
		return nil, ErrClosed
	}
	t := now()
	jobs := make([]*job.Job, len(reqs))
	slab := make([]job.Job, len(reqs)) // one allocation for the batch
	for i := range reqs {
		j, err := c.newJob(&reqs[i], &slab[i], t)
		if err != nil {
			if fe, ok := err.(*FieldError); ok && len(reqs) > 1 {
				return nil, &FieldError{Field: fmt.Sprintf("[%d].%s", i, fe.Field), Reason: fe.Reason}
			}
			return nil, err
		}
		jobs[i] = j
	}
	res, err := c.store.Enqueue(ctx, store.EnqueueParams{Now: t, Jobs: jobs})
	if err != nil {
		return nil, fmt.Errorf("enqueue: %w", err)
	}
	out := make([]EnqueueResult, len(res))
	inserted := false
	listening := c.reported()
	for i, r := range res {
		out[i] = EnqueueResult{ID: r.ID, Duplicate: r.Duplicate, State: r.State}
		inserted = inserted || !r.Duplicate
		if listening && !r.Duplicate {
			j := jobs[i]
			j.ID = r.ID
			c.transition(Event{Type: job.EventEnqueued, Job: j, At: t})
		}
	}
	if inserted {
		// Also for scheduled jobs: the dispatcher may be sleeping until a
		// later run-at, or have no timer at all.
		c.engine.Notify()
	}
	return out, nil
}

// newJob fills j from r, validated, with defaults applied.
func (c *Client) newJob(r *EnqueueRequest, j *job.Job, t time.Time) (*job.Job, error) {
	var o EnqueueOptions
	if r.Options != nil {
		o = *r.Options
	}
	*j = job.Job{
		Kind: r.Kind, Func: r.Func, Queue: o.Queue, Priority: o.Priority,
		MaxAttempts: o.MaxAttempts, Timeout: o.Timeout, UniqueKey: o.UniqueKey, Retry: o.Retry,
	}
	if r.Func == nil {
		if k := c.cfg.Workers.lookup(r.Kind); k != nil {
			if j.Queue == "" {
				j.Queue = k.opts.Queue
			}
			if j.MaxAttempts == 0 {
				j.MaxAttempts = k.opts.MaxAttempts
			}
		}
		args, err := encodeArgs(r.Args)
		if err != nil {
			return nil, err
		}
		j.Args = args
	} else if r.Args != nil {
		return nil, &FieldError{Field: "args", Reason: "a Func job takes no args"}
	}
	switch {
	case o.Delay < 0:
		return nil, &FieldError{Field: "delay", Reason: fmt.Sprintf("must not be negative, got %s", o.Delay)}
	case o.Delay > 0 && !o.RunAt.IsZero():
		return nil, &FieldError{Field: "delay", Reason: "set delay or run_at, not both"}
	case o.Delay > 0:
		j.RunAt = t.Add(o.Delay)
	default:
		j.RunAt = o.RunAt
	}
	if err := j.Validate(t, c.cfg.MaxAttempts); err != nil {
		return nil, err
	}
	return j, nil
}

func encodeArgs(v any) (json.RawMessage, error) {
	switch a := v.(type) {
	case nil:
		return nil, nil
	case json.RawMessage:
		if !json.Valid(a) {
			return nil, &FieldError{Field: "args", Reason: "not valid JSON"}
		}
		return a, nil
	case []byte:
		if !json.Valid(a) {
			return nil, &FieldError{Field: "args", Reason: "not valid JSON"}
		}
		return a, nil
	}
	b, err := json.Marshal(v)
	if err != nil {
		return nil, &FieldError{Field: "args", Reason: fmt.Sprintf("cannot encode as JSON: %v", err)}
	}
	return b, nil
}
