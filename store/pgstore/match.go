package pgstore

import (
	"cmp"
	"context"
	"slices"
	"strings"

	"github.com/hopperq/hopper/job"
	"github.com/hopperq/hopper/store"
	"github.com/jackc/pgx/v5"
)

// Bulk actions (store.MatchParams). A batch first reads its candidates —
// the CTE c, by primary key over the ID range (AfterID, Last] (TestPlans
// checks that the planner does not read a partial index of every
// matching job and sort it instead) — then changes those still in a state
// the action applies to, by primary key: in ID order, the order every
// statement locking several jobs takes them in. A row another
// transaction changed meanwhile is checked again as that transaction left
// it (READ COMMITTED's re-check of an UPDATE's or DELETE's conditions).
// The change of a batch is one transaction.

// matchCTE returns the CTE c selecting a batch's candidates among states,
// with its arguments: $1 after, $2 last, $3 the limit, then the queue and
// kind if given. States are literals, names of a fixed set.

func matchCTE(p store.MatchParams, states []job.State) (string, sqlArgs) {
	a := sqlArgs{int64(p.AfterID), int64(p.Last()), int64(p.Size())}
	names := make([]string, len(states))
	for i, st := range states {
		names[i] = stateLiteral(st)
	}
	// state as text: a condition the partial indexes' cannot imply, so
	// that the planner reads the ID range by primary key rather than a
	// partial index (jobs_claim, jobs_finished) of every matching job of
	// the queue, and sorts them, in every batch.
	cond := `state::text IN (` + strings.Join(names, ", ") + `)`
	if p.Queue != "" {
		cond += ` AND queue = ` + a.add(p.Queue)
	}
	if p.Kind != "" {
		cond += ` AND kind = ` + a.add(p.Kind)
	}
	if len(p.ExceptKinds) > 0 {
		cond += ` AND kind <> ALL(` + a.add(p.ExceptKinds) + `::text[])`
	}
	return `c AS MATERIALIZED (SELECT id FROM {schema}.jobs WHERE id > $1 AND id <= $2 AND ` + cond +
		` ORDER BY id LIMIT $3)`, a
}

// matchCheck validates p and returns the states of applies that p's
// filter keeps; ok is false when the call has nothing to do (err nil: the
// selection is exhausted) or must not run (err says why).
func (s *Store) matchCheck(p store.MatchParams, applies []job.State) (states []job.State, ok bool, err error) {
	if err := p.Validate(); err != nil {
		return nil, false, err
	}
	if err := s.writable(); err != nil {
		return nil, false, err
	}
	states = p.Candidates(applies)
	return states, len(states) > 0 && p.AfterID < p.UpTo, nil
}

// next is MatchResult.Next for a batch of n candidates, the highest last
// (NULL: none).
func next(p store.MatchParams, n int, last *int64) job.ID {
	if last == nil {
		return p.Next(n, 0)
	}
	return p.Next(n, job.ID(*last))
}

// batchIDs checks p and returns the IDs of its batch's candidates in the
// states of applies (matchCTE), in order, read without locks, and a
// result holding the batch's Next; no IDs when there is nothing to do.
func (s *Store) batchIDs(ctx context.Context, p store.MatchParams, applies []job.State) ([]int64, store.MatchResult, error) {
	states, ok, err := s.matchCheck(p, applies)
	if !ok {
		return nil, store.MatchResult{}, err
	}
	cte, a := matchCTE(p, states)
	var ids []int64
	if err := s.pool.QueryRow(ctx, s.q(candidatesSQL(cte)), a...).Scan(&ids); err != nil {
		return nil, store.MatchResult{}, s.translate(err)
	}
	if len(ids) == 0 {
		return nil, store.MatchResult{Next: p.Next(0, 0)}, nil
	}
	return ids, store.MatchResult{Next: p.Next(len(ids), job.ID(ids[len(ids)-1]))}, nil
}

// candidatesSQL selects the IDs of the CTE c as an array.
func candidatesSQL(cte string) string { return `WITH ` + cte + ` SELECT ARRAY(SELECT id FROM c)` }

// sqlCancelIDs is store.ApplyCancel in SQL on the jobs $1 still waiting or
// running, $2 being now; the returned columns follow. It reads the rows by
// primary key in ID order, so it locks them in that order, and a row
// another transaction changed since the candidates were read is checked
// and changed as that transaction left it.
const sqlCancelIDs = `UPDATE {schema}.jobs j SET state = CASE WHEN j.state = 'running' THEN j.state ELSE 'cancelled' END,
		finished_at = CASE WHEN j.state = 'running' THEN j.finished_at ELSE $2 END,
		cancel_requested = j.cancel_requested OR j.state = 'running'
	WHERE j.id = ANY($1::bigint[]) AND j.` + sqlUnfinished + ` RETURNING `

