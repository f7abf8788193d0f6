package pgstore

import (
	"context"
	"time"

	"github.com/hopperq/hopper/store"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgtype"
)

var _ store.QueueControl = (*Store)(nil)

// sqlQueueState selects a queue's state from its row q and its own
// throttle's row t.
const sqlQueueState = `SELECT q.name, q.paused, q.paused_at, q.concurrency, q.running, q.updated_at, q.key_concurrency,
	q.rate_n, q.rate_period, q.rate_burst, q.rate_drop, coalesce(t.tat, 0), q.key_rate_n, q.key_rate_period, q.key_rate_burst,
	q.key_rate_drop
	FROM {schema}.queues q LEFT JOIN {schema}.throttles t ON t.queue = q.name AND t.key = ''`

func scanQueue(r pgx.Row) (store.QueueState, error) {
	var q store.QueueState
	var pausedAt, updatedAt pgtype.Timestamptz
	var period, tat, keyPeriod int64
	if err := r.Scan(&q.Name, &q.Paused, &pausedAt, &q.Concurrency, &q.Running, &updatedAt, &q.KeyConcurrency,
		&q.Rate.N, &period, &q.Rate.Burst, &q.Rate.Drop, &tat, &q.KeyRate.N, &keyPeriod, &q.KeyRate.Burst,
		&q.KeyRate.Drop); err != nil {
		return q, err
	}
	q.PausedAt, q.UpdatedAt = fromTS(pausedAt), fromTS(updatedAt)
	q.Rate.Period, q.TAT = time.Duration(period), store.FromUnixNanos(tat)
	q.KeyRate.Period = time.Duration(keyPeriod)
	return q, nil
}

// SetQueue implements store.QueueControl: the queue's row is created if
// missing, locked, changed (or deleted) in one transaction. A resume, or a
// limit raised or cleared, sends the schema's notification after the
// commit (listen.go), so that the workers of every process claim at once.
func (s *Store) SetQueue(ctx context.Context, p store.SetQueueParams) (store.QueueState, error) {
	if err := p.Validate(); err != nil {
		return store.QueueState{}, err
	}
	if err := s.writable(); err != nil {
		return store.QueueState{}, err
	}
	var out, cur store.QueueState
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		// The row exists from here on, so that FOR UPDATE serialises
		// concurrent changes of the same queue.
		if _, err := tx.Exec(ctx, s.q(`INSERT INTO {schema}.queues (name, updated_at) VALUES ($1, $2)
			ON CONFLICT (name) DO NOTHING`), p.Name, ts(p.Now)); err != nil {
			return err
		}
		var err error
		cur, err = scanQueue(tx.QueryRow(ctx, s.q(sqlQueueState+` WHERE q.name = $1 FOR UPDATE OF q`), p.Name))
		if err != nil {
			return err
		}
		out = store.ApplySetQueue(cur, p)
		out.PausedAt, out.UpdatedAt = micro(out.PausedAt), micro(out.UpdatedAt)
		if err := s.setThrottle(ctx, tx, out); err != nil {
			return err
		}
		if out.Zero() && cur.Running == 0 {
			_, err = tx.Exec(ctx, s.q(`DELETE FROM {schema}.queues WHERE name = $1`), p.Name)
			return err
		}
		// A row in the zero state that still counts slots stays until
		// they are given back; ListQueues leaves it out.
		_, err = tx.Exec(ctx, s.q(`UPDATE {schema}.queues SET paused = $2, paused_at = $3, concurrency = $4, updated_at = $5,
			key_concurrency = $6, rate_n = $7, rate_period = $8, rate_burst = $9, rate_drop = $10,
			key_rate_n = $11, key_rate_period = $12, key_rate_burst = $13, key_rate_drop = $14
			WHERE name = $1`), out.Name, out.Paused, ts(out.PausedAt), out.Concurrency, ts(out.UpdatedAt),
			out.KeyConcurrency, out.Rate.N, int64(out.Rate.Period), out.Rate.Burst, out.Rate.Drop,
			out.KeyRate.N, int64(out.KeyRate.Period), out.KeyRate.Burst, out.KeyRate.Drop)
		return err
	})
	if err != nil {
		return store.QueueState{}, s.translate(err)
	}
	if (cur.Paused && !out.Paused) || (cur.Concurrency > 0 && (out.Concurrency == 0 || out.Concurrency > cur.Concurrency)) ||
		(cur.KeyConcurrency > 0 && (out.KeyConcurrency == 0 || out.KeyConcurrency > cur.KeyConcurrency)) ||
		(!cur.Rate.Zero() && out.Rate != cur.Rate) || (!cur.KeyRate.Zero() && out.KeyRate != cur.KeyRate) {
		s.notify() // held jobs may start
	}
	if out.Concurrency == 0 {
		out.Running = 0
	}
	return out, nil
}

// ListQueues implements store.QueueControl.
func (s *Store) ListQueues(ctx context.Context) ([]store.QueueState, error) {
	if err := s.readable(); err != nil {
		return nil, err
	}
	out := []store.QueueState{}
	if s.empty {
		return out, nil
	}
	rows, err := s.pool.Query(ctx, s.q(sqlQueueState+`
		WHERE q.paused OR q.concurrency > 0 OR q.key_concurrency > 0 OR q.rate_n > 0 OR q.key_rate_n > 0 ORDER BY q.name`))
	if err != nil {
		return nil, s.translate(err)
	}
	defer rows.Close()
	for rows.Next() {
		q, err := scanQueue(rows)
		if err != nil {
			return nil, s.translate(err)
		}
		out = append(out, q)
	}
	if err := rows.Err(); err != nil {
		return nil, s.translate(err)
	}
	return out, nil
}
