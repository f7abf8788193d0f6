package pgstore

import (
	"cmp"
	"context"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/hopperq/hopper/job"
	"github.com/hopperq/hopper/store"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgtype"
	"github.com/jackc/pgx/v5/pgxpool"
)

// The claim path: one round trip (a pgx Batch, one implicit transaction)
// of three statements, each an index search per queue, whatever the number
// of jobs in the table:
//
//  1. promotion: the scheduled and retrying jobs of the claimed queues
//     whose run-at has come become available (store.ApplyPromote), at most
//     promoteBatch per queue and claim, by run-at (jobs_due), skipping
//     rows other transactions hold;
//  2. the claim: per queue that is not paused (the queues table, read
//     in the statement), a LATERAL subquery takes the first
//     min(Limit, QueueLimits[queue]) available jobs of that queue in claim
//     order — priority, run-at, ID: exactly the order of jobs_claim, which
//     it walks with queue = $queue — locking them FOR UPDATE SKIP LOCKED;
//     the union is sorted and cut to Limit inside a MATERIALIZED CTE (the
//     fence: the planner cannot re-run it and update more than Limit
//     rows), and one UPDATE … WHERE id = ANY(ARRAY(SELECT id FROM the
//     CTE)) moves those to running (store.ApplyClaim) and returns them —
//     primary-key lookups: joined to the CTE instead, the planner may
//     hash-join it with a scan of the whole table;
//     A queue with a concurrency limit (the queues table) gives at most
//     its free slots, its row locked for the claim (sqlLimited); the jobs
//     taken there hold a slot (jobs.slot), counted in its running;
//  3. NextRunAt: per queue, the first entry of jobs_due (of the claimed
//     kinds).
//
// The claimed queues are ClaimParams.Queues, or, if none is given, the
// queues the floors know (floor.go), or, in a claim that starts at the
// fronts, the queues that have jobs in the state at hand, found by a loose
// index scan (a recursive CTE that jumps from one queue to the next in the
// index). Each queue's scan starts at its floor. Kinds filter the rows of
// a queue as they are read: jobs of kinds no worker runs, at the front of
// a queue, are read and passed over by each claim that starts there (give
// such kinds a queue of their own).
//
// SKIP LOCKED makes concurrent claims take disjoint rows without waiting;
// a row is locked before it is updated, and its state is checked again
// under the lock, so no job is claimed twice, by any number of processes.
//
// A row lock writes to the row (and to the WAL), so a claim locks only the
// rows it takes. With one queue, the LATERAL subquery does (its LIMIT is
// the claim's). With several, a first pass without locks reads the
// candidates of each queue and keeps the first Limit of them in claim
// order, which says how many to take from each queue; the second pass
// locks that many per queue (skipping rows locked meanwhile, and taking
// the next ones in their place). Locking per queue at once would lock up
// to Limit rows in every queue to keep Limit in all.

// sqlClaimPlan fixes the plans of the rest of the claim's transaction (a
// pgx Batch's implicit one; set_config(…, true) ends with it, and works
// behind PgBouncer):
//   - no bitmap scans: each queue must be read in index order, stopping at
//     its limit. Without column statistics (autovacuum off: the
//     self-vacuum does not ANALYZE) the planner expects a handful of
//     available jobs and reads all of them, bitmap scan then sort, in
//     both passes of a claim without named queues: measured, 290 ms a
//     claim with 300,000 jobs waiting (an 11 MB sort on disk), against
//     4 ms in index order. A backlog thus made every claim slower, and
//     grew: BenchmarkSoakSteady's 2,000 jobs/s were worked at 23/s after
//     10 minutes, a million jobs behind;
//   - no JIT: the LIMIT of each queue is a lateral reference, so with
//     statistics the planner costs the whole queue (840,000 with 300,000
//     waiting, past jit_above_cost and the inlining and optimization
//     thresholds) and compiled the claim at each execution: 340–360 ms;
//   - no wait for the WAL flush at commit (synchronous_commit off, for
//     this transaction only; decisions.md, 46): a claim's commit queued
//     behind the flushes of the enqueues and Finishes committing beside
//     it, and a claim is what a waiting job waits for. What a crash of
//     the server can lose is a claim, never a job: the job is available
//     (or scheduled) again as before the claim and runs again, as after a
//     worker's crash; and the attempt's Finish, whose commit is flushed,
//     makes the claim before it durable (the WAL is flushed in order).
//   - no sequential scan: the claim's UPDATE of the jobs it picked joined
//     them to a scan of the whole table in a generic plan made while the
//     table was small (11 of a claim's 16 ms at 5,000 jobs, growing with
//     the table; decision 96, TestPlansStaleStatistics);
//   - the generic plan of each statement, made once per connection, not a
//     plan per execution (planCacheGeneric).
const sqlClaimPlan = `SELECT set_config('enable_bitmapscan', 'off', true), set_config('jit', 'off', true), set_config('synchronous_commit', 'off', true),
	set_config('enable_seqscan', 'off', true), ` + planCacheGeneric

