package sqlitestore

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/hopperq/hopper/job"
	"github.com/hopperq/hopper/store"
)

// insertCols are the columns Enqueue sets; the others keep their defaults.
const (
	insertCols    = `kind, queue, args, priority, run_at, state, max_attempts, timeout, unique_key, retry, created_at, schedule, fire_time`
	nInsertCols   = 13
	maxInsertRows = 64 // rows per multi-row INSERT
)

// insertSQL[n] inserts n rows.
var insertSQL = func() (qs [maxInsertRows + 1]string) {
	row := "(" + strings.Repeat("?,", nInsertCols-1) + "?)"
	for n := 1; n <= maxInsertRows; n++ {
		qs[n] = "INSERT INTO jobs (" + insertCols + ") VALUES " + strings.Repeat(row+",", n-1) + row
	}
	return qs
}()

// newRows converts jobs to INSERT arguments, outside the writer goroutine.
type newRows struct {
	jobs   []*job.Job
	args   []any // nInsertCols per job
	states []job.State
}

func makeRows(jobs []*job.Job, now time.Time) (*newRows, error) {
	r := &newRows{jobs: jobs, args: make([]any, 0, len(jobs)*nInsertCols), states: make([]job.State, len(jobs))}
	for i, j := range jobs {
		if j.Func != nil {
			return nil, job.ErrNotDurable
		}
		runAt, created := j.RunAt, j.CreatedAt
		if runAt.IsZero() {
			runAt = now
		}
		if created.IsZero() {
			created = now
		}
		st := j.State
		if !st.Waiting() || st == job.StateRetrying {
			st = job.WaitingState(runAt, now)
		}
		queue := j.Queue
		if queue == "" {
			queue = job.DefaultQueue
		}
		retry, err := policyText(j.Retry)
		if err != nil {
			return nil, err
		}
		r.states[i] = st
		r.args = append(r.args, j.Kind, queue, jsonText(j.Args), j.Priority, store.UnixNanos(runAt), int64(st),
			j.MaxAttempts, int64(j.Timeout), nullStr(j.UniqueKey), retry, store.UnixNanos(created),
			nullStr(j.Schedule), store.UnixNanos(j.FireTime))
	}
	return r, nil
}

// insert inserts rows idx of r (all if idx is nil), in order, and returns
// their IDs.
func (w *writer) insert(r *newRows, idx []int) ([]job.ID, error) {
	if idx == nil {
		return w.insertArgs(r.args, len(r.jobs))
	}
	buf := make([]any, 0, len(idx)*nInsertCols)
	for _, i := range idx {
		buf = append(buf, r.args[i*nInsertCols:(i+1)*nInsertCols]...)
	}
	return w.insertArgs(buf, len(idx))
}

// insertArgs inserts n rows of INSERT arguments (nInsertCols each), in
// order, up to maxInsertRows per statement, and returns their IDs.
func (w *writer) insertArgs(args []any, n int) ([]job.ID, error) {
	ids := make([]job.ID, 0, n)
	for start := 0; start < n; start += maxInsertRows {
		k := min(n-start, maxInsertRows)
		st := w.inserts[k]
		if st == nil {
			var err error
			if st, err = w.conn.PrepareContext(bg, insertSQL[k]); err != nil {
				return nil, err
			}
			w.inserts[k] = st
		}
		res, err := st.ExecContext(bg, args[start*nInsertCols:(start+k)*nInsertCols]...)
		if err != nil {
			return nil, err
		}
		// One writer, AUTOINCREMENT: the k rows got consecutive IDs.
		last, err := res.LastInsertId()
		if err != nil {
			return nil, err
		}
		for i := range k {
			ids = append(ids, job.ID(last-int64(k-1-i)))
		}
	}
	return ids, nil
}

// Lookups of Enqueue and RetryDead.
const (
	sqlHolder  = `SELECT id, state FROM jobs WHERE unique_key = ? AND state IN (1, 2, 3, 4)`
	sqlFired   = `SELECT 1 FROM jobs WHERE schedule = ? AND fire_time = ?`
	sqlDeadAll = `SELECT id, unique_key FROM jobs WHERE state IN (5, 6, 7) AND state = 7 ORDER BY id`
)

// holder returns the waiting or running job holding a unique key.
func (w *writer) holder(key string) (job.ID, job.State, bool, error) {
	var id, st int64
	err := w.scanRow(sqlHolder, []any{key}, &id, &st)
	if errors.Is(err, sql.ErrNoRows) {
		return 0, 0, false, nil
	}
	return job.ID(id), job.State(st), err == nil, err
}

// fired reports whether a job exists for a schedule's tick.
func (w *writer) fired(schedule string, fireTime int64) (bool, error) {
	var one int
	err := w.scanRow(sqlFired, []any{schedule, fireTime}, &one)
	if errors.Is(err, sql.ErrNoRows) {
		return false, nil
	}
	return err == nil, err
}

