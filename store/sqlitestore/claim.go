package sqlitestore

import (
	"cmp"
	"context"
	"database/sql"
	"encoding/json"
	"slices"
	"strconv"
	"strings"

	"github.com/hopperq/hopper/job"
	"github.com/hopperq/hopper/store"
)

// The claim path, all index-driven (see plan_test.go). Jobs wait in lanes,
// one per (queue, kind); a claim looks at the lanes that match p.Queues and
// p.Kinds (all lanes if both are empty):
//
//  1. NextRunAt: the first entry of jobs_due (no filter), or the smallest
//     of the first entries of jobs_due_lane in each matching lane with
//     waiting jobs (lane_counts says which). If it is due, promote
//     (store.ApplyPromote: scheduled/retrying jobs due by now become
//     available, in those lanes) and read NextRunAt again. Most claims find
//     nothing due and skip the promotion;
//  2. the matching lanes with available jobs, from lane_counts, but for
//     the lanes of queues the queues table says are paused, each with its
//     queue's free slots if it has a limit (concurrency less its running
//     jobs, which lane_counts counts: no COUNT over the jobs), which cap
//     the lane as QueueLimits do;
//  3. one UPDATE … RETURNING moves to running (store.ApplyClaim) the first
//     Limit available jobs in claim order, merged from the first
//     min(Limit, QueueLimits[queue]) of each lane (a range of jobs_claim per
//     lane, one UNION ALL arm per lane, claimSQL). When a queue with a limit
//     below Limit has several lanes, its lanes together must not exceed the
//     limit: claimCappedSQL numbers each queue's candidates (row_number)
//     and drops those beyond it.
//
// With more than maxClaimArms lanes, 3 reads the candidates of each lane
// with one statement per lane, merges them in Go and claims them by ID.
// The cost is O(lanes × Limit × log n), whatever the number of jobs.

// laneFilter restricts a statement over lane_counts to the lanes of ?1 (a
// JSON array of queues, NULL for any) and ?2 (kinds, NULL for any).
const laneFilter = `(?1 IS NULL OR queue IN (SELECT value FROM json_each(?1)))
	AND (?2 IS NULL OR kind IN (SELECT value FROM json_each(?2)))`

const (
	sqlPromoteAll = `UPDATE jobs SET state = 'available' WHERE state IN ('scheduled', 'retrying') AND run_at <= ?`
	sqlNextRunAll = `SELECT min(run_at) FROM jobs WHERE state IN ('scheduled', 'retrying')`
	// sqlWaitingLanes are the matching lanes with scheduled or retrying jobs.
	sqlWaitingLanes = `SELECT DISTINCT queue, kind FROM lane_counts
		WHERE state IN ('scheduled', 'retrying') AND n > 0 AND ` + laneFilter
	sqlNextRunLanes = `SELECT min((SELECT min(run_at) FROM jobs
		WHERE state IN ('scheduled', 'retrying') AND queue = l.queue AND kind = l.kind))
		FROM (` + sqlWaitingLanes + `) AS l`
	sqlPromoteLanes = `UPDATE jobs SET state = 'available' WHERE id IN (SELECT j.id
		FROM (` + sqlWaitingLanes + `) AS l CROSS JOIN jobs AS j
		WHERE j.state IN ('scheduled', 'retrying') AND j.queue = l.queue AND j.kind = l.kind AND j.run_at <= ?3)`
	// sqlPromotedAll and sqlPromotedLanes count, by state and lane, the
	// jobs that sqlPromoteAll and sqlPromoteLanes (same arguments) are
	// about to promote, for lane_counts: RETURNING would give only the
	// state they reach; and those without a key, for the keyless hints.
	sqlPromotedAll = `SELECT state, queue, kind, count(*), sum(flow_key = '') FROM jobs
		WHERE state IN ('scheduled', 'retrying') AND run_at <= ? GROUP BY state, queue, kind`
	sqlPromotedLanes = `SELECT j.state, j.queue, j.kind, count(*), sum(j.flow_key = '')
		FROM (` + sqlWaitingLanes + `) AS l CROSS JOIN jobs AS j
		WHERE j.state IN ('scheduled', 'retrying') AND j.queue = l.queue AND j.kind = l.kind AND j.run_at <= ?3
		GROUP BY j.state, j.queue, j.kind`
	// sqlReadyLanes are the matching lanes with available jobs, but for
	// those of paused queues (store.QueueControl).
	// The third column is the free slots of the lane's queue if it has a
	// limit (its concurrency less its running jobs, from lane_counts),
	// else NULL.
	sqlReadyLanes = `SELECT l.queue, l.kind, (SELECT q.concurrency - coalesce((SELECT sum(r.n) FROM lane_counts r
			WHERE r.state = 'running' AND r.queue = q.name), 0) FROM queues q WHERE q.name = l.queue AND q.concurrency > 0)
		FROM lane_counts l WHERE l.state = 'available' AND l.n > 0 AND (?1 IS NULL OR l.queue IN (SELECT value FROM json_each(?1)))
		AND (?2 IS NULL OR l.kind IN (SELECT value FROM json_each(?2)))
		AND l.queue NOT IN (SELECT name FROM queues WHERE paused)
		AND l.queue NOT IN (` + sqlKeyedQueues + `)
		ORDER BY l.queue, l.kind`
	sqlCandidates = `SELECT id, priority, run_at FROM jobs WHERE state = 'available' AND queue = ? AND kind = ?
		ORDER BY priority, run_at, id LIMIT +?`
	// sqlClaimSet is store.ApplyClaim: ?1 now, ?2 worker, ?3 lease, ?4 the
	// claiming Store (claimed_by).
	sqlClaimSet = `UPDATE jobs SET state = 'running', attempt = attempt + 1, claims = claims + 1, started_at = ?1, worker = ?2,
		lease_until = ?3, claimed_by = ?4, cancel_requested = 0, terminate_requested = 0`
	sqlClaim = sqlClaimSet + `
		WHERE id IN (SELECT value FROM json_each(?5)) AND state = 'available'
		RETURNING ` + claimedCols
)

