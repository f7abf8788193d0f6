package store

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/hopperq/hopper/job"
)

// The transitions below say, once, what each store operation does to a job.
// The memory store applies them to its records; the SQL stores apply them in
// Go where they load rows (rescue, cancel, reschedule, retry) and mirror them
// in set-based SQL on their hot paths (claim, finish), which the conformance
// suite checks against these functions as its oracle. Each checks
// job.CanTransition and changes nothing when it returns an error, and each
// stores the times it is given in UTC, as stores return them.

// ErrorWorkerLost is the error recorded for an attempt whose worker stopped
// renewing its lease: its process died (a store that can tell, such as
// SQLite's lock files, ends the lease at once) or it hung. The attempt's
// record ends at the worker's last heart-beat, as the error says.
const ErrorWorkerLost = "worker lost: its process died or stopped renewing the lease (the attempt's duration runs to its last heart-beat)"

// ApplyClaim makes the available job j a running attempt of worker, leased
// until leaseUntil: Attempt+1, Claims+1, StartedAt=now, CancelRequested and
// TerminateRequested cleared.
func ApplyClaim(j *job.Job, now time.Time, worker string, leaseUntil time.Time) error {
	if err := job.CheckTransition(j.ID, j.State, job.StateRunning); err != nil {
		return err
	}
	j.State = job.StateRunning
	j.Attempt++
	j.Claims++
	j.StartedAt, j.Worker, j.LeaseUntil = now.UTC(), worker, leaseUntil.UTC()
	j.CancelRequested, j.TerminateRequested = false, false
	return nil
}

// FinishState is the state an outcome leaves a job in: o.State, except that
// a job whose cancellation was requested and whose attempt did not succeed
// ends cancelled — whether it failed, died or was released by shutdown — so
// a requested cancel is never lost.
func FinishState(o Outcome, cancelRequested bool) job.State {
	if cancelRequested && o.State != job.StateCompleted {
		return job.StateCancelled
	}
	return o.State
}

// ApplyFinish applies the outcome o of an attempt to j at now. It reports
// false and changes nothing if j is not running claim o.Claim of attempt
// o.Attempt (the lease was lost). Otherwise the worker and lease are cleared, o.Record is
// appended to the history (its Outcome naming the state reached), and:
//
//   - completed: Result=o.Result, LastError cleared, FinishedAt=now, Crashes=0;
//   - retrying: RunAt=o.RunAt, LastError=o.Error, Crashes=0;
//   - dead, cancelled: LastError=o.Error (if any), FinishedAt=now, Crashes=0;
//   - scheduled (snoozed by its handler): Attempt-1 (the attempt does not
//     count), RunAt=o.RunAt, Crashes=0;
//   - available (released by shutdown): Attempt-1 (the attempt does not
//     count), RunAt and Crashes unchanged.
func ApplyFinish(j *job.Job, o Outcome, now time.Time) (bool, error) {
	if err := job.CheckTransition(o.ID, job.StateRunning, o.State); err != nil {
		return false, err
	}
	if j.State != job.StateRunning || j.Claims != o.Claim || j.Attempt != o.Attempt {
		return false, nil
	}
	now = now.UTC()
	to := FinishState(o, j.CancelRequested)
	rec := o.Record
	rec.StartedAt = rec.StartedAt.UTC()
	if to != o.State {
		rec.Outcome = to.String()
	}
	j.State = to
	j.Worker, j.LeaseUntil = "", time.Time{}
	j.Attempts = append(j.Attempts, rec)
	if o.Error != "" {
		j.LastError = o.Error
	}
	switch to {
	case job.StateCompleted:
		j.Result, j.LastError = o.Result, ""
		j.FinishedAt, j.Crashes = now, 0
	case job.StateRetrying:
		j.RunAt, j.Crashes = o.RunAt.UTC(), 0
	case job.StateDead, job.StateCancelled:
		j.FinishedAt, j.Crashes = now, 0
	case job.StateScheduled:
		j.Attempt--
		j.RunAt, j.Crashes = o.RunAt.UTC(), 0
	case job.StateAvailable:
		j.Attempt--
	}
	return true, nil
}

