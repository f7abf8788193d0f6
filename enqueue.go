package hopper

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"sync"
	"time"

	"github.com/hopperq/hopper/job"
	"github.com/hopperq/hopper/store"
)

// Func is a job given as a Go closure (in-memory store only). Its first
// return value, JSON-encoded, becomes the job's result.
type Func = job.Func

// EnqueueResult reports an enqueued job.
type EnqueueResult struct {
	ID ID
	// Duplicate is set when the unique key was taken: ID is the existing
	// job's and nothing was inserted.
	Duplicate bool
	// Debounced is set when the job was merged into the waiting job
	// holding its unique key (EnqueueOptions.Debounce): ID is that job's,
	// which now has this call's args and a pushed run-at, and nothing was
	// inserted.
	Debounced bool
	// State is the job's state: scheduled, available, or the existing job's.
	State State
	// Queue is the queue the job was enqueued to, its options resolved
	// (for a duplicate, the queue it would have gone to).
	Queue string
}

// EnqueueRequest is one job of EnqueueMany: a kind with args, or a Func.
type EnqueueRequest struct {
	Kind    string
	Args    any
	Func    Func
	Options *EnqueueOptions
}

// Enqueue adds a job of kind with args (encoded as JSON; a json.RawMessage
// or []byte is taken as already encoded, and must be valid UTF-8 JSON of at
// most 1 MiB). It returns once the store has accepted the job — on a
// durable store, once it is on disk. Invalid input returns a *FieldError
// naming the field, and stores nothing: an unknown kind (see
// Config.ExternalKinds), args that do not fit the kind's type, a bad
// option. After Stop, ErrClientStopped (an ErrClosed).
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
// the call with a *FieldError naming its field, with InBatch and Index set
// to the request's position when reqs holds two or more; its cause is kept
// (errors.Is(err, ErrUnknownKind) holds for an unknown kind).
func (c *Client) EnqueueMany(ctx context.Context, reqs []EnqueueRequest) ([]EnqueueResult, error) {
	return c.enqueue(ctx, reqs, nil)
}

// EnqueueTx is Enqueue inside tx, a transaction of the application's own on
// the store's database — a pgx.Tx for PostgreSQL, a *sql.Tx for SQLite — so
// that the job exists if and only if tx commits: enqueue the email in the
// transaction that creates the user. Workers see the job once tx commits.
// The store must support it (store.TxEnqueuer); otherwise the error wraps
// errors.ErrUnsupported. No EventEnqueued is reported: the job is not
// committed yet when EnqueueTx returns.
func (c *Client) EnqueueTx(ctx context.Context, tx any, kind string, args any, opts *EnqueueOptions) (EnqueueResult, error) {
	res, err := c.EnqueueManyTx(ctx, tx, []EnqueueRequest{{Kind: kind, Args: args, Options: opts}})
	if err != nil {
		return EnqueueResult{}, err
	}
	return c.uniqueCheck(res[0])
}

// EnqueueManyTx is EnqueueMany inside tx; see EnqueueTx.
func (c *Client) EnqueueManyTx(ctx context.Context, tx any, reqs []EnqueueRequest) ([]EnqueueResult, error) {
	if tx == nil {
		return nil, &FieldError{Field: "tx", Reason: "must not be nil"}
	}
	te := c.txer
	if te == nil {
		return nil, fmt.Errorf("enqueue in a transaction: this store cannot: %w", errors.ErrUnsupported)
	}
	return c.enqueue(ctx, reqs, func(p store.EnqueueParams) ([]store.EnqueueResult, error) {
		return te.EnqueueTx(ctx, tx, p)
	})
}

// enqueue makes the jobs of reqs and stores them, through inTx if set.
func (c *Client) enqueue(ctx context.Context, reqs []EnqueueRequest, inTx func(store.EnqueueParams) ([]store.EnqueueResult, error)) ([]EnqueueResult, error) {
	if c.closed() {
		return nil, ErrClientStopped
	}
	t := c.now()
	listening := c.reported() && inTx == nil
	buf := getEnqueueBuf(len(reqs))
	if !listening {
		// No event keeps a job: the copies serve the next call too (the
		// store keeps none of them, store.EnqueueParams).
		defer putEnqueueBuf(buf)
	}
	jobs, slab := buf.jobs, buf.slab
	var afters []func(EnqueueResult, error) // the enqueue middleware's (middleware.go)
	var counts []int                        // afters[sum(counts[:i]):][:counts[i]] are request i's
	for i := range reqs {
		r := &reqs[i]
		if !c.mw.none {
			n := len(afters)
			mr, more, err := c.beforeEnqueue(ctx, r, afters)
			afters, counts = more, append(counts, len(more)-n)
			if err != nil {
				return nil, c.afterEnqueue(afters, counts, nil, batchErr(err, i, len(reqs)))
			}
			r = &mr
		}
		j, err := c.newJob(r, &slab[i], t)
		if err != nil {
			return nil, c.afterEnqueue(afters, counts, nil, batchErr(err, i, len(reqs)))
		}
		jobs[i] = j
	}
	if inTx == nil && len(jobs) == 1 {
		// While the workers starve, a job started per call let through
		// (engine/pace.go). Batches are not held: their calls are few, and
		// an ingest of a backlog in batches is meant to be quick.
		c.engine.Pace(ctx)
	}
	p := store.EnqueueParams{Now: t, Jobs: jobs}
	var res []store.EnqueueResult
	var err error
	if listening && c.observing() { // the jobs' EventEnqueued before their EventStarted
		defer c.starts.leave(c.starts.enter())
	}
	if inTx != nil {
		res, err = inTx(p)
	} else {
		res, err = c.store.Enqueue(ctx, p)
	}
	if err != nil {
		return nil, c.afterEnqueue(afters, counts, nil, err)
	}
	out := make([]EnqueueResult, len(res))
	inserted := false
	for i, r := range res {
		out[i] = EnqueueResult{ID: r.ID, Duplicate: r.Duplicate, Debounced: r.Debounced, State: r.State, Queue: jobs[i].Queue}
		inserted = inserted || !r.Duplicate // a debounced job's run-at moved
		if listening && !r.Duplicate && !r.Debounced {
			j := jobs[i]
			j.ID = r.ID
			c.transition(Event{Type: job.EventEnqueued, Job: j, At: t})
		}
	}
	if inserted && inTx == nil {
		// Also for scheduled jobs: the dispatcher may be sleeping until a
		// later run-at, or have no timer at all. Jobs enqueued in the
		// application's transaction exist only once it commits; the store's
		// Waker tells the dispatcher then (a claim now would only wait for
		// the transaction's locks).
		c.notify()
	}
	if afters != nil {
		c.afterEnqueue(afters, counts, out, nil)
	}
	return out, nil
}

