package engine

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"time"

	"github.com/hopperq/hopper/job"
	"github.com/hopperq/hopper/store"
)

func randFloat() float64 { return rand.Float64() }

// decide turns the end of an attempt into its outcome: the job's next state
// as far as the worker knows (the store has the last word on a cancel
// requested meanwhile, store.FinishState). It is pure but for rnd, which
// supplies the jitter.
func decide(j *job.Job, set Settings, res []byte, err, cause error, dur time.Duration, now time.Time, rnd func() float64) store.Outcome {
	if err == nil && len(res) > job.MaxResultSize {
		err = job.Permanent(fmt.Errorf("result: %d bytes, more than the limit of %d", len(res), job.MaxResultSize))
		res = nil
	}
	o := store.Outcome{ID: j.ID, Attempt: j.Attempt}
	o.Record = job.Attempt{Attempt: j.Attempt, StartedAt: j.StartedAt, Duration: dur, Worker: j.Worker}
	switch {
	case err == nil:
		o.State, o.Result = job.StateCompleted, res
	case errors.Is(cause, errShutdown), errors.Is(cause, errLeaseLost):
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
		o.Error = truncate(err.Error(), job.MaxErrorSize)
		o.Record.Error = o.Error
		if len(res) <= job.MaxResultSize {
			o.Record.Result = res // what the handler returned with its error
		}
	}
	o.Record.Outcome = o.State.String()
	return o
}

// truncate cuts s to at most n bytes, on a character boundary, marking the cut.
func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	const mark = "… (truncated)"
	cut := n - len(mark)
	for cut > 0 && s[cut]&0xC0 == 0x80 { // inside a UTF-8 sequence
		cut--
	}
	return s[:cut] + mark
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
