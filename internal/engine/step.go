package engine

import (
	"context"
	"time"

	"github.com/hopperq/hopper/job"
)

// ProcessNext claims the most urgent job due at now, runs it in the calling
// goroutine and records its outcome at now, through the same steps as the
// pool: claim, attempt (cancellable by CancelRunning), outcome, finish. It
// reports false if no job was due. Time is whatever the caller says it is,
// so tests and simulations step through schedules, retries and backoffs
// without waiting.
func (e *Engine) ProcessNext(ctx context.Context, now time.Time) (*job.Job, bool, error) {
	res, err := e.claim(ctx, now, 1, nil, nil)
	for err == nil && len(res.Jobs) == 0 && len(res.Dropped) > 0 {
		// The job was dropped (its queue over its rate): the next one.
		res, err = e.claim(ctx, now, 1, nil, nil)
	}
	if err != nil || len(res.Jobs) == 0 {
		return nil, false, err
	}
	j := res.Jobs[0]
	s := new(slot)
	e.addSlot(s)
	o := e.attempt(ctx, j, func() time.Time { return now }, nil, s)
	e.removeSlot(s)
	after, err := e.finish(ctx, []finished{{j: j, outcome: o}}, now, true)
	if err != nil {
		return j, true, err
	}
	if after[0] == nil {
		return j, true, job.ErrLeaseLost
	}
	return after[0], true, nil
}