// Enqueue implements store.Store. A job carrying a Func fails the call
// with job.ErrNotDurable; a job whose (Schedule, FireTime) exists fails it
// with job.ErrDuplicate. Nothing is inserted then.
func (s *Store) Enqueue(ctx context.Context, p store.EnqueueParams) ([]store.EnqueueResult, error) {
	rows, err := makeRows(p.Jobs, p.Now)
	if err != nil {
		return nil, err
	}
	r, e := enqueueRequest(ctx, rows)
	if err := s.submit(r); err != nil {
		return nil, err
	}
	return e.res, nil
}

// enqueueRequest is the writer request of an Enqueue of rows.
func enqueueRequest(ctx context.Context, rows *newRows) (*request, *enqueueReq) {
	e := &enqueueReq{rows: rows}
	r := &request{ctx: ctx, fn: func(w *writer) (err error) {
		e.res, err = w.enqueue(rows)
		return err
	}}
	if plain(rows.jobs) {
		r.enq = e
	}
	return r, e
}

// enqueueReq is an Enqueue call's rows and, once done, its results.
type enqueueReq struct {
	rows *newRows
	res  []store.EnqueueResult
}

// plain reports whether jobs may be inserted with other calls' jobs in one
// statement (see Store.runMerged): no job has a unique key or a schedule,
// the only checks an Enqueue makes in the transaction.
func plain(jobs []*job.Job) bool {
	for _, j := range jobs {
		if j.UniqueKey != "" || j.Schedule != "" {
			return false
		}
	}
	return len(jobs) > 0
}

func (w *writer) enqueue(r *newRows) ([]store.EnqueueResult, error) {
	type tick struct {
		name string
		at   int64
	}
	var ticks map[tick]bool
	for _, j := range r.jobs {
		if j.Schedule == "" {
			continue
		}
		t := tick{j.Schedule, store.UnixNanos(j.FireTime)}
		dup, err := w.fired(t.name, t.at)
		if err != nil {
			return nil, err
		}
		if dup || ticks[t] {
			return nil, fmt.Errorf("schedule %q tick %s: %w", t.name, j.FireTime.UTC().Format(time.RFC3339Nano), job.ErrDuplicate)
		}
		if ticks == nil {
			ticks = make(map[tick]bool)
		}
		ticks[t] = true
	}
	res := make([]store.EnqueueResult, len(r.jobs))
	var (
		idx   []int          // rows to insert, nil for all
		held  map[string]int // unique key → index of the job of this call holding it
		dupOf map[int]int    // index → index of the job of this call it duplicates
	)
	for i, j := range r.jobs {
		if j.UniqueKey == "" {
			if idx != nil {
				idx = append(idx, i)
			}
			continue
		}
		if idx == nil {
			idx = make([]int, i, len(r.jobs))
			for k := range idx {
				idx[k] = k
			}
			held, dupOf = make(map[string]int), make(map[int]int)
		}
		if h, ok := held[j.UniqueKey]; ok {
			dupOf[i] = h
			continue
		}
		id, st, ok, err := w.holder(j.UniqueKey)
		if err != nil {
			return nil, err
		}
		if ok {
			res[i] = store.EnqueueResult{ID: id, Duplicate: true, State: st}
			continue
		}
		held[j.UniqueKey] = i
		idx = append(idx, i)
	}
	ids, err := w.insert(r, idx)
	if err != nil {
		return nil, err
	}
	for k, id := range ids {
		i := k
		if idx != nil {
			i = idx[k]
		}
		res[i] = store.EnqueueResult{ID: id, State: r.states[i]}
	}
	for i, h := range dupOf {
		res[i] = store.EnqueueResult{ID: res[h].ID, Duplicate: true, State: res[h].State}
	}
	return res, nil
}

// load reads a job in the write transaction.
func (w *writer) load(id job.ID) (*job.Job, error) {
	st, err := w.stmt(`SELECT ` + jobCols + ` FROM jobs WHERE id = ?`)
	if err != nil {
		return nil, err
	}
	j, err := scanJob(st.QueryRowContext(bg, int64(id)))
	if errors.Is(err, sql.ErrNoRows) {
		return nil, fmt.Errorf("job %d: %w", id, job.ErrNotFound)
	}
	return j, err
}

// save writes back the mutable fields of a job changed in Go.
func (w *writer) save(j *job.Job) error {
	attempts, err := attemptsText(j.Attempts)
	if err != nil {
		return err
	}
	_, err = w.exec(`UPDATE jobs SET state = ?1, run_at = ?2, priority = ?3, attempt = ?4,
		last_error = ?5, attempts = ?6, started_at = ?7, finished_at = ?8,
		worker = CASE WHEN ?1 = 3 THEN ?9 END,
		lease_until = ?10, crashes = ?11, cancel_requested = ?12,
		claimed_by = CASE WHEN ?1 = 3 THEN claimed_by END
		WHERE id = ?13`,
		int64(j.State), store.UnixNanos(j.RunAt), j.Priority, j.Attempt, j.LastError, attempts,
		store.UnixNanos(j.StartedAt), store.UnixNanos(j.FinishedAt), j.Worker, store.UnixNanos(j.LeaseUntil),
		j.Crashes, j.CancelRequested, int64(j.ID))
	return err
}

