package pgstore

import (
	"cmp"
	"context"
	"errors"
	"slices"

	"github.com/hopperq/hopper/job"
	"github.com/hopperq/hopper/store"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgtype"
)

var _ store.KeyControl = (*Store)(nil)

// Per-key flow control (store.KeyControl). A keyed queue — one with a
// limit per key, or a paused or held key (sqlKeyedQueues) — is left out of
// the claim statement (sqlNotPaused), and claimed by two more statements
// of the claim's batch (sqlKeyedLock before the claim statement,
// sqlKeyedClaim after it): its row is locked by the first, so claims of
// one keyed queue take turns, and the second, whose snapshot follows the
// lock, reads the key counts the previous claim left and walks the keys
// in turn (store.KeyWalk), one probe of jobs_key per key. The slots are
// counted in queue_keys.running: the claim adds them, the trigger of
// schema 9 takes them off when the attempt leaves running.

// sqlKeyedQueues are the names of the keyed queues.
const sqlKeyedQueues = `SELECT name FROM {schema}.queues WHERE key_concurrency > 0
	UNION SELECT queue FROM {schema}.queue_keys WHERE paused OR held_until IS NOT NULL`

const keyCols = `queue, key, running, paused, paused_at, held_until, updated_at`

func scanKey(r pgx.Row) (store.KeyState, error) {
	var k store.KeyState
	var pausedAt, held, updated pgtype.Timestamptz
	if err := r.Scan(&k.Queue, &k.Key, &k.Running, &k.Paused, &pausedAt, &held, &updated); err != nil {
		return k, err
	}
	k.PausedAt, k.HeldUntil, k.UpdatedAt = fromTS(pausedAt), fromTS(held), fromTS(updated)
	return k, nil
}

// loadKey reads the state of key of queue in tx (the zero state, named,
// if it has no row), locking its row with lock.
func (s *Store) loadKey(ctx context.Context, tx pgx.Tx, queue, key string, lock bool) (store.KeyState, error) {
	q := `SELECT ` + keyCols + ` FROM {schema}.queue_keys WHERE queue = $1 AND key = $2`
	if lock {
		q += ` FOR UPDATE`
	}
	k, err := scanKey(tx.QueryRow(ctx, s.q(q), queue, key))
	if errors.Is(err, pgx.ErrNoRows) {
		return store.KeyState{Queue: queue, Key: key}, nil
	}
	return k, err
}

// putKey writes the pause and hold of k, whose row tx has locked (or
// which has none), and deletes the row if it keeps nothing.
func (s *Store) putKey(ctx context.Context, tx pgx.Tx, k store.KeyState) error {
	if _, err := tx.Exec(ctx, s.q(`INSERT INTO {schema}.queue_keys (queue, key, paused, paused_at, held_until, updated_at)
		VALUES ($1, $2, $3, $4, $5, $6)
		ON CONFLICT (queue, key) DO UPDATE SET paused = excluded.paused, paused_at = excluded.paused_at,
			held_until = excluded.held_until, updated_at = excluded.updated_at`),
		k.Queue, k.Key, k.Paused, ts(k.PausedAt), ts(k.HeldUntil), ts(k.UpdatedAt)); err != nil {
		return err
	}
	_, err := tx.Exec(ctx, s.q(`DELETE FROM {schema}.queue_keys WHERE queue = $1 AND key = $2
		AND running <= 0 AND NOT paused AND (held_until IS NULL OR held_until <= $3)`), k.Queue, k.Key, ts(k.UpdatedAt))
	return err
}

// SetKey implements store.KeyControl. A resume or a release sends the
// schema's notification after the commit, so that every process claims.
func (s *Store) SetKey(ctx context.Context, p store.SetKeyParams) (store.KeyState, error) {
	if err := p.Validate(); err != nil {
		return store.KeyState{}, err
	}
	if err := s.writable(); err != nil {
		return store.KeyState{}, err
	}
	var cur, out store.KeyState
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		var err error
		if cur, err = s.loadKey(ctx, tx, p.Queue, p.Key, true); err != nil {
			return err
		}
		out = store.ApplySetKey(cur, p)
		out.PausedAt, out.HeldUntil, out.UpdatedAt = micro(out.PausedAt), micro(out.HeldUntil), micro(out.UpdatedAt)
		return s.putKey(ctx, tx, out)
	})
	if err != nil {
		return store.KeyState{}, s.translate(err)
	}
	if (cur.Paused && !out.Paused) || out.HeldUntil.Before(cur.HeldUntil) {
		s.notify() // held jobs may start
	}
	return out, nil
}

