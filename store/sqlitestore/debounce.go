package sqlitestore

import (
	"database/sql"
	"errors"

	"github.com/hopperq/hopper/job"
	"github.com/hopperq/hopper/store"
)

// Debounced enqueues. A call with a debounced job takes its jobs one at a
// time, in order, each through Enqueue's own statements for one job or,
// for a debounced job, through debounceRow: under SQLite's one writer the
// holder of a key cannot change between the look-up and the write.

const (
	sqlHolderJob = `SELECT ` + jobCols + ` FROM jobs WHERE unique_key = ? AND ` + sqlUnfinished
	sqlDebounce  = `UPDATE jobs SET args = ?, run_at = ?, state = ? WHERE id = ?`
	sqlTakeOver  = `UPDATE jobs SET unique_key = NULL WHERE id = ?`
)

// debounced reports whether a job of jobs has a Debounce.
func debounced(jobs []*job.Job) bool {
	for _, j := range jobs {
		if !j.Debounce.IsZero() {
			return true
		}
	}
	return false
}

// enqueueEach is enqueueRows for a call with debounced jobs: job by job.
func enqueueEach(q jobWriter, r *newRows) ([]store.EnqueueResult, error) {
	res := make([]store.EnqueueResult, len(r.jobs))
	for i, j := range r.jobs {
		one := &newRows{jobs: r.jobs[i : i+1], args: r.args[i*nInsertCols : (i+1)*nInsertCols], states: r.states[i : i+1]}
		if !j.Debounce.IsZero() {
			merged, ok, err := debounceRow(q, j)
			if err != nil {
				return nil, err
			}
			if ok {
				res[i] = merged
				continue
			}
		}
		got, err := enqueueBatch(q, one)
		if err != nil {
			return nil, err
		}
		res[i] = got[0]
	}
	return res, nil
}

// rowOf scans the first row of a query through a jobWriter, for scanJob.
type rowOf struct {
	q    jobWriter
	sql  string
	args []any
}

func (r rowOf) Scan(dest ...any) error { return r.q.scanRow(r.sql, r.args, dest...) }

// debounceRow applies the debounced job j to the holder of its key, if
// any: a waiting holder takes it in (store.ApplyDebounce) and ok is true;
// a running one gives its key up (store.TakeOverKey) and ok is false, as
// with no holder, for the caller to insert j.
func debounceRow(q jobWriter, j *job.Job) (res store.EnqueueResult, ok bool, err error) {
	h, err := scanJob(rowOf{q, sqlHolderJob, []any{j.UniqueKey}})
	if errors.Is(err, sql.ErrNoRows) {
		return res, false, nil
	}
	if err != nil {
		return res, false, err
	}
	if h.State == job.StateRunning {
		if err := store.TakeOverKey(h); err != nil {
			return res, false, err
		}
		return res, false, q.update(sqlTakeOver, int64(h.ID))
	}
	from := h.State
	if err := store.ApplyDebounce(h, j, j.CreatedAt); err != nil { // CreatedAt: the enqueue's time
		return res, false, err
	}
	if err := q.update(sqlDebounce, jsonText(h.Args), store.UnixNanos(h.RunAt), stateName(h.State), int64(h.ID)); err != nil {
		return res, false, err
	}
	q.counts().move(from, h.State, h.Queue, h.Kind, 1)
	if h.State == job.StateAvailable && from != job.StateAvailable && h.Key == "" {
		q.keylessAvailable(h.Queue)
	}
	return store.EnqueueResult{ID: h.ID, Debounced: true, State: h.State}, true, nil
}
