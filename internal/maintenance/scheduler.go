package maintenance

import (
	"context"
	"errors"
	"log/slog"
	"time"

	"github.com/hopperq/hopper/job"
	"github.com/hopperq/hopper/store"
)

// scheduler fires due schedules, then sleeps until the next tick, a wake-up
// or SchedulePoll, whichever comes first.
func (s *Services) scheduler() {
	defer s.wg.Done()
	ctx := context.Background()
	timer := time.NewTimer(0)
	defer timer.Stop()
	for {
		select {
		case <-s.stop:
			return
		case <-s.wake:
		case <-timer.C:
		}
		now := time.Now()
		next := s.FireDue(ctx, now)
		wait := s.cfg.SchedulePoll
		if !next.IsZero() {
			wait = min(wait, max(next.Sub(now), 0))
		}
		timer.Stop()
		timer.Reset(wait)
	}
}

// FireDue fires every schedule due at now, once each, and returns the
// earliest upcoming tick (zero if none is known). Catch-up policy: a
// schedule whose ticks were missed (the process was down) fires once, for
// the earliest missed tick, and then continues from its first tick after
// now; missed ticks are never replayed in a burst.
func (s *Services) FireDue(ctx context.Context, now time.Time) time.Time {
	scheds, err := s.cfg.Store.ListSchedules(ctx)
	if err != nil {
		s.log.LogAttrs(ctx, slog.LevelError, "list schedules", slog.String("error", err.Error()))
		return time.Time{}
	}
	var earliest time.Time
	for _, sc := range scheds {
		if sc.Paused {
			continue
		}
		next, err := s.fire(ctx, sc, now)
		if err != nil {
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
	rule, delay, err := Rule(sc)
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
	fireAt := sc.NextRunAt
	var next time.Time
	if rule != nil {
		next = rule.Next(now)
	}
	if sc.Overlap == job.OverlapSkip && !sc.FixedDelay && sc.LastJobID != 0 {
		last, err := s.cfg.Store.Get(ctx, sc.LastJobID)
		if err == nil && !last.State.Finished() {
			s.log.LogAttrs(ctx, slog.LevelInfo, "schedule tick skipped: previous run not finished",
				slog.String("schedule", sc.Name), slog.Time("tick", fireAt), slog.Int64("running_job", int64(last.ID)))
			_, err := s.cfg.Store.UpdateSchedule(ctx, store.UpdateScheduleParams{Name: sc.Name, SetNext: true, IfNext: fireAt, Next: next})
			return next, ignoreConflict(err)
		}
	}
	j := sc.NewJob(fireAt)
	if err := j.Validate(now, s.cfg.DefaultMaxAttempts); err != nil {
		return time.Time{}, err
	}
	res, err := s.cfg.Store.FireSchedule(ctx, store.FireScheduleParams{Now: now, Name: sc.Name, FireTime: fireAt, Next: next, Job: j})
	if err != nil {
		return time.Time{}, err
	}
	if res.Fired {
		s.log.LogAttrs(ctx, slog.LevelInfo, "schedule fired", slog.String("schedule", sc.Name),
			slog.Time("tick", fireAt), slog.Int64("job", int64(res.ID)), slog.Time("next", next))
		if s.cfg.Observe != nil {
			j.ID = res.ID
			s.cfg.Observe(job.Event{Type: job.EventEnqueued, Job: j, At: now})
		}
		if s.cfg.OnFire != nil {
			s.cfg.OnFire(res.ID)
		}
	}
	return next, nil
}

func ignoreConflict(err error) error {
	if errors.Is(err, job.ErrConflict) {
		return nil // another process moved it first
	}
	return err
}
