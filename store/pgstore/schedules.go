package pgstore

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/hopperq/hopper/job"
	"github.com/hopperq/hopper/store"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgtype"
)

const scheduleCols = `name, spec, time_zone, fixed_delay, overlap, paused, kind, args, queue,
	priority, max_attempts, timeout_ns, retry, next_run_at, last_fire_at, last_job_id,
	skipped_ticks, last_skip_at, created_at, labels, catch_up, catch_up_window_ns, catch_up_max,
	jitter_ns, jitter_mode, buffered, monitor, output_retention`

// scheduleArgs are the values of scheduleCols for sc.
func scheduleArgs(sc *job.Schedule) ([]any, error) {
	retry, err := store.EncodePolicy(sc.Retry)
	if err != nil {
		return nil, err
	}
	labels, err := store.EncodeLabels(sc.Meta, sc.Tags)
	if err != nil {
		return nil, err
	}
	monitor, err := store.EncodeMonitor(sc.Monitor)
	if err != nil {
		return nil, err
	}
	return []any{sc.Name, sc.Spec, sc.TimeZone, sc.FixedDelay, sc.Overlap.String(), sc.Paused,
		sc.Kind, string(sc.Args), sc.Queue, int64(sc.Priority), int32(sc.MaxAttempts), int64(sc.Timeout),
		retry, ts(sc.NextRunAt), ts(sc.LastFireAt), int64(sc.LastJobID),
		int32(sc.SkippedTicks), ts(sc.LastSkipAt), ts(sc.CreatedAt), labels,
		sc.CatchUp.String(), int64(sc.CatchUpWindow), int32(sc.CatchUpMax), int64(sc.Jitter), sc.JitterMode.String(), store.EncodeTimes(sc.Buffered),
		string(monitor), store.EncodeRetention(sc.OutputRetention)}, nil
}

// sqlScheduleValues are the placeholders of scheduleArgs, with the
// conversions of their columns.
const sqlScheduleValues = `$1, $2, $3, $4, $5, $6, $7, NULLIF($8, '')::json, $9, $10, $11, $12,
	NULLIF($13, '')::json, $14, $15, $16, $17, $18, $19, NULLIF($20, ''), $21, $22, $23, $24, $25, $26,
	NULLIF($27, '')::jsonb, NULLIF($28, '')::jsonb`

