package hopper

import (
	"context"
	"time"
)

// ProcessNext runs the most urgent job due at now in the calling goroutine
// and records its outcome as of now. It returns the job as it is afterwards
// and true, or false if no job was due at now. No real time is involved:
// backoffs and delays are measured against the now values the caller passes,
// so tests and simulations step through hours of retries instantly.
//
// ProcessNext needs no Start and may be mixed with a started pool (the store
// never hands a job to two claimers).
func (c *Client) ProcessNext(ctx context.Context, at time.Time) (*Job, bool, error) {
	return c.engine.ProcessNext(ctx, at)
}

// RunReady runs every job due at now, one at a time, most urgent first, and
// returns them as they are afterwards. Retries scheduled by failures are due
// later than now (unless their backoff is zero) and so do not run again.
func (c *Client) RunReady(ctx context.Context, at time.Time) ([]*Job, error) {
	var out []*Job
	for {
		j, ok, err := c.engine.ProcessNext(ctx, at)
		if err != nil {
			return out, err
		}
		if !ok {
			return out, nil
		}
		out = append(out, j)
	}
}
