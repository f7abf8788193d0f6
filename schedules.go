package hopper

import (
	"context"
	"fmt"
	"log/slog"
	"maps"
	"math/rand/v2"
	"slices"
	"strings"
	"time"

	"github.com/hopperq/hopper/job"
	"github.com/hopperq/hopper/schedule"
	"github.com/hopperq/hopper/store"
)

// Overlap policies of recurring schedules.
const (
	OverlapSkip   = job.OverlapSkip   // skip a tick while the previous run is unfinished (default)
	OverlapAllow  = job.OverlapAllow  // fire anyway
	OverlapCancel = job.OverlapCancel // fire, and cancel the previous run if unfinished
	// OverlapBufferOne: a tick while the previous run is unfinished waits
	// for it; at most one waits, further ticks are skipped and counted.
	OverlapBufferOne = job.OverlapBufferOne
	// OverlapBufferAll: every tick while the previous run is unfinished
	// waits (up to MaxBuffered); they run in order, one at a time.
	OverlapBufferAll = job.OverlapBufferAll
	// OverlapTerminate: as OverlapCancel, but the previous run is killed
	// (Terminate: its context's cause is ErrTerminated).
	OverlapTerminate = job.OverlapTerminate
)

// MaxBuffered bounds the runs an OverlapBufferAll schedule keeps waiting.
const MaxBuffered = job.MaxBuffered

// Catch-up policies of recurring schedules (job.CatchUp).
const (
	CatchUpOne    = job.CatchUpOne    // one run for the missed ticks, the earliest (default)
	CatchUpNone   = job.CatchUpNone   // no run
	CatchUpLatest = job.CatchUpLatest // one run, the latest missed tick
	CatchUpAll    = job.CatchUpAll    // every missed tick within a window, up to a cap
)

// Jitter modes of recurring schedules (job.JitterMode).
const (
	JitterRandom = job.JitterRandom // a new random delay at each tick (default)
	JitterStable = job.JitterStable // the same delay at every tick, from the schedule's name
)

// ScheduleOptions describe a recurring schedule for AddSchedule.
//
// A job a schedule fires gets its options as any job does (EnqueueOptions):
// the schedule's Options, else its kind's, else Config.Defaults. Two rules
// keep a failing or hung job from blocking its schedule (OverlapCancel is
// a third: each tick cancels the unfinished job before it):
//
//   - with OverlapSkip (the default), a tick that comes while the previous
//     job runs (or is about to) is skipped and counted (Schedule.SkippedTicks),
//     but a previous job still waiting to retry is superseded: it goes to
//     the dead-letter queue (alerting through OnDead) and the tick fires;
//   - a fired job that gets no timeout from any level times out after its
//     schedule's period — the time from its tick to the next one — and at
//     least MinScheduledTimeout.
type ScheduleOptions struct {
	// Cron is a cron expression (5 fields, or 6 with seconds first) or a
	// macro (@hourly, @daily, @weekly, @monthly, @yearly). Set Cron or
	// Every.
	Cron string
	// TimeZone is the IANA zone Cron is read in (default UTC; not "Local").
	// Across DST,
	// a time in the spring-forward gap fires once at the end of the gap and
	// a repeated fall-back hour fires once.
	TimeZone string
	// Every fires at a fixed rate from the schedule's creation (cadence
	// kept; missed ticks are not replayed), or with FixedDelay, Every after
	// the previous run finished. At least one second.
	Every      time.Duration
	FixedDelay bool
	// Overlap: OverlapSkip (default), OverlapAllow (every tick fires,
	// whatever the previous job does), OverlapCancel (every tick fires
	// and cancels the previous job if it has not finished),
	// OverlapTerminate (the same, killing it), OverlapBufferOne (a tick
	// while the previous job is unfinished waits for it to finish; one at
	// most, the others are skipped and counted) or OverlapBufferAll (every
	// such tick waits, up to MaxBuffered, and they run in order, one at a
	// time). Only skip and allow apply with FixedDelay.
	Overlap job.Overlap
	// CatchUp says what happens to ticks missed while no server fired
	// schedules: CatchUpOne (default: one run, for the earliest),
	// CatchUpNone, CatchUpLatest or CatchUpAll (each missed tick within
	// CatchUpWindow, default 24h and at most 7 days, and at most
	// CatchUpMax runs, default 100 and at most 10,000: the latest ones; a
	// warning names the ticks over the cap). Not with FixedDelay.
	CatchUp       job.CatchUp
	CatchUpWindow time.Duration
	CatchUpMax    int
	// Jitter delays the job of each tick by up to this much (at most
	// 24h), and never past the next tick: JitterRandom (default) draws a
	// new delay at each tick, JitterStable keeps one per schedule, from a
	// hash of its name. The tick itself (its FireTime) does not move.
	Jitter     time.Duration
	JitterMode job.JitterMode
	// Monitor, if set, is what the schedule's monitor watches: a start
	// grace, a maximum duration, K consecutive failures (and a pause after
	// them), and the channels its incidents notify (docs/monitoring.md).
	Monitor *Monitor
	// OutputRetention says how many of its runs' outputs are kept (the
	// newest Succeeded successful attempts', default 3, and Failed
	// others', default 10; negative: none) and for how long (MaxAge,
	// default no limit); see docs/logs.md.
	OutputRetention OutputRetention
	// Replace overwrites an existing schedule of the same name instead of
	// failing with ErrDuplicate.
	Replace bool

	// The job each tick enqueues: its kind and args (checked as Enqueue
	// checks them), and its options — Delay, RunAt and UniqueKey do not
	// apply; Meta and Tags go to every job it fires.
	Kind    string
	Args    any
	Options *EnqueueOptions
}

