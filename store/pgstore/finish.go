package pgstore

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"time"

	"github.com/hopperq/hopper/job"
	"github.com/hopperq/hopper/store"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgtype"
)

// finishTo is store.FinishState in SQL: the state an outcome x leaves the
// running job j in.
const finishTo = `(CASE WHEN j.cancel_requested AND x.st <> 'completed' THEN 'cancelled' ELSE x.st END)`

// finishSQL returns store.ApplyFinish in SQL, for a whole Finish call: the
// outcomes are arrays sorted by ID, $1 IDs, $2 attempts, $3 target
// states, $4 run-ats, $5 errors, $6 results, $7 the attempt records and $8
// the same records with the outcome "cancelled" (for outcomes a requested
// cancel turns into a cancel; empty otherwise), $9 now, $10 claims, and
// the limited queues whose rows it locks besides theirs (lk): $11 those
// named, $12 all of them (a FinishClaim's claim locks them next); with
// handOver, $13 is the FinishClaim's claim Limit, and the slots may be
// handed over to its claim (sqlHandOver: then the Finish locks no queue
// row). Besides each job's ID and state, it returns whether a queue whose
// slot it gave back was full (or a key whose slot it gave back was at its
// limit: sqlLockKeySlots), and the
// queue and number of the slots handed over (an empty name and 0 if none).
//
// The CTE x locks the rows first, in the order of the arrays (ID order),
// each by its primary key (a LATERAL subquery per outcome: a plan of the
// planner's choosing could read every running row, dead index entries
// included), fenced by state, claim and attempt: a row whose lease was lost is
// left out, and reported by its absence from RETURNING. Then lk locks, in
// name order, the rows of the queues whose slots the attempts hold and of
// the limited queues $11 and $12 name; fs gives back the slots; and kl
// locks the rows of the keys whose slots the attempts hold, in key order:
// queues and then keys, each in order, as claims take them
// (sqlLockKeySlots; TestFinishClaimLocksQueuesInOrder). The UPDATE then
// joins x by ID only; its SET clause reads the row as it was. The attempt
// record is appended to the history as text: earlier records keep their
// bytes. IDs must be distinct within one statement (Finish splits the call
// otherwise). Each row is found by primary key: `state::text` keeps the
// partial index jobs_running out of reach, which a plan made while few jobs
// ran would otherwise walk for every row, filtering by ID (as Heartbeat's
// and the outputs' lookups; TestPlansStaleStatistics).
func finishSQL(handOver bool) string {
	hv, lk, x := ``, ``, `x`
	ret := `'', 0`
	if handOver {
		hv = sqlHandOver + `,
	`
		lk = `NOT EXISTS (SELECT 1 FROM hv) AND `
		x = `(SELECT * FROM x WHERE NOT EXISTS (SELECT 1 FROM hv)) x`
		ret = `coalesce((SELECT name FROM hv), ''), coalesce((SELECT n FROM hv), 0)`
	}
	return `WITH x AS MATERIALIZED (SELECT o.*, l.slot, l.queue, l.key_slot, l.flow_key FROM unnest($1::bigint[], $2::int[], $3::text[],
			$4::timestamptz[], $5::text[], $6::text[], $7::text[], $8::text[], $10::bigint[]) AS o(id, att, st, run, err, res, rec, rec_c, claim)
		CROSS JOIN LATERAL (SELECT j.slot, j.queue, j.key_slot, j.flow_key FROM {schema}.jobs j
			WHERE j.id = o.id AND j.state::text = 'running' AND j.claims = o.claim AND j.attempt = o.att FOR UPDATE) l),
	` + hv + `lk AS MATERIALIZED (SELECT name FROM {schema}.queues WHERE ` + lk + `(name IN (SELECT queue FROM x WHERE slot)
		OR concurrency > 0 AND ($12::boolean OR name = ANY($11::text[]))) ORDER BY name FOR UPDATE),
	` + sqlFreeSlots(x, "lk") + `,
	` + sqlLockKeySlots("x WHERE key_slot", "fs") + `,
	` + sqlFreeKeySlots(x) + `
	UPDATE {schema}.jobs j SET slot = false, key_slot = false,
		state = ` + finishTo + `::{schema}.job_state,
		worker = NULL, lease_until = NULL,
		attempts = ` + sqlAppendAttempts("j.attempts", `(CASE WHEN `+finishTo+` = x.st THEN x.rec ELSE x.rec_c END)`) + `,
		last_error = CASE WHEN ` + finishTo + ` = 'completed' THEN '' WHEN x.err = '' THEN j.last_error ELSE x.err END,
		result = CASE WHEN ` + finishTo + ` = 'completed' THEN NULLIF(x.res, '')::json ELSE j.result END,
		finished_at = CASE WHEN ` + finishTo + ` IN ('completed', 'cancelled', 'dead') THEN $9 ELSE j.finished_at END,
		crashes = CASE WHEN ` + finishTo + ` = 'available' THEN j.crashes ELSE 0 END,
		run_at = CASE WHEN ` + finishTo + ` IN ('retrying', 'scheduled') THEN x.run ELSE j.run_at END,
		attempt = CASE WHEN ` + finishTo + ` IN ('available', 'scheduled') THEN j.attempt - 1 ELSE j.attempt END
	FROM x
	WHERE j.id = x.id AND ` + ran("kl") + `
	RETURNING j.id, j.state::text, (SELECT coalesce(bool_or(was_full), false) FROM fs) OR (SELECT coalesce(bool_or(at_limit), false) FROM kl), ` + ret
}

