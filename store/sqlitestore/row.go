package sqlitestore

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/hopperq/hopper/backoff"
	"github.com/hopperq/hopper/job"
	"github.com/hopperq/hopper/store"
)

// jobCols is the column list every job query selects, in scanJob's order.
const jobCols = `id, kind, queue, args, priority, run_at, state, max_attempts, attempt,
	timeout, unique_key, retry, result, last_error, attempts, created_at, started_at,
	finished_at, worker, lease_until, crashes, cancel_requested, schedule, fire_time`

// The stored forms of values. The file's encoding is its own: states are
// stored by name, and the JSON columns (attempts, retry) use the row
// structs below, never the public JSON of job.Attempt or backoff.Policy
// (which prints durations as strings for people), so that neither can
// change what the file holds.

// stateName is how a state is stored: its name, never its number.
func stateName(s job.State) string { return s.String() }

// Conditions on state as the migrations write them in CHECK constraints
// and partial indexes: ORs, not IN lists (see 0002_states_lanes.sql). A
// query uses a partial index only if its WHERE implies the index's, so
// queries repeat these texts exactly.
const (
	sqlUnfinished = `(state = 'scheduled' OR state = 'available' OR state = 'running' OR state = 'retrying')`
	sqlFinished   = `(state = 'completed' OR state = 'cancelled' OR state = 'dead')`
)

// parseState reads a stored state.
func parseState(name string) (job.State, error) {
	st, err := job.ParseState(name)
	if err != nil {
		return 0, fmt.Errorf("stored state: %w", err)
	}
	return st, nil
}

// attemptRow is one entry of the attempts column, a JSON array of the
// attempt history, oldest first. These names and formats (durations in
// integer nanoseconds, started_at as RFC 3339 text) are what schema
// version 1 wrote; result is new in version 2.
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
	return attemptRow{Attempt: a.Attempt, StartedAt: a.StartedAt, Duration: int64(a.Duration), Worker: a.Worker,
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

// recordText encodes one attempt record for the attempts column.
func recordText(a job.Attempt) (string, error) {
	b, err := json.Marshal(toAttemptRow(a))
	if err != nil {
		return "", fmt.Errorf("encoding attempt record: %w", err)
	}
	return string(b), nil
}

// attemptsText encodes an attempt history, empty as NULL.
func attemptsText(as []job.Attempt) (any, error) {
	if len(as) == 0 {
		return nil, nil
	}
	rows := make([]attemptRow, len(as))
	for i, a := range as {
		rows[i] = toAttemptRow(a)
	}
	b, err := json.Marshal(rows)
	if err != nil {
		return nil, fmt.Errorf("encoding attempts: %w", err)
	}
	return string(b), nil
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

// policyRow is a retry policy in the retry columns: the names and formats
// (integer nanoseconds) schema version 1 wrote.
type policyRow struct {
	Strategy string  `json:"strategy,omitempty"`
	Base     int64   `json:"base,omitempty"`
	Max      int64   `json:"max,omitempty"`
	Factor   float64 `json:"factor,omitempty"`
	Jitter   string  `json:"jitter,omitempty"`
	Delays   []int64 `json:"delays,omitempty"`
}

// policyText encodes a retry policy, nil as NULL.
func policyText(p *backoff.Policy) (any, error) {
	if p == nil {
		return nil, nil
	}
	r := policyRow{Strategy: string(p.Strategy), Base: int64(p.Base), Max: int64(p.Max), Factor: p.Factor, Jitter: string(p.Jitter)}
	for _, d := range p.Delays {
		r.Delays = append(r.Delays, int64(d))
	}
	b, err := json.Marshal(r)
	if err != nil {
		return nil, fmt.Errorf("encoding retry policy: %w", err)
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

// nullStr stores "" as NULL.
func nullStr(s string) any {
	if s == "" {
		return nil
	}
	return s
}

// jsonText stores a JSON payload as TEXT, empty as NULL.
func jsonText(b []byte) any {
	if len(b) == 0 {
		return nil
	}
	return string(b)
}

// idList renders IDs as a JSON array for `IN (SELECT value FROM json_each(?))`.
func idList(ids []job.ID) string {
	var b strings.Builder
	b.Grow(len(ids)*8 + 2)
	b.WriteByte('[')
	for i, id := range ids {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(strconv.FormatInt(int64(id), 10))
	}
	b.WriteByte(']')
	return b.String()
}

// scanner is *sql.Row or *sql.Rows.
type scanner interface {
	Scan(dest ...any) error
}

// scanJob reads one row selected with jobCols.
func scanJob(r scanner) (*job.Job, error) {
	var (
		j                                 job.Job
		state                             string
		args, result, retry, attempts     []byte
		unique, worker, schedule          *string
		runAt, created, started, finished int64
		lease, fire, timeout, cancelReq   int64
	)
	err := r.Scan(&j.ID, &j.Kind, &j.Queue, &args, &j.Priority, &runAt, &state,
		&j.MaxAttempts, &j.Attempt, &timeout, &unique, &retry, &result, &j.LastError,
		&attempts, &created, &started, &finished, &worker, &lease, &j.Crashes,
		&cancelReq, &schedule, &fire)
	if err != nil {
		return nil, err
	}
	if j.State, err = parseState(state); err != nil {
		return nil, fmt.Errorf("job %d: %w", j.ID, err)
	}
	if len(args) > 0 {
		j.Args = json.RawMessage(args)
	}
	if len(result) > 0 {
		j.Result = json.RawMessage(result)
	}
	j.RunAt = store.FromUnixNanos(runAt)
	j.Timeout = time.Duration(timeout)
	if unique != nil {
		j.UniqueKey = *unique
	}
	if j.Retry, err = parsePolicy(retry); err != nil {
		return nil, fmt.Errorf("job %d: %w", j.ID, err)
	}
	if len(attempts) > 0 {
		if j.Attempts, err = parseAttempts(attempts); err != nil {
			return nil, fmt.Errorf("job %d: %w", j.ID, err)
		}
	}
	j.CreatedAt = store.FromUnixNanos(created)
	j.StartedAt = store.FromUnixNanos(started)
	j.FinishedAt = store.FromUnixNanos(finished)
	if worker != nil {
		j.Worker = *worker
	}
	j.LeaseUntil = store.FromUnixNanos(lease)
	j.CancelRequested = cancelReq != 0
	if schedule != nil {
		j.Schedule = *schedule
	}
	j.FireTime = store.FromUnixNanos(fire)
	return &j, nil
}
