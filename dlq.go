package hopper

import (
	"context"
	"fmt"
	"time"

	"github.com/hopperq/hopper/job"
	"github.com/hopperq/hopper/store"
)

// DeadJobs lists the dead-letter queue, oldest first, at most limit jobs
// (default 100) after afterID (0: from the start).
func (c *Client) DeadJobs(ctx context.Context, afterID ID, limit int) ([]*Job, error) {
	return c.List(ctx, ListOptions{States: []State{StateDead}, AfterID: afterID, Limit: limit})
}

// RetryDead moves the given dead jobs back to waiting with their attempts
// reset (history kept), and returns how many moved. Jobs not found or not
// dead are skipped, and so is a dead job whose unique key another unfinished
// job now holds. Giving no IDs is an error (a *FieldError), never "all":
// RetryAllDead retries every dead job.
func (c *Client) RetryDead(ctx context.Context, ids ...ID) (int, error) {
	if len(ids) == 0 {
		return 0, &FieldError{Field: "ids", Reason: "give the IDs of the dead jobs to retry (RetryAllDead retries every one)"}
	}
	return c.retryDead(ctx, store.RetryDeadParams{IDs: ids})
}

// RetryAllDead moves every dead job back to waiting, as RetryDead does, and
// returns how many moved. It is RetryMatching of the dead jobs, in batches
// of BulkBatch: a job that dies after it started may stay dead.
func (c *Client) RetryAllDead(ctx context.Context) (int, error) {
	res, err := c.RetryMatching(ctx, BulkOptions{States: []State{StateDead}})
	return res.Done, err
}

func (c *Client) retryDead(ctx context.Context, p store.RetryDeadParams) (int, error) {
	if c.closed() {
		return 0, ErrClientStopped
	}
	ids := p.IDs
	p.Now = c.now()
	reported := c.reported()
	if reported && c.observing() { // EventRetried before the start of a job made due
		defer c.starts.leave(c.starts.enter())
	}
	n, err := c.store.RetryDead(ctx, p)
	if err != nil {
		return n, err
	}
	if n > 0 {
		if reported {
			// A job a worker claimed between the store call and its Get
			// (woken by another job) is not reported: the store does not
			// return the jobs it moved.
			for _, id := range ids {
				if j, err := c.store.Get(ctx, id); err == nil && j.State.Waiting() {
					c.transition(Event{Type: job.EventRetried, Job: j, At: p.Now})
				}
			}
		}
		c.notify()
	}
	return n, nil
}

// PurgeDead deletes the given dead jobs for good and returns how many it
// deleted; jobs not found or not dead are skipped. Giving no IDs is an error
// (a *FieldError), never "all": see PurgeDeadOlderThan and PurgeAllDead.
func (c *Client) PurgeDead(ctx context.Context, ids ...ID) (int, error) {
	if len(ids) == 0 {
		return 0, &FieldError{Field: "ids", Reason: "give the IDs of the dead jobs to purge (PurgeDeadOlderThan and PurgeAllDead purge more)"}
	}
	return c.purgeDead(ctx, store.PurgeParams{IDs: ids})
}

// PurgeDeadOlderThan deletes the dead jobs that died more than age ago
// (age must be positive) and returns how many it deleted.
func (c *Client) PurgeDeadOlderThan(ctx context.Context, age time.Duration) (int, error) {
	if age <= 0 {
		return 0, &FieldError{Field: "older_than", Reason: fmt.Sprintf("must be positive, got %s (PurgeAllDead purges every dead job)", age)}
	}
	return c.purgeDead(ctx, store.PurgeParams{Before: c.now().Add(-age)})
}

// PurgeAllDead deletes every dead job for good and returns how many it
// deleted.
func (c *Client) PurgeAllDead(ctx context.Context) (int, error) {
	return c.purgeDead(ctx, store.PurgeParams{All: true})
}

func (c *Client) purgeDead(ctx context.Context, p store.PurgeParams) (int, error) {
	if c.closed() {
		return 0, ErrClientStopped
	}
	p.States = []State{StateDead}
	return c.store.Purge(ctx, p)
}

// Delete deletes the given finished jobs (completed, cancelled or dead) for
// good and returns how many it deleted; jobs not found or not finished are
// skipped (cancel a waiting or running job first). Giving no IDs is an
// error.
func (c *Client) Delete(ctx context.Context, ids ...ID) (int, error) {
	if len(ids) == 0 {
		return 0, &FieldError{Field: "ids", Reason: "give the IDs of the finished jobs to delete"}
	}
	if c.closed() {
		return 0, ErrClientStopped
	}
	return c.store.Purge(ctx, store.PurgeParams{States: []State{StateCompleted, StateCancelled, StateDead}, IDs: ids})
}
