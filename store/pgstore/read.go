package pgstore

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/hopperq/hopper/job"
	"github.com/hopperq/hopper/store"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgtype"
)

// Reads run on the pool, each statement in its own snapshot; they never
// wait for writers. A read-only Store of a database without Hopper's
// schema (s.empty) answers every read as an empty store would.

// Get implements store.Store.
func (s *Store) Get(ctx context.Context, id job.ID) (*job.Job, error) {
	if err := s.readable(); err != nil {
		return nil, err
	}
	if s.empty {
		return nil, fmt.Errorf("job %d: %w", id, job.ErrNotFound)
	}
	j, err := scanJob(s.pool.QueryRow(ctx, s.q(`SELECT `+jobCols+` FROM {schema}.jobs WHERE id = $1`), int64(id)))
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, fmt.Errorf("job %d: %w", id, job.ErrNotFound)
	}
	if err != nil {
		return nil, s.translate(err)
	}
	return j, nil
}

// validState reports whether st is one of job.States.
func validState(st job.State) bool { return st >= job.StateScheduled && st <= job.StateDead }

// filter returns the WHERE conditions of p's filters, adding their
// arguments to a. States are literals, so that the planner can use the
// partial index of each.
func filter(p store.ListParams, a *sqlArgs) []string {
	var where []string
	if len(p.States) > 0 {
		lits := make([]string, 0, len(p.States))
		for _, st := range p.States {
			if validState(st) {
				lits = append(lits, stateLiteral(st))
			}
		}
		if len(lits) == 0 {
			lits = append(lits, "NULL") // no valid state: matches nothing
		}
		where = append(where, "state IN ("+strings.Join(lits, ", ")+")")
	}
	if p.Queue != "" {
		where = append(where, "queue = "+a.add(p.Queue))
	}
	if p.Kind != "" {
		where = append(where, "kind = "+a.add(p.Kind))
	}
	return where
}

// List implements store.Store. It walks the primary key in ID order from
// AfterID and filters, so it is fast for pages of recent or common jobs,
// slower for a rare kind or queue among millions.
func (s *Store) List(ctx context.Context, p store.ListParams) ([]*job.Job, error) {
	if err := s.readable(); err != nil {
		return nil, err
	}
	if s.empty {
		return nil, nil
	}
	var a sqlArgs
	where := filter(p, &a)
	id, from := "id", ` FROM {schema}.jobs`
	if p.Tag != "" {
		// The tag's entries of job_tags in ID order, each job by its ID:
		// LATERAL with OFFSET 0 (not pulled up into a join) keeps that
		// nested loop whatever the planner thinks of the tables' sizes:
		// without it, a count by tag and state took seconds at 1M jobs (a
		// hash join reading every job).
		id, from = "t.job_id", ` FROM {schema}.job_tags t CROSS JOIN LATERAL (SELECT * FROM {schema}.jobs WHERE jobs.id = t.job_id OFFSET 0) jobs`
		where = append(where, "t.tag = "+a.add(p.Tag))
	}
	order := "ASC"
	if p.Desc {
		order = "DESC"
		if p.AfterID > 0 {
			where = append(where, id+" < "+a.add(int64(p.AfterID)))
		}
	} else if p.AfterID > 0 {
		where = append(where, id+" > "+a.add(int64(p.AfterID)))
	}
	if !p.CreatedAfter.IsZero() {
		where = append(where, "created_at >= "+a.add(ts(p.CreatedAfter)))
	}
	if !p.CreatedBefore.IsZero() {
		where = append(where, "created_at < "+a.add(ts(p.CreatedBefore)))
	}
	q := `SELECT ` + jobColsOf("jobs") + from
	if len(where) > 0 {
		q += ` WHERE ` + strings.Join(where, " AND ")
	}
	limit := p.PageLimit()
	q += ` ORDER BY ` + id + ` ` + order + ` LIMIT ` + a.add(int64(limit))
	rows, err := s.pool.Query(ctx, s.q(q), a...)
	if err != nil {
		return nil, s.translate(err)
	}
	jobs, err := scanJobs(rows)
	if err != nil {
		return nil, s.translate(err)
	}
	return jobs, nil
}

