package pgstore

import (
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/hopperq/hopper/backoff"
	"github.com/hopperq/hopper/job"
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
	unique_key, schedule, fire_time, last_error, args, result, retry, attempts`

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

// attemptRow is one entry of the attempts column, a JSON array of the
// attempt history, oldest first: durations in integer nanoseconds,
// started_at as RFC 3339 text.
type attemptRow struct {
	Attempt   int             `json:"attempt"`
	StartedAt time.Time       `json:"started_at"`
	Duration  int64           `json:"duration"`
	Worker    string          `json:"worker,omitempty"`
	Outcome   string          `json:"outcome"`
	Error     string          `json:"error,omitempty"`
	Backoff   int64           `json:"backoff,omitempty"`
	Result    json.RawMessage `json:"result,omitempty"`
}

func toAttemptRow(a job.Attempt) attemptRow {
	return attemptRow{Attempt: a.Attempt, StartedAt: a.StartedAt.UTC(), Duration: int64(a.Duration), Worker: a.Worker,
		Outcome: a.Outcome, Error: a.Error, Backoff: int64(a.Backoff), Result: a.Result}
}

func (r attemptRow) attempt() job.Attempt {
	a := job.Attempt{Attempt: r.Attempt, StartedAt: r.StartedAt, Duration: time.Duration(r.Duration), Worker: r.Worker,
		Outcome: r.Outcome, Error: r.Error, Backoff: time.Duration(r.Backoff), Result: r.Result}
	if !a.StartedAt.IsZero() {
		a.StartedAt = a.StartedAt.UTC()
	}
	return a
}

// recordText encodes one attempt record, an element of the attempts array.
func recordText(a job.Attempt) (string, error) {
	b, err := json.Marshal(toAttemptRow(a))
	if err != nil {
		return "", fmt.Errorf("encoding attempt record: %w", err)
	}
	return string(b), nil
}

// recordsText encodes attempt records as the elements of a JSON array,
// comma-separated, without the brackets: what an append adds to the
// attempts column. Empty for none.
func recordsText(as []job.Attempt) (string, error) {
	var b strings.Builder
	for i, a := range as {
		t, err := recordText(a)
		if err != nil {
			return "", err
		}
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(t)
	}
	return b.String(), nil
}

func parseAttempts(b []byte) ([]job.Attempt, error) {
	var rows []attemptRow
	if err := json.Unmarshal(b, &rows); err != nil {
		return nil, fmt.Errorf("decoding attempts: %w", err)
	}
	as := make([]job.Attempt, len(rows))
	for i, r := range rows {
		as[i] = r.attempt()
	}
	return as, nil
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

// policyRow is a retry policy in the retry columns, durations in integer
// nanoseconds.
type policyRow struct {
	Strategy string  `json:"strategy,omitempty"`
	Base     int64   `json:"base,omitempty"`
	Max      int64   `json:"max,omitempty"`
	Factor   float64 `json:"factor,omitempty"`
	Jitter   string  `json:"jitter,omitempty"`
	Delays   []int64 `json:"delays,omitempty"`
}

// policyText encodes a retry policy, nil as "" (NULL).
func policyText(p *backoff.Policy) (string, error) {
	if p == nil {
		return "", nil
	}
	r := policyRow{Strategy: string(p.Strategy), Base: int64(p.Base), Max: int64(p.Max), Factor: p.Factor, Jitter: string(p.Jitter)}
	for _, d := range p.Delays {
		r.Delays = append(r.Delays, int64(d))
	}
	b, err := json.Marshal(r)
	if err != nil {
		return "", fmt.Errorf("encoding retry policy: %w", err)
	}
	return string(b), nil
}

// parsePolicy decodes a retry policy; empty is nil.
func parsePolicy(b []byte) (*backoff.Policy, error) {
	if len(b) == 0 {
		return nil, nil
	}
	var r policyRow
	if err := json.Unmarshal(b, &r); err != nil {
		return nil, fmt.Errorf("decoding retry policy: %w", err)
	}
	p := &backoff.Policy{Strategy: backoff.Strategy(r.Strategy), Base: time.Duration(r.Base), Max: time.Duration(r.Max),
		Factor: r.Factor, Jitter: backoff.Jitter(r.Jitter)}
	for _, d := range r.Delays {
		p.Delays = append(p.Delays, time.Duration(d))
	}
	return p, nil
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
		worker, unique, schedule                 *string
		timeout                                  int64
		args, result, retry, attempts            []byte
	)
	err := r.Scan(&j.ID, &state, &j.Queue, &j.Kind, &j.Priority, &runAt, &j.Attempt, &j.MaxAttempts, &j.Crashes,
		&j.CancelRequested, &created, &started, &finished, &lease, &worker, &timeout,
		&unique, &schedule, &fire, &j.LastError, &args, &result, &retry, &attempts)
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
	if j.Retry, err = parsePolicy(retry); err != nil {
		return nil, fmt.Errorf("job %d: %w", j.ID, err)
	}
	if len(attempts) > 0 {
		if j.Attempts, err = parseAttempts(attempts); err != nil {
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
