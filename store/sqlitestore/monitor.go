package sqlitestore

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/hopperq/hopper/job"
	"github.com/hopperq/hopper/store"
)

// monitorText is the monitor column of m: its JSON, or ” for none.
func monitorText(m *job.Monitor) string {
	b, _ := store.EncodeMonitor(m) // a Monitor always encodes
	return string(b)
}

const incidentCols = `id, subject, problem, job_id, detail, opened_at, resolved_at`

func scanIncident(r scanner) (*job.Incident, error) {
	var (
		in             job.Incident
		jobID, op, res int64
		problem        string
	)
	if err := r.Scan(&in.ID, &in.Subject, &problem, &jobID, &in.Detail, &op, &res); err != nil {
		return nil, err
	}
	in.Problem, in.Job = job.Problem(problem), job.ID(jobID)
	in.OpenedAt, in.ResolvedAt = store.FromUnixNanos(op), store.FromUnixNanos(res)
	return &in, nil
}

// insertJobs inserts the checked jobs of a notification in w's
// transaction.
func insertJobs(w *writer, jobs []*job.Job) ([]job.ID, error) {
	if len(jobs) == 0 {
		return nil, nil
	}
	rows, err := makeRows(jobs)
	if err != nil {
		return nil, err
	}
	return insertRows(w, rows, nil)
}

// OpenIncident implements store.Store.
func (s *Store) OpenIncident(ctx context.Context, p store.OpenIncidentParams) (store.IncidentResult, error) {
	if err := store.CheckIncident(p.Incident); err != nil {
		return store.IncidentResult{}, err
	}
	var res store.IncidentResult
	err := s.write(ctx, func(w *writer) error {
		res = store.IncidentResult{}
		in := *p.Incident
		cur, err := scanIncident(w.conn.QueryRowContext(bg, `SELECT `+incidentCols+` FROM incidents
			WHERE subject = ? AND problem = ? AND resolved_at = 0`, in.Subject, string(in.Problem)))
		if err == nil {
			res.Incident = cur
			return nil
		}
		if !errors.Is(err, sql.ErrNoRows) {
			return err
		}
		in.OpenedAt = store.FromUnixNanos(store.UnixNanos(in.OpenedAt))
		if err := w.scanRow(`INSERT INTO incidents (subject, problem, job_id, detail, opened_at) VALUES (?, ?, ?, ?, ?) RETURNING id`,
			[]any{in.Subject, string(in.Problem), int64(in.Job), in.Detail, store.UnixNanos(in.OpenedAt)}, &in.ID); err != nil {
			return err
		}
		jobs, err := store.NotifyJobs(p.Notify, &in)
		if err != nil {
			return err
		}
		if res.Jobs, err = insertJobs(w, jobs); err != nil {
			return err
		}
		if p.Pause != "" {
			if _, err := w.exec(`UPDATE schedules SET paused = 1 WHERE name = ?`, p.Pause); err != nil {
				return err
			}
		}
		res.Changed, res.Incident = true, &in
		return nil
	})
	return res, err
}

// ResolveIncident implements store.Store.
func (s *Store) ResolveIncident(ctx context.Context, p store.ResolveIncidentParams) (store.IncidentResult, error) {
	if p.At.IsZero() {
		return store.IncidentResult{}, job.Invalid("at", "must be set")
	}
	var res store.IncidentResult
	err := s.write(ctx, func(w *writer) error {
		res = store.IncidentResult{}
		in, err := scanIncident(w.conn.QueryRowContext(bg, `SELECT `+incidentCols+` FROM incidents WHERE id = ?`, p.ID))
		if errors.Is(err, sql.ErrNoRows) {
			return fmt.Errorf("incident %d: %w", p.ID, job.ErrNotFound)
		}
		if err != nil {
			return err
		}
		res.Incident = in
		if !in.Open() {
			return nil
		}
		in.ResolvedAt = store.FromUnixNanos(store.UnixNanos(p.At))
		if _, err := w.exec(`UPDATE incidents SET resolved_at = ? WHERE id = ?`, store.UnixNanos(in.ResolvedAt), p.ID); err != nil {
			return err
		}
		jobs, err := store.NotifyJobs(p.Notify, in)
		if err != nil {
			return err
		}
		if res.Jobs, err = insertJobs(w, jobs); err != nil {
			return err
		}
		res.Changed = true
		return nil
	})
	return res, err
}

// ListIncidents implements store.Store.
func (s *Store) ListIncidents(ctx context.Context, p store.ListIncidentsParams) ([]*job.Incident, error) {
	if err := s.errIfClosed(); err != nil {
		return nil, err
	}
	var where []string
	var args []any
	if p.Subject != "" {
		where, args = append(where, "subject = ?"), append(args, p.Subject)
	}
	if p.OpenOnly {
		where = append(where, "resolved_at = 0")
	}
	if p.BeforeID > 0 {
		where, args = append(where, "id < ?"), append(args, p.BeforeID)
	}
	q := `SELECT ` + incidentCols + ` FROM incidents`
	if len(where) > 0 {
		q += ` WHERE ` + strings.Join(where, " AND ")
	}
	q += ` ORDER BY id DESC LIMIT ?`
	rows, err := s.rdb.QueryContext(ctx, q, append(args, store.ListParams{Limit: p.Limit}.PageLimit())...)
	if err != nil {
		return nil, s.readErr(err)
	}
	out, err := appendRows([]*job.Incident{}, rows, scanIncident)
	if err != nil {
		return nil, s.readErr(err)
	}
	return out, nil
}

