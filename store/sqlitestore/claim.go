package sqlitestore

import (
	"cmp"
	"context"
	"slices"
	"strconv"
	"strings"

	"github.com/hopperq/hopper/job"
	"github.com/hopperq/hopper/store"
)

// The claim path, all index-driven (see plan_test.go):
//
//  1. NextRunAt: the first entry of jobs_due (or of jobs_due_queue per
//     queue); if it is due, promote: scheduled/retrying jobs due by now
//     become available (jobs_due, or jobs_due_queue for each queue of
//     p.Queues), and read NextRunAt again. Most claims find nothing due and
//     skip the promotion;
//  2. the queues: p.Queues, or else every queue with available jobs, read
//     from queue_counts;
//  3. one UPDATE … RETURNING moves to running the first Limit available
//     jobs in claim order, merged from the first min(Limit, QueueLimits[q])
//     of each queue (a range of jobs_claim per queue, one UNION ALL arm per
//     queue, claimSQL).
//
// With more than maxClaimArms queues, 3 reads the candidates of each queue
// with one statement per queue, merges them in Go, and claims them by ID.
// The cost is O(queues × Limit × log n), whatever the number of jobs.
const (
	sqlPromoteAll   = `UPDATE jobs SET state = 2 WHERE state IN (1, 4) AND run_at <= ?`
	sqlPromoteQueue = `UPDATE jobs SET state = 2 WHERE state IN (1, 4) AND queue = ? AND run_at <= ?`
	sqlReadyQueues  = `SELECT queue FROM queue_counts WHERE state = 2 AND n > 0`
	sqlCandidates   = `SELECT id, priority, run_at FROM jobs WHERE state = 2 AND queue = ?
		ORDER BY priority, run_at, id LIMIT +?`
	sqlClaimSet = `UPDATE jobs SET state = 3, attempt = attempt + 1, started_at = ?1, worker = ?2,
		lease_until = ?3, claimed_by = ?4, cancel_requested = 0`
	sqlClaim = sqlClaimSet + `
		WHERE id IN (SELECT value FROM json_each(?5)) AND state = 2
		RETURNING ` + jobCols
	sqlNextRunAll   = `SELECT min(run_at) FROM jobs WHERE state IN (1, 4)`
	sqlNextRunQueue = `SELECT min(run_at) FROM jobs WHERE state IN (1, 4) AND queue = ?`
)

// Every LIMIT takes its bound parameter as +?N, not ?N: SQLite (3.47+)
// reads a bare ?N LIMIT's bound value while planning and marks the
// statement to be re-prepared whenever that parameter is bound again, that
// is on every execution (database/sql rebinds all parameters): the claim
// statement was parsed and planned anew on every Claim. The unary plus
// hides the parameter from that check; the plans are the same
// (plan_test.go).

// maxClaimArms caps the queues claimSQL merges in one statement.
const maxClaimArms = 16

