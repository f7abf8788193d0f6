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
	return c.store.List(ctx, store.ListParams{States: []State{StateDead}, AfterID: afterID, Limit: limit})
}

// RetryDead moves the given dead jobs (all of them if none is given) back to
// waiting with their attempts reset, and returns how many moved. A dead job
// whose unique key is now held by another unfinished job stays dead.
func (c *Client) RetryDead(ctx context.Context, ids ...ID) (int, error) {
	listening := c.reported()
	if listening && len(ids) == 0 {
		// Learn which jobs "all" is, to report each one.
		for after := ID(0); ; {
			page, err := c.store.List(ctx, store.ListParams{States: []State{StateDead}, AfterID: after, Limit: 1000})
			if err != nil {
				return 0, fmt.Errorf("retry dead jobs: %w", err)
			}
			for _, j := range page {
				ids = append(ids, j.ID)
			}
			if len(page) < 1000 {
				break
			}
			after = page[len(page)-1].ID
		}
	}
	n, err := c.store.RetryDead(ctx, store.RetryDeadParams{Now: now(), IDs: ids})
	if err != nil {
		return n, fmt.Errorf("retry dead jobs: %w", err)
	}
	if n > 0 {
		c.engine.Notify()
		if listening {
			for _, id := range ids {
				if j, err := c.store.Get(ctx, id); err == nil && j.State.Waiting() {
					c.transition(Event{Type: job.EventRetried, Job: j, At: now()})
				}
			}
		}
	}
	return n, nil
}

// PurgeDead deletes dead jobs: the given ones, or if none is given every
// dead job that died more than olderThan ago (0: all). It returns how many
// it deleted.
func (c *Client) PurgeDead(ctx context.Context, olderThan time.Duration, ids ...ID) (int, error) {
	p := store.PurgeParams{States: []State{StateDead}, IDs: ids}
	if olderThan > 0 {
		p.Before = now().Add(-olderThan)
	}
	n, err := c.store.Purge(ctx, p)
	if err != nil {
		return n, fmt.Errorf("purge dead jobs: %w", err)
	}
	return n, nil
}
