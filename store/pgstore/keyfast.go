package pgstore

import (
	"sync"

	"github.com/hopperq/hopper/job"
	"github.com/hopperq/hopper/store"
	"github.com/jackc/pgx/v5"
)

// The keyed claim in one round trip (decision 112). A keyed claim holds
// its queue's row from its first batch to its commit (claimKeyed), and
// every other keyed claim of the queue, in every process, waits for it:
// with the walk in Go (store.KeyWalk) the hold spans a round trip, the
// client's walk and the second batch, and under a steady stream of claims
// the row is held all the time. In the common case the walk's pick is
// plain: when the first run of keys after the queue's cursor holds N keys
// that nothing blocks, each with a job of the claim's kinds, the walk
// picks the first job of each of them (one round; its keys at their limit
// before the last of them hold jobs back). sqlKeyedFast decides that case
// and claims it in one statement, in the first batch, which commits too:
// the row is held for the batch's time on the server and no longer.
//
// The case is a queue with a limit per key and no rate (of its own or per
// key), and a claim of that one keyed queue whose room (N) is known when
// the batch is sent. When the statement finds the walk is not plain it
// claims nothing; the transaction commits what it did (the idle key rows
// it deleted) and the claim goes the walk's way in a transaction of its
// own on the same connection (a round trip more than the walk alone). A
// Store remembers, per queue, whether its last keyed claim could have gone
// in one round trip (keyedFast), and tries only when it could: a queue
// whose backlog is one key at its limit does not pay the extra round trip
// on every claim.

// sqlKeyedFast claims, of keyed queue $1 (its row locked by this
// transaction), the first job of each of the first N keys after its cursor
// that nothing blocks and that have a job of the kinds $5 (NULL: any)
// among the first $3 keys with available jobs after its cursor, if there
// are N of them: N is $2, the claim's room for the queue, less the queue's
// free slots if it has a concurrency limit. It returns nothing when the
// queue is paused, has no limit per key or has a rate, when N is 0 or
// when the keys read hold fewer than N such keys: the walk is not plain.
// Otherwise it claims them as sqlKeyedClaim does ($4 now, $6 worker, $7
// lease), moves the queue's cursor to the last key picked, and returns the
// jobs claimed, in the walk's turn order, each row led by whether keys at
// their limit held jobs back (store.KeyPick.Held): a key at its limit
// before the last key picked, or a key picked with fewer free slots than
// N and at least as many jobs as free slots. The keys are read as
// keyBatchSQL reads them (keyRunCTE, keyJobsArray).
var sqlKeyedFast = `WITH RECURSIVE q AS (SELECT key_cursor AS after, key_concurrency AS lim, concurrency > 0 AS slots,
		CASE WHEN concurrency > 0 THEN least($2::int, greatest(concurrency - running, 0)) ELSE $2::int END AS n
		FROM {schema}.queues WHERE name = $1 AND NOT paused AND key_concurrency > 0 AND key_rate_n = 0 AND rate_n = 0),
	` + keyRunCTE("(SELECT after FROM q)", "", "$3::int") + `,
	r AS (SELECT k.key, k.n AS i, coalesce(qk.running, 0) AS running, coalesce(qk.paused OR qk.held_until > $4, false) AS off,
		` + keyJobsArray("$5", "(SELECT least(n, lim) FROM q)") + ` AS ids
		FROM k LEFT JOIN LATERAL (SELECT running, paused, held_until FROM {schema}.queue_keys
			WHERE queue = $1 AND key = k.key LIMIT 1) qk ON true
		WHERE k.key IS NOT NULL),
	pick AS (SELECT r.key, r.i, r.ids[1] AS id FROM r, q
		WHERE NOT r.off AND r.running < q.lim AND cardinality(r.ids) > 0 ORDER BY r.i LIMIT (SELECT n FROM q)),
	w AS (SELECT q.n > 0 AND (SELECT count(*) FROM pick) = q.n AS plain,
		EXISTS (SELECT 1 FROM r WHERE NOT r.off AND r.running >= q.lim AND r.i < (SELECT max(i) FROM pick))
		OR EXISTS (SELECT 1 FROM r JOIN pick USING (key) WHERE q.lim - r.running < q.n AND cardinality(r.ids) >= q.lim - r.running) AS held,
		(SELECT key FROM pick ORDER BY i DESC LIMIT 1) AS last
		FROM q),
	u AS (UPDATE {schema}.jobs j SET ` + claimSet("$4", "$6", "$7") + `,
		slot = (SELECT slots FROM q), key_slot = true
		WHERE j.id = ANY(ARRAY(SELECT id FROM pick)) AND (SELECT plain FROM w) AND j.state::text = 'available'
		RETURNING ` + jobColsOf("j") + `),
	kc AS (` + takeKeySlots(`SELECT $1, flow_key, count(*)::int, $4 FROM u GROUP BY flow_key ORDER BY flow_key`) + `),
	qc AS (UPDATE {schema}.queues SET key_cursor = (SELECT last FROM w),
		running = running + CASE WHEN concurrency > 0 THEN (SELECT count(*) FROM u)::int ELSE 0 END
		WHERE name = $1 AND EXISTS (SELECT 1 FROM u))
	SELECT (SELECT held FROM w), ` + jobColsOf("u") + ` FROM u JOIN pick ON pick.id = u.id ORDER BY pick.i`

