package pgstore

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"time"

	"github.com/hopperq/hopper/job"
	"github.com/hopperq/hopper/store"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgtype"
)

// The transitions applied in Go (cancel, reschedule, retry from the DLQ,
// rescue, supersede) load their rows FOR UPDATE, in ID order, call the
// store.Apply… function and write the rows back with save: the rules live
// in package store only.

// sqlLoad selects and locks one job.
const sqlLoad = `SELECT ` + jobCols + ` FROM {schema}.jobs WHERE id = $1 FOR UPDATE`

// load reads and locks job id in tx.
func (s *Store) load(ctx context.Context, tx pgx.Tx, id job.ID) (*job.Job, error) {
	j, err := scanJob(tx.QueryRow(ctx, s.q(sqlLoad), int64(id)))
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, fmt.Errorf("job %d: %w", id, job.ErrNotFound)
	}
	return j, err
}

// sqlSave writes back the fields the store.Apply… transitions change, for
// a set of jobs locked by the transaction: $1 IDs, then one array per
// field; $7 holds the attempt records to append (recordsText, empty for
// none).
var sqlSave = `WITH v AS (SELECT * FROM unnest($1::bigint[], $2::text[], $3::timestamptz[], $4::bigint[], $5::int[],
		$6::text[], $7::text[], $8::timestamptz[], $9::timestamptz[], $10::text[], $11::timestamptz[], $12::int[],
		$13::bool[], $14::bool[]) AS v(id, st, run_at, priority, attempt, last_error, app, started_at, finished_at, worker,
		lease_until, crashes, cancel_requested, terminate_requested))
	UPDATE {schema}.jobs j SET state = v.st::{schema}.job_state, run_at = v.run_at, priority = v.priority,
		attempt = v.attempt, last_error = v.last_error, attempts = ` + sqlAppendAttempts("j.attempts", "v.app") + `,
		started_at = v.started_at, finished_at = v.finished_at, worker = NULLIF(v.worker, ''),
		lease_until = v.lease_until, crashes = v.crashes, cancel_requested = v.cancel_requested,
		terminate_requested = v.terminate_requested
	FROM v WHERE j.id = v.id`

// save writes jobs back in tx, in one statement; prev[i] is the length of
// job i's history when it was loaded (the records after it are appended).
func (s *Store) save(ctx context.Context, tx pgx.Tx, jobs []*job.Job, prev []int) error {
	if len(jobs) == 0 {
		return nil
	}
	n := len(jobs)
	var (
		ids                      = make([]int64, n)
		states, errs, apps, wrks = make([]string, n), make([]string, n), make([]string, n), make([]string, n)
		runAt, started, finished = make([]pgtype.Timestamptz, n), make([]pgtype.Timestamptz, n), make([]pgtype.Timestamptz, n)
		lease                    = make([]pgtype.Timestamptz, n)
		prios                    = make([]int64, n)
		atts, crashes            = make([]int32, n), make([]int32, n)
		cancels, kills           = make([]bool, n), make([]bool, n)
	)
	for i, j := range jobs {
		app, err := store.EncodeAttemptList(j.Attempts[prev[i]:])
		if err != nil {
			return err
		}
		ids[i], states[i], errs[i], apps[i], wrks[i] = int64(j.ID), j.State.String(), j.LastError, app, j.Worker
		runAt[i], started[i], finished[i], lease[i] = ts(j.RunAt), ts(j.StartedAt), ts(j.FinishedAt), ts(j.LeaseUntil)
		prios[i], atts[i], crashes[i], cancels[i] = int64(j.Priority), int32(j.Attempt), int32(j.Crashes), j.CancelRequested
		kills[i] = j.TerminateRequested
	}
	b := &pgx.Batch{}
	b.Queue(sqlNestedLoops)
	b.Queue(s.q(sqlSave), ids, states, runAt, prios, atts, errs, apps, started, finished, wrks, lease, crashes, cancels, kills)
	return tx.SendBatch(ctx, b).Close()
}

// change applies a transition to job id in a transaction of its own,
// saves it and returns it. If apply fails, nothing changes and the job is
// returned as it is, with apply's error.
func (s *Store) change(ctx context.Context, id job.ID, apply func(j *job.Job) error) (*job.Job, error) {
	if err := s.writable(); err != nil {
		return nil, err
	}
	var out *job.Job
	var applyErr error
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		j, err := s.load(ctx, tx, id)
		if err != nil {
			return err
		}
		out = j.Clone()
		prev := len(j.Attempts)
		if applyErr = apply(j); applyErr != nil {
			return nil // the transitions change nothing when they fail
		}
		out = j
		return s.save(ctx, tx, []*job.Job{j}, []int{prev})
	})
	if err != nil {
		return nil, s.translate(err)
	}
	if applyErr == nil && out.State.Waiting() {
		s.notifyKeys(keysOf([]*job.Job{out})) // available now, or waiting for another time
	}
	return out, applyErr
}

