package pgstore

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/hopperq/hopper/job"
	"github.com/hopperq/hopper/store"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgtype"
)

// Enqueue inserts rows with one multi-row INSERT … SELECT FROM unnest of one
// array per column, and NOTIFYs once, in one round trip (a pgx Batch runs
// as one implicit transaction). IDs come from the identity sequence in the
// order of the arrays, so the jobs of one call get increasing IDs.
//
// Plain single enqueues (no unique key, no schedule) go through the group
// writer (writer.go), which merges the calls that arrive while one is in
// flight into one such INSERT.

// insertCols are the columns Enqueue sets; the others keep their defaults.
const insertCols = `state, queue, kind, priority, run_at, created_at, max_attempts, timeout_ns,
	unique_key, schedule, fire_time, args, retry, labels, tags, flow_key`

const insertSelect = `INSERT INTO {schema}.jobs (` + insertCols + `)
	SELECT st::{schema}.job_state, q, k, p, r, c, m, t, NULLIF(u, ''), NULLIF(sc, ''), f,
		NULLIF(a, '')::json, NULLIF(re, '')::json, NULLIF(lb, ''),
		CASE WHEN lb <> '' AND lb::json->'tags' IS NOT NULL
			THEN ARRAY(SELECT json_array_elements_text(lb::json->'tags')) END, fk
	FROM unnest($1::text[], $2::text[], $3::text[], $4::bigint[], $5::timestamptz[], $6::timestamptz[],
		$7::int[], $8::bigint[], $9::text[], $10::text[], $11::timestamptz[], $12::text[], $13::text[], $14::text[],
		$15::text[])
		AS v(st, q, k, p, r, c, m, t, u, sc, f, a, re, lb, fk)`

const (
	// sqlInsert inserts plain jobs.
	sqlInsert = insertSelect + ` RETURNING id`
	// sqlInsertKeyed inserts jobs some of which have unique keys; a job
	// whose key is held is skipped (its ID is burnt), which RETURNING
	// tells by the keys it returns. A (schedule, fire time) that exists
	// fails the statement (jobs_fire), as it should.
	sqlInsertKeyed = insertSelect + `
	ON CONFLICT (unique_key) WHERE unique_key IS NOT NULL AND ` + sqlUnfinished + ` DO NOTHING
	RETURNING id, unique_key`
	// sqlHolders finds the jobs holding unique keys.
	sqlHolders = `SELECT id, state::text, unique_key FROM {schema}.jobs
	WHERE unique_key = ANY($1::text[]) AND ` + sqlUnfinished
	sqlNotify = `SELECT pg_notify($1, $2)` // $2: the payload (floor.go)
	// sqlNotifyIDs completes a payload whose keys give the positions of
	// rows in the session's last INSERT of $3 rows with the ID of its first
	// row, on a line of its own: the sequence numbered them in order, and
	// its currval is this session's last number (decodePayload).
	sqlNotifyIDs = `SELECT pg_notify($1, $2 || (currval(pg_get_serial_sequence('{schema}.jobs', 'id')) - $3 + 1)::text)`
)

// rowArrays are the column arrays of sqlInsert, one element per job.
type rowArrays struct {
	state, queue, kind         []string
	priority                   []int64
	runAt, created, fire       []pgtype.Timestamptz
	maxAttempts                []int32
	timeout                    []int64
	unique, schedule, args, rt []string
	labels, key                []string
}

func (a *rowArrays) grow(n int) {
	a.state = slices.Grow(a.state, n)
	a.queue = slices.Grow(a.queue, n)
	a.kind = slices.Grow(a.kind, n)
	a.priority = slices.Grow(a.priority, n)
	a.runAt = slices.Grow(a.runAt, n)
	a.created = slices.Grow(a.created, n)
	a.fire = slices.Grow(a.fire, n)
	a.maxAttempts = slices.Grow(a.maxAttempts, n)
	a.timeout = slices.Grow(a.timeout, n)
	a.unique = slices.Grow(a.unique, n)
	a.schedule = slices.Grow(a.schedule, n)
	a.args = slices.Grow(a.args, n)
	a.rt = slices.Grow(a.rt, n)
	a.labels = slices.Grow(a.labels, n)
	a.key = slices.Grow(a.key, n)
}

