package sqlitestore

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/hopperq/hopper/job"
	"github.com/hopperq/hopper/store"
)

// insertCols are the columns Enqueue sets; the others keep their defaults.
const (
	insertCols    = `kind, queue, args, priority, run_at, state, max_attempts, timeout, unique_key, retry, created_at, schedule, fire_time, labels, flow_key`
	nInsertCols   = 15
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

func makeRows(jobs []*job.Job) (*newRows, error) {
	r := &newRows{jobs: jobs, args: make([]any, 0, len(jobs)*nInsertCols), states: make([]job.State, len(jobs))}
	for i, j := range jobs {
		if err := store.CheckNewJob(j, i, len(jobs)); err != nil {
			return nil, err
		}
		if j.Func != nil {
			return nil, job.ErrNotDurable
		}
		retry, err := policyText(j.Retry)
		if err != nil {
			return nil, fmt.Errorf("job %d of %d (%s): %w", i+1, len(jobs), j.Kind, err)
		}
		labels, err := store.EncodeLabels(j.Meta, j.Tags)
		if err != nil {
			return nil, fmt.Errorf("job %d of %d (%s): %w", i+1, len(jobs), j.Kind, err)
		}
		r.states[i] = j.State
		r.args = append(r.args, j.Kind, j.Queue, jsonText(j.Args), j.Priority, store.UnixNanos(j.RunAt), stateName(j.State),
			j.MaxAttempts, int64(j.Timeout), nullStr(j.UniqueKey), retry, store.UnixNanos(j.CreatedAt),
			nullStr(j.Schedule), store.UnixNanos(j.FireTime), nullStr(labels), j.Key)
	}
	return r, nil
}

// jobWriter runs the statements that insert jobs: the writer goroutine's
// connection (prepared statements, inside a group-commit transaction), or
// an application's *sql.Tx (appTx, for EnqueueTx). Either holds SQLite's
// write lock while the statements run.
type jobWriter interface {
	// scanRow runs q and scans its first row into dest (sql.ErrNoRows if
	// none).
	scanRow(q string, args []any, dest ...any) error
	// insertN runs insertSQL[n] with args (nInsertCols per row).
	insertN(n int, args []any) (sql.Result, error)
	// update runs a statement that changes rows.
	update(q string, args ...any) error
	// counts returns the changes to lane_counts that go with the
	// statements' (see counts.go).
	counts() countDeltas
	// keylessAvailable tells that a statement made a job without a key
	// available in queue (the keyless hints, keyless.go).
	keylessAvailable(queue string)
}

// counts implements jobWriter: the running request's changes.
func (w *writer) counts() countDeltas { return w.req }

// update implements jobWriter.
func (w *writer) update(q string, args ...any) error {
	_, err := w.exec(q, args...)
	return err
}

// insertN runs insertSQL[n], prepared once per row count.
func (w *writer) insertN(n int, args []any) (sql.Result, error) {
	st := w.inserts[n]
	if st == nil {
		var err error
		if st, err = w.conn.PrepareContext(bg, insertSQL[n]); err != nil {
			return nil, err
		}
		w.inserts[n] = st
	}
	return st.ExecContext(bg, args...)
}

// insertRows inserts rows idx of r (all if idx is nil), in order, counts
// them (q.counts) and returns their IDs.
func insertRows(q jobWriter, r *newRows, idx []int) ([]job.ID, error) {
	args, n := r.args, len(r.jobs)
	if idx != nil {
		args, n = make([]any, 0, len(idx)*nInsertCols), len(idx)
		for _, i := range idx {
			args = append(args, r.args[i*nInsertCols:(i+1)*nInsertCols]...)
		}
	}
	ids, err := insertArgs(q, args, n)
	if err != nil {
		return nil, err
	}
	c := counter{d: q.counts()}
	for k := range n {
		i := k
		if idx != nil {
			i = idx[k]
		}
		c.job(0, r.states[i], r.jobs[i].Queue, r.jobs[i].Kind)
		if r.states[i] == job.StateAvailable && r.jobs[i].Key == "" {
			q.keylessAvailable(r.jobs[i].Queue)
		}
	}
	c.flush()
	return ids, nil
}

// insertArgs inserts n rows of INSERT arguments (nInsertCols each), in
// order, up to maxInsertRows per statement, and returns their IDs.
func insertArgs(q jobWriter, args []any, n int) ([]job.ID, error) {
	ids := make([]job.ID, 0, n)
	for start := 0; start < n; start += maxInsertRows {
		k := min(n-start, maxInsertRows)
		res, err := q.insertN(k, args[start*nInsertCols:(start+k)*nInsertCols])
		if err != nil {
			return nil, err
		}
		// One statement under the write lock, AUTOINCREMENT: the k rows
		// got consecutive IDs.
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

// Lookups of Enqueue, RetryDead and FireSchedule.
const (
	sqlHolder  = `SELECT id, state FROM jobs WHERE unique_key = ? AND ` + sqlUnfinished
	sqlFired   = `SELECT 1 FROM jobs WHERE schedule = ? AND fire_time = ? AND fire_time != 0`
	sqlDeadAll = `SELECT ` + jobCols + ` FROM jobs WHERE state = 'dead' ORDER BY id`
	// +state: look the IDs up by primary key, rather than scan every dead
	// job in jobs_finished (whose condition state = 'dead' implies).
	sqlDeadIDs = `SELECT ` + jobCols + ` FROM jobs WHERE id IN (SELECT value FROM json_each(?))
		AND +state = 'dead' ORDER BY id`
)

// holder returns the waiting or running job holding a unique key.
func holder(q jobWriter, key string) (job.ID, job.State, bool, error) {
	var id int64
	var name string
	err := q.scanRow(sqlHolder, []any{key}, &id, &name)
	if errors.Is(err, sql.ErrNoRows) {
		return 0, 0, false, nil
	}
	if err != nil {
		return 0, 0, false, err
	}
	st, err := parseState(name)
	return job.ID(id), st, err == nil, err
}

// fired reports whether a job exists for a schedule's tick.
func fired(q jobWriter, schedule string, fireTime int64) (bool, error) {
	var one int
	err := q.scanRow(sqlFired, []any{schedule, fireTime}, &one)
	if errors.Is(err, sql.ErrNoRows) {
		return false, nil
	}
	return err == nil, err
}

// Enqueue implements store.Store. A job carrying a Func fails the call
// with job.ErrNotDurable, one that job.Job.Validate did not prepare (state
// neither scheduled nor available, no run-at or creation time) with a
// *job.FieldError, and one whose (Schedule, FireTime) exists with
// job.ErrDuplicate. Nothing is inserted then.
func (s *Store) Enqueue(ctx context.Context, p store.EnqueueParams) ([]store.EnqueueResult, error) {
	rows, err := makeRows(p.Jobs)
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
		e.res, err = enqueueRows(w, rows)
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

// enqueueRows inserts the jobs of r through q, unless a job's schedule tick
// exists (job.ErrDuplicate, nothing inserted) or its unique key is held by
// a waiting or running job, or by an earlier job of r (then its result
// names that job, Duplicate); a debounced job is applied to the holder of
// its key (debounce.go).
func enqueueRows(q jobWriter, r *newRows) ([]store.EnqueueResult, error) {
	if debounced(r.jobs) {
		return enqueueEach(q, r)
	}
	return enqueueBatch(q, r)
}

// enqueueBatch is enqueueRows for jobs none of which is debounced.
func enqueueBatch(q jobWriter, r *newRows) ([]store.EnqueueResult, error) {
	type tick struct {
		name string
		at   int64
	}
	var ticks map[tick]bool
	for _, j := range r.jobs {
		if !j.Tick() {
			continue
		}
		t := tick{j.Schedule, store.UnixNanos(j.FireTime)}
		dup, err := fired(q, t.name, t.at)
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
		id, st, ok, err := holder(q, j.UniqueKey)
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
	ids, err := insertRows(q, r, idx)
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

// save writes back the mutable fields of a job changed in Go by one of
// the store.Apply… transitions, and counts its move from state from.
func (w *writer) save(j *job.Job, from job.State) error {
	attempts, err := attemptsText(j.Attempts)
	if err != nil {
		return err
	}
	_, err = w.exec(`UPDATE jobs SET state = ?1, run_at = ?2, priority = ?3, attempt = ?4,
		last_error = ?5, attempts = ?6, started_at = ?7, finished_at = ?8,
		worker = CASE WHEN ?1 = 'running' THEN ?9 END,
		lease_until = ?10, crashes = ?11, cancel_requested = ?12, terminate_requested = ?14,
		claimed_by = CASE WHEN ?1 = 'running' THEN claimed_by END
		WHERE id = ?13`,
		stateName(j.State), store.UnixNanos(j.RunAt), j.Priority, j.Attempt, j.LastError, attempts,
		store.UnixNanos(j.StartedAt), store.UnixNanos(j.FinishedAt), j.Worker, store.UnixNanos(j.LeaseUntil),
		j.Crashes, j.CancelRequested, int64(j.ID), j.TerminateRequested)
	if err == nil {
		w.req.move(from, j.State, j.Queue, j.Kind, 1)
		if j.State == job.StateAvailable && from != job.StateAvailable && j.Key == "" {
			w.keylessAvailable(j.Queue)
		}
	}
	return err
}

// change applies a transition to job id in the write transaction, saves
// it and returns it. If apply fails, the job is returned as it is, with
// apply's error.
func (s *Store) change(ctx context.Context, id job.ID, apply func(j *job.Job) error) (*job.Job, error) {
	var out *job.Job
	var applyErr error
	err := s.write(ctx, func(w *writer) error {
		out, applyErr = nil, nil
		j, err := w.load(id)
		if err != nil {
			return err
		}
		out = j
		from := j.State
		if applyErr = apply(j); applyErr != nil {
			return nil // the transitions change nothing when they fail
		}
		return w.save(j, from)
	})
	if err != nil {
		return nil, err
	}
	return out, applyErr
}

// Cancel implements store.Store: store.ApplyCancel, or store.ApplyTerminate.
func (s *Store) Cancel(ctx context.Context, p store.CancelParams) (*job.Job, error) {
	now := p.Now.UTC()
	apply := store.ApplyCancel
	if p.Terminate {
		apply = store.ApplyTerminate
	}
	j, err := s.change(ctx, p.ID, func(j *job.Job) error { return apply(j, now) })
	if err == nil && j.State == job.StateRunning {
		s.cancelled(ctx)
	}
	return j, err
}

// Reschedule implements store.Store: store.ApplyReschedule.
func (s *Store) Reschedule(ctx context.Context, p store.RescheduleParams) (*job.Job, error) {
	runAt := p.RunAt
	if !runAt.IsZero() {
		runAt = runAt.UTC()
	}
	return s.change(ctx, p.ID, func(j *job.Job) error { return store.ApplyReschedule(j, runAt, p.Priority, p.Now) })
}

// RetryDead implements store.Store: store.ApplyRetryDead on the dead jobs
// p selects, in ID order, except those whose unique key another unfinished
// job holds.
func (s *Store) RetryDead(ctx context.Context, p store.RetryDeadParams) (int, error) {
	if err := p.Validate(); err != nil {
		return 0, err
	}
	now := p.Now.UTC()
	var n int
	err := s.write(ctx, func(w *writer) error {
		var dead []*job.Job
		var err error
		if p.All {
			dead, err = w.queryJobs(sqlDeadAll)
		} else {
			dead, err = w.queryJobs(sqlDeadIDs, idList(p.IDs))
		}
		if err != nil {
			return err
		}
		retried, err := w.retryDead(dead, now)
		n = len(retried)
		return err
	})
	if err != nil {
		return 0, err
	}
	return n, nil
}

// retryDead applies store.ApplyRetryDead to the dead jobs, in order, and
// saves them, except those whose unique key another unfinished job holds
// (an earlier one of dead, retried, included); it returns the jobs it
// retried, as it left them.
func (w *writer) retryDead(dead []*job.Job, now time.Time) ([]*job.Job, error) {
	var retried []*job.Job
	for _, j := range dead {
		if j.UniqueKey != "" {
			_, _, held, err := holder(w, j.UniqueKey)
			if err != nil {
				return nil, err
			}
			if held {
				continue // another unfinished job holds the key: stays dead
			}
		}
		if err := store.ApplyRetryDead(j, now); err != nil {
			return nil, err
		}
		if err := w.save(j, job.StateDead); err != nil {
			return nil, err
		}
		retried = append(retried, j)
	}
	return retried, nil
}

// purgeSQL returns the DELETE of the jobs of one state that p selects,
// returning their lanes (for lane_counts), and its arguments: margs[0],
// the state, is to be set; with KeepNewest, the arguments are margs twice
// and then KeepNewest.
func purgeSQL(p store.PurgeParams) (q string, margs []any) {
	match, margs := sqlFinished+` AND state = ?`, []any{nil}
	if !p.Before.IsZero() {
		match += ` AND finished_at < ?`
		margs = append(margs, store.UnixNanos(p.Before))
	}
	if len(p.IDs) > 0 {
		// +finished_at, +state: look the IDs up by primary key.
		match = `+state = ? AND id IN (SELECT value FROM json_each(?))`
		margs = []any{nil, idList(p.IDs)}
		if !p.Before.IsZero() {
			match += ` AND +finished_at < ?`
			margs = append(margs, store.UnixNanos(p.Before))
		}
	}
	q = `DELETE FROM jobs WHERE ` + match
	if p.KeepNewest > 0 {
		q += ` AND id NOT IN (SELECT id FROM jobs WHERE ` + match + ` ORDER BY finished_at DESC, id DESC LIMIT +?)`
	}
	return q + ` RETURNING queue, kind`, margs
}

// purge runs a statement of purgeSQL deleting jobs of state st, counts
// them and returns how many it deleted.
func (w *writer) purge(q string, st job.State, args []any) (int, error) {
	rows, err := w.query(q, args...)
	if err != nil {
		return 0, err
	}
	defer rows.Close()
	c := counter{d: w.req}
	defer c.flush()
	n := 0
	for rows.Next() {
		var queue, kind string
		if err := rows.Scan(&queue, &kind); err != nil {
			return 0, err
		}
		c.job(st, 0, queue, kind)
		n++
	}
	return n, rows.Err()
}

// Purge implements store.Store.
func (s *Store) Purge(ctx context.Context, p store.PurgeParams) (int, error) {
	if err := p.Validate(); err != nil {
		return 0, err
	}
	q, margs := purgeSQL(p)
	states := slices.Compact(slices.Sorted(slices.Values(p.States)))
	var n int
	err := s.write(ctx, func(w *writer) error {
		n = 0
		for _, st := range states {
			margs[0] = stateName(st)
			args := margs
			if p.KeepNewest > 0 {
				args = append(append(append([]any(nil), margs...), margs...), p.KeepNewest)
			}
			m, err := w.purge(q, st, args)
			if err != nil {
				return err
			}
			n += m
		}
		return nil
	})
	if err != nil {
		return 0, err
	}
	return n, nil
}
