package sqlitestore

import (
	"context"
	"database/sql"
	"errors"
	"slices"
	"time"

	"github.com/hopperq/hopper/job"
	"github.com/hopperq/hopper/store"
)

var (
	_ store.KeyControl    = (*Store)(nil)
	_ store.KeyGetter     = (*Store)(nil)
	_ store.KeyJobCounter = (*Store)(nil)
)

// Per-key flow control (store.KeyControl). A keyed queue — one with a
// limit per key, or a paused or held key (sqlKeyedQueues) — is left out of
// the lanes of the plain claim (sqlReadyLanes) and claimed by claimKeyed,
// in the same write transaction: it walks the queue's keys in turn from
// its cursor, one index probe per key (jobs_key), reads each key's row
// (queue_keys) and takes at most the key's free slots of its jobs, then
// takes one job of each key a round. The slots are counted in
// queue_keys.running: the claim adds them, the triggers of schema 12 take
// them off when the attempt leaves running. A key's throttle is in
// keythrottle.go.

// sqlKeyedQueues are the names of the keyed queues.
const sqlKeyedQueues = `SELECT name FROM queues WHERE key_concurrency > 0 OR key_rate_n > 0
	UNION SELECT queue FROM queue_keys WHERE paused <> 0 OR held_until <> 0`

const keyCols = `queue, key, running, paused, paused_at, held_until, updated_at`

func scanKey(r scanner) (store.KeyState, error) {
	var k store.KeyState
	var pausedAt, held, updated int64
	if err := r.Scan(&k.Queue, &k.Key, &k.Running, &k.Paused, &pausedAt, &held, &updated); err != nil {
		return k, err
	}
	k.PausedAt, k.HeldUntil, k.UpdatedAt = store.FromUnixNanos(pausedAt), store.FromUnixNanos(held), store.FromUnixNanos(updated)
	return k, nil
}

// loadKey reads the state of key of queue (the zero state if it has no row).
func (w *writer) loadKey(queue, key string) (store.KeyState, error) {
	var k store.KeyState
	var pausedAt, held, updated int64
	err := w.scanRow(`SELECT `+keyCols+` FROM queue_keys WHERE queue = ? AND key = ?`, []any{queue, key},
		&k.Queue, &k.Key, &k.Running, &k.Paused, &pausedAt, &held, &updated)
	if errors.Is(err, sql.ErrNoRows) {
		return store.KeyState{Queue: queue, Key: key}, nil
	}
	k.PausedAt, k.HeldUntil, k.UpdatedAt = store.FromUnixNanos(pausedAt), store.FromUnixNanos(held), store.FromUnixNanos(updated)
	return k, err
}

// putKey writes k, or deletes its row if it is idle at now.
func (w *writer) putKey(k store.KeyState, now time.Time) error {
	if k.Idle(now) {
		_, err := w.exec(`DELETE FROM queue_keys WHERE queue = ? AND key = ?`, k.Queue, k.Key)
		return err
	}
	_, err := w.exec(`INSERT INTO queue_keys (`+keyCols+`) VALUES (?, ?, ?, ?, ?, ?, ?)
		ON CONFLICT (queue, key) DO UPDATE SET running = excluded.running, paused = excluded.paused,
			paused_at = excluded.paused_at, held_until = excluded.held_until, updated_at = excluded.updated_at`,
		k.Queue, k.Key, k.Running, k.Paused, store.UnixNanos(k.PausedAt), store.UnixNanos(k.HeldUntil), store.UnixNanos(k.UpdatedAt))
	return err
}

// SetKey implements store.KeyControl.
func (s *Store) SetKey(ctx context.Context, p store.SetKeyParams) (store.KeyState, error) {
	if err := p.Validate(); err != nil {
		return store.KeyState{}, err
	}
	var out store.KeyState
	err := s.write(ctx, func(w *writer) error {
		cur, err := w.loadKey(p.Queue, p.Key)
		if err != nil {
			return err
		}
		out = store.ApplySetKey(cur, p)
		return w.putKey(out, p.Now)
	})
	if err != nil {
		return store.KeyState{}, err
	}
	return out, nil
}