// AddSchedule adds a recurring schedule. Each tick enqueues an ordinary job
// (with retries and the dead-letter queue), keyed by (schedule, tick) so a
// tick is never enqueued twice, even by several processes sharing a store.
// A tick missed while no client was running fires once when one starts, not
// once per missed tick. Schedules live in the store: on a durable store they
// survive restarts. Invalid input is a *FieldError naming the field. The
// schedule returned is the one stored: its times as the store keeps them
// (PostgreSQL: microseconds), equal to GetSchedule's and to its jobs'
// FireTime.
func (c *Client) AddSchedule(ctx context.Context, name string, o ScheduleOptions) (*Schedule, error) {
	if c.closed() {
		return nil, ErrClientStopped
	}
	if err := job.CheckName("name", name); err != nil {
		return nil, err
	}
	var opts EnqueueOptions
	if o.Options != nil {
		opts = *o.Options
		if err := opts.validate("options.", false); err != nil {
			return nil, err
		}
	}
	if err := job.CheckName("kind", o.Kind); err != nil {
		return nil, err
	}
	args, err := encodeArgs(o.Args)
	if err != nil {
		return nil, err
	}
	if err := c.checkKind(o.Kind, c.cfg.Workers.lookup(o.Kind), args); err != nil {
		return nil, err
	}
	if o.Monitor != nil {
		if err := o.Monitor.Check("monitor"); err != nil {
			return nil, err
		}
	}
	t := c.now()
	sc := &job.Schedule{
		Name: name, TimeZone: o.TimeZone, FixedDelay: o.FixedDelay, Overlap: o.Overlap,
		CatchUp: o.CatchUp, CatchUpWindow: o.CatchUpWindow, CatchUpMax: o.CatchUpMax,
		Jitter: o.Jitter, JitterMode: o.JitterMode, Monitor: o.Monitor.Clone(), OutputRetention: o.OutputRetention,
		Kind: o.Kind, Args: args, CreatedAt: t,
		Options: job.Options{Queue: opts.Queue, Priority: opts.Priority, MaxAttempts: opts.MaxAttempts, Timeout: opts.Timeout, Retry: opts.Retry.Clone(),
			Meta: maps.Clone(opts.Meta), Tags: slices.Clone(opts.Tags)},
	}
	if err := o.OutputRetention.Check("output_retention"); err != nil {
		return nil, err
	}
	switch {
	case !o.Overlap.Valid():
		return nil, &FieldError{Field: "overlap", Reason: fmt.Sprintf("unknown policy %d: want OverlapSkip, OverlapAllow, OverlapCancel, OverlapBufferOne, OverlapBufferAll or OverlapTerminate", o.Overlap)}
	case o.Overlap != OverlapSkip && o.Overlap != OverlapAllow && o.FixedDelay:
		return nil, &FieldError{Field: "overlap", Reason: o.Overlap.String() + " does not apply to a fixed-delay schedule: its next run waits for its job to finish"}
	case !o.CatchUp.Valid():
		return nil, &FieldError{Field: "catch_up", Reason: fmt.Sprintf("unknown policy %d: want CatchUpOne, CatchUpNone, CatchUpLatest or CatchUpAll", o.CatchUp)}
	case o.CatchUp != CatchUpOne && o.FixedDelay:
		return nil, &FieldError{Field: "catch_up", Reason: "does not apply to a fixed-delay schedule: it has no ticks to miss"}
	case o.CatchUp != CatchUpAll && (o.CatchUpWindow != 0 || o.CatchUpMax != 0):
		field := "catch_up_window"
		if o.CatchUpWindow == 0 {
			field = "catch_up_max"
		}
		return nil, &FieldError{Field: field, Reason: "applies to catch_up all only"}
	case o.CatchUpWindow < 0 || o.CatchUpWindow > job.CatchUpWindowLimit:
		return nil, &FieldError{Field: "catch_up_window", Reason: fmt.Sprintf("must be between 0 (the default, %s) and %s, got %s", job.CatchUpWindowDefault, job.CatchUpWindowLimit, o.CatchUpWindow)}
	case o.Jitter < 0 || o.Jitter > job.MaxJitter:
		return nil, &FieldError{Field: "jitter", Reason: fmt.Sprintf("must be between 0 (none) and %s, got %s", job.MaxJitter, o.Jitter)}
	case !o.JitterMode.Valid():
		return nil, &FieldError{Field: "jitter_mode", Reason: fmt.Sprintf("unknown mode %d: want JitterRandom or JitterStable", o.JitterMode)}
	case o.JitterMode != JitterRandom && o.Jitter == 0:
		return nil, &FieldError{Field: "jitter_mode", Reason: "applies with a jitter only"}
	case o.CatchUpMax < 0 || o.CatchUpMax > job.CatchUpMaxLimit:
		return nil, &FieldError{Field: "catch_up_max", Reason: fmt.Sprintf("must be between 0 (the default, %d) and %d, got %d", job.CatchUpMaxDefault, job.CatchUpMaxLimit, o.CatchUpMax)}
	case o.Cron != "" && o.Every != 0:
		return nil, &FieldError{Field: "cron", Reason: "set cron or every, not both"}
	case o.Cron != "":
		if o.FixedDelay {
			return nil, &FieldError{Field: "fixed_delay", Reason: "applies to every, not to cron"}
		}
		if o.TimeZone == "Local" { // time.LoadLocation takes it: each host's own zone
			return nil, &FieldError{Field: "time_zone", Reason: `"Local" is each server's own zone, which servers sharing a database may not share; want an IANA name such as Europe/Berlin`}
		}
		rest := o.Cron
		if zone, r, ok := schedule.SpecZone(o.Cron); ok {
			// The expression's zone is the one it fires in: a time_zone
			// besides it would be shown but not used.
			if o.TimeZone != "" && o.TimeZone != zone {
				return nil, &FieldError{Field: "time_zone", Reason: fmt.Sprintf("differs from the zone the cron expression names, %s: give the zone once", zone)}
			}
			sc.TimeZone, rest = zone, r
		}
		if strings.HasPrefix(strings.TrimSpace(rest), "@every") && sc.TimeZone != "" {
			return nil, &FieldError{Field: "time_zone", Reason: "applies to cron, not to every (an @every interval keeps no zone)"}
		}
		sc.Spec = o.Cron
	case o.Every != 0:
		if err := schedule.CheckInterval(o.Every); err != nil {
			return nil, &FieldError{Field: "every", Reason: fmt.Sprintf("must be at least %s, got %s", schedule.MinInterval, o.Every), Err: err}
		}
		if o.TimeZone != "" {
			return nil, &FieldError{Field: "time_zone", Reason: "applies to cron, not to every"}
		}
		sc.Spec = "@every " + o.Every.String()
	default:
		return nil, &FieldError{Field: "cron", Reason: "set cron or every"}
	}
	next, err := sc.FirstRun(t)
	if err != nil {
		return nil, err
	}
	if err := job.CheckTime("next_run_at", next); err != nil {
		return nil, err
	}
	sc.NextRunAt = next.UTC() // as the stores return it, whatever the zone
	if err := c.store.AddSchedule(ctx, store.AddScheduleParams{Schedule: sc, Replace: o.Replace}); err != nil {
		return nil, err
	}
	c.maint.WakeScheduler()
	c.maint.WakeMonitor()
	return sc, nil
}

