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
	o := store.Outcome{ID: j.ID, Attempt: j.Attempt, Claim: j.Claims}
	o.Record = job.Attempt{Attempt: j.Attempt, StartedAt: j.StartedAt, Duration: dur, Worker: j.Worker}
	switch {
	case err == nil:
		o.State, o.Result = job.StateCompleted, res
	case errors.Is(cause, errShutdown), errors.Is(cause, errLeaseLost):
		return released(j, dur)
	case errors.Is(cause, errCancelRequested) || errors.Is(cause, job.ErrTerminated) || j.CancelRequested:
		o.State = job.StateCancelled
	case snoozable(j, set, err):
		sn := job.SnoozeOf(err)
		o.State = job.StateScheduled
		o.RunAt = snoozeUntil(now, sn.Delay)
		if sn.HoldKey && j.Key != "" {
			o.HoldKeyUntil = o.RunAt
		}
		o.Record.Error = truncate(sn.Error(), job.MaxErrorSize)
		o.Record.Outcome = job.OutcomeSnoozed
		if len(res) <= job.MaxResultSize {
			o.Record.Result = res // what the handler returned with it
		}
		return o // the job's LastError stays: a snooze is not a failure
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
		if sn := job.SnoozeOf(err); sn != nil {
			err = fmt.Errorf("%w (snoozed %d times in a row, the most allowed: counts as a failed attempt)", err, set.MaxSnoozes)
		}
		o.Error = truncate(err.Error(), job.MaxErrorSize)
		o.Record.Error = o.Error
		if len(res) <= job.MaxResultSize {
			o.Record.Result = res // what the handler returned with its error
		}
	}
	o.Record.Outcome = o.State.String()
	return o
}

// Decide is decide for an attempt that did not run in this engine (a
// remote worker's): its outcome from its result and error, as the pool
// would decide it — a job.SnoozeError snoozes it (within set.MaxSnoozes),
// a job.Permanent error or its last attempt sends it to the dead-letter
// queue, a cancel requested ends it cancelled, another error retries it
// by set.Retry.
func Decide(j *job.Job, set Settings, res []byte, err error, dur time.Duration, now time.Time) store.Outcome {
	return decide(j, set, res, err, nil, dur, now, randFloat)
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
		ID: j.ID, Attempt: j.Attempt, Claim: j.Claims, State: job.StateAvailable,
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

// snoozable reports whether err snoozes j (job.SnoozeError): unless j has
// already snoozed set.MaxSnoozes times in a row (consecutiveSnoozes), when
// the snooze counts as a failed attempt, so that a handler (or a server
// answering 429 forever) cannot keep a job waiting without end.
func snoozable(j *job.Job, set Settings, err error) bool {
	return job.SnoozeOf(err) != nil && consecutiveSnoozes(j) < set.MaxSnoozes
}

// consecutiveSnoozes counts the snoozed attempts at the end of j's
// history, passing over those released by shutdown.
func consecutiveSnoozes(j *job.Job) int {
	n := 0
	for i := len(j.Attempts) - 1; i >= 0; i-- {
		switch j.Attempts[i].Outcome {
		case job.OutcomeSnoozed:
			n++
		case job.OutcomeReleased:
		default:
			return n
		}
	}
	return n
}

// snoozeUntil is now+d, within the times stores keep.
func snoozeUntil(now time.Time, d time.Duration) time.Time {
	t := now.Add(d)
	if t.After(job.MaxTime) || t.Before(now) {
		return job.MaxTime
	}
	return t
}
