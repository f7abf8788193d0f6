package pgstore

import (
	"context"
	"errors"
	"time"

	"github.com/hopperq/hopper/job"
	"github.com/hopperq/hopper/store"
	"github.com/jackc/pgx/v5"
)

// Throttles (store.Rate, docs/flow-control.md), in the claim statement:
// the CTE th locks the GCRA state rows of the throttled queues the claim
// looks at (throttles, FOR UPDATE in queue order, after the queue rows of
// lq, so that every transaction takes the two tables' locks in one order)
// and qs caps each queue with the starts its state allows at the claim's
// now (sqlAllowed). After the claim, tk moves each state on by the jobs
// the claim took, and d drops the excess of the queues that drop it
// (store.ApplyDrop), returned with the claimed jobs and told apart by
// their state (splitDropped). Concurrent claims of a throttled queue thus
// take its starts one after the other, each reading the state the
// previous one left.

// sqlNowNS is the claim's now ($1) in Unix nanoseconds, at the
// database's precision (microseconds).
const sqlNowNS = `((extract(epoch FROM $1::timestamptz) * 1000000)::bigint * 1000)`

// sqlInterval is store.Rate.Interval of the queues row q.
const sqlInterval = `((q.rate_period + q.rate_n - 1) / q.rate_n)`

// sqlPeriodText is store.FormatPeriod of the queues row q's period.
const sqlPeriodText = `(CASE
	WHEN q.rate_period % 3600000000000 = 0 THEN (q.rate_period / 3600000000000)::text || 'h'
	WHEN q.rate_period % 60000000000 = 0 THEN (q.rate_period / 60000000000)::text || 'm'
	WHEN q.rate_period % 1000000000 = 0 THEN (q.rate_period / 1000000000)::text || 's'
	WHEN q.rate_period % 1000000 = 0 THEN (q.rate_period / 1000000)::text || 'ms'
	WHEN q.rate_period % 1000 = 0 THEN (q.rate_period / 1000)::text || 'us'
	ELSE q.rate_period::text || 'ns' END)`

// sqlThrottles is the CTE th: of the queues names selects, those with a
// rate, each with its state's row locked, its interval, burst and drop,
// the base its next starts count from (the later of its TAT and now) and
// its rate as text (store.Rate.String). With handOver, none after a
// Finish that handed slots over (sqlLimited): the claim takes nothing from
// such queues.
func sqlThrottles(names string, handOver bool) string {
	cond := ``
	if handOver {
		cond = `
			AND NOT EXISTS (SELECT 1 FROM ho)`
	}
	return `th AS MATERIALIZED (SELECT t.queue AS name, q.rate_drop AS dr, q.rate_burst::bigint AS burst,
		` + sqlInterval + ` AS iv, greatest(t.tat, ` + sqlNowNS + `) AS base,
		q.rate_n::text || '/' || ` + sqlPeriodText + ` AS rtext
		FROM {schema}.throttles t JOIN {schema}.queues q ON q.name = t.queue
		WHERE t.key = '' AND q.rate_n > 0 AND t.queue IN (` + names + `) AND (SELECT count(*) FROM lq) >= 0` + cond + `
		ORDER BY t.queue FOR UPDATE OF t)`
}

// sqlAllowed caps want, the jobs a claim would take from a queue, with the
// starts its throttle th allows (store.Throttle.Free); want itself if the
// queue has none.
func sqlAllowed(want string) string {
	return `(CASE WHEN th.name IS NULL THEN ` + want + ` ELSE least(` + want + `,
		greatest((` + sqlNowNS + ` + th.burst * th.iv - th.base) / th.iv, 0)) END)`
}

// sqlThrottleEnd is the CTEs that end a claim's throttling: tk moves each
// state on by the jobs u took (store.Throttle.Take); d drops, from each
// queue that drops its excess, want − allowed of its next available jobs
// after those c took, in claim order, of the claim's kinds (kind). d
// finds them by primary key only (as u does): joined to th instead, the
// planner may read the jobs through an index of the whole queue.
func sqlThrottleEnd(kind string) string {
	return `tk AS (UPDATE {schema}.throttles t SET tat = th.base + n.n * th.iv
		FROM th JOIN (SELECT queue, count(*)::bigint AS n FROM u GROUP BY queue) n ON n.queue = th.name
		WHERE t.queue = th.name AND t.key = ''),
	dq AS (SELECT qs.name, qs.want - qs.lim AS n, qs.fp, qs.ft, qs.fi FROM qs JOIN th ON th.name = qs.name
		WHERE th.dr AND qs.lim < qs.want),
	dc AS MATERIALIZED (SELECT x.id FROM dq CROSS JOIN LATERAL (
		SELECT id FROM {schema}.jobs
		WHERE state = 'available' AND queue = dq.name AND (priority, run_at, id) >= (dq.fp, dq.ft, dq.fi)` + kind + `
			AND id <> ALL(ARRAY(SELECT id FROM c))
		ORDER BY priority, run_at, id LIMIT dq.n FOR UPDATE SKIP LOCKED) x),
	d AS (UPDATE {schema}.jobs j SET state = 'cancelled', finished_at = $1,
		last_error = 'dropped: queue ' || j.queue || ' over its rate ' || (SELECT th.rtext FROM th WHERE th.name = j.queue)
		WHERE j.id = ANY(ARRAY(SELECT id FROM dc))
		RETURNING ` + jobColsOf("j") + `)`
}

