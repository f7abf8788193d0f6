package sqlitestore

import (
	"cmp"
	"context"
	"database/sql"
	"errors"
	"slices"

	"github.com/hopperq/hopper/job"
	"github.com/hopperq/hopper/store"
)

// The claim path, all index-driven (see plan_test.go):
//
//  1. promote: scheduled/retrying jobs due by now become available
//     (jobs_due, or jobs_due_queue for each queue of p.Queues);
//  2. for each queue — p.Queues, or else every queue with available jobs,
//     found by seeking jobs_claim from one queue name to the next — read
//     the first min(Limit, QueueLimits[q]) available jobs in claim order
//     (a range of jobs_claim);
//  3. merge those candidates by (priority, run_at, id), keep Limit;
//  4. one UPDATE … RETURNING moves them to running;
//  5. NextRunAt: the first entry of jobs_due (or of jobs_due_queue per queue).
//
// The cost is O(queues × Limit × log n), whatever the number of jobs.
const (
	sqlPromoteAll   = `UPDATE jobs SET state = 2 WHERE state IN (1, 4) AND run_at <= ?`
	sqlPromoteQueue = `UPDATE jobs SET state = 2 WHERE state IN (1, 4) AND queue = ? AND run_at <= ?`
	sqlNextQueue    = `SELECT queue FROM jobs WHERE state = 2 AND queue > ? ORDER BY queue LIMIT 1`
	sqlCandidates   = `SELECT id, priority, run_at FROM jobs WHERE state = 2 AND queue = ?
		ORDER BY priority, run_at, id LIMIT ?`
	sqlClaim = `UPDATE jobs SET state = 3, attempt = attempt + 1, started_at = ?, worker = ?,
		lease_until = ?, claimed_by = ?, cancel_requested = 0
		WHERE id IN (SELECT value FROM json_each(?)) AND state = 2
		RETURNING ` + jobCols
	sqlNextRunAll   = `SELECT min(run_at) FROM jobs WHERE state IN (1, 4)`
	sqlNextRunQueue = `SELECT min(run_at) FROM jobs WHERE state IN (1, 4) AND queue = ?`
)

type candidate struct {
	id, priority, runAt int64
}

func compareCandidates(a, b candidate) int {
	if c := cmp.Compare(a.priority, b.priority); c != 0 {
		return c
	}
	if c := cmp.Compare(a.runAt, b.runAt); c != 0 {
		return c
	}
	return cmp.Compare(a.id, b.id)
}

// Claim implements store.Store. It is one write transaction, so no job is
// claimed twice, even by several processes.
func (s *Store) Claim(ctx context.Context, p store.ClaimParams) (store.ClaimResult, error) {
	var res store.ClaimResult
	err := s.write(ctx, func(w *writer) (err error) {
		res, err = s.claim(w, p)
		return err
	})
	if err != nil {
		return store.ClaimResult{}, err
	}
	return res, nil
}

func (s *Store) claim(w *writer, p store.ClaimParams) (store.ClaimResult, error) {
	var res store.ClaimResult
	now := nanos(p.Now)
	queues := slices.Compact(slices.Sorted(slices.Values(p.Queues)))
	// 1. Promotion.
	if len(queues) == 0 {
		if _, err := w.exec(sqlPromoteAll, now); err != nil {
			return res, err
		}
	} else {
		for _, q := range queues {
			if _, err := w.exec(sqlPromoteQueue, q, now); err != nil {
				return res, err
			}
		}
	}
	// 2, 3. Candidates, in claim order.
	var cands []candidate
	add := func(q string) error {
		limit := p.Limit
		if ql, ok := p.QueueLimits[q]; ok {
			limit = min(limit, ql)
		}
		if limit <= 0 {
			return nil
		}
		rows, err := w.query(sqlCandidates, q, limit)
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			var c candidate
			if err := rows.Scan(&c.id, &c.priority, &c.runAt); err != nil {
				return err
			}
			cands = append(cands, c)
		}
		return rows.Err()
	}
	if p.Limit > 0 {
		if len(queues) > 0 {
			for _, q := range queues {
				if err := add(q); err != nil {
					return res, err
				}
			}
		} else {
			var q string
			for {
				err := w.scanRow(sqlNextQueue, []any{q}, &q)
				if errors.Is(err, sql.ErrNoRows) {
					break
				}
				if err != nil {
					return res, err
				}
				if err := add(q); err != nil {
					return res, err
				}
			}
		}
	}
	slices.SortFunc(cands, compareCandidates)
	cands = cands[:min(len(cands), max(p.Limit, 0))]
	// 4. Claim.
	if len(cands) > 0 {
		ids := make([]job.ID, len(cands))
		for i, c := range cands {
			ids[i] = job.ID(c.id)
		}
		jobs, err := w.queryJobs(sqlClaim, now, p.Worker, nanos(p.LeaseUntil), s.worker, idList(ids))
		if err != nil {
			return res, err
		}
		// RETURNING has no order: restore the claim order.
		order := make(map[job.ID]int, len(ids))
		for i, id := range ids {
			order[id] = i
		}
		slices.SortFunc(jobs, func(a, b *job.Job) int { return order[a.ID] - order[b.ID] })
		res.Jobs = jobs
	}
	// 5. When to ask again.
	next, err := nextRunAt(w, queues)
	if err != nil {
		return res, err
	}
	res.NextRunAt = fromNanos(next)
	return res, nil
}

// nextRunAt returns the earliest run-at of the scheduled and retrying jobs
// of queues (of all queues if none), 0 if there is none.
func nextRunAt(w *writer, queues []string) (int64, error) {
	var next *int64 // min() is NULL when no job waits
	if len(queues) == 0 {
		err := w.scanRow(sqlNextRunAll, nil, &next)
		if err != nil || next == nil {
			return 0, err
		}
		return *next, nil
	}
	var min int64
	for _, q := range queues {
		if err := w.scanRow(sqlNextRunQueue, []any{q}, &next); err != nil {
			return 0, err
		}
		if next != nil && (min == 0 || *next < min) {
			min = *next
		}
	}
	return min, nil
}

// sqlHeartbeat extends one lease.
const sqlHeartbeat = `UPDATE jobs SET lease_until = ? WHERE id = ? AND state = 3 AND worker = ?
	RETURNING cancel_requested`

// Heartbeat implements store.Store.
func (s *Store) Heartbeat(ctx context.Context, p store.HeartbeatParams) ([]job.ID, error) {
	lease := nanos(p.LeaseUntil)
	var cancelled []job.ID
	err := s.write(ctx, func(w *writer) error {
		cancelled = nil
		for _, id := range p.IDs {
			var c bool
			err := w.scanRow(sqlHeartbeat, []any{lease, int64(id), p.Worker}, &c)
			if errors.Is(err, sql.ErrNoRows) {
				continue
			}
			if err != nil {
				return err
			}
			if c {
				cancelled = append(cancelled, id)
			}
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return cancelled, nil
}
