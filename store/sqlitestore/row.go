package sqlitestore

import (
	"encoding/json"
	"fmt"
	"github.com/hopperq/hopper/store"
	"strconv"
	"strings"
	"time"

	"github.com/hopperq/hopper/backoff"
	"github.com/hopperq/hopper/job"
)

// jobCols is the column list every job query selects, in scanJob's order.
const jobCols = `id, kind, queue, args, priority, run_at, state, max_attempts, attempt,
	timeout, unique_key, retry, result, last_error, attempts, created_at, started_at,
	finished_at, worker, lease_until, crashes, cancel_requested, schedule, fire_time`

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

// policyText encodes a retry policy, nil as NULL.
func policyText(p *backoff.Policy) (any, error) {
	if p == nil {
		return nil, nil
	}
	b, err := json.Marshal(p)
	if err != nil {
		return nil, fmt.Errorf("encoding retry policy: %w", err)
	}
	return string(b), nil
}

// attemptsText encodes an attempt history, empty as NULL.
func attemptsText(a []job.Attempt) (any, error) {
	if len(a) == 0 {
		return nil, nil
	}
	b, err := json.Marshal(a)
	if err != nil {
		return nil, fmt.Errorf("encoding attempts: %w", err)
	}
	return string(b), nil
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
		j                                      job.Job
		args, result, retry, attempts          []byte
		unique, worker, schedule               *string
		runAt, created, started, finished      int64
		lease, fire, timeout, state, cancelReq int64
	)
	err := r.Scan(&j.ID, &j.Kind, &j.Queue, &args, &j.Priority, &runAt, &state,
		&j.MaxAttempts, &j.Attempt, &timeout, &unique, &retry, &result, &j.LastError,
		&attempts, &created, &started, &finished, &worker, &lease, &j.Crashes,
		&cancelReq, &schedule, &fire)
	if err != nil {
		return nil, err
	}
	if len(args) > 0 {
		j.Args = json.RawMessage(args)
	}
	if len(result) > 0 {
		j.Result = json.RawMessage(result)
	}
	j.RunAt = store.FromUnixNanos(runAt)
	j.State = job.State(state)
	j.Timeout = time.Duration(timeout)
	if unique != nil {
		j.UniqueKey = *unique
	}
	if len(retry) > 0 {
		j.Retry = new(backoff.Policy)
		if err := json.Unmarshal(retry, j.Retry); err != nil {
			return nil, fmt.Errorf("job %d: decoding retry policy: %w", j.ID, err)
		}
	}
	if len(attempts) > 0 {
		if err := json.Unmarshal(attempts, &j.Attempts); err != nil {
			return nil, fmt.Errorf("job %d: decoding attempts: %w", j.ID, err)
		}
		for i := range j.Attempts {
			if a := &j.Attempts[i]; !a.StartedAt.IsZero() {
				a.StartedAt = a.StartedAt.UTC()
			}
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