// scheduledJob is the maintenance services' MakeJob: the job sc's tick at
// fireTime enqueues at now, its options resolved as Enqueue resolves them,
// with the scheduled-job timeout when nothing sets one.
func (c *Client) scheduledJob(sc *job.Schedule, fireTime time.Time, period time.Duration, now time.Time) (*job.Job, error) {
	j := sc.NewJob(fireTime)
	if d := sc.JitterDelay(period, rand.Int64N); d > 0 {
		j.RunAt = fireTime.Add(d)
	}
	so := sc.Options
	o := c.options(sc.Kind, &EnqueueOptions{Queue: so.Queue, Priority: so.Priority, MaxAttempts: so.MaxAttempts, Timeout: so.Timeout, Retry: so.Retry})
	j.Queue, j.Priority, j.MaxAttempts = o.Queue, o.Priority, o.MaxAttempts
	if o.Timeout == 0 {
		j.Timeout = max(period, MinScheduledTimeout)
	}
	if err := j.Validate(now); err != nil {
		return nil, fmt.Errorf("schedule %q: %w", sc.Name, err)
	}
	return j, nil
}

// RunScheduleOptions are the options of RunSchedule.
type RunScheduleOptions struct {
	// Force runs the schedule's job even when its overlap policy would
	// refuse it (with OverlapSkip, while its previous job is available
	// or running).
	Force bool
}

