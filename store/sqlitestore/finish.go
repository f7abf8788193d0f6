package sqlitestore

import (
	"cmp"
	"context"
	"database/sql"
	"errors"
	"slices"
	"strconv"
	"strings"

	"github.com/hopperq/hopper/job"
	"github.com/hopperq/hopper/store"
)

// finishSetClause is store.ApplyFinish in SQL: the SET clause that applies
// an outcome to the running job it is joined to, given the SQL expressions
// of the outcome's fields: st (the outcome's target state), run (its
// run-at), msg (its error), res (its result), rec (its attempt record as
// JSON) and now. Every expression reads the row as it was (SQLite
// evaluates all of a SET clause against the old row).
//
// The state reached (store.FinishState) is st, except that a job whose
// cancellation was requested ends cancelled unless the attempt succeeded;
// the record then names that state as its outcome.
//
// With st the literal sqlCompleted the state reached is known when the
// statement is built (a success wins over a requested cancel), and the
// clause is that case of the general one, without its CASEs: SQLite
// evaluates every CASE for each row, and the general form made the
// completion of a no-op job cost twice the plain form.
func finishSetClause(st, run, msg, res, rec, now string) string {
	if st == sqlCompleted {
		return `state = 'completed',
	worker = NULL, claimed_by = NULL, lease_until = 0,
	attempts = CASE WHEN attempts IS NULL THEN '[' || ` + rec + ` || ']'
		ELSE json_insert(attempts, '$[#]', json(` + rec + `)) END,
	last_error = '', result = ` + res + `, finished_at = ` + now + `, crashes = 0`
	}
	to := `(CASE WHEN cancel_requested != 0 AND ` + st + ` != 'completed' THEN 'cancelled' ELSE ` + st + ` END)`
	record := `(CASE WHEN ` + st + ` = ` + to + ` THEN ` + rec + ` ELSE json_set(` + rec + `, '$.outcome', ` + to + `) END)`
	return `state = ` + to + `,
	worker = NULL, claimed_by = NULL, lease_until = 0,
	attempts = CASE WHEN attempts IS NULL THEN '[' || ` + record + ` || ']'
		ELSE json_insert(attempts, '$[#]', json(` + record + `)) END,
	last_error = CASE WHEN ` + to + ` = 'completed' THEN '' WHEN ` + msg + ` = '' THEN last_error ELSE ` + msg + ` END,
	result = CASE WHEN ` + to + ` = 'completed' THEN ` + res + ` ELSE result END,
	finished_at = CASE WHEN ` + to + ` IN ('completed', 'cancelled', 'dead') THEN ` + now + ` ELSE finished_at END,
	crashes = CASE WHEN ` + to + ` = 'available' THEN crashes ELSE 0 END,
	run_at = CASE WHEN ` + to + ` IN ('retrying', 'scheduled') THEN ` + run + ` ELSE run_at END,
	attempt = CASE WHEN ` + to + ` IN ('available', 'scheduled') THEN attempt - 1 ELSE attempt END`
}

// sqlFinish applies one outcome, fenced by state, claim and attempt; the
// attempt record is appended to the JSON history by SQLite itself. It
// returns the state reached, the job's lane (for lane_counts) and its key
// (for the keyless hints).
//
//	?1 state  ?2 record (JSON)  ?3 error  ?4 result  ?5 now  ?6 run-at
//	?7 id     ?8 attempt        ?9 claim
var sqlFinish = `UPDATE jobs SET ` + finishSetClause("?1", "?6", "?3", "?4", "?2", "?5") + `
	WHERE id = ?7 AND state = 'running' AND claims = ?9 AND attempt = ?8
	RETURNING state, queue, kind, flow_key`

// finishSQL[n] applies n outcomes of a Finish call in one statement: the
// outcomes are a VALUES list of n rows (id, attempt, claim, state, run-at,
// error, result, record) joined to jobs by primary key, with the effects
// and the fence (state, claim, attempt) of sqlFinish; RETURNING tells which applied, the
// states they reached, their lanes and their keys. The IDs of one statement must be
// distinct (Finish falls back to sqlFinish otherwise): UPDATE … FROM would
// apply one arbitrary outcome of a job listed twice. A first attempt's history is built by concatenation (the
// record is compact JSON from encoding/json), sparing json_insert's parse.
const (
	nFinishCols   = 8
	maxFinishRows = 64
)

var finishSQL = finishSetSQL("(id, att, claim, st, run, err, res, rec)", nFinishCols, "o.st")

