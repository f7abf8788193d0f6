package pgstore

import (
	"context"
	"slices"
	"time"

	"github.com/hopperq/hopper/job"
	"github.com/hopperq/hopper/store"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgtype"
)

// The reads of a keyed queue's walk (store.KeyWalk), prefetched: one
// statement (sqlKeyBatch) answers the walk's Next, State and Jobs for a
// run of keys at once — a loose index scan of jobs_key for the keys after
// a key, each with its queue_keys row and its throttle's TAT, and its
// first jobs as an array. The walk's callbacks read from keyReads, which
// fetches the next run only when the walk goes past the last one. The
// first run is read in claimKeyed's first batch, after the queue's lock
// (the cursor is read in SQL under it). A run holds max(N, 8) keys, at
// most 256, doubling on each further read: a walk with no key blocked
// needs N keys; eight more cost about one round trip's time (0.2–0.4 ms
// for 8 keys in TestPlanKeyBatch, against ~0.35 ms a round trip on the
// quiet machine: ~5 ms an op of ~15); and a walk that went past a run
// meets blocked keys densely.

// keyBatchMin and keyBatchMax bound the keys one read of a walk fetches.
const keyBatchMin, keyBatchMax = 8, 256

// keyBatchSQL returns the statement that reads, for the walk of keyed
// queue $1, up to $4 keys with available jobs after $2 (NULL: the queue's
// cursor, read under its lock) and, with upTo, not after $3, in key order,
// each with its queue_keys row (NULLs without one), its throttles row's
// TAT (NULL without one) and its first jobs of the kinds $6 (NULL: any) in
// claim order — $5 of them, or the queue's limit per key if that is fewer.
// The keys are found by a loose index scan of jobs_key, whose condition (a
// key not empty) is stated literally, so that a generic plan uses it; the
// bound $3 is an index condition too (in a statement of its own: as
// "$3 = ” OR flow_key <= $3" it was a filter, and a wrapped walk's scan
// up to its cursor read every entry past the bound — a hot key's whole
// backlog — to find no key there); each key's rows are looked up by
// primary key (a LATERAL with a LIMIT and a subquery: joined, the planner
// may read every row of the queue's keys). Without upTo, $3 is unused.
func keyBatchSQL(upTo bool) string {
	bound := ``
	if upTo {
		bound = ` AND flow_key <= $3::text`
	}
	return `WITH RECURSIVE a AS (SELECT coalesce($2::text, (SELECT key_cursor FROM {schema}.queues WHERE name = $1), '') AS after,
		least($5::int, coalesce((SELECT nullif(key_concurrency, 0) FROM {schema}.queues WHERE name = $1), $5::int)) AS per,
		$3::text AS up_to),
	` + keyRunCTE("(SELECT after FROM a)", bound, "$4::int") + `
	SELECT k.key, qk.running, qk.paused, qk.paused_at, qk.held_until, qk.updated_at,
		(SELECT tat FROM {schema}.throttles WHERE queue = $1 AND key = k.key),
		` + keyJobsArray("$6", "(SELECT per FROM a)") + `
	FROM k LEFT JOIN LATERAL (SELECT * FROM {schema}.queue_keys WHERE queue = $1 AND key = k.key LIMIT 1) qk ON true
	WHERE k.key IS NOT NULL ORDER BY k.key`
}

// keyRunCTE is the recursive CTE k(key, n) of a run of keyed queue $1's
// keys (keyBatchSQL, sqlKeyedFast): up to size keys with available jobs
// after the key after, and within bound (a condition on flow_key, or ""),
// in key order, n numbering them from 1, ended by a NULL key (a query
// over k drops it). A loose index scan of jobs_key, whose condition (a
// key not empty) is stated literally, so that a generic plan uses it.
func keyRunCTE(after, bound, size string) string {
	return `k(key, n) AS (
		(SELECT flow_key, 1 FROM {schema}.jobs WHERE state = 'available' AND flow_key <> '' AND queue = $1
			AND flow_key > ` + after + bound + ` ORDER BY flow_key LIMIT 1)
		UNION ALL
		SELECT (SELECT flow_key FROM {schema}.jobs WHERE state = 'available' AND flow_key <> '' AND queue = $1
			AND flow_key > k.key` + bound + ` ORDER BY flow_key LIMIT 1), k.n + 1
		FROM k WHERE k.key IS NOT NULL AND k.n < ` + size + `)`
}