// The Finish statements: sqlFinish, and sqlFinishHandOver for a
// FinishClaim whose slots may be handed over to its claim (sqlHandOver).
var (
	sqlFinish         = finishSQL(false)
	sqlFinishHandOver = finishSQL(true)
)

// sqlHandOver is the CTE hv of sqlFinishHandOver (decision 109). When
// every slot the attempts give back is of one queue q, limited by
// concurrency alone; no attempt holds a key's slot (key rows are locked
// after queue rows); the claim that follows in the transaction could take
// from no other limited or throttled queue; and that claim asks for no
// more than those slots ($13, its Limit) or q is full (it could not take
// more either): the slots are handed over instead of given back. The
// Finish leaves q's row alone, and the claim gives its jobs in q at most
// that many of the slots and gives back the rest (sqlLimited), so q's
// running never grows by it and the limit holds without the row's lock,
// which a FinishClaim otherwise holds from this statement to its commit
// while every other process's Finish and claim of q waits for it. hv is
// those slots' queue and number, also written to handOverSetting for the
// claim; no row if the slots are given back as before.
const sqlHandOver = `hv AS MATERIALIZED (SELECT q.name, s.n, set_config('` + handOverSetting + `', json_build_object('q', q.name, 'n', s.n)::text, true) AS set
		FROM (SELECT min(queue) AS queue, count(*)::int AS n FROM x WHERE slot HAVING count(DISTINCT queue) = 1) s
		JOIN {schema}.queues q ON q.name = s.queue
		WHERE $13::int > 0 AND NOT EXISTS (SELECT 1 FROM x WHERE key_slot)
			AND q.concurrency > 0 AND NOT q.paused AND q.rate_n = 0 AND q.key_concurrency = 0 AND q.key_rate_n = 0
			AND ($13::int <= s.n OR q.running >= q.concurrency)
			AND NOT EXISTS (SELECT 1 FROM {schema}.queues o WHERE o.name <> q.name AND (o.concurrency > 0 OR o.rate_n > 0)
				AND ($12::boolean OR o.name = ANY($11::text[]))))`

// handOverSetting holds, for the rest of a FinishClaim's transaction, the
// queue and the number of the slots its Finish handed over to its claim
// (sqlHandOver), as JSON; empty otherwise.
const handOverSetting = `hopper.handover`