// finishDoneSQL[n] is finishSQL[n] for n outcomes that all completed (the
// common case): their rows are (id, attempt, claim, result, record).
var finishDoneSQL = finishSetSQL("(id, att, claim, res, rec)", nFinishDoneCols, sqlCompleted)

const (
	nFinishDoneCols = 5
	sqlCompleted    = `'completed'`
)

func finishSetSQL(cols string, ncols int, st string) (qs [maxFinishRows + 1]string) {
	row := "(" + strings.Repeat("?,", ncols-1) + "?)"
	for n := 1; n <= maxFinishRows; n++ {
		qs[n] = `WITH o` + cols + ` AS (VALUES ` + strings.Repeat(row+",", n-1) + row + `)
	UPDATE jobs SET ` + finishSetClause(st, "o.run", "o.err", "o.res", "o.rec", "?"+strconv.Itoa(n*ncols+1)) + `
	FROM o
	WHERE jobs.id = o.id AND jobs.state = 'running' AND jobs.claims = o.claim AND jobs.attempt = o.att
	RETURNING jobs.id, jobs.state, jobs.queue, jobs.kind, jobs.flow_key`
	}
	return qs
}

// Finish implements store.Store. An outcome whose target state the state
// machine forbids fails the whole call with a *job.TransitionError.
func (s *Store) Finish(ctx context.Context, p store.FinishParams) ([]job.State, error) {
	reached, apply, err := prepareFinish(p)
	if err != nil || apply == nil {
		return reached, err
	}
	if err := s.write(ctx, apply); err != nil {
		return nil, err
	}
	return reached, nil
}

// FinishClaim implements store.FinishClaimer: the finish and the claim in
// one write transaction, the claim after the finish.
func (s *Store) FinishClaim(ctx context.Context, f store.FinishParams, c store.ClaimParams) ([]job.State, store.ClaimResult, error) {
	filter, err := filterArgs(c.Queues, c.Kinds)
	if err != nil {
		return nil, store.ClaimResult{}, err
	}
	reached, apply, err := prepareFinish(f)
	if err != nil {
		return nil, store.ClaimResult{}, err
	}
	var res store.ClaimResult
	err = s.write(ctx, func(w *writer) (err error) {
		if apply != nil {
			if err := apply(w); err != nil {
				return err
			}
		}
		res, err = s.claim(w, c, filter)
		return err
	})
	if err != nil {
		return nil, store.ClaimResult{}, err
	}
	return reached, res, nil
}

// prepareFinish checks and encodes the outcomes of p and returns the
// slice of reached states the write fills and the write itself (nil when
// there is nothing to write).
func prepareFinish(p store.FinishParams) ([]job.State, func(w *writer) error, error) {
	records := make([]string, len(p.Outcomes))
	index := make(map[job.ID]int, len(p.Outcomes))
	distinct := true
	for i, o := range p.Outcomes {
		if err := job.CheckTransition(o.ID, job.StateRunning, o.State); err != nil {
			return nil, nil, err
		}
		rec, err := store.EncodeAttempt(o.Record)
		if err != nil {
			return nil, nil, job.Invalid("record", "job %d: %v", o.ID, err)
		}
		records[i] = rec
		if _, dup := index[o.ID]; dup {
			distinct = false
		}
		index[o.ID] = i
	}
	now := store.UnixNanos(p.Now)
	reached := make([]job.State, len(p.Outcomes))
	if len(p.Outcomes) == 0 {
		return reached, nil, nil
	}
	// The set-based statements' rows: completed outcomes for
	// finishDoneSQL, the others for finishSQL.
	var done, other []any
	if distinct && len(p.Outcomes) > 1 {
		done = make([]any, 0, len(p.Outcomes)*nFinishDoneCols) // most outcomes are successes
		for i, o := range p.Outcomes {
			if o.State == job.StateCompleted {
				done = append(done, int64(o.ID), o.Attempt, o.Claim, jsonText(o.Result), records[i])
			} else {
				other = append(other, int64(o.ID), o.Attempt, o.Claim, stateName(o.State), store.UnixNanos(o.RunAt), o.Error,
					jsonText(o.Result), records[i])
			}
		}
	}
	return reached, func(w *writer) error {
		clear(reached)
		if err := w.finish(p.Outcomes, records, done, other, index, reached, now); err != nil {
			return err
		}
		if err := w.holdKeys(p, reached); err != nil {
			return err
		}
		return w.keepOutputs(p.Outcomes, reached, now)
	}, nil
}

