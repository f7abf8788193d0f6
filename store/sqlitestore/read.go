package sqlitestore

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"
	"time"

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
			args = append(args, stateName(st))
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

// Count implements store.Store. It sums the store-kept lane_counts
// (state, queue, kind; counts.go), whatever the filters: O(lanes), not
// O(jobs).
func (s *Store) Count(ctx context.Context, p store.ListParams) (int, error) {
	if err := s.errIfClosed(); err != nil {
		return 0, err
	}
	where, args := filter(p)
	if p.Tag != "" {
		return s.countTag(ctx, p.Tag, where, args)
	}
	q := `SELECT coalesce(sum(n), 0) FROM lane_counts`
	if len(where) > 0 {
		q += ` WHERE ` + strings.Join(where, " AND ")
	}
	var n int
	if err := s.rdb.QueryRowContext(ctx, q, args...).Scan(&n); err != nil {
		return 0, s.readErr(err)
	}
	return n, nil
}

// countTag counts the jobs carrying tag that match where: a range of
// job_tags' primary key, each entry looked up in jobs by ID when where
// filters (state, queue, kind), else the range alone.
func (s *Store) countTag(ctx context.Context, tag string, where []string, args []any) (int, error) {
	q := `SELECT count(*) FROM job_tags t WHERE t.tag = ?` // the index alone
	if len(where) > 0 {
		q = `SELECT count(*) FROM job_tags t CROSS JOIN jobs ON jobs.id = t.job_id WHERE t.tag = ? AND ` + strings.Join(where, " AND ")
	}
	var n int
	if err := s.rdb.QueryRowContext(ctx, q, append([]any{tag}, args...)...).Scan(&n); err != nil {
		return 0, s.readErr(err)
	}
	return n, nil
}

