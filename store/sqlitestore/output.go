package sqlitestore

import (
	"context"

	"github.com/hopperq/hopper/job"
	"github.com/hopperq/hopper/store"
)

// sqlKeepOutput records an attempt's output, replacing an earlier run's of
// the same attempt number; the job's schedule is read from its row.
//
//	?1 job  ?2 attempt  ?3 succeeded  ?4 finished at  ?5 stdout  ?6 size
//	?7 stderr  ?8 size  ?9 log  ?10 size
const sqlKeepOutput = `INSERT OR REPLACE INTO attempt_outputs (job_id, attempt, schedule, succeeded, finished_at,
		stdout, stdout_size, stderr, stderr_size, log, log_size)
	SELECT id, ?2, schedule, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10 FROM jobs WHERE id = ?1`

// keepOutputs records the outputs of the outcomes that applied (reached
// is not zero), in the transaction that applied them.
func (w *writer) keepOutputs(outcomes []store.Outcome, reached []job.State, now int64) error {
	for i, o := range outcomes {
		if o.Output == nil || reached[i] == 0 {
			continue
		}
		p := o.Output
		if _, err := w.exec(sqlKeepOutput, int64(o.ID), o.Attempt, reached[i] == job.StateCompleted, now,
			blob(p.Stdout), p.StdoutSize, blob(p.Stderr), p.StderrSize, blob(p.Log), p.LogSize); err != nil {
			return err
		}
	}
	return nil
}

// blob is b as a BLOB argument, NULL when empty.
func blob(b []byte) any {
	if len(b) == 0 {
		return nil
	}
	return b
}

// Outputs implements store.Store.
func (s *Store) Outputs(ctx context.Context, p store.OutputsParams) ([]*job.Output, error) {
	if err := s.errIfClosed(); err != nil {
		return nil, err
	}
	rows, err := s.rdb.QueryContext(ctx, `SELECT attempt, coalesce(schedule, ''), succeeded, finished_at,
			stdout, stdout_size, stderr, stderr_size, log, log_size
		FROM attempt_outputs WHERE job_id = ?1 AND (?2 <= 0 OR attempt = ?2) ORDER BY attempt`, int64(p.ID), p.Attempt)
	if err != nil {
		return nil, s.readErr(err)
	}
	defer rows.Close()
	var out []*job.Output
	for rows.Next() {
		var (
			att      int
			sched    string
			ok       bool
			finished int64
			pk       store.PackedOutput
		)
		if err := rows.Scan(&att, &sched, &ok, &finished, &pk.Stdout, &pk.StdoutSize, &pk.Stderr, &pk.StderrSize,
			&pk.Log, &pk.LogSize); err != nil {
			return nil, s.readErr(err)
		}
		o, err := pk.Unpack(p.ID, att)
		if err != nil {
			return nil, err
		}
		o.Schedule, o.Succeeded, o.FinishedAt = sched, ok, store.FromUnixNanos(finished)
		out = append(out, o)
	}
	if err := rows.Err(); err != nil {
		return nil, s.readErr(err)
	}
	return out, nil
}

// sqlPruneOutputs deletes the outputs of schedule ?1 beyond the newest ?2
// successes and ?3 failures, and those finished before ?4.
const sqlPruneOutputs = `DELETE FROM attempt_outputs WHERE rowid IN (
	SELECT rowid FROM (SELECT rowid, finished_at, succeeded,
			row_number() OVER (PARTITION BY succeeded ORDER BY finished_at DESC, job_id DESC, attempt DESC) AS n
		FROM attempt_outputs WHERE schedule = ?1)
	WHERE finished_at < ?4 OR (succeeded AND n > ?2) OR (NOT succeeded AND n > ?3))`

// PruneOutputs implements store.Store.
func (s *Store) PruneOutputs(ctx context.Context, p store.PruneOutputsParams) (int, error) {
	if err := p.Validate(); err != nil {
		return 0, err
	}
	if err := s.writable(); err != nil {
		return 0, err
	}
	cutoff := int64(0)
	if p.Keep.MaxAge > 0 {
		cutoff = store.UnixNanos(p.Now.Add(-p.Keep.MaxAge))
	}
	var n int64
	err := s.write(ctx, func(w *writer) error {
		var err error
		n, err = w.execN(sqlPruneOutputs, p.Schedule, p.Keep.Succeeded, p.Keep.Failed, cutoff)
		return err
	})
	return int(n), err
}
