package pgstore

import (
	"context"
	"errors"
	"maps"
	"slices"
	"time"

	"github.com/hopperq/hopper/job"
	"github.com/hopperq/hopper/store"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgtype"
)

var _ store.KeyControl = (*Store)(nil)

// Per-key flow control (store.KeyControl). A keyed queue — one with a
// limit per key, or a paused or held key (sqlKeyedQueues) — is left out of
// the claim statement (sqlNotPaused), and claimed by claimKeyed after it,
// in a transaction of its own that locks the queue's row first (claims of
// one keyed queue take turns, each reading the key counts the previous
// left: its statements start after the lock is granted), then walks the
// keys in turn (store.KeyWalk): one probe of jobs_key per key, one read of
// its row, its first jobs. The slots are counted in queue_keys.running:
// the claim adds them, the trigger of schema 9 takes them off when the
// attempt leaves running. A key's throttle is in keythrottle.go.

// sqlKeyedQueues are the names of the keyed queues.
const sqlKeyedQueues = `SELECT name FROM {schema}.queues WHERE key_concurrency > 0 OR key_rate_n > 0
	UNION SELECT queue FROM {schema}.queue_keys WHERE paused OR held_until IS NOT NULL`

// sqlKeyedOf lists the keyed queues of $1 (NULL: any).
const sqlKeyedOf = `SELECT name FROM (` + sqlKeyedQueues + `) k WHERE $1::text[] IS NULL OR name = ANY($1::text[])`

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
	th, err := s.listKeyThrottles(ctx, queue)
	if err != nil {
		return nil, s.translate(err)
	}
	return store.MergeKeyThrottles(out, th), nil
}

// holdKeys applies the HoldKeyUntil of the outcomes that reached a state
// to their jobs' keys, each in a transaction of its own after the
// finish's (the job waits already; a crash between the two loses the
// hold, not the job).
func (s *Store) holdKeys(ctx context.Context, p store.FinishParams, reached []job.State) error {
	for i, o := range p.Outcomes {
		if o.HoldKeyUntil.IsZero() || reached[i] == 0 {
			continue
		}
		err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
			var queue, key string
			if err := tx.QueryRow(ctx, s.q(`SELECT queue, flow_key FROM {schema}.jobs WHERE id = $1`), int64(o.ID)).Scan(&queue, &key); err != nil {
				if errors.Is(err, pgx.ErrNoRows) {
					return nil
				}
				return err
			}
			if key == "" {
				return nil
			}
			cur, err := s.loadKey(ctx, tx, queue, key, true)
			if err != nil {
				return err
			}
			until := o.HoldKeyUntil
			k := store.ApplySetKey(cur, store.SetKeyParams{Now: p.Now, Queue: queue, Key: key, HoldUntil: &until})
			k.PausedAt, k.HeldUntil, k.UpdatedAt = micro(k.PausedAt), micro(k.HeldUntil), micro(k.UpdatedAt)
			return s.putKey(ctx, tx, k)
		})
		if err != nil {
			return s.translate(err)
		}
	}
	return nil
}

// sqlKeyJobs and sqlKeylessJobs select the first $4 available jobs of key
// $2 of queue $1, of the kinds $3 (NULL: any): a key's through jobs_key,
// whose condition (a key not empty) the query states literally, so that a
// generic plan uses it too; the keyless through jobs_claim.
const (
	sqlKeyJobs = `SELECT id FROM {schema}.jobs WHERE state = 'available' AND flow_key <> '' AND queue = $1
		AND flow_key = $2 AND ($3::text[] IS NULL OR kind = ANY($3::text[])) ORDER BY priority, run_at, id LIMIT $4`
	sqlKeylessJobs = `SELECT id FROM {schema}.jobs WHERE state = 'available' AND queue = $1
		AND flow_key = $2 AND ($3::text[] IS NULL OR kind = ANY($3::text[])) ORDER BY priority, run_at, id LIMIT $4`
)

// keyedQueue is a keyed queue a claim looks at, its row locked.
type keyedQueue struct {
	name   string
	limit  int    // per key, 0: none
	cursor string // the key its latest claim served last
	free   int    // the most jobs the claim may take of it
	slots  bool   // it has a concurrency limit: its jobs take a slot
	hasRow bool
	// keyRate is its rate per key (zero: none).
	keyRate store.Rate
	// split, for a queue whose own rate (rate) has Drop, splits its walk
	// into starts and drops (throttleKeyed); nil otherwise.
	split *store.RateSplit
	rate  store.Rate
}