// ListKeys implements store.KeyControl.
func (s *Store) ListKeys(ctx context.Context, queue string) ([]store.KeyState, error) {
	if err := s.readable(); err != nil {
		return nil, err
	}
	out := []store.KeyState{}
	if s.empty {
		return out, nil
	}
	rows, err := s.pool.Query(ctx, s.q(`SELECT `+keyCols+` FROM {schema}.queue_keys
		WHERE $1 = '' OR queue = $1 ORDER BY queue, key`), queue)
	if err != nil {
		return nil, s.translate(err)
	}
	defer rows.Close()
	for rows.Next() {
		k, err := scanKey(rows)
		if err != nil {
			return nil, s.translate(err)
		}
		out = append(out, k)
	}
	if err := rows.Err(); err != nil {
		return nil, s.translate(err)
	}
	return out, nil
}

// The keyed claim: two statements of the claim's batch (one
// round trip, one transaction with the plain claim; decision 85).
//
// sqlKeyedLock locks the rows of the queues the claim may lock — those
// with a limit per key and, if there is one, those with a concurrency
// limit too, all in name order, as the claim statement's lq would lock the
// latter: so the locks a claim takes in the queues table come in one
// order, whatever a Finish or another claim holds — among the queues $1
// (NULL: any), and deletes the key rows of passed holds there (at $2).
// It is a statement of its own, before the claim statement and the keyed
// claim, so that their snapshots are taken once the locks are granted:
// the keyed claim of a queue reads the key counts every earlier claim of
// the queue left (a statement's snapshot precedes its own lock waits).
const sqlKeyedLock = `WITH d AS (DELETE FROM {schema}.queue_keys
		WHERE ($1::text[] IS NULL OR queue = ANY($1::text[])) AND running <= 0 AND NOT paused AND held_until <= $2)
	SELECT count(*) FROM (SELECT name FROM {schema}.queues
		WHERE (concurrency > 0 OR key_concurrency > 0) AND ($1::text[] IS NULL OR name = ANY($1::text[]))
			AND EXISTS (SELECT 1 FROM {schema}.queues k WHERE k.key_concurrency > 0 AND ($1::text[] IS NULL OR k.name = ANY($1::text[])))
		ORDER BY name FOR UPDATE) l`

// claimedSetting holds, for the rest of a claim's transaction, how many
// jobs its plain claim statement took (set in its RETURNING), so that the
// keyed claim takes at most the rest of the claim's Limit.
const claimedSetting = `hopper.claimed`

// sqlKeyedRest is what is left of the claim's Limit ($4) for the keyed
// queues.
const sqlKeyedRest = `greatest($4::int - coalesce(nullif(current_setting('` + claimedSetting + `', true), '')::int, 0), 0)`

// sqlKeyKinds filters a key's jobs by the claim's kinds ($6, NULL: any).
const sqlKeyKinds = ` AND ($6::text[] IS NULL OR kind = ANY($6::text[]))`

// sqlNextKey is the first key (not "") of queue q with available jobs
// after the key a (and not after u, if given), through jobs_key.
func sqlNextKey(q, a, u string) string {
	upTo := ``
	if u != "" {
		upTo = ` AND flow_key <= ` + u
	}
	return `(SELECT flow_key FROM {schema}.jobs WHERE state = 'available' AND flow_key <> '' AND queue = ` + q + `
		AND flow_key > ` + a + upTo + ` ORDER BY flow_key LIMIT 1)`
}