// GetKey implements store.KeyGetter: the key's row and its throttle's,
// each by primary key.
func (s *Store) GetKey(ctx context.Context, queue, key string) (store.KeyState, error) {
	if err := s.errIfClosed(); err != nil {
		return store.KeyState{}, err
	}
	k, err := scanKey(s.rdb.QueryRowContext(ctx, `SELECT `+keyCols+` FROM queue_keys WHERE queue = ? AND key = ?`, queue, key))
	if errors.Is(err, sql.ErrNoRows) {
		k, err = store.KeyState{Queue: queue, Key: key}, nil
	}
	if err != nil {
		return store.KeyState{}, s.readErr(err)
	}
	rows, err := s.rdb.QueryContext(ctx, sqlKeyThrottles+`t.queue = ?1 AND t.key = ?2`, queue, key)
	if err != nil {
		return store.KeyState{}, s.readErr(err)
	}
	defer rows.Close()
	th, err := store.ScanKeyThrottles(rows)
	if err != nil {
		return store.KeyState{}, s.readErr(err)
	}
	if len(th) > 0 {
		k.Throttle = th[0].Throttle
	}
	return k, nil
}

// KeysWithJobs implements store.KeyJobCounter: the available keyed jobs
// counted per key in jobs_key's order, joined to the keys' rows and
// throttles by primary key; with no key state at all (keys used without
// limits) the jobs are not read (a constant condition, checked once).
func (s *Store) KeysWithJobs(ctx context.Context) ([]store.KeyJobs, error) {
	if err := s.errIfClosed(); err != nil {
		return nil, err
	}
	rows, err := s.rdb.QueryContext(ctx, `WITH a AS (SELECT queue, flow_key AS key, count(*) AS n FROM jobs INDEXED BY jobs_key
			WHERE state = 'available' AND flow_key <> ''
				AND (EXISTS (SELECT 1 FROM queue_keys) OR EXISTS (SELECT 1 FROM throttles WHERE key <> ''))
			GROUP BY queue, flow_key)
		SELECT a.queue, a.key, coalesce(k.running, 0), coalesce(k.paused, 0), coalesce(k.paused_at, 0),
			coalesce(k.held_until, 0), coalesce(k.updated_at, 0),
			t.tat, coalesce(q.key_rate_n, 0), coalesce(q.key_rate_period, 0), coalesce(q.key_rate_burst, 0), coalesce(q.key_rate_drop, 0), a.n
		FROM a LEFT JOIN queue_keys k ON k.queue = a.queue AND k.key = a.key
		LEFT JOIN throttles t ON t.queue = a.queue AND t.key = a.key
		LEFT JOIN queues q ON q.name = a.queue
		WHERE k.key IS NOT NULL OR t.key IS NOT NULL ORDER BY a.queue, a.key`)
	if err != nil {
		return nil, s.readErr(err)
	}
	defer rows.Close()
	out := []store.KeyJobs{}
	for rows.Next() {
		var tat sql.NullInt64
		var period int64
		var r store.Rate
		var n int
		k, err := scanKey(moreCols{rows, []any{&tat, &r.N, &period, &r.Burst, &r.Drop, &n}})
		if err != nil {
			return nil, s.readErr(err)
		}
		if tat.Valid {
			r.Period = time.Duration(period)
			k.Throttle = store.Throttle{Rate: r, TAT: tat.Int64}
		}
		out = append(out, store.KeyJobs{KeyState: k, Available: n})
	}
	if err := rows.Err(); err != nil {
		return nil, s.readErr(err)
	}
	return out, nil
}

// moreCols scans a row whose columns after those a scan asks for go to
// more.
type moreCols struct {
	r    scanner
	more []any
}

func (m moreCols) Scan(dest ...any) error { return m.r.Scan(append(dest, m.more...)...) }