// claimKeyed claims at most limit jobs of the keyed queues names (sorted)
// for p, keys in turn (store.KeyControl), a throttled one at most as many
// as its rate allows (throttleKeyed), and drops the excess of the keys of
// a queue whose rate per key drops it, and of a queue whose own rate
// drops it (store.RateSplit; the drops count against limit as starts
// do). The result's Held reports whether a key at its limit held jobs
// back; its ThrottledUntil, when a throttle that held jobs back next
// allows a start (zero if none did).
func (s *Store) claimKeyed(ctx context.Context, p store.ClaimParams, names []string, limit int) (res store.ClaimResult, err error) {
	var kinds []string
	if len(p.Kinds) > 0 {
		kinds = dedupe(p.Kinds)
	}
	err = pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		res = store.ClaimResult{}
		until := &res.ThrottledUntil
		if _, err := tx.Exec(ctx, sqlClaimPlan); err != nil {
			return err
		}
		qs, err := s.lockKeyed(ctx, tx, p, names)
		if err != nil {
			return err
		}
		now := store.UnixNanos(micro(p.Now))
		for _, q := range qs {
			if !q.keyRate.Zero() {
				if err := s.collectKeyThrottles(ctx, tx, q.name, q.keyRate, now); err != nil {
					return err
				}
			}
			left := limit - len(res.Jobs) - len(res.Dropped)
			if left <= 0 {
				break
			}
			th, err := s.throttleKeyed(ctx, tx, &q, p.Now)
			if err != nil {
				return err
			}
			if th != nil {
				if u := th.until; !u.IsZero() && (until.IsZero() || u.Before(*until)) {
					*until = u
				}
			}
			n := min(left, q.free)
			if n <= 0 {
				continue
			}
			if _, err := tx.Exec(ctx, s.q(`DELETE FROM {schema}.queue_keys WHERE queue = $1 AND running <= 0 AND NOT paused
				AND held_until <= $2`), q.name, ts(p.Now)); err != nil {
				return err
			}
			walk := store.KeyWalk{
				Cursor: q.cursor, Limit: q.limit, Now: p.Now, N: n, Split: q.split,
				State: func(key string) (store.KeyState, error) {
					k, err := s.loadKey(ctx, tx, q.name, key, false)
					if err != nil || q.keyRate.Zero() || key == "" {
						return k, err
					}
					k.Throttle.Rate = q.keyRate
					k.Throttle.TAT, err = s.keyTAT(ctx, tx, q.name, key)
					return k, err
				},
				Next: func(after, upTo string) (string, bool, error) {
					var key string
					err := tx.QueryRow(ctx, s.q(`SELECT flow_key FROM {schema}.jobs WHERE state = 'available' AND flow_key <> ''
						AND queue = $1 AND flow_key > $2 AND ($3 = '' OR flow_key <= $3) ORDER BY flow_key LIMIT 1`),
						q.name, after, upTo).Scan(&key)
					if errors.Is(err, pgx.ErrNoRows) {
						return "", false, nil
					}
					return key, err == nil, err
				},
				Jobs: func(key string, take int) ([]job.ID, error) {
					stmt := sqlKeyJobs
					if key == "" {
						stmt = sqlKeylessJobs
					}
					rows, err := tx.Query(ctx, s.q(stmt), q.name, key, kinds, take)
					if err != nil {
						return nil, err
					}
					return pgx.CollectRows(rows, pgx.RowTo[job.ID])
				},
			}
			pick, err := walk.Pick()
			res.Held = res.Held || pick.Held
			if u := pick.ThrottledUntil; !u.IsZero() && (until.IsZero() || u.Before(*until)) {
				*until = u
			}
			if err != nil {
				return err
			}
			if len(pick.Drops) > 0 {
				dropped, err := s.dropKeyed(ctx, tx, q, pick, p.Now)
				if err != nil {
					return err
				}
				res.Dropped = append(res.Dropped, dropped...)
			}
			var got []*job.Job
			if len(pick.IDs) > 0 {
				if got, err = s.claimIDs(ctx, tx, p, q, pick.IDs); err != nil {
					return err
				}
			}
			if len(got)+len(pick.Drops) == 0 {
				continue
			}
			if len(got) > 0 && !q.keyRate.Zero() {
				if err := s.takeKeyThrottles(ctx, tx, q.name, q.keyRate, got, now); err != nil {
					return err
				}
			}
			if err := s.countKeyed(ctx, tx, q, got, pick.Last, p); err != nil {
				return err
			}
			if th != nil && len(got) > 0 {
				if err := s.takeKeyed(ctx, tx, q.name, th, len(got)); err != nil {
					return err
				}
			}
			res.Jobs = append(res.Jobs, got...)
		}
		return nil
	})
	if err != nil {
		return store.ClaimResult{}, err
	}
	return res, nil
}