// promoteBatch caps the jobs one claim promotes per queue; the rest are
// promoted by the next claims (NextRunAt is then in the past).
const promoteBatch = 1000

const (
	// waitingQueuesAll lists, by a loose index scan of jobs_due, the
	// queues that have scheduled or retrying jobs.
	waitingQueuesAll = `WITH RECURSIVE e(name) AS (
		(SELECT queue FROM {schema}.jobs WHERE ` + sqlWaitingTimed + ` ORDER BY queue LIMIT 1)
		UNION ALL
		SELECT (SELECT queue FROM {schema}.jobs WHERE ` + sqlWaitingTimed + ` AND queue > e.name ORDER BY queue LIMIT 1)
		FROM e WHERE e.name IS NOT NULL)
	SELECT name FROM e WHERE name IS NOT NULL`
	// availableQueuesAll lists, by a loose index scan of jobs_claim, the
	// queues that have available jobs.
	availableQueuesAll = `RECURSIVE e(name) AS (
		(SELECT queue FROM {schema}.jobs WHERE state = 'available' ORDER BY queue LIMIT 1)
		UNION ALL
		SELECT (SELECT queue FROM {schema}.jobs WHERE state = 'available' AND queue > e.name ORDER BY queue LIMIT 1)
		FROM e WHERE e.name IS NOT NULL)`
)

// promoteSQL returns the promotion statement: $1 now, and $2 the queues
// if given.
func promoteSQL(given bool) string {
	qs := `SELECT unnest($2::text[]) AS name`
	if !given {
		qs = waitingQueuesAll
	}
	return `WITH qs AS (` + qs + `),
	d AS MATERIALIZED (SELECT x.id FROM qs CROSS JOIN LATERAL (
		SELECT id FROM {schema}.jobs
		WHERE ` + sqlWaitingTimed + ` AND queue = qs.name AND run_at <= $1
		ORDER BY run_at LIMIT ` + strconv.Itoa(promoteBatch) + ` FOR UPDATE SKIP LOCKED) x),
	u AS (UPDATE {schema}.jobs j SET state = 'available' WHERE j.id = ANY(ARRAY(SELECT id FROM d))
		RETURNING j.queue, j.priority, j.run_at, j.id),
	m AS (SELECT DISTINCT ON (queue) queue, priority, run_at, id FROM u ORDER BY queue, priority, run_at, id)
	SELECT queue, priority, run_at, id,
		set_config('` + promotedSetting + `', (SELECT json_agg(m)::text FROM m), true) FROM m`
}

// promotedSetting holds, for the rest of a claim's transaction, the lowest
// key its promotion made available in each queue (JSON), so that the claim
// starts there if that is below the floor (floor.go).
const promotedSetting = `hopper.promoted`

// sqlListQueues lists the queues that have available jobs or jobs waiting
// for a time (a full claim with no queues given, with floors: see
// floor.go).
const sqlListQueues = `SELECT name FROM (WITH ` + availableQueuesAll + ` SELECT name FROM e) a WHERE name IS NOT NULL
	UNION SELECT name FROM (` + waitingQueuesAll + `) w`

// nextRunSQL returns the NextRunAt query: $1 the kinds (NULL: any), and $2
// the queues if given; and ClaimResult.Held: whether a queue the claim
// could take from is at its concurrency limit now (read after the claim,
// in its transaction: jobs of that queue may wait for a slot).
func nextRunSQL(given bool) string {
	qs := `SELECT unnest($2::text[]) AS name`
	if !given {
		qs = waitingQueuesAll
	}
	held := `true`
	if given {
		held = `name = ANY($2::text[])`
	}
	return `SELECT (SELECT min(x.run_at) FROM (` + qs + `) qs CROSS JOIN LATERAL (
		SELECT run_at FROM {schema}.jobs
		WHERE ` + sqlWaitingTimed + ` AND queue = qs.name AND ($1::text[] IS NULL OR kind = ANY($1::text[]))
		ORDER BY run_at LIMIT 1) x),
		EXISTS (SELECT 1 FROM {schema}.queues WHERE concurrency > 0 AND running >= concurrency AND ` + held + `)`
}