// sqlKeyedClaim is the keyed claim (store.KeyWalk in one statement): $1
// now, $2 worker, $3 lease, $4 the claim's Limit, $5 its queues (NULL:
// any), $6 its kinds (NULL: any), $7 and $8 the names and limits of
// ClaimParams.QueueLimits.
//
//   - kq: the keyed queues (sqlKeyedQueues) the claim looks at, not
//     paused, each with its limit per key, cursor, and the most the claim
//     may take of it (Limit, QueueLimits, free slots); th locks the
//     throttle rows of those with a rate (after the queue rows, as the
//     plain claim's) and ka caps each by the starts its rate allows and by
//     what the plain claim left of the Limit;
//   - w walks each queue's keys in turn (a recursive CTE: one probe of
//     jobs_key per step; the probes are scalar subqueries in the index's
//     order with a LIMIT — as EXISTS the planner may hash them over a
//     scan of jobs, and without the order it may take a scan of jobs for
//     the first match it expects at once): the keys after the cursor, then "" (the keyless
//     jobs), then the keys up to the cursor, until it has found as many
//     keys that may give a job as the queue may take, or run out;
//   - ws: each key visited, its state (queue_keys) and what blocks it
//     (store.KeyBlocked: 1 paused, 2 held, 3 at its limit), the most it
//     may give; kj its first jobs, in claim order;
//   - sel deals them in rounds, one per key a round in turn order (store.
//     KeyWalk.Pick), each queue cut at what it may take, fin the queues in
//     name order cut at the rest of the Limit;
//   - ku claims them (store.ApplyClaim; a job of a key under a limit
//     holds a slot of its key, one of a queue with a concurrency limit a
//     slot of the queue), kc adds the key slots to queue_keys, kcur moves
//     each queue's cursor to the key it served last and adds its slots,
//     ktk moves the throttles by the jobs taken.
//
// The first row is a summary (NULL job columns): held, whether a key at
// its limit held jobs back. The claimed jobs follow, each with its place
// in the turn order.
var sqlKeyedClaim = `WITH RECURSIVE
	kq AS MATERIALIZED (SELECT kn.name, coalesce(q.key_concurrency, 0) AS kl, coalesce(q.key_cursor, '') AS cur,
			coalesce(q.concurrency, 0) > 0 AS slots,
			least($4::int, coalesce(l.lim, $4::int),
				CASE WHEN q.concurrency > 0 THEN greatest(q.concurrency - q.running, 0) ELSE $4::int END) AS want
		FROM (` + sqlKeyedQueues + `) kn
		LEFT JOIN {schema}.queues q ON q.name = kn.name
		LEFT JOIN unnest($7::text[], $8::int[]) AS l(name, lim) ON l.name = kn.name
		WHERE ($5::text[] IS NULL OR kn.name = ANY($5::text[])) AND NOT coalesce(q.paused, false)),
	th AS MATERIALIZED (SELECT t.queue AS name, q.rate_burst::bigint AS burst, ` + sqlInterval + ` AS iv,
			greatest(t.tat, ` + sqlNowNS + `) AS base
		FROM {schema}.throttles t JOIN {schema}.queues q ON q.name = t.queue
		WHERE t.key = '' AND q.rate_n > 0 AND t.queue IN (SELECT name FROM kq) ORDER BY t.queue FOR UPDATE OF t),
	ka AS MATERIALIZED (SELECT kq.name, kq.kl, kq.cur, kq.slots,
			least(` + sqlAllowed("kq.want") + `, ` + sqlKeyedRest + `) AS n
		FROM kq LEFT JOIN th ON th.name = kq.name),
	w(queue, pos, key, found) AS (
		SELECT ka.name, 0, (coalesce(` + sqlNextKey("ka.name", "ka.cur", "") + `, '')) COLLATE "C", 0
		FROM ka WHERE ka.n > 0
		UNION ALL
		SELECT w.queue, w.pos + 1, nx.key, w.found + e.ok
		FROM w JOIN ka ON ka.name = w.queue
		CROSS JOIN LATERAL (SELECT CASE
			WHEN w.key = '' THEN coalesce((SELECT 1 FROM {schema}.jobs WHERE state = 'available' AND flow_key = ''
				AND queue = w.queue` + sqlKeyKinds + ` ORDER BY priority, run_at, id LIMIT 1), 0)
			WHEN (SELECT k.paused OR k.held_until > $1 OR (ka.kl > 0 AND k.running >= ka.kl) FROM {schema}.queue_keys k
				WHERE k.queue = w.queue AND k.key = w.key) THEN 0
			ELSE coalesce((SELECT 1 FROM {schema}.jobs WHERE state = 'available' AND flow_key <> ''
				AND queue = w.queue AND flow_key = w.key` + sqlKeyKinds + ` ORDER BY priority, run_at, id LIMIT 1), 0) END AS ok) e
		CROSS JOIN LATERAL (SELECT (CASE WHEN w.key > ka.cur
			THEN coalesce(` + sqlNextKey("w.queue", "w.key", "") + `, '')
			ELSE ` + sqlNextKey("w.queue", "w.key", "ka.cur") + ` END) COLLATE "C" AS key) nx
		WHERE w.found + e.ok < ka.n AND nx.key IS NOT NULL),
	ws AS MATERIALIZED (SELECT w.queue, w.pos, w.key,
			CASE WHEN w.key = '' THEN 0 WHEN k.paused THEN 1 WHEN k.held_until > $1 THEN 2
				WHEN ka.kl > 0 AND k.running >= ka.kl THEN 3 ELSE 0 END AS blk,
			CASE WHEN w.key <> '' AND ka.kl > 0 THEN least(ka.n, ka.kl - coalesce(k.running, 0)) ELSE ka.n END AS take,
			w.key <> '' AND ka.kl > 0 AND ka.kl - coalesce(k.running, 0) < ka.n AS capped
		FROM w JOIN ka ON ka.name = w.queue
		LEFT JOIN {schema}.queue_keys k ON k.queue = w.queue AND k.key = w.key),
	kj AS MATERIALIZED (SELECT ws.queue, ws.pos, ws.key, ws.take, ws.capped, x.id,
			row_number() OVER (PARTITION BY ws.queue, ws.pos ORDER BY x.priority, x.run_at, x.id) AS r
		FROM ws CROSS JOIN LATERAL (
			(SELECT id, priority, run_at FROM {schema}.jobs WHERE ws.key <> '' AND state = 'available' AND flow_key <> ''
				AND queue = ws.queue AND flow_key = ws.key` + sqlKeyKinds + `
				ORDER BY priority, run_at, id LIMIT greatest(ws.take, 0))
			UNION ALL
			(SELECT id, priority, run_at FROM {schema}.jobs WHERE ws.key = '' AND state = 'available' AND flow_key = ''
				AND queue = ws.queue` + sqlKeyKinds + `
				ORDER BY priority, run_at, id LIMIT greatest(ws.take, 0))) x
		WHERE ws.blk = 0 AND ws.take > 0),
	sel AS MATERIALIZED (SELECT s.queue, s.key, s.id, s.rq, row_number() OVER (ORDER BY s.queue COLLATE "C", s.rq) AS rg
		FROM (SELECT kj.queue, kj.key, kj.id, ka.n,
				row_number() OVER (PARTITION BY kj.queue ORDER BY kj.r, kj.pos) AS rq
			FROM kj JOIN ka ON ka.name = kj.queue) s
		WHERE s.rq <= s.n),
	fin AS MATERIALIZED (SELECT * FROM sel WHERE rg <= ` + sqlKeyedRest + `),
	ku AS (UPDATE {schema}.jobs j SET state = 'running', attempt = j.attempt + 1, started_at = $1, worker = $2,
			lease_until = $3, cancel_requested = false, terminate_requested = false,
			slot = coalesce((SELECT ka.slots FROM ka WHERE ka.name = j.queue), false),
			key_slot = j.flow_key <> '' AND coalesce((SELECT ka.kl FROM ka WHERE ka.name = j.queue), 0) > 0
		WHERE j.id = ANY(ARRAY(SELECT id FROM fin)) AND j.state = 'available'
		RETURNING ` + jobColsOf("j") + `, j.slot, j.key_slot),
	kc AS (INSERT INTO {schema}.queue_keys (queue, key, running, updated_at)
		SELECT queue, flow_key, count(*)::int, $1 FROM ku WHERE key_slot GROUP BY queue, flow_key ORDER BY queue, flow_key
		ON CONFLICT (queue, key) DO UPDATE SET running = {schema}.queue_keys.running + excluded.running),
	kcur AS (UPDATE {schema}.queues q SET key_cursor = l.key,
			running = q.running + (SELECT count(*)::int FROM ku WHERE ku.queue = q.name AND ku.slot)
		FROM (SELECT DISTINCT ON (queue) queue, key FROM fin ORDER BY queue, rq DESC) l
		WHERE q.name = l.queue AND EXISTS (SELECT 1 FROM ku WHERE ku.queue = l.queue)),
	ktk AS (UPDATE {schema}.throttles t SET tat = th.base + n.n * th.iv
		FROM th JOIN (SELECT queue, count(*)::bigint AS n FROM ku GROUP BY queue) n ON n.queue = th.name
		WHERE t.queue = th.name AND t.key = '')
	SELECT ` + jobColsOf("z") + `, (EXISTS (SELECT 1 FROM ws WHERE blk = 3)
			OR EXISTS (SELECT 1 FROM kj WHERE capped AND r = take)) AS held, NULL::bigint AS rg
		FROM (SELECT (NULL::{schema}.jobs).*) z
	UNION ALL
	SELECT ` + jobCols + `, NULL, (SELECT fin.rg FROM fin WHERE fin.id = ku.id) FROM ku`