// ApplyRescue gives back the running job j whose worker was lost (its
// lease expired before now): Crashes+1, an interrupted attempt is recorded
// and LastError says so, the worker and lease are cleared, and then
//
//   - if its cancellation was requested: cancelled, FinishedAt=now;
//   - else if maxCrashes > 0 and Crashes >= maxCrashes: dead, a poison
//     pill, FinishedAt=now;
//   - else if Attempt >= MaxAttempts: dead, attempts exhausted, FinishedAt=now;
//   - else available, RunAt=now.
//
// lastBeat is when the worker last renewed j's lease (Store.Heartbeat's
// Now), the last time it was known to run the attempt: the interrupted
// attempt's duration ends there, not at now, which may be a lease and a
// rescue interval after the worker died. A lastBeat before the attempt's
// start (zero, or a renewal of an earlier attempt) means its worker never
// renewed it: the duration is 0, all that is known.
func ApplyRescue(j *job.Job, now, lastBeat time.Time, maxCrashes int) error {
	if j.State != job.StateRunning {
		return fmt.Errorf("rescue job %d: it is %s, not running: %w", j.ID, j.State, job.ErrConflict)
	}
	now = now.UTC()
	to := job.StateAvailable
	switch {
	case j.CancelRequested:
		to = job.StateCancelled
	case maxCrashes > 0 && j.Crashes+1 >= maxCrashes, j.Attempt >= j.MaxAttempts:
		to = job.StateDead
	}
	if err := job.CheckTransition(j.ID, j.State, to); err != nil {
		return err
	}
	var ran time.Duration // from the start to the last heart-beat
	if lastBeat.After(j.StartedAt) {
		ran = lastBeat.Sub(j.StartedAt)
		if lastBeat.After(now) {
			ran = now.Sub(j.StartedAt)
		}
	}
	j.Crashes++
	j.Attempts = append(j.Attempts, job.Attempt{
		Attempt:   j.Attempt,
		StartedAt: j.StartedAt,
		Duration:  ran,
		Worker:    j.Worker,
		Outcome:   job.OutcomeInterrupted,
		Error:     ErrorWorkerLost,
	})
	j.Worker, j.LeaseUntil = "", time.Time{}
	j.LastError = ErrorWorkerLost
	j.State = to
	switch {
	case to == job.StateCancelled:
		j.FinishedAt = now
	case to == job.StateDead && maxCrashes > 0 && j.Crashes >= maxCrashes:
		j.FinishedAt = now
		j.LastError = fmt.Sprintf("poison pill: the worker died %d times in a row running this job", j.Crashes)
	case to == job.StateDead:
		j.FinishedAt = now
		j.LastError = fmt.Sprintf("attempts exhausted: the worker died during attempt %d of %d", j.Attempt, j.MaxAttempts)
	default:
		j.RunAt = now
	}
	return nil
}

// ApplyCancel cancels j at now: a waiting job becomes cancelled
// (FinishedAt=now); a running job gets CancelRequested and stays running,
// for its worker to stop it. A finished job is left unchanged and the error
// wraps job.ErrNotWaiting.
func ApplyCancel(j *job.Job, now time.Time) error {
	return applyCancel(j, now, false)
}

// ApplyTerminate is ApplyCancel's killing form: a running job gets
// TerminateRequested too, for its worker to kill it.
func ApplyTerminate(j *job.Job, now time.Time) error {
	return applyCancel(j, now, true)
}

// applyCancel is ApplyCancel, or with kill ApplyTerminate.
func applyCancel(j *job.Job, now time.Time, kill bool) error {
	switch {
	case j.State == job.StateRunning:
		j.CancelRequested = true
		j.TerminateRequested = j.TerminateRequested || kill
		return nil
	case j.State.Waiting():
		if err := job.CheckTransition(j.ID, j.State, job.StateCancelled); err != nil {
			return err
		}
		j.State, j.FinishedAt = job.StateCancelled, now.UTC()
		return nil
	}
	return fmt.Errorf("job %d is %s: %w", j.ID, j.State, job.ErrNotWaiting)
}

// ApplyDrop moves the available job j to cancelled, with reason as its
// LastError: a claim dropped it because its queue was over its rate
// (Rate.Drop, DropReason). It is Cancel's transition; the job never ran.
func ApplyDrop(j *job.Job, now time.Time, reason string) error {
	if err := job.CheckTransition(j.ID, j.State, job.StateCancelled); err != nil {
		return err
	}
	j.State, j.FinishedAt, j.LastError = job.StateCancelled, now.UTC(), reason
	return nil
}

