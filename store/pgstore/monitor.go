package pgstore

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/hopperq/hopper/job"
	"github.com/hopperq/hopper/store"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgtype"
)

const incidentCols = `id, subject, problem, job_id, detail, opened_at, resolved_at`

func scanIncident(r pgx.Row) (*job.Incident, error) {
	var (
		in      job.Incident
		jobID   int64
		problem string
		op, res pgtype.Timestamptz
	)
	if err := r.Scan(&in.ID, &in.Subject, &problem, &jobID, &in.Detail, &op, &res); err != nil {
		return nil, err
	}
	in.Problem, in.Job = job.Problem(problem), job.ID(jobID)
	in.OpenedAt, in.ResolvedAt = fromTS(op), fromTS(res)
	return &in, nil
}

// insertNotify inserts the checked jobs of a notification in tx and
// returns their IDs and the keys to wake other processes with.
func (s *Store) insertNotify(ctx context.Context, tx pgx.Tx, jobs []*job.Job) ([]job.ID, *newRows, []store.EnqueueResult, error) {
	if len(jobs) == 0 {
		return nil, nil, nil, nil
	}
	rows, err := makeRows(jobs)
	if err != nil {
		return nil, nil, nil, err
	}
	out, err := s.insert(ctx, tx, rows, notifyNone)
	if err != nil {
		return nil, nil, nil, err
	}
	ids := make([]job.ID, len(out))
	for i, r := range out {
		ids[i] = r.ID
	}
	return ids, rows, out, nil
}

// wakeFor tells other processes of the jobs inserted.
func (s *Store) wakeFor(rows *newRows, out []store.EnqueueResult) {
	if rows == nil {
		return
	}
	s.notifyKeys(lowestKeys(rows.jobs, rows.states, func(i int) int64 { return int64(out[i].ID) }))
}

// OpenIncident implements store.Store, in one transaction; the partial
// unique index incidents_open makes a concurrent second opening fail, and
// the transaction is then retried once to find the incident open.
func (s *Store) OpenIncident(ctx context.Context, p store.OpenIncidentParams) (store.IncidentResult, error) {
	if err := s.writable(); err != nil {
		return store.IncidentResult{}, err
	}
	if err := store.CheckIncident(p.Incident); err != nil {
		return store.IncidentResult{}, err
	}
	var (
		res  store.IncidentResult
		rows *newRows
		out  []store.EnqueueResult
	)
	attempt := func() error {
		return pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
			res, rows, out = store.IncidentResult{}, nil, nil
			in := *p.Incident
			cur, err := scanIncident(tx.QueryRow(ctx, s.q(`SELECT `+incidentCols+` FROM {schema}.incidents
				WHERE subject = $1 AND problem = $2 AND resolved_at IS NULL`), in.Subject, string(in.Problem)))
			if err == nil {
				res.Incident = cur
				return nil
			}
			if !errors.Is(err, pgx.ErrNoRows) {
				return err
			}
			in.OpenedAt = micro(in.OpenedAt)
			if err := tx.QueryRow(ctx, s.q(`INSERT INTO {schema}.incidents (subject, problem, job_id, detail, opened_at)
				VALUES ($1, $2, $3, $4, $5) RETURNING id`), in.Subject, string(in.Problem), int64(in.Job), in.Detail, ts(in.OpenedAt)).Scan(&in.ID); err != nil {
				return err
			}
			jobs, err := store.NotifyJobs(p.Notify, &in)
			if err != nil {
				return err
			}
			if res.Jobs, rows, out, err = s.insertNotify(ctx, tx, jobs); err != nil {
				return err
			}
			if p.Pause != "" {
				if _, err := tx.Exec(ctx, s.q(`UPDATE {schema}.schedules SET paused = true WHERE name = $1`), p.Pause); err != nil {
					return err
				}
			}
			res.Changed, res.Incident = true, &in
			return nil
		})
	}
	err := attempt()
	if isUniqueViolation(err) {
		err = attempt()
	}
	if err != nil {
		return store.IncidentResult{}, s.translate(err)
	}
	s.wakeFor(rows, out)
	return res, nil
}

