package hopper

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/hopperq/hopper/backoff"
	"github.com/hopperq/hopper/internal/maintenance"
	"github.com/hopperq/hopper/job"
	"github.com/hopperq/hopper/store"
)

// Overlap policies of recurring schedules.
const (
	OverlapSkip  = job.OverlapSkip  // skip a tick while the previous run is unfinished (default)
	OverlapAllow = job.OverlapAllow // fire anyway
)

// ScheduleOptions describe a recurring schedule for AddSchedule.
type ScheduleOptions struct {
	// Cron is a cron expression (5 fields, or 6 with seconds first) or a
	// macro (@hourly, @daily, @weekly, @monthly, @yearly). Set Cron or
	// Every.
	Cron string
	// TimeZone is the IANA zone Cron is read in (default UTC). Across DST,
	// a time in the spring-forward gap fires once at the end of the gap and
	// a repeated fall-back hour fires once.
	TimeZone string
	// Every fires at a fixed rate from the schedule's creation (cadence
	// kept; missed ticks are not replayed), or with FixedDelay, Every after
	// the previous run finished.
	Every      time.Duration
	FixedDelay bool
	// Overlap: OverlapSkip (default) or OverlapAllow.
	Overlap job.Overlap
	// Replace overwrites an existing schedule of the same name instead of
	// failing with ErrDuplicate.
	Replace bool

	// The job each tick enqueues.
	Kind        string
	Args        any
	Queue       string
	Priority    int
	MaxAttempts int
	Timeout     time.Duration
	Retry       *backoff.Policy
}

// AddSchedule adds a recurring schedule. Each tick enqueues an ordinary job
// (with retries and the dead-letter queue), keyed by (schedule, tick) so a
// tick is never enqueued twice, even by several processes sharing a store.
// A tick missed while no client was running fires once when one starts, not
// once per missed tick. Schedules live in the store: on a durable store they
// survive restarts.
func (c *Client) AddSchedule(ctx context.Context, name string, o ScheduleOptions) (*Schedule, error) {
	if strings.TrimSpace(name) == "" {
		return nil, &FieldError{Field: "name", Reason: "must not be empty"}
	}
	args, err := encodeArgs(o.Args)
	if err != nil {
		return nil, err
	}
	if o.Kind == "" {
		return nil, &FieldError{Field: "kind", Reason: "must not be empty"}
	}
	t := now()
	sc := &job.Schedule{
		Name: name, TimeZone: o.TimeZone, FixedDelay: o.FixedDelay, Overlap: o.Overlap,
		Kind: o.Kind, Args: args, Queue: o.Queue, Priority: o.Priority, MaxAttempts: o.MaxAttempts,
		Timeout: o.Timeout, Retry: o.Retry, CreatedAt: t,
	}
	switch {
	case o.Cron != "" && o.Every != 0:
		return nil, &FieldError{Field: "cron", Reason: "set cron or every, not both"}
	case o.Cron != "":
		if o.FixedDelay {
			return nil, &FieldError{Field: "fixed_delay", Reason: "applies to every, not to cron"}
		}
		sc.Spec = o.Cron
	case o.Every != 0:
		if o.Every < time.Second {
			return nil, &FieldError{Field: "every", Reason: fmt.Sprintf("must be at least 1s, got %s", o.Every)}
		}
		sc.Spec = "@every " + o.Every.String()
	default:
		return nil, &FieldError{Field: "cron", Reason: "set cron or every"}
	}
	probe := sc.NewJob(t)
	if err := probe.Validate(t, c.cfg.MaxAttempts); err != nil {
		return nil, err
	}
	sc.Queue, sc.MaxAttempts = probe.Queue, probe.MaxAttempts
	next, err := maintenance.FirstRun(sc, t)
	if err != nil {
		return nil, err
	}
	sc.NextRunAt = next
	if err := c.store.AddSchedule(ctx, store.AddScheduleParams{Schedule: sc, Replace: o.Replace}); err != nil {
		return nil, fmt.Errorf("add schedule %q: %w", name, err)
	}
	c.maint.WakeScheduler()
	return sc, nil
}

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
	t := now()
	if !sc.NextRunAt.IsZero() && !sc.NextRunAt.After(t) {
		next, err := maintenance.FirstRun(sc, t)
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
	return c.store.RemoveSchedule(ctx, name)
}

// FireSchedules fires every schedule due at now, once each, and returns the
// earliest upcoming tick (zero if none is known). The running client does
// this by itself; FireSchedules is for stepping through time in tests and
// simulations together with ProcessNext.
func (c *Client) FireSchedules(ctx context.Context, at time.Time) time.Time {
	return c.maint.FireDue(ctx, at)
}
