package sqlitestore

import (
	"context"
	"database/sql"
	"time"

	"github.com/hopperq/hopper/store"
)

var _ store.QueueControl = (*Store)(nil)

const queueCols = `name, paused, paused_at, concurrency, updated_at, key_concurrency, rate_n, rate_period, rate_burst, rate_drop,
	key_rate_n, key_rate_period, key_rate_burst, key_rate_drop`

// sqlQueueRunning is the running jobs of the queue of the row q of queues
// with a limit (0 without), from lane_counts.
const sqlQueueRunning = `CASE WHEN q.concurrency > 0 THEN coalesce((SELECT sum(n) FROM lane_counts
	WHERE state = 'running' AND queue = q.name), 0) ELSE 0 END`

// sqlQueueState selects queueCols and the running jobs of the queues q.
const sqlQueueState = `SELECT q.name, q.paused, q.paused_at, q.concurrency, q.updated_at, q.key_concurrency, ` + sqlQueueRunning + `,
	q.rate_n, q.rate_period, q.rate_burst, q.rate_drop, coalesce(t.tat, 0), q.key_rate_n, q.key_rate_period, q.key_rate_burst,
	q.key_rate_drop
	FROM queues q LEFT JOIN throttles t ON t.queue = q.name AND t.key = ''`

func scanQueue(r scanner) (store.QueueState, error) {
	var q store.QueueState
	var pausedAt, updatedAt, period, tat, keyPeriod int64
	if err := r.Scan(&q.Name, &q.Paused, &pausedAt, &q.Concurrency, &updatedAt, &q.KeyConcurrency, &q.Running,
		&q.Rate.N, &period, &q.Rate.Burst, &q.Rate.Drop, &tat, &q.KeyRate.N, &keyPeriod, &q.KeyRate.Burst,
		&q.KeyRate.Drop); err != nil {
		return q, err
	}
	q.PausedAt, q.UpdatedAt = store.FromUnixNanos(pausedAt), store.FromUnixNanos(updatedAt)
	q.Rate.Period, q.TAT = time.Duration(period), store.FromUnixNanos(tat)
	q.KeyRate.Period = time.Duration(keyPeriod)
	return q, nil
}

// SetQueue implements store.QueueControl. Other processes see a resume,
// or a higher limit, through Wake, as any commit.
func (s *Store) SetQueue(ctx context.Context, p store.SetQueueParams) (store.QueueState, error) {
	if err := p.Validate(); err != nil {
		return store.QueueState{}, err
	}
	var out store.QueueState
	err := s.write(ctx, func(w *writer) error {
		if err := w.syncCounts(); err != nil { // for the running jobs
			return err
		}
		rows, err := w.query(sqlQueueState+` WHERE q.name = ?`, p.Name)
		if err != nil {
			return err
		}
		cur, err := scanEachQueue(rows)
		if err != nil {
			return err
		}
		out = store.ApplySetQueue(cur, p)
		if out.Concurrency == 0 {
			out.Running = 0
		}
		if err := w.setThrottle(out); err != nil {
			return err
		}
		if out.Zero() {
			_, err = w.exec(`DELETE FROM queues WHERE name = ?`, p.Name)
			return err
		}
		_, err = w.exec(`INSERT INTO queues (`+queueCols+`) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
			ON CONFLICT (name) DO UPDATE SET paused = excluded.paused, paused_at = excluded.paused_at,
				concurrency = excluded.concurrency, updated_at = excluded.updated_at,
				key_concurrency = excluded.key_concurrency, rate_n = excluded.rate_n,
				rate_period = excluded.rate_period, rate_burst = excluded.rate_burst, rate_drop = excluded.rate_drop,
				key_rate_n = excluded.key_rate_n, key_rate_period = excluded.key_rate_period,
				key_rate_burst = excluded.key_rate_burst, key_rate_drop = excluded.key_rate_drop`,
			out.Name, out.Paused, store.UnixNanos(out.PausedAt), out.Concurrency, store.UnixNanos(out.UpdatedAt),
			out.KeyConcurrency, out.Rate.N, int64(out.Rate.Period), out.Rate.Burst, out.Rate.Drop,
			out.KeyRate.N, int64(out.KeyRate.Period), out.KeyRate.Burst, out.KeyRate.Drop)
		if out.Concurrency > 0 && cur.Concurrency == 0 {
			// The running jobs, which the row of a queue without a
			// limit did not report.
			err = w.scanRow(`SELECT coalesce(sum(n), 0) FROM lane_counts WHERE state = 'running' AND queue = ?`,
				[]any{out.Name}, &out.Running)
		}
		return err
	})
	if err != nil {
		return store.QueueState{}, err
	}
	return out, nil
}

// scanEachQueue reads the one queue of rows, if any (the zero state if
// none), and closes them.
func scanEachQueue(rows *sql.Rows) (store.QueueState, error) {
	defer rows.Close()
	var q store.QueueState
	if rows.Next() {
		var err error
		if q, err = scanQueue(rows); err != nil {
			return q, err
		}
	}
	return q, rows.Err()
}

// ListQueues implements store.QueueControl.
func (s *Store) ListQueues(ctx context.Context) ([]store.QueueState, error) {
	if err := s.errIfClosed(); err != nil {
		return nil, err
	}
	rows, err := s.rdb.QueryContext(ctx, sqlQueueState+` ORDER BY q.name`)
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
