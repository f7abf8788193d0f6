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
// while it allows no start; keyreads.go reads both), moves the rows of the
// keys it took jobs of (sqlKeyedClaim), drops the jobs KeyWalk picked to
// drop under a rate with Drop (queueDropKeyed), and deletes the rows of the
// queue that are a period behind (sqlKeyedQueueBegin's ct, through the
// partial index throttles_idle of migration 17: no scan of the queue's
// keys). The times are the claim's
// now at the database's precision (micro), as the queue's own throttle's.

// keyTAT returns the TAT of key of queue in tx (0 without a row).
func (s *Store) keyTAT(ctx context.Context, tx dbtx, queue, key string) (int64, error) {
	var tat int64
	err := tx.QueryRow(ctx, s.q(`SELECT tat FROM {schema}.throttles WHERE queue = $1 AND key = $2`), queue, key).Scan(&tat)
	if errors.Is(err, pgx.ErrNoRows) {
		return 0, nil
	}
	return tat, err
}

// queueDropKeyed queues on b the drop of the jobs pick.Drops of q at
// now (store.ApplyDrop, with KeyPick.DropReason), in one statement, and
// returns the function that reads them, in pick's order, from the batch's
// results.
func (s *Store) queueDropKeyed(b *pgx.Batch, q keyedQueue, pick store.KeyPick, now time.Time) func(pgx.BatchResults) ([]*job.Job, error) {
	ids := make([]int64, len(pick.Drops))
	reasons := make([]string, len(pick.Drops))
	pos := make(map[job.ID]int, len(pick.Drops))
	for i, id := range pick.Drops {
		ids[i], reasons[i], pos[id] = int64(id), pick.DropReason(i, q.name, q.rate, q.keyRate), i
	}
	// By primary key: state::text, as in sqlKeyedClaim.
	b.Queue(s.q(`UPDATE {schema}.jobs j SET state = 'cancelled', finished_at = $1, last_error = d.reason
		FROM unnest($2::bigint[], $3::text[]) AS d(id, reason)
		WHERE j.id = d.id AND j.state::text = 'available'
		RETURNING `+jobColsOf("j")), ts(now), ids, reasons)
	return func(br pgx.BatchResults) ([]*job.Job, error) {
		rows, err := br.Query()
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
}

// sqlKeyThrottles reads the throttle rows of keys, in the columns that
// store.ScanKeyThrottles reads, that match the condition appended to it.
const sqlKeyThrottles = `SELECT t.queue, t.key, t.tat, q.key_rate_n, q.key_rate_period, q.key_rate_burst, q.key_rate_drop
	FROM {schema}.throttles t JOIN {schema}.queues q ON q.name = t.queue
	WHERE t.key <> '' AND `

// listKeyThrottles returns the throttle states of the keys of queue (every
// queue if ""), by queue and key.
func (s *Store) listKeyThrottles(ctx context.Context, queue string) ([]store.KeyState, error) {
	rows, err := s.pool.Query(ctx, s.q(sqlKeyThrottles+`($1 = '' OR t.queue = $1) ORDER BY t.queue, t.key`), queue)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	return store.ScanKeyThrottles(rows)
}