// sqlFreeSlots is a data-modifying CTE (fs) that gives back the slots of
// the attempts in rows (a CTE with queue and slot, one row per attempt
// leaving running, locked): each queue's running count loses its
// attempts that held a slot, in the statement that ends them. The queue
// rows are locked in name order, as claims lock them. Attempts that hold
// no slot (their queue has no limit) touch no row. It returns, per queue,
// whether the queue was at its limit before (full): only then may ready
// jobs wait for the slots, and a wake-up is worth sending. If after names
// a CTE, fs runs after it (its rows locked first).
func sqlFreeSlots(rows, after string) string {
	cond := ``
	if after != "" {
		cond = ` AND ` + ran(after)
	}
	return `fs AS (UPDATE {schema}.queues q SET running = greatest(q.running - n.n, 0)
		FROM (SELECT queue, count(*)::int AS n FROM ` + rows + ` WHERE slot GROUP BY queue ORDER BY queue) n
		WHERE q.name = n.queue` + cond + `
		RETURNING q.running + n.n >= q.concurrency AS was_full)`
}

// ran is a condition, always true, that reads the whole of the CTE cte:
// the statement (or CTE) it is a condition of runs cte first. Without the
// columns of a row it is a one-time filter, checked before the first row.
func ran(cte string) string { return `(SELECT count(*) FROM ` + cte + `) >= 0` }

// sqlLockKeySlots is a CTE (kl) that locks, in key order, the rows of the
// keys (queue_keys) whose slots the attempts of keys (a FROM item with the
// columns queue and flow_key, one row per attempt that holds a key slot
// and is leaving running) hold, once the CTE after has run (a condition
// that reads it: the queues' rows come first). Its column at_limit says
// whether the key ran at least its queue's limit per key (true if the
// queue has none left): only then may jobs wait for the slots, and a
// wake-up is worth sending (decision 110). Its other columns are each
// row's key and state as locked: the row's latest version, which a claim
// that committed after the statement began may have changed, where the
// statement's other reads see it as it began. A Finish then gives the
// slots back on those rows (sqlFreeKeySlots), a rescue through the
// trigger jobs_key_slot_free (migration 9), on rows the transaction
// already holds. A claim locks its queue's row and then its keys' rows
// in key order (sqlKeyedClaim); a Finish that took them in job order,
// after the first key's row, would deadlock with it, and with another
// Finish (TestFinishLocksKeysInClaimOrder).
func sqlLockKeySlots(keys, after string) string {
	return `kl AS MATERIALIZED (SELECT coalesce(k.running >= nullif(q.key_concurrency, 0), true) AS at_limit,
			k.queue, k.key, k.running, k.paused, k.held_until IS NULL AS unheld
		FROM (SELECT DISTINCT queue, flow_key FROM ` + keys + `) n
		JOIN {schema}.queue_keys k ON k.queue = n.queue AND k.key = n.flow_key
		LEFT JOIN {schema}.queues q ON q.name = k.queue
		WHERE ` + ran(after) + `
		ORDER BY k.queue, k.key FOR UPDATE OF k)`
}

// sqlFreeKeySlots is the CTEs that give back the key slots the attempts
// in rows (a CTE with queue, flow_key and key_slot, one row per attempt
// leaving running, locked) hold, on the key rows sqlLockKeySlots's kl
// locked in key order: kg counts the slots of each key and says whether
// the key is left with nothing to keep (no slot, no pause, no hold); kd
// deletes those keys' rows, ku lowers the others' running. kg decides on
// kl's columns, the rows as locked: decided on the rows as the
// statement's snapshot saw them, a key whose only slot the Finish gave
// back while a claim of the key, committed after the statement began,
// took another would have been left out of both kd and ku — its slot
// lost (TestFinishKeySlotsBesideAClaim). Their own conditions name only
// the row's key, so each reaches the row's latest version. The
// statement's UPDATE clears the jobs' key_slot, which keeps the trigger
// jobs_key_slot_free from giving the slots back a second time (migration
// 21).
func sqlFreeKeySlots(rows string) string {
	return `kg AS MATERIALIZED (SELECT kl.queue, kl.key, n.n, kl.running - n.n <= 0 AND NOT kl.paused AND kl.unheld AS gone
		FROM kl JOIN (SELECT queue, flow_key, count(*)::int AS n FROM ` + rows + ` WHERE key_slot GROUP BY queue, flow_key) n
			ON n.queue = kl.queue AND n.flow_key = kl.key),
	kd AS (DELETE FROM {schema}.queue_keys k USING kg WHERE k.queue = kg.queue AND k.key = kg.key AND kg.gone),
	ku AS (UPDATE {schema}.queue_keys k SET running = k.running - kg.n FROM kg
		WHERE k.queue = kg.queue AND k.key = kg.key AND NOT kg.gone)`
}