// Every LIMIT takes its bound parameter as +?N, not ?N: SQLite (3.47+)
// reads a bare ?N LIMIT's bound value while planning and marks the
// statement to be re-prepared whenever that parameter is bound again, that
// is on every execution (database/sql rebinds all parameters): the claim
// statement was parsed and planned anew on every Claim. The unary plus
// hides the parameter from that check; the plans are the same
// (plan_test.go).

// maxClaimArms caps the lanes claimSQL merges in one statement.
const maxClaimArms = 16

// The claim statements take ?1–?4 as sqlClaimSet, ?5 the total limit, and
// then for each lane (arm) its queue, its kind and its limit; the capped
// form also takes its queue's limit.
const (
	claimFixedArgs  = 5
	claimArmArgs    = 3
	claimCappedArgs = 4
)

// claimSQL[n] claims from n lanes.
var claimSQL = func() (qs [maxClaimArms + 1]string) {
	arm := func(i int) string {
		p := claimFixedArgs + 1 + claimArmArgs*i
		return `SELECT id, priority, run_at FROM jobs WHERE state = 'available' AND queue = ?` + strconv.Itoa(p) +
			` AND kind = ?` + strconv.Itoa(p+1) + ` ORDER BY priority, run_at, id LIMIT +?` + strconv.Itoa(p+2)
	}
	for n := 1; n <= maxClaimArms; n++ {
		qs[n] = sqlClaimSet + `
		WHERE id IN (SELECT id FROM (` + unionArms(n, arm) + `) ORDER BY priority, run_at, id LIMIT +?5)
		AND state = 'available'
		RETURNING ` + claimedCols
	}
	return qs
}()

// claimCappedSQL[n] claims from n lanes, at most the queue's limit from
// the lanes of one queue.
var claimCappedSQL = func() (qs [maxClaimArms + 1]string) {
	arm := func(i int) string {
		p := claimFixedArgs + 1 + claimCappedArgs*i
		q := strconv.Itoa(p)
		return `SELECT id, priority, run_at, ?` + q + ` AS q, ?` + strconv.Itoa(p+3) + ` AS ql FROM jobs
			WHERE state = 'available' AND queue = ?` + q + ` AND kind = ?` + strconv.Itoa(p+1) +
			` ORDER BY priority, run_at, id LIMIT +?` + strconv.Itoa(p+2)
	}
	for n := 1; n <= maxClaimArms; n++ {
		qs[n] = sqlClaimSet + `
		WHERE id IN (SELECT id FROM (SELECT id, priority, run_at, ql,
				row_number() OVER (PARTITION BY q ORDER BY priority, run_at, id) AS rn
				FROM (` + unionArms(n, arm) + `))
			WHERE rn <= ql ORDER BY priority, run_at, id LIMIT +?5)
		AND state = 'available'
		RETURNING ` + claimedCols
	}
	return qs
}()