// ApplyReschedule moves the waiting job j to runAt (zero: unchanged) and/or
// priority (nil: unchanged); its state becomes scheduled or available by
// the run-at and now. A run-at out of job.CheckTime's range or a priority
// out of job.CheckPriority's is a *job.FieldError, whatever j's state; a
// job in another state is left unchanged and the error wraps
// job.ErrNotWaiting.
func ApplyReschedule(j *job.Job, runAt time.Time, priority *int, now time.Time) error {
	if err := job.CheckTime("run_at", runAt); err != nil {
		return err
	}
	if priority != nil {
		if err := job.CheckPriority("priority", *priority); err != nil {
			return err
		}
	}
	if !j.State.Waiting() {
		return fmt.Errorf("job %d is %s: %w", j.ID, j.State, job.ErrNotWaiting)
	}
	r := j.RunAt
	if !runAt.IsZero() {
		r = runAt.UTC()
	}
	to := job.WaitingState(r, now)
	if err := job.CheckTransition(j.ID, j.State, to); err != nil {
		return err
	}
	j.RunAt, j.State = r, to
	if priority != nil {
		j.Priority = *priority
	}
	return nil
}

// DebounceRunAt returns the run-at a debounced enqueue at now of a job
// with debounce d gives the waiting job j holding its key: now+d.Period,
// but no later than j.CreatedAt+d.MaxWait (with a MaxWait), and, for a
// retrying job, no earlier than the run-at its backoff chose.
func DebounceRunAt(j *job.Job, d job.Debounce, now time.Time) time.Time {
	r := now.Add(d.Period)
	if d.MaxWait > 0 {
		if deadline := j.CreatedAt.Add(d.MaxWait); deadline.Before(r) {
			r = deadline
		}
	}
	if j.State == job.StateRetrying && r.Before(j.RunAt) {
		r = j.RunAt
	}
	return r.UTC()
}

// ApplyDebounce merges the job in, enqueued at now with a Debounce, into
// the waiting job j that holds its unique key: j takes in's args, its
// run-at becomes DebounceRunAt (its state scheduled or available by it and
// now, as ApplyReschedule sets it), and everything else of j stays — its
// ID, kind, queue, priority, attempts and creation time, which the next
// merge's MaxWait counts from. A job that is not waiting is left unchanged
// and the error wraps job.ErrNotWaiting: a running holder is not merged
// into (its attempt has the old args); the store gives the key to a new
// job instead (TakeOverKey).
func ApplyDebounce(j *job.Job, in *job.Job, now time.Time) error {
	if !j.State.Waiting() {
		return fmt.Errorf("job %d is %s: %w", j.ID, j.State, job.ErrNotWaiting)
	}
	r := DebounceRunAt(j, in.Debounce, now)
	to := job.WaitingState(r, now)
	if err := job.CheckTransition(j.ID, j.State, to); err != nil {
		return err
	}
	j.Args = in.Args
	j.RunAt, j.State = r, to
	return nil
}

// TakeOverKey gives the unique key of the running job j up, for a
// debounced enqueue of the key to insert a new waiting job holding it:
// the attempt under way has the old args, so the next run must be a job
// of its own, and only one job holds a key at a time. j keeps running;
// its UniqueKey is cleared. A job that is not running is left unchanged
// and the error wraps job.ErrConflict.
func TakeOverKey(j *job.Job) error {
	if j.State != job.StateRunning {
		return fmt.Errorf("take over the key of job %d: it is %s, not running: %w", j.ID, j.State, job.ErrConflict)
	}
	j.UniqueKey = ""
	return nil
}

// ApplyRetryDead takes the dead job j out of the dead-letter queue at now:
// available, Attempt=0, Crashes=0, RunAt=now, FinishedAt cleared,
// CancelRequested cleared; its history and LastError are kept.
func ApplyRetryDead(j *job.Job, now time.Time) error {
	if j.State != job.StateDead {
		return fmt.Errorf("job %d is %s, not dead: %w", j.ID, j.State, job.ErrConflict)
	}
	j.State = job.StateAvailable
	j.Attempt, j.Crashes = 0, 0
	j.RunAt, j.FinishedAt = now.UTC(), time.Time{}
	j.CancelRequested, j.TerminateRequested = false, false
	return nil
}

