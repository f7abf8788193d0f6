package hopper

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"github.com/hopperq/hopper/job"
	"github.com/hopperq/hopper/store"
)

// MaxBackfillTicks bounds how many ticks BackfillSchedule walks in its
// range: more is a *FieldError on "to" (narrow the range).
const MaxBackfillTicks = 1_000_000

// BackfillResult is what BackfillSchedule did with the ticks of its range.
type BackfillResult struct {
	// Ticks counts the schedule's ticks in the range.
	Ticks int `json:"ticks"`
	// Fired are the jobs enqueued, one per tick, oldest tick first.
	Fired []ID `json:"fired"`
	// Existed counts the ticks whose job existed already (fired by the
	// scheduler, or by an earlier backfill): nothing was enqueued for them.
	Existed int `json:"existed"`
	// Skipped counts the ticks the overlap policy skipped (skip: the
	// previous job was available or running; buffer-one: a run was
	// already waiting), Buffered those it kept waiting for the previous
	// job (buffer-one, buffer-all).
	Skipped  int `json:"skipped"`
	Buffered int `json:"buffered"`
	// OverCap counts the oldest ticks not run because the range held more
	// than the schedule's catch-up cap (CatchUpMax, default 100).
	OverCap int `json:"over_cap"`
}

// BackfillSchedule enqueues the jobs of the schedule name's ticks from
// from to to (both included; to at or before now): each tick's job, keyed
// by (schedule, tick) as the scheduler's, so a tick whose job exists —
// fired at its time, or by an earlier backfill — is not enqueued again, and
// repeating a backfill creates nothing twice. A paused schedule is
// backfilled too; its next tick does not move.
//
// The ticks go through the schedule's overlap policy in order, as if they
// came one after the other: with OverlapAllow each fires; with
// OverlapSkip one fires and the others are skipped while it waits;
// OverlapBufferAll fires the first and keeps the rest waiting, run one at a
// time in order (OverlapBufferOne keeps one); OverlapCancel and
// OverlapTerminate leave the last (each cancels the one before). The
// catch-up cap applies: at most CatchUpMax ticks (default
// CatchUpMaxDefault, 100), the latest ones; the older are counted in
// OverCap and a warning names them.
//
// A fixed-delay schedule has no ticks: a *FieldError on "name". from after
// to, or to after now, is a *FieldError on "from" or "to"; so is a range
// of more than MaxBackfillTicks ticks. An unknown schedule is ErrNotFound.
func (c *Client) BackfillSchedule(ctx context.Context, name string, from, to time.Time) (BackfillResult, error) {
	out := BackfillResult{Fired: []ID{}}
	if c.closed() {
		return out, ErrClientStopped
	}
	if err := job.CheckName("name", name); err != nil {
		return out, err
	}
	now := c.now()
	switch {
	case from.IsZero():
		return out, &FieldError{Field: "from", Reason: "missing: the first tick time to backfill"}
	case to.IsZero():
		return out, &FieldError{Field: "to", Reason: "missing: the last tick time to backfill"}
	case from.After(to):
		return out, &FieldError{Field: "from", Reason: fmt.Sprintf("%s is after to, %s", from.UTC().Format(time.RFC3339), to.UTC().Format(time.RFC3339))}
	case to.After(now):
		return out, &FieldError{Field: "to", Reason: fmt.Sprintf("%s is in the future: the scheduler fires the ticks to come", to.UTC().Format(time.RFC3339))}
	}
	if err := job.CheckTime("from", from); err != nil {
		return out, err
	}
	sc, err := c.store.GetSchedule(ctx, name)
	if err != nil {
		return out, err
	}
	rule, _, err := sc.Rule()
	if err != nil {
		return out, err
	}
	if rule == nil {
		return out, &FieldError{Field: "name", Reason: fmt.Sprintf("schedule %q has a fixed delay: it has no ticks to backfill", name)}
	}
	var ticks []time.Time
	for t := rule.Next(from.Add(-time.Nanosecond)); !t.IsZero() && !t.After(to); t = rule.Next(t) {
		if len(ticks) == MaxBackfillTicks {
			return out, &FieldError{Field: "to", Reason: fmt.Sprintf("the range holds more than %d ticks: narrow it", MaxBackfillTicks)}
		}
		ticks = append(ticks, t)
	}
	out.Ticks = len(ticks)
	limit := sc.CatchUpMax
	if limit <= 0 {
		limit = job.CatchUpMaxDefault
	}
	if len(ticks) > limit {
		out.OverCap = len(ticks) - limit
		c.cfg.Logger.LogAttrs(ctx, slog.LevelWarn, "schedule backfill over its cap: the oldest ticks are not run",
			slog.String("schedule", name), slog.Int("ticks", len(ticks)), slog.Int("not_run", out.OverCap),
			slog.Int("catch_up_max", limit), slog.Time("first_not_run", ticks[0]), slog.Time("last_not_run", ticks[out.OverCap-1]))
		ticks = ticks[out.OverCap:]
	}
	prev := sc.LastJobID
	for _, tick := range ticks {
		j, err := c.scheduledJob(sc, tick, rule.Next(tick).Sub(tick), now)
		if err != nil {
			return out, err
		}
		res, err := c.store.FireSchedule(ctx, store.FireScheduleParams{
			Now: now, Name: name, FireTime: tick, Job: j, Backfill: true,
			SkipIfBusy: sc.Overlap == job.OverlapSkip, Buffer: sc.Overlap.Buffer(),
		})
		if err != nil {
			return out, err
		}
		switch {
		case res.Existed:
			out.Existed++
		case res.Skipped:
			out.Skipped++
		case res.Buffered:
			out.Buffered++
		case res.Fired:
			out.Fired = append(out.Fired, res.ID)
			if res.Superseded != 0 {
				c.maint.Superseded(ctx, sc, res.Superseded, now)
			}
			if sc.Overlap.Cancels() {
				c.maint.CancelPrevious(ctx, sc, prev, res.ID)
			}
			prev = res.ID
			j.ID = res.ID
			c.observe(job.Event{Type: job.EventEnqueued, Job: j, At: now})
		}
	}
	c.cfg.Logger.LogAttrs(ctx, slog.LevelInfo, "schedule backfilled", slog.String("schedule", name),
		slog.Time("from", from), slog.Time("to", to), slog.Int("ticks", out.Ticks), slog.Int("fired", len(out.Fired)),
		slog.Int("existed", out.Existed), slog.Int("skipped", out.Skipped), slog.Int("buffered", out.Buffered))
	if len(out.Fired) > 0 {
		c.engine.Notify()
	}
	if out.Buffered > 0 {
		c.maint.WakeScheduler()
	}
	return out, nil
}