func unionArms(n int, arm func(i int) string) string {
	if n == 1 {
		return arm(0)
	}
	var u strings.Builder
	for i := range n {
		if i > 0 {
			u.WriteString(" UNION ALL ")
		}
		u.WriteString(`SELECT * FROM (` + arm(i) + `)`)
	}
	return u.String()
}

type candidate struct {
	id, priority, runAt int64
	arm                 int // index of its lane in the claim's lanes
}

func compareCandidates(a, b candidate) int {
	if c := cmp.Compare(a.priority, b.priority); c != 0 {
		return c
	}
	if c := cmp.Compare(a.runAt, b.runAt); c != 0 {
		return c
	}
	return cmp.Compare(a.id, b.id)
}

// lane is one (queue, kind) of a claim, with the most jobs it may give.
type lane struct {
	queue, kind string
	limit       int
}

// filterArgs are the ?1, ?2 of laneFilter: JSON arrays of the queues and
// kinds, or NULL.
func filterArgs(queues, kinds []string) ([]any, error) {
	args := []any{nil, nil}
	for i, list := range [][]string{queues, kinds} {
		if len(list) > 0 {
			b, err := json.Marshal(list)
			if err != nil {
				return nil, err
			}
			args[i] = string(b)
		}
	}
	return args, nil
}

// Claim implements store.Store. It is one write transaction, so no job is
// claimed twice, even by several processes.
func (s *Store) Claim(ctx context.Context, p store.ClaimParams) (store.ClaimResult, error) {
	filter, err := filterArgs(p.Queues, p.Kinds)
	if err != nil {
		return store.ClaimResult{}, err
	}
	var res store.ClaimResult
	err = s.write(ctx, func(w *writer) (err error) {
		res, err = s.claim(w, p, filter)
		return err
	})
	if err != nil {
		return store.ClaimResult{}, err
	}
	return res, nil
}

func (s *Store) claim(w *writer, p store.ClaimParams, filter []any) (store.ClaimResult, error) {
	var res store.ClaimResult
	now := store.UnixNanos(p.Now)
	all := filter[0] == nil && filter[1] == nil
	// 1. When to ask again; promotion if something is due. The statements
	// reading lane_counts (those of a filter) first need the counts of
	// the transaction's changes; after the promotion, lanes it emptied
	// still count waiting jobs there, which only costs nextRunAt a look.
	if !all {
		if err := w.syncCounts(); err != nil {
			return res, err
		}
	}
	next, err := nextRunAt(w, all, filter)
	if err != nil {
		return res, err
	}
	if next != 0 && next <= now {
		if err := promote(w, all, filter, now); err != nil {
			return res, err
		}
		if next, err = nextRunAt(w, all, filter); err != nil {
			return res, err
		}
	}
	res.NextRunAt = store.FromUnixNanos(next)
	if p.Limit <= 0 {
		return res, nil
	}
	// 2. The lanes to claim from, and their limits.
	if err := w.syncCounts(); err != nil {
		return res, err
	}
	lanes, capped, held, err := readyLanes(w, p, filter)
	res.Held = held
	if err != nil {
		return res, err
	}
	gates, lanes, capped, err := throttleLanes(w, p, lanes, capped)
	if err != nil {
		return res, err
	}
	// 3. Claim.
	var jobs []*job.Job
	switch {
	case len(lanes) == 0:
	case len(lanes) <= maxClaimArms:
		jobs, err = w.queryClaimed(p, claimStatement(lanes, capped), s.claimArgs(p, lanes, capped)...)
	default:
		jobs, err = s.claimMerged(w, p, lanes)
	}
	if err != nil {
		return res, err
	}
	// RETURNING has no order: restore the claim order.
	slices.SortFunc(jobs, func(a, b *job.Job) int {
		return compareCandidates(candidate{id: int64(a.ID), priority: int64(a.Priority), runAt: store.UnixNanos(a.RunAt)},
			candidate{id: int64(b.ID), priority: int64(b.Priority), runAt: store.UnixNanos(b.RunAt)})
	})
	// 4. The keyed queues (keys.go), with what is left, keys in turn.
	if len(jobs) < p.Limit {
		keyed, err := s.claimKeyed(w, p, p.Limit-len(jobs), gates)
		res.Held = res.Held || keyed.Held
		if err != nil {
			return res, err
		}
		jobs = append(jobs, keyed.Jobs...)
		res.Dropped = keyed.Dropped
		res.ThrottledUntil = keyed.ThrottledUntil // endThrottle keeps the earlier
	}
	c := counter{d: w.req}
	for _, j := range jobs {
		c.job(job.StateAvailable, job.StateRunning, j.Queue, j.Kind)
	}
	c.flush()
	if len(jobs) > 0 {
		res.Jobs = jobs
	}
	return res, endThrottle(w, p, gates, &res)
}