// Cancel implements store.Store.
func (s *Store) Cancel(ctx context.Context, p store.CancelParams) (*job.Job, error) {
	var out *job.Job
	err := s.write(ctx, func(w *writer) error {
		j, err := w.load(p.ID)
		if err != nil {
			return err
		}
		out = j
		switch {
		case j.State == job.StateRunning:
			j.CancelRequested = true
		case j.State.Waiting():
			j.State, j.FinishedAt = job.StateCancelled, p.Now
		default:
			return fmt.Errorf("job %d is %s: %w", p.ID, j.State, job.ErrNotWaiting)
		}
		return w.save(j)
	})
	if err != nil && !errors.Is(err, job.ErrNotWaiting) {
		return nil, err
	}
	return out, err
}

// Reschedule implements store.Store.
func (s *Store) Reschedule(ctx context.Context, p store.RescheduleParams) (*job.Job, error) {
	var out *job.Job
	err := s.write(ctx, func(w *writer) error {
		j, err := w.load(p.ID)
		if err != nil {
			return err
		}
		out = j
		if !j.State.Waiting() {
			return fmt.Errorf("job %d is %s: %w", p.ID, j.State, job.ErrNotWaiting)
		}
		if !p.RunAt.IsZero() {
			j.RunAt = p.RunAt.UTC()
		}
		if p.Priority != nil {
			j.Priority = *p.Priority
		}
		j.State = job.WaitingState(j.RunAt, p.Now)
		return w.save(j)
	})
	if err != nil && !errors.Is(err, job.ErrNotWaiting) {
		return nil, err
	}
	return out, err
}

// RetryDead implements store.Store.
func (s *Store) RetryDead(ctx context.Context, p store.RetryDeadParams) (int, error) {
	now := store.UnixNanos(p.Now)
	var n int
	err := s.write(ctx, func(w *writer) error {
		n = 0
		var rows *sql.Rows
		var err error
		if len(p.IDs) == 0 {
			rows, err = w.query(sqlDeadAll)
		} else {
			rows, err = w.query(`SELECT id, unique_key FROM jobs WHERE id IN (SELECT value FROM json_each(?)) AND state = 7 ORDER BY id`, idList(p.IDs))
		}
		if err != nil {
			return err
		}
		type dead struct {
			id  int64
			key *string
		}
		var ds []dead
		for rows.Next() {
			var d dead
			if err := rows.Scan(&d.id, &d.key); err != nil {
				rows.Close()
				return err
			}
			ds = append(ds, d)
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return err
		}
		for _, d := range ds {
			if d.key != nil {
				_, _, held, err := w.holder(*d.key)
				if err != nil {
					return err
				}
				if held {
					continue // another unfinished job holds the key: stays dead
				}
			}
			if _, err := w.exec(`UPDATE jobs SET state = 2, attempt = 0, crashes = 0, run_at = ?, finished_at = 0 WHERE id = ?`, now, d.id); err != nil {
				return err
			}
			n++
		}
		return nil
	})
	return n, err
}

// Purge implements store.Store.
func (s *Store) Purge(ctx context.Context, p store.PurgeParams) (int, error) {
	for _, st := range p.States {
		if !st.Finished() {
			return 0, job.Invalid("states", "can only purge completed, cancelled or dead jobs, not %s", st)
		}
	}
	// match selects the jobs of one state that p's filters keep.
	match, margs := `state IN (5, 6, 7) AND state = ?`, []any{nil}
	if !p.Before.IsZero() {
		match += ` AND finished_at < ?`
		margs = append(margs, store.UnixNanos(p.Before))
	}
	if len(p.IDs) > 0 {
		match += ` AND id IN (SELECT value FROM json_each(?))`
		margs = append(margs, idList(p.IDs))
	}
	q := `DELETE FROM jobs WHERE ` + match
	if p.KeepNewest > 0 {
		q += ` AND id NOT IN (SELECT id FROM jobs WHERE ` + match + ` ORDER BY finished_at DESC, id DESC LIMIT +?)`
	}
	var n int
	err := s.write(ctx, func(w *writer) error {
		n = 0
		for _, st := range p.States {
			margs[0] = int64(st)
			args := margs
			if p.KeepNewest > 0 {
				args = append(append(append([]any(nil), margs...), margs...), p.KeepNewest)
			}
			m, err := w.execN(q, args...)
			if err != nil {
				return err
			}
			n += int(m)
		}
		return nil
	})
	return n, err
}