// keyJobsArray is, in a query over keyRunCTE's k, the array of key k.key's
// first per available jobs of the kinds (a text[] expression, NULL: any)
// in claim order, through jobs_key.
func keyJobsArray(kinds, per string) string {
	return `ARRAY(SELECT id FROM {schema}.jobs WHERE state = 'available' AND flow_key <> '' AND queue = $1 AND flow_key = k.key
			AND (` + kinds + `::text[] IS NULL OR kind = ANY(` + kinds + `::text[])) ORDER BY priority, run_at, id LIMIT ` + per + `)`
}

// sqlKeyBatch is keyBatchSQL's statement without a bound and with one.
var sqlKeyBatch = [2]string{keyBatchSQL(false), keyBatchSQL(true)}

// keyRead is what sqlKeyBatch read of one key.
type keyRead struct {
	state store.KeyState // its Throttle's TAT set, not its Rate
	jobs  []job.ID
	all   bool // jobs are all its available jobs of the kinds
}

// keyReads answers the walk of one keyed queue (store.KeyWalk's Next,
// State and Jobs) from the runs of keys sqlKeyBatch read, in the claim's
// transaction tx, and reads a run when the walk goes past the last.
type keyReads struct {
	s     *Store
	ctx   context.Context
	tx    dbtx
	q     *keyedQueue
	kinds []string
	// per is the jobs of each key the next run reads (sqlKeyBatch's $5);
	// size the keys.
	per, size int
	// The last run: the keys after after and up to upTo (none if ""), in
	// order; done if it has them all.
	read        bool
	after, upTo string
	keys        []string
	done        bool
	by          map[string]keyRead // the keys of every run read
	fetched     bool               // it read a run past the first (fetch)
}

// newKeyReads returns the reads of the walk of q, none read yet, whose
// runs read per jobs of each key.
func newKeyReads(ctx context.Context, s *Store, tx dbtx, q *keyedQueue, kinds []string, per int) *keyReads {
	return &keyReads{s: s, ctx: ctx, tx: tx, q: q, kinds: kinds, per: per, size: keyBatchSize(per),
		by: map[string]keyRead{}}
}

// keyBatchSize is the keys of a walk's first run, for a walk of n jobs.
func keyBatchSize(n int) int {
	return min(max(n, keyBatchMin), keyBatchMax)
}

// queueKeyRun queues on b the read of a run of size keys of queue (after
// after, nil: the queue's cursor, and up to upTo), each with per jobs of
// kinds: sqlKeyBatch.
func (s *Store) queueKeyRun(b *pgx.Batch, queue string, after *string, upTo string, size, per int, kinds []string) {
	b.Queue(s.q(sqlKeyBatch[b2i(upTo != "")]), queue, after, upTo, size, per, kinds)
}

// scanRun reads the run of keys after after and up to upTo from rows,
// sqlKeyBatch's result for r's queue, size and jobs per key.
func (r *keyReads) scanRun(rows pgx.Rows, after, upTo string) error {
	defer rows.Close()
	per := r.per
	if r.q.limit > 0 {
		per = min(per, r.q.limit)
	}
	r.read, r.after, r.upTo, r.keys = true, after, upTo, r.keys[:0]
	for rows.Next() {
		var (
			e                         keyRead
			running                   *int32
			paused                    *bool
			pausedAt, held, updatedAt pgtype.Timestamptz
			tat                       *int64
			ids                       []int64
		)
		if err := rows.Scan(&e.state.Key, &running, &paused, &pausedAt, &held, &updatedAt, &tat, &ids); err != nil {
			return err
		}
		e.state.Queue = r.q.name
		if running != nil {
			e.state.Running, e.state.Paused = int(*running), *paused
			e.state.PausedAt, e.state.HeldUntil, e.state.UpdatedAt = fromTS(pausedAt), fromTS(held), fromTS(updatedAt)
		}
		if tat != nil {
			e.state.Throttle.TAT = *tat
		}
		e.jobs = make([]job.ID, len(ids))
		for i, id := range ids {
			e.jobs[i] = job.ID(id)
		}
		e.all = len(ids) < per
		r.by[e.state.Key] = e
		r.keys = append(r.keys, e.state.Key)
	}
	r.done = len(r.keys) < r.size
	return rows.Err()
}