// ListKeys implements store.KeyControl.
func (s *Store) ListKeys(ctx context.Context, queue string) ([]store.KeyState, error) {
	if err := s.errIfClosed(); err != nil {
		return nil, err
	}
	rows, err := s.rdb.QueryContext(ctx, `SELECT `+keyCols+` FROM queue_keys WHERE ?1 = '' OR queue = ?1 ORDER BY queue, key`, queue)
	if err != nil {
		return nil, s.readErr(err)
	}
	defer rows.Close()
	out := []store.KeyState{}
	for rows.Next() {
		k, err := scanKey(rows)
		if err != nil {
			return nil, s.readErr(err)
		}
		out = append(out, k)
	}
	if err := rows.Err(); err != nil {
		return nil, s.readErr(err)
	}
	th, err := s.listKeyThrottles(ctx, queue)
	if err != nil {
		return nil, s.readErr(err)
	}
	return store.MergeKeyThrottles(out, th), nil
}

// holdKeys applies the HoldKeyUntil of the outcomes that reached a state
// (reached[i] set) to their jobs' keys.
func (w *writer) holdKeys(p store.FinishParams, reached []job.State) error {
	for i, o := range p.Outcomes {
		if o.HoldKeyUntil.IsZero() || reached[i] == 0 { // no hold, or the outcome did not apply
			continue
		}
		var queue, key string
		if err := w.scanRow(`SELECT queue, flow_key FROM jobs WHERE id = ?`, []any{int64(o.ID)}, &queue, &key); err != nil {
			return err
		}
		if key == "" {
			continue
		}
		cur, err := w.loadKey(queue, key)
		if err != nil {
			return err
		}
		until := o.HoldKeyUntil
		if err := w.putKey(store.ApplySetKey(cur, store.SetKeyParams{Now: p.Now, Queue: queue, Key: key, HoldUntil: &until}), p.Now); err != nil {
			return err
		}
	}
	return nil
}

// keyedQueue is a keyed queue a claim looks at.
type keyedQueue struct {
	name   string
	limit  int    // per key, 0: none
	cursor string // the key its latest claim served last
	free   int    // the most jobs the claim may take of it
	// keyRate is its rate per key (zero: none).
	keyRate store.Rate
	// split, for a queue whose own rate (rate) has Drop, splits its walk
	// into starts and drops (throttleKeyed); nil otherwise.
	split *store.RateSplit
	rate  store.Rate
}

// sqlClaimKeyed claims the jobs ?5 (a JSON array of IDs) as sqlClaim, and
// marks them as holding a slot of their key where ?6 (the queue's limit
// per key) is set.
const sqlClaimKeyed = sqlClaimSet + `, key_slot = (flow_key <> '' AND ?6 > 0)
	WHERE id IN (SELECT value FROM json_each(?5)) AND state = 'available'
	RETURNING ` + claimedCols