// claimSQL[n] claims from n queues: ?5 is the total limit, then for each
// queue its name and its limit. Each arm is a range of jobs_claim.
var claimSQL = func() (qs [maxClaimArms + 1]string) {
	arm := func(i int) string {
		return `SELECT id, priority, run_at FROM jobs WHERE state = 2 AND queue = ?` + strconv.Itoa(6+2*i) +
			` ORDER BY priority, run_at, id LIMIT +?` + strconv.Itoa(7+2*i)
	}
	qs[1] = sqlClaimSet + `
		WHERE id IN (SELECT id FROM (` + arm(0) + `) ORDER BY priority, run_at, id LIMIT +?5) AND state = 2
		RETURNING ` + jobCols
	for n := 2; n <= maxClaimArms; n++ {
		var u strings.Builder
		for i := range n {
			if i > 0 {
				u.WriteString(" UNION ALL ")
			}
			u.WriteString(`SELECT * FROM (` + arm(i) + `)`)
		}
		qs[n] = sqlClaimSet + `
		WHERE id IN (SELECT id FROM (` + u.String() + `) ORDER BY priority, run_at, id LIMIT +?5) AND state = 2
		RETURNING ` + jobCols
	}
	return qs
}()

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
	now := store.UnixNanos(p.Now)
	queues := slices.Compact(slices.Sorted(slices.Values(p.Queues)))
	// 1. When to ask again; promotion if something is due.
	next, err := nextRunAt(w, queues)
	if err != nil {
		return res, err
	}
	if next != 0 && next <= now {
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
		if next, err = nextRunAt(w, queues); err != nil {
			return res, err
		}
	}
	res.NextRunAt = store.FromUnixNanos(next)
	if p.Limit <= 0 {
		return res, nil
	}
	// 2. The queues to claim from, and their limits.
	if len(queues) == 0 {
		rows, err := w.query(sqlReadyQueues)
		if err != nil {
			return res, err
		}
		for rows.Next() {
			var q string
			if err := rows.Scan(&q); err != nil {
				rows.Close()
				return res, err
			}
			queues = append(queues, q)
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return res, err
		}
	}
	args := []any{now, p.Worker, store.UnixNanos(p.LeaseUntil), s.worker, p.Limit}
	for _, q := range queues {
		limit := p.Limit
		if ql, ok := p.QueueLimits[q]; ok {
			limit = min(limit, ql)
		}
		if limit > 0 {
			args = append(args, q, limit)
		}
	}
	arms := (len(args) - 5) / 2
	if arms == 0 {
		return res, nil
	}
	// 3. Claim.
	var jobs []*job.Job
	if arms <= maxClaimArms {
		jobs, err = w.queryJobs(claimSQL[arms], args...)
	} else {
		jobs, err = s.claimMerged(w, p, args)
	}
	if err != nil {
		return res, err
	}
	// RETURNING has no order: restore the claim order.
	slices.SortFunc(jobs, func(a, b *job.Job) int {
		return compareCandidates(candidate{int64(a.ID), int64(a.Priority), store.UnixNanos(a.RunAt)},
			candidate{int64(b.ID), int64(b.Priority), store.UnixNanos(b.RunAt)})
	})
	res.Jobs = jobs
	return res, nil
}

// claimMerged claims from more queues than claimSQL merges: args are
// claimSQL's. It reads the candidates of each queue, merges them in Go and
// claims the first Limit by ID.
func (s *Store) claimMerged(w *writer, p store.ClaimParams, args []any) ([]*job.Job, error) {
	var cands []candidate
	for i := 5; i < len(args); i += 2 {
		rows, err := w.query(sqlCandidates, args[i], args[i+1])
		if err != nil {
			return nil, err
		}
		for rows.Next() {
			var c candidate
			if err := rows.Scan(&c.id, &c.priority, &c.runAt); err != nil {
				rows.Close()
				return nil, err
			}
			cands = append(cands, c)
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return nil, err
		}
	}
	slices.SortFunc(cands, compareCandidates)
	cands = cands[:min(len(cands), p.Limit)]
	if len(cands) == 0 {
		return nil, nil
	}
	ids := make([]job.ID, len(cands))
	for i, c := range cands {
		ids[i] = job.ID(c.id)
	}
	return w.queryJobs(sqlClaim, args[0], args[1], args[2], args[3], idList(ids))
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

// sqlHeartbeat extends the leases of a Heartbeat call in one statement.
const sqlHeartbeat = `UPDATE jobs SET lease_until = ?1
	WHERE id IN (SELECT value FROM json_each(?2)) AND state = 3 AND worker = ?3
	RETURNING id, cancel_requested`

// Heartbeat implements store.Store.
func (s *Store) Heartbeat(ctx context.Context, p store.HeartbeatParams) ([]job.ID, error) {
	lease := store.UnixNanos(p.LeaseUntil)
	ids := idList(p.IDs)
	var cancelled []job.ID
	err := s.write(ctx, func(w *writer) error {
		cancelled = nil
		rows, err := w.query(sqlHeartbeat, lease, ids, p.Worker)
		if err != nil {
			return err
		}
		defer rows.Close()
		var set map[job.ID]bool
		for rows.Next() {
			var id int64
			var c bool
			if err := rows.Scan(&id, &c); err != nil {
				return err
			}
			if c {
				if set == nil {
					set = make(map[job.ID]bool)
				}
				set[job.ID(id)] = true
			}
		}
		if err := rows.Err(); err != nil {
			return err
		}
		// In the order of p.IDs, as one UPDATE per ID would return them.
		for _, id := range p.IDs {
			if set[id] {
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