// sqlGenericOn and sqlGenericOff surround sqlKeyedClaim in a claim's
// batch: a generic plan for it, the session's plan_cache_mode kept and
// restored (set_config(…, true) lasts until the transaction's end). A
// custom plan is made anew at each execution, and planning the statement
// costs more than running it: measured, 2–10 ms an execution with custom
// plans against 0.3–0.7 ms with the generic one (100,000 jobs of a key
// blocked, a loaded machine).
const (
	sqlGenericOn = `SELECT set_config('hopper.plan_cache_mode', current_setting('plan_cache_mode'), true),
		set_config('plan_cache_mode', 'force_generic_plan', true)`
	sqlGenericOff = `SELECT set_config('plan_cache_mode', current_setting('hopper.plan_cache_mode'), true)`
)

// queueKeyedClaim queues sqlKeyedClaim for p on b (between sqlGenericOn
// and sqlGenericOff), after the plain
// claim's statement (sqlKeyedLock went before it): queues are the claim's
// queues (nil: any), kinds its kinds (nil: any).
func (s *Store) queueKeyedClaim(b *pgx.Batch, p store.ClaimParams, queues, kinds []string) {
	names := make([]string, 0, len(p.QueueLimits))
	lims := make([]int32, 0, len(p.QueueLimits))
	for q, l := range p.QueueLimits {
		names, lims = append(names, q), append(lims, int32(max(0, min(l, 1<<31-1))))
	}
	b.Queue(sqlGenericOn)
	b.Queue(s.q(sqlKeyedClaim), ts(p.Now), p.Worker, ts(p.LeaseUntil), int32(min(p.Limit, 1<<31-1)), queues, kinds,
		names, lims)
	b.Queue(sqlGenericOff)
}