// sqlNestedLoops makes the rest of the transaction join by nested loops
// only: the statements that update a set of rows given by ID (Finish,
// Heartbeat, the write-back of the transitions applied in Go) must look
// each row up by primary key. Left to its estimates, the planner hashes
// the set and scans the whole table instead once the set is a few hundred
// rows and the table under a hundred thousand or so: measured, a Finish
// of 1,000 jobs on a 50,000-job table took 29 ms that way, 8 ms by
// primary key, and the scan grows with the table. set_config(…, true)
// lasts until the end of the transaction (a pgx Batch's implicit one
// included), so nothing leaks into the session; it works behind PgBouncer.
// Sequential scans are turned off too: with statistics that say the table
// is small (a VACUUM when it held 150 jobs, before it grew to thousands in
// seconds, and no ANALYZE since), the planner joined the set to a scan of
// the whole table, materialized, in a nested loop — quadratic: measured,
// a Finish of 100 jobs on 4,500 took 60 ms, 446,504 rows compared, and a
// steady stream of enqueues on PostgreSQL was worked at a third of its
// rate (TestPlansStaleStatistics). And the generic plan is forced
// (planCacheGeneric), and JIT compilation is off: a scan left without an
// alternative (the small queues table read whole, as sqlHandOver's check
// of the other queues does) keeps the cost the disabled sequential scan
// adds, past every JIT threshold, and the Finish was compiled at each
// run: 850 ms a call.
const sqlNestedLoops = `SELECT set_config('enable_hashjoin', 'off', true), set_config('enable_mergejoin', 'off', true),
	set_config('enable_seqscan', 'off', true), set_config('jit', 'off', true), ` + planCacheGeneric

// planCacheGeneric is the setting, for the rest of a transaction, that makes
// its prepared statements run their cached generic plan, made once per
// connection, rather than a plan made at each execution for the values
// at hand. With plan_cache_mode auto, PostgreSQL chose the custom plan at
// every execution of the Finish, the keyed claim's UPDATE and the lock of
// the keyed queues (their arrays' sizes, known to a custom plan, make its
// estimate lower), and planning cost as much as running: measured with
// pg_stat_statements (track_planning) in TestPostgresKeyScale, the Finish
// 0.82 ms planning and 0.82 ms running per call, the keyed claim 0.53 and
// 0.70 (decision 107). The statements it applies to are written for a
// generic plan: the settings beside it rule out the plans that a
// generic plan, costed once, could pick badly (TestPlansStaleStatistics,
// TestPlanKeyBatch explain the generic plans).
const planCacheGeneric = `set_config('plan_cache_mode', 'force_generic_plan', true)`

// finishArrays are the arguments of one sqlFinish statement.
type finishArrays struct {
	ids, claims             []int64
	atts                    []int32
	states, errs, res, recs []string
	recsC                   []string
	runAt                   []pgtype.Timestamptz
	index                   []int // position of each outcome in the call
	hasOutput               bool  // an outcome has an Output: an sqlKeepOutputs statement precedes sqlFinish
}

// sortByID orders the outcomes by job ID: the order sqlFinish locks them
// in.
func (a *finishArrays) sortByID() {
	sort.Sort(a)
}