// claimKeyed claims at most limit jobs of the keyed queues p looks at,
// keys in turn (store.KeyControl), each throttled one (in gates, the
// claim's throttled queues) at most as many as its rate allows (the gate
// records them for endThrottle), and drops the excess of the keys of a
// queue whose rate per key drops it, and of a queue whose own rate drops
// it (store.RateSplit; the drops count against limit as starts do). The
// result's Held reports whether a key at its limit held jobs back; its
// ThrottledUntil, when the first key a throttle per key held back allows
// a start (zero if none).
func (s *Store) claimKeyed(w *writer, p store.ClaimParams, limit int, gates []gate) (res store.ClaimResult, err error) {
	qs, err := keyedQueues(w, p)
	if err != nil || len(qs) == 0 {
		return res, err
	}
	now := store.UnixNanos(p.Now)
	for _, q := range qs {
		if !q.keyRate.Zero() {
			if err := w.collectKeyThrottles(q.name, q.keyRate, now); err != nil {
				return res, err
			}
		}
		left := limit - len(res.Jobs) - len(res.Dropped)
		if left <= 0 {
			break
		}
		if err := throttleKeyed(w, &q, gates, now); err != nil {
			return res, err
		}
		n := min(left, q.free)
		if n <= 0 {
			continue
		}
		if _, err := w.exec(`DELETE FROM queue_keys WHERE queue = ? AND running <= 0 AND paused = 0 AND held_until <> 0 AND held_until <= ?`,
			q.name, now); err != nil {
			return res, err
		}
		pick, err := w.keyedCandidates(q, p, n)
		res.Held = res.Held || pick.Held
		if u := pick.ThrottledUntil; !u.IsZero() && (res.ThrottledUntil.IsZero() || u.Before(res.ThrottledUntil)) {
			res.ThrottledUntil = u
		}
		if err != nil {
			return res, err
		}
		if len(pick.IDs)+len(pick.Drops) == 0 {
			continue
		}
		if len(pick.Drops) > 0 {
			dropped, err := w.dropKeyed(q, pick, now)
			if err != nil {
				return res, err
			}
			res.Dropped = append(res.Dropped, dropped...)
		}
		if _, err := w.exec(`UPDATE queues SET key_cursor = ? WHERE name = ?`, pick.Last, q.name); err != nil {
			return res, err
		}
		ids := pick.IDs
		if len(ids) == 0 {
			continue
		}
		got, err := w.queryClaimed(p, sqlClaimKeyed, store.UnixNanos(p.Now), p.Worker, store.UnixNanos(p.LeaseUntil), s.worker,
			idList(ids), q.limit)
		if err != nil {
			return res, err
		}
		if !q.keyRate.Zero() {
			if err := w.takeKeyThrottles(q.name, q.keyRate, got, now); err != nil {
				return res, err
			}
		}
		// RETURNING has no order: restore the turn order.
		pos := make(map[job.ID]int, len(ids))
		for i, id := range ids {
			pos[id] = i
		}
		slices.SortFunc(got, func(a, b *job.Job) int { return pos[a.ID] - pos[b.ID] })
		if q.limit > 0 {
			taken := map[string]int{}
			for _, j := range got {
				if j.Key != "" {
					taken[j.Key]++
				}
			}
			for key, n := range taken {
				if _, err := w.exec(`INSERT INTO queue_keys (queue, key, running, updated_at) VALUES (?, ?, ?, ?)
					ON CONFLICT (queue, key) DO UPDATE SET running = running + excluded.running`, q.name, key, n, now); err != nil {
					return res, err
				}
			}
		}
		res.Jobs = append(res.Jobs, got...)
	}
	return res, nil
}

// keyedQueues returns the keyed queues p looks at that are not paused,
// by name, each with the most jobs a claim may take of it: p's Limit, its
// QueueLimits, its free slots if it has a concurrency limit.
func keyedQueues(w *writer, p store.ClaimParams) ([]keyedQueue, error) {
	rows, err := w.query(`SELECT k.name, coalesce(q.key_concurrency, 0), coalesce(q.key_cursor, ''),
			CASE WHEN q.concurrency > 0 THEN q.concurrency - coalesce((SELECT sum(r.n) FROM lane_counts r
				WHERE r.state = 'running' AND r.queue = q.name), 0) END,
			coalesce(q.key_rate_n, 0), coalesce(q.key_rate_period, 0), coalesce(q.key_rate_burst, 0),
			coalesce(q.key_rate_drop, 0)
		FROM (`+sqlKeyedQueues+`) k LEFT JOIN queues q ON q.name = k.name
		WHERE coalesce(q.paused, 0) = 0 AND (?1 IS NULL OR k.name IN (SELECT value FROM json_each(?1)))
		ORDER BY k.name`, queuesArg(p.Queues))
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []keyedQueue
	for rows.Next() {
		q := keyedQueue{free: p.Limit}
		var free sql.NullInt64
		var keyPeriod int64
		if err := rows.Scan(&q.name, &q.limit, &q.cursor, &free, &q.keyRate.N, &keyPeriod, &q.keyRate.Burst,
			&q.keyRate.Drop); err != nil {
			return nil, err
		}
		q.keyRate.Period = time.Duration(keyPeriod)
		if ql, ok := p.QueueLimits[q.name]; ok {
			q.free = min(q.free, ql)
		}
		if free.Valid {
			q.free = min(q.free, int(max(free.Int64, 0)))
		}
		out = append(out, q)
	}
	return out, rows.Err()
}

// queuesArg is ?1 of a statement filtered by queues: a JSON array, or NULL
// for any.
func queuesArg(queues []string) any {
	args, _ := filterArgs(queues, nil)
	return args[0]
}