// Count implements store.Store. It counts state by state, each with the
// partial index of that state: waiting and running jobs cost what there
// are of them, never a scan of the table; finished ones the entries of
// jobs_finished (which carries queue and kind).
func (s *Store) Count(ctx context.Context, p store.ListParams) (int, error) {
	if err := s.readable(); err != nil {
		return 0, err
	}
	if s.empty {
		return 0, nil
	}
	states := p.States
	if len(states) == 0 {
		states = job.States
	}
	var a sqlArgs
	if p.Tag != "" {
		// The tag's range of job_tags: alone without other filters, else
		// each job looked up by ID.
		q := `SELECT count(*) FROM {schema}.job_tags t WHERE t.tag = ` + a.add(p.Tag)
		if len(p.States) > 0 || p.Queue != "" || p.Kind != "" {
			where := filter(store.ListParams{States: p.States, Queue: p.Queue, Kind: p.Kind}, &a)
			q = `SELECT count(*) FROM {schema}.job_tags t CROSS JOIN LATERAL (SELECT 1 FROM {schema}.jobs
				WHERE jobs.id = t.job_id AND ` + strings.Join(where, " AND ") + ` OFFSET 0) j WHERE t.tag = $1`
		}
		var n int64
		if err := s.pool.QueryRow(ctx, s.q(q), a...).Scan(&n); err != nil {
			return 0, s.translate(err)
		}
		return int(n), nil
	}
	rest := filter(store.ListParams{Queue: p.Queue, Kind: p.Kind}, &a)
	var arms []string
	seen := map[job.State]bool{}
	for _, st := range states {
		if seen[st] || !validState(st) {
			continue
		}
		seen[st] = true
		where := append([]string{"state = " + stateLiteral(st)}, rest...)
		arms = append(arms, `(SELECT count(*) FROM {schema}.jobs WHERE `+strings.Join(where, " AND ")+`)`)
	}
	if len(arms) == 0 {
		return 0, nil
	}
	var n int64
	if err := s.pool.QueryRow(ctx, s.q(`SELECT `+strings.Join(arms, " + ")), a...).Scan(&n); err != nil {
		return 0, s.translate(err)
	}
	return int(n), nil
}

// sqlOldestAvailable reads the earliest run-at of each queue's available
// jobs (Stats.OldestAvailable) with a loose index scan of jobs_claim
// (queue, priority, run_at, id): g walks the index from one (queue,
// priority) group to the next, each step a seek, and the first entry of a
// group has the group's earliest run-at. O(groups × log n), where
// min(run_at) by queue reads every entry (the index orders a queue's jobs
// by priority first).
const sqlOldestAvailable = `WITH RECURSIVE g (queue, priority, run_at) AS (
		(SELECT queue, priority, run_at FROM {schema}.jobs WHERE state = 'available'
			ORDER BY queue, priority, run_at LIMIT 1)
		UNION ALL
		SELECT n.queue, n.priority, n.run_at FROM g, LATERAL (SELECT queue, priority, run_at FROM {schema}.jobs
			WHERE state = 'available' AND (queue, priority) > (g.queue, g.priority)
			ORDER BY queue, priority, run_at LIMIT 1) n)
	SELECT queue, min(run_at) AS oldest FROM g GROUP BY queue`

// queueCountsSQL counts the jobs of states by queue and state, state by
// state so that each arm reads the partial index of its state; the arm of
// available jobs also carries the earliest run-at of each queue
// (sqlOldestAvailable).
func queueCountsSQL(states []job.State) string {
	var arms []string
	for _, st := range states {
		count := `SELECT queue, ` + stateLiteral(st) + `::text, count(*), NULL::timestamptz FROM {schema}.jobs
			WHERE state = ` + stateLiteral(st) + ` GROUP BY queue`
		if st == job.StateAvailable {
			count = `SELECT c.queue, ` + stateLiteral(st) + `::text, c.n, o.oldest
			FROM (SELECT queue, count(*) AS n FROM {schema}.jobs WHERE state = ` + stateLiteral(st) + ` GROUP BY queue) c
			LEFT JOIN (` + sqlOldestAvailable + `) o USING (queue)`
		}
		arms = append(arms, count)
	}
	return strings.Join(arms, "\nUNION ALL\n")
}

// The counts by queue of Stats: of waiting and running jobs (the partial
// indexes of their states, never a scan of the table), and of finished
// ones (jobs_finished, or a scan when they are most of the table, as the
// planner sees fit).
var (
	sqlQueueCountsLive     = queueCountsSQL([]job.State{job.StateScheduled, job.StateAvailable, job.StateRunning, job.StateRetrying})
	sqlQueueCountsFinished = queueCountsSQL([]job.State{job.StateCompleted, job.StateCancelled, job.StateDead})
)

// sqlFinishedSince counts the jobs finished since $1 by final state, with
// the earliest finish time of each (a range of jobs_finished per state).
const sqlFinishedSince = `SELECT state::text, count(*), min(finished_at) FROM {schema}.jobs
	WHERE ` + sqlFinished + ` AND finished_at >= $1 GROUP BY state`

