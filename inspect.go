package hopper

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/hopperq/hopper/job"
	"github.com/hopperq/hopper/store"
)

// ListOptions filter List; zero fields do not filter. See store.ListParams.
type ListOptions = store.ListParams

// Stats are job counts by queue and state; see store.Stats.
type Stats = store.Stats

// Get returns a job by ID, or an error wrapping ErrNotFound.
func (c *Client) Get(ctx context.Context, id ID) (*Job, error) {
	return c.store.Get(ctx, id)
}

// Status returns a job's state. Seed 003's statuses map onto it: pending is
// scheduled, available or retrying; running is running; completed is
// completed; failed is dead.
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
	return c.store.List(ctx, opts)
}

// Count counts the jobs matching opts' States, Queue and Kind (all jobs if
// none is set).
func (c *Client) Count(ctx context.Context, opts ListOptions) (int, error) {
	return c.store.Count(ctx, opts)
}

// Stats counts jobs by queue and state, and those finished in the last
// `since` (0: don't count).
func (c *Client) Stats(ctx context.Context, since time.Duration) (Stats, error) {
	t := now()
	p := store.StatsParams{Now: t}
	if since > 0 {
		p.FinishedSince = t.Add(-since)
	}
	return c.store.Stats(ctx, p)
}

// waitPoll is how often Wait re-reads a job that may be run by another
// process sharing the store.
const waitPoll = 100 * time.Millisecond

// Wait blocks until job id is finished (completed, cancelled or dead) and
// returns it, or until ctx is done. The job's Result holds its handler's
// JSON result; LastError says why it failed. Jobs run by other processes on
// a shared store are seen within 100ms.
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
// at its next lease renewal) and Cancel returns true: if the handler then
// returns an error, the job ends cancelled and is not retried; if it
// returns success, the work was done and the job ends completed. Cancel
// returns false, with a nil error, for a job that already finished or does
// not exist.
func (c *Client) Cancel(ctx context.Context, id ID) (bool, error) {
	j, err := c.store.Cancel(ctx, store.CancelParams{Now: now(), ID: id})
	switch {
	case errors.Is(err, job.ErrNotFound), errors.Is(err, job.ErrNotWaiting):
		return false, nil
	case err != nil:
		return false, fmt.Errorf("cancel job %d: %w", id, err)
	}
	if j.State == StateRunning {
		c.engine.CancelRunning(id)
		c.transition(Event{Type: job.EventCancelRequested, Job: j, At: now()})
		return true, nil
	}
	c.transition(Event{Type: job.EventCancelled, Job: j, At: now()})
	return true, nil
}

// Reschedule moves a waiting job to a new run time (zero: unchanged) and/or
// priority (nil: unchanged). The job keeps its ID; its old position is gone
// at once, so no stale copy ever fires. A job that started or finished
// returns an error wrapping ErrNotWaiting.
func (c *Client) Reschedule(ctx context.Context, id ID, runAt time.Time, priority *int) (*Job, error) {
	if runAt.IsZero() && priority == nil {
		return nil, &FieldError{Field: "run_at", Reason: "give a new run time or a new priority"}
	}
	j, err := c.store.Reschedule(ctx, store.RescheduleParams{Now: now(), ID: id, RunAt: runAt, Priority: priority})
	if err != nil {
		return j, fmt.Errorf("reschedule job %d: %w", id, err)
	}
	c.transition(Event{Type: job.EventRescheduled, Job: j, At: now()})
	c.engine.Notify() // the new run-at may be earlier than the one it sleeps until

	return j, nil
}
