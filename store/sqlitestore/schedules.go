package sqlitestore

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/hopperq/hopper/job"
	"github.com/hopperq/hopper/store"
)

const scheduleCols = `name, spec, time_zone, fixed_delay, overlap, paused, kind, args, queue,
	priority, max_attempts, timeout, retry, next_run_at, last_fire_at, last_job_id,
	skipped_ticks, last_skip_at, created_at, labels, catch_up, catch_up_window, catch_up_max,
	jitter, jitter_mode, buffered, monitor, output_retention`

// scheduleArgs are the values of scheduleCols for sc.
func scheduleArgs(sc *job.Schedule) ([]any, error) {
	retry, err := policyText(sc.Retry)
	if err != nil {
		return nil, err
	}
	labels, err := store.EncodeLabels(sc.Meta, sc.Tags)
	if err != nil {
		return nil, err
	}
	return []any{sc.Name, sc.Spec, sc.TimeZone, sc.FixedDelay, sc.Overlap.String(), sc.Paused,
		sc.Kind, jsonText(sc.Args), sc.Queue, sc.Priority, sc.MaxAttempts, int64(sc.Timeout),
		retry, store.UnixNanos(sc.NextRunAt), store.UnixNanos(sc.LastFireAt), int64(sc.LastJobID),
		sc.SkippedTicks, store.UnixNanos(sc.LastSkipAt), store.UnixNanos(sc.CreatedAt), nullStr(labels),
		sc.CatchUp.String(), int64(sc.CatchUpWindow), sc.CatchUpMax, int64(sc.Jitter), sc.JitterMode.String(), store.EncodeTimes(sc.Buffered),
		monitorText(sc.Monitor), nullStr(store.EncodeRetention(sc.OutputRetention))}, nil
}

func scanSchedule(r scanner) (*job.Schedule, error) {
	var (
		sc                                              job.Schedule
		overlap, catchUp, jitterMode, buffered, monitor string
		args, retry, labels, retention                  []byte
		timeout, window, jitter                         int64
		next, lastFire, lastJob, lastSkip, ca           int64
	)
	err := r.Scan(&sc.Name, &sc.Spec, &sc.TimeZone, &sc.FixedDelay, &overlap, &sc.Paused,
		&sc.Kind, &args, &sc.Queue, &sc.Priority, &sc.MaxAttempts, &timeout, &retry,
		&next, &lastFire, &lastJob, &sc.SkippedTicks, &lastSkip, &ca, &labels,
		&catchUp, &window, &sc.CatchUpMax, &jitter, &jitterMode, &buffered, &monitor, &retention)
	if err != nil {
		return nil, err
	}
	if sc.OutputRetention, err = store.DecodeRetention(retention); err != nil {
		return nil, fmt.Errorf("schedule %q: stored %w", sc.Name, err)
	}
	if err := sc.CatchUp.UnmarshalText([]byte(catchUp)); err != nil {
		return nil, fmt.Errorf("schedule %q: stored %w", sc.Name, err)
	}
	if err := sc.JitterMode.UnmarshalText([]byte(jitterMode)); err != nil {
		return nil, fmt.Errorf("schedule %q: stored %w", sc.Name, err)
	}
	if sc.Buffered, err = store.DecodeTimes(buffered); err != nil {
		return nil, fmt.Errorf("schedule %q: stored %w", sc.Name, err)
	}
	sc.CatchUpWindow, sc.Jitter = time.Duration(window), time.Duration(jitter)
	if sc.Monitor, err = store.DecodeMonitor([]byte(monitor)); err != nil {
		return nil, fmt.Errorf("schedule %q: %w", sc.Name, err)
	}
	if err := sc.Overlap.UnmarshalText([]byte(overlap)); err != nil {
		return nil, fmt.Errorf("schedule %q: stored %w", sc.Name, err)
	}
	if len(args) > 0 {
		sc.Args = json.RawMessage(args)
	}
	sc.Timeout = time.Duration(timeout)
	if sc.Retry, err = store.DecodePolicy(retry); err != nil {
		return nil, fmt.Errorf("schedule %q: %w", sc.Name, err)
	}
	sc.NextRunAt, sc.LastFireAt = store.FromUnixNanos(next), store.FromUnixNanos(lastFire)
	sc.LastJobID, sc.LastSkipAt = job.ID(lastJob), store.FromUnixNanos(lastSkip)
	sc.CreatedAt = store.FromUnixNanos(ca)
	if sc.Meta, sc.Tags, err = store.DecodeLabels(labels); err != nil {
		return nil, fmt.Errorf("schedule %q: %w", sc.Name, err)
	}
	return &sc, nil
}

func notFoundSchedule(name string) error {
	return fmt.Errorf("schedule %q: %w", name, job.ErrNotFound)
}

// loadSchedule reads a schedule in the write transaction.
func (w *writer) loadSchedule(name string) (*job.Schedule, error) {
	st, err := w.stmt(`SELECT ` + scheduleCols + ` FROM schedules WHERE name = ?`)
	if err != nil {
		return nil, err
	}
	sc, err := scanSchedule(st.QueryRowContext(bg, name))
	if errors.Is(err, sql.ErrNoRows) {
		return nil, notFoundSchedule(name)
	}
	return sc, err
}