// ResolveIncident implements store.Store: the incident's row locked, then
// resolved with its notification jobs in one transaction.
func (s *Store) ResolveIncident(ctx context.Context, p store.ResolveIncidentParams) (store.IncidentResult, error) {
	if err := s.writable(); err != nil {
		return store.IncidentResult{}, err
	}
	if p.At.IsZero() {
		return store.IncidentResult{}, job.Invalid("at", "must be set")
	}
	var (
		res  store.IncidentResult
		rows *newRows
		out  []store.EnqueueResult
	)
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		res, rows, out = store.IncidentResult{}, nil, nil
		in, err := scanIncident(tx.QueryRow(ctx, s.q(`SELECT `+incidentCols+` FROM {schema}.incidents WHERE id = $1 FOR UPDATE`), p.ID))
		if errors.Is(err, pgx.ErrNoRows) {
			return fmt.Errorf("incident %d: %w", p.ID, job.ErrNotFound)
		}
		if err != nil {
			return err
		}
		res.Incident = in
		if !in.Open() {
			return nil
		}
		in.ResolvedAt = micro(p.At)
		if _, err := tx.Exec(ctx, s.q(`UPDATE {schema}.incidents SET resolved_at = $1 WHERE id = $2`), ts(in.ResolvedAt), p.ID); err != nil {
			return err
		}
		jobs, err := store.NotifyJobs(p.Notify, in)
		if err != nil {
			return err
		}
		if res.Jobs, rows, out, err = s.insertNotify(ctx, tx, jobs); err != nil {
			return err
		}
		res.Changed = true
		return nil
	})
	if err != nil {
		return store.IncidentResult{}, s.translate(err)
	}
	s.wakeFor(rows, out)
	return res, nil
}

// ListIncidents implements store.Store.
func (s *Store) ListIncidents(ctx context.Context, p store.ListIncidentsParams) ([]*job.Incident, error) {
	if err := s.readable(); err != nil {
		return nil, err
	}
	if s.empty {
		return []*job.Incident{}, nil
	}
	var where []string
	var args []any
	arg := func(v any) string { args = append(args, v); return "$" + strconv.Itoa(len(args)) }
	if p.Subject != "" {
		where = append(where, "subject = "+arg(p.Subject))
	}
	if p.OpenOnly {
		where = append(where, "resolved_at IS NULL")
	}
	if p.BeforeID > 0 {
		where = append(where, "id < "+arg(p.BeforeID))
	}
	q := `SELECT ` + incidentCols + ` FROM {schema}.incidents`
	if len(where) > 0 {
		q += ` WHERE ` + strings.Join(where, " AND ")
	}
	q += ` ORDER BY id DESC LIMIT ` + arg(int64(store.ListParams{Limit: p.Limit}.PageLimit()))
	return queryAll(ctx, s, q, scanIncident, args...)
}

// queryAll runs q (with {schema}) and reads every row with scan, through
// pgx.CollectRows: none is an empty list.
func queryAll[T any](ctx context.Context, s *Store, q string, scan func(pgx.Row) (*T, error), args ...any) ([]*T, error) {
	rows, err := s.pool.Query(ctx, s.q(q), args...)
	if err != nil {
		return nil, s.translate(err)
	}
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (*T, error) { return scan(r) })
	if err != nil {
		return nil, s.translate(err)
	}
	return out, nil
}

// PutChannel implements store.Store.
func (s *Store) PutChannel(ctx context.Context, c *job.Channel) error {
	if err := s.writable(); err != nil {
		return err
	}
	if err := c.Check(); err != nil {
		return err
	}
	c.CreatedAt = micro(c.CreatedAt)
	doc, err := json.Marshal(c)
	if err != nil {
		return err
	}
	_, err = s.pool.Exec(ctx, s.q(`INSERT INTO {schema}.channels (name, doc) VALUES ($1, $2::jsonb)
		ON CONFLICT (name) DO UPDATE SET doc = EXCLUDED.doc`), c.Name, string(doc))
	return s.translate(err)
}

func scanChannel(r pgx.Row) (*job.Channel, error) {
	var doc []byte
	if err := r.Scan(&doc); err != nil {
		return nil, err
	}
	var c job.Channel
	if err := json.Unmarshal(doc, &c); err != nil {
		return nil, fmt.Errorf("stored channel: %w", err)
	}
	return &c, nil
}

// GetChannel implements store.Store.
func (s *Store) GetChannel(ctx context.Context, name string) (*job.Channel, error) {
	if err := s.readable(); err != nil {
		return nil, err
	}
	if s.empty {
		return nil, fmt.Errorf("channel %q: %w", name, job.ErrNotFound)
	}
	c, err := scanChannel(s.pool.QueryRow(ctx, s.q(`SELECT doc FROM {schema}.channels WHERE name = $1`), name))
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, fmt.Errorf("channel %q: %w", name, job.ErrNotFound)
	}
	if err != nil {
		return nil, s.translate(err)
	}
	return c, nil
}

// ListChannels implements store.Store.
func (s *Store) ListChannels(ctx context.Context) ([]*job.Channel, error) {
	return listDocs(ctx, s, "channels", scanChannel)
}

// listDocs reads every row of table, a table of (name, doc) rows, in
// name order, each through scan.
func listDocs[T any](ctx context.Context, s *Store, table string, scan func(pgx.Row) (*T, error)) ([]*T, error) {
	if err := s.readable(); err != nil {
		return nil, err
	}
	if s.empty {
		return []*T{}, nil
	}
	return queryAll(ctx, s, `SELECT doc FROM {schema}.`+table+` ORDER BY name`, scan)
}