// Len, Less and Swap implement sort.Interface over all the arrays at once.
func (a *finishArrays) Len() int           { return len(a.ids) }
func (a *finishArrays) Less(i, j int) bool { return a.ids[i] < a.ids[j] }
func (a *finishArrays) Swap(i, j int) {
	a.ids[i], a.ids[j] = a.ids[j], a.ids[i]
	a.atts[i], a.atts[j] = a.atts[j], a.atts[i]
	a.claims[i], a.claims[j] = a.claims[j], a.claims[i]
	a.states[i], a.states[j] = a.states[j], a.states[i]
	a.errs[i], a.errs[j] = a.errs[j], a.errs[i]
	a.res[i], a.res[j] = a.res[j], a.res[i]
	a.recs[i], a.recs[j] = a.recs[j], a.recs[i]
	a.recsC[i], a.recsC[j] = a.recsC[j], a.recsC[i]
	a.runAt[i], a.runAt[j] = a.runAt[j], a.runAt[i]
	a.index[i], a.index[j] = a.index[j], a.index[i]
}

func (a *finishArrays) add(i int, o store.Outcome, rec, recC string) {
	a.ids = append(a.ids, int64(o.ID))
	a.atts = append(a.atts, int32(o.Attempt))
	a.claims = append(a.claims, o.Claim)
	a.states = append(a.states, o.State.String())
	a.runAt = append(a.runAt, ts(o.RunAt))
	a.errs = append(a.errs, o.Error)
	a.res = append(a.res, string(o.Result))
	a.recs = append(a.recs, rec)
	a.recsC = append(a.recsC, recC)
	a.index = append(a.index, i)
}

// Finish implements store.Store: one statement (one round trip) for the
// whole call, unless it names a job twice (then one statement per
// repetition, in the same transaction, applied in the order given). An
// outcome whose target state the state machine forbids fails the whole
// call with a *job.TransitionError, changing nothing. A job that becomes
// available, retrying or scheduled (snoozed) wakes the listening Stores
// (after the commit), and so does a slot given back of a queue that was
// at its limit.
func (s *Store) Finish(ctx context.Context, p store.FinishParams) ([]job.State, error) {
	if err := s.writable(); err != nil {
		return nil, err
	}
	f, err := s.prepareFinish(p)
	if err != nil {
		return nil, err
	}
	if len(p.Outcomes) == 0 {
		return f.reached, nil
	}
	b := &pgx.Batch{}
	f.queue(b)
	br := s.pool.SendBatch(ctx, b)
	defer br.Close()
	if err := f.read(br); err != nil {
		return nil, err
	}
	if err := br.Close(); err != nil {
		return nil, s.translate(err)
	}
	if err := s.holdKeys(ctx, p, f.reached); err != nil {
		return nil, err
	}
	f.notify(f.freed)
	return f.reached, nil
}

// sqlClaimAfterFinish is sqlClaimPlan for the claim of a FinishClaim: the
// joins the finish turned off back on, and no asynchronous commit (the
// transaction holds the finish's outcomes, which must be flushed).
const sqlClaimAfterFinish = `SELECT set_config('enable_hashjoin', 'on', true), set_config('enable_mergejoin', 'on', true),
	set_config('enable_bitmapscan', 'off', true), set_config('jit', 'off', true)`

