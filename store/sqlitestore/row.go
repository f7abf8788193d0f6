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
	if j.Retry, err = store.DecodePolicy(retry); err != nil {
		return nil, fmt.Errorf("job %d: %w", j.ID, err)
	}
	if len(attempts) > 0 {
		if j.Attempts, err = store.DecodeAttempts(attempts); err != nil {
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