func scanSchedule(r pgx.Row) (*job.Schedule, error) {
	var (
		sc                                     job.Schedule
		overlap, catchUp, jitterMode, buffered string
		args, retry, monitor, retention        []byte
		labels                                 *string
		timeout, lastJob, window, jitter       int64
		next, lastFire, lastSkip, created      pgtype.Timestamptz
	)
	err := r.Scan(&sc.Name, &sc.Spec, &sc.TimeZone, &sc.FixedDelay, &overlap, &sc.Paused,
		&sc.Kind, &args, &sc.Queue, &sc.Priority, &sc.MaxAttempts, &timeout, &retry,
		&next, &lastFire, &lastJob, &sc.SkippedTicks, &lastSkip, &created, &labels,
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
	if sc.Monitor, err = store.DecodeMonitor(monitor); err != nil {
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
	sc.NextRunAt, sc.LastFireAt = fromTS(next), fromTS(lastFire)
	sc.LastJobID, sc.LastSkipAt = job.ID(lastJob), fromTS(lastSkip)
	sc.CreatedAt = fromTS(created)
	if labels != nil {
		if sc.Meta, sc.Tags, err = store.DecodeLabels([]byte(*labels)); err != nil {
			return nil, fmt.Errorf("schedule %q: %w", sc.Name, err)
		}
	}
	return &sc, nil
}

func notFoundSchedule(name string) error {
	return fmt.Errorf("schedule %q: %w", name, job.ErrNotFound)
}

// querier is a pool, a connection or a transaction.
type querier interface {
	QueryRow(ctx context.Context, sql string, args ...any) pgx.Row
}

// getSchedule reads a schedule (FOR UPDATE if lock, in a transaction).
func (s *Store) getSchedule(ctx context.Context, q querier, name string, lock bool) (*job.Schedule, error) {
	sql := `SELECT ` + scheduleCols + ` FROM {schema}.schedules WHERE name = $1`
	if lock {
		sql += ` FOR UPDATE`
	}
	sc, err := scanSchedule(q.QueryRow(ctx, s.q(sql), name))
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, notFoundSchedule(name)
	}
	return sc, err
}

// AddSchedule implements store.Store: one INSERT, ON CONFLICT DO NOTHING
// (job.ErrDuplicate) or, with p.Replace, DO UPDATE.
func (s *Store) AddSchedule(ctx context.Context, p store.AddScheduleParams) error {
	if err := s.writable(); err != nil {
		return err
	}
	if err := p.Validate(); err != nil {
		return err
	}
	args, err := scheduleArgs(p.Schedule)
	if err != nil {
		return err
	}
	q := `INSERT INTO {schema}.schedules (` + scheduleCols + `) VALUES (` + sqlScheduleValues + `)`
	if p.Replace {
		q += ` ON CONFLICT (name) DO UPDATE SET (` + scheduleCols + `) = ROW(` + sqlScheduleValues + `)`
	} else {
		q += ` ON CONFLICT (name) DO NOTHING`
	}
	tag, err := s.pool.Exec(ctx, s.q(q), args...)
	if err != nil {
		return s.translate(err)
	}
	if tag.RowsAffected() == 0 {
		return fmt.Errorf("schedule %q: %w", p.Schedule.Name, job.ErrDuplicate)
	}
	// The times as stored: timestamptz keeps microseconds.
	sc := p.Schedule
	sc.NextRunAt, sc.LastFireAt, sc.LastSkipAt, sc.CreatedAt = micro(sc.NextRunAt), micro(sc.LastFireAt), micro(sc.LastSkipAt), micro(sc.CreatedAt)
	return nil
}

// GetSchedule implements store.Store.
func (s *Store) GetSchedule(ctx context.Context, name string) (*job.Schedule, error) {
	if err := s.readable(); err != nil {
		return nil, err
	}
	if s.empty {
		return nil, notFoundSchedule(name)
	}
	sc, err := s.getSchedule(ctx, s.pool, name, false)
	if err != nil {
		return nil, s.translate(err)
	}
	return sc, nil
}

// ListSchedules implements store.Store.
func (s *Store) ListSchedules(ctx context.Context) ([]*job.Schedule, error) {
	if err := s.readable(); err != nil {
		return nil, err
	}
	if s.empty {
		return nil, nil
	}
	rows, err := s.pool.Query(ctx, s.q(`SELECT `+scheduleCols+` FROM {schema}.schedules ORDER BY name`))
	if err != nil {
		return nil, s.translate(err)
	}
	defer rows.Close()
	var out []*job.Schedule
	for rows.Next() {
		sc, err := scanSchedule(rows)
		if err != nil {
			return nil, s.translate(err)
		}
		out = append(out, sc)
	}
	if err := rows.Err(); err != nil {
		return nil, s.translate(err)
	}
	return out, nil
}

// UpdateSchedule implements store.Store: the schedule is locked, checked
// (SetNext's compare-and-set, at the microseconds the database keeps) and
// written in one transaction.
func (s *Store) UpdateSchedule(ctx context.Context, p store.UpdateScheduleParams) (*job.Schedule, error) {
	if err := s.writable(); err != nil {
		return nil, err
	}
	var out *job.Schedule
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		sc, err := s.getSchedule(ctx, tx, p.Name, true)
		if err != nil {
			return err
		}
		if p.SetNext && !sc.NextRunAt.Equal(micro(p.IfNext)) {
			return fmt.Errorf("schedule %q: next run is %s, not %s: %w", p.Name,
				sc.NextRunAt.Format(time.RFC3339Nano), p.IfNext.UTC().Format(time.RFC3339Nano), job.ErrConflict)
		}
		if p.Paused != nil {
			sc.Paused = *p.Paused
		}
		if p.SetNext {
			sc.NextRunAt = micro(p.Next)
		}
		_, err = tx.Exec(ctx, s.q(`UPDATE {schema}.schedules SET paused = $1, next_run_at = $2 WHERE name = $3`),
			sc.Paused, ts(sc.NextRunAt), sc.Name)
		out = sc
		return err
	})
	if err != nil {
		return nil, s.translate(err)
	}
	return out, nil
}

// RemoveSchedule implements store.Store.
func (s *Store) RemoveSchedule(ctx context.Context, name string) error {
	if err := s.writable(); err != nil {
		return err
	}
	tag, err := s.pool.Exec(ctx, s.q(`DELETE FROM {schema}.schedules WHERE name = $1`), name)
	if err != nil {
		return s.translate(err)
	}
	if tag.RowsAffected() == 0 {
		return notFoundSchedule(name)
	}
	return nil
}

// fireLockTimeout bounds how long FireSchedule waits for a schedule's row.
const fireLockTimeout = time.Second

var sqlFireLockTimeout = `SELECT set_config('lock_timeout', '` + strconv.Itoa(int(fireLockTimeout.Milliseconds())) + `', true)`