// FinishClaim implements store.FinishClaimer: Finish's statements and then
// Claim's in one batch, one implicit transaction and one round trip, so
// that the claim takes the slots the outcomes gave back. The other
// processes are woken for a freed slot only if the claim left its limited
// queues with room (ClaimResult.Held false): otherwise it took them all.
//
// What Finish and Claim do after their transaction, FinishClaim does after
// this one, in the same order: the holds of the outcomes' keys
// (Outcome.HoldKeyUntil, holdKeys), and then the claim of the keyed queues
// (claimKeyed), which thus sees the slots of the keys the outcomes gave
// back and the holds they set, the key limits exact by the queue's row
// lock. Once the batch has committed, FinishClaim hands over every job it
// claimed: a hold that fails then is lost, as in a crash between the two
// (an error only if the claim took nothing, as Finish's), and a keyed step
// that fails leaves the keyed queues to the next claim (Wake is signalled;
// Claim reports its error).
func (s *Store) FinishClaim(ctx context.Context, fp store.FinishParams, cp store.ClaimParams) ([]job.State, store.ClaimResult, error) {
	if err := s.writable(); err != nil {
		return nil, store.ClaimResult{}, err
	}
	f, err := s.prepareFinish(fp)
	if err != nil {
		return nil, store.ClaimResult{}, err
	}
	holds := slices.ContainsFunc(fp.Outcomes, func(o store.Outcome) bool { return !o.HoldKeyUntil.IsZero() })
	c := s.newClaim(cp, !holds) // holdKeys runs between the transactions
	if cp.Limit > 0 {
		f.lockQueues, f.lockAll = c.queues, len(c.queues) == 0
	}
	if c.claiming && len(f.rounds) == 1 {
		// The claim statement gives back what it does not take.
		f.handOver, c.handOver = int32(min(cp.Limit, 1<<31-1)), true
	}
	fail := func(err error) ([]job.State, store.ClaimResult, error) {
		c.failed()
		return nil, store.ClaimResult{}, err
	}
	b := &pgx.Batch{}
	c.begin(b)
	if len(fp.Outcomes) > 0 {
		f.queue(b)
	}
	b.Queue(sqlClaimAfterFinish)
	c.queue(b)
	br, err := c.send(ctx, b)
	if err != nil {
		return fail(s.translate(err))
	}
	if len(fp.Outcomes) > 0 {
		if err := f.read(br); err != nil {
			return fail(err)
		}
	}
	if _, err := br.Exec(); err != nil { // the claim's settings
		return fail(s.translate(err))
	}
	res, err := c.read(ctx, br)
	if err == nil {
		err = c.close()
	}
	if err != nil {
		return fail(err)
	}
	if f.handed > 0 && f.handed > countQueue(res.Jobs, f.handedQ) {
		f.freed = true // the claim gave back slots it was handed: wake whoever waits for them
	}
	if err := s.holdKeys(ctx, fp, f.reached); err != nil && len(res.Jobs) == 0 {
		c.release(ctx)
		c.done(res)
		f.notify(f.freed)
		return nil, store.ClaimResult{}, err
	}
	if res, err = c.complete(ctx, res); err != nil {
		s.signal() // claim again: the keyed queues are still to be claimed
	}
	f.notify(f.freed && !res.Held)
	return f.reached, res, nil
}

// countQueue returns how many of jobs are of queue.
func countQueue(jobs []*job.Job, queue string) int {
	n := 0
	for _, j := range jobs {
		if j.Queue == queue {
			n++
		}
	}
	return n
}

// finishCall is one Finish's statements, queued on a batch (queue) and
// read back (read).
type finishCall struct {
	s              *Store
	p              store.FinishParams
	now            pgtype.Timestamptz
	rounds         []*finishArrays // round k holds the k-th outcome of each job
	reached        []job.State
	release, retry bool // an outcome releases (available) or retries or snoozes a job
	freed          bool // an attempt gave back a slot of a queue that was at its limit
	// The limited queues whose rows a FinishClaim's claim locks: those
	// named, or all of them; the Finish locks them first (sqlFinish).
	lockQueues []string
	lockAll    bool
	// handOver is a FinishClaim's claim Limit if its Finish may hand the
	// slots it frees over to it (sqlHandOver), 0 otherwise; handedQ and
	// handed, the queue and the number of slots it handed over.
	handOver int32
	handedQ  string
	handed   int
}

