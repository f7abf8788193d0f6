package sqlitestore

import (
	"context"
	"slices"
	"strings"

	"github.com/hopperq/hopper/job"
	"github.com/hopperq/hopper/store"
)

// Bulk actions (store.MatchParams): each call is one write request, so
// one batch shares a group-commit transaction with the workers' claims
// and finishes and holds the write lock for one batch only. A batch reads
// the candidates by primary key over the ID range (AfterID, Last] — the
// unary + keeps the planner off the partial indexes of state, queue and
// kind, which would read every matching job and sort them — and changes
// them with one statement over the same condition and the candidates' ID
// range: in the write transaction nothing else changes between the two.

// matchWhere is the condition of a batch over states and p's queue and
// kind; its last two placeholders are the ID range (after, last].
func matchWhere(p store.MatchParams, states []job.State) (string, []any) {
	var b strings.Builder
	b.WriteString("+state IN (")
	for i, st := range states {
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString("'" + stateName(st) + "'") // names of a fixed set: safe as literals
	}
	b.WriteString(")")
	var args []any
	if p.Queue != "" {
		b.WriteString(" AND +queue = ?")
		args = append(args, p.Queue)
	}
	if p.Kind != "" {
		b.WriteString(" AND +kind = ?")
		args = append(args, p.Kind)
	}
	if len(p.ExceptKinds) > 0 {
		b.WriteString(" AND +kind NOT IN (?" + strings.Repeat(", ?", len(p.ExceptKinds)-1) + ")")
		for _, k := range p.ExceptKinds {
			args = append(args, k)
		}
	}
	b.WriteString(" AND id > ? AND id <= ?")
	return b.String(), args
}

// matchQuery reads the candidates of a batch of condition where (its
// arguments, then the limit).
func matchQuery(where string) string {
	return `SELECT id, state, queue, kind FROM jobs WHERE ` + where + ` ORDER BY id LIMIT ?`
}

// cancelSQL is store.ApplyCancel in SQL on the jobs of condition where
// (its arguments follow the first, now).
func cancelSQL(where string) string {
	return `UPDATE jobs SET state = CASE WHEN state = 'running' THEN state ELSE 'cancelled' END,
		finished_at = CASE WHEN state = 'running' THEN finished_at ELSE ? END,
		cancel_requested = CASE WHEN state = 'running' THEN 1 ELSE cancel_requested END
		WHERE ` + where
}

// matched is a job of a batch as the batch reads it.
type matched struct {
	id          job.ID
	state       job.State
	queue, kind string
}

// batch is one call of a bulk action being run: its condition, and the
// candidates it read.
type batch struct {
	where string
	args  []any // without the ID range
	cands []matched
}

// span returns the batch's arguments with the ID range of its
// candidates.
func (b *batch) span() []any {
	return append(slices.Clip(b.args), int64(b.cands[0].id-1), int64(b.cands[len(b.cands)-1].id))
}

// match runs one batch of a bulk action on the jobs of p in the states of
// applies: it reads the candidates (cols: id, state, queue, kind) and
// hands them to act, in the write transaction, unless there are none.
func (s *Store) match(ctx context.Context, p store.MatchParams, applies []job.State,
	act func(w *writer, b *batch, res *store.MatchResult) error) (store.MatchResult, error) {
	if err := p.Validate(); err != nil {
		return store.MatchResult{}, err
	}
	states := p.Candidates(applies)
	if len(states) == 0 || p.AfterID >= p.UpTo {
		return store.MatchResult{}, nil // nothing in the selection: done
	}
	where, args := matchWhere(p, states)
	q := matchQuery(where)
	var res store.MatchResult
	err := s.write(ctx, func(w *writer) error {
		res = store.MatchResult{}
		b := &batch{where: where, args: args}
		rows, err := w.query(q, append(slices.Clip(args), int64(p.AfterID), int64(p.Last()), p.Size())...)
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			var c matched
			var name string
			if err := rows.Scan(&c.id, &name, &c.queue, &c.kind); err != nil {
				return err
			}
			if c.state, err = parseState(name); err != nil {
				return err
			}
			b.cands = append(b.cands, c)
		}
		if err := rows.Err(); err != nil {
			return err
		}
		rows.Close()
		var last job.ID
		if len(b.cands) > 0 {
			last = b.cands[len(b.cands)-1].id
			if err := act(w, b, &res); err != nil {
				return err
			}
		}
		res.Next = p.Next(len(b.cands), last)
		return nil
	})
	if err != nil {
		return store.MatchResult{}, err
	}
	return res, nil
}

// CancelMatching implements store.Store: store.ApplyCancel in SQL.
func (s *Store) CancelMatching(ctx context.Context, p store.MatchParams) (store.MatchResult, error) {
	res, err := s.cancelMatching(ctx, p)
	if err == nil && len(res.Running) > 0 {
		s.cancelled(ctx)
	}
	return res, err
}

func (s *Store) cancelMatching(ctx context.Context, p store.MatchParams) (store.MatchResult, error) {
	now := store.UnixNanos(p.Now)
	return s.match(ctx, p, store.CancelStates, func(w *writer, b *batch, res *store.MatchResult) error {
		q := cancelSQL(b.where)
		args := append([]any{now}, b.span()...)
		if p.ReturnJobs {
			jobs, err := w.queryJobs(q+` RETURNING `+jobCols, args...)
			if err != nil {
				return err
			}
			slices.SortFunc(jobs, func(a, b *job.Job) int { return int(a.ID - b.ID) })
			res.Jobs = jobs
		} else if _, err := w.exec(q, args...); err != nil {
			return err
		}
		c := counter{d: w.req}
		for _, j := range b.cands {
			if j.state == job.StateRunning {
				res.Running = append(res.Running, j.id)
			} else {
				c.job(j.state, job.StateCancelled, j.queue, j.kind)
			}
		}
		c.flush()
		res.Changed = len(b.cands)
		return nil
	})
}

// RetryMatching implements store.Store: store.ApplyRetryDead, in Go, as
// RetryDead.
func (s *Store) RetryMatching(ctx context.Context, p store.MatchParams) (store.MatchResult, error) {
	now := p.Now.UTC()
	return s.match(ctx, p, store.RetryStates, func(w *writer, b *batch, res *store.MatchResult) error {
		dead, err := w.queryJobs(`SELECT `+jobCols+` FROM jobs WHERE `+b.where+` ORDER BY id`, b.span()...)
		if err != nil {
			return err
		}
		retried, err := w.retryDead(dead, now)
		if err != nil {
			return err
		}
		res.Changed, res.Skipped = len(retried), len(b.cands)-len(retried)
		if p.ReturnJobs {
			res.Jobs = retried
		}
		return nil
	})
}

// DeleteMatching implements store.Store.
func (s *Store) DeleteMatching(ctx context.Context, p store.MatchParams) (store.MatchResult, error) {
	return s.match(ctx, p, store.DeleteStates, func(w *writer, b *batch, res *store.MatchResult) error {
		if _, err := w.exec(`DELETE FROM jobs WHERE `+b.where, b.span()...); err != nil {
			return err
		}
		c := counter{d: w.req}
		for _, j := range b.cands {
			c.job(j.state, 0, j.queue, j.kind)
		}
		c.flush()
		res.Changed = len(b.cands)
		return nil
	})
}