// FireSchedule implements store.Store, in one transaction that locks the
// schedule's row first: concurrent firings of one tick queue behind it and
// find NextRunAt moved. A job whose unique key is held by another waiting
// or running job is not inserted: the tick then only advances the schedule
// (Fired false), as when the tick's job exists.
func (s *Store) FireSchedule(ctx context.Context, p store.FireScheduleParams) (store.FireResult, error) {
	if err := s.writable(); err != nil {
		return store.FireResult{}, err
	}
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
	now, fire, next := micro(p.Now), micro(p.FireTime), micro(p.Next)
	outside := p.Manual || p.Backfill // a run outside the chain of ticks
	var (
		res      store.FireResult
		withRows *newRows
		withOut  []store.EnqueueResult
	)
	step := func(tx pgx.Tx) error {
		res = store.FireResult{}
		// Another process holding the row (firing, pausing) lets go within
		// milliseconds, unless it is frozen or cut off mid-transaction: wait
		// no longer than fireLockTimeout, so that the leader goes on with
		// the other schedules and tries this one again at its next pass.
		if _, err := tx.Exec(ctx, sqlFireLockTimeout); err != nil {
			return err
		}
		sc, err := s.getSchedule(ctx, tx, p.Name, true)
		var pe *pgconn.PgError
		if errors.As(err, &pe) && pe.Code == codeLockNotAvailable {
			return fmt.Errorf("pgstore: schedule %q: its row has been locked by another session for over %s (a process frozen or cut off in a transaction?): %w",
				p.Name, fireLockTimeout, job.ErrConflict)
		}
		if err != nil {
			return err
		}
		advance := func() error {
			if outside {
				return nil // a run now moves no tick
			}
			_, err := tx.Exec(ctx, s.q(`UPDATE {schema}.schedules SET next_run_at = $1 WHERE name = $2`), ts(next), p.Name)
			return err
		}
		if p.Release {
			res, err = s.release(ctx, tx, sc, p, rows)
			return err
		}
		if p.Backfill {
			if err := tx.QueryRow(ctx, s.q(`SELECT EXISTS (SELECT 1 FROM {schema}.jobs WHERE schedule = $1 AND fire_time = $2)`),
				p.Name, ts(fire)).Scan(&res.Existed); err != nil || res.Existed {
				return err
			}
		}
		if !outside {
			if sc.Paused || !sc.NextRunAt.Equal(micro(p.From())) {
				return nil // paused meanwhile, or another firing won
			}
			var exists bool
			if err := tx.QueryRow(ctx, s.q(`SELECT EXISTS (SELECT 1 FROM {schema}.jobs WHERE schedule = $1 AND fire_time = $2)`),
				p.Name, ts(fire)).Scan(&exists); err != nil {
				return err
			}
			if exists {
				return advance()
			}
		}
		if p.SkipIfBusy && sc.LastJobID != 0 {
			busy, superseded, err := s.skipIfBusy(ctx, tx, sc, now, p.FireTime)
			if err != nil {
				return err
			}
			if busy != 0 {
				res.Skipped, res.Busy = true, busy
				if outside {
					return nil
				}
				_, err := tx.Exec(ctx, s.q(`UPDATE {schema}.schedules SET next_run_at = $1, skipped_ticks = skipped_ticks + 1,
					last_skip_at = $2 WHERE name = $3`), ts(next), ts(fire), p.Name)
				return err
			}
			res.Superseded = superseded
		}
		if p.Buffer > 0 {
			last, err := s.lastState(ctx, tx, sc)
			if err != nil {
				return err
			}
			switch store.ApplyBuffer(sc, last, p) {
			case store.BufferAppend:
				res.Buffered, res.Busy = true, last
				if outside {
					_, err = tx.Exec(ctx, s.q(`UPDATE {schema}.schedules SET buffered = $1 WHERE name = $2`), store.EncodeTimes(sc.Buffered), p.Name)
				} else {
					_, err = tx.Exec(ctx, s.q(`UPDATE {schema}.schedules SET buffered = $1, next_run_at = $2 WHERE name = $3`),
						store.EncodeTimes(sc.Buffered), ts(next), p.Name)
				}
				return err
			case store.BufferSkip:
				res.Skipped, res.Busy = true, last
				if outside {
					return nil
				}
				_, err := tx.Exec(ctx, s.q(`UPDATE {schema}.schedules SET next_run_at = $1, skipped_ticks = skipped_ticks + 1,
					last_skip_at = $2 WHERE name = $3`), ts(next), ts(fire), p.Name)
				return err
			}
		}
		out, err := s.insert(ctx, tx, rows, notifyNone)
		if err != nil {
			return err
		}
		if out[0].Duplicate { // its unique key is held: the tick only advances
			return advance()
		}
		if outside {
			_, err = tx.Exec(ctx, s.q(`UPDATE {schema}.schedules SET last_job_id = $1 WHERE name = $2`), int64(out[0].ID), p.Name)
		} else {
			_, err = tx.Exec(ctx, s.q(`UPDATE {schema}.schedules SET next_run_at = $1, last_fire_at = $2, last_job_id = $3,
			skipped_ticks = 0, last_skip_at = NULL WHERE name = $4`), ts(next), ts(fire), int64(out[0].ID), p.Name)
		}
		res.Fired, res.ID = err == nil, out[0].ID
		return err
	}
	err = pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		withRows, withOut = nil, nil
		if err := step(tx); err != nil || !res.Changed() {
			return err
		}
		var err error
		_, withRows, withOut, err = s.insertNotify(ctx, tx, p.With)
		return err
	})
	if err != nil {
		return store.FireResult{}, s.translate(err)
	}
	if res.Fired {
		s.notifyKeys(lowestKeys(rows.jobs, rows.states, func(int) int64 { return int64(res.ID) }))
	}
	s.wakeFor(withRows, withOut)
	return res, nil
}