// prepareFinish checks and encodes the outcomes of p.
func (s *Store) prepareFinish(p store.FinishParams) (*finishCall, error) {
	f := &finishCall{s: s, p: p, now: ts(p.Now), reached: make([]job.State, len(p.Outcomes))}
	seen := make(map[job.ID]int, len(p.Outcomes))
	for i, o := range p.Outcomes {
		if err := job.CheckTransition(o.ID, job.StateRunning, o.State); err != nil {
			return nil, err
		}
		rec, err := store.EncodeAttempt(o.Record)
		if err != nil {
			return nil, job.Invalid("record", "job %d: %v", o.ID, err)
		}
		recC := ""
		if o.State != job.StateCompleted && o.State != job.StateCancelled {
			r := o.Record
			r.Outcome = job.StateCancelled.String()
			if recC, err = store.EncodeAttempt(r); err != nil {
				return nil, job.Invalid("record", "job %d: %v", o.ID, err)
			}
		}
		switch o.State {
		case job.StateAvailable: // released: its key is not at hand
			f.release = true
		case job.StateRetrying, job.StateScheduled: // snoozed
			f.retry = true
		}
		k := seen[o.ID]
		seen[o.ID] = k + 1
		if k == len(f.rounds) {
			f.rounds = append(f.rounds, &finishArrays{})
		}
		f.rounds[k].add(i, o, rec, recC)
	}
	for _, r := range f.rounds {
		r.sortByID()
	}
	return f, nil
}

// queue queues the finish's statements on b: per round, the outputs of
// its outcomes (sqlKeepOutputs, if any) and then sqlFinish.
func (f *finishCall) queue(b *pgx.Batch) {
	b.Queue(sqlNestedLoops)
	for _, r := range f.rounds {
		if o := r.outputs(f.p.Outcomes); o != nil {
			b.Queue(f.s.q(sqlKeepOutputs), o.ids, o.atts, o.ok, o.stdout, o.stdoutSize, o.stderr, o.stderrSize,
				o.log, o.logSize, f.now, o.claims)
		}
		args := []any{r.ids, r.atts, r.states, r.runAt, r.errs, r.res, r.recs, r.recsC, f.now, r.claims, f.lockQueues, f.lockAll}
		if f.handOver > 0 {
			b.Queue(f.s.q(sqlFinishHandOver), append(args, f.handOver)...)
		} else {
			b.Queue(f.s.q(sqlFinish), args...)
		}
	}
}

// read reads the finish's results from br into f.reached and f.freed.
func (f *finishCall) read(br pgx.BatchResults) error {
	s := f.s
	if _, err := br.Exec(); err != nil {
		return s.translate(err)
	}
	for _, r := range f.rounds {
		if r.hasOutput { // sqlKeepOutputs
			if _, err := br.Exec(); err != nil {
				return s.translate(err)
			}
		}
		pos := make(map[int64]int, len(r.ids))
		for k, id := range r.ids {
			pos[id] = r.index[k]
		}
		rows, err := br.Query()
		if err != nil {
			return s.translate(err)
		}
		for rows.Next() {
			var (
				id     int64
				name   string
				full   bool
				handed int32
			)
			if err := rows.Scan(&id, &name, &full, &f.handedQ, &handed); err != nil {
				rows.Close()
				return s.translate(err)
			}
			st, err := parseState(name)
			if err != nil {
				rows.Close()
				return err
			}
			f.reached[pos[id]] = st
			f.freed = f.freed || full
			f.handed = int(handed)
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return s.translate(err)
		}
	}
	return nil
}

// notify wakes the listening Stores after the finish committed, for the
// jobs it made available or due later, and for slots (freed: the slots
// given back may start jobs elsewhere).
func (f *finishCall) notify(freed bool) {
	switch {
	case f.release:
		f.s.notify()
	case f.retry, freed: // a wake-up for the new run-at (claims promote them), or for the jobs a limit held
		f.s.notifyKeys(map[string]floorKey{})
	}
}

// rescueBatch caps the jobs one transaction of Rescue moves.
const rescueBatch = 1000

