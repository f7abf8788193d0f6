package hopper

import (
	"cmp"
	"errors"
	"fmt"
	"time"

	"github.com/hopperq/hopper/backoff"
	"github.com/hopperq/hopper/job"
)

// EnqueueOptions are the options of a job. They are given at three levels,
// each zero field falling back to the next: the job's own (Enqueue,
// EnqueueRequest, ScheduleOptions), its kind's (Register), and the client's
// (Config.Defaults), then Hopper's defaults. A nil *EnqueueOptions means all
// unset.
//
// Queue, Priority and MaxAttempts are fixed when the job is made, because
// the store orders and limits by them. Timeout and Retry, when the job sets
// none, are taken from the kind and Config of the process that runs it, so
// a deployment's new settings apply to jobs already waiting.
type EnqueueOptions struct {
	// Queue (default "default").
	Queue string
	// Priority: lower runs first, within MinPriority to MaxPriority
	// (±1,000,000). 0 means unset, so the next level's applies (default
	// 0); to give priority 0 over a kind's or Config's non-zero default,
	// write Priority(0) (PriorityZero).
	Priority int
	// MaxAttempts before the job goes to the dead-letter queue (default
	// 25, at most MaxAttemptsLimit: 10,000).
	MaxAttempts int
	// Timeout of each attempt (default none; see ScheduleOptions for the
	// jobs schedules fire). 0 means unset, so the next level's applies; to
	// run without a timeout over a kind's, Config's or schedule's, write
	// NoTimeout.
	Timeout time.Duration
	// Retry is the backoff policy between attempts (default
	// backoff.Default: exponential from 1s, doubling, capped at 1h, full
	// jitter).
	Retry *backoff.Policy

	// The fields below are per job: a kind's or Config's options must
	// leave them zero.

	// Delay runs the job no earlier than now+Delay. Set Delay or RunAt,
	// not both.
	Delay time.Duration
	// RunAt runs the job no earlier than this time (within 1970-2200).
	RunAt time.Time
	// UniqueKey, if set, makes the job unique among unfinished jobs: while
	// a job with the key is waiting or running, enqueueing another returns
	// the existing job (see Config.UniqueConflict). Once that job has
	// finished (completed, cancelled or dead) the key is free again: it
	// dedupes concurrent or repeated requests for pending work, not work
	// done, for no set time.
	UniqueKey string
	// Debounce, with a UniqueKey, coalesces the enqueues of the key: while
	// a job with the key waits, an enqueue does not add a job but gives the
	// waiting one its args and pushes its run-at to now+Period (never past
	// its first enqueue plus MaxWait, if set); EnqueueResult.Debounced says
	// so. Many enqueues within the period thus give one run, with the last
	// args. If the job with the key is already running, its attempt keeps
	// its args and a new job is enqueued, which takes the key over: the
	// next run has the latest args. A debounced job runs Period after its
	// enqueue: set no Delay or RunAt. The job keeps its other options
	// (queue, priority, …) of the enqueue that created it. Debounce and
	// unique keys share one namespace: a plain enqueue of a key a
	// debounced job holds is a Duplicate, as for any unique key.
	Debounce Debounce
	// Key is the job's flow-control key (Job.Key): a tenant, a customer,
	// an API account. A queue may limit how many jobs of one key run at
	// once (Client.SetQueueKeyConcurrency), pause a key (Client.PauseKey),
	// and a handler may hold its key for a while (HoldKey); the queue
	// serves its keys in turn. At most job.MaxKeySize bytes of UTF-8.
	Key string

	// Meta and Tags are set per job and per schedule (ScheduleOptions),
	// not on a kind or a Config.

	// Meta is the job's metadata, kept with it (Job.Meta): string pairs
	// of at most job.MaxMetaSize bytes in all. An EnqueueMiddleware may
	// add to it (a tracer adds the trace's parent).
	Meta map[string]string
	// Tags label the job for List and Count (ListOptions.Tag): at most
	// job.MaxTags, each 1 to job.MaxTagSize bytes of ASCII letters,
	// digits and _ - . : /.
	Tags []string
}

// Debounce is EnqueueOptions.Debounce: Period (positive) and MaxWait (zero
// for none, else at least Period). See job.Debounce.
type Debounce = job.Debounce

// PriorityZero is the EnqueueOptions.Priority that means "priority 0",
// where a plain 0 means "unset" and falls back to the kind's or Config's
// priority. It is resolved to 0 when a job is made; a schedule keeps it
// (its JSON shows it as is) and resolves it when it fires. Priority(n)
// writes it for n == 0.
const PriorityZero = job.PriorityZero