// fetch reads the run of keys after after and up to upTo, each with n
// jobs, twice as long as the last run, in a round trip of its own.
func (r *keyReads) fetch(after, upTo string, n int) error {
	r.per, r.fetched = n, true
	r.size = min(2*r.size, keyBatchMax)
	b := &pgx.Batch{}
	r.s.queueKeyRun(b, r.q.name, &after, upTo, r.size, r.per, r.kinds)
	br := r.tx.SendBatch(r.ctx, b)
	rows, err := br.Query()
	if err == nil {
		err = r.scanRun(rows, after, upTo)
	}
	if cerr := br.Close(); err == nil {
		err = cerr
	}
	return err
}

// walk returns the walk of q for a claim of n jobs at the claim's now,
// reading through r.
func (r *keyReads) walk(n int, p store.ClaimParams) store.KeyWalk {
	return store.KeyWalk{
		Cursor: r.q.cursor, Limit: r.q.limit, Now: p.Now, N: n, Split: r.q.split,
		Next: func(after, upTo string) (string, bool, error) {
			if !r.read || upTo != r.upTo || (after != r.after && !slices.Contains(r.keys, after)) ||
				(len(r.keys) > 0 && after == r.keys[len(r.keys)-1] && !r.done) {
				if err := r.fetch(after, upTo, n); err != nil {
					return "", false, err
				}
			}
			i := 0
			if after != r.after {
				i = slices.Index(r.keys, after) + 1
			}
			if i < len(r.keys) {
				return r.keys[i], true, nil
			}
			return "", false, nil
		},
		State: func(key string) (store.KeyState, error) {
			e, ok := r.by[key]
			k := e.state
			if !ok {
				var err error
				if k, err = r.s.loadKey(r.ctx, r.tx, r.q.name, key, false); err != nil {
					return k, err
				}
				if !r.q.keyRate.Zero() && key != "" {
					if k.Throttle.TAT, err = r.s.keyTAT(r.ctx, r.tx, r.q.name, key); err != nil {
						return k, err
					}
				}
			}
			k.Throttle.Rate = store.Rate{}
			if r.q.keyRate.Zero() || key == "" {
				k.Throttle.TAT = 0
			} else {
				k.Throttle.Rate = r.q.keyRate
			}
			return k, nil
		},
		Jobs: func(key string, take int) ([]job.ID, error) {
			if e, ok := r.by[key]; ok && (e.all || len(e.jobs) >= take) {
				return e.jobs[:min(take, len(e.jobs))], nil
			}
			if key == "" {
				return r.keyless(take)
			}
			rows, err := r.tx.Query(r.ctx, r.s.q(sqlKeyJobs), r.q.name, key, r.kinds, take)
			if err != nil {
				return nil, err
			}
			return pgx.CollectRows(rows, pgx.RowTo[job.ID])
		},
	}
}

// keyless returns the first n available jobs of r's queue without a key:
// none without a query while the Store's keyless hint holds (keyless.go),
// else sqlKeylessJobs's, which sets or clears the hint.
func (r *keyReads) keyless(n int) ([]job.ID, error) {
	h, kinds := r.s.keyless, kindsKey(r.kinds)
	if h.skip(r.q.name, kinds) {
		return nil, nil
	}
	gen, start := h.start(r.q.name), time.Now()
	r.s.keylessReads.Add(1)
	var ids []job.ID
	rows, err := r.tx.Query(r.ctx, r.s.q(sqlKeylessJobs), r.q.name, "", r.kinds, n)
	if err == nil {
		ids, err = pgx.CollectRows(rows, pgx.RowTo[job.ID])
	}
	h.end(r.q.name, kinds, gen, time.Since(start), len(ids) == 0, err != nil)
	return ids, err
}

// dbtx is a transaction, or the connection claimKeyed's transaction runs
// on (its BEGIN and COMMIT ride in its batches).
type dbtx interface {
	Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error)
	Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error)
	QueryRow(ctx context.Context, sql string, args ...any) pgx.Row
	SendBatch(ctx context.Context, b *pgx.Batch) pgx.BatchResults
}