// List implements store.Store. It walks the primary key in ID order from
// AfterID and filters, so it is fast for pages of recent or common jobs,
// slower for a rare kind or queue among millions. With a tag it walks the
// tag's entries of job_tags in ID order instead (CROSS JOIN keeps that
// order of the loops), whatever the tag's share of the jobs.
func (s *Store) List(ctx context.Context, p store.ListParams) ([]*job.Job, error) {
	if err := s.errIfClosed(); err != nil {
		return nil, err
	}
	where, args := filter(p)
	id, from := "id", ` FROM jobs`
	if p.Tag != "" {
		id, from = "t.job_id", ` FROM job_tags t CROSS JOIN jobs ON jobs.id = t.job_id`
		where, args = append([]string{"t.tag = ?"}, where...), append([]any{p.Tag}, args...)
	}
	order := "ASC"
	if p.Desc {
		order = "DESC"
		if p.AfterID > 0 {
			where, args = append(where, id+" < ?"), append(args, int64(p.AfterID))
		}
	} else if p.AfterID > 0 {
		where, args = append(where, id+" > ?"), append(args, int64(p.AfterID))
	}
	if !p.CreatedAfter.IsZero() {
		where, args = append(where, "created_at >= ?"), append(args, store.UnixNanos(p.CreatedAfter))
	}
	if !p.CreatedBefore.IsZero() {
		where, args = append(where, "created_at < ?"), append(args, store.UnixNanos(p.CreatedBefore))
	}
	q := `SELECT ` + jobCols + from
	if len(where) > 0 {
		q += ` WHERE ` + strings.Join(where, " AND ")
	}
	limit := p.PageLimit()
	q += ` ORDER BY ` + id + ` ` + order + ` LIMIT +?`
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

// sqlFinishedSince counts jobs finished since a time, by final state, with
// the earliest finish time of each state.
const sqlFinishedSince = `SELECT state, count(*), min(finished_at) FROM jobs
	WHERE ` + sqlFinished + ` AND finished_at >= ? GROUP BY state`

// sqlOldestAvailable reads the earliest run-at of each queue's available
// jobs with a loose index scan of jobs_claim (queue, kind, priority,
// run_at, id): the claim index orders a queue's jobs by priority before
// run-at, so min(run_at) per queue would read all its entries. Instead g
// walks the index from one (queue, kind, priority) group to the next, each
// step a seek; the first entry of a group has the group's earliest run-at,
// and the earliest of a queue's groups is the queue's. The cost is
// O(groups × log n), whatever the backlog. The step seeks the next group
// level by level (a higher priority in the same lane, else the next kind
// of the queue, else the next queue): SQLite seeks a row-value comparison
// (queue, kind, priority) > (…) on queue only, then reads the rest of the
// queue. Each group costs up to three index seeks and a rowid lookup.
const sqlOldestAvailable = `WITH RECURSIVE g(queue, kind, priority, run_at) AS (
		SELECT queue, kind, priority, run_at FROM jobs WHERE id = (SELECT id FROM jobs
			WHERE state = 'available' AND queue = (SELECT min(queue) FROM jobs WHERE state = 'available')
			ORDER BY kind, priority, run_at, id LIMIT 1)
		UNION ALL
		SELECT j.queue, j.kind, j.priority, j.run_at FROM g JOIN jobs j ON j.id = coalesce(
			(SELECT id FROM jobs WHERE state = 'available' AND queue = g.queue AND kind = g.kind
				AND priority > g.priority ORDER BY priority, run_at, id LIMIT 1),
			(SELECT id FROM jobs WHERE state = 'available' AND queue = g.queue AND kind > g.kind
				ORDER BY kind, priority, run_at, id LIMIT 1),
			(SELECT id FROM jobs WHERE state = 'available' AND queue > g.queue
				ORDER BY queue, kind, priority, run_at, id LIMIT 1)))
	SELECT queue, min(run_at) FROM g GROUP BY queue`

// sqlFinishedSteps counts jobs finished since a time by final state and
// step, from the jobs_finished index.
const sqlFinishedSteps = `SELECT state, (finished_at - ?1) / ?2, count(*) FROM jobs
	WHERE ` + sqlFinished + ` AND finished_at >= ?1 GROUP BY 1, 2`

// finishedSeries returns Stats.Series, n steps, read in tx.
func finishedSeries(ctx context.Context, tx *sql.Tx, p store.StatsParams, n int) (map[job.State][]int, error) {
	out := make(map[job.State][]int)
	for _, state := range []job.State{job.StateCompleted, job.StateCancelled, job.StateDead} {
		out[state] = make([]int, n)
	}
	rows, err := tx.QueryContext(ctx, sqlFinishedSteps, store.UnixNanos(p.FinishedSince), int64(p.Step))
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	for rows.Next() {
		var name string
		var i int64
		var c int
		if err := rows.Scan(&name, &i, &c); err != nil {
			return nil, err
		}
		state, err := parseState(name)
		if err != nil {
			return nil, err
		}
		if i >= 0 && int(i) < n {
			out[state][i] += c
		}
	}
	return out, rows.Err()
}

// oldestAvailable returns Stats.OldestAvailable, read in tx.
func oldestAvailable(ctx context.Context, tx *sql.Tx) (map[string]time.Time, error) {
	rows, err := tx.QueryContext(ctx, sqlOldestAvailable)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out map[string]time.Time
	for rows.Next() {
		var q string
		var oldest int64
		if err := rows.Scan(&q, &oldest); err != nil {
			return nil, err
		}
		if out == nil {
			out = make(map[string]time.Time)
		}
		out[q] = store.FromUnixNanos(oldest)
	}
	return out, rows.Err()
}

// sqlQueueCounts counts the jobs of each queue by state.
const sqlQueueCounts = `SELECT queue, state, sum(n) FROM lane_counts GROUP BY queue, state HAVING sum(n) > 0`

// Stats implements store.Store. The counts by queue and state come from
// the lane_counts table the store keeps (counts.go; O(lanes)); the
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
	rows, err := tx.QueryContext(ctx, sqlQueueCounts)
	if err != nil {
		return store.Stats{}, s.readErr(err)
	}
	for rows.Next() {
		var (
			q, name string
			n       int
		)
		if err := rows.Scan(&q, &name, &n); err != nil {
			rows.Close()
			return store.Stats{}, s.readErr(err)
		}
		state, err := parseState(name)
		if err != nil {
			rows.Close()
			return store.Stats{}, err
		}
		m := st.ByQueue[q]
		if m == nil {
			m = make(map[job.State]int)
			st.ByQueue[q] = m
		}
		m[state] = n
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return store.Stats{}, s.readErr(err)
	}
	if st.OldestAvailable, err = oldestAvailable(ctx, tx); err != nil {
		return store.Stats{}, s.readErr(err)
	}
	if n := store.Steps(p.FinishedSince, p.Now, p.Step); n > 0 && !p.FinishedSince.IsZero() {
		if st.Series, err = finishedSeries(ctx, tx, p, n); err != nil {
			return store.Stats{}, s.readErr(err)
		}
	}
	if !p.FinishedSince.IsZero() {
		rows, err := tx.QueryContext(ctx, sqlFinishedSince, store.UnixNanos(p.FinishedSince))
		if err != nil {
			return store.Stats{}, s.readErr(err)
		}
		defer rows.Close()
		for rows.Next() {
			var name string
			var n int
			var first int64
			if err := rows.Scan(&name, &n, &first); err != nil {
				return store.Stats{}, s.readErr(err)
			}
			state, err := parseState(name)
			if err != nil {
				return store.Stats{}, err
			}
			st.Finished[state] = n
			if f := store.FromUnixNanos(first); st.FirstFinished.IsZero() || f.Before(st.FirstFinished) {
				st.FirstFinished = f
			}
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
