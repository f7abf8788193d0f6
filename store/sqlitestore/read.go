package sqlitestore

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"

	"github.com/hopperq/hopper/job"
	"github.com/hopperq/hopper/store"
)

// Reads run on the read-only pool, each in its own snapshot of the last
// committed state (WAL readers neither block nor wait for the writer).

// readErr translates a read's error; reads racing Close get job.ErrClosed.
func (s *Store) readErr(err error) error {
	if err != nil && s.closed.Load() {
		return job.ErrClosed
	}
	return s.translate(err)
}

// Get implements store.Store.
func (s *Store) Get(ctx context.Context, id job.ID) (*job.Job, error) {
	if err := s.errIfClosed(); err != nil {
		return nil, err
	}
	j, err := scanJob(s.rdb.QueryRowContext(ctx, `SELECT `+jobCols+` FROM jobs WHERE id = ?`, int64(id)))
	if errors.Is(err, sql.ErrNoRows) {
		return nil, fmt.Errorf("job %d: %w", id, job.ErrNotFound)
	}
	if err != nil {
		return nil, s.readErr(err)
	}
	return j, nil
}

// filter returns the WHERE conditions and arguments of p's filters.
func filter(p store.ListParams) (where []string, args []any) {
	if len(p.States) > 0 {
		marks := make([]string, len(p.States))
		for i, st := range p.States {
			marks[i] = "?"
			args = append(args, int64(st))
		}
		where = append(where, "state IN ("+strings.Join(marks, ", ")+")")
	}
	if p.Queue != "" {
		where, args = append(where, "queue = ?"), append(args, p.Queue)
	}
	if p.Kind != "" {
		where, args = append(where, "kind = ?"), append(args, p.Kind)
	}
	return where, args
}

// Count implements store.Store. Counts by state and queue alone come from
// the trigger-kept queue_counts table; a kind filter scans the jobs.
func (s *Store) Count(ctx context.Context, p store.ListParams) (int, error) {
	if err := s.errIfClosed(); err != nil {
		return 0, err
	}
	table, col := "jobs", "count(*)"
	if p.Kind == "" {
		table, col = "queue_counts", "coalesce(sum(n), 0)"
	}
	where, args := filter(p)
	q := `SELECT ` + col + ` FROM ` + table
	if len(where) > 0 {
		q += ` WHERE ` + strings.Join(where, " AND ")
	}
	var n int
	if err := s.rdb.QueryRowContext(ctx, q, args...).Scan(&n); err != nil {
		return 0, s.readErr(err)
	}
	return n, nil
}

// List implements store.Store. It walks the primary key in ID order from
// AfterID and filters, so it is fast for pages of recent or common jobs,
// slower for a rare kind or queue among millions.
func (s *Store) List(ctx context.Context, p store.ListParams) ([]*job.Job, error) {
	if err := s.errIfClosed(); err != nil {
		return nil, err
	}
	where, args := filter(p)
	order := "ASC"
	if p.Desc {
		order = "DESC"
		if p.AfterID > 0 {
			where, args = append(where, "id < ?"), append(args, int64(p.AfterID))
		}
	} else if p.AfterID > 0 {
		where, args = append(where, "id > ?"), append(args, int64(p.AfterID))
	}
	q := `SELECT ` + jobCols + ` FROM jobs`
	if len(where) > 0 {
		q += ` WHERE ` + strings.Join(where, " AND ")
	}
	limit := p.Limit
	if limit <= 0 {
		limit = 100
	}
	q += ` ORDER BY id ` + order + ` LIMIT +?`
	rows, err := s.rdb.QueryContext(ctx, q, append(args, limit)...)
	if err != nil {
		return nil, s.readErr(err)
	}
	jobs, err := scanJobs(rows)
	if err != nil {
		return nil, s.readErr(err)
	}
	return jobs, nil
}

// sqlFinishedSince counts jobs finished since a time, by final state.
const sqlFinishedSince = `SELECT state, count(*) FROM jobs
	WHERE state IN (5, 6, 7) AND finished_at >= ? GROUP BY state`

// Stats implements store.Store. The counts by queue and state come from
// the queue_counts table that triggers keep up to date (O(queues)); the
// Finished counts read the index entries of the jobs finished since
// p.FinishedSince.
func (s *Store) Stats(ctx context.Context, p store.StatsParams) (store.Stats, error) {
	if err := s.errIfClosed(); err != nil {
		return store.Stats{}, err
	}
	st := store.Stats{ByQueue: make(map[string]map[job.State]int), Finished: make(map[job.State]int)}
	tx, err := s.rdb.BeginTx(ctx, &sql.TxOptions{ReadOnly: true}) // one snapshot for both counts
	if err != nil {
		return store.Stats{}, s.readErr(err)
	}
	defer tx.Rollback() //nolint:errcheck // read-only
	rows, err := tx.QueryContext(ctx, `SELECT queue, state, n FROM queue_counts WHERE n > 0`)
	if err != nil {
		return store.Stats{}, s.readErr(err)
	}
	for rows.Next() {
		var (
			q     string
			state int64
			n     int
		)
		if err := rows.Scan(&q, &state, &n); err != nil {
			rows.Close()
			return store.Stats{}, s.readErr(err)
		}
		m := st.ByQueue[q]
		if m == nil {
			m = make(map[job.State]int)
			st.ByQueue[q] = m
		}
		m[job.State(state)] = n
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return store.Stats{}, s.readErr(err)
	}
	if !p.FinishedSince.IsZero() {
		rows, err := tx.QueryContext(ctx, sqlFinishedSince, store.UnixNanos(p.FinishedSince))
		if err != nil {
			return store.Stats{}, s.readErr(err)
		}
		defer rows.Close()
		for rows.Next() {
			var state int64
			var n int
			if err := rows.Scan(&state, &n); err != nil {
				return store.Stats{}, s.readErr(err)
			}
			st.Finished[job.State(state)] = n
		}
		if err := rows.Err(); err != nil {
			return store.Stats{}, s.readErr(err)
		}
	}
	return st, nil
}

// GetSchedule implements store.Store.
func (s *Store) GetSchedule(ctx context.Context, name string) (*job.Schedule, error) {
	if err := s.errIfClosed(); err != nil {
		return nil, err
	}
	sc, err := scanSchedule(s.rdb.QueryRowContext(ctx, `SELECT `+scheduleCols+` FROM schedules WHERE name = ?`, name))
	if errors.Is(err, sql.ErrNoRows) {
		return nil, notFoundSchedule(name)
	}
	if err != nil {
		return nil, s.readErr(err)
	}
	return sc, nil
}

// ListSchedules implements store.Store.
func (s *Store) ListSchedules(ctx context.Context) ([]*job.Schedule, error) {
	if err := s.errIfClosed(); err != nil {
		return nil, err
	}
	rows, err := s.rdb.QueryContext(ctx, `SELECT `+scheduleCols+` FROM schedules ORDER BY name`)
	if err != nil {
		return nil, s.readErr(err)
	}
	defer rows.Close()
	var out []*job.Schedule
	for rows.Next() {
		sc, err := scanSchedule(rows)
		if err != nil {
			return nil, s.readErr(err)
		}
		out = append(out, sc)
	}
	if err := rows.Err(); err != nil {
		return nil, s.readErr(err)
	}
	return out, nil
}