// RemoveChannel implements store.Store.
func (s *Store) RemoveChannel(ctx context.Context, name string) error {
	if err := s.writable(); err != nil {
		return err
	}
	tag, err := s.pool.Exec(ctx, s.q(`DELETE FROM {schema}.channels WHERE name = $1`), name)
	if err != nil {
		return s.translate(err)
	}
	if tag.RowsAffected() == 0 {
		return fmt.Errorf("channel %q: %w", name, job.ErrNotFound)
	}
	return nil
}

// LastRuns implements store.Store, through jobs_fire's schedule prefix.
func (s *Store) LastRuns(ctx context.Context, p store.LastRunsParams) ([]*job.Job, error) {
	if p.Limit < 1 {
		return nil, job.Invalid("limit", "must be at least 1, got %d", p.Limit)
	}
	if err := s.readable(); err != nil {
		return nil, err
	}
	if s.empty {
		return nil, nil
	}
	rows, err := s.pool.Query(ctx, s.q(`SELECT `+jobColsOf("jobs")+` FROM {schema}.jobs
		WHERE schedule = $1 AND state IN ('completed', 'dead') ORDER BY id DESC LIMIT $2`), p.Schedule, int64(p.Limit))
	if err != nil {
		return nil, s.translate(err)
	}
	jobs, err := scanJobs(rows)
	if err != nil {
		return nil, s.translate(err)
	}
	return jobs, nil
}

// isUniqueViolation reports whether err is a second opening of an
// incident that incidents_open refused.
func isUniqueViolation(err error) bool {
	var pe *pgconn.PgError
	return errors.As(err, &pe) && pe.Code == codeUniqueViolation && pe.ConstraintName == "incidents_open"
}

// The outbox of dead-job notifications: the unnoted deaths through
// jobs_unnoted, in ID order; the deaths $1 (IDs) of finish times $2 noted
// if they still are unnoted, their rows locked in ID order.
const (
	sqlPendingDeaths = `SELECT ` + jobCols + ` FROM {schema}.jobs
		WHERE state = 'dead' AND dead_noted IS DISTINCT FROM finished_at ORDER BY id LIMIT $1`
	sqlNoteDeaths = `WITH d AS (
			SELECT j.id FROM {schema}.jobs j JOIN unnest($1::bigint[], $2::timestamptz[]) AS u(id, finished_at)
				ON j.id = u.id AND j.finished_at = u.finished_at
			WHERE j.state = 'dead' AND j.dead_noted IS DISTINCT FROM j.finished_at
			ORDER BY j.id FOR UPDATE OF j)
		UPDATE {schema}.jobs j SET dead_noted = j.finished_at FROM d WHERE j.id = d.id
		RETURNING j.id`
)

// PendingDeaths implements store.Store, through jobs_unnoted.
func (s *Store) PendingDeaths(ctx context.Context, limit int) ([]*job.Job, error) {
	if err := store.CheckPendingLimit(limit); err != nil {
		return nil, err
	}
	if err := s.readable(); err != nil {
		return nil, err
	}
	if s.empty {
		return []*job.Job{}, nil
	}
	return queryAll(ctx, s, sqlPendingDeaths, scanJob, int64(limit))
}

// NoteDeaths implements store.Store: one statement locks the deaths still
// unnoted in ID order (a concurrent noter waits for the rows' locks, then
// sees them noted and skips them) and notes them, and the notifications of
// those it noted are inserted in the same transaction.
func (s *Store) NoteDeaths(ctx context.Context, p store.NoteDeathsParams) (store.NoteDeathsResult, error) {
	if err := s.writable(); err != nil {
		return store.NoteDeathsResult{}, err
	}
	if len(p.Deaths) == 0 {
		return store.NoteDeathsResult{}, nil
	}
	ids := make([]int64, len(p.Deaths))
	fins := make([]pgtype.Timestamptz, len(p.Deaths))
	byID := make(map[job.ID]*job.Job, len(p.Deaths))
	for i, d := range p.Deaths {
		ids[i], fins[i], byID[d.ID] = int64(d.ID), ts(d.FinishedAt), d
	}
	var (
		res  store.NoteDeathsResult
		rows *newRows
		out  []store.EnqueueResult
	)
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		res, rows, out = store.NoteDeathsResult{}, nil, nil
		r, err := tx.Query(ctx, s.q(sqlNoteDeaths), ids, fins)
		if err != nil {
			return err
		}
		noted, err := pgx.CollectRows(r, pgx.RowTo[int64])
		if err != nil {
			return err
		}
		slices.Sort(noted)
		var jobs []*job.Job
		for _, id := range noted {
			js, err := store.DeathJobs(p.Notify, byID[job.ID(id)])
			if err != nil {
				return err
			}
			jobs = append(jobs, js...)
			res.Noted = append(res.Noted, job.ID(id))
		}
		res.Jobs, rows, out, err = s.insertNotify(ctx, tx, jobs)
		return err
	})
	if err != nil {
		return store.NoteDeathsResult{}, s.translate(err)
	}
	s.wakeFor(rows, out)
	return res, nil
}