// PutChannel implements store.Store.
func (s *Store) PutChannel(ctx context.Context, c *job.Channel) error {
	if err := c.Check(); err != nil {
		return err
	}
	c.CreatedAt = store.FromUnixNanos(store.UnixNanos(c.CreatedAt))
	doc, err := json.Marshal(c)
	if err != nil {
		return err
	}
	return s.write(ctx, func(w *writer) error {
		_, err := w.exec(`INSERT OR REPLACE INTO channels (name, doc) VALUES (?, ?)`, c.Name, string(doc))
		return err
	})
}

func scanChannel(r scanner) (*job.Channel, error) {
	var doc string
	if err := r.Scan(&doc); err != nil {
		return nil, err
	}
	var c job.Channel
	if err := json.Unmarshal([]byte(doc), &c); err != nil {
		return nil, fmt.Errorf("stored channel: %w", err)
	}
	return &c, nil
}

// GetChannel implements store.Store.
func (s *Store) GetChannel(ctx context.Context, name string) (*job.Channel, error) {
	if err := s.errIfClosed(); err != nil {
		return nil, err
	}
	c, err := scanChannel(s.rdb.QueryRowContext(ctx, `SELECT doc FROM channels WHERE name = ?`, name))
	if errors.Is(err, sql.ErrNoRows) {
		return nil, fmt.Errorf("channel %q: %w", name, job.ErrNotFound)
	}
	if err != nil {
		return nil, s.readErr(err)
	}
	return c, nil
}

// ListChannels implements store.Store.
func (s *Store) ListChannels(ctx context.Context) ([]*job.Channel, error) {
	return listDocs(ctx, s, "channels", scanChannel)
}

// listDocs reads every row of table, a table of (name, doc) rows, in
// name order, each through scan.
func listDocs[T any](ctx context.Context, s *Store, table string, scan func(scanner) (*T, error)) ([]*T, error) {
	if err := s.errIfClosed(); err != nil {
		return nil, err
	}
	rows, err := s.rdb.QueryContext(ctx, `SELECT doc FROM `+table+` ORDER BY name`)
	if err != nil {
		return nil, s.readErr(err)
	}
	out, err := appendRows([]*T{}, rows, scan)
	if err != nil {
		return nil, s.readErr(err)
	}
	return out, nil
}

// RemoveChannel implements store.Store.
func (s *Store) RemoveChannel(ctx context.Context, name string) error {
	return s.write(ctx, func(w *writer) error {
		n, err := w.execN(`DELETE FROM channels WHERE name = ?`, name)
		if err == nil && n == 0 {
			err = fmt.Errorf("channel %q: %w", name, job.ErrNotFound)
		}
		return err
	})
}

// LastRuns implements store.Store, through the jobs_fire index's
// schedule prefix.
func (s *Store) LastRuns(ctx context.Context, p store.LastRunsParams) ([]*job.Job, error) {
	if p.Limit < 1 {
		return nil, job.Invalid("limit", "must be at least 1, got %d", p.Limit)
	}
	if err := s.errIfClosed(); err != nil {
		return nil, err
	}
	rows, err := s.rdb.QueryContext(ctx, `SELECT `+jobCols+` FROM jobs WHERE schedule = ? AND state IN ('completed', 'dead')
		ORDER BY id DESC LIMIT ?`, p.Schedule, p.Limit)
	if err != nil {
		return nil, s.readErr(err)
	}
	out, err := scanJobs(rows)
	if err != nil {
		return nil, s.readErr(err)
	}
	return out, nil
}

// The outbox of dead-job notifications: the unnoted deaths through
// jobs_unnoted, in ID order; a death noted by a compare-and-set on its
// finish time.
const (
	sqlPendingDeaths = `SELECT ` + jobCols + ` FROM jobs WHERE state = 'dead' AND dead_noted != finished_at
		ORDER BY id LIMIT ?`
	sqlNoteDeath = `UPDATE jobs SET dead_noted = finished_at
		WHERE id = ? AND state = 'dead' AND finished_at = ? AND dead_noted != finished_at`
)

// PendingDeaths implements store.Store, through jobs_unnoted.
func (s *Store) PendingDeaths(ctx context.Context, limit int) ([]*job.Job, error) {
	if err := store.CheckPendingLimit(limit); err != nil {
		return nil, err
	}
	if err := s.errIfClosed(); err != nil {
		return nil, err
	}
	rows, err := s.rdb.QueryContext(ctx, sqlPendingDeaths, limit)
	if err != nil {
		return nil, s.readErr(err)
	}
	out, err := appendRows([]*job.Job{}, rows, scanJob)
	if err != nil {
		return nil, s.readErr(err)
	}
	return out, nil
}

// NoteDeaths implements store.Store: each death is noted by a
// compare-and-set on its finish time, and the notifications of those
// noted are inserted in the same transaction.
func (s *Store) NoteDeaths(ctx context.Context, p store.NoteDeathsParams) (store.NoteDeathsResult, error) {
	var res store.NoteDeathsResult
	err := s.write(ctx, func(w *writer) error {
		res = store.NoteDeathsResult{}
		var jobs []*job.Job
		for _, d := range p.Deaths {
			n, err := w.execN(sqlNoteDeath, int64(d.ID), store.UnixNanos(d.FinishedAt))
			if err != nil {
				return err
			}
			if n == 0 {
				continue
			}
			js, err := store.DeathJobs(p.Notify, d)
			if err != nil {
				return err
			}
			jobs = append(jobs, js...)
			res.Noted = append(res.Noted, d.ID)
		}
		var err error
		res.Jobs, err = insertJobs(w, jobs)
		return err
	})
	return res, err
}