// claimSQL returns the claim statement: $1 now, $2 worker, $3 lease, $4
// Limit, $5 the names and $6 the limits of the queues (those named, or,
// if not named, the queues with limits when they are found in the table),
// with named queues $7, $8 and $9 where each queue's scan starts (its
// floor: priority, run-at and ID; floor.go), and, with kinds, the kinds
// ($10, or $7 if not named). With one queue named (single), the locking
// pass is the only one.
func claimSQL(named, single, kinds, handOver bool) string {
	// Each queue starts at its floor, or lower where this transaction's
	// promotion made jobs available below it.
	with := `WITH ` + sqlLimited("SELECT unnest($5::text[])", handOver) + `,
	` + sqlThrottles("SELECT unnest($5::text[])", handOver) + `,
	qs AS (SELECT u.name, w.want, ` + sqlAllowed("w.want") + ` AS lim, f.fp, f.ft, f.fi
		FROM unnest($5::text[], $6::int[], $7::bigint[], $8::timestamptz[], $9::bigint[]) AS u(name, lim, fp, ft, fi)
		LEFT JOIN lq ON lq.name = u.name
		LEFT JOIN th ON th.name = u.name
		CROSS JOIN LATERAL (SELECT least(u.lim, coalesce(lq.free, u.lim)) AS want) w
		LEFT JOIN json_to_recordset(nullif(current_setting('` + promotedSetting + `', true), '')::json)
			AS pr(queue text, priority bigint, run_at timestamptz, id bigint) ON pr.queue = u.name
		CROSS JOIN LATERAL (SELECT * FROM (VALUES (u.fp, u.ft, u.fi), (pr.priority, pr.run_at, pr.id)) AS v(fp, ft, fi)
			WHERE v.fp IS NOT NULL ORDER BY 1, 2, 3 LIMIT 1) f
		WHERE ` + sqlNotPaused("u.name") + `),`
	kindParam := `$10`
	if !named {
		with = `WITH ` + availableQueuesAll + `,
		` + sqlLimited("SELECT name FROM e", handOver) + `,
		` + sqlThrottles("SELECT name FROM e", handOver) + `,
		qs AS (SELECT e.name, w.want, ` + sqlAllowed("w.want") + ` AS lim,
			(-9223372036854775808)::bigint AS fp, '-infinity'::timestamptz AS ft, 0::bigint AS fi
			FROM e LEFT JOIN unnest($5::text[], $6::int[]) AS l(name, lim) ON l.name = e.name
			LEFT JOIN lq ON lq.name = e.name
			LEFT JOIN th ON th.name = e.name
			CROSS JOIN LATERAL (SELECT least($4::int, coalesce(l.lim, $4::int), coalesce(lq.free, $4::int)) AS want) w
			WHERE e.name IS NOT NULL AND ` + sqlNotPaused("e.name") + `),`
		kindParam = `$7`
	}
	kind := ``
	if kinds {
		kind = ` AND kind = ANY(` + kindParam + `::text[])`
	}
	// The row comparison is an index condition: the scan starts there.
	from := func(lanes string) string {
		return ` AND (priority, run_at, id) >= (` + lanes + `.fp, ` + lanes + `.ft, ` + lanes + `.fi)`
	}
	lanes := `qs`
	if !single {
		// The unlocked pass: how many to take from each queue.
		with += `
	cand AS (SELECT x.queue, x.priority, x.run_at, x.id FROM qs CROSS JOIN LATERAL (
		SELECT queue, priority, run_at, id FROM {schema}.jobs
		WHERE state = 'available' AND queue = qs.name` + from("qs") + kind + `
		ORDER BY priority, run_at, id LIMIT qs.lim) x
		ORDER BY x.priority, x.run_at, x.id LIMIT $4::int),
	k AS (SELECT qs.name, qs.fp, qs.ft, qs.fi, n.lim FROM qs
		JOIN (SELECT queue, count(*)::int AS lim FROM cand GROUP BY queue) n ON n.queue = qs.name),`
		lanes = `k`
	}
	// The slots each queue's jobs took, less those handed over.
	taken := `SELECT queue, count(*)::int AS n FROM u WHERE slot GROUP BY queue`
	if handOver {
		taken = `SELECT queue, sum(n)::int AS n FROM (` + taken + ` UNION ALL SELECT ho.q, -ho.n FROM ho) z GROUP BY queue HAVING sum(n) <> 0`
	}
	return with + `
	c AS MATERIALIZED (SELECT x.id FROM ` + lanes + ` CROSS JOIN LATERAL (
		SELECT id, priority, run_at FROM {schema}.jobs
		WHERE state = 'available' AND queue = ` + lanes + `.name` + from(lanes) + kind + `
		ORDER BY priority, run_at, id LIMIT ` + lanes + `.lim FOR UPDATE SKIP LOCKED) x
		LIMIT $4::int),
	u AS (UPDATE {schema}.jobs j SET ` + claimSet("$1", "$2", "$3") + `, slot = j.queue IN (SELECT name FROM lq)
	WHERE j.id = ANY(ARRAY(SELECT id FROM c))
	RETURNING ` + jobColsOf("j") + `, j.slot),
	inc AS (UPDATE {schema}.queues q SET running = q.running + n.n
		FROM (` + taken + `) n WHERE q.name = n.queue),
	` + sqlThrottleEnd(kind) + `
	SELECT ` + jobCols + ` FROM u UNION ALL SELECT ` + jobCols + ` FROM d`
}