// sqlRescue selects, and locks in ID order, running jobs whose lease
// expired, with their last heart-beat after jobCols, skipping those
// another transaction holds (a worker finishing it right now).
var sqlRescue = `SELECT ` + jobCols + `, heartbeat_at FROM {schema}.jobs
	WHERE state = 'running' AND lease_until < $1
	ORDER BY id LIMIT ` + fmt.Sprint(rescueBatch) + ` FOR UPDATE SKIP LOCKED`

// Rescue implements store.Store: it loads the expired jobs FOR UPDATE,
// applies store.ApplyRescue to each in Go and writes them back in one
// statement, rescueBatch jobs per transaction. It returns the jobs as it
// left them, in ID order per transaction.
func (s *Store) Rescue(ctx context.Context, p store.RescueParams) ([]*job.Job, error) {
	if err := s.writable(); err != nil {
		return nil, err
	}
	now := micro(p.Now)
	var out []*job.Job
	for {
		var moved []*job.Job
		freed := false
		err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
			rows, err := tx.Query(ctx, s.q(sqlRescue), ts(now))
			if err != nil {
				return err
			}
			var jobs []*job.Job
			var beats []time.Time
			for rows.Next() {
				var beat pgtype.Timestamptz
				j, err := scanJob(withBeat{rows, &beat})
				if err != nil {
					rows.Close()
					return err
				}
				jobs, beats = append(jobs, j), append(beats, fromTS(beat))
			}
			rows.Close()
			if err := rows.Err(); err != nil || len(jobs) == 0 {
				return err
			}
			prev := make([]int, len(jobs))
			for i, j := range jobs {
				prev[i] = len(j.Attempts)
				if err := store.ApplyRescue(j, now, beats[i], p.MaxCrashes); err != nil {
					return err
				}
			}
			// The slots first, the queues' and then the keys' rows locked
			// in the order claims lock them: the save's trigger frees
			// the keys' slots on rows already held.
			ids := make([]int64, len(jobs))
			for i, j := range jobs {
				ids[i] = int64(j.ID)
			}
			var slotted int
			var keyFull bool
			if err := tx.QueryRow(ctx, s.q(sqlRescueSlots), ids).Scan(&slotted, &keyFull); err != nil {
				return err
			}
			freed = slotted > 0 || keyFull // a rescue frees the slot
			if err := s.save(ctx, tx, jobs, prev); err != nil {
				return err
			}
			moved = jobs
			return nil
		})
		if err != nil {
			return nil, s.translate(err)
		}
		switch {
		case slices.ContainsFunc(moved, func(j *job.Job) bool { return j.State.Waiting() }):
			s.notifyKeys(keysOf(moved))
		case freed: // slots given back: jobs a limit held may start
			s.notifyKeys(map[string]floorKey{})
		}
		out = append(out, moved...)
		if len(moved) < rescueBatch {
			return out, nil
		}
	}
}

// sqlRescueSlots gives back the slots of their queues that the rescued
// jobs $1 held, and locks the rows of their keys' slots (sqlLockKeySlots),
// before the jobs are saved; it returns how many held a queue's slot, and
// whether one held the slot of a key at its limit.
var sqlRescueSlots = `WITH r AS MATERIALIZED (UPDATE {schema}.jobs SET slot = false WHERE id = ANY($1::bigint[]) AND slot
		RETURNING queue),
	x AS (SELECT queue, true AS slot FROM r),
	` + sqlFreeSlots("x", "") + `,
	` + sqlLockKeySlots(`{schema}.jobs WHERE id = ANY($1::bigint[]) AND key_slot`, "fs") + `
	SELECT (SELECT count(*) FROM r WHERE ` + ran("kl") + `), (SELECT coalesce(bool_or(at_limit), false) FROM kl)`

// withBeat scans a row of jobCols and then heartbeat_at, into beat.
type withBeat struct {
	pgx.Row
	beat *pgtype.Timestamptz
}

func (r withBeat) Scan(dest ...any) error { return r.Row.Scan(append(dest, r.beat)...) }
