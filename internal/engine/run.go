package engine

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"runtime/debug"
	"time"

	"github.com/hopperq/hopper/job"
	"github.com/hopperq/hopper/store"
)

type jobKey struct{}

// jobCtx carries the running job for JobFromContext without an extra
// allocation beyond itself.
type jobCtx struct {
	context.Context
	j *job.Job
}

func (c *jobCtx) Value(k any) any {
	if k == (jobKey{}) {
		return c.j
	}
	return c.Context.Value(k)
}

// JobFromContext returns the job a handler's context belongs to, or nil.
func JobFromContext(ctx context.Context) *job.Job {
	j, _ := ctx.Value(jobKey{}).(*job.Job)
	return j
}

// ErrTimeout is the cause of a handler context cancelled by the job's
// timeout.
var ErrTimeout = errors.New("job timed out")

// run calls h on j under ctx with j's timeout, recovering a panic into an
// error carrying its stack.
func run(ctx context.Context, j *job.Job, h Handler, set Settings) (res []byte, err error, cause error) {
	if set.Timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeoutCause(ctx, set.Timeout, ErrTimeout)
		defer cancel()
	}
	func() {
		defer func() {
			if r := recover(); r != nil {
				err = fmt.Errorf("panic: %v\n\n%s", r, debug.Stack())
			}
		}()
		res, err = h(&jobCtx{Context: ctx, j: j}, j)
	}()
	if ctx.Err() != nil {
		cause = context.Cause(ctx)
		if err != nil && errors.Is(cause, ErrTimeout) {
			err = fmt.Errorf("timed out after %s: %w", set.Timeout, err)
		}
	}
	return res, err, cause
}

func randFloat() float64 { return rand.Float64() }

// decide turns the end of an attempt into the job's next state. It is pure
// but for rnd, which supplies the jitter.
func decide(j *job.Job, set Settings, res []byte, err, cause error, dur time.Duration, now time.Time, rnd func() float64) store.Outcome {
	o := store.Outcome{ID: j.ID, Attempt: j.Attempt}
	o.Record = job.Attempt{Attempt: j.Attempt, StartedAt: j.StartedAt, Duration: dur, Worker: j.Worker}
	switch {
	case err == nil:
		o.State, o.Result = job.StateCompleted, res
	case errors.Is(cause, errShutdown):
		return released(j, dur)
	case errors.Is(cause, errCancelRequested) || j.CancelRequested:
		o.State = job.StateCancelled
	case job.IsPermanent(err):
		o.State = job.StateDead
	case j.Attempt >= j.MaxAttempts:
		o.State = job.StateDead
	default:
		o.State = job.StateRetrying
		d := set.Retry.Delay(j.Attempt, prevBackoff(j), rnd())
		o.RunAt = now.Add(d)
		o.Record.Backoff = d
	}
	if err != nil {
		o.Error = err.Error()
		o.Record.Error = o.Error
	}
	o.Record.Outcome = o.State.String()
	return o
}

// released is the outcome of an attempt given back by shutdown: the job
// waits again and the attempt does not count.
func released(j *job.Job, dur time.Duration) store.Outcome {
	return store.Outcome{
		ID: j.ID, Attempt: j.Attempt, State: job.StateAvailable,
		Record: job.Attempt{Attempt: j.Attempt, StartedAt: j.StartedAt, Duration: dur, Worker: j.Worker, Outcome: job.OutcomeReleased},
	}
}

func prevBackoff(j *job.Job) time.Duration {
	for i := len(j.Attempts) - 1; i >= 0; i-- {
		if d := j.Attempts[i].Backoff; d > 0 {
			return d
		}
	}
	return 0
}

// apply returns j as the store leaves it after o, for events and callers.
func apply(j *job.Job, o store.Outcome, now time.Time) *job.Job {
	j = j.Clone()
	j.State = o.State
	j.Worker, j.LeaseUntil = "", time.Time{}
	j.Attempts = append(j.Attempts, o.Record)
	if o.Error != "" {
		j.LastError = o.Error
	}
	switch o.State {
	case job.StateCompleted:
		j.Result, j.FinishedAt, j.Crashes = o.Result, now, 0
	case job.StateDead, job.StateCancelled:
		j.FinishedAt, j.Crashes = now, 0
	case job.StateRetrying:
		j.RunAt, j.Crashes = o.RunAt, 0
	case job.StateAvailable:
		j.Attempt--
	}
	return j
}