// RunSchedule runs a schedule now, outside its ticks: it enqueues the job
// a tick would (its kind, args and every option, resolved as at a tick)
// as a manual run — Job.Manual, with the schedule's name and no FireTime —
// and returns it, visible at once to Get, the API and the dashboard. A
// paused schedule runs too; the schedule's next tick does not move, and its
// overlap policy sees the manual run as its previous job.
//
// With OverlapSkip (and unless o.Force), a schedule whose previous job is
// available or running is not run: the error is a *ScheduleBusyError
// (errors.Is ErrScheduleBusy) naming that job; a previous job waiting to
// retry is superseded (dead), as a tick supersedes it. With
// OverlapCancel, the previous job is cancelled if unfinished, as a tick
// cancels it. An unknown schedule is ErrNotFound.
func (c *Client) RunSchedule(ctx context.Context, name string, o RunScheduleOptions) (*Job, error) {
	if c.closed() {
		return nil, ErrClientStopped
	}
	if err := job.CheckName("name", name); err != nil {
		return nil, err
	}
	sc, err := c.store.GetSchedule(ctx, name)
	if err != nil {
		return nil, err
	}
	rule, delay, err := sc.Rule()
	if err != nil {
		return nil, err
	}
	now := c.now()
	period := delay
	if rule != nil {
		if t := rule.Next(now); !t.IsZero() {
			period = rule.Next(t).Sub(t)
		}
	}
	j, err := c.scheduledJob(sc, now, period, now)
	if err != nil {
		return nil, err
	}
	p := store.FireScheduleParams{
		Now: now, Name: name, Job: j, Manual: true,
		SkipIfBusy: sc.Overlap == job.OverlapSkip && !o.Force,
	}
	if !o.Force {
		p.Buffer = sc.Overlap.Buffer()
	}
	res, err := c.store.FireSchedule(ctx, p)
	if err != nil {
		return nil, err
	}
	if res.Skipped {
		return nil, &ScheduleBusyError{Schedule: name, Job: sc.LastJobID, State: res.Busy, Overlap: sc.Overlap}
	}
	if res.Buffered {
		c.cfg.Logger.LogAttrs(ctx, slog.LevelInfo, "schedule run now buffered: it runs when the previous job finishes",
			slog.String("schedule", name), slog.Int64("previous_job", int64(sc.LastJobID)))
		return nil, &ScheduleBusyError{Schedule: name, Job: sc.LastJobID, State: res.Busy, Overlap: sc.Overlap, Buffered: true}
	}
	if !res.Fired { // the unique key of its options is held by another job
		return nil, fmt.Errorf("schedule %q: its job's unique key %q is held by a waiting or running job: %w", name, j.UniqueKey, ErrDuplicate)
	}
	if res.Superseded != 0 {
		c.maint.Superseded(ctx, sc, res.Superseded, now)
	}
	if sc.Overlap.Cancels() {
		c.maint.CancelPrevious(ctx, sc, sc.LastJobID, res.ID)
	}
	c.cfg.Logger.LogAttrs(ctx, slog.LevelInfo, "schedule run now", slog.String("schedule", name),
		slog.Int64("job", int64(res.ID)), slog.Bool("force", o.Force))
	out, err := c.store.Get(ctx, res.ID)
	if err != nil {
		return nil, err
	}
	c.observe(job.Event{Type: job.EventEnqueued, Job: out, At: now})
	c.engine.Notify()
	return out, nil
}

