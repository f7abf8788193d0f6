package pgstore

import (
	"context"

	"github.com/hopperq/hopper/store"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgtype"
)

var _ store.QueueControl = (*Store)(nil)

const queueCols = `name, paused, paused_at, concurrency, running, updated_at, key_concurrency`

func scanQueue(r pgx.Row) (store.QueueState, error) {
	var q store.QueueState
	var pausedAt, updatedAt pgtype.Timestamptz
	if err := r.Scan(&q.Name, &q.Paused, &pausedAt, &q.Concurrency, &q.Running, &updatedAt, &q.KeyConcurrency); err != nil {
		return q, err
	}
	q.PausedAt, q.UpdatedAt = fromTS(pausedAt), fromTS(updatedAt)
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
		cur, err = scanQueue(tx.QueryRow(ctx, s.q(`SELECT `+queueCols+` FROM {schema}.queues WHERE name = $1 FOR UPDATE`), p.Name))
		if err != nil {
			return err
		}
		out = store.ApplySetQueue(cur, p)
		out.PausedAt, out.UpdatedAt = micro(out.PausedAt), micro(out.UpdatedAt)
		if out.Zero() && cur.Running == 0 {
			_, err = tx.Exec(ctx, s.q(`DELETE FROM {schema}.queues WHERE name = $1`), p.Name)
			return err
		}
		// A row in the zero state that still counts slots stays until
		// they are given back; ListQueues leaves it out.
		_, err = tx.Exec(ctx, s.q(`UPDATE {schema}.queues SET paused = $2, paused_at = $3, concurrency = $4, updated_at = $5,
			key_concurrency = $6 WHERE name = $1`), out.Name, out.Paused, ts(out.PausedAt), out.Concurrency, ts(out.UpdatedAt),
			out.KeyConcurrency)
		return err
	})
	if err != nil {
		return store.QueueState{}, s.translate(err)
	}
	if (cur.Paused && !out.Paused) || (cur.Concurrency > 0 && (out.Concurrency == 0 || out.Concurrency > cur.Concurrency)) ||
		(cur.KeyConcurrency > 0 && (out.KeyConcurrency == 0 || out.KeyConcurrency > cur.KeyConcurrency)) {
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
	rows, err := s.pool.Query(ctx, s.q(`SELECT `+queueCols+` FROM {schema}.queues
		WHERE paused OR concurrency > 0 OR key_concurrency > 0 ORDER BY name`))
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