// finish applies the outcomes of a Finish call: by the set-based
// statements if their rows done and other were built, else one by one.
func (w *writer) finish(outcomes []store.Outcome, records []string, done, other []any, index map[job.ID]int,
	reached []job.State, now int64) error {
	{
		if len(done) > 0 || len(other) > 0 {
			var buf []any
			for _, set := range []struct {
				qs    *[maxFinishRows + 1]string
				args  []any
				ncols int
			}{{&finishDoneSQL, done, nFinishDoneCols}, {&finishSQL, other, nFinishCols}} {
				for start := 0; start < len(set.args); start += maxFinishRows * set.ncols {
					end := min(len(set.args), start+maxFinishRows*set.ncols)
					buf = append(append(buf[:0], set.args[start:end]...), now)
					if err := w.finishSet(set.qs[(end-start)/set.ncols], buf, index, reached); err != nil {
						return err
					}
				}
			}
			return nil
		}
		for i, o := range outcomes {
			var name, queue, kind, key string
			err := w.scanRow(sqlFinish, []any{stateName(o.State), records[i], o.Error, jsonText(o.Result),
				now, store.UnixNanos(o.RunAt), int64(o.ID), o.Attempt, o.Claim}, &name, &queue, &kind, &key)
			switch {
			case errors.Is(err, sql.ErrNoRows): // lease lost
			case err != nil:
				return err
			default:
				if reached[i], err = parseState(name); err != nil {
					return err
				}
				w.req.move(job.StateRunning, reached[i], queue, kind, 1)
				if reached[i] == job.StateAvailable && key == "" {
					w.keylessAvailable(queue)
				}
			}
		}
		return nil
	}
}

// finishSet runs q, one of finishSQL or finishDoneSQL, records the state
// each applied outcome reached and counts the moves (and the jobs without
// a key made available, for the keyless hints).
func (w *writer) finishSet(q string, args []any, index map[job.ID]int, reached []job.State) error {
	rows, err := w.query(q, args...)
	if err != nil {
		return err
	}
	defer rows.Close()
	c := counter{d: w.req}
	defer c.flush()
	for rows.Next() {
		var id int64
		var name, queue, kind, key string
		if err := rows.Scan(&id, &name, &queue, &kind, &key); err != nil {
			return err
		}
		st, err := parseState(name)
		if err != nil {
			return err
		}
		reached[index[job.ID(id)]] = st
		c.job(job.StateRunning, st, queue, kind)
		if st == job.StateAvailable && key == "" {
			w.keylessAvailable(queue)
		}
	}
	return rows.Err()
}

// Rescue implements store.Store. Before looking for expired leases it
// expires those of jobs claimed by Stores whose process has died (their
// lock file is not locked any more), and removes those lock files.
func (s *Store) Rescue(ctx context.Context, p store.RescueParams) ([]*job.Job, error) {
	if err := s.writable(); err != nil {
		return nil, err
	}
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

// sqlRescue selects the running jobs whose lease expired, with their last
// heart-beat after jobCols.
const sqlRescue = `SELECT ` + jobCols + `, heartbeat_at FROM jobs WHERE state = 'running' AND lease_until < ?`

// rescued is a job Rescue selected and when its worker last renewed its
// lease.
type rescued struct {
	j    *job.Job
	beat int64
}

// rescue applies store.ApplyRescue to the running jobs whose lease expired.
func rescue(w *writer, p store.RescueParams) ([]*job.Job, error) {
	rows, err := w.query(sqlRescue, store.UnixNanos(p.Now))
	if err != nil {
		return nil, err
	}
	var found []rescued
	for rows.Next() {
		var r rescued
		if r.j, err = scanJob(withBeat{rows, &r.beat}); err != nil {
			rows.Close()
			return nil, err
		}
		found = append(found, r)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return nil, err
	}
	slices.SortFunc(found, func(a, b rescued) int { return cmp.Compare(a.j.ID, b.j.ID) })
	now := p.Now.UTC()
	jobs := make([]*job.Job, len(found))
	for i, r := range found {
		if err := store.ApplyRescue(r.j, now, store.FromUnixNanos(r.beat), p.MaxCrashes); err != nil {
			return nil, err
		}
		if err := w.save(r.j, job.StateRunning); err != nil {
			return nil, err
		}
		jobs[i] = r.j
	}
	return jobs, nil
}

// withBeat scans a row of jobCols and then heartbeat_at, into beat.
type withBeat struct {
	scanner
	beat *int64
}

func (s withBeat) Scan(dest ...any) error { return s.scanner.Scan(append(dest, s.beat)...) }
