package sqlitestore

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/hopperq/hopper/job"
	"github.com/hopperq/hopper/store"
)

// sqlFinish applies one outcome, fenced by state and attempt; the attempt
// record is appended to the JSON history by SQLite itself.
//
//	?1 state  ?2 record (JSON)  ?3 error  ?4 result  ?5 now  ?6 run-at
//	?7 id     ?8 attempt
const sqlFinish = `UPDATE jobs SET
	state = ?1,
	worker = NULL, claimed_by = NULL, lease_until = 0,
	attempts = json_insert(coalesce(attempts, '[]'), '$[#]', json(?2)),
	last_error = CASE WHEN ?3 = '' THEN last_error ELSE ?3 END,
	result = CASE WHEN ?1 = 5 THEN ?4 ELSE result END,
	finished_at = CASE WHEN ?1 IN (5, 6, 7) THEN ?5 ELSE finished_at END,
	crashes = CASE WHEN ?1 = 2 THEN crashes ELSE 0 END,
	run_at = CASE WHEN ?1 = 4 THEN ?6 ELSE run_at END,
	attempt = CASE WHEN ?1 = 2 THEN attempt - 1 ELSE attempt END
	WHERE id = ?7 AND state = 3 AND attempt = ?8`

// finishSQL[n] applies n outcomes of a Finish call in one statement: the
// outcomes are a VALUES list of n rows (id, attempt, state, run-at, error,
// result, record) joined to jobs by primary key, with the effects and the
// fence (state, attempt) of sqlFinish; RETURNING tells which applied. The
// IDs of one statement must be distinct (Finish falls back to sqlFinish
// otherwise): UPDATE … FROM would apply one arbitrary outcome of a job
// listed twice. A first attempt's history is built by concatenation (the
// record is compact JSON from encoding/json), sparing json_insert's parse.
const (
	nFinishCols   = 7
	maxFinishRows = 64
)

var finishSQL = func() (qs [maxFinishRows + 1]string) {
	row := "(" + strings.Repeat("?,", nFinishCols-1) + "?)"
	for n := 1; n <= maxFinishRows; n++ {
		qs[n] = `WITH o(id, att, st, run, err, res, rec) AS (VALUES ` + strings.Repeat(row+",", n-1) + row + `)
	UPDATE jobs SET
	state = o.st,
	worker = NULL, claimed_by = NULL, lease_until = 0,
	attempts = CASE WHEN attempts IS NULL THEN '[' || o.rec || ']'
		ELSE json_insert(attempts, '$[#]', json(o.rec)) END,
	last_error = CASE WHEN o.err = '' THEN last_error ELSE o.err END,
	result = CASE WHEN o.st = 5 THEN o.res ELSE result END,
	finished_at = CASE WHEN o.st IN (5, 6, 7) THEN ?` + strconv.Itoa(n*nFinishCols+1) + ` ELSE finished_at END,
	crashes = CASE WHEN o.st = 2 THEN crashes ELSE 0 END,
	run_at = CASE WHEN o.st = 4 THEN o.run ELSE run_at END,
	attempt = CASE WHEN o.st = 2 THEN attempt - 1 ELSE attempt END
	FROM o
	WHERE jobs.id = o.id AND jobs.state = 3 AND jobs.attempt = o.att
	RETURNING jobs.id`
	}
	return qs
}()