// sqlThrottledUntil is ClaimResult.ThrottledUntil: of the throttled queues
// that hold their excess, among $2 (NULL: all), those whose state allows
// no start at $1 (Unix nanoseconds) while they have available jobs, the
// earliest time one allows a start (store.Throttle.Next); NULL if none.
// The available job is looked for per throttled queue (a LATERAL with a
// LIMIT, which the planner keeps a nested loop): as an EXISTS it may be
// made a semi-join that reads every available job of the table.
const sqlThrottledUntil = `SELECT min(t.tat - (greatest(q.rate_burst, 1) - 1)::bigint * ` + sqlInterval + `)
	FROM {schema}.throttles t JOIN {schema}.queues q ON q.name = t.queue
	CROSS JOIN LATERAL (SELECT 1 FROM {schema}.jobs WHERE state = 'available' AND queue = t.queue LIMIT 1) a
	WHERE t.key = '' AND q.rate_n > 0 AND NOT q.rate_drop AND ($2::text[] IS NULL OR t.queue = ANY($2::text[]))
		AND t.tat - (greatest(q.rate_burst, 1) - 1)::bigint * ` + sqlInterval + ` > $1`

// splitDropped parts a claim statement's rows into the jobs it claimed and
// those it dropped (cancelled), keeping their order.
func splitDropped(rows []*job.Job) (claimed, dropped []*job.Job) {
	for _, j := range rows {
		if j.State == job.StateCancelled {
			dropped = append(dropped, j)
		} else {
			claimed = append(claimed, j)
		}
	}
	return claimed, dropped
}

// setThrottle keeps the throttles row of q's own throttle, in SetQueue's
// transaction: present while q has a rate (its state kept across rate
// changes), deleted once it has none. The rows of q's keys go when it has
// no rate per key.
func (s *Store) setThrottle(ctx context.Context, tx pgx.Tx, q store.QueueState) error {
	var err error
	if q.KeyRate.Zero() {
		if _, err = tx.Exec(ctx, s.q(`DELETE FROM {schema}.throttles WHERE queue = $1 AND key <> ''`), q.Name); err != nil {
			return err
		}
	}
	if q.Rate.Zero() {
		_, err = tx.Exec(ctx, s.q(`DELETE FROM {schema}.throttles WHERE queue = $1 AND key = ''`), q.Name)
	} else {
		_, err = tx.Exec(ctx, s.q(`INSERT INTO {schema}.throttles (queue, key, tat) VALUES ($1, '', 0)
			ON CONFLICT DO NOTHING`), q.Name)
	}
	return err
}

// keyedThrottle is the throttle of a keyed queue in claimKeyed: its state
// at the claim's now, and when it next allows a start if it holds jobs
// back (zero otherwise).
type keyedThrottle struct {
	th    store.Throttle
	now   int64
	until time.Time
}

// sqlKeyedThrottle reads the throttle of keyed queue $1, whose row
// claimKeyed locked (queue rows before throttle rows, as in the claim
// statement), locking its throttle row; no row if it has no rate or is
// paused.
const sqlKeyedThrottle = `SELECT q.rate_n, q.rate_period, q.rate_burst, q.rate_drop, t.tat
	FROM {schema}.throttles t JOIN {schema}.queues q ON q.name = t.queue
	WHERE t.queue = $1 AND t.key = '' AND q.rate_n > 0 AND NOT q.paused FOR UPDATE OF t`

// scanKeyedThrottle reads sqlKeyedThrottle's row: nil if none.
func scanKeyedThrottle(row pgx.Row) (*keyedThrottle, error) {
	var k keyedThrottle
	var period int64
	err := row.Scan(&k.th.Rate.N, &period, &k.th.Rate.Burst, &k.th.Rate.Drop, &k.th.TAT)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	k.th.Rate.Period = time.Duration(period)
	return &k, nil
}

// throttleKeyed caps q.free with the starts its throttle k (read by
// sqlKeyedThrottle, its row locked; nil if q has no rate) allows at now,
// in tx, and returns k at now. A rate with Drop leaves q.free as it is and
// gives q the split of its walk (store.RateSplit) instead.
func (s *Store) throttleKeyed(ctx context.Context, tx dbtx, q *keyedQueue, k *keyedThrottle, now time.Time) (*keyedThrottle, error) {
	if k == nil {
		return nil, nil
	}
	k.now = store.UnixNanos(micro(now))
	allow := k.th.Free(k.now, q.free)
	if k.th.Rate.Drop {
		q.rate, q.split = k.th.Rate, &store.RateSplit{Allowed: allow}
		return k, nil
	}
	if allow < q.free {
		var ready bool
		if err := tx.QueryRow(ctx, s.q(`SELECT EXISTS (SELECT 1 FROM {schema}.jobs WHERE state = 'available' AND queue = $1)`),
			q.name).Scan(&ready); err != nil {
			return nil, err
		}
		if next := k.th.Take(k.now, allow).Next(); ready && next > k.now {
			k.until = store.FromUnixNanos(next)
		}
	}
	q.free = allow
	return k, nil
}

// takeKeyed moves the throttle state of the keyed queue name on by the n
// jobs claimKeyed took of it.
func (s *Store) takeKeyed(ctx context.Context, tx dbtx, name string, k *keyedThrottle, n int) error {
	if n == 0 {
		return nil
	}
	k.th = k.th.Take(k.now, n)
	_, err := tx.Exec(ctx, s.q(`UPDATE {schema}.throttles SET tat = $2 WHERE queue = $1 AND key = ''`), name, k.th.TAT)
	return err
}