// readKeyed reads sqlKeyedClaim's result: the jobs it claimed, in turn
// order, and whether a key at its limit held jobs back.
func readKeyed(br pgx.BatchResults) (jobs []*job.Job, held bool, err error) {
	if _, err := br.Exec(); err != nil { // sqlGenericOn
		return nil, false, err
	}
	jobs, held, err = readKeyedRows(br)
	if err != nil {
		return nil, false, err
	}
	if _, err := br.Exec(); err != nil { // sqlGenericOff
		return nil, false, err
	}
	return jobs, held, nil
}

// readKeyedRows reads sqlKeyedClaim's rows.
func readKeyedRows(br pgx.BatchResults) (jobs []*job.Job, held bool, err error) {
	rows, err := br.Query()
	if err != nil {
		return nil, false, err
	}
	defer rows.Close()
	if !rows.Next() {
		if err := rows.Err(); err != nil {
			return nil, false, err
		}
		return nil, false, errors.New("keyed claim: no summary row")
	}
	vals, err := rows.Values()
	if err != nil {
		return nil, false, err
	}
	if vals[0] != nil {
		return nil, false, errors.New("keyed claim: the first row is not the summary")
	}
	held, _ = vals[len(vals)-2].(bool)
	pos := map[job.ID]int64{}
	for rows.Next() {
		var h *bool
		var rg *int64
		j, err := scanJob(withTail{rows, []any{&h, &rg}})
		if err != nil {
			return nil, false, err
		}
		if rg != nil {
			pos[j.ID] = *rg
		}
		jobs = append(jobs, j)
	}
	if err := rows.Err(); err != nil {
		return nil, false, err
	}
	slices.SortFunc(jobs, func(a, b *job.Job) int { return cmp.Compare(pos[a.ID], pos[b.ID]) })
	return jobs, held, nil
}

// withTail scans a row of jobCols and then the columns tail.
type withTail struct {
	pgx.Row
	tail []any
}

func (r withTail) Scan(dest ...any) error { return r.Row.Scan(append(dest, r.tail...)...) }
