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
	finished_at, worker, lease_until, crashes, cancel_requested, schedule, fire_time, labels, flow_key,
	terminate_requested, claims`

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

// attemptsText encodes an attempt history for the attempts column, empty
// as NULL.
func attemptsText(as []job.Attempt) (any, error) {
	s, err := store.EncodeAttemptList(as)
	if s == "" || err != nil {
		return nil, err
	}
	return "[" + s + "]", nil
}

// policyText encodes a retry policy for the retry columns, nil as NULL.
func policyText(p *backoff.Policy) (any, error) {
	s, err := store.EncodePolicy(p)
	return nullStr(s), err
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
	var row jobRow
	j := &row.j
	err := r.Scan(&j.ID, &j.Kind, &j.Queue, &row.args, &j.Priority, &row.runAt, &row.state,
		&j.MaxAttempts, &j.Attempt, &row.timeout, &row.unique, &row.retry, &row.result, &j.LastError,
		&row.attempts, &row.created, &row.started, &row.finished, &row.worker, &row.lease, &j.Crashes,
		&row.cancelReq, &row.schedule, &row.fire, &row.labels, &row.key, &row.terminateReq, &j.Claims)
	if err != nil {
		return nil, err
	}
	return row.job()
}

// claimedCols is jobCols without the columns a claim sets to values it
// knows (sqlClaimSet: state, started_at, worker, lease_until,
// cancel_requested, terminate_requested), in scanClaimed's order. Each column read costs the
// driver two calls, each behind the connection's mutex: returning whole
// rows cost the writer about half as much again as the claim's row writes
// (performance.md, "The writer's floor").
const claimedCols = `id, kind, queue, args, priority, run_at, max_attempts, attempt,
	timeout, unique_key, retry, result, last_error, attempts, created_at,
	finished_at, crashes, schedule, fire_time, labels, flow_key, claims`

// scanClaimed reads one row a claim returned (claimedCols): a job it made
// running at now for worker, leased until lease.
func scanClaimed(r scanner, now int64, worker string, lease int64) (*job.Job, error) {
	row := jobRow{state: stateName(job.StateRunning), started: now, worker: &worker, lease: lease}
	j := &row.j
	err := r.Scan(&j.ID, &j.Kind, &j.Queue, &row.args, &j.Priority, &row.runAt,
		&j.MaxAttempts, &j.Attempt, &row.timeout, &row.unique, &row.retry, &row.result, &j.LastError,
		&row.attempts, &row.created, &row.finished, &j.Crashes, &row.schedule, &row.fire, &row.labels, &row.key, &j.Claims)
	if err != nil {
		return nil, err
	}
	return row.job()
}

// jobRow is a job row's columns as scanned.
type jobRow struct {
	j                                 job.Job
	state                             string
	args, result, retry, attempts     []byte
	labels                            []byte
	unique, worker, schedule          *string
	key                               string
	runAt, created, started, finished int64
	lease, fire, timeout, cancelReq   int64
	terminateReq                      int64
}

// job decodes the row.
func (r *jobRow) job() (*job.Job, error) {
	j := &r.j
	var err error
	if j.State, err = parseState(r.state); err != nil {
		return nil, fmt.Errorf("job %d: %w", j.ID, err)
	}
	if len(r.args) > 0 {
		j.Args = json.RawMessage(r.args)
	}
	if len(r.result) > 0 {
		j.Result = json.RawMessage(r.result)
	}
	j.RunAt = store.FromUnixNanos(r.runAt)
	j.Timeout = time.Duration(r.timeout)
	if r.unique != nil {
		j.UniqueKey = *r.unique
	}
	j.Key = r.key
	if j.Retry, err = store.DecodePolicy(r.retry); err != nil {
		return nil, fmt.Errorf("job %d: %w", j.ID, err)
	}
	if len(r.attempts) > 0 {
		if j.Attempts, err = store.DecodeAttempts(r.attempts); err != nil {
			return nil, fmt.Errorf("job %d: %w", j.ID, err)
		}
	}
	j.CreatedAt = store.FromUnixNanos(r.created)
	j.StartedAt = store.FromUnixNanos(r.started)
	j.FinishedAt = store.FromUnixNanos(r.finished)
	if r.worker != nil {
		j.Worker = *r.worker
	}
	j.LeaseUntil = store.FromUnixNanos(r.lease)
	j.CancelRequested = r.cancelReq != 0
	j.TerminateRequested = r.terminateReq != 0
	if r.schedule != nil {
		j.Schedule = *r.schedule
	}
	j.FireTime = store.FromUnixNanos(r.fire)
	if j.Meta, j.Tags, err = store.DecodeLabels(r.labels); err != nil {
		return nil, fmt.Errorf("job %d: %w", j.ID, err)
	}
	return j, nil
}
