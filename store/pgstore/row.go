package pgstore

import (
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/hopperq/hopper/job"
	"github.com/hopperq/hopper/store"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgtype"
)

// The stored forms of values. The database's encoding is its own: states
// by name (the job_state enum), times as timestamptz, and the JSON columns
// attempts and retry in the row structs below, never the public JSON of
// job.Attempt or backoff.Policy (which prints durations as strings for
// people), so that neither can change what the database holds.

// jobCols is the column list every job query selects, in scanJob's order.
// state is read as text: pgx need not know the enum type.
const jobCols = `id, state::text, queue, kind, priority, run_at, attempt, max_attempts, crashes,
	cancel_requested, created_at, started_at, finished_at, lease_until, worker, timeout_ns,
	unique_key, schedule, fire_time, last_error, args, result, retry, attempts, labels, flow_key,
	terminate_requested, claims`

// jobColsOf is jobCols qualified by a table alias.
func jobColsOf(alias string) string {
	cols := strings.Split(jobCols, ",")
	for i, c := range cols {
		cols[i] = alias + "." + strings.TrimSpace(c)
	}
	return strings.Join(cols, ", ")
}

// State conditions as the migrations write them in partial indexes. A
// query uses a partial index only if its WHERE implies the index's, so
// queries name the states as literals (a parameter would not do in a
// generic plan).
const (
	sqlWaitingTimed = `state IN ('scheduled', 'retrying')`
	sqlUnfinished   = `state IN ('scheduled', 'available', 'running', 'retrying')`
	sqlFinished     = `state IN ('completed', 'cancelled', 'dead')`
)

// stateLiteral is a state as an SQL literal; states come from a fixed set
// of names, so they are safe to write into SQL text.
func stateLiteral(st job.State) string { return "'" + st.String() + "'" }

// parseState reads a stored state.
func parseState(name string) (job.State, error) {
	st, err := job.ParseState(name)
	if err != nil {
		return 0, fmt.Errorf("stored state: %w", err)
	}
	return st, nil
}

// sqlAppendAttempts is the new value of the attempts column after
// appending the records in the SQL text expression recs (recordsText; NULL
// or empty appends nothing). It works on the column's text, so the stored
// bytes of earlier records never change.
func sqlAppendAttempts(col, recs string) string {
	return `CASE WHEN coalesce(` + recs + `, '') = '' THEN ` + col + `
		WHEN ` + col + ` IS NULL THEN ('[' || ` + recs + ` || ']')::json
		ELSE (left(rtrim(` + col + `::text), -1) || ',' || ` + recs + ` || ']')::json END`
}

// ts is a time as the store writes it: NULL for the zero time, otherwise
// truncated to the microseconds timestamptz keeps (pgx's binary encoding
// truncates, the text encoding of QueryExecModeExec would round: truncating
// first makes both the same).
func ts(t time.Time) pgtype.Timestamptz {
	if t.IsZero() {
		return pgtype.Timestamptz{}
	}
	return pgtype.Timestamptz{Time: t.Truncate(time.Microsecond), Valid: true}
}

// micro is t in UTC as the database keeps it: truncated to microseconds.
// The transitions applied in Go get their times through it, so that the
// jobs they return equal what they store.
func micro(t time.Time) time.Time {
	if t.IsZero() {
		return t
	}
	return t.Truncate(time.Microsecond).UTC()
}

// fromTS is the inverse of ts: NULL is the zero time; times are UTC.
func fromTS(t pgtype.Timestamptz) time.Time {
	if !t.Valid {
		return time.Time{}
	}
	return t.Time.UTC()
}

// scanJob reads one row selected with jobCols.
func scanJob(r pgx.Row) (*job.Job, error) {
	var (
		j                                        job.Job
		state                                    string
		runAt, created, started, finished, lease pgtype.Timestamptz
		fire                                     pgtype.Timestamptz
		worker, unique, schedule, labels         *string
		timeout                                  int64
		args, result, retry, attempts            []byte
		key                                      string
	)
	err := r.Scan(&j.ID, &state, &j.Queue, &j.Kind, &j.Priority, &runAt, &j.Attempt, &j.MaxAttempts, &j.Crashes,
		&j.CancelRequested, &created, &started, &finished, &lease, &worker, &timeout,
		&unique, &schedule, &fire, &j.LastError, &args, &result, &retry, &attempts, &labels, &key, &j.TerminateRequested, &j.Claims)
	if err != nil {
		return nil, err
	}
	if j.State, err = parseState(state); err != nil {
		return nil, fmt.Errorf("job %d: %w", j.ID, err)
	}
	j.RunAt, j.CreatedAt, j.StartedAt = fromTS(runAt), fromTS(created), fromTS(started)
	j.FinishedAt, j.LeaseUntil, j.FireTime = fromTS(finished), fromTS(lease), fromTS(fire)
	if worker != nil {
		j.Worker = *worker
	}
	if unique != nil {
		j.UniqueKey = *unique
	}
	j.Key = key
	if schedule != nil {
		j.Schedule = *schedule
	}
	j.Timeout = time.Duration(timeout)
	if len(args) > 0 {
		j.Args = json.RawMessage(args)
	}
	if len(result) > 0 {
		j.Result = json.RawMessage(result)
	}
	if j.Retry, err = store.DecodePolicy(retry); err != nil {
		return nil, fmt.Errorf("job %d: %w", j.ID, err)
	}
	if labels != nil {
		if j.Meta, j.Tags, err = store.DecodeLabels([]byte(*labels)); err != nil {
			return nil, fmt.Errorf("job %d: %w", j.ID, err)
		}
	}
	if len(attempts) > 0 {
		if j.Attempts, err = store.DecodeAttempts(attempts); err != nil {
			return nil, fmt.Errorf("job %d: %w", j.ID, err)
		}
	}
	return &j, nil
}

// scanJobs reads every row of rows (selected with jobCols) and closes it.
func scanJobs(rows pgx.Rows) ([]*job.Job, error) {
	defer rows.Close()
	var out []*job.Job
	for rows.Next() {
		j, err := scanJob(rows)
		if err != nil {
			return nil, err
		}
		out = append(out, j)
	}
	return out, rows.Err()
}