// Cancel implements store.Store: store.ApplyCancel, or store.ApplyTerminate.
func (s *Store) Cancel(ctx context.Context, p store.CancelParams) (*job.Job, error) {
	now := micro(p.Now)
	apply := store.ApplyCancel
	if p.Terminate {
		apply = store.ApplyTerminate
	}
	j, err := s.change(ctx, p.ID, func(j *job.Job) error { return apply(j, now) })
	if err == nil && j.State == job.StateRunning {
		s.cancelled(ctx)
	}
	return j, err
}

// Reschedule implements store.Store: store.ApplyReschedule. A job that
// becomes available, or gets an earlier run-at, wakes the listening
// Stores.
func (s *Store) Reschedule(ctx context.Context, p store.RescheduleParams) (*job.Job, error) {
	runAt := micro(p.RunAt)
	if err := job.CheckTime("run_at", p.RunAt); err != nil {
		// Checked before the transaction, so that an out-of-range time
		// never reaches the database (timestamptz would take it).
		j, gerr := s.Get(ctx, p.ID)
		if gerr != nil {
			return nil, gerr
		}
		return j, err
	}
	return s.change(ctx, p.ID, func(j *job.Job) error { return store.ApplyReschedule(j, runAt, p.Priority, p.Now) })
}

// retryBatch caps the dead jobs one transaction of RetryDead moves.
const retryBatch = 1000

// sqlDeadAll and sqlDeadIDs load the dead jobs of a RetryDead batch: all
// of them after $1; or those of the IDs $1, by primary key, after
// sqlNestedLoops (`state::text` keeps jobs_finished, whose ID comes after
// the finish time, out of reach: a generic plan read every dead job's
// entry to find a few; TestRetryDeadPlanStaleStatistics).
const (
	sqlDeadAll = `SELECT ` + jobCols + ` FROM {schema}.jobs WHERE state = 'dead' AND id > $1
		ORDER BY id LIMIT 1000 FOR UPDATE`
	sqlDeadIDs = `SELECT ` + jobCols + ` FROM {schema}.jobs WHERE id = ANY($1::bigint[]) AND state::text = 'dead'
		ORDER BY id FOR UPDATE`
	sqlHeldKeys = `SELECT unique_key FROM {schema}.jobs WHERE unique_key = ANY($1::text[]) AND ` + sqlUnfinished
	// sqlLockKeyed serialises the batches of RetryDead that hand out
	// unique keys (see RetryDead).
	sqlLockKeyed = `SELECT pg_advisory_xact_lock(hashtextextended('hopper retry keyed ' || $1::text, 0))`
)

// RetryDead implements store.Store: store.ApplyRetryDead on the dead jobs p
// selects, in ID order, except those whose unique key another unfinished
// job holds (of two dead jobs with one key, the lower ID moves). It works
// in transactions of retryBatch jobs, locking each batch's rows in ID
// order.
//
// Dead jobs may share a unique key (it binds unfinished jobs only). A
// batch that has keyed jobs takes a transaction advisory lock, the same
// for every such batch of the schema, before it looks for the keys'
// holders: without it, two concurrent calls moving dead jobs of the same
// keys both found them free, and the second one's UPDATE waited for the
// first one's index entries, then failed with a unique violation — or,
// with two keys taken in opposite orders, deadlocked. The rows are locked
// first and nothing waits for this lock while holding it, so it adds no
// deadlock. A job given a key by an Enqueue that committed meanwhile
// still fails the batch with a unique violation (a deadlock, if the
// Enqueue took several keys): the batch, rolled back, runs again, and
// then finds the key held.
func (s *Store) RetryDead(ctx context.Context, p store.RetryDeadParams) (int, error) {
	if err := p.Validate(); err != nil {
		return 0, err
	}
	if err := s.writable(); err != nil {
		return 0, err
	}
	now := micro(p.Now)
	ids := slices.Sorted(slices.Values(p.IDs))
	ids = slices.Compact(ids)
	taken := make(map[string]bool) // keys given to jobs retried by this call
	total := 0
	var after int64
	for {
		var chunk []int64
		if !p.All {
			chunk = make([]int64, min(len(ids), retryBatch))
			for i, id := range ids[:len(chunk)] {
				chunk[i] = int64(id)
			}
		}
		loaded, retried, err := s.retryOnce(ctx, now, taken, func(tx pgx.Tx) (pgx.Rows, error) {
			if p.All {
				return tx.Query(ctx, s.q(sqlDeadAll), after)
			}
			if _, err := tx.Exec(ctx, sqlNestedLoops); err != nil { // by primary key: sqlDeadIDs
				return nil, err
			}
			return tx.Query(ctx, s.q(sqlDeadIDs), chunk)
		})
		if err != nil {
			return total, err
		}
		if len(loaded) > 0 {
			after = int64(loaded[len(loaded)-1].ID)
		}
		total += len(retried)
		if p.All {
			if len(loaded) < retryBatch {
				return total, nil
			}
			continue
		}
		ids = ids[len(chunk):]
		if len(ids) == 0 {
			return total, nil
		}
	}
}