// sqlLimited is the CTE lq of a claim: of the queues names selects (a
// query of one column), those with a concurrency limit, each with its free
// slots (its limit less its running attempts that hold one), their rows
// locked in name order for the rest of the claim's transaction — so that
// concurrent claims of a limited queue take its slots one after the other,
// each reading the count the previous one left (FOR UPDATE reads the row's
// latest version). The claim then takes at most the free slots of each,
// marks the jobs it takes there as holding a slot (jobs.slot) and adds
// them to running, in the same statement. Queues without a limit have no
// row here, or a row that is not locked: their claims take no lock.
//
// With handOver, the claim of a FinishClaim whose Finish handed slots
// over (ho, read from handOverSetting; sqlHandOver) locks no queue row if
// it did: the queue they came from gives at most those slots (fewer if
// its limit was lowered below its running attempts since), and every
// other queue with a limit or a throttle none (th leaves them out). inc
// then gives back what the claim did not take.
func sqlLimited(names string, handOver bool) string {
	if !handOver {
		return `lq AS MATERIALIZED (SELECT name, greatest(concurrency - running, 0) AS free FROM {schema}.queues
		WHERE concurrency > 0 AND name IN (` + names + `) ORDER BY name FOR UPDATE)`
	}
	return `ho AS MATERIALIZED (SELECT h.q, h.n FROM json_to_record(nullif(current_setting('` + handOverSetting + `', true), '')::json) AS h(q text, n int)
		WHERE h.q IS NOT NULL),
	lk AS MATERIALIZED (SELECT name, greatest(concurrency - running, 0) AS free FROM {schema}.queues
		WHERE concurrency > 0 AND name IN (` + names + `) AND NOT EXISTS (SELECT 1 FROM ho) ORDER BY name FOR UPDATE),
	lq AS MATERIALIZED (SELECT name, free FROM lk UNION ALL
		SELECT q.name, CASE WHEN q.name = ho.q AND q.concurrency > 0 AND q.rate_n = 0
			THEN least(ho.n, greatest(q.concurrency - q.running + ho.n, 0)) ELSE 0 END
		FROM {schema}.queues q CROSS JOIN ho WHERE (q.concurrency > 0 OR q.rate_n > 0) AND q.name IN (` + names + `))`
}

// claimSet is the SET list of an UPDATE of jobs j that claims them at now
// for worker with a lease until lease (SQL expressions): a claim's
// transition (store.ApplyClaim), which every claim statement writes.
func claimSet(now, worker, lease string) string {
	return `state = 'running', attempt = j.attempt + 1, claims = j.claims + 1, started_at = ` + now +
		`, worker = ` + worker + `, lease_until = ` + lease + `, cancel_requested = false, terminate_requested = false`
}

// sqlNotPaused is the condition that the queue named by the expression
// name is not paused (store.QueueControl): a primary-key probe of the small
// queues table, once per queue a claim looks at, inside the claim's
// statement, so that no claim that starts after a pause commits takes a
// job of that queue.
//
// Keyed queues (keys.go) are left out too: claimKeyed claims them.
func sqlNotPaused(name string) string {
	return `NOT EXISTS (SELECT 1 FROM {schema}.queues pq WHERE pq.name = ` + name + ` AND (pq.paused OR pq.key_concurrency > 0 OR pq.key_rate_n > 0))
		AND NOT EXISTS (SELECT 1 FROM {schema}.queue_keys pk WHERE pk.queue = ` + name + ` AND (pk.paused OR pk.held_until IS NOT NULL))`
}

// The statements of each form, built once; sqlClaim is indexed by named,
// single, kinds and handOver.
var (
	sqlPromote = [2]string{promoteSQL(false), promoteSQL(true)}
	sqlNextRun = [2]string{nextRunSQL(false), nextRunSQL(true)}
	sqlClaim   = func() (qs [2][2][2][2]string) {
		for g := range 2 {
			for s := range 2 {
				for k := range 2 {
					for h := range 2 {
						qs[g][s][k][h] = claimSQL(g == 1, g == 1 && s == 1, k == 1, h == 1)
					}
				}
			}
		}
		return qs
	}()
)

func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}

// Claim implements store.Store. It is one round trip and one transaction,
// and a second transaction if it found keyed queues (keys.go), whose first
// batch rides in the first round trip when the Store guessed them
// (keyahead.go); no job is claimed twice, even by several processes.
func (s *Store) Claim(ctx context.Context, p store.ClaimParams) (store.ClaimResult, error) {
	if err := s.writable(); err != nil {
		return store.ClaimResult{}, err
	}
	c := s.newClaim(p, true)
	b := &pgx.Batch{}
	c.begin(b)
	b.Queue(sqlClaimPlan)
	c.queue(b)
	br, err := c.send(ctx, b)
	if err != nil {
		c.failed()
		return store.ClaimResult{}, s.translate(err)
	}
	if _, err := br.Exec(); err != nil { // the settings
		c.failed()
		return store.ClaimResult{}, s.translate(err)
	}
	res, err := c.read(ctx, br)
	if err == nil {
		err = c.close()
	}
	if err != nil {
		c.failed()
		return store.ClaimResult{}, err
	}
	return c.complete(ctx, res)
}

