package sqlitestore

import (
	"context"
	"database/sql"
	"errors"

	"github.com/hopperq/hopper/store"
)

var _ store.QueueControl = (*Store)(nil)

const queueCols = `name, paused, paused_at, updated_at`

func scanQueue(r scanner) (store.QueueState, error) {
	var q store.QueueState
	var pausedAt, updatedAt int64
	if err := r.Scan(&q.Name, &q.Paused, &pausedAt, &updatedAt); err != nil {
		return q, err
	}
	q.PausedAt, q.UpdatedAt = store.FromUnixNanos(pausedAt), store.FromUnixNanos(updatedAt)
	return q, nil
}

// SetQueue implements store.QueueControl. Other processes see a resume
// through Wake, as any commit.
func (s *Store) SetQueue(ctx context.Context, p store.SetQueueParams) (store.QueueState, error) {
	if err := p.Validate(); err != nil {
		return store.QueueState{}, err
	}
	var out store.QueueState
	err := s.write(ctx, func(w *writer) error {
		var cur store.QueueState
		var pausedAt, updatedAt int64
		err := w.scanRow(`SELECT `+queueCols+` FROM queues WHERE name = ?`, []any{p.Name},
			&cur.Name, &cur.Paused, &pausedAt, &updatedAt)
		cur.PausedAt, cur.UpdatedAt = store.FromUnixNanos(pausedAt), store.FromUnixNanos(updatedAt)
		if err != nil && !errors.Is(err, sql.ErrNoRows) {
			return err
		}
		out = store.ApplySetQueue(cur, p)
		if out.Zero() {
			_, err = w.exec(`DELETE FROM queues WHERE name = ?`, p.Name)
			return err
		}
		_, err = w.exec(`INSERT INTO queues (`+queueCols+`) VALUES (?, ?, ?, ?)
			ON CONFLICT (name) DO UPDATE SET paused = excluded.paused, paused_at = excluded.paused_at,
				updated_at = excluded.updated_at`,
			out.Name, out.Paused, store.UnixNanos(out.PausedAt), store.UnixNanos(out.UpdatedAt))
		return err
	})
	if err != nil {
		return store.QueueState{}, err
	}
	return out, nil
}

// ListQueues implements store.QueueControl.
func (s *Store) ListQueues(ctx context.Context) ([]store.QueueState, error) {
	if err := s.errIfClosed(); err != nil {
		return nil, err
	}
	rows, err := s.rdb.QueryContext(ctx, `SELECT `+queueCols+` FROM queues ORDER BY name`)
	if err != nil {
		return nil, s.readErr(err)
	}
	defer rows.Close()
	out := []store.QueueState{}
	for rows.Next() {
		q, err := scanQueue(rows)
		if err != nil {
			return nil, s.readErr(err)
		}
		out = append(out, q)
	}
	if err := rows.Err(); err != nil {
		return nil, s.readErr(err)
	}
	return out, nil
}
