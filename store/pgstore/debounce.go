package pgstore

import (
	"context"
	"errors"
	"fmt"

	"github.com/hopperq/hopper/job"
	"github.com/hopperq/hopper/store"
	"github.com/jackc/pgx/v5"
)

// Debounced enqueues. A call with a debounced job takes its jobs one at a
// time, in order, in one transaction. A debounced job locks the job holding
// its key (FOR UPDATE): a waiting holder takes it in (store.ApplyDebounce),
// a running one gives its key up (store.TakeOverKey) and the job is
// inserted. Two enqueues of one key never both insert: the unique index
// (jobs_unique) lets one INSERT through and makes the other wait for its
// commit and find the key held, and that one then looks the holder up
// again, locks it and merges into it. A claim skips a holder locked here
// (SKIP LOCKED), and a holder a claim locked first is seen running.

const (
	sqlHolderLock = `SELECT ` + jobCols + ` FROM {schema}.jobs WHERE unique_key = $1 AND ` + sqlUnfinished + ` FOR UPDATE`
	sqlDebounce   = `UPDATE {schema}.jobs SET args = NULLIF($2, '')::json, run_at = $3, state = $4::{schema}.job_state WHERE id = $1`
	sqlTakeOver   = `UPDATE {schema}.jobs SET unique_key = NULL WHERE id = $1`
)

// debounced reports whether a job of jobs has a Debounce.
func debounced(jobs []*job.Job) bool {
	for _, j := range jobs {
		if !j.Debounce.IsZero() {
			return true
		}
	}
	return false
}

// enqueueEach enqueues rows, some of them debounced, job by job in tx and
// returns their results and the floor keys of the jobs it made or left
// waiting. inApp says tx is the application's (EnqueueTx): the
// notifications are then sent in it; otherwise the caller sends them once
// tx has committed (notifyKeys).
func (s *Store) enqueueEach(ctx context.Context, tx pgx.Tx, rows *newRows, inApp bool) ([]store.EnqueueResult, map[string]floorKey, error) {
	mode := notifyNone
	if inApp {
		mode = notifyInTx
	}
	res := make([]store.EnqueueResult, len(rows.jobs))
	keys := make(map[string]floorKey)
	var merged []*job.Job
	for i, j := range rows.jobs {
		one, err := makeRows(rows.jobs[i : i+1])
		if err != nil {
			return nil, nil, err
		}
		if j.Debounce.IsZero() {
			r, err := s.insert(ctx, tx, one, mode)
			if err != nil {
				return nil, nil, err
			}
			res[i] = r[0]
			mergeKeys(keys, lowestKeys(one.jobs, one.states, insertedID(r)))
			continue
		}
		r, h, err := s.debounceOne(ctx, tx, one, mode)
		if err != nil {
			return nil, nil, err
		}
		res[i] = r
		if h != nil {
			merged = append(merged, h)
		} else {
			mergeKeys(keys, lowestKeys(one.jobs, one.states, func(int) int64 { return int64(r.ID) }))
		}
	}
	if len(merged) > 0 {
		mk := keysOf(merged)
		mergeKeys(keys, mk)
		if inApp {
			if _, err := tx.Exec(ctx, sqlNotify, s.channel, encodePayload(mk)); err != nil {
				return nil, nil, err
			}
			s.floors.lower(mk)
		}
	}
	return res, keys, nil
}

// debounceOne enqueues one, a debounced job, in tx: merged into the
// waiting job holding its key (returned as h, as it left it), or inserted,
// the running holder of the key, if any, giving it up.
func (s *Store) debounceOne(ctx context.Context, tx pgx.Tx, one *newRows, mode notifyMode) (res store.EnqueueResult, h *job.Job, err error) {
	j := one.jobs[0]
	now := micro(j.CreatedAt) // the enqueue's time
	for try := 0; try <= maxHolderRetries; try++ {
		h, err = scanJob(tx.QueryRow(ctx, s.q(sqlHolderLock), j.UniqueKey))
		switch {
		case errors.Is(err, pgx.ErrNoRows):
			h = nil
		case err != nil:
			return res, nil, err
		case h.State == job.StateRunning:
			if err := store.TakeOverKey(h); err != nil {
				return res, nil, err
			}
			if _, err := tx.Exec(ctx, s.q(sqlTakeOver), int64(h.ID)); err != nil {
				return res, nil, err
			}
			h = nil
		default:
			if err := store.ApplyDebounce(h, j, now); err != nil {
				return res, nil, err
			}
			h.RunAt = micro(h.RunAt)
			if _, err := tx.Exec(ctx, s.q(sqlDebounce), int64(h.ID), string(h.Args), ts(h.RunAt), h.State.String()); err != nil {
				return res, nil, err
			}
			return store.EnqueueResult{ID: h.ID, Debounced: true, State: h.State}, h, nil
		}
		r, err := s.insert(ctx, tx, one, mode)
		if err != nil {
			return res, nil, err
		}
		if !r[0].Duplicate {
			return r[0], nil, nil
		}
		// Another transaction inserted a holder and committed meanwhile:
		// merge into it.
	}
	return res, nil, fmt.Errorf("pgstore: enqueue: the debounce key %q kept changing hands: %w", j.UniqueKey, job.ErrConflict)
}