// queryClaimed runs q, a claim for p (sqlClaimSet, RETURNING
// claimedCols), and reads the jobs it claimed.
func (w *writer) queryClaimed(p store.ClaimParams, q string, args ...any) ([]*job.Job, error) {
	rows, err := w.query(q, args...)
	if err != nil {
		return nil, err
	}
	now, lease := store.UnixNanos(p.Now), store.UnixNanos(p.LeaseUntil)
	return appendRows(nil, rows, func(r scanner) (*job.Job, error) { return scanClaimed(r, now, p.Worker, lease) })
}

// readyLanes returns the lanes of p with available jobs, with their
// limits, sorted by queue, whether a queue's limit is below p.Limit
// while it has several lanes (then the lanes of that queue must be capped
// together), and whether a queue's free slots (its concurrency limit)
// capped a lane (ClaimResult.Held).
func readyLanes(w *writer, p store.ClaimParams, filter []any) (lanes []lane, capped, held bool, err error) {
	rows, err := w.query(sqlReadyLanes, filter...)
	if err != nil {
		return nil, false, false, err
	}
	defer rows.Close()
	for rows.Next() {
		l := lane{limit: p.Limit}
		var free sql.NullInt64 // the queue's free slots, if it has a limit
		if err := rows.Scan(&l.queue, &l.kind, &free); err != nil {
			return nil, false, false, err
		}
		if ql, ok := p.QueueLimits[l.queue]; ok {
			l.limit = min(l.limit, ql)
		}
		if free.Valid && free.Int64 <= int64(l.limit) { // the claim may fill the queue
			l.limit = int(max(free.Int64, 0))
			held = true
		}
		if l.limit > 0 {
			lanes = append(lanes, l)
		}
	}
	if err := rows.Err(); err != nil {
		return nil, false, false, err
	}
	// Sorted by queue: the lanes of a queue are adjacent.
	for i := 1; i < len(lanes); i++ {
		if lanes[i].queue == lanes[i-1].queue && lanes[i].limit < p.Limit {
			capped = true
		}
	}
	return lanes, capped, held, nil
}

func claimStatement(lanes []lane, capped bool) string {
	if capped {
		return claimCappedSQL[len(lanes)]
	}
	return claimSQL[len(lanes)]
}

// claimArgs are the arguments of claimStatement(lanes, capped).
func (s *Store) claimArgs(p store.ClaimParams, lanes []lane, capped bool) []any {
	per := claimArmArgs
	if capped {
		per = claimCappedArgs
	}
	args := make([]any, 0, claimFixedArgs+per*len(lanes))
	args = append(args, store.UnixNanos(p.Now), p.Worker, store.UnixNanos(p.LeaseUntil), s.worker, p.Limit)
	for _, l := range lanes {
		args = append(args, l.queue, l.kind, l.limit)
		if capped {
			args = append(args, l.limit) // a queue's lanes all have its limit
		}
	}
	return args
}

// claimMerged claims from more lanes than claimSQL merges. It reads the
// candidates of each lane, merges them in Go within the queues' limits and
// claims the first Limit by ID.
func (s *Store) claimMerged(w *writer, p store.ClaimParams, lanes []lane) ([]*job.Job, error) {
	var cands []candidate
	for i, l := range lanes {
		rows, err := w.query(sqlCandidates, l.queue, l.kind, l.limit)
		if err != nil {
			return nil, err
		}
		for rows.Next() {
			c := candidate{arm: i}
			if err := rows.Scan(&c.id, &c.priority, &c.runAt); err != nil {
				rows.Close()
				return nil, err
			}
			cands = append(cands, c)
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return nil, err
		}
	}
	slices.SortFunc(cands, compareCandidates)
	taken := make(map[string]int)
	var ids []job.ID
	for _, c := range cands {
		if len(ids) == p.Limit {
			break
		}
		l := lanes[c.arm]
		if taken[l.queue] == l.limit {
			continue
		}
		taken[l.queue]++
		ids = append(ids, job.ID(c.id))
	}
	if len(ids) == 0 {
		return nil, nil
	}
	return w.queryClaimed(p, sqlClaim, store.UnixNanos(p.Now), p.Worker, store.UnixNanos(p.LeaseUntil), s.worker, idList(ids))
}