// queueKeyedFast queues on b sqlKeyedFast for a claim of at most n jobs
// of keyed queue name for p, of the kinds (nil: any).
func (s *Store) queueKeyedFast(b *pgx.Batch, p store.ClaimParams, name string, n int, kinds []string) {
	b.Queue(s.q(sqlKeyedFast), name, n, keyBatchSize(n), ts(p.Now), kinds, p.Worker, ts(p.LeaseUntil))
}

// scanKeyedFast reads sqlKeyedFast's rows: the jobs claimed, and whether
// keys at their limit held jobs back.
func scanKeyedFast(rows pgx.Rows) (jobs []*job.Job, held bool, err error) {
	defer rows.Close()
	row := &ledRow{Row: rows, lead: &held}
	for rows.Next() {
		j, err := scanJob(row)
		if err != nil {
			return nil, false, err
		}
		jobs = append(jobs, j)
	}
	return jobs, held, rows.Err()
}

// ledRow is a row whose first column is read into lead and the rest as
// Scan's destinations say (dests: the list, kept from row to row).
type ledRow struct {
	pgx.Row
	lead  any
	dests []any
}

func (r *ledRow) Scan(dest ...any) error {
	r.dests = append(append(r.dests[:0], r.lead), dest...)
	return r.Row.Scan(r.dests...)
}

// plainPick reports whether pick, the walk of the one keyed queue q of a
// claim of n jobs from it, is one sqlKeyedFast would have made: q has a
// limit per key and no rate (throttled: a rate of its own), the walk read
// no run past its first (reads) and picked one job of each of n keys, none
// of them "".
func plainPick(q *keyedQueue, throttled bool, reads *keyReads, n int, pick store.KeyPick) bool {
	if q.limit <= 0 || !q.keyRate.Zero() || throttled || reads.fetched ||
		n <= 0 || len(pick.IDs) != n || len(pick.Drops) > 0 {
		return false
	}
	seen := make(map[string]bool, n)
	for _, key := range pick.Keys {
		if key == "" || seen[key] {
			return false
		}
		seen[key] = true
	}
	return true
}

// keyedFast remembers the keyed queues whose last keyed claim could not
// have gone in one round trip (sqlKeyedFast): plainPick said no, or
// sqlKeyedFast found the walk not plain. A queue it does not know is
// tried.
type keyedFast struct {
	mu   sync.Mutex
	slow map[string]bool
}

// keyedFastMax bounds the queues remembered; past it the Store forgets
// them all (and tries each again).
const keyedFastMax = 1024

// try reports whether a keyed claim of queue alone should try sqlKeyedFast.
func (f *keyedFast) try(queue string) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	return !f.slow[queue]
}

// saw records whether the last keyed claim of queue could have gone in one
// round trip.
func (f *keyedFast) saw(queue string, plain bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	switch {
	case plain:
		delete(f.slow, queue)
	case f.slow[queue]:
	default:
		if f.slow == nil || len(f.slow) >= keyedFastMax {
			f.slow = map[string]bool{}
		}
		f.slow[queue] = true
	}
}