// AddSchedule implements store.Store.
func (s *Store) AddSchedule(ctx context.Context, p store.AddScheduleParams) error {
	if err := p.Validate(); err != nil {
		return err
	}
	args, err := scheduleArgs(p.Schedule)
	if err != nil {
		return err
	}
	verb := `INSERT`
	if p.Replace {
		verb = `INSERT OR REPLACE`
	}
	q := verb + ` INTO schedules (` + scheduleCols + `) VALUES (` + strings.Repeat("?, ", strings.Count(scheduleCols, ",")) + `?)`
	return s.write(ctx, func(w *writer) error {
		if !p.Replace {
			if _, err := w.loadSchedule(p.Schedule.Name); err == nil {
				return fmt.Errorf("schedule %q: %w", p.Schedule.Name, job.ErrDuplicate)
			} else if !errors.Is(err, job.ErrNotFound) {
				return err
			}
		}
		_, err := w.exec(q, args...)
		return err
	})
}

// UpdateSchedule implements store.Store.
func (s *Store) UpdateSchedule(ctx context.Context, p store.UpdateScheduleParams) (*job.Schedule, error) {
	var out *job.Schedule
	err := s.write(ctx, func(w *writer) error {
		sc, err := w.loadSchedule(p.Name)
		if err != nil {
			return err
		}
		if p.SetNext && store.UnixNanos(sc.NextRunAt) != store.UnixNanos(p.IfNext) {
			return fmt.Errorf("schedule %q: next run is %s, not %s: %w", p.Name,
				sc.NextRunAt.Format(time.RFC3339Nano), p.IfNext.UTC().Format(time.RFC3339Nano), job.ErrConflict)
		}
		if p.Paused != nil {
			sc.Paused = *p.Paused
		}
		if p.SetNext {
			sc.NextRunAt = store.FromUnixNanos(store.UnixNanos(p.Next))
		}
		_, err = w.exec(`UPDATE schedules SET paused = ?, next_run_at = ? WHERE name = ?`,
			sc.Paused, store.UnixNanos(sc.NextRunAt), sc.Name)
		out = sc
		return err
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// RemoveSchedule implements store.Store.
func (s *Store) RemoveSchedule(ctx context.Context, name string) error {
	return s.write(ctx, func(w *writer) error {
		n, err := w.execN(`DELETE FROM schedules WHERE name = ?`, name)
		if err == nil && n == 0 {
			err = notFoundSchedule(name)
		}
		return err
	})
}

// FireSchedule implements store.Store. A job whose unique key is held by
// another waiting or running job is not inserted: the tick then only
// advances the schedule (Fired false), as when the tick's job exists.
func (s *Store) FireSchedule(ctx context.Context, p store.FireScheduleParams) (store.FireResult, error) {
	if p.Job == nil {
		return store.FireResult{}, job.Invalid("job", "must not be nil")
	}
	j := *p.Job
	j.Schedule, j.FireTime = p.Name, p.FireTime
	if p.Manual {
		j.FireTime = time.Time{}
	}
	rows, err := makeRows([]*job.Job{&j})
	if err != nil {
		return store.FireResult{}, err
	}
	if err := p.CheckWith(); err != nil {
		return store.FireResult{}, err
	}
	now, fire, next := p.Now.UTC(), store.UnixNanos(p.FireTime), store.UnixNanos(p.Next)
	outside := p.Manual || p.Backfill // a run outside the chain of ticks
	var res store.FireResult
	step := func(w *writer) error {
		res = store.FireResult{}
		sc, err := w.loadSchedule(p.Name)
		if err != nil {
			return err
		}
		if p.Release {
			res, err = w.release(sc, p, rows)
			return err
		}
		if p.Backfill {
			exists, err := fired(w, p.Name, fire)
			if err != nil || exists {
				res.Existed = exists
				return err
			}
		}
		if !outside {
			if sc.Paused || store.UnixNanos(sc.NextRunAt) != store.UnixNanos(p.From()) {
				return nil // paused meanwhile, or another firing won
			}
			exists, err := fired(w, p.Name, fire)
			if err != nil {
				return err
			}
			if exists {
				_, err := w.exec(`UPDATE schedules SET next_run_at = ? WHERE name = ?`, next, p.Name)
				return err
			}
		}
		if p.SkipIfBusy && sc.LastJobID != 0 {
			busy, superseded, err := w.skipIfBusy(sc, now, p.FireTime)
			if err != nil {
				return err
			}
			if busy != 0 {
				res.Skipped, res.Busy = true, busy
				if outside {
					return nil
				}
				_, err := w.exec(`UPDATE schedules SET next_run_at = ?, skipped_ticks = skipped_ticks + 1,
					last_skip_at = ? WHERE name = ?`, next, fire, p.Name)
				return err
			}
			res.Superseded = superseded
		}
		if p.Buffer > 0 {
			last, err := w.lastState(sc)
			if err != nil {
				return err
			}
			switch store.ApplyBuffer(sc, last, p) {
			case store.BufferAppend:
				res.Buffered, res.Busy = true, last
				if outside {
					_, err = w.exec(`UPDATE schedules SET buffered = ? WHERE name = ?`, store.EncodeTimes(sc.Buffered), p.Name)
				} else {
					_, err = w.exec(`UPDATE schedules SET buffered = ?, next_run_at = ? WHERE name = ?`,
						store.EncodeTimes(sc.Buffered), next, p.Name)
				}
				return err
			case store.BufferSkip:
				res.Skipped, res.Busy = true, last
				if outside {
					return nil
				}
				_, err := w.exec(`UPDATE schedules SET next_run_at = ?, skipped_ticks = skipped_ticks + 1,
					last_skip_at = ? WHERE name = ?`, next, fire, p.Name)
				return err
			}
		}
		if j.UniqueKey != "" {
			if _, _, held, err := holder(w, j.UniqueKey); err != nil || held {
				if err == nil && !outside {
					_, err = w.exec(`UPDATE schedules SET next_run_at = ? WHERE name = ?`, next, p.Name)
				}
				return err
			}
		}
		ids, err := insertRows(w, rows, nil)
		if err != nil {
			return err
		}
		if outside {
			_, err = w.exec(`UPDATE schedules SET last_job_id = ? WHERE name = ?`, int64(ids[0]), p.Name)
		} else {
			_, err = w.exec(`UPDATE schedules SET next_run_at = ?, last_fire_at = ?, last_job_id = ?,
			skipped_ticks = 0, last_skip_at = 0 WHERE name = ?`, next, fire, int64(ids[0]), p.Name)
		}
		res.Fired, res.ID = true, ids[0]
		return err
	}
	err = s.write(ctx, func(w *writer) error {
		if err := step(w); err != nil || !res.Changed() {
			return err
		}
		_, err := insertJobs(w, p.With)
		return err
	})
	if err != nil {
		return store.FireResult{}, err
	}
	return res, nil
}

// skipIfBusy applies the skip overlap policy to the last job of sc at a
// tick: if the tick is to be skipped it returns that job's state
// (available or running; 0 otherwise), and if that job is retrying it
// supersedes it (store.ApplySupersede) and returns its ID.
func (w *writer) skipIfBusy(sc *job.Schedule, now, tick time.Time) (busy job.State, superseded job.ID, err error) {
	last, err := w.load(sc.LastJobID)
	if errors.Is(err, job.ErrNotFound) {
		return 0, 0, nil // purged: nothing to wait for
	}
	if err != nil {
		return 0, 0, err
	}
	switch last.State {
	case job.StateAvailable, job.StateRunning:
		return last.State, 0, nil
	case job.StateRetrying:
		if err := store.ApplySupersede(last, now, tick); err != nil {
			return 0, 0, err
		}
		return 0, last.ID, w.save(last, job.StateRetrying)
	}
	return 0, 0, nil
}

// lastState returns the state of sc's last job: 0 if it has none, or it
// is gone.
func (w *writer) lastState(sc *job.Schedule) (job.State, error) {
	if sc.LastJobID == 0 {
		return 0, nil
	}
	last, err := w.load(sc.LastJobID)
	if errors.Is(err, job.ErrNotFound) {
		return 0, nil
	}
	if err != nil {
		return 0, err
	}
	return last.State, nil
}

// release applies store.ApplyRelease to sc in the write transaction: it
// inserts rows, the first buffered run's job, when the last job has
// finished.
func (w *writer) release(sc *job.Schedule, p store.FireScheduleParams, rows *newRows) (store.FireResult, error) {
	last, err := w.lastState(sc)
	if err != nil {
		return store.FireResult{}, err
	}
	if !store.ApplyRelease(sc, last, p) {
		if last != 0 && !last.Finished() {
			return store.FireResult{Busy: last}, nil
		}
		return store.FireResult{}, nil
	}
	rest, fire := store.EncodeTimes(sc.Buffered), store.UnixNanos(p.FireTime)
	if fire != 0 {
		exists, err := fired(w, p.Name, fire)
		if err != nil || exists {
			if err == nil {
				_, err = w.exec(`UPDATE schedules SET buffered = ? WHERE name = ?`, rest, p.Name)
			}
			return store.FireResult{}, err
		}
	}
	ids, err := insertRows(w, rows, nil)
	if err != nil {
		return store.FireResult{}, err
	}
	_, err = w.exec(`UPDATE schedules SET buffered = ?1, last_job_id = ?2,
		last_fire_at = CASE WHEN ?3 != 0 THEN ?3 ELSE last_fire_at END WHERE name = ?4`, rest, int64(ids[0]), fire, p.Name)
	if err != nil {
		return store.FireResult{}, err
	}
	return store.FireResult{Fired: true, ID: ids[0]}, nil
}