// appendRows appends rows i of src (all if idx is nil).
func (a *rowArrays) appendRows(src *rowArrays, idx []int) {
	if idx == nil {
		a.state = append(a.state, src.state...)
		a.queue = append(a.queue, src.queue...)
		a.kind = append(a.kind, src.kind...)
		a.priority = append(a.priority, src.priority...)
		a.runAt = append(a.runAt, src.runAt...)
		a.created = append(a.created, src.created...)
		a.fire = append(a.fire, src.fire...)
		a.maxAttempts = append(a.maxAttempts, src.maxAttempts...)
		a.timeout = append(a.timeout, src.timeout...)
		a.unique = append(a.unique, src.unique...)
		a.schedule = append(a.schedule, src.schedule...)
		a.args = append(a.args, src.args...)
		a.rt = append(a.rt, src.rt...)
		a.labels = append(a.labels, src.labels...)
		a.key = append(a.key, src.key...)
		return
	}
	a.grow(len(idx))
	for _, i := range idx {
		a.state = append(a.state, src.state[i])
		a.queue = append(a.queue, src.queue[i])
		a.kind = append(a.kind, src.kind[i])
		a.priority = append(a.priority, src.priority[i])
		a.runAt = append(a.runAt, src.runAt[i])
		a.created = append(a.created, src.created[i])
		a.fire = append(a.fire, src.fire[i])
		a.maxAttempts = append(a.maxAttempts, src.maxAttempts[i])
		a.timeout = append(a.timeout, src.timeout[i])
		a.unique = append(a.unique, src.unique[i])
		a.schedule = append(a.schedule, src.schedule[i])
		a.args = append(a.args, src.args[i])
		a.rt = append(a.rt, src.rt[i])
		a.labels = append(a.labels, src.labels[i])
		a.key = append(a.key, src.key[i])
	}
}

func (a *rowArrays) len() int { return len(a.state) }

// params are the arguments of sqlInsert.
func (a *rowArrays) params() []any {
	return []any{a.state, a.queue, a.kind, a.priority, a.runAt, a.created, a.maxAttempts, a.timeout,
		a.unique, a.schedule, a.fire, a.args, a.rt, a.labels, a.key}
}

// newRows are the jobs of one Enqueue call, converted for INSERT before
// anything is sent.
type newRows struct {
	jobs   []*job.Job
	states []job.State
	arrays rowArrays
	keyed  bool // some job has a unique key
	plain  bool // no unique key, no schedule: mergeable with other calls
}

// makeRows converts jobs (validated by job.Job.Validate) for INSERT; now
// is the creation time of jobs that lack one.
func makeRows(jobs []*job.Job) (*newRows, error) {
	r := &newRows{jobs: jobs, states: make([]job.State, len(jobs)), plain: len(jobs) > 0}
	r.arrays.grow(len(jobs))
	for i, j := range jobs {
		if err := store.CheckNewJob(j, i, len(jobs)); err != nil {
			return nil, err
		}
		if j.Func != nil {
			return nil, job.ErrNotDurable
		}
		retry, err := store.EncodePolicy(j.Retry)
		if err != nil {
			return nil, fmt.Errorf("job %d of %d (%s): %w", i+1, len(jobs), j.Kind, err)
		}
		labels, err := store.EncodeLabels(j.Meta, j.Tags)
		if err != nil {
			return nil, fmt.Errorf("job %d of %d (%s): %w", i+1, len(jobs), j.Kind, err)
		}
		if j.UniqueKey != "" {
			r.keyed = true
		}
		if j.UniqueKey != "" || j.Schedule != "" {
			r.plain = false
		}
		r.states[i] = j.State
		a := &r.arrays
		a.state = append(a.state, j.State.String())
		a.queue = append(a.queue, j.Queue)
		a.kind = append(a.kind, j.Kind)
		a.priority = append(a.priority, int64(j.Priority))
		a.runAt = append(a.runAt, ts(j.RunAt))
		a.created = append(a.created, ts(j.CreatedAt))
		a.fire = append(a.fire, ts(j.FireTime))
		a.maxAttempts = append(a.maxAttempts, int32(j.MaxAttempts))
		a.timeout = append(a.timeout, int64(j.Timeout))
		a.unique = append(a.unique, j.UniqueKey)
		a.schedule = append(a.schedule, j.Schedule)
		a.args = append(a.args, string(j.Args))
		a.rt = append(a.rt, retry)
		a.labels = append(a.labels, labels)
		a.key = append(a.key, j.Key)
	}
	return r, nil
}

// groupMaxJobs is the largest Enqueue the group writer merges with
// others; larger ones are sent on their own.
const groupMaxJobs = 64