// claimCall is one claim's statements queued on a batch (queue), to be
// read (read, close) once the batch is sent (send), and completed
// (complete: the keyed queues, then the floors) once it committed, or
// recorded as failed (failed), which closes the batch if it is open.
type claimCall struct {
	s         *Store
	br        pgx.BatchResults // the batch sent, until closed
	p         store.ClaimParams
	queues    []string // p.Queues, sorted, without duplicates
	began     time.Time
	plan      floorPlan
	listing   bool     // the batch lists the queues (sqlListQueues)
	claiming  bool     // the batch claims, by sqlClaim[claimForm…][handOver] with claimArgs
	kinds     []string // p.Kinds, sorted, without duplicates; nil if none
	claimForm [3]bool  // named, single, kinds
	handOver  bool     // a FinishClaim's claim, after a Finish that may hand slots over
	claimArgs []any
	keying    bool // the batch lists the keyed queues (sqlKeyedOf)
	promoted  map[string]floorKey
	listed    []string
	keyed     []string // the keyed queues it found, for complete
	// Claiming ahead (keyahead.go): the keyed queues guessed, the first
	// batch of their claim, on conn; aheadErr, that batch's error.
	ahead    []string
	begun    *keyedBegin
	conn     *pgxpool.Conn
	aheadErr error
}

// newClaim returns the call of a claim for p, which claims ahead if
// mayGuess and the Store has a guess (keyahead.go).
func (s *Store) newClaim(p store.ClaimParams, mayGuess bool) *claimCall {
	c := &claimCall{s: s, p: p, queues: dedupe(p.Queues), began: time.Now()}
	if mayGuess && p.Limit > 0 {
		c.ahead = s.guesses.guess(keyedGuessKey(c.queues))
	}
	c.prepare()
	return c
}

// begin queues the BEGIN of a claim ahead on b, before its other
// statements (and before a FinishClaim's): the plain claim's transaction
// is explicit then, so that the keyed one's can follow it in the batch.
func (c *claimCall) begin(b *pgx.Batch) {
	if c.ahead != nil {
		b.Queue(`BEGIN`)
	}
}

// send sends b, on a connection of the claim's own if it claims ahead,
// and reads the result of its BEGIN (begin).
func (c *claimCall) send(ctx context.Context, b *pgx.Batch) (pgx.BatchResults, error) {
	if c.ahead == nil {
		c.br = c.s.pool.SendBatch(ctx, b)
		return c.br, nil
	}
	conn, err := c.s.pool.Acquire(ctx)
	if err != nil {
		return nil, err
	}
	c.conn = conn
	c.br = conn.SendBatch(ctx, b)
	if _, err := c.br.Exec(); err != nil {
		return nil, err
	}
	return c.br, nil
}

// prepare works out what the claim's statements will be (newClaim): the
// floors' plan, whether the batch lists the queues, and the claim
// statement with its arguments if it claims (claiming).
func (c *claimCall) prepare() {
	s, p, queues := c.s, c.p, c.queues
	given := len(queues) > 0
	if len(p.Kinds) > 0 {
		c.kinds = dedupe(p.Kinds)
	}
	// With floors and no queues given, a claim between refreshes names the
	// queues the floors know; a full one lists them.
	c.plan = floorPlan{full: true}
	if s.floors != nil {
		c.plan = s.floors.plan(given, strings.Join(c.kinds, "\x00"), c.began)
	}
	named := given || c.plan.names != nil
	c.listing = s.floors != nil && !named
	if c.plan.probe {
		s.probeReq <- queues // buffered (1), and plan asks for one probe at a time
	}
	if p.Limit <= 0 {
		return
	}
	var names []string
	var lims []int32
	if named {
		list := queues
		if !given {
			list = c.plan.names
		}
		for _, q := range list {
			lim := p.Limit
			if ql, ok := p.QueueLimits[q]; ok {
				lim = min(lim, ql)
			}
			if lim > 0 && !slices.Contains(c.ahead, q) { // a keyed queue's claim leaves it out
				names, lims = append(names, q), append(lims, int32(lim))
			}
		}
	} else {
		for q, ql := range p.QueueLimits {
			names, lims = append(names, q), append(lims, int32(max(0, min(p.Limit, ql))))
		}
	}
	if named && len(names) == 0 {
		return
	}
	c.claiming = true
	c.claimArgs = []any{ts(p.Now), p.Worker, ts(p.LeaseUntil), int32(min(p.Limit, 1<<31-1)), names, lims}
	if named {
		fp, ft, fi := s.floors.starts(names, c.plan.full)
		c.claimArgs = append(c.claimArgs, fp, ft, fi)
	}
	if c.kinds != nil {
		c.claimArgs = append(c.claimArgs, c.kinds)
	}
	c.claimForm = [3]bool{named, named && len(names) == 1, c.kinds != nil}
}