// ApplySupersede sends the retrying job j to the dead-letter queue because
// a newer tick of its schedule fired at now (tick zero: a run now of it):
// FinishedAt=now, and LastError says so, keeping the error that made it
// retry.
func ApplySupersede(j *job.Job, now time.Time, tick time.Time) error {
	if j.State != job.StateRetrying {
		return fmt.Errorf("job %d is %s, not retrying: %w", j.ID, j.State, job.ErrConflict)
	}
	j.State, j.FinishedAt = job.StateDead, now.UTC()
	if tick.IsZero() {
		j.LastError = fmt.Sprintf("superseded by a run now of its schedule while it waited to retry (last error: %s)", j.LastError)
		return nil
	}
	j.LastError = fmt.Sprintf("superseded by the tick of %s: its schedule fired again while it waited to retry (last error: %s)",
		tick.UTC().Format(time.RFC3339), j.LastError)
	return nil
}

// ApplyPromote makes the scheduled or retrying job j available: its run-at
// has come.
func ApplyPromote(j *job.Job) error {
	if err := job.CheckTransition(j.ID, j.State, job.StateAvailable); err != nil {
		return err
	}
	j.State = job.StateAvailable
	return nil
}

// BufferStep is what a tick (or a run now) of a schedule with a buffer
// overlap policy does (ApplyBuffer).
type BufferStep uint8

// The steps ApplyBuffer decides.
const (
	BufferFire   BufferStep = iota // nothing waits: fire as without a policy
	BufferAppend                   // kept waiting: appended to Buffered
	BufferSkip                     // Buffer runs already wait: skipped
)

// ApplyBuffer decides a tick at p.FireTime (or a run now, p.Manual) of sc
// under p.Buffer (> 0), its last job being in state last (0: none, or
// gone): it fires when no run waits and the last job has finished (or is
// gone); otherwise the run is appended to sc.Buffered (a run now as a zero
// time) while fewer than p.Buffer wait, and skipped beyond.
func ApplyBuffer(sc *job.Schedule, last job.State, p FireScheduleParams) BufferStep {
	busy := last != 0 && !last.Finished()
	if !busy && len(sc.Buffered) == 0 {
		return BufferFire
	}
	if len(sc.Buffered) >= p.Buffer {
		return BufferSkip
	}
	at := p.FireTime.UTC()
	if p.Manual {
		at = time.Time{}
	}
	sc.Buffered = append(sc.Buffered, at)
	return BufferAppend
}

// ApplyRelease decides a release (p.Release) of sc, its last job being in
// state last (0: none, or gone): it reports whether the first buffered
// run fires, and if so removes it from sc.Buffered. A paused schedule, an
// empty buffer, a first run other than p.FireTime (another process
// released it) or an unfinished last job release nothing.
func ApplyRelease(sc *job.Schedule, last job.State, p FireScheduleParams) bool {
	if sc.Paused || len(sc.Buffered) == 0 || UnixNanos(sc.Buffered[0]) != UnixNanos(p.FireTime) ||
		(last != 0 && !last.Finished()) {
		return false
	}
	sc.Buffered = slices.Delete(slices.Clone(sc.Buffered), 0, 1)
	if len(sc.Buffered) == 0 {
		sc.Buffered = nil
	}
	return true
}

// EncodeTimes is the SQL stores' encoding of a schedule's Buffered: Unix
// nanoseconds (UnixNanos: a zero time is 0) joined by commas; empty for
// none.
func EncodeTimes(ts []time.Time) string {
	var b strings.Builder
	for i, t := range ts {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(strconv.FormatInt(UnixNanos(t), 10))
	}
	return b.String()
}

// DecodeTimes is the inverse of EncodeTimes.
func DecodeTimes(s string) ([]time.Time, error) {
	if s == "" {
		return nil, nil
	}
	parts := strings.Split(s, ",")
	out := make([]time.Time, len(parts))
	for i, p := range parts {
		n, err := strconv.ParseInt(p, 10, 64)
		if err != nil {
			return nil, fmt.Errorf("buffered runs %q: %w", s, err)
		}
		out[i] = FromUnixNanos(n)
	}
	return out, nil
}
