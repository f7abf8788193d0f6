package sqlitestore

import (
	"context"
	"database/sql"
	"errors"
	"slices"

	"github.com/hopperq/hopper/job"
	"github.com/hopperq/hopper/store"
)

// Throttles per key (QueueState.KeyRate, decision 98). A queue with a rate
// per key is keyed; claimKeyed, in the claim's write transaction, reads a
// key's state from its throttles row (queue, key) beside its queue_keys row
// (KeyWalk caps the key with it and skips it while it allows no start),
// moves the rows of the keys it took jobs of (takeKeyThrottles), drops
// the jobs KeyWalk picked to drop under a rate with Drop (dropKeyed), and
// deletes the rows of its queue that are a period behind
// (collectKeyThrottles, through the partial index throttles_idle of
// schema 21: no scan of the queue's keys).

// keyTAT returns the TAT of key of queue (0 without a row).
func (w *writer) keyTAT(queue, key string) (int64, error) {
	var tat int64
	err := w.scanRow(`SELECT tat FROM throttles WHERE queue = ? AND key = ?`, []any{queue, key}, &tat)
	if errors.Is(err, sql.ErrNoRows) {
		return 0, nil
	}
	return tat, err
}

// collectKeyThrottles deletes the throttle rows of the keys of queue, whose
// rate per key is r, that are collectable at now (store.Throttle.Collectable).
func (w *writer) collectKeyThrottles(queue string, r store.Rate, now int64) error {
	_, err := w.exec(`DELETE FROM throttles WHERE queue = ? AND key <> '' AND tat < ?`, queue, now-int64(r.Period))
	return err
}

// takeKeyThrottles moves the throttle of each key of got, jobs of queue
// started at now, on by its jobs (store.Throttle.Take under r, the queue's
// rate per key).
func (w *writer) takeKeyThrottles(queue string, r store.Rate, got []*job.Job, now int64) error {
	keys, ns := store.KeyStarts(got)
	for i, key := range keys {
		if _, err := w.exec(`INSERT INTO throttles (queue, key, tat) VALUES (?1, ?2, ?3 + ?4)
			ON CONFLICT (queue, key) DO UPDATE SET tat = max(tat, ?3) + ?4`,
			queue, key, now, int64(ns[i])*r.Interval()); err != nil {
			return err
		}
	}
	return nil
}

// sqlDropKeyed is store.ApplyDrop on the jobs ?3 (a JSON array of IDs)
// still available: ?1 now, ?2 the reason.
const sqlDropKeyed = `UPDATE jobs SET state = 'cancelled', finished_at = ?1, last_error = ?2
	WHERE id IN (SELECT value FROM json_each(?3)) AND state = 'available'
	RETURNING ` + jobCols

// dropKeyed drops the jobs pick.Drops of q at now (store.ApplyDrop with
// KeyPick.DropReason), one statement per reason, and returns them in
// pick's order.
func (w *writer) dropKeyed(q keyedQueue, pick store.KeyPick, now int64) ([]*job.Job, error) {
	byReason := map[string][]job.ID{}
	var reasons []string
	for i, id := range pick.Drops {
		r := pick.DropReason(i, q.name, q.rate, q.keyRate)
		if byReason[r] == nil {
			reasons = append(reasons, r)
		}
		byReason[r] = append(byReason[r], id)
	}
	var out []*job.Job
	for _, r := range reasons {
		got, err := w.queryJobs(sqlDropKeyed, now, r, idList(byReason[r]))
		if err != nil {
			return nil, err
		}
		out = append(out, got...)
	}
	pos := make(map[job.ID]int, len(pick.Drops))
	for i, id := range pick.Drops {
		pos[id] = i
	}
	slices.SortFunc(out, func(a, b *job.Job) int { return pos[a.ID] - pos[b.ID] })
	c := counter{d: w.req}
	for _, j := range out {
		c.job(job.StateAvailable, job.StateCancelled, j.Queue, j.Kind)
	}
	c.flush()
	return out, nil
}

// sqlKeyThrottles reads the throttle rows of keys, in the columns that
// store.ScanKeyThrottles reads, that match the condition appended to it.
const sqlKeyThrottles = `SELECT t.queue, t.key, t.tat, q.key_rate_n, q.key_rate_period, q.key_rate_burst, q.key_rate_drop
	FROM throttles t JOIN queues q ON q.name = t.queue
	WHERE t.key <> '' AND `

// listKeyThrottles returns the throttle states of the keys of queue (every
// queue if ""), by queue and key, from s's read pool.
func (s *Store) listKeyThrottles(ctx context.Context, queue string) ([]store.KeyState, error) {
	rows, err := s.rdb.QueryContext(ctx, sqlKeyThrottles+`(?1 = '' OR t.queue = ?1) ORDER BY t.queue, t.key`, queue)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	return store.ScanKeyThrottles(rows)
}
