package maintenance

import (
	"context"
	"errors"
	"log/slog"
	"time"

	"github.com/hopperq/hopper/job"
	"github.com/hopperq/hopper/schedule"
	"github.com/hopperq/hopper/store"
)

// catchUp handles the ticks sc missed (its NextRunAt and at least one tick
// after it are at or before now) by its CatchUp policy, other than
// CatchUpOne, and returns its next tick. Every step is a compare-and-set
// on NextRunAt: firing each tick to run with the next one as Next
// (FireSchedule; the first from sc.NextRunAt, passing over the ticks not
// run in the same step), or, with none to run, moving NextRunAt past now
// (UpdateSchedule). A process that dies between two steps leaves
// NextRunAt at the next tick to run, which the next leader fires: each
// tick runs at most once, and a step another process made first ends the
// pass. A pass over its cap stores its notification (catch_up_over_cap)
// in the first step's transaction (FireScheduleParams.With): it exists
// exactly when that step won.
func (s *Services) catchUp(ctx context.Context, sc *job.Schedule, rule schedule.Rule, now time.Time) (time.Time, error) {
	after := rule.Next(now)
	var ticks []time.Time
	dropped, window := 0, time.Duration(0)
	switch sc.CatchUp {
	case job.CatchUpLatest:
		ticks = []time.Time{latestTick(rule, sc.NextRunAt, now)}
	case job.CatchUpAll:
		limit := sc.CatchUpMax
		window = sc.CatchUpWindow
		if window <= 0 {
			window = job.CatchUpWindowDefault
		}
		if limit <= 0 {
			limit = job.CatchUpMaxDefault
		}
		ticks, dropped = missedTicks(rule, sc.NextRunAt, now.Add(-window), now, limit)
	}
	attrs := []slog.Attr{slog.String("schedule", sc.Name), slog.String("catch_up", sc.CatchUp.String()),
		slog.Time("first_missed", sc.NextRunAt), slog.Int("runs", len(ticks)), slog.Time("next", after)}
	if window > 0 && sc.NextRunAt.Before(now.Add(-window)) {
		attrs = append(attrs, slog.Duration("window", window), slog.Bool("ticks_before_window_not_run", true))
	}
	if dropped > 0 {
		s.log.LogAttrs(ctx, slog.LevelWarn, "schedule catch-up over its cap: the oldest missed ticks are not run",
			append(attrs, slog.Int("not_run", dropped), slog.Int("catch_up_max", len(ticks)))...)
	} else {
		s.log.LogAttrs(ctx, slog.LevelInfo, "schedule catching up missed ticks", attrs...)
	}
	if len(ticks) == 0 {
		if _, err := s.cfg.Store.UpdateSchedule(ctx, store.UpdateScheduleParams{
			Name: sc.Name, SetNext: true, IfNext: sc.NextRunAt, Next: after,
		}); err != nil {
			return time.Time{}, ignoreConflict(err)
		}
		return after, nil
	}
	var capJobs []*job.Job // the over-cap notification, with the first firing
	if dropped > 0 {
		capJobs = s.catchUpCapJobs(ctx, sc, dropped, len(ticks), now)
	}
	for i, tick := range ticks {
		next := after
		if i+1 < len(ticks) {
			next = ticks[i+1]
		}
		j, err := s.cfg.MakeJob(sc, tick, rule.Next(tick).Sub(tick), now)
		if err != nil {
			return time.Time{}, err
		}
		p := store.FireScheduleParams{Now: now, Name: sc.Name, FireTime: tick, Next: next, Job: j}
		if i == 0 {
			if !tick.Equal(sc.NextRunAt) {
				p.IfNext = sc.NextRunAt // over the ticks not run, in the same compare-and-set
			}
			p.With = capJobs // stored only if this compare-and-set wins
		}
		res, err := s.cfg.Store.FireSchedule(ctx, p)
		if err != nil {
			return time.Time{}, err
		}
		if res == (store.FireResult{}) {
			return time.Time{}, nil // another process moved the schedule: it goes on
		}
		if i == 0 && len(capJobs) > 0 && s.cfg.OnNotified != nil {
			s.cfg.OnNotified()
		}
		if !res.Fired {
			continue
		}
		s.log.LogAttrs(ctx, slog.LevelInfo, "schedule fired", slog.String("schedule", sc.Name),
			slog.Time("tick", tick), slog.Int64("job", int64(res.ID)), slog.Time("next", next), slog.Bool("catch_up", true))
		j.ID = res.ID
		if s.cfg.Observe != nil {
			s.cfg.Observe(job.Event{Type: job.EventEnqueued, Job: j, At: now})
		}
		if s.cfg.OnFire != nil {
			s.cfg.OnFire(sc, j)
		}
	}
	return after, nil
}

// caughtUpLast reports whether sc's due tick (its NextRunAt, the only one
// at or before now) is the last tick of an all catch-up another pass is
// making, or made until it died: the schedule's last job is the previous
// tick's (LastFireAt, the tick just before NextRunAt) and was enqueued at
// or after NextRunAt, so that tick was fired late, by a catch-up, after
// this one was due. Such a tick fires as the catch-up fires it, whatever
// the overlap policy: through the normal path, the caught-up jobs still
// waiting would make the skip policy drop it (a tick lost), the cancel
// policies cancel the previous one, the buffer policies hold it back.
// Both times come from the catch-up's clock, so another process's clock
// does not enter. A tick fired on time is enqueued before the next one
// is due, and a run now or a backfill is not the previous tick's job.
func (s *Services) caughtUpLast(ctx context.Context, sc *job.Schedule, rule schedule.Rule) (bool, error) {
	if sc.LastJobID == 0 || sc.LastFireAt.IsZero() || !rule.Next(sc.LastFireAt).Equal(sc.NextRunAt) {
		return false, nil
	}
	last, err := s.cfg.Store.Get(ctx, sc.LastJobID)
	switch {
	case errors.Is(err, job.ErrNotFound):
		return false, nil // purged: it finished long ago
	case err != nil:
		return false, err
	}
	return last.FireTime.Equal(sc.LastFireAt) && !last.CreatedAt.Before(sc.NextRunAt), nil
}

// latestTick returns the latest tick of r at or before now, first being
// one: it looks back from now over spans that double until one holds a
// tick, so a long downtime costs a few spans, not one step per tick.
func latestTick(r schedule.Rule, first, now time.Time) time.Time {
	for span := time.Minute; ; span *= 2 {
		from := now.Add(-span)
		if !from.After(first) {
			from = first.Add(-time.Nanosecond)
		}
		last := time.Time{}
		for t := r.Next(from); !t.IsZero() && !t.After(now); t = r.Next(t) {
			last = t
		}
		if !last.IsZero() {
			return last
		}
		if !from.After(first) {
			return first
		}
	}
}

// missedTicks returns the ticks of r from first (a tick) to now that are
// after since, oldest first, at most limit of them (the latest), and how
// many more there were.
func missedTicks(r schedule.Rule, first, since, now time.Time, limit int) ([]time.Time, int) {
	t := first
	if t.Before(since) {
		t = r.Next(since.Add(-time.Nanosecond))
	}
	var ring []time.Time
	n := 0
	for ; !t.IsZero() && !t.After(now); t = r.Next(t) {
		if len(ring) < limit {
			ring = append(ring, t)
		} else {
			ring[n%limit] = t
		}
		n++
	}
	if n <= limit {
		return ring, 0
	}
	out := make([]time.Time, 0, limit)
	for i := range limit {
		out = append(out, ring[(n+i)%limit])
	}
	return out, n - limit
}
