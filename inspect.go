package hopper

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/hopperq/hopper/job"
	"github.com/hopperq/hopper/store"
)

// ListOptions select the jobs List returns and Count counts. Zero fields
// do not filter: these only read.
type ListOptions struct {
	// States, if set, keeps jobs in any of these states.
	States []State
	// Queue and Kind, if set, keep jobs of that queue and kind. A name no
	// job can have (not valid UTF-8, a control character such as NUL,
	// longer than job.MaxNameSize: see job.CheckName) is refused with a
	// *FieldError naming "queue" or "kind", on every store alike.
	Queue string
	Kind  string
	// Tag, if set, keeps jobs carrying this tag (EnqueueOptions.Tags);
	// List and Count both filter by it. A string no tag can be
	// (job.CheckTag) is refused with a *FieldError on "tag". Tags are
	// indexed on every store: the filter stays fast among millions of
	// jobs (docs/metadata.md).
	Tag string
	// AfterID pages: only jobs with a higher ID (a lower one with Desc).
	AfterID ID
	// Limit caps List (default 100, at most 10,000); Count ignores it.
	Limit int
	// Desc lists newest first.
	Desc bool
	// CreatedAfter and CreatedBefore, if set, keep jobs created at or
	// after, and before, these times (List only; Count ignores them).
	CreatedAfter  time.Time
	CreatedBefore time.Time
}

// DefaultListLimit is the page of a List whose ListOptions.Limit is 0, and
// MaxListLimit bounds ListOptions.Limit.
const (
	DefaultListLimit = store.DefaultListLimit
	MaxListLimit     = 10_000
)

// params checks o and returns the store's parameters: the one check of a
// list's filters, whoever sends them (the API, the dashboard, the CLI).
func (o ListOptions) params() (store.ListParams, error) {
	if o.Limit < 0 || o.Limit > MaxListLimit {
		return store.ListParams{}, &FieldError{Field: "limit", Reason: fmt.Sprintf("must be between 0 (default %d) and %d, got %d", DefaultListLimit, MaxListLimit, o.Limit)}
	}
	for _, f := range [...]struct{ field, name string }{{"queue", o.Queue}, {"kind", o.Kind}} {
		// A name no job can have: PostgreSQL would fail on a NUL or bytes
		// that are not UTF-8 where the other stores find nothing.
		if f.name != "" {
			if err := job.CheckName(f.field, f.name); err != nil {
				return store.ListParams{}, err
			}
		}
	}
	if o.Tag != "" {
		if err := job.CheckTag("tag", o.Tag); err != nil {
			return store.ListParams{}, err
		}
	}
	return store.ListParams{
		States: o.States, Queue: o.Queue, Kind: o.Kind, Tag: o.Tag, AfterID: o.AfterID, Limit: o.Limit, Desc: o.Desc,
		CreatedAfter: o.CreatedAfter, CreatedBefore: o.CreatedBefore,
	}, nil
}

// Stats are job counts by queue and state, and the jobs finished lately.
type Stats struct {
	// Queues maps queue → state → count; every queue with a job appears.
	Queues map[string]map[State]int
	// Finished counts the jobs finished since Since, by final state.
	Finished map[State]int
	// Since is the start of the window of Finished.
	Since time.Time
	// Throughput is the jobs completed per second in the window, measured
	// from the first job finished in it (so a store that has worked for 20
	// seconds of a one-minute window is not divided by 60).
	Throughput float64
	// OldestAvailable maps each queue with jobs ready to run to the
	// earliest run-at among them: now minus it is how long the most
	// overdue job has waited for a worker.
	OldestAvailable map[string]time.Time
	// Series splits the window into SeriesSteps equal steps and counts,
	// by final state, the jobs finished in each, oldest first: a chart of
	// throughput and failures across every process sharing the store.
	Series map[State][]int
	// Step is the length of a step of Series.
	Step time.Duration
	// At is when the counts were taken.
	At time.Time
}