// Finish implements store.Store. An outcome whose target state the state
// machine forbids fails the whole call with a *job.TransitionError.
func (s *Store) Finish(ctx context.Context, p store.FinishParams) ([]bool, error) {
	records := make([]string, len(p.Outcomes))
	index := make(map[job.ID]int, len(p.Outcomes))
	distinct := true
	for i, o := range p.Outcomes {
		if err := job.CheckTransition(o.ID, job.StateRunning, o.State); err != nil {
			return nil, err
		}
		b, err := json.Marshal(o.Record)
		if err != nil {
			return nil, fmt.Errorf("job %d: encoding attempt record: %w", o.ID, err)
		}
		records[i] = string(b)
		if _, dup := index[o.ID]; dup {
			distinct = false
		}
		index[o.ID] = i
	}
	now := store.UnixNanos(p.Now)
	applied := make([]bool, len(p.Outcomes))
	if len(p.Outcomes) == 0 {
		return applied, nil
	}
	var args []any // nFinishCols per outcome, for finishSQL
	if distinct && len(p.Outcomes) > 1 {
		args = make([]any, 0, len(p.Outcomes)*nFinishCols)
		for i, o := range p.Outcomes {
			args = append(args, int64(o.ID), o.Attempt, int64(o.State), store.UnixNanos(o.RunAt), o.Error,
				jsonText(o.Result), records[i])
		}
	}
	err := s.write(ctx, func(w *writer) error {
		clear(applied)
		if args != nil {
			var buf []any
			for start := 0; start < len(p.Outcomes); start += maxFinishRows {
				k := min(len(p.Outcomes)-start, maxFinishRows)
				buf = append(append(buf[:0], args[start*nFinishCols:(start+k)*nFinishCols]...), now)
				if err := w.finishSet(k, buf, index, applied); err != nil {
					return err
				}
			}
			return nil
		}
		for i, o := range p.Outcomes {
			n, err := w.execN(sqlFinish, int64(o.State), records[i], o.Error, jsonText(o.Result),
				now, store.UnixNanos(o.RunAt), int64(o.ID), o.Attempt)
			if err != nil {
				return err
			}
			applied[i] = n > 0
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return applied, nil
}

// finishSet runs finishSQL[k] and marks the outcomes that applied.
func (w *writer) finishSet(k int, args []any, index map[job.ID]int, applied []bool) error {
	rows, err := w.query(finishSQL[k], args...)
	if err != nil {
		return err
	}
	defer rows.Close()
	for rows.Next() {
		var id int64
		if err := rows.Scan(&id); err != nil {
			return err
		}
		applied[index[job.ID(id)]] = true
	}
	return rows.Err()
}

// Rescue implements store.Store. Before looking for expired leases it
// expires those of jobs claimed by Stores whose process has died (their
// lock file is not locked any more), and removes those lock files.
func (s *Store) Rescue(ctx context.Context, p store.RescueParams) ([]*job.Job, error) {
	stale := findStale(s.lockDir(), s.worker)
	var out []*job.Job
	err := s.write(ctx, func(w *writer) error {
		if err := expireWorkers(w, workersOf(stale)); err != nil {
			return err
		}
		var err error
		out, err = rescue(w, p)
		return err
	})
	releaseStale(stale, err == nil)
	if err != nil {
		return nil, err
	}
	return out, nil
}

// sqlRescue selects the running jobs whose lease expired.
const sqlRescue = `SELECT ` + jobCols + ` FROM jobs WHERE state = 3 AND lease_until < ?`

func rescue(w *writer, p store.RescueParams) ([]*job.Job, error) {
	jobs, err := w.queryJobs(sqlRescue, store.UnixNanos(p.Now))
	if err != nil {
		return nil, err
	}
	slices.SortFunc(jobs, func(a, b *job.Job) int { return cmp.Compare(a.ID, b.ID) })
	now := p.Now.UTC()
	for _, j := range jobs {
		j.Crashes++
		j.Attempts = append(j.Attempts, job.Attempt{
			Attempt:   j.Attempt,
			StartedAt: j.StartedAt,
			Duration:  now.Sub(j.StartedAt),
			Worker:    j.Worker,
			Outcome:   job.OutcomeInterrupted,
			Error:     "worker lost: lease expired",
		})
		j.Worker, j.LeaseUntil = "", time.Time{}
		switch {
		case p.MaxCrashes > 0 && j.Crashes >= p.MaxCrashes:
			j.State, j.FinishedAt = job.StateDead, now
			j.LastError = fmt.Sprintf("poison pill: the worker died %d times in a row running this job", j.Crashes)
		case j.Attempt >= j.MaxAttempts:
			j.State, j.FinishedAt = job.StateDead, now
			j.LastError = fmt.Sprintf("attempts exhausted: the worker died during attempt %d of %d", j.Attempt, j.MaxAttempts)
		default:
			j.State, j.RunAt = job.StateAvailable, now
		}
		if err := w.save(j); err != nil {
			return nil, err
		}
	}
	return jobs, nil
}
