package sqlitestore

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/hopperq/hopper/backoff"
	"github.com/hopperq/hopper/job"
	"github.com/hopperq/hopper/store"
)

const scheduleCols = `name, spec, time_zone, fixed_delay, overlap, paused, kind, args, queue,
	priority, max_attempts, timeout, retry, next_run_at, last_fire_at, last_job_id, created_at`

// scheduleArgs are the values of scheduleCols for sc.
func scheduleArgs(sc *job.Schedule) ([]any, error) {
	retry, err := policyText(sc.Retry)
	if err != nil {
		return nil, err
	}
	return []any{sc.Name, sc.Spec, sc.TimeZone, sc.FixedDelay, int64(sc.Overlap), sc.Paused,
		sc.Kind, jsonText(sc.Args), sc.Queue, sc.Priority, sc.MaxAttempts, int64(sc.Timeout),
		retry, store.UnixNanos(sc.NextRunAt), store.UnixNanos(sc.LastFireAt), int64(sc.LastJobID), store.UnixNanos(sc.CreatedAt)}, nil
}

func scanSchedule(r scanner) (*job.Schedule, error) {
	var (
		sc                          job.Schedule
		args, retry                 []byte
		overlap, timeout            int64
		next, lastFire, lastJob, ca int64
	)
	err := r.Scan(&sc.Name, &sc.Spec, &sc.TimeZone, &sc.FixedDelay, &overlap, &sc.Paused,
		&sc.Kind, &args, &sc.Queue, &sc.Priority, &sc.MaxAttempts, &timeout, &retry,
		&next, &lastFire, &lastJob, &ca)
	if err != nil {
		return nil, err
	}
	sc.Overlap = job.Overlap(overlap)
	if len(args) > 0 {
		sc.Args = json.RawMessage(args)
	}
	sc.Timeout = time.Duration(timeout)
	if len(retry) > 0 {
		sc.Retry = new(backoff.Policy)
		if err := json.Unmarshal(retry, sc.Retry); err != nil {
			return nil, fmt.Errorf("schedule %q: decoding retry policy: %w", sc.Name, err)
		}
	}
	sc.NextRunAt, sc.LastFireAt = store.FromUnixNanos(next), store.FromUnixNanos(lastFire)
	sc.LastJobID, sc.CreatedAt = job.ID(lastJob), store.FromUnixNanos(ca)
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
	if p.Schedule == nil || p.Schedule.Name == "" {
		return job.Invalid("name", "must not be empty")
	}
	args, err := scheduleArgs(p.Schedule)
	if err != nil {
		return err
	}
	verb := `INSERT`
	if p.Replace {
		verb = `INSERT OR REPLACE`
	}
	q := verb + ` INTO schedules (` + scheduleCols + `) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`
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

// FireSchedule implements store.Store. A job whose unique key is held is
// not inserted: the tick is then skipped (Fired false) and the schedule
// advanced, as when the tick's job already exists.
func (s *Store) FireSchedule(ctx context.Context, p store.FireScheduleParams) (store.FireResult, error) {
	if p.Job == nil {
		return store.FireResult{}, job.Invalid("job", "must not be nil")
	}
	j := *p.Job
	j.Schedule, j.FireTime = p.Name, p.FireTime
	rows, err := makeRows([]*job.Job{&j}, p.Now)
	if err != nil {
		return store.FireResult{}, err
	}
	fire, next := store.UnixNanos(p.FireTime), store.UnixNanos(p.Next)
	var res store.FireResult
	err = s.write(ctx, func(w *writer) error {
		res = store.FireResult{}
		sc, err := w.loadSchedule(p.Name)
		if err != nil {
			return err
		}
		if store.UnixNanos(sc.NextRunAt) != fire {
			return nil // another firing won
		}
		exists, err := w.fired(p.Name, fire)
		if err != nil {
			return err
		}
		if !exists && j.UniqueKey != "" {
			if _, _, exists, err = w.holder(j.UniqueKey); err != nil {
				return err
			}
		}
		if exists {
			_, err := w.exec(`UPDATE schedules SET next_run_at = ? WHERE name = ?`, next, p.Name)
			return err
		}
		ids, err := w.insert(rows, nil)
		if err != nil {
			return err
		}
		_, err = w.exec(`UPDATE schedules SET next_run_at = ?, last_fire_at = ?, last_job_id = ? WHERE name = ?`,
			next, fire, int64(ids[0]), p.Name)
		res = store.FireResult{Fired: true, ID: ids[0]}
		return err
	})
	if err != nil {
		return store.FireResult{}, err
	}
	return res, nil
}