// Get returns a job by ID, or an error wrapping ErrNotFound.
func (c *Client) Get(ctx context.Context, id ID) (*Job, error) {
	return c.store.Get(ctx, id)
}

// Status returns a job's state: waiting (scheduled, available, retrying),
// running, or finished (completed, cancelled, dead).
func (c *Client) Status(ctx context.Context, id ID) (State, error) {
	j, err := c.store.Get(ctx, id)
	if err != nil {
		return 0, err
	}
	return j.State, nil
}

// List returns jobs matching opts, oldest first (or newest first with
// opts.Desc), at most opts.Limit (default 100).
func (c *Client) List(ctx context.Context, opts ListOptions) ([]*Job, error) {
	p, err := opts.params()
	if err != nil {
		return nil, err
	}
	return c.store.List(ctx, p)
}

// Count counts the jobs matching opts' States, Queue, Kind and Tag (all
// jobs if none is set).
func (c *Client) Count(ctx context.Context, opts ListOptions) (int, error) {
	p, err := opts.params()
	if err != nil {
		return 0, err
	}
	return c.store.Count(ctx, p)
}

// SeriesSteps is how many steps Stats.Series splits its window into.
const SeriesSteps = 60

// Stats counts jobs by queue and state, and those finished in the last
// `window` (0: don't count them), also step by step (Series).
func (c *Client) Stats(ctx context.Context, window time.Duration) (Stats, error) {
	t := c.now()
	p := store.StatsParams{Now: t}
	if window > 0 {
		p.FinishedSince = t.Add(-window)
		p.Step = max(window/SeriesSteps, time.Millisecond)
	}
	st, err := c.store.Stats(ctx, p)
	if err != nil {
		return Stats{}, err
	}
	out := Stats{
		Queues: st.ByQueue, Finished: st.Finished, Since: p.FinishedSince, OldestAvailable: st.OldestAvailable,
		Series: st.Series, Step: p.Step, At: t,
	}
	if n := st.Finished[StateCompleted]; n > 0 && !st.FirstFinished.IsZero() {
		out.Throughput = float64(n) / max(t.Sub(st.FirstFinished), time.Second).Seconds()
	}
	return out, nil
}

// waitPoll is how often Wait re-reads a job that may be run by another
// process sharing the store.
const waitPoll = 100 * time.Millisecond

// Wait blocks until job id is finished (completed, cancelled or dead) and
// returns it, or until ctx is done. The job's Result holds its handler's
// JSON result; LastError says why it failed. Jobs run by other processes on
// a shared store are seen within 100ms.
//
// Wait only watches: it does not run the job. On a client that was never
// started (Start), or that has no worker for the job's kind or queue, it
// returns only when another process sharing the store runs the job — if
// none does, it waits until ctx is done, with no other sign. Give it a ctx
// with a deadline, or start the client first. Wait works on a client
// whether started or not, so that a program may wait for jobs that others
// run.
func (c *Client) Wait(ctx context.Context, id ID) (*Job, error) {
	var tick *time.Ticker
	for {
		woke, cancel := c.events.wait(id)
		j, err := c.store.Get(ctx, id)
		if err != nil || j.State.Finished() {
			cancel()
			return j, err
		}
		if tick == nil {
			tick = time.NewTicker(waitPoll)
			defer tick.Stop()
		}
		select {
		case <-woke:
		case <-tick.C:
		case <-ctx.Done():
			cancel()
			return j, context.Cause(ctx)
		}
		cancel()
	}
}

// Cancel cancels a job. A waiting job is cancelled at once and Cancel
// returns true. A running job has its context cancelled (on another process,
// at its next lease renewal) and Cancel returns true: unless its handler
// then succeeds (the work was done: the job completes), it ends cancelled —
// also if it fails, is given back by a shutdown, or its worker dies; it is
// never retried. Cancel returns false, with a nil error, for a job that
// already finished or does not exist.
func (c *Client) Cancel(ctx context.Context, id ID) (bool, error) {
	return c.cancel(ctx, id, false)
}