// retryOnce applies store.ApplyRetryDead, in one transaction, to the dead
// jobs load selects (jobCols, locked FOR UPDATE in ID order), except those
// whose unique key another unfinished job holds or taken lists (keys given
// by earlier batches of the same call); it adds the keys it gives to
// taken. It returns the jobs loaded and those retried, as it left them.
// A batch that meets a key conflict (see RetryDead) is rolled back and run
// again, up to maxHolderRetries times.
func (s *Store) retryOnce(ctx context.Context, now time.Time, taken map[string]bool,
	load func(tx pgx.Tx) (pgx.Rows, error)) (loaded, retried []*job.Job, err error) {
	for tries := 0; ; tries++ {
		give := make(map[string]bool) // keys this batch gives out
		err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
			loaded, retried = nil, nil
			rows, err := load(tx)
			if err != nil {
				return err
			}
			dead, err := scanJobs(rows)
			if err != nil {
				return err
			}
			loaded = dead
			var keys []string
			for _, j := range dead {
				if j.UniqueKey != "" {
					keys = append(keys, j.UniqueKey)
				}
			}
			held := make(map[string]bool)
			if len(keys) > 0 {
				if _, err := tx.Exec(ctx, sqlLockKeyed, s.schema); err != nil {
					return err
				}
				krows, err := tx.Query(ctx, s.q(sqlHeldKeys), keys)
				if err != nil {
					return err
				}
				for krows.Next() {
					var k string
					if err := krows.Scan(&k); err != nil {
						krows.Close()
						return err
					}
					held[k] = true
				}
				krows.Close()
				if err := krows.Err(); err != nil {
					return err
				}
			}
			for _, j := range dead {
				if k := j.UniqueKey; k != "" {
					if held[k] || taken[k] || give[k] {
						continue // another unfinished job holds the key: stays dead
					}
					give[k] = true
				}
				if err := store.ApplyRetryDead(j, now); err != nil {
					return err
				}
				retried = append(retried, j)
			}
			prev := make([]int, len(retried))
			for i, j := range retried {
				prev[i] = len(j.Attempts)
			}
			return s.save(ctx, tx, retried, prev)
		})
		if err != nil && keyConflict(err) && tries < maxHolderRetries {
			continue // rolled back: again, finding the key held
		}
		if err != nil {
			return nil, nil, s.translate(err)
		}
		maps.Copy(taken, give)
		if len(retried) > 0 {
			s.notify()
		}
		return loaded, retried, nil
	}
}

// keyConflict reports whether err is a unique violation of a key (jobs_unique)
// or a deadlock: what a transaction moving keyed jobs back to waiting may
// meet when an Enqueue of the same keys commits meanwhile.
func keyConflict(err error) bool {
	var pe *pgconn.PgError
	return errors.As(err, &pe) && (pe.Code == codeDeadlock || pe.Code == codeUniqueViolation && pe.ConstraintName == "jobs_unique")
}

// purgeBatch is how many jobs one DELETE of Purge removes; Purge repeats it
// until a batch comes back short, each in its own transaction, so that a
// large purge neither holds its locks nor grows one transaction for long.
const purgeBatch = 1000

// sqlPurgePlan fixes the plan of a purge batch's transaction (a pgx
// Batch's implicit one; set_config(…, true) ends with it): no bitmap
// scans, so that the batch reads jobs_finished in order and stops at
// purgeBatch rows. Without column statistics (autovacuum off: the
// self-vacuum does not ANALYZE) the planner expects a few hundred matching
// rows and chose a bitmap scan of all of them and a sort: measured in
// BenchmarkSoakSteady, 71,000 expired jobs read and sorted on disk for each
// batch of 1,000 (230 ms, against 6 ms in index order), so that a purge of
// 120,000 jobs took 11–16 s of a core, which the workers' commits and
// claims on the same machine waited for.
const sqlPurgePlan = `SELECT set_config('enable_bitmapscan', 'off', true)`

// sqlArgs numbers the parameters of a statement being built.
type sqlArgs []any

