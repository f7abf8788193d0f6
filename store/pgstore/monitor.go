package pgstore

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
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
		return nil, nil
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
	rows, err := s.pool.Query(ctx, s.q(q), args...)
	if err != nil {
		return nil, s.translate(err)
	}
	defer rows.Close()
	var out []*job.Incident
	for rows.Next() {
		in, err := scanIncident(rows)
		if err != nil {
			return nil, s.translate(err)
		}
		out = append(out, in)
	}
	if err := rows.Err(); err != nil {
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
	out := []*T{}
	if s.empty {
		return out, nil
	}
	rows, err := s.pool.Query(ctx, s.q(`SELECT doc FROM {schema}.`+table+` ORDER BY name`))
	if err != nil {
		return nil, s.translate(err)
	}
	defer rows.Close()
	for rows.Next() {
		v, err := scan(rows)
		if err != nil {
			return nil, s.translate(err)
		}
		out = append(out, v)
	}
	if err := rows.Err(); err != nil {
		return nil, s.translate(err)
	}
	return out, nil
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