// CancelMatching implements store.Store: store.ApplyCancel in SQL. The
// candidates are read, then changed, in two statements (two implicit
// transactions: the change re-checks each job's state); with ReturnJobs
// the change returns the rows it wrote.
func (s *Store) CancelMatching(ctx context.Context, p store.MatchParams) (store.MatchResult, error) {
	res, err := s.cancelMatching(ctx, p)
	if err == nil && len(res.Running) > 0 {
		s.cancelled(ctx)
	}
	return res, err
}

func (s *Store) cancelMatching(ctx context.Context, p store.MatchParams) (store.MatchResult, error) {
	ids, res, err := s.batchIDs(ctx, p, store.CancelStates)
	if err != nil || len(ids) == 0 {
		return res, err
	}
	now := ts(p.Now)
	if p.ReturnJobs {
		rows, err := s.pool.Query(ctx, s.q(sqlCancelIDs+jobColsOf("j")), ids, now)
		if err != nil {
			return store.MatchResult{}, s.translate(err)
		}
		if res.Jobs, err = scanJobs(rows); err != nil {
			return store.MatchResult{}, s.translate(err)
		}
		slices.SortFunc(res.Jobs, func(a, b *job.Job) int { return cmp.Compare(a.ID, b.ID) })
		for _, j := range res.Jobs {
			if j.State == job.StateRunning {
				res.Running = append(res.Running, j.ID)
			}
		}
		res.Changed = len(res.Jobs)
	} else {
		rows, err := s.pool.Query(ctx, s.q(sqlCancelIDs+`j.id, j.state = 'running'`), ids, now)
		if err != nil {
			return store.MatchResult{}, s.translate(err)
		}
		var id int64
		var running bool
		_, err = pgx.ForEachRow(rows, []any{&id, &running}, func() error {
			res.Changed++
			if running {
				res.Running = append(res.Running, job.ID(id))
			}
			return nil
		})
		if err != nil {
			return store.MatchResult{}, s.translate(err)
		}
		slices.Sort(res.Running)
	}
	res.Skipped = len(ids) - res.Changed
	return res, nil
}

// RetryMatching implements store.Store: the batch's dead jobs go through
// retryOnce, as RetryDead's do.
func (s *Store) RetryMatching(ctx context.Context, p store.MatchParams) (store.MatchResult, error) {
	ids, res, err := s.batchIDs(ctx, p, store.RetryStates)
	if err != nil || len(ids) == 0 {
		return res, err
	}
	_, retried, err := s.retryOnce(ctx, micro(p.Now), map[string]bool{}, func(tx pgx.Tx) (pgx.Rows, error) {
		return tx.Query(ctx, s.q(sqlDeadIDs), ids)
	})
	if err != nil {
		return store.MatchResult{}, err
	}
	res.Changed, res.Skipped = len(retried), len(ids)-len(retried)
	if p.ReturnJobs {
		res.Jobs = retried
	}
	return res, nil
}

// sqlDeleteMatching deletes the finished jobs of c (matchCTE) and returns
// the candidates' count and highest ID and the number deleted.
const sqlDeleteMatching = `,
	d AS (DELETE FROM {schema}.jobs WHERE id = ANY(ARRAY(SELECT id FROM c)) AND ` + sqlFinished + ` RETURNING 1)
	SELECT (SELECT count(*) FROM c), (SELECT max(id) FROM c), (SELECT count(*) FROM d)`

// DeleteMatching implements store.Store.
func (s *Store) DeleteMatching(ctx context.Context, p store.MatchParams) (store.MatchResult, error) {
	states, ok, err := s.matchCheck(p, store.DeleteStates)
	if !ok {
		return store.MatchResult{}, err
	}
	cte, a := matchCTE(p, states)
	var (
		n, deleted int
		last       *int64
	)
	if err := s.pool.QueryRow(ctx, s.q(`WITH `+cte+sqlDeleteMatching), a...).Scan(&n, &last, &deleted); err != nil {
		return store.MatchResult{}, s.translate(err)
	}
	return store.MatchResult{Changed: deleted, Skipped: n - deleted, Next: next(p, n, last)}, nil
}