// NoTimeout is the EnqueueOptions.Timeout that means "no timeout", where a
// plain 0 means "unset" and falls back to the kind's, Config's or, for a
// schedule's jobs, the schedule's period. The job keeps it.
const NoTimeout = job.NoTimeout

// Priority returns the EnqueueOptions.Priority that gives a job priority
// n whatever its kind's or Config's: n itself, or PriorityZero for 0.
func Priority(n int) int {
	if n == 0 {
		return PriorityZero
	}
	return n
}

// validate checks o, naming a bad field as prefix+field ("max_attempts",
// "Config.Defaults.max_attempts"); perJob says whether the per-job fields
// may be set.
func (o *EnqueueOptions) validate(prefix string, perJob bool) error {
	bad := func(field, format string, args ...any) error {
		return &FieldError{Field: prefix + field, Reason: fmt.Sprintf(format, args...)}
	}
	if o.Queue != "" {
		if err := job.CheckName(prefix+"queue", o.Queue); err != nil {
			return err
		}
	}
	if o.MaxAttempts != 0 {
		if err := job.CheckMaxAttempts(prefix+"max_attempts", o.MaxAttempts); err != nil {
			return err
		}
	}
	if o.Priority != PriorityZero {
		if err := job.CheckPriority(prefix+"priority", o.Priority); err != nil {
			return err
		}
	}
	switch {
	case o.Timeout < 0 && o.Timeout != NoTimeout:
		return bad("timeout", "must not be negative, got %s", o.Timeout)
	case !perJob && (o.Delay != 0 || !o.RunAt.IsZero() || o.UniqueKey != "" || !o.Debounce.IsZero()):
		return bad("delay", "delay, run_at, unique_key and debounce are set per job, not here")
	case !perJob && o.Key != "":
		return bad("key", "a flow-control key is set per job, not here")
	case o.Delay < 0:
		return bad("delay", "must not be negative, got %s", o.Delay)
	case o.Delay > 0 && !o.RunAt.IsZero():
		return bad("delay", "set delay or run_at, not both")
	}
	if err := o.Debounce.Check(prefix + "debounce"); err != nil {
		return err
	}
	switch {
	case o.Debounce.IsZero():
	case o.UniqueKey == "":
		return bad("debounce", "needs a unique_key: the key names what the enqueues coalesce on")
	case o.Delay != 0 || !o.RunAt.IsZero():
		return bad("debounce", "a debounced job runs its period after the latest enqueue: set no delay or run_at")
	}
	if err := job.CheckMeta(prefix+"meta", o.Meta); err != nil {
		return err
	}
	if err := job.CheckTags(prefix+"tags", o.Tags); err != nil {
		return err
	}
	if o.Retry != nil {
		if err := o.Retry.Validate(); err != nil {
			var be *backoff.Error
			if errors.As(err, &be) {
				return &FieldError{Field: prefix + "retry." + be.Field, Reason: be.Reason, Err: err}
			}
			return bad("retry", "%v", err)
		}
	}
	return job.CheckTime(prefix+"run_at", o.RunAt)
}

// checkShared returns a *FieldError if o, a kind's or a Config's options,
// sets Meta or Tags, which belong to a job or a schedule.
func (o *EnqueueOptions) checkShared(prefix string) error {
	if o.Meta != nil || o.Tags != nil {
		return &FieldError{Field: prefix + "meta", Reason: "meta and tags are set per job or per schedule, not here"}
	}
	return nil
}

// options returns the options a job of kind runs with: each field from own,
// else the kind's, else the client's defaults (which hold Hopper's). It is
// the one place that precedence is written; Enqueue, schedules and the
// worker that runs a job all ask it.
func (c *Client) options(kind string, own *EnqueueOptions) EnqueueOptions {
	return c.optionsOf(c.cfg.Workers.lookup(kind), own)
}

// optionsOf is options for a kind already looked up (nil: not registered).
func (c *Client) optionsOf(kd *kind, own *EnqueueOptions) EnqueueOptions {
	var o, k EnqueueOptions
	if own != nil {
		o = *own
	}
	if kd != nil {
		k = kd.opts
	}
	d := &c.cfg.Defaults
	o.Queue = cmp.Or(o.Queue, k.Queue, d.Queue)
	if o.Priority = cmp.Or(o.Priority, k.Priority, d.Priority); o.Priority == PriorityZero {
		o.Priority = 0
	}
	o.MaxAttempts = cmp.Or(o.MaxAttempts, k.MaxAttempts, d.MaxAttempts)
	o.Timeout = cmp.Or(o.Timeout, k.Timeout, d.Timeout)
	o.Retry = cmp.Or(o.Retry, k.Retry, d.Retry)
	return o
}