// batchErr is err of request i of n: when n > 1, a *FieldError knows its
// index, keeping its cause (errors.Is(err, ErrUnknownKind)), and another
// error (an EnqueueMiddleware's) says it.
func batchErr(err error, i, n int) error {
	if n < 2 {
		return err
	}
	if fe, ok := err.(*FieldError); ok {
		return fe.At(i)
	}
	return fmt.Errorf("request %d: %w", i, err)
}

// afterEnqueue calls the after functions of the enqueue middleware: those
// of request i with res[i], or all with err when the call failed. It
// returns err.
func (c *Client) afterEnqueue(afters []func(EnqueueResult, error), counts []int, res []EnqueueResult, err error) error {
	k := 0
	for i, n := range counts {
		var r EnqueueResult
		if err == nil {
			r = res[i]
		}
		for _, f := range afters[k : k+n] {
			f(r, err)
		}
		k += n
	}
	return err
}

// enqueueBuf holds the jobs of one enqueue call: pointers and the jobs
// themselves, allocated together.
type enqueueBuf struct {
	jobs []*job.Job
	slab []job.Job
}

// enqueueBufs keeps the buffers of calls whose jobs nobody kept.
var enqueueBufs sync.Pool

// maxPooledJobs caps the buffers kept for reuse.
const maxPooledJobs = 4096

func getEnqueueBuf(n int) *enqueueBuf {
	b, _ := enqueueBufs.Get().(*enqueueBuf)
	if b == nil || cap(b.slab) < n {
		b = &enqueueBuf{jobs: make([]*job.Job, n), slab: make([]job.Job, n)}
	}
	b.jobs, b.slab = b.jobs[:n], b.slab[:n]
	return b
}

func putEnqueueBuf(b *enqueueBuf) {
	if cap(b.slab) > maxPooledJobs {
		return
	}
	clear(b.jobs)
	clear(b.slab)
	enqueueBufs.Put(b)
}

// newJob fills j from r at t: the job's options resolved (Client.options),
// the kind and args checked (Client.checkKind), validated.
func (c *Client) newJob(r *EnqueueRequest, j *job.Job, t time.Time) (*job.Job, error) {
	if r.Options != nil {
		if err := r.Options.validate("", true); err != nil {
			return nil, err
		}
	}
	kd := c.cfg.Workers.lookup(r.Kind)
	o := c.optionsOf(kd, r.Options)
	var own EnqueueOptions
	if r.Options != nil {
		own = *r.Options
	}
	*j = job.Job{
		Kind: r.Kind, Func: r.Func, Queue: o.Queue, Priority: o.Priority, MaxAttempts: o.MaxAttempts,
		Timeout: own.Timeout, Retry: own.Retry.Clone(), UniqueKey: own.UniqueKey, RunAt: own.RunAt,
		Debounce: own.Debounce, Key: own.Key,
		Meta: cloneMeta(own.Meta), Tags: slices.Clone(own.Tags),
	}
	if own.Delay > 0 {
		j.RunAt = t.Add(own.Delay)
	}
	if r.Func == nil {
		args, err := encodeArgs(r.Args)
		if err != nil {
			return nil, err
		}
		if err := c.checkKind(r.Kind, kd, args); err != nil {
			return nil, err
		}
		j.Args = args
	} else if r.Args != nil || r.Kind != "" {
		return nil, &FieldError{Field: "args", Reason: "a Func job takes no kind and no args"}
	}
	if err := j.Validate(t); err != nil {
		return nil, err
	}
	return j, nil
}

// cloneMeta copies a job's metadata; none (nil or empty) is nil.
func cloneMeta(m map[string]string) map[string]string {
	if len(m) == 0 {
		return nil
	}
	return maps.Clone(m)
}

// encodeArgs encodes a job's args as JSON, checked (job.CheckArgs): a
// json.RawMessage or []byte is taken as already encoded and kept exactly.
func encodeArgs(v any) (json.RawMessage, error) {
	var b []byte
	switch a := v.(type) {
	case nil:
		return nil, nil
	case json.RawMessage:
		b = a
	case []byte:
		b = a
	default:
		var err error
		if b, err = json.Marshal(v); err != nil {
			return nil, &FieldError{Field: "args", Reason: fmt.Sprintf("cannot encode as JSON: %v", err)}
		}
	}
	return b, job.CheckArgs("args", b)
}