// skipIfBusy applies the skip overlap policy to the last job of sc at a
// tick: if the tick is to be skipped it returns that job's state
// (available or running; 0 otherwise), and if that job is retrying it
// supersedes it (store.ApplySupersede) and returns its ID.
func (s *Store) skipIfBusy(ctx context.Context, tx pgx.Tx, sc *job.Schedule, now, tick time.Time) (busy job.State, superseded job.ID, err error) {
	last, err := s.load(ctx, tx, sc.LastJobID)
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
		prev := len(last.Attempts)
		if err := store.ApplySupersede(last, now, tick); err != nil {
			return 0, 0, err
		}
		return 0, last.ID, s.save(ctx, tx, []*job.Job{last}, []int{prev})
	}
	return 0, 0, nil
}

// lastState returns the state of sc's last job: 0 if it has none, or it
// is gone.
func (s *Store) lastState(ctx context.Context, tx pgx.Tx, sc *job.Schedule) (job.State, error) {
	if sc.LastJobID == 0 {
		return 0, nil
	}
	last, err := s.load(ctx, tx, sc.LastJobID)
	if errors.Is(err, job.ErrNotFound) {
		return 0, nil
	}
	if err != nil {
		return 0, err
	}
	return last.State, nil
}

// release applies store.ApplyRelease to sc in transaction tx: it inserts
// rows, the first buffered run's job, when the last job has finished.
func (s *Store) release(ctx context.Context, tx pgx.Tx, sc *job.Schedule, p store.FireScheduleParams, rows *newRows) (store.FireResult, error) {
	last, err := s.lastState(ctx, tx, sc)
	if err != nil {
		return store.FireResult{}, err
	}
	if !store.ApplyRelease(sc, last, p) {
		if last != 0 && !last.Finished() {
			return store.FireResult{Busy: last}, nil
		}
		return store.FireResult{}, nil
	}
	rest, fire := store.EncodeTimes(sc.Buffered), micro(p.FireTime)
	setRest := func() error {
		_, err := tx.Exec(ctx, s.q(`UPDATE {schema}.schedules SET buffered = $1 WHERE name = $2`), rest, p.Name)
		return err
	}
	if !fire.IsZero() {
		var exists bool
		if err := tx.QueryRow(ctx, s.q(`SELECT EXISTS (SELECT 1 FROM {schema}.jobs WHERE schedule = $1 AND fire_time = $2)`),
			p.Name, ts(fire)).Scan(&exists); err != nil {
			return store.FireResult{}, err
		}
		if exists {
			return store.FireResult{}, setRest()
		}
	}
	out, err := s.insert(ctx, tx, rows, notifyNone)
	if err != nil {
		return store.FireResult{}, err
	}
	if out[0].Duplicate { // its unique key is held: the run is dropped
		return store.FireResult{}, setRest()
	}
	_, err = tx.Exec(ctx, s.q(`UPDATE {schema}.schedules SET buffered = $1, last_job_id = $2,
		last_fire_at = COALESCE($3, last_fire_at) WHERE name = $4`), rest, int64(out[0].ID), ts(fire), p.Name)
	if err != nil {
		return store.FireResult{}, err
	}
	return store.FireResult{Fired: true, ID: out[0].ID}, nil
}