// queue queues the claim's statements on b, after the settings of its
// transaction (sqlClaimPlan or, in a FinishClaim, its own).
func (c *claimCall) queue(b *pgx.Batch) {
	s, p, queues, kinds := c.s, c.p, c.queues, c.kinds
	given := len(queues) > 0
	if given {
		b.Queue(s.q(sqlPromote[1]), ts(p.Now), queues)
	} else {
		b.Queue(s.q(sqlPromote[0]), ts(p.Now))
	}
	if c.listing {
		b.Queue(s.q(sqlListQueues))
	}
	if c.claiming {
		f := c.claimForm
		b.Queue(s.q(sqlClaim[b2i(f[0])][b2i(f[1])][b2i(f[2])][b2i(c.handOver)]), c.claimArgs...)
		b.Queue(s.q(sqlThrottledUntil), ts(p.Now).Time.UnixNano(), queues)
	}
	if given {
		b.Queue(s.q(sqlNextRun[1]), kinds, queues)
	} else {
		b.Queue(s.q(sqlNextRun[0]), kinds)
	}
	if p.Limit > 0 {
		c.keying = true
		b.Queue(s.q(sqlKeyedOf), queues) // the keyed queues (keys.go)
	}
	if c.ahead != nil {
		b.Queue(`COMMIT`)
		// In one round trip only if the plain claim takes nothing: its
		// room is then the whole limit.
		c.begun = s.queueBeginKeyed(b, p, c.ahead, p.Limit, !c.claiming)
	}
}

// read reads the claim's results from br, the batch's results positioned
// after the statements queued before the claim's; claiming ahead, up to
// the plain transaction's commit, and then the keyed one's first batch,
// whose error it keeps for complete (the plain claim committed).
func (c *claimCall) read(ctx context.Context, br pgx.BatchResults) (res store.ClaimResult, err error) {
	s := c.s
	if c.promoted, err = scanKeys(br); err != nil {
		return res, s.translate(err)
	}
	if c.listing {
		c.listed = []string{}
		rows, err := br.Query()
		if err != nil {
			return res, s.translate(err)
		}
		if c.listed, err = pgx.AppendRows(c.listed, rows, pgx.RowTo[string]); err != nil {
			return res, s.translate(err)
		}
	}
	if c.claiming {
		rows, err := br.Query()
		if err != nil {
			return res, s.translate(err)
		}
		if res.Jobs, err = scanJobs(rows); err != nil {
			return store.ClaimResult{}, s.translate(err)
		}
		res.Jobs, res.Dropped = splitDropped(res.Jobs)
		var until *int64
		if err := br.QueryRow().Scan(&until); err != nil {
			return store.ClaimResult{}, s.translate(err)
		}
		if until != nil {
			res.ThrottledUntil = store.FromUnixNanos(*until)
		}
	}
	var next pgtype.Timestamptz
	if err := br.QueryRow().Scan(&next, &res.Held); err != nil {
		return store.ClaimResult{}, s.translate(err)
	}
	if c.keying {
		rows, err := br.Query()
		if err != nil {
			return store.ClaimResult{}, s.translate(err)
		}
		if c.keyed, err = pgx.CollectRows(rows, pgx.RowTo[string]); err != nil {
			return store.ClaimResult{}, s.translate(err)
		}
	}
	if c.begun != nil {
		if _, err := br.Exec(); err != nil { // COMMIT
			return store.ClaimResult{}, s.translate(err)
		}
		c.aheadErr = c.begun.read(ctx, br, c.conn)
	}
	res.NextRunAt = fromTS(next)
	// RETURNING has no order: restore the claim order.
	slices.SortFunc(res.Jobs, func(a, b *job.Job) int {
		if c := cmp.Compare(a.Priority, b.Priority); c != 0 {
			return c
		}
		if c := a.RunAt.Compare(b.RunAt); c != 0 {
			return c
		}
		return cmp.Compare(a.ID, b.ID)
	})
	return res, nil
}

// close closes the batch, read: its error is the claim's, or, claiming
// ahead (past the plain transaction's commit), the keyed step's.
func (c *claimCall) close() error {
	err := c.br.Close()
	c.br = nil
	if err != nil && c.begun != nil {
		if c.aheadErr == nil {
			c.aheadErr = err
		}
		return nil
	}
	return c.s.translate(err)
}

