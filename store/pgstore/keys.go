package pgstore

import (
	"context"
	"errors"
	"slices"
	"time"

	"github.com/hopperq/hopper/job"
	"github.com/hopperq/hopper/store"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgtype"
	"github.com/jackc/pgx/v5/pgxpool"
)

var (
	_ store.KeyControl    = (*Store)(nil)
	_ store.KeyGetter     = (*Store)(nil)
	_ store.KeyJobCounter = (*Store)(nil)
)

// Per-key flow control (store.KeyControl). A keyed queue — one with a
// limit per key, or a paused or held key (sqlKeyedQueues) — is left out of
// the claim statement (sqlNotPaused), and claimed by claimKeyed after it,
// in a transaction of its own that locks the queue's row first (claims of
// one keyed queue take turns, each reading the key counts the previous
// left: its statements start after the lock is granted), then walks the
// keys in turn (store.KeyWalk) over runs of keys read ahead, each key a
// probe of jobs_key, its rows and its first jobs (keyreads.go); the
// transaction is two round trips for one queue (claimKeyed). The slots
// are counted in queue_keys.running: the claim adds them, the trigger of
// schema 9 takes them off when the attempt leaves running. A key's
// throttle is in keythrottle.go.

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
// if it has no row), locking its row with lock: the queue's row first
// (if it has one), as claims lock them (sqlLockKeyedQueues, then the keys'
// rows). A key's pause or hold thus waits for the keyed claims of its
// queue under way, and the claims after it see it: without the queue's
// row, one could commit between a claim's walk, which read the key
// running, and the claim's commit, and the claim would start the key's
// job after the pause or hold was acknowledged.
func (s *Store) loadKey(ctx context.Context, tx dbtx, queue, key string, lock bool) (store.KeyState, error) {
	q := `SELECT ` + keyCols + ` FROM {schema}.queue_keys WHERE queue = $1 AND key = $2`
	if lock {
		if _, err := tx.Exec(ctx, s.q(`SELECT 1 FROM {schema}.queues WHERE name = $1 FOR UPDATE`), queue); err != nil {
			return store.KeyState{}, err
		}
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

// GetKey implements store.KeyGetter: the key's row and its throttle's,
// each by primary key, in one round trip.
func (s *Store) GetKey(ctx context.Context, queue, key string) (store.KeyState, error) {
	if err := s.readable(); err != nil {
		return store.KeyState{}, err
	}
	k := store.KeyState{Queue: queue, Key: key}
	if s.empty {
		return k, nil
	}
	b := &pgx.Batch{}
	b.Queue(s.q(`SELECT `+keyCols+` FROM {schema}.queue_keys WHERE queue = $1 AND key = $2`), queue, key)
	b.Queue(s.q(sqlKeyThrottles+`t.queue = $1 AND t.key = $2`), queue, key)
	br := s.pool.SendBatch(ctx, b)
	defer br.Close()
	row, err := scanKey(br.QueryRow())
	switch {
	case err == nil:
		k = row
	case !errors.Is(err, pgx.ErrNoRows):
		return store.KeyState{}, s.translate(err)
	}
	rows, err := br.Query()
	if err != nil {
		return store.KeyState{}, s.translate(err)
	}
	th, err := store.ScanKeyThrottles(rows)
	if err != nil {
		return store.KeyState{}, s.translate(err)
	}
	if len(th) > 0 {
		k.Throttle = th[0].Throttle
	}
	return k, s.translate(br.Close())
}

// KeysWithJobs implements store.KeyJobCounter: the available keyed jobs
// counted per key (jobs_key), joined to the keys' rows and throttles by
// primary key; with no key state at all (keys used without limits) the
// jobs are not read (a one-time filter).
func (s *Store) KeysWithJobs(ctx context.Context) ([]store.KeyJobs, error) {
	if err := s.readable(); err != nil {
		return nil, err
	}
	out := []store.KeyJobs{}
	if s.empty {
		return out, nil
	}
	rows, err := s.pool.Query(ctx, s.q(`WITH a AS (SELECT queue, flow_key AS key, count(*)::int AS n FROM {schema}.jobs
			WHERE state = 'available' AND flow_key <> ''
				AND (EXISTS (SELECT 1 FROM {schema}.queue_keys) OR EXISTS (SELECT 1 FROM {schema}.throttles WHERE key <> ''))
			GROUP BY queue, flow_key)
		SELECT a.queue, a.key, coalesce(k.running, 0), coalesce(k.paused, false), k.paused_at, k.held_until, k.updated_at,
			t.tat, coalesce(q.key_rate_n, 0), coalesce(q.key_rate_period, 0), coalesce(q.key_rate_burst, 0),
			coalesce(q.key_rate_drop, false), a.n
		FROM a LEFT JOIN {schema}.queue_keys k ON k.queue = a.queue AND k.key = a.key
		LEFT JOIN {schema}.throttles t ON t.queue = a.queue AND t.key = a.key
		LEFT JOIN {schema}.queues q ON q.name = a.queue
		WHERE k.key IS NOT NULL OR t.key IS NOT NULL ORDER BY a.queue, a.key`))
	if err != nil {
		return nil, s.translate(err)
	}
	defer rows.Close()
	for rows.Next() {
		var tat *int64
		var period int64
		var r store.Rate
		var n int
		k, err := scanKey(moreCols{rows, []any{&tat, &r.N, &period, &r.Burst, &r.Drop, &n}})
		if err != nil {
			return nil, s.translate(err)
		}
		if tat != nil {
			r.Period = time.Duration(period)
			k.Throttle = store.Throttle{Rate: r, TAT: *tat}
		}
		out = append(out, store.KeyJobs{KeyState: k, Available: n})
	}
	if err := rows.Err(); err != nil {
		return nil, s.translate(err)
	}
	return out, nil
}

// moreCols scans a row whose columns after those a scan asks for go to
// more.
type moreCols struct {
	r    pgx.Row
	more []any
}

func (m moreCols) Scan(dest ...any) error { return m.r.Scan(append(dest, m.more...)...) }

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
//
// Its transaction is two round trips with one queue: the first batch
// begins it and reads (lockKeyed's lock, then per queue the collection of
// its keys' throttles, the lock of its own throttle, the deletion of its
// idle key rows and the first run of its walk: keyreads.go); after the
// walk, the second drops and claims the jobs picked (sqlKeyedClaim) and
// commits. A walk past its first run, a queue's own throttle that holds
// jobs back or takes starts (throttleKeyed, takeKeyed), and each further
// queue add one. A claim of one queue whose walk is plain is one round
// trip (keyfast.go).
func (s *Store) claimKeyed(ctx context.Context, p store.ClaimParams, names []string, limit int) (res store.ClaimResult, err error) {
	conn, err := s.pool.Acquire(ctx)
	if err != nil {
		return res, err
	}
	defer conn.Release() // a connection left in a transaction is closed
	defer func() {
		if err != nil {
			rollback(ctx, conn)
		}
	}()
	return s.claimKeyedOn(ctx, conn, p, names, limit, true)
}

// claimKeyedOn is claimKeyed on conn, which may go in one round trip
// (keyfast.go) if mayFast. Its caller rolls back a transaction it left
// open with an error.
func (s *Store) claimKeyedOn(ctx context.Context, conn dbtx, p store.ClaimParams, names []string, limit int, mayFast bool) (store.ClaimResult, error) {
	b := &pgx.Batch{}
	k := s.queueBeginKeyed(b, p, names, limit, mayFast)
	br := conn.SendBatch(ctx, b)
	err := k.read(ctx, br, conn)
	if cerr := br.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return store.ClaimResult{}, err
	}
	return k.claim(ctx, conn, limit)
}

// rollback ends the transaction conn is in, if any (a claim that failed).
func rollback(ctx context.Context, conn *pgxpool.Conn) {
	if conn.Conn().PgConn().TxStatus() != 'I' {
		_, _ = conn.Exec(ctx, `ROLLBACK`)
	}
}

// claim walks and claims the queues k began (k.read), in turn, on conn,
// at most limit jobs in all, and commits: claimKeyed after its first
// batch.
func (k *keyedBegin) claim(ctx context.Context, conn dbtx, limit int) (res store.ClaimResult, err error) {
	s, p := k.s, k.p
	if k.fast {
		if k.claimed() {
			s.fastClaims.Add(1)
			return store.ClaimResult{Jobs: k.fastJobs, Held: k.fastHeld}, nil
		}
		// The walk was not plain: what the transaction did is committed;
		// claim the walk's way.
		s.fast.saw(k.names[0], false)
		s.fastMisses.Add(1)
		return s.claimKeyedOn(ctx, conn, p, k.names, limit, false)
	}
	until := &res.ThrottledUntil
	committed := false
	for i := range k.qs {
		q := &k.qs[i]
		left := limit - len(res.Jobs) - len(res.Dropped)
		if left <= 0 {
			break
		}
		th, err := s.throttleKeyed(ctx, conn, q, k.ths[q.name], p.Now)
		if err != nil {
			return store.ClaimResult{}, err
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
		pick, err := k.reads[q.name].walk(n, p).Pick()
		res.Held = res.Held || pick.Held
		if u := pick.ThrottledUntil; !u.IsZero() && (until.IsZero() || u.Before(*until)) {
			*until = u
		}
		if err != nil {
			return store.ClaimResult{}, err
		}
		if len(k.names) == 1 {
			s.fast.saw(q.name, plainPick(q, th != nil, k.reads[q.name], n, pick))
		}
		committed = i == len(k.qs)-1 && th == nil
		got, dropped, err := s.claimPicked(ctx, conn, p, *q, pick, committed)
		if err != nil {
			return store.ClaimResult{}, err
		}
		res.Dropped = append(res.Dropped, dropped...)
		if th != nil && len(got) > 0 {
			if err := s.takeKeyed(ctx, conn, q.name, th, len(got)); err != nil {
				return store.ClaimResult{}, err
			}
		}
		res.Jobs = append(res.Jobs, got...)
	}
	if !committed {
		if _, err := conn.Exec(ctx, `COMMIT`); err != nil {
			return store.ClaimResult{}, err
		}
	}
	return res, nil
}

// sqlKeyedQueueBegin is, in claimKeyed's first batch, what a keyed queue
// $1 (its row locked) needs before its walk, in one statement: ct deletes
// its keys' throttle rows that are a period behind $2 (Unix nanoseconds;
// store.Throttle.Collectable) under its rate per key, through the partial
// index throttles_idle of migration 17, no scan of the keys; ik deletes
// its key rows idle at $3 (store.KeyState.Idle: rows of passed holds),
// both leaving a paused queue as it is; and it returns its own throttle,
// the row locked (sqlKeyedThrottle). The three were statements of their
// own, each a step of its own in the time the queue's row is held, which
// every other keyed claim of the queue waits for (decision 111). The
// three take disjoint rows, each after the queue's row, as every writer
// of them does.
var sqlKeyedQueueBegin = `WITH ct AS (DELETE FROM {schema}.throttles WHERE queue = $1 AND key <> '' AND tat < $2::bigint
		- (SELECT key_rate_period FROM {schema}.queues WHERE name = $1 AND key_rate_n > 0 AND NOT paused)),
	ik AS (DELETE FROM {schema}.queue_keys WHERE queue = $1 AND running <= 0 AND NOT paused
		AND held_until <= $3 AND NOT EXISTS (SELECT 1 FROM {schema}.queues WHERE name = $1 AND paused))
	` + sqlKeyedThrottle

// keyedBegin is the first batch of a keyed claim's transaction, queued
// (queueBeginKeyed) then read (read): it begins the transaction, locks the
// rows of the queues names (lockKeyed) and, per queue, collects its keys'
// throttles, locks its own throttle, deletes its idle key rows and reads
// the first run of its walk. Read, it holds the queues that are not paused
// (lockKeyed), the throttle of each that has one, and the reads of each
// one's walk.
type keyedBegin struct {
	s     *Store
	p     store.ClaimParams
	names []string
	kinds []string
	limit int
	qs    []keyedQueue
	ths   map[string]*keyedThrottle
	reads map[string]*keyReads
	// fast: the batch claims in one round trip and commits (keyfast.go);
	// read, fastJobs are the jobs it claimed (none: the walk was not
	// plain) and fastHeld whether keys at their limit held jobs back.
	fast     bool
	fastJobs []*job.Job
	fastHeld bool
}

// queueBeginKeyed queues on b the first batch of a claim of at most limit
// jobs of the keyed queues names (sorted) for p. If mayFast, names is one
// queue and the Store does not remember it as slow (keyedFast), the batch
// tries the claim in one round trip (sqlKeyedFast) and commits.
func (s *Store) queueBeginKeyed(b *pgx.Batch, p store.ClaimParams, names []string, limit int, mayFast bool) *keyedBegin {
	k := &keyedBegin{s: s, p: p, names: names, limit: limit}
	if len(p.Kinds) > 0 {
		k.kinds = dedupe(p.Kinds)
	}
	n := limit
	if len(names) == 1 {
		if ql, ok := p.QueueLimits[names[0]]; ok {
			n = min(n, ql)
		}
		k.fast = mayFast && n > 0 && s.fast.try(names[0])
	}
	now := store.UnixNanos(micro(p.Now))
	b.Queue(`BEGIN`)
	b.Queue(sqlClaimPlan)
	b.Queue(s.q(sqlLockKeyedQueues), names)
	for _, name := range names {
		b.Queue(s.q(sqlKeyedQueueBegin), name, now, ts(p.Now))
		if k.fast {
			s.queueKeyedFast(b, p, name, n, k.kinds)
			b.Queue(`COMMIT`)
		} else {
			s.queueKeyRun(b, name, nil, "", keyBatchSize(limit), limit, k.kinds)
		}
	}
	return k
}

// claimed reports whether k's batch claimed jobs in one round trip and
// committed them (fast).
func (k *keyedBegin) claimed() bool {
	return k.fast && len(k.fastJobs) > 0
}

// read reads k's results from br, positioned at its BEGIN; the walks'
// further reads go through conn, the transaction's connection.
func (k *keyedBegin) read(ctx context.Context, br pgx.BatchResults, conn dbtx) error {
	for range 2 { // BEGIN, the settings
		if _, err := br.Exec(); err != nil {
			return err
		}
	}
	qs, err := lockKeyed(br, k.p, k.names)
	if err != nil {
		return err
	}
	k.qs, k.ths, k.reads = qs, map[string]*keyedThrottle{}, map[string]*keyReads{}
	for _, name := range k.names {
		var q *keyedQueue
		for i := range qs {
			if qs[i].name == name {
				q = &qs[i]
			}
		}
		th, err := scanKeyedThrottle(br.QueryRow())
		if err != nil {
			return err
		}
		rows, err := br.Query()
		if err != nil {
			return err
		}
		if k.fast {
			if k.fastJobs, k.fastHeld, err = scanKeyedFast(rows); err != nil {
				return err
			}
			_, err := br.Exec() // COMMIT
			return err
		}
		if q == nil { // paused
			rows.Close()
			continue
		}
		k.ths[name] = th
		r := newKeyReads(ctx, k.s, conn, q, k.kinds, k.limit)
		if err := r.scanRun(rows, q.cursor, ""); err != nil {
			return err
		}
		k.reads[name] = r
	}
	return nil
}

// sqlLockKeyedQueues reads the rows of the keyed queues $1, locking them in
// name order.
const sqlLockKeyedQueues = `SELECT name, paused, key_concurrency, key_cursor, concurrency, running,
		key_rate_n, key_rate_period, key_rate_burst, key_rate_drop
	FROM {schema}.queues WHERE name = ANY($1::text[]) ORDER BY name FOR UPDATE`

// lockKeyed returns the keyed queues names that are not paused, by name,
// each with the most jobs a claim may take of it, from br's next result,
// sqlLockKeyedQueues's (which locked their rows in name order).
func lockKeyed(br pgx.BatchResults, p store.ClaimParams, names []string) ([]keyedQueue, error) {
	rows, err := br.Query()
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

// sqlKeyedClaim claims, of keyed queue $7, the jobs $4 its walk picked
// that are still available, and counts them, in one statement: u moves
// them to running for the claim ($1 now, $2 worker, $3 lease;
// store.ApplyClaim), holding a slot of the queue if $5 and of their keys
// if the queue has a limit per key ($6); kc adds them to their keys'
// slots; kt moves their keys' throttles on (store.Throttle.Take: $9 the
// interval of the queue's rate per key, 0 without one, $10 the claim's
// now in Unix nanoseconds); qc moves the queue's cursor to $8, the key
// served last, and adds those that hold a slot to its running, if the
// claim took any or dropped some ($11). The keys' rows are written in key
// order. Each job is found by primary key: `state::text` keeps the partial
// index jobs_claim (available jobs; the ID its last column) out of reach,
// which a generic plan made while the table was small walked whole to
// find the few IDs (TestKeyedClaimPlanStaleStatistics).
var sqlKeyedClaim = `WITH u AS (UPDATE {schema}.jobs j SET ` + claimSet("$1", "$2", "$3") + `, slot = $5,
		key_slot = (j.flow_key <> '' AND $6::int > 0)
		WHERE j.id = ANY($4::bigint[]) AND j.state::text = 'available'
		RETURNING ` + jobColsOf("j") + `),
	ks AS (SELECT flow_key AS key, count(*)::int AS n FROM u WHERE flow_key <> '' GROUP BY flow_key),
	kc AS (` + takeKeySlots(`SELECT $7, ks.key, ks.n, $1 FROM ks WHERE $6::int > 0 ORDER BY ks.key`) + `),
	kt AS (INSERT INTO {schema}.throttles (queue, key, tat)
		SELECT $7, ks.key, $10::bigint + ks.n * $9::bigint FROM ks WHERE $9::bigint > 0 ORDER BY ks.key
		ON CONFLICT (queue, key) DO UPDATE SET tat = greatest({schema}.throttles.tat, $10::bigint) + excluded.tat - $10::bigint),
	qc AS (UPDATE {schema}.queues SET key_cursor = $8,
		running = running + CASE WHEN $5::boolean THEN (SELECT count(*) FROM u)::int ELSE 0 END
		WHERE name = $7 AND (SELECT count(*) FROM u) + $11::int > 0)
	SELECT ` + jobCols + ` FROM u`

// takeKeySlots is the statement that adds to the slots of keys the rows
// (queue, key, slots, now) of rows (a query, in key order: keys' rows
// are written in key order), each key's row made if it has none: a keyed
// claim's (sqlKeyedClaim, sqlKeyedFast).
func takeKeySlots(rows string) string {
	return `INSERT INTO {schema}.queue_keys (queue, key, running, updated_at)
		` + rows + `
		ON CONFLICT (queue, key) DO UPDATE SET running = {schema}.queue_keys.running + excluded.running`
}

// claimPicked drops (dropKeyed) and claims (sqlKeyedClaim) the jobs pick
// of q in one batch on conn, claimKeyed's transaction, which it commits
// too if commit; it returns the jobs claimed and those dropped, in pick's
// order.
func (s *Store) claimPicked(ctx context.Context, conn dbtx, p store.ClaimParams, q keyedQueue, pick store.KeyPick, commit bool) (
	got, dropped []*job.Job, err error) {
	b := &pgx.Batch{}
	var readDrops func(pgx.BatchResults) ([]*job.Job, error)
	if len(pick.Drops) > 0 {
		readDrops = s.queueDropKeyed(b, q, pick, p.Now)
	}
	claiming := len(pick.IDs)+len(pick.Drops) > 0
	if claiming {
		raw := make([]int64, len(pick.IDs))
		for i, id := range pick.IDs {
			raw[i] = int64(id)
		}
		b.Queue(s.q(sqlKeyedClaim), ts(p.Now), p.Worker, ts(p.LeaseUntil), raw, q.slots, q.limit, q.name, pick.Last,
			q.keyRate.Interval(), store.UnixNanos(micro(p.Now)), len(pick.Drops))
	}
	if commit {
		b.Queue(`COMMIT`)
	}
	if b.Len() == 0 {
		return nil, nil, nil
	}
	br := conn.SendBatch(ctx, b)
	defer func() {
		if cerr := br.Close(); err == nil && cerr != nil {
			got, dropped, err = nil, nil, cerr
		}
	}()
	if readDrops != nil {
		if dropped, err = readDrops(br); err != nil {
			return nil, nil, err
		}
	}
	if claiming {
		rows, err := br.Query()
		if err != nil {
			return nil, nil, err
		}
		if got, err = scanJobs(rows); err != nil {
			return nil, nil, err
		}
		pos := make(map[job.ID]int, len(pick.IDs))
		for i, id := range pick.IDs {
			pos[id] = i
		}
		slices.SortFunc(got, func(a, b *job.Job) int { return pos[a.ID] - pos[b.ID] })
	}
	if commit {
		if _, err := br.Exec(); err != nil {
			return nil, nil, err
		}
	}
	return got, dropped, nil
}
