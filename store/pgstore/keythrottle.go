package pgstore

import (
	"context"
	"errors"
	"slices"
	"time"

	"github.com/hopperq/hopper/job"
	"github.com/hopperq/hopper/store"
	"github.com/jackc/pgx/v5"
)

// Throttles per key (QueueState.KeyRate, decision 98). A queue with a rate
// per key is keyed; claimKeyed, in its transaction, after locking the
// queue's row (so claims of the queue take turns, each reading the TATs the
// previous one left), reads a key's state from its throttles row (queue,
// key) beside its queue_keys row (KeyWalk caps the key with it and skips it
// while it allows no start), moves the rows of the keys it took jobs of
// (takeKeyThrottles), drops the jobs KeyWalk picked to drop under a rate
// with Drop (dropKeyed), and deletes the rows of the queue that are a period
// behind (collectKeyThrottles, through the partial index throttles_idle of
// migration 17: no scan of the queue's keys). The times are the claim's
// now at the database's precision (micro), as the queue's own throttle's.

// keyTAT returns the TAT of key of queue in tx (0 without a row).
func (s *Store) keyTAT(ctx context.Context, tx pgx.Tx, queue, key string) (int64, error) {
	var tat int64
	err := tx.QueryRow(ctx, s.q(`SELECT tat FROM {schema}.throttles WHERE queue = $1 AND key = $2`), queue, key).Scan(&tat)
	if errors.Is(err, pgx.ErrNoRows) {
		return 0, nil
	}
	return tat, err
}

// collectKeyThrottles deletes the throttle rows of the keys of queue, whose
// rate per key is r, that are collectable at now (store.Throttle.Collectable).
func (s *Store) collectKeyThrottles(ctx context.Context, tx pgx.Tx, queue string, r store.Rate, now int64) error {
	_, err := tx.Exec(ctx, s.q(`DELETE FROM {schema}.throttles WHERE queue = $1 AND key <> '' AND tat < $2`),
		queue, now-int64(r.Period))
	return err
}

// takeKeyThrottles moves the throttle of each key of got, jobs of queue
// started at now, on by its jobs (store.Throttle.Take under r, the queue's
// rate per key), in one statement.
func (s *Store) takeKeyThrottles(ctx context.Context, tx pgx.Tx, queue string, r store.Rate, got []*job.Job, now int64) error {
	keys, ns := store.KeyStarts(got)
	if len(keys) == 0 {
		return nil
	}
	steps := make([]int64, len(ns))
	for i, n := range ns {
		steps[i] = int64(n) * r.Interval()
	}
	_, err := tx.Exec(ctx, s.q(`INSERT INTO {schema}.throttles (queue, key, tat)
		SELECT $1, k, $3 + d FROM unnest($2::text[], $4::bigint[]) AS u(k, d)
		ON CONFLICT (queue, key) DO UPDATE SET tat = greatest({schema}.throttles.tat, $3) + excluded.tat - $3`),
		queue, keys, now, steps)
	return err
}

// dropKeyed drops, in tx, the jobs pick.Drops of q at now
// (store.ApplyDrop, with KeyPick.DropReason), in one statement, and
// returns them in pick's order.
func (s *Store) dropKeyed(ctx context.Context, tx pgx.Tx, q keyedQueue, pick store.KeyPick, now time.Time) ([]*job.Job, error) {
	ids := make([]int64, len(pick.Drops))
	reasons := make([]string, len(pick.Drops))
	pos := make(map[job.ID]int, len(pick.Drops))
	for i, id := range pick.Drops {
		ids[i], reasons[i], pos[id] = int64(id), pick.DropReason(i, q.name, q.rate, q.keyRate), i
	}
	rows, err := tx.Query(ctx, s.q(`UPDATE {schema}.jobs j SET state = 'cancelled', finished_at = $1, last_error = d.reason
		FROM unnest($2::bigint[], $3::text[]) AS d(id, reason)
		WHERE j.id = d.id AND j.state = 'available'
		RETURNING `+jobColsOf("j")), ts(now), ids, reasons)
	if err != nil {
		return nil, err
	}
	got, err := scanJobs(rows)
	if err != nil {
		return nil, err
	}
	slices.SortFunc(got, func(a, b *job.Job) int { return pos[a.ID] - pos[b.ID] })
	return got, nil
}

// listKeyThrottles returns the throttle states of the keys of queue (every
// queue if ""), by queue and key.
func (s *Store) listKeyThrottles(ctx context.Context, queue string) ([]store.KeyState, error) {
	rows, err := s.pool.Query(ctx, s.q(`SELECT t.queue, t.key, t.tat, q.key_rate_n, q.key_rate_period, q.key_rate_burst,
			q.key_rate_drop
		FROM {schema}.throttles t JOIN {schema}.queues q ON q.name = t.queue
		WHERE t.key <> '' AND ($1 = '' OR t.queue = $1) ORDER BY t.queue, t.key`), queue)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	return store.ScanKeyThrottles(rows)
}