// lockKeyed returns the keyed queues names that are not paused, by name,
// each with the most jobs a claim may take of it, their rows locked in
// name order.
func (s *Store) lockKeyed(ctx context.Context, tx pgx.Tx, p store.ClaimParams, names []string) ([]keyedQueue, error) {
	rows, err := tx.Query(ctx, s.q(`SELECT name, paused, key_concurrency, key_cursor, concurrency, running,
			key_rate_n, key_rate_period, key_rate_burst, key_rate_drop
		FROM {schema}.queues WHERE name = ANY($1::text[]) ORDER BY name FOR UPDATE`), names)
	if err != nil {
		return nil, err
	}
	type row struct {
		paused               bool
		limit, conc, running int
		cursor               string
		keyRate              store.Rate
	}
	found := map[string]row{}
	for rows.Next() {
		var name string
		var r row
		var keyPeriod int64
		if err := rows.Scan(&name, &r.paused, &r.limit, &r.cursor, &r.conc, &r.running,
			&r.keyRate.N, &keyPeriod, &r.keyRate.Burst, &r.keyRate.Drop); err != nil {
			rows.Close()
			return nil, err
		}
		r.keyRate.Period = time.Duration(keyPeriod)
		found[name] = r
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return nil, err
	}
	var out []keyedQueue
	for _, name := range names {
		r, ok := found[name]
		if r.paused {
			continue
		}
		q := keyedQueue{name: name, limit: r.limit, cursor: r.cursor, free: p.Limit, hasRow: ok, keyRate: r.keyRate}
		if ql, ok := p.QueueLimits[name]; ok {
			q.free = min(q.free, ql)
		}
		if r.conc > 0 {
			q.slots = true
			q.free = min(q.free, max(r.conc-r.running, 0))
		}
		out = append(out, q)
	}
	return out, nil
}

// claimIDs moves the jobs ids of q to running for p (store.ApplyClaim),
// marking the slots they take, and returns them in the order of ids.
func (s *Store) claimIDs(ctx context.Context, tx pgx.Tx, p store.ClaimParams, q keyedQueue, ids []job.ID) ([]*job.Job, error) {
	raw := make([]int64, len(ids))
	for i, id := range ids {
		raw[i] = int64(id)
	}
	rows, err := tx.Query(ctx, s.q(`UPDATE {schema}.jobs j SET state = 'running', attempt = j.attempt + 1, claims = j.claims + 1, started_at = $1,
		worker = $2, lease_until = $3, cancel_requested = false, terminate_requested = false, slot = $5,
		key_slot = (j.flow_key <> '' AND $6::int > 0)
		WHERE j.id = ANY($4::bigint[]) AND j.state = 'available'
		RETURNING `+jobColsOf("j")), ts(p.Now), p.Worker, ts(p.LeaseUntil), raw, q.slots, q.limit)
	if err != nil {
		return nil, err
	}
	got, err := scanJobs(rows)
	if err != nil {
		return nil, err
	}
	pos := make(map[job.ID]int, len(ids))
	for i, id := range ids {
		pos[id] = i
	}
	slices.SortFunc(got, func(a, b *job.Job) int { return pos[a.ID] - pos[b.ID] })
	return got, nil
}

// countKeyed adds the jobs got claimed of q to its keys' and its own
// counts, and moves its cursor to last, the key served last.
func (s *Store) countKeyed(ctx context.Context, tx pgx.Tx, q keyedQueue, got []*job.Job, last string, p store.ClaimParams) error {
	if q.limit > 0 {
		var keys []string
		var ns []int32
		taken := map[string]int32{}
		for _, j := range got {
			if j.Key != "" {
				taken[j.Key]++
			}
		}
		for _, k := range slices.Sorted(maps.Keys(taken)) {
			keys, ns = append(keys, k), append(ns, taken[k])
		}
		if len(keys) > 0 {
			if _, err := tx.Exec(ctx, s.q(`INSERT INTO {schema}.queue_keys (queue, key, running, updated_at)
				SELECT $1, k, n, $4 FROM unnest($2::text[], $3::int[]) AS u(k, n)
				ON CONFLICT (queue, key) DO UPDATE SET running = {schema}.queue_keys.running + excluded.running`),
				q.name, keys, ns, ts(p.Now)); err != nil {
				return err
			}
		}
	}
	if !q.hasRow {
		return nil
	}
	n := 0
	if q.slots {
		n = len(got)
	}
	_, err := tx.Exec(ctx, s.q(`UPDATE {schema}.queues SET key_cursor = $2, running = running + $3 WHERE name = $1`), q.name, last, n)
	return err
}