// add appends v and returns its placeholder.
func (a *sqlArgs) add(v any) string {
	*a = append(*a, v)
	return "$" + strconv.Itoa(len(*a))
}

// purgeMatch returns the condition selecting the jobs of state st that p
// selects (but KeepNewest), adding its arguments to a. The state is a
// literal, so that the planner uses jobs_finished.
func purgeMatch(st job.State, p store.PurgeParams, ids []int64, a *sqlArgs) string {
	match := `state = ` + stateLiteral(st)
	if !p.Before.IsZero() {
		match += ` AND finished_at < ` + a.add(ts(p.Before))
	}
	if len(ids) > 0 {
		match += ` AND id = ANY(` + a.add(ids) + `::bigint[])`
	}
	return match
}

// Purge implements store.Store. It deletes in batches of purgeBatch jobs,
// oldest first (jobs_finished order), skipping rows another transaction
// holds; it is not one atomic transition, which retention does not need.
// With KeepNewest it first finds the newest job to delete, per state, and
// deletes it and the jobs finished before it.
func (s *Store) Purge(ctx context.Context, p store.PurgeParams) (int, error) {
	if err := p.Validate(); err != nil {
		return 0, err
	}
	if err := s.writable(); err != nil {
		return 0, err
	}
	states := slices.Compact(slices.Sorted(slices.Values(p.States)))
	var ids []int64
	for _, id := range p.IDs {
		ids = append(ids, int64(id))
	}
	total := 0
	for _, st := range states {
		var a sqlArgs
		match := purgeMatch(st, p, ids, &a)
		if p.KeepNewest > 0 {
			var keepT pgtype.Timestamptz
			var keepID int64
			q := `SELECT finished_at, id FROM {schema}.jobs WHERE ` + match + `
				ORDER BY finished_at DESC, id DESC OFFSET ` + a.add(int64(p.KeepNewest)) + ` LIMIT 1`
			err := s.pool.QueryRow(ctx, s.q(q), a...).Scan(&keepT, &keepID)
			if errors.Is(err, pgx.ErrNoRows) {
				continue // no more than KeepNewest jobs
			}
			if err != nil {
				return total, s.translate(err)
			}
			a = a[:0]
			match = purgeMatch(st, p, ids, &a)
			match += ` AND (finished_at, id) <= (` + a.add(keepT) + `, ` + a.add(keepID) + `)`
		}
		// Each batch starts after the last job the previous one deleted
		// (from the front for the first): the index entries of the jobs
		// deleted stay until VACUUM removes them — for as long as any
		// older transaction is open — and a batch that started at the
		// front would read all of them again.
		n := len(a)
		del := `WITH d AS MATERIALIZED (SELECT id, finished_at FROM {schema}.jobs WHERE ` + match + `
				AND (finished_at, id) > ($` + strconv.Itoa(n+1) + `, $` + strconv.Itoa(n+2) + `)
				ORDER BY finished_at, id LIMIT ` + strconv.Itoa(purgeBatch) + ` FOR UPDATE SKIP LOCKED),
			x AS (DELETE FROM {schema}.jobs WHERE id = ANY(ARRAY(SELECT id FROM d)) RETURNING 1),
			l AS (SELECT finished_at, id FROM d ORDER BY finished_at DESC, id DESC LIMIT 1)
			SELECT (SELECT count(*) FROM x), (SELECT finished_at FROM l), (SELECT id FROM l)`
		after := []any{pgtype.Timestamptz{InfinityModifier: pgtype.NegativeInfinity, Valid: true}, int64(0)}
		for {
			deleted, err := s.purgeOnce(ctx, s.q(del), append(a, after...), after)
			if err != nil {
				return total, s.translate(err)
			}
			total += deleted
			if deleted < purgeBatch {
				break
			}
		}
	}
	return total, nil
}

// purgeOnce runs one purge batch, del with args a, in a transaction of its
// own under sqlPurgePlan; it returns how many jobs it deleted, and sets
// after to the key (finished-at, ID) of the last job it read.
func (s *Store) purgeOnce(ctx context.Context, del string, a sqlArgs, after []any) (int, error) {
	b := &pgx.Batch{}
	b.Queue(sqlPurgePlan)
	b.Queue(del, a...)
	br := s.pool.SendBatch(ctx, b)
	defer br.Close()
	if _, err := br.Exec(); err != nil {
		return 0, err
	}
	var (
		deleted int64
		lastT   pgtype.Timestamptz
		lastID  *int64
	)
	if err := br.QueryRow().Scan(&deleted, &lastT, &lastID); err != nil {
		return 0, err
	}
	if lastID != nil {
		after[0], after[1] = lastT, *lastID
	}
	return int(deleted), br.Close()
}