// ScheduleBusyError is RunSchedule's answer when the schedule's overlap
// policy did not let the run start now: under OverlapSkip its previous job
// is available or running; under OverlapBufferOne or OverlapBufferAll its
// previous job is unfinished (or runs wait already), and the run was
// either kept waiting (Buffered: it runs when the runs before it have)
// or refused, the buffer being full. It matches ErrScheduleBusy with
// errors.Is.
type ScheduleBusyError struct {
	Schedule string
	Job      ID      // the previous job
	State    State   // its state (0 if it had finished and runs were waiting)
	Overlap  Overlap // the schedule's policy
	// Buffered: the run is kept waiting and will start after the
	// previous job (and the runs buffered before it) finished.
	Buffered bool
}

// Error implements error.
func (e *ScheduleBusyError) Error() string {
	if e.Buffered {
		return fmt.Sprintf("schedule %q: its previous job %d is %s and its overlap policy is %s: the run is buffered and starts when it finishes; force to run at once",
			e.Schedule, e.Job, e.State, e.Overlap)
	}
	return fmt.Sprintf("schedule %q: its previous job %d is %s and its overlap policy is %s; force to run anyway", e.Schedule, e.Job, e.State, e.Overlap)
}

// Is reports whether target is ErrScheduleBusy.
func (e *ScheduleBusyError) Is(target error) bool { return target == ErrScheduleBusy }

// NextRuns returns the next n fire times of the schedule name, in its zone
// (a cron schedule's TimeZone, else UTC), as Schedule.NextRuns computes
// them as of now: from its stored next tick, or for a paused schedule the
// ticks it would fire if resumed now; a fixed-delay schedule has at most
// one. n must be between 1 and MaxNextRuns (1,000): otherwise a
// *FieldError on "n". An unknown schedule is ErrNotFound.
func (c *Client) NextRuns(ctx context.Context, name string, n int) ([]time.Time, error) {
	if n < 1 || n > MaxNextRuns {
		return nil, &FieldError{Field: "n", Reason: fmt.Sprintf("must be between 1 and %d, got %d", MaxNextRuns, n)}
	}
	sc, err := c.store.GetSchedule(ctx, name)
	if err != nil {
		return nil, err
	}
	return sc.NextRuns(c.now(), n)
}

// MaxNextRuns bounds the n of NextRuns (and of the API's ?n=).
const MaxNextRuns = job.MaxNextRuns

// Schedules lists the recurring schedules by name.
func (c *Client) Schedules(ctx context.Context) ([]*Schedule, error) {
	return c.store.ListSchedules(ctx)
}

// GetSchedule returns a schedule by name.
func (c *Client) GetSchedule(ctx context.Context, name string) (*Schedule, error) {
	return c.store.GetSchedule(ctx, name)
}

// PauseSchedule stops a schedule from firing until ResumeSchedule.
func (c *Client) PauseSchedule(ctx context.Context, name string) error {
	paused := true
	_, err := c.store.UpdateSchedule(ctx, store.UpdateScheduleParams{Name: name, Paused: &paused})
	return err
}

// ResumeSchedule lets a paused schedule fire again. Ticks that passed while
// it was paused are not replayed: it continues from its next tick after now.
func (c *Client) ResumeSchedule(ctx context.Context, name string) error {
	sc, err := c.store.GetSchedule(ctx, name)
	if err != nil {
		return err
	}
	paused := false
	p := store.UpdateScheduleParams{Name: name, Paused: &paused}
	t := c.now()
	if !sc.NextRunAt.IsZero() && !sc.NextRunAt.After(t) {
		next, err := sc.FirstRun(t)
		if err != nil {
			return err
		}
		p.SetNext, p.IfNext, p.Next = true, sc.NextRunAt, next
	}
	if _, err := c.store.UpdateSchedule(ctx, p); err != nil {
		return err
	}
	c.maint.WakeScheduler()
	return nil
}

// RemoveSchedule deletes a schedule; jobs it already fired are kept.
func (c *Client) RemoveSchedule(ctx context.Context, name string) error {
	if c.closed() {
		return ErrClientStopped
	}
	return c.store.RemoveSchedule(ctx, name)
}

// FireSchedules fires every schedule due at now, once each, and returns the
// earliest upcoming tick (zero if none is known). The running client does
// this by itself; FireSchedules is for stepping through time in tests and
// simulations together with ProcessNext.
func (c *Client) FireSchedules(ctx context.Context, at time.Time) time.Time {
	return c.maint.FireDue(ctx, at)
}