// keyedCandidates picks at most n jobs of the keyed queue q for p, keys
// in turn (store.KeyWalk): each key's next job by jobs_key, its state by
// its row (and its throttle's, if q has a rate per key).
func (w *writer) keyedCandidates(q keyedQueue, p store.ClaimParams, n int) (store.KeyPick, error) {
	kinds := kindsArg(p.Kinds)
	walk := store.KeyWalk{
		Cursor: q.cursor, Limit: q.limit, Now: p.Now, N: n, Split: q.split,
		State: func(key string) (store.KeyState, error) {
			k, err := w.loadKey(q.name, key)
			if err != nil || q.keyRate.Zero() || key == "" {
				return k, err
			}
			k.Throttle.Rate = q.keyRate
			k.Throttle.TAT, err = w.keyTAT(q.name, key)
			return k, err
		},
		Next: func(after, upTo string) (string, bool, error) {
			var key string
			var err error
			if upTo == "" {
				err = w.scanRow(sqlNextKey, []any{q.name, after}, &key)
			} else {
				err = w.scanRow(sqlNextKeyUpTo, []any{q.name, after, upTo}, &key)
			}
			if errors.Is(err, sql.ErrNoRows) {
				return "", false, nil
			}
			return key, err == nil, err
		},
		Jobs: func(key string, take int) ([]job.ID, error) {
			// A key's jobs through jobs_key, whose condition the query
			// must state literally (flow_key <> ''): SQLite does not
			// read it from a bound key. The keyless, unless a hint
			// knows there are none (keyless.go).
			if key == "" {
				return w.keylessJobs(q.name, kinds, take)
			}
			return w.jobIDs(sqlKeyJobs, q.name, key, kinds, take)
		},
	}
	return walk.Pick()
}

// jobIDs runs q, which selects job IDs, and reads them.
func (w *writer) jobIDs(q string, args ...any) ([]job.ID, error) {
	rows, err := w.query(q, args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var ids []job.ID
	for rows.Next() {
		var id int64
		if err := rows.Scan(&id); err != nil {
			return nil, err
		}
		ids = append(ids, job.ID(id))
	}
	return ids, rows.Err()
}

// sqlNextKey returns the first key (not "") with available jobs of queue
// ?1 after ?2, and sqlNextKeyUpTo the first not after ?3 either, through
// jobs_key: both bounds are the index range. With one statement whose
// upper bound held only if ?3 was set (an OR of ?3 empty and flow_key <=
// ?3), SQLite checked that bound row by row, so that the end of a wrapped walk (no key left up to
// the cursor) read every job of the keys after it — a hot key's whole
// backlog — at every claim (decision 106).
const (
	sqlNextKey = `SELECT flow_key FROM jobs WHERE state = 'available' AND flow_key <> '' AND queue = ?1
		AND flow_key > ?2 ORDER BY flow_key LIMIT 1`
	sqlNextKeyUpTo = `SELECT flow_key FROM jobs WHERE state = 'available' AND flow_key <> '' AND queue = ?1
		AND flow_key > ?2 AND flow_key <= ?3 ORDER BY flow_key LIMIT 1`
)

// sqlKeyJobs and sqlKeylessJobs select the first ?4 available jobs of key
// ?2 of queue ?1, of the kinds ?3 (NULL: any): a key's through jobs_key,
// the keyless through the queue's claim index.
const (
	sqlKeyJobs = `SELECT id FROM jobs WHERE state = 'available' AND flow_key <> '' AND queue = ?1 AND flow_key = ?2
		AND (?3 IS NULL OR kind IN (SELECT value FROM json_each(?3)))
		ORDER BY priority, run_at, id LIMIT +?4`
	sqlKeylessJobs = `SELECT id FROM jobs WHERE state = 'available' AND queue = ?1 AND flow_key = ?2
		AND (?3 IS NULL OR kind IN (SELECT value FROM json_each(?3)))
		ORDER BY priority, run_at, id LIMIT +?4`
)

// kindsArg is a JSON array of kinds, or NULL for any.
func kindsArg(kinds []string) any {
	args, _ := filterArgs(nil, kinds)
	return args[1]
}