// Terminate is Cancel's killing form, which OverlapTerminate schedules
// use: a running job's handler context is cancelled with the cause
// ErrTerminated (context.Cause), which asks the handler to stop at once
// rather than clean up; the exec kind sends its process group SIGKILL
// instead of Cancel's SIGTERM. A job running in another process sharing
// the store is killed there as promptly as Cancel reaches it (the store
// keeps the request: job.Job.TerminateRequested). A waiting job is
// cancelled at once, as by Cancel. The job ends cancelled.
func (c *Client) Terminate(ctx context.Context, id ID) (bool, error) {
	return c.cancel(ctx, id, true)
}

// cancel is Cancel, or with kill Terminate.
func (c *Client) cancel(ctx context.Context, id ID, kill bool) (bool, error) {
	if c.closed() {
		return false, ErrClientStopped
	}
	if c.observing() { // EventCancelRequested before the attempt's end is reported
		defer c.stops.leave(c.stops.enter())
	}
	j, err := c.store.Cancel(ctx, store.CancelParams{Now: c.now(), ID: id, Terminate: kill})
	switch {
	case errors.Is(err, job.ErrNotFound), errors.Is(err, job.ErrNotWaiting):
		return false, nil
	case err != nil:
		return false, err
	}
	if j.State == StateRunning {
		if kill {
			c.engine.TerminateRunning(id)
		} else {
			c.engine.CancelRunning(id)
		}
		c.transition(Event{Type: job.EventCancelRequested, Job: j, At: c.now()})
		return true, nil
	}
	c.transition(Event{Type: job.EventCancelled, Job: j, At: c.now()})
	return true, nil
}

// Reschedule moves a waiting job to a new run time (zero: unchanged; within
// 1970-2200) and/or priority (nil: unchanged). The job keeps its ID; its old
// position is gone at once, so no stale copy ever fires. A job that started
// or finished returns an error wrapping ErrNotWaiting, and the job as it is.
func (c *Client) Reschedule(ctx context.Context, id ID, runAt time.Time, priority *int) (*Job, error) {
	if c.closed() {
		return nil, ErrClientStopped
	}
	if runAt.IsZero() && priority == nil {
		return nil, &FieldError{Field: "run_at", Reason: "give a new run time or a new priority"}
	}
	if c.observing() { // EventRescheduled before the start of a job made due
		defer c.starts.leave(c.starts.enter())
	}
	j, err := c.store.Reschedule(ctx, store.RescheduleParams{Now: c.now(), ID: id, RunAt: runAt, Priority: priority})
	if err != nil {
		return j, err
	}
	c.transition(Event{Type: job.EventRescheduled, Job: j, At: c.now()})
	c.notify() // the new run-at may be earlier than the one it sleeps until
	return j, nil
}

// PoolStats describe a client's worker pool.
type PoolStats struct {
	Workers int // Config.Concurrency while the client is started, else 0
	Busy    int // workers running a job now
}

// Pool reports the client's worker pool: none until Start and after Stop.
func (c *Client) Pool() PoolStats {
	c.mu.Lock()
	started := c.state == clientStarted
	c.mu.Unlock()
	if !started {
		return PoolStats{}
	}
	return PoolStats{Workers: c.cfg.Concurrency, Busy: c.engine.Busy()}
}

// Ping reports whether the store answers and holds the schema this build
// knows (store.Pinger), for readiness checks: nil if so, or what is wrong.
// A store that cannot be unreachable (memory) always answers nil.
func (c *Client) Ping(ctx context.Context) error {
	if c.closed() {
		return ErrClientStopped
	}
	if p, ok := c.pinger(); ok {
		return p.Ping(ctx)
	}
	return nil
}

func (c *Client) pinger() (store.Pinger, bool) {
	s := c.store
	switch t := s.(type) {
	case timedStore:
		s = t.s
	case timedFinishClaimer:
		s = t.s
	}
	p, ok := s.(store.Pinger)
	return p, ok
}