// promote makes the scheduled and retrying jobs due by now available, in
// the lanes filter selects (in all lanes if all), and counts them; a queue
// with keyless jobs among them loses its keyless hints.
func promote(w *writer, all bool, filter []any, now int64) error {
	count, update, args := sqlPromotedAll, sqlPromoteAll, []any{now}
	if !all {
		count, update, args = sqlPromotedLanes, sqlPromoteLanes, []any{filter[0], filter[1], now}
	}
	rows, err := w.query(count, args...)
	if err != nil {
		return err
	}
	defer rows.Close()
	for rows.Next() {
		var name, queue, kind string
		var n, keyless int64
		if err := rows.Scan(&name, &queue, &kind, &n, &keyless); err != nil {
			return err
		}
		st, err := parseState(name)
		if err != nil {
			return err
		}
		w.req.move(st, job.StateAvailable, queue, kind, n)
		if keyless > 0 {
			w.keylessAvailable(queue)
		}
	}
	if err := rows.Err(); err != nil {
		return err
	}
	_, err = w.exec(update, args...)
	return err
}

// nextRunAt returns the earliest run-at of the scheduled and retrying jobs
// of the lanes filter selects (of all jobs if all), 0 if there is none.
func nextRunAt(w *writer, all bool, filter []any) (int64, error) {
	var next sql.NullInt64 // min() is NULL when no job waits
	var err error
	if all {
		err = w.scanRow(sqlNextRunAll, nil, &next)
	} else {
		err = w.scanRow(sqlNextRunLanes, filter, &next)
	}
	return next.Int64, err
}

// sqlHeartbeat renews, in one statement, the leases of a Heartbeat call
// until ?1, at ?4 (heartbeat_at: where Rescue ends an interrupted
// attempt): ?2 is a JSON array of [id, claim] pairs; only jobs running
// that claim under worker ?3 are renewed.
const sqlHeartbeat = `UPDATE jobs SET lease_until = ?1, heartbeat_at = ?4
	FROM json_each(?2) AS l
	WHERE jobs.id = l.value ->> 0 AND jobs.claims = l.value ->> 1
		AND jobs.state = 'running' AND jobs.worker = ?3
	RETURNING jobs.id, jobs.claims, jobs.cancel_requested, jobs.terminate_requested`

// leaseList renders leases as a JSON array of [id, claim] pairs.
func leaseList(ls []store.Lease) string {
	var b strings.Builder
	b.Grow(len(ls)*12 + 2)
	b.WriteByte('[')
	for i, l := range ls {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteByte('[')
		b.WriteString(strconv.FormatInt(int64(l.ID), 10))
		b.WriteByte(',')
		b.WriteString(strconv.FormatInt(l.Claim, 10))
		b.WriteByte(']')
	}
	b.WriteByte(']')
	return b.String()
}

// Heartbeat implements store.Store.
func (s *Store) Heartbeat(ctx context.Context, p store.HeartbeatParams) (store.HeartbeatResult, error) {
	lease := store.UnixNanos(p.LeaseUntil)
	list := leaseList(p.Jobs)
	var res store.HeartbeatResult
	err := s.write(ctx, func(w *writer) error {
		rows, err := w.query(sqlHeartbeat, lease, list, p.Worker, store.UnixNanos(p.Now))
		if err != nil {
			return err
		}
		defer rows.Close()
		renewed := make(map[store.Lease][2]bool, len(p.Jobs)) // → cancel, terminate requested
		for rows.Next() {
			var l store.Lease
			var c, k bool
			if err := rows.Scan(&l.ID, &l.Claim, &c, &k); err != nil {
				return err
			}
			renewed[l] = [2]bool{c, k}
		}
		if err := rows.Err(); err != nil {
			return err
		}
		// In the order of p.Jobs.
		res = store.HeartbeatResult{}
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
		return nil
	})
	if err != nil {
		return store.HeartbeatResult{}, err
	}
	return res, nil
}