// Enqueue implements store.Store. A job carrying a Func fails the call
// with job.ErrNotDurable, one that job.Job.Validate did not prepare with a
// *job.FieldError, and one whose (Schedule, FireTime) exists with
// job.ErrDuplicate; nothing is inserted then. The jobs are committed, and
// every Store listening on the database woken, when it returns.
func (s *Store) Enqueue(ctx context.Context, p store.EnqueueParams) ([]store.EnqueueResult, error) {
	if err := s.writable(); err != nil {
		return nil, err
	}
	rows, err := makeRows(p.Jobs)
	if err != nil {
		return nil, err
	}
	if len(rows.jobs) == 0 {
		return []store.EnqueueResult{}, nil
	}
	if rows.plain && len(rows.jobs) <= groupMaxJobs {
		return s.w.submit(ctx, rows)
	}
	var res []store.EnqueueResult
	if debounced(rows.jobs) {
		var keys map[string]floorKey
		err = pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) (err error) {
			res, keys, err = s.enqueueEach(ctx, tx, rows, false)
			return err
		})
		if err != nil {
			return nil, s.translate(err)
		}
		s.announce(keys) // the caller wakes its own engine
		return res, nil
	}
	if rows.keyed {
		// An explicit transaction: if a key's holder finishes between the
		// INSERT and the look-up of holders, the job is inserted in a
		// second round, which must commit with the first.
		err = pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) (err error) {
			res, err = s.insert(ctx, tx, rows, notifyNone)
			return err
		})
		if err == nil {
			s.announce(lowestKeys(rows.jobs, rows.states, insertedID(res))) // the caller wakes its own engine
		}
	} else {
		res, err = s.insert(ctx, poolSender{s}, rows, notifyAfterCommit)
	}
	if err != nil {
		return nil, s.translate(err)
	}
	return res, nil
}

// EnqueueTx implements store.TxEnqueuer: Enqueue inside tx, a pgx.Tx on
// this Store's database (from any connection or pool), so that the jobs
// exist if and only if tx commits. The notification that wakes the workers
// is sent in tx too, and PostgreSQL delivers it at commit. A tx of another
// type is an error; a tx on another database (of this server or another)
// is a *job.FieldError on "tx", found by one short query in tx before
// anything is written (database.go). Errors leave tx to the caller (roll
// it back).
func (s *Store) EnqueueTx(ctx context.Context, tx any, p store.EnqueueParams) ([]store.EnqueueResult, error) {
	if err := s.writable(); err != nil {
		return nil, err
	}
	t, ok := tx.(pgx.Tx)
	if !ok {
		return nil, fmt.Errorf("pgstore: EnqueueTx: tx is a %T, want a pgx.Tx (from pgx.Conn.Begin or pgxpool.Pool.Begin): %w", tx, errors.ErrUnsupported)
	}
	rows, err := makeRows(p.Jobs)
	if err != nil {
		return nil, err
	}
	if len(rows.jobs) == 0 {
		return []store.EnqueueResult{}, nil
	}
	if err := s.sameDatabase(ctx, t); err != nil {
		return nil, err
	}
	var res []store.EnqueueResult
	if debounced(rows.jobs) {
		res, _, err = s.enqueueEach(ctx, t, rows, true)
	} else {
		res, err = s.insert(ctx, t, rows, notifyInTx)
	}
	if err != nil {
		return nil, s.translate(err)
	}
	return res, nil
}

// batchSender sends a batch: the pool (an implicit transaction per batch)
// or a transaction.
type batchSender interface {
	SendBatch(ctx context.Context, b *pgx.Batch) pgx.BatchResults
}

type poolSender struct{ s *Store }

func (p poolSender) SendBatch(ctx context.Context, b *pgx.Batch) pgx.BatchResults {
	return p.s.pool.SendBatch(ctx, b)
}

// notifyMode says how an insert wakes the listening Stores.
type notifyMode int

const (
	// notifyNone: the caller asks the notifier once its transaction has
	// committed.
	notifyNone notifyMode = iota
	// notifyInTx: NOTIFY inside the transaction (EnqueueTx: the
	// application's), delivered if and when it commits.
	notifyInTx
	// notifyAfterCommit: the batch is BEGIN, the INSERT, COMMIT and then
	// NOTIFY in a transaction of its own — one round trip, the
	// notification sent as soon as the rows are committed, and not inside
	// their transaction (see listen.go). For plain rows on the pool only.
	notifyAfterCommit
)

