package pgstore

import (
	"context"
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
// Each call is one transaction.

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

// cancelSQL is store.ApplyCancel in SQL on the rows of c (matchCTE) still
// waiting or running; now is the placeholder of the time. The UPDATE
// reads the rows by primary key in ID order, so it locks them in that
// order, and a row another transaction changed meanwhile is checked and
// changed as that transaction left it. It returns the candidates' count
// and highest ID, the IDs of the jobs changed and of those still running.
func cancelSQL(now string) string {
	return `,
	u AS (UPDATE {schema}.jobs j SET state = CASE WHEN j.state = 'running' THEN j.state ELSE 'cancelled' END,
		finished_at = CASE WHEN j.state = 'running' THEN j.finished_at ELSE ` + now + ` END,
		cancel_requested = j.cancel_requested OR j.state = 'running'
		WHERE j.id = ANY(ARRAY(SELECT id FROM c)) AND j.` + sqlUnfinished + ` RETURNING j.id, j.state)
	SELECT (SELECT count(*) FROM c), (SELECT max(id) FROM c), ARRAY(SELECT id FROM u ORDER BY id),
		ARRAY(SELECT id FROM u WHERE state = 'running' ORDER BY id)`
}

// sqlChanged reads the jobs a batch changed, for MatchParams.ReturnJobs.
const sqlChanged = `SELECT ` + jobCols + ` FROM {schema}.jobs WHERE id = ANY($1::bigint[]) ORDER BY id`

// CancelMatching implements store.Store: store.ApplyCancel in SQL.
func (s *Store) CancelMatching(ctx context.Context, p store.MatchParams) (store.MatchResult, error) {
	states, ok, err := s.matchCheck(p, store.CancelStates)
	if !ok {
		return store.MatchResult{}, err
	}
	cte, a := matchCTE(p, states)
	q := s.q(`WITH ` + cte + cancelSQL(a.add(ts(micro(p.Now)))))
	var res store.MatchResult
	err = pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		res = store.MatchResult{}
		var (
			n                int
			last             *int64
			changed, running []int64
		)
		if err := tx.QueryRow(ctx, q, a...).Scan(&n, &last, &changed, &running); err != nil {
			return err
		}
		res.Changed, res.Skipped, res.Next = len(changed), n-len(changed), next(p, n, last)
		for _, id := range running {
			res.Running = append(res.Running, job.ID(id))
		}
		if p.ReturnJobs && len(changed) > 0 {
			rows, err := tx.Query(ctx, s.q(sqlChanged), changed)
			if err != nil {
				return err
			}
			if res.Jobs, err = scanJobs(rows); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return store.MatchResult{}, s.translate(err)
	}
	return res, nil
}

// RetryMatching implements store.Store: the batch's dead jobs go through
// retryOnce, as RetryDead's do.
func (s *Store) RetryMatching(ctx context.Context, p store.MatchParams) (store.MatchResult, error) {
	states, ok, err := s.matchCheck(p, store.RetryStates)
	if !ok {
		return store.MatchResult{}, err
	}
	cte, a := matchCTE(p, states)
	var ids []int64
	if err := s.pool.QueryRow(ctx, s.q(`WITH `+cte+` SELECT ARRAY(SELECT id FROM c)`), a...).Scan(&ids); err != nil {
		return store.MatchResult{}, s.translate(err)
	}
	var res store.MatchResult
	if len(ids) > 0 {
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
		res.Next = p.Next(len(ids), job.ID(ids[len(ids)-1]))
	} else {
		res.Next = p.Next(0, 0)
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