// complete ends a claim whose batch committed with res, the plain
// claim's: it claims the keyed queues the batch found (claimKeyed), in a
// transaction of their own, records the claim (done, or failed) and
// returns res with the keyed jobs after the plain ones. It fails only if
// the keyed step failed and the plain claim took nothing: jobs claimed
// are handed over.
func (c *claimCall) complete(ctx context.Context, res store.ClaimResult) (store.ClaimResult, error) {
	defer c.release(ctx)
	slices.Sort(c.keyed)
	if c.keying {
		c.s.guesses.saw(keyedGuessKey(c.queues), c.keyed, len(res.Jobs) >= c.p.Limit)
	}
	var more store.ClaimResult
	switch {
	case c.begun != nil && c.aheadErr == nil && c.begun.claimed():
		// The keyed transaction claimed in the batch and committed
		// (keyfast.go): its jobs are handed over whatever the plain
		// claim found; another keyed queue is claimed next.
		c.s.aheadClaims.Add(1)
		more, _ = c.begun.claim(ctx, c.conn, c.p.Limit) // claimed: no error
		res.Held = res.Held || more.Held
		if !slices.Equal(c.keyed, c.ahead) {
			c.s.signal()
		}
	case len(c.keyed) > 0 && len(res.Jobs) < c.p.Limit:
		if len(c.promoted) > 0 {
			// The batch's promotion committed: the keyed claim must see
			// the keyless jobs it made available (done announces them
			// to the floors and the other Stores).
			c.s.keyless.clearKeys(c.promoted)
		}
		var err error
		if c.begun != nil && c.aheadErr == nil && slices.Equal(c.keyed, c.ahead) {
			c.s.aheadClaims.Add(1)
			more, err = c.begun.claim(ctx, c.conn, c.p.Limit-len(res.Jobs))
		} else {
			c.release(ctx)
			more, err = c.s.claimKeyed(ctx, c.p, c.keyed, c.p.Limit-len(res.Jobs))
		}
		if err != nil && len(res.Jobs) == 0 {
			c.failed()
			return store.ClaimResult{}, c.s.translate(err)
		}
		res.Held = res.Held || more.Held
		if u := more.ThrottledUntil; !u.IsZero() && (res.ThrottledUntil.IsZero() || u.Before(res.ThrottledUntil)) {
			res.ThrottledUntil = u
		}
	}
	c.release(ctx)
	for _, q := range c.ahead {
		if _, keyed := slices.BinarySearch(c.keyed, q); !keyed {
			// Left out of the plain claim as keyed, and keyed no
			// longer: claim it now.
			c.s.signal()
			break
		}
	}
	c.done(res) // the floors follow the plain claim's jobs
	res.Jobs = append(res.Jobs, more.Jobs...)
	res.Dropped = append(res.Dropped, more.Dropped...)
	return res, nil
}

// release rolls back what is left of a claim ahead's keyed transaction
// (a guess that was wrong, a claim that failed) and releases its
// connection; a claim that does not claim ahead has none.
func (c *claimCall) release(ctx context.Context) {
	if c.conn != nil {
		rollback(ctx, c.conn)
		c.conn.Release()
		c.conn = nil
	}
}

// failed records a claim whose transaction failed. It closes the batch
// first: a connection released with a batch open is closed by the pool
// in a goroutine of its own.
func (c *claimCall) failed() {
	if c.br != nil {
		c.br.Close()
		c.br = nil
	}
	c.release(context.Background())
	if f := c.s.floors; f != nil {
		f.abandon(c.plan)
		if c.plan.full {
			f.reset() // the fronts are still to be read
		}
	}
}

// done records a claim whose transaction committed with res.
func (c *claimCall) done(res store.ClaimResult) {
	s := c.s
	if s.floors == nil {
		return
	}
	s.floors.claimed(c.plan, res.Jobs, c.listed, len(res.Jobs) >= c.p.Limit, time.Since(c.began))
	if len(c.promoted) > 0 {
		// The claim saw the promoted jobs above its floors only; the
		// other Stores saw none of them.
		if s.announce(c.promoted) {
			s.signal()
		}
	}
}

// probeSQL returns the probe's query (floor.go): per queue of $1 (named)
// or per queue that has available or waiting jobs, the key of its first
// available job, NULL if none. It reads the front of each queue, without
// locks, beside the claims.
func probeSQL(named bool) string {
	qs := `unnest($1::text[]) AS u(name)`
	if !named {
		qs = `(` + sqlListQueues + `) u`
	}
	return `SELECT u.name, x.priority, x.run_at, x.id FROM ` + qs + `
	LEFT JOIN LATERAL (SELECT priority, run_at, id FROM {schema}.jobs
		WHERE state = 'available' AND queue = u.name ORDER BY priority, run_at, id LIMIT 1) x ON true`
}

var sqlProbe = [2]string{probeSQL(false), probeSQL(true)}

// prober runs the probes Claim asks for, one at a time, until the Store
// closes.
func (s *Store) prober() {
	defer s.wg.Done()
	for {
		select {
		case <-s.run.Done():
			return
		case queues := <-s.probeReq:
			began := time.Now()
			keys, err := s.probe(queues)
			if s.floors.probed(keys, time.Since(began), err) {
				s.signal()
			}
		}
	}
}

// probe reads the lowest key of each queue of queues (nil: of every queue
// with jobs available or waiting); lastKey for a queue with none available.
func (s *Store) probe(queues []string) (map[string]floorKey, error) {
	b := &pgx.Batch{}
	b.Queue(sqlClaimPlan)
	if queues != nil {
		b.Queue(s.q(sqlProbe[1]), queues)
	} else {
		b.Queue(s.q(sqlProbe[0]))
	}
	br := s.pool.SendBatch(s.run, b)
	defer br.Close()
	if _, err := br.Exec(); err != nil {
		return nil, err
	}
	rows, err := br.Query()
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	keys := make(map[string]floorKey)
	for rows.Next() {
		var (
			q     string
			prio  *int64
			runAt pgtype.Timestamptz
			id    *int64
		)
		if err := rows.Scan(&q, &prio, &runAt, &id); err != nil {
			return nil, err
		}
		keys[q] = lastKey
		if prio != nil {
			keys[q] = floorKey{set: true, priority: *prio, runAt: runAt.Time.UnixMicro(), id: *id}
		}
	}
	if err := rows.Err(); err != nil {
		return nil, err
	}
	return keys, br.Close()
}

