package maintenance

import (
	"context"
	"errors"
	"log/slog"
	"time"

	"github.com/hopperq/hopper/job"
	"github.com/hopperq/hopper/store"
)

// FireDue fires every schedule due at now, once each, and returns the
// earliest upcoming tick (zero if none is known). A schedule whose ticks
// were missed (no process fired them) follows its catch-up policy: with
// CatchUpOne (the default) it fires once, for the earliest missed tick,
// and continues from its first tick after now; the others are catchUp's.
func (s *Services) FireDue(ctx context.Context, now time.Time) time.Time {
	scheds, err := s.cfg.Store.ListSchedules(ctx)
	if err != nil {
		if ctx.Err() == nil {
			s.log.LogAttrs(ctx, slog.LevelError, "list schedules", slog.String("error", err.Error()))
		}
		return time.Time{}
	}
	var earliest time.Time
	for _, sc := range scheds {
		if sc.Paused {
			continue
		}
		if len(sc.Buffered) > 0 {
			if err := s.release(ctx, sc, now); err != nil && ctx.Err() == nil {
				s.log.LogAttrs(ctx, slog.LevelError, "fire a schedule's buffered run", slog.String("schedule", sc.Name),
					slog.String("spec", describe(sc)), slog.String("error", err.Error()))
			}
		}
		next, err := s.fire(ctx, sc, now)
		if err != nil && ctx.Err() == nil {
			s.log.LogAttrs(ctx, slog.LevelError, "fire schedule", slog.String("schedule", sc.Name),
				slog.String("spec", describe(sc)), slog.String("error", err.Error()))
			continue
		}
		if !next.IsZero() && (earliest.IsZero() || next.Before(earliest)) {
			earliest = next
		}
	}
	return earliest
}

// fire handles one schedule at now and returns its next tick.
func (s *Services) fire(ctx context.Context, sc *job.Schedule, now time.Time) (time.Time, error) {
	rule, delay, err := sc.Rule()
	if err != nil {
		return time.Time{}, err
	}
	if sc.FixedDelay && sc.NextRunAt.IsZero() {
		// Waiting for the previous run to finish; then count from there.
		last, err := s.cfg.Store.Get(ctx, sc.LastJobID)
		var from time.Time
		switch {
		case errors.Is(err, job.ErrNotFound):
			from = now // purged: it finished long ago
		case err != nil:
			return time.Time{}, err
		case !last.State.Finished():
			return time.Time{}, nil
		default:
			from = last.FinishedAt
		}
		sc, err = s.cfg.Store.UpdateSchedule(ctx, store.UpdateScheduleParams{
			Name: sc.Name, SetNext: true, IfNext: time.Time{}, Next: from.Add(delay),
		})
		if err != nil {
			return time.Time{}, ignoreConflict(err)
		}
	}
	if sc.NextRunAt.After(now) {
		return sc.NextRunAt, nil
	}
	if rule != nil && sc.CatchUp != job.CatchUpOne {
		if after := rule.Next(sc.NextRunAt); !after.IsZero() && !after.After(now) {
			return s.catchUp(ctx, sc, rule, now)
		}
		if sc.CatchUp == job.CatchUpAll && sc.Overlap != job.OverlapAllow {
			last, err := s.caughtUpLast(ctx, sc, rule)
			if err != nil {
				return time.Time{}, err
			}
			if last {
				return s.catchUp(ctx, sc, rule, now)
			}
		}
	}
	fireAt := sc.NextRunAt
	var next time.Time
	period := delay
	if rule != nil {
		next = rule.Next(now)
		period = rule.Next(fireAt).Sub(fireAt)
	}
	j, err := s.cfg.MakeJob(sc, fireAt, period, now)
	if err != nil {
		return time.Time{}, err
	}
	res, err := s.cfg.Store.FireSchedule(ctx, store.FireScheduleParams{
		Now: now, Name: sc.Name, FireTime: fireAt, Next: next, Job: j,
		SkipIfBusy: sc.Overlap == job.OverlapSkip && !sc.FixedDelay,
		Buffer:     sc.Overlap.Buffer(),
	})
	if err != nil {
		return time.Time{}, err
	}
	switch {
	case res.Buffered:
		s.log.LogAttrs(ctx, slog.LevelInfo, "schedule tick buffered: it runs when the previous job finishes",
			slog.String("schedule", sc.Name), slog.Time("tick", fireAt), slog.Int64("previous_job", int64(sc.LastJobID)),
			slog.String("previous_state", res.Busy.String()), slog.Int("buffered", len(sc.Buffered)+1))
	case res.Skipped:
		msg := "schedule tick skipped: the previous job has not finished" // a store that does not say
		switch {
		case sc.Overlap.Buffer() > 0:
			msg = "schedule tick skipped: its buffer of runs waiting for the previous job is full"
		case res.Busy == job.StateRunning:
			msg = "schedule tick skipped: the previous job is still running"
		case res.Busy == job.StateAvailable:
			msg = "schedule tick skipped: the previous job is still waiting for a worker"
		}
		s.log.LogAttrs(ctx, slog.LevelWarn, msg,
			slog.String("schedule", sc.Name), slog.Time("tick", fireAt), slog.Int64("previous_job", int64(sc.LastJobID)),
			slog.String("previous_state", res.Busy.String()), slog.Int("skipped_ticks", sc.SkippedTicks+1))
	}
	if res.Superseded != 0 {
		s.Superseded(ctx, sc, res.Superseded, now)
	}
	if res.Fired {
		s.log.LogAttrs(ctx, slog.LevelInfo, "schedule fired", slog.String("schedule", sc.Name),
			slog.Time("tick", fireAt), slog.Int64("job", int64(res.ID)), slog.Time("next", next))
		j.ID = res.ID
		if s.cfg.Observe != nil {
			s.cfg.Observe(job.Event{Type: job.EventEnqueued, Job: j, At: now})
		}
		if s.cfg.OnFire != nil {
			s.cfg.OnFire(sc, j)
		}
		if sc.Overlap.Cancels() && !sc.FixedDelay {
			s.CancelPrevious(ctx, sc, sc.LastJobID, res.ID)
		}
	}
	return next, nil
}