// maxHolderRetries bounds how often insert retries a key whose holder
// finished between the INSERT and the look-up of the holder.
const maxHolderRetries = 10

// insert inserts rows through tx (or the pool, for rows without unique
// keys: one implicit transaction) and returns their results:
// duplicates within the call resolve to the earlier job, and a job whose
// key another unfinished job holds to that job. With notify it also
// NOTIFYs, in the same batch (EnqueueTx: the application's transaction);
// otherwise the caller asks the notifier once the rows are committed.
func (s *Store) insert(ctx context.Context, tx batchSender, rows *newRows, notify notifyMode) ([]store.EnqueueResult, error) {
	res := make([]store.EnqueueResult, len(rows.jobs))
	var (
		idx   []int          // rows to insert, nil for all
		dupOf map[int]int    // index → index of the earlier job of this call with its key
		first map[string]int // unique key → index of its first job in this call
	)
	if rows.keyed {
		idx = make([]int, 0, len(rows.jobs))
		dupOf, first = make(map[int]int), make(map[string]int)
		for i, j := range rows.jobs {
			if k := j.UniqueKey; k != "" {
				if f, ok := first[k]; ok {
					dupOf[i] = f
					continue
				}
				first[k] = i
			}
			idx = append(idx, i)
		}
	}
	for try := 0; ; try++ {
		missing, err := s.insertRound(ctx, tx, rows, idx, res, notify)
		if err != nil {
			return nil, err
		}
		if len(missing) == 0 {
			break
		}
		if try == maxHolderRetries {
			return nil, fmt.Errorf("pgstore: enqueue: unique keys kept changing hands: %w", job.ErrConflict)
		}
		idx = missing // their holders finished meanwhile: insert them again
	}
	for i, f := range dupOf {
		res[i] = store.EnqueueResult{ID: res[f].ID, Duplicate: true, State: res[f].State}
	}
	if notify != notifyNone {
		// This Store's floors and keyless hints, once the jobs are
		// committed (or, in the application's transaction, before its
		// commit: a keyed claim's read between the two sets the hint
		// again, until it expires; keyless.go).
		s.floors.lower(lowestKeys(rows.jobs, rows.states, insertedID(res)))
		s.keyless.clearJobs(rows.jobs)
	}
	return res, nil
}

// insertedID returns the ID of job i of an insert's results res for its
// floor key: 0 for a job that found its unique key held (its result is
// another job's ID).
func insertedID(res []store.EnqueueResult) func(i int) int64 {
	return func(i int) int64 {
		if res[i].Duplicate {
			return 0
		}
		return int64(res[i].ID)
	}
}