// scanKeys reads the promotion's result: the lowest key it made available
// in each queue.
func scanKeys(br pgx.BatchResults) (map[string]floorKey, error) {
	rows, err := br.Query()
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var keys map[string]floorKey
	for rows.Next() {
		var (
			q     string
			prio  int64
			runAt time.Time
			id    int64
		)
		if err := rows.Scan(&q, &prio, &runAt, &id, nil); err != nil { // and the setting
			return nil, err
		}
		if keys == nil {
			keys = make(map[string]floorKey)
		}
		keys[q] = floorKey{set: true, priority: prio, runAt: runAt.UnixMicro(), id: id}
	}
	return keys, rows.Err()
}

// dedupe returns the distinct strings of list, sorted.
func dedupe(list []string) []string {
	if len(list) == 0 {
		return nil
	}
	out := slices.Clone(list)
	slices.Sort(out)
	return slices.Compact(out)
}

// sqlHeartbeat renews the leases of a Heartbeat call in one statement: $1
// the IDs (sorted) and $2 the claims of the leases; only jobs running
// that claim under worker $3 are renewed until $4, at $5 (heartbeat_at:
// where Rescue ends an interrupted attempt). The rows are locked
// in ID order first, each by its primary key (as sqlFinish), as every
// multi-row write does, so that it cannot deadlock with a Finish or a bulk
// action over the same jobs.
const sqlHeartbeat = `WITH k AS MATERIALIZED (SELECT l.id FROM unnest($1::bigint[], $2::bigint[]) AS l(id, claim)
		CROSS JOIN LATERAL (SELECT 1 FROM {schema}.jobs j
			WHERE j.id = l.id AND j.state::text = 'running' AND j.claims = l.claim AND j.worker = $3 FOR UPDATE) x)
	UPDATE {schema}.jobs j SET lease_until = $4, heartbeat_at = $5
	FROM k WHERE j.id = k.id
	RETURNING j.id, j.claims, j.cancel_requested, j.terminate_requested`

// Heartbeat implements store.Store: one statement whatever the number of
// leases.
func (s *Store) Heartbeat(ctx context.Context, p store.HeartbeatParams) (store.HeartbeatResult, error) {
	if err := s.writable(); err != nil {
		return store.HeartbeatResult{}, err
	}
	if len(p.Jobs) == 0 {
		return store.HeartbeatResult{}, nil
	}
	sorted := slices.SortedFunc(slices.Values(p.Jobs), func(a, b store.Lease) int {
		if c := cmp.Compare(a.ID, b.ID); c != 0 {
			return c
		}
		return cmp.Compare(a.Claim, b.Claim)
	})
	sorted = slices.Compact(sorted)
	ids := make([]int64, len(sorted))
	claims := make([]int64, len(sorted))
	for i, l := range sorted {
		ids[i], claims[i] = int64(l.ID), l.Claim
	}
	b := &pgx.Batch{}
	b.Queue(sqlNestedLoops)
	b.Queue(s.q(sqlHeartbeat), ids, claims, p.Worker, ts(p.LeaseUntil), ts(p.Now))
	br := s.pool.SendBatch(ctx, b)
	defer br.Close()
	if _, err := br.Exec(); err != nil {
		return store.HeartbeatResult{}, s.translate(err)
	}
	rows, err := br.Query()
	if err != nil {
		return store.HeartbeatResult{}, s.translate(err)
	}
	renewed := make(map[store.Lease][2]bool, len(p.Jobs)) // → cancel, terminate requested
	for rows.Next() {
		var (
			id, claim int64
			c, k      bool
		)
		if err := rows.Scan(&id, &claim, &c, &k); err != nil {
			rows.Close()
			return store.HeartbeatResult{}, s.translate(err)
		}
		renewed[store.Lease{ID: job.ID(id), Claim: claim}] = [2]bool{c, k}
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return store.HeartbeatResult{}, s.translate(err)
	}
	if err := br.Close(); err != nil {
		return store.HeartbeatResult{}, s.translate(err)
	}
	// In the order of p.Jobs.
	var res store.HeartbeatResult
	for _, l := range p.Jobs {
		switch c, ok := renewed[l]; {
		case !ok:
			res.Lost = append(res.Lost, l)
		case c[0]:
			res.Cancel = append(res.Cancel, l.ID)
			if c[1] {
				res.Terminate = append(res.Terminate, l.ID)
			}
		}
	}
	return res, nil
}