// release fires the first of sc's buffered runs (OverlapBufferOne,
// OverlapBufferAll) if sc's last job has finished: a tick's run as its
// tick's job, a run now's as a manual run. The store's compare-and-set on
// the first buffered run fires it once, whichever process tries.
func (s *Services) release(ctx context.Context, sc *job.Schedule, now time.Time) error {
	rule, delay, err := sc.Rule()
	if err != nil {
		return err
	}
	at := sc.Buffered[0]
	period, from := delay, at
	if at.IsZero() {
		from = now
	}
	if rule != nil {
		if t := rule.Next(from); !t.IsZero() {
			period = t.Sub(from)
			if at.IsZero() {
				period = rule.Next(t).Sub(t)
			}
		}
	}
	j, err := s.cfg.MakeJob(sc, from, period, now)
	if err != nil {
		return err
	}
	j.FireTime = at
	res, err := s.cfg.Store.FireSchedule(ctx, store.FireScheduleParams{Now: now, Name: sc.Name, FireTime: at, Job: j, Release: true})
	if err != nil || !res.Fired {
		return err
	}
	s.log.LogAttrs(ctx, slog.LevelInfo, "schedule fired a buffered run: the previous job finished", slog.String("schedule", sc.Name),
		slog.Time("tick", at), slog.Int64("job", int64(res.ID)), slog.Int64("previous_job", int64(sc.LastJobID)),
		slog.Int("still_buffered", len(sc.Buffered)-1))
	j.ID = res.ID
	if s.cfg.Observe != nil {
		s.cfg.Observe(job.Event{Type: job.EventEnqueued, Job: j, At: now})
	}
	if s.cfg.OnFire != nil {
		s.cfg.OnFire(sc, j)
	}
	return nil
}

// CancelPrevious applies OverlapCancel (or OverlapTerminate, which
// terminates) after sc fired job fired (a tick or
// a run now): it cancels prev, the schedule's job before it, unless that
// one finished (or is 0: none). Only the process whose firing won the
// tick's compare-and-set calls it, so a tick cancels once.
func (s *Services) CancelPrevious(ctx context.Context, sc *job.Schedule, prev, fired job.ID) {
	cancel, verb := s.cfg.CancelJob, "cancelled"
	if sc.Overlap == job.OverlapTerminate {
		cancel, verb = s.cfg.TerminateJob, "terminated"
	}
	if prev == 0 || cancel == nil {
		return
	}
	ok, err := cancel(ctx, prev)
	switch {
	case err != nil:
		if ctx.Err() == nil {
			s.log.LogAttrs(ctx, slog.LevelError, "cancel a schedule's previous job", slog.String("schedule", sc.Name),
				slog.Int64("previous_job", int64(prev)), slog.String("error", err.Error()))
		}
	case ok:
		s.log.LogAttrs(ctx, slog.LevelInfo, "schedule "+verb+" its previous job (overlap "+sc.Overlap.String()+")", slog.String("schedule", sc.Name),
			slog.Int64("previous_job", int64(prev)), slog.Int64("job", int64(fired)))
	}
}

// Superseded reports the retrying job a tick (or a run now) of sc sent to
// the dead-letter queue: an error line and an EventDead.
func (s *Services) Superseded(ctx context.Context, sc *job.Schedule, id job.ID, now time.Time) {
	j, err := s.cfg.Store.Get(ctx, id)
	if err != nil {
		return // purged meanwhile
	}
	s.log.LogAttrs(ctx, slog.LevelError, "job dead: superseded by its schedule's next tick",
		slog.Int64("job", int64(id)), slog.String("schedule", sc.Name), slog.String("kind", j.Kind),
		slog.Int("attempt", j.Attempt), slog.String("error", j.LastError))
	if s.cfg.Observe != nil {
		s.cfg.Observe(job.Event{Type: job.EventDead, Job: j, At: now})
	}
}

func ignoreConflict(err error) error {
	if errors.Is(err, job.ErrConflict) {
		return nil // another process moved it first
	}
	return err
}