// insertRound inserts rows idx (all if nil) in one batch, fills their
// results and returns the rows that were neither inserted nor found held.
func (s *Store) insertRound(ctx context.Context, tx batchSender, rows *newRows, idx []int, res []store.EnqueueResult, notify notifyMode) (missing []int, err error) {
	arrays := &rows.arrays
	jobs, states := rows.jobs, rows.states
	if idx != nil {
		arrays = &rowArrays{}
		arrays.appendRows(&rows.arrays, idx)
		jobs, states = make([]*job.Job, len(idx)), make([]job.State, len(idx))
		for k, i := range idx {
			jobs[k], states[k] = rows.jobs[i], rows.states[i]
		}
	}
	// The notification lowers the listening Stores' floors to the jobs
	// inserted (floor.go): their positions here, which the NOTIFY turns
	// into IDs.
	// After the Store's own commit, the payload carries its tag
	// (listen.go); in the application's transaction it does not.
	tag := ""
	if notify == notifyAfterCommit {
		tag = s.selfPrefix()
	}
	notifySQL, notifyArgs := sqlNotify, []any{s.channel, tag}
	if notify != notifyNone { // (otherwise the caller notifies)
		if payload := encodePayload(lowestKeys(jobs, states, func(i int) int64 { return int64(i) })); payload != "" {
			notifySQL, notifyArgs = s.q(sqlNotifyIDs), []any{s.channel, tag + payload + "\n", int64(len(jobs))}
		}
	}
	b := &pgx.Batch{}
	if notify == notifyAfterCommit {
		b.Queue("BEGIN")
	}
	var keys []string
	if rows.keyed {
		b.Queue(s.q(sqlInsertKeyed), arrays.params()...)
		for _, i := range idx {
			if k := rows.jobs[i].UniqueKey; k != "" {
				keys = append(keys, k)
			}
		}
		b.Queue(s.q(sqlHolders), keys)
	} else {
		b.Queue(s.q(sqlInsert), arrays.params()...)
	}
	switch notify {
	case notifyInTx:
		b.Queue(notifySQL, notifyArgs...)
	case notifyAfterCommit:
		b.Queue("COMMIT")
		b.Queue(notifySQL, notifyArgs...)
	}
	br := tx.SendBatch(ctx, b)
	defer br.Close()
	s.insertStmts.Add(1)
	if notify == notifyAfterCommit {
		if _, err := br.Exec(); err != nil { // BEGIN
			return nil, err
		}
	}
	type inserted struct {
		id  int64
		key *string
	}
	var got []inserted
	irows, err := br.Query()
	if err != nil {
		return nil, s.insertErr(err, rows)
	}
	for irows.Next() {
		var r inserted
		if rows.keyed {
			err = irows.Scan(&r.id, &r.key)
		} else {
			err = irows.Scan(&r.id)
		}
		if err != nil {
			irows.Close()
			return nil, err
		}
		got = append(got, r)
	}
	irows.Close()
	if err := irows.Err(); err != nil {
		return nil, s.insertErr(err, rows)
	}
	// The sequence numbered the rows in array order.
	slices.SortFunc(got, func(a, b inserted) int { return cmp.Compare(a.id, b.id) })
	if !rows.keyed {
		if len(got) != arrays.len() {
			return nil, fmt.Errorf("pgstore: enqueue: inserted %d rows of %d", len(got), arrays.len())
		}
		for k, i := range orAll(idx, len(rows.jobs)) {
			res[i] = store.EnqueueResult{ID: job.ID(got[k].id), State: rows.states[i]}
		}
	} else {
		type holder struct {
			id    job.ID
			state job.State
		}
		holders := make(map[string]holder, len(keys))
		hrows, err := br.Query()
		if err != nil {
			return nil, err
		}
		for hrows.Next() {
			var (
				id   int64
				name string
				key  string
			)
			if err := hrows.Scan(&id, &name, &key); err != nil {
				hrows.Close()
				return nil, err
			}
			st, err := parseState(name)
			if err != nil {
				hrows.Close()
				return nil, err
			}
			holders[key] = holder{job.ID(id), st}
		}
		hrows.Close()
		if err := hrows.Err(); err != nil {
			return nil, err
		}
		mine := make(map[string]job.ID, len(got))
		var plainIDs []int64
		for _, g := range got {
			if g.key != nil {
				mine[*g.key] = job.ID(g.id)
			} else {
				plainIDs = append(plainIDs, g.id)
			}
		}
		for _, i := range idx {
			k := rows.jobs[i].UniqueKey
			if k == "" {
				if len(plainIDs) == 0 {
					return nil, fmt.Errorf("pgstore: enqueue: fewer rows inserted than sent")
				}
				res[i] = store.EnqueueResult{ID: job.ID(plainIDs[0]), State: rows.states[i]}
				plainIDs = plainIDs[1:]
				continue
			}
			if id, ok := mine[k]; ok {
				res[i] = store.EnqueueResult{ID: id, State: rows.states[i]}
				continue
			}
			h, ok := holders[k]
			if !ok {
				missing = append(missing, i)
				continue
			}
			res[i] = store.EnqueueResult{ID: h.id, Duplicate: true, State: h.state}
		}
	}
	switch notify {
	case notifyInTx:
		if _, err := br.Exec(); err != nil {
			return nil, err
		}
	case notifyAfterCommit:
		if _, err := br.Exec(); err != nil { // COMMIT
			return nil, err
		}
		br.Exec() //nolint:errcheck // the notification: polling covers its loss
		s.notified()
	}
	return missing, br.Close()
}

// insertErr explains a failed INSERT: a (schedule, fire time) that exists
// is job.ErrDuplicate.
func (s *Store) insertErr(err error, rows *newRows) error {
	err = s.translate(err)
	if errors.Is(err, job.ErrDuplicate) {
		for _, j := range rows.jobs {
			if j.Schedule != "" {
				return fmt.Errorf("pgstore: schedule %q tick %s: %w", j.Schedule, j.FireTime.UTC().Format(time.RFC3339Nano), err)
			}
		}
	}
	return err
}

// orAll returns idx, or 0…n-1 if idx is nil.
func orAll(idx []int, n int) []int {
	if idx != nil {
		return idx
	}
	all := make([]int, n)
	for i := range all {
		all[i] = i
	}
	return all
}
