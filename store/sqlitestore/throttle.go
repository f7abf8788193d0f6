package sqlitestore

import (
	"encoding/json"
	"time"

	"github.com/hopperq/hopper/job"
	"github.com/hopperq/hopper/store"
)

// Throttles (store.Rate, docs/flow-control.md). A claim, in its write
// transaction (which serialises every claim of the file), reads the rates
// and GCRA states of the throttled queues (sqlThrottles: the queues table's
// rows with a rate, a handful at most), caps the lanes of each with the
// starts its state allows (throttleLanes), and after claiming moves each
// state on by the jobs it took and drops the excess of the queues that
// drop it (endThrottle).

// sqlThrottles lists the throttled queues with their state.
const sqlThrottles = `SELECT q.name, q.rate_n, q.rate_period, q.rate_burst, q.rate_drop, coalesce(t.tat, 0)
	FROM queues q LEFT JOIN throttles t ON t.queue = q.name AND t.key = '' WHERE q.rate_n > 0`

// sqlDrop is store.ApplyDrop on the first ?4 available jobs of queue ?3
// of the kinds ?5 (a JSON array) in claim order: ?1 now, ?2 the reason.
const sqlDrop = `UPDATE jobs SET state = 'cancelled', finished_at = ?1, last_error = ?2
	WHERE id IN (SELECT id FROM jobs WHERE state = 'available' AND queue = ?3
		AND kind IN (SELECT value FROM json_each(?5)) ORDER BY priority, run_at, id LIMIT +?4)
	RETURNING ` + jobCols

// gate is a throttled queue of a claim: its state, the jobs the claim
// would take from it but for its rate (want), those its rate allows
// (allow), and the kinds of its lanes in the claim.
type gate struct {
	queue       string
	th          store.Throttle
	want, allow int
	kinds       []string
}

// throttleKeyed caps q, a keyed queue of a claim, with the starts its
// rate allows at now, if it is among gates, and records them in its gate
// (want only while the queue has available jobs, as a lane's). A rate
// with Drop leaves q's room as it is and gives q the split of its walk
// (store.RateSplit) instead.
func throttleKeyed(w *writer, q *keyedQueue, gates []gate, now int64) error {
	for i := range gates {
		g := &gates[i]
		if g.queue != q.name {
			continue
		}
		if g.th.Rate.Drop {
			q.rate, q.split = g.th.Rate, &store.RateSplit{Allowed: g.th.Free(now, q.free)}
			return nil
		}
		g.allow = g.th.Free(now, q.free)
		if g.allow < q.free {
			var ready bool
			if err := w.scanRow(`SELECT EXISTS (SELECT 1 FROM jobs WHERE state = 'available' AND queue = ?)`,
				[]any{q.name}, &ready); err != nil {
				return err
			}
			if ready {
				g.want = q.free
			}
		}
		q.free = g.allow
		return nil
	}
	return nil
}

// setThrottle keeps the throttles row of q's own throttle: present, with
// its state, while q has a rate; deleted once it has none. The rows of
// q's keys go when it has no rate per key.
func (w *writer) setThrottle(q store.QueueState) error {
	if q.KeyRate.Zero() {
		if _, err := w.exec(`DELETE FROM throttles WHERE queue = ? AND key <> ''`, q.Name); err != nil {
			return err
		}
	}
	if q.Rate.Zero() {
		_, err := w.exec(`DELETE FROM throttles WHERE queue = ? AND key = ''`, q.Name)
		return err
	}
	_, err := w.exec(`INSERT INTO throttles (queue, key, tat) VALUES (?, '', 0) ON CONFLICT DO NOTHING`, q.Name)
	return err
}

// throttleLanes caps lanes (readyLanes' answer) with the starts the rate
// of each throttled queue allows at p.Now, and returns the claim's gates,
// the lanes left to claim from and whether they must be capped together
// (claimCappedSQL).
func throttleLanes(w *writer, p store.ClaimParams, lanes []lane, capped bool) ([]gate, []lane, bool, error) {
	rows, err := w.query(sqlThrottles)
	if err != nil {
		return nil, nil, false, err
	}
	defer rows.Close()
	var gates []gate
	for rows.Next() {
		var g gate
		var period int64
		if err := rows.Scan(&g.queue, &g.th.Rate.N, &period, &g.th.Rate.Burst, &g.th.Rate.Drop, &g.th.TAT); err != nil {
			return nil, nil, false, err
		}
		g.th.Rate.Period = time.Duration(period)
		gates = append(gates, g)
	}
	if err := rows.Err(); err != nil || len(gates) == 0 {
		return nil, lanes, capped, err
	}
	now := store.UnixNanos(p.Now)
	kept := lanes[:0:0]
	for i := range gates {
		g := &gates[i]
		for _, l := range lanes {
			if l.queue == g.queue {
				g.want = l.limit // the queue's cap, on each of its lanes
				g.kinds = append(g.kinds, l.kind)
			}
		}
		g.allow = g.th.Free(now, g.want)
	}
	for _, l := range lanes {
		for _, g := range gates {
			if g.queue == l.queue {
				l.limit = min(l.limit, g.allow)
			}
		}
		if l.limit > 0 {
			kept = append(kept, l)
		}
	}
	for i := 1; i < len(kept); i++ {
		if kept[i].queue == kept[i-1].queue && kept[i].limit < p.Limit {
			capped = true
		}
	}
	return gates, kept, capped, nil
}

// endThrottle moves each gate's state on by the jobs res took from its
// queue, drops the excess of the queues that drop it and sets
// res.ThrottledUntil for those that hold it back.
func endThrottle(w *writer, p store.ClaimParams, gates []gate, res *store.ClaimResult) error {
	now := store.UnixNanos(p.Now)
	for _, g := range gates {
		taken := 0
		for _, j := range res.Jobs {
			if j.Queue == g.queue {
				taken++
			}
		}
		th := g.th.Take(now, taken)
		if taken > 0 {
			if _, err := w.exec(`UPDATE throttles SET tat = ? WHERE queue = ? AND key = ''`, th.TAT, g.queue); err != nil {
				return err
			}
		}
		if g.allow >= g.want {
			continue
		}
		if !th.Rate.Drop {
			if th.Next() <= now { // it allows a start: something else holds the jobs
				continue
			}
			if u := store.FromUnixNanos(th.Next()); res.ThrottledUntil.IsZero() || u.Before(res.ThrottledUntil) {
				res.ThrottledUntil = u
			}
			continue
		}
		kinds, err := json.Marshal(g.kinds)
		if err != nil {
			return err
		}
		dropped, err := w.queryJobs(sqlDrop, now, store.DropReason(g.queue, th.Rate), g.queue, g.want-g.allow, string(kinds))
		if err != nil {
			return err
		}
		c := counter{d: w.req}
		for _, j := range dropped {
			c.job(job.StateAvailable, job.StateCancelled, j.Queue, j.Kind)
		}
		c.flush()
		res.Dropped = append(res.Dropped, dropped...)
	}
	return nil
}