// scanQueueCounts reads the next result of br, a queueCountsSQL, into st.
func (s *Store) scanQueueCounts(br pgx.BatchResults, st *store.Stats) error {
	rows, err := br.Query()
	if err != nil {
		return err
	}
	defer rows.Close()
	for rows.Next() {
		var (
			q, name string
			n       int64
			oldest  pgtype.Timestamptz
		)
		if err := rows.Scan(&q, &name, &n, &oldest); err != nil {
			return err
		}
		state, err := parseState(name)
		if err != nil {
			return err
		}
		m := st.ByQueue[q]
		if m == nil {
			m = make(map[job.State]int)
			st.ByQueue[q] = m
		}
		m[state] = int(n)
		if oldest.Valid {
			if st.OldestAvailable == nil {
				st.OldestAvailable = make(map[string]time.Time)
			}
			st.OldestAvailable[q] = fromTS(oldest)
		}
	}
	return rows.Err()
}

// sqlFinishedSteps counts the jobs finished since $1 by final state and
// by step of $2 nanoseconds (Stats.Series): a range of jobs_finished per
// state.
const sqlFinishedSteps = `SELECT state::text,
		((extract(epoch FROM finished_at - $1::timestamptz) * 1000000000)::bigint / $2::bigint) AS step, count(*)
	FROM {schema}.jobs WHERE ` + sqlFinished + ` AND finished_at >= $1 GROUP BY 1, 2`

// scanSeries reads the next result of br, a sqlFinishedSteps, into n
// steps of st.Series.
func scanSeries(br pgx.BatchResults, st *store.Stats, n int) error {
	st.Series = make(map[job.State][]int)
	for _, state := range []job.State{job.StateCompleted, job.StateCancelled, job.StateDead} {
		st.Series[state] = make([]int, n)
	}
	rows, err := br.Query()
	if err != nil {
		return err
	}
	defer rows.Close()
	for rows.Next() {
		var (
			name string
			i, k int64
		)
		if err := rows.Scan(&name, &i, &k); err != nil {
			return err
		}
		state, err := parseState(name)
		if err != nil {
			return err
		}
		if i >= 0 && i < int64(n) {
			st.Series[state][i] += int(k)
		}
	}
	return rows.Err()
}

// Stats implements store.Store, in one round trip and one snapshot (a
// repeatable-read, read-only transaction). Each count reads the partial
// index of its state: waiting and running jobs cost what there are of
// them; finished jobs the entries of jobs_finished.
func (s *Store) Stats(ctx context.Context, p store.StatsParams) (store.Stats, error) {
	if err := s.readable(); err != nil {
		return store.Stats{}, err
	}
	st := store.Stats{ByQueue: make(map[string]map[job.State]int), Finished: make(map[job.State]int)}
	if s.empty {
		return st, nil
	}
	err := pgx.BeginTxFunc(ctx, s.pool, pgx.TxOptions{IsoLevel: pgx.RepeatableRead, AccessMode: pgx.ReadOnly}, func(tx pgx.Tx) error {
		b := &pgx.Batch{}
		b.Queue(s.q(sqlQueueCountsLive))
		b.Queue(s.q(sqlQueueCountsFinished))
		steps := 0
		if !p.FinishedSince.IsZero() {
			if steps = store.Steps(p.FinishedSince, p.Now, p.Step); steps > 0 {
				b.Queue(s.q(sqlFinishedSteps), ts(p.FinishedSince), int64(p.Step))
			}
			b.Queue(s.q(sqlFinishedSince), ts(p.FinishedSince))
		}
		br := tx.SendBatch(ctx, b)
		defer br.Close()
		for range 2 {
			if err := s.scanQueueCounts(br, &st); err != nil {
				return err
			}
		}
		if steps > 0 {
			if err := scanSeries(br, &st, steps); err != nil {
				return err
			}
		}
		if !p.FinishedSince.IsZero() {
			rows, err := br.Query()
			if err != nil {
				return err
			}
			for rows.Next() {
				var (
					name  string
					n     int64
					first pgtype.Timestamptz
				)
				if err := rows.Scan(&name, &n, &first); err != nil {
					rows.Close()
					return err
				}
				state, err := parseState(name)
				if err != nil {
					rows.Close()
					return err
				}
				st.Finished[state] = int(n)
				if f := fromTS(first); st.FirstFinished.IsZero() || f.Before(st.FirstFinished) {
					st.FirstFinished = f
				}
			}
			rows.Close()
			if err := rows.Err(); err != nil {
				return err
			}
		}
		return br.Close()
	})
	if err != nil {
		return store.Stats{}, s.translate(err)
	}
	return st, nil
}
