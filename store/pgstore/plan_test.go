package pgstore_test

import (
	"context"
	"fmt"
	"math"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/hopperq/hopper/job"
	"github.com/hopperq/hopper/store"
	"github.com/hopperq/hopper/store/pgstore"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgtype"
)

// TestPlans runs EXPLAIN (ANALYZE) on every statement of the hot paths, on
// a table of 20,000 jobs, most of them finished, analyzed, and fails on a
// sequential scan of the jobs table: each must be an index search, whatever
// the number of jobs. The statements run in a transaction rolled back.
// (The counts of finished jobs may scan: they are most of the table.)
func TestPlans(t *testing.T) {
	t.Parallel()
	s := openStore(t, pgstore.Options{})
	ctx := t.Context()
	c := conn(t)
	// 20,000 jobs: 16,000 completed, 2,000 available, 1,000 running (lease
	// expired), 1,000 scheduled, over 4 queues.
	if _, err := c.Exec(ctx, `INSERT INTO `+s.Schema()+`.jobs (state, queue, kind, priority, run_at, created_at, finished_at,
			lease_until, max_attempts, worker)
		SELECT CASE WHEN i % 10 < 8 THEN 'completed' WHEN i % 10 = 8 THEN 'available'
				WHEN i % 20 = 9 THEN 'running' ELSE 'scheduled' END::`+s.Schema()+`.job_state,
			'q' || (i % 4), 'k', 0, $1::timestamptz + (CASE WHEN i % 20 = 19 THEN interval '1 hour' ELSE interval '0' END),
			$1, CASE WHEN i % 10 < 8 THEN $1::timestamptz END, CASE WHEN i % 20 = 9 THEN $1::timestamptz END, 3,
			CASE WHEN i % 20 = 9 THEN 'w' END
		FROM generate_series(1, 20000) i`, t0); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Exec(ctx, `ANALYZE `+s.Schema()+`.jobs`); err != nil {
		t.Fatal(err)
	}
	st := pgstore.Statements(s)
	ts := func(t time.Time) pgtype.Timestamptz { return pgtype.Timestamptz{Time: t, Valid: true} }
	queues := []string{"q0", "q1"}
	kinds := []string{"k"}
	ids, atts, claims := []int64{1, 2, 3}, []int32{1, 1, 1}, []int64{1, 1, 1}
	strs := []string{"completed", "completed", "completed"}
	empty := []string{"", "", ""}
	times := []pgtype.Timestamptz{{}, {}, {}}
	front := pgtype.Timestamptz{InfinityModifier: pgtype.NegativeInfinity, Valid: true}
	for _, tc := range []struct {
		name string
		args []any
	}{
		{"promote", []any{ts(t0.Add(2 * time.Hour)), queues}},
		{"promote/all", []any{ts(t0.Add(2 * time.Hour))}},
		// Two queues from their fronts; one from a floor.
		{"claim", []any{ts(t0), "w", ts(t0), int32(100), queues, []int32{100, 100},
			[]int64{math.MinInt64, math.MinInt64}, []pgtype.Timestamptz{front, front}, []int64{0, 0}, kinds}},
		{"claim/one", []any{ts(t0), "w", ts(t0), int32(100), queues[:1], []int32{100},
			[]int64{0}, []pgtype.Timestamptz{ts(t0)}, []int64{5000}, kinds}},
		{"claim/all", []any{ts(t0), "w", ts(t0), int32(100), []string{}, []int32{}}},
		{"nextrun", []any{kinds, queues}},
		{"nextrun/all", []any{[]string(nil)}},
		{"finish", []any{ids, atts, strs, times, empty, empty, empty, empty, ts(t0), claims, []string(nil), false}},
		{"heartbeat", []any{ids, claims, "w", ts(t0), ts(t0)}},
		{"rescue", []any{ts(t0.Add(time.Minute))}},
		{"queuecounts", nil},
		// A bulk batch reads its candidates by primary key over its ID
		// range, never a partial index of every matching job of the queue
		// and a sort. Over most of this small table ("wide"), a
		// sequential scan is fair; a partial index is not.
		{"candidates", []any{int64(4000), int64(5000), int64(1000), "q0"}},
		{"deletematching", []any{int64(4000), int64(5000), int64(1000), "q0"}},
		{"candidates/wide", []any{int64(0), int64(16000), int64(1000), "q0"}},
		{"deletematching/wide", []any{int64(0), int64(16000), int64(1000), "q0"}},
		{"cancelids", []any{[]int64{4001, 4005, 4009}, ts(t0)}},
		{"pendingdeaths", []any{int64(256)}},
		{"notedeaths", []any{ids, []pgtype.Timestamptz{ts(t0), ts(t0), ts(t0)}}},
	} {
		name, wide := strings.CutSuffix(tc.name, "/wide")
		plan := explain(t, c, st[name], tc.args)
		if strings.Contains(plan, "Seq Scan on jobs") && !wide {
			t.Errorf("%s: a sequential scan of jobs:\n%s", tc.name, plan)
		}
		if (name == "candidates" || name == "deletematching") && (strings.Contains(plan, "jobs_claim") || strings.Contains(plan, "jobs_finished") ||
			strings.Contains(plan, "Bitmap") || !wide && !strings.Contains(plan, "Index Scan using jobs_pkey on jobs (")) {
			t.Errorf("%s: the candidates are not read by primary key:\n%s", tc.name, plan)
		}
		if name == "pendingdeaths" && !strings.Contains(plan, "jobs_unnoted") {
			t.Errorf("%s: the unnoted deaths are not read through jobs_unnoted:\n%s", tc.name, plan)
		}
		// Stats.OldestAvailable: a seek of jobs_claim per (queue, priority).
		if tc.name == "queuecounts" && !strings.Contains(plan, "Index Cond: (ROW(queue, priority) > ROW(") {
			t.Errorf("%s: the earliest run-at by queue is not a loose index scan of jobs_claim:\n%s", tc.name, plan)
		}
		t.Logf("%s:\n%s", tc.name, plan)
	}
	// The claim claims.
	res, err := s.Claim(ctx, store.ClaimParams{Now: t0, Limit: 10, Worker: "w", LeaseUntil: t0.Add(time.Minute), Kinds: kinds, Queues: queues})
	if err != nil || len(res.Jobs) != 10 {
		t.Errorf("Claim: %d jobs, %v", len(res.Jobs), err)
	}
	_ = job.StateAvailable
}

// explain returns the plan of q with args, executed in a transaction that
// is rolled back.
func explain(t *testing.T, c *pgx.Conn, q string, args []any) string {
	t.Helper()
	ctx := context.Background()
	tx, err := c.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback(ctx)
	rows, err := tx.Query(ctx, "EXPLAIN (ANALYZE, COSTS OFF, BUFFERS) "+q, args...)
	if err != nil {
		t.Fatalf("EXPLAIN %s: %v", q, err)
	}
	lines, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		t.Fatalf("EXPLAIN %s: %v", q, err)
	}
	return strings.Join(lines, "\n")
}

// TestPurgeReadsInOrder: each purge batch must read jobs_finished in order
// and stop at its batch, in a table without column statistics (the Store's
// own vacuum does not ANALYZE). Left to itself the planner reads every
// expired job per batch, a bitmap scan and a sort (on disk at 60,000 jobs),
// which makes a purge quadratic: 11 s of a core for 120,000 jobs
// (BenchmarkSoakSteady). The index's counters tell the plans apart: rows
// fetched by a plain index scan are counted (idx_tup_fetch), rows a bitmap
// scan finds are not.
func TestPurgeReadsInOrder(t *testing.T) {
	t.Parallel()
	const n = 20000
	s, c, db := completedJobs(t, n)
	ctx := t.Context()
	schema := s.Schema()
	if _, err := c.Exec(ctx, `VACUUM `+schema+`.jobs`); err != nil { // sizes, no column statistics
		t.Fatal(err)
	}
	purged, err := s.Purge(ctx, store.PurgeParams{States: []job.State{job.StateCompleted}, Before: t0.Add(time.Hour)})
	if err != nil || purged != n {
		t.Fatalf("Purge: %d jobs, %v; want %d", purged, err, n)
	}
	s.Close()
	read, fetched := indexStats(t, c, db, schema, "jobs_finished")
	t.Logf("purge of %d jobs: %d entries of jobs_finished read, %d rows fetched through it", n, read, fetched)
	if fetched < n {
		t.Errorf("purge of %d jobs fetched %d rows by index scans of jobs_finished: it did not read the index in order (a bitmap scan and a sort per batch)", n, fetched)
	}
}

// TestPurgeStartsAfterLastBatch: with a transaction held open, the index
// entries of the jobs a purge batch deleted stay; each next batch starts
// after them. Purging 20k jobs in batches of 1,000 read 20k entries of
// jobs_finished so; starting each batch at the front read 230k.
func TestPurgeStartsAfterLastBatch(t *testing.T) {
	t.Parallel()
	const n = 20000
	s, c, db := completedJobs(t, n)
	ctx := t.Context()
	if _, err := c.Exec(ctx, `BEGIN ISOLATION LEVEL REPEATABLE READ`); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Exec(ctx, `SELECT txid_current()`); err != nil {
		t.Fatal(err)
	}
	purged, err := s.Purge(ctx, store.PurgeParams{States: []job.State{job.StateCompleted}, Before: t0.Add(time.Hour)})
	if err != nil || purged != n {
		t.Fatalf("Purge: %d jobs, %v; want %d", purged, err, n)
	}
	if _, err := c.Exec(ctx, `COMMIT`); err != nil {
		t.Fatal(err)
	}
	s.Close()
	read, _ := indexStats(t, c, db, s.Schema(), "jobs_finished")
	t.Logf("purge of %d jobs with a transaction open: %d entries of jobs_finished read", n, read)
	if read > 2*n {
		t.Errorf("purge of %d jobs read %d entries of jobs_finished: its batches read the entries of the jobs deleted before them", n, read)
	}
}

// completedJobs opens a Store in a database of its own (a transaction
// open in another test of the same database would keep deleted entries
// visible) with n completed jobs, finished 1 ms apart from t0, and returns
// it, a connection to the database and the database's name.
func completedJobs(t *testing.T, n int) (*pgstore.Store, *pgx.Conn, string) {
	t.Helper()
	dbURL, db := freshDatabase(t)
	s := mustOpenDB(t, dbURL, pgstore.Options{})
	c := connTo(t, dbURL)
	if _, err := c.Exec(t.Context(), `INSERT INTO `+s.Schema()+`.jobs (state, queue, kind, priority, run_at, created_at, finished_at, max_attempts)
		SELECT 'completed', 'q', 'k', 0, $1, $1, $1::timestamptz + i * interval '1 ms', 3
		FROM generate_series(1, $2::int) i`, t0, n); err != nil {
		t.Fatal(err)
	}
	return s, c, db
}

// indexStats returns how many entries of index the scans of database db
// read, and how many rows they fetched, in schema, once every other
// connection to db is gone: a backend reports its counters at most once a
// second, and for good when it exits (close the Stores first).
func indexStats(t *testing.T, c *pgx.Conn, db, schema, index string) (read, fetched int64) {
	t.Helper()
	ctx := t.Context()
	for deadline := time.Now().Add(30 * time.Second); ; {
		var left int
		if err := c.QueryRow(ctx, `SELECT count(*) FROM pg_stat_activity
			WHERE datname = $1 AND pid <> pg_backend_pid()`, db).Scan(&left); err != nil {
			t.Fatal(err)
		}
		if left == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d backends of the Stores still connected", left)
		}
	}
	if _, err := c.Exec(ctx, `SELECT pg_stat_clear_snapshot()`); err != nil {
		t.Fatal(err)
	}
	if err := c.QueryRow(ctx, `SELECT idx_tup_read, idx_tup_fetch FROM pg_stat_user_indexes
		WHERE schemaname = $1 AND indexrelname = $2`, schema, index).Scan(&read, &fetched); err != nil {
		t.Fatal(err)
	}
	return read, fetched
}

// TestPlansStaleStatistics: the statements that update a set of jobs by ID
// (a Finish here) look each up by primary key even with a plan made when
// the table was tiny. PostgreSQL caches a prepared statement's generic
// plan, costed with the table's size when it was made; in a new database
// under a steady stream, made at 150 jobs and kept at thousands, it joined
// the set to a sequential scan of the whole table in a nested loop:
// quadratic, 60 ms for a Finish of 100 jobs on 4,500 (446,504 rows
// compared), and the stream was worked at a third of its rate.
func TestPlansStaleStatistics(t *testing.T) {
	t.Parallel()
	s := openStore(t, pgstore.Options{})
	ctx := t.Context()
	c := conn(t)
	jobs := s.Schema() + `.jobs`
	insert := func(from, to int) {
		t.Helper()
		if _, err := c.Exec(ctx, `INSERT INTO `+jobs+` (state, queue, kind, priority, run_at, created_at, lease_until, max_attempts, worker, attempt)
			SELECT 'running', 'default', 'k', 0, $1, $1, $1, 3, 'w', 1 FROM generate_series($2::int, $3::int) i`, t0, from, to); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := c.Exec(ctx, `ALTER TABLE `+jobs+` SET (autovacuum_enabled = false)`); err != nil {
		t.Fatal(err)
	}
	st := pgstore.Statements(s)
	if _, err := c.Exec(ctx, `PREPARE fin(bigint[], int[], text[], timestamptz[], text[], text[], text[], text[], timestamptz, bigint[], text[], boolean) AS `+st["finish"]); err != nil {
		t.Fatal(err)
	}
	// explain runs fin on ids as the store does: after its settings, with
	// the generic plan (made at the first run, then kept).
	explain := func(ids []int64) string {
		t.Helper()
		n := len(ids)
		atts, strs, empty, times := make([]int32, n), make([]string, n), make([]string, n), make([]pgtype.Timestamptz, n)
		claims := make([]int64, n) // the rows inserted below were never claimed
		for i := range n {
			atts[i], strs[i] = 1, "completed"
		}
		return explainGeneric(t, c, st["nestedloops"], "fin($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12)",
			ids, atts, strs, times, empty, empty, empty, empty, pgtype.Timestamptz{Time: t0, Valid: true}, claims, []string(nil), false)
	}
	insert(1, 150)
	explain([]int64{1, 2, 3}) // the plan is made now, on 150 jobs
	insert(151, 5000)
	ids := make([]int64, 100)
	for i := range ids {
		ids[i] = int64(4000 + i)
	}
	plan := explain(ids)
	if strings.Contains(plan, "Seq Scan on jobs") || strings.Contains(plan, "jobs_running") {
		t.Errorf("a Finish scans the whole jobs table, or every running job, with a plan made when it was small:\n%s", plan)
	}
	t.Logf("finish on 5,000 jobs, planned at 150:\n%s", plan)
	// EXPLAIN reports JIT only with costs. A scan the settings disable but
	// leave without an alternative (the hand-over's read of the queues)
	// costs past every JIT threshold: the Finish was compiled at each run
	// (850 ms).
	n := len(ids)
	atts, strs, empty, times := make([]int32, n), make([]string, n), make([]string, n), make([]pgtype.Timestamptz, n)
	for i := range n {
		atts[i], strs[i] = 1, "completed"
	}
	if _, err := c.Exec(ctx, `PREPARE finh(bigint[], int[], text[], timestamptz[], text[], text[], text[], text[], timestamptz, bigint[], text[], boolean, int) AS `+st["finish/handover"]); err != nil {
		t.Fatal(err)
	}
	withCosts := explainMode(t, c, st["nestedloops"], "force_generic_plan", "ANALYZE",
		"finh($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13)",
		ids, atts, strs, times, empty, empty, empty, empty, pgtype.Timestamptz{Time: t0, Valid: true}, make([]int64, n), []string(nil), true, 10)
	if strings.Contains(withCosts, "JIT:") {
		t.Errorf("a Finish is compiled by JIT:\n%s", withCosts)
	}
}

// staleTable opens a store whose jobs table is never vacuumed nor
// analyzed (its statistics stay those of the first plan), a connection of
// its own, and a function that inserts n available jobs of queue
// "default", over 100 keys if keyed.
func staleTable(t *testing.T, keyed bool) (*pgstore.Store, *pgx.Conn, func(n int)) {
	t.Helper()
	s := openStore(t, pgstore.Options{})
	c := conn(t)
	jobs := s.Schema() + `.jobs`
	if _, err := c.Exec(t.Context(), `ALTER TABLE `+jobs+` SET (autovacuum_enabled = false)`); err != nil {
		t.Fatal(err)
	}
	return s, c, func(n int) {
		t.Helper()
		if _, err := c.Exec(t.Context(), `INSERT INTO `+jobs+` (state, queue, kind, priority, run_at, created_at, max_attempts, flow_key)
			SELECT 'available', 'default', 'k', 0, $1, $1, 3, CASE WHEN $3 THEN 'k' || (i % 100) ELSE '' END
			FROM generate_series(1, $2::int) i`, t0, n, keyed); err != nil {
			t.Fatal(err)
		}
	}
}

// TestClaimPlanStaleStatistics: the claim takes the jobs it picked by
// primary key with a generic plan made when the table was small (its
// UPDATE scanned the whole table: 11 of a claim's 16 ms at 5,000 jobs).
func TestClaimPlanStaleStatistics(t *testing.T) {
	t.Parallel()
	s, c, insert := staleTable(t, false)
	ctx := t.Context()
	st := pgstore.Statements(s)
	if _, err := c.Exec(ctx, `PREPARE cl AS `+st["claim/all"]); err != nil {
		t.Fatal(err)
	}
	explain := func(limit int32) string {
		t.Helper()
		ts := pgtype.Timestamptz{Time: t0, Valid: true}
		return explainGeneric(t, c, st["claimplan"], "cl($1, $2, $3, $4, $5, $6)", ts, "w", ts, limit, []string{}, []int32{})
	}
	insert(150)
	explain(1) // the plan is made now, on 150 jobs
	insert(5000)
	plan := explain(100)
	if strings.Contains(plan, "Seq Scan on jobs") {
		t.Errorf("a claim scans the whole jobs table with a plan made when it was small:\n%s", plan)
	}
	t.Logf("claim on 5,150 jobs, planned at 150:\n%s", plan)
}

// explainGeneric returns EXPLAIN (ANALYZE, COSTS OFF) of EXECUTE call (a
// statement prepared on c) with args, in a transaction rolled back
// afterwards that first runs settings (the statement's own SET LOCALs) and
// forces a generic plan, as a cached prepared statement gets.
func explainGeneric(t *testing.T, c *pgx.Conn, settings, call string, args ...any) string {
	t.Helper()
	return explainMode(t, c, settings, "force_generic_plan", "ANALYZE, COSTS OFF", call, args...)
}

// explainMode returns EXPLAIN (options) of EXECUTE call, as explainGeneric
// does, with plan_cache_mode mode.
func explainMode(t *testing.T, c *pgx.Conn, settings, mode, options, call string, args ...any) string {
	t.Helper()
	ctx := t.Context()
	tx, err := c.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback(ctx)
	if _, err := tx.Exec(ctx, settings); err != nil {
		t.Fatal(err)
	}
	if _, err := tx.Exec(ctx, `SET LOCAL plan_cache_mode = `+mode); err != nil {
		t.Fatal(err)
	}
	rows, err := tx.Query(ctx, "EXPLAIN ("+options+") EXECUTE "+call, append([]any{pgx.QueryExecModeSimpleProtocol}, args...)...)
	if err != nil {
		t.Fatal(err)
	}
	lines, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		t.Fatal(err)
	}
	return strings.Join(lines, "\n")
}

// TestKeyedClaimPlanStaleStatistics: a keyed claim takes the jobs its walk
// picked by primary key with a generic plan made when the table was small.
// Its UPDATE used jobs_claim, the partial index of the available jobs,
// whose last column is the ID: a read of every available job of every
// queue to find a few (1,058 pages and 6.5 ms a claim in
// BenchmarkKeyLimitTax at 20,000 jobs: a fifth of the unlimited rate).
func TestKeyedClaimPlanStaleStatistics(t *testing.T) {
	t.Parallel()
	s, c, insert := staleTable(t, true)
	ctx := t.Context()
	st := pgstore.Statements(s)
	if _, err := c.Exec(ctx, `PREPARE kc(timestamptz, text, timestamptz, bigint[], boolean, int, text, text, bigint, bigint, int) AS `+
		st["keyedclaim"]); err != nil {
		t.Fatal(err)
	}
	explain := func(ids []int64) string {
		t.Helper()
		ts := pgtype.Timestamptz{Time: t0, Valid: true}
		return explainMode(t, c, st["claimplan"], "force_generic_plan", "ANALYZE, COSTS OFF, BUFFERS",
			"kc($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11)", ts, "w", ts, ids, false, 2, "default", "k1", int64(0), int64(0), 0)
	}
	insert(150)
	explain([]int64{1, 2}) // the plan is made now, on 150 jobs
	insert(5000)
	plan := explain([]int64{5001, 5002, 5003, 5004, 5005, 5006, 5007, 5008})
	if strings.Contains(plan, "Seq Scan on jobs") || strings.Contains(plan, "jobs_claim") || !strings.Contains(plan, "jobs_pkey") {
		t.Errorf("a keyed claim reads the available jobs to find those it took, with a plan made when the table was small:\n%s", plan)
	}
	t.Logf("keyed claim of 8 jobs on 5,150, planned at 150:\n%s", plan)
}

// TestRetryDeadPlanStaleStatistics: a RetryDead of given IDs loads them by
// primary key with a generic plan (PostgreSQL's own choice after five
// runs on a connection) made when the table was small. It read them
// through jobs_finished, every dead job's entry filtered by ID (20,148
// rows filtered for 2 at 20,000 dead jobs: a replay from the dashboard
// cost a scan of the dead-letter queue).
func TestRetryDeadPlanStaleStatistics(t *testing.T) {
	t.Parallel()
	s, c, _ := staleTable(t, false)
	ctx := t.Context()
	insert := func(n int) {
		t.Helper()
		if _, err := c.Exec(ctx, `INSERT INTO `+s.Schema()+`.jobs (state, queue, kind, priority, run_at, created_at, max_attempts, finished_at)
			SELECT 'dead', 'default', 'k', 0, $1, $1, 3, $1 FROM generate_series(1, $2::int) i`, t0, n); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := c.Exec(ctx, `PREPARE dead(bigint[]) AS `+pgstore.Statements(s)["deadids"]); err != nil {
		t.Fatal(err)
	}
	explain := func(ids ...int64) string {
		t.Helper()
		return explainGeneric(t, c, pgstore.Statements(s)["nestedloops"], "dead($1)", ids)
	}
	insert(150)
	explain(1, 2) // the plan is made now, on 150 jobs
	insert(5000)
	plan := explain(5001, 5002)
	if strings.Contains(plan, "jobs_finished") || !strings.Contains(plan, "jobs_pkey") {
		t.Errorf("a RetryDead of 2 jobs reads every dead job, with a plan made when the table was small:\n%s", plan)
	}
}

// TestPlanKeyBatch: the read of a keyed claim's walk (a run of keys after
// a cursor, each with its state and first jobs) is a loose index scan of
// jobs_key, in a generic plan as in a custom one, on 100,000 available
// jobs, half of them of one hot key: it reads a few pages per key, never
// the hot key's backlog, nor the queue through jobs_claim, nor every key
// row of the queue (10,000 here) to join them.
func TestPlanKeyBatch(t *testing.T) {
	t.Parallel()
	s := openStore(t, pgstore.Options{})
	ctx := t.Context()
	c := conn(t)
	keyBacklog(t, s, c, 1)
	// The 10,000 keys have a throttle state too.
	if _, err := c.Exec(ctx, `INSERT INTO `+s.Schema()+`.throttles (queue, key, tat)
		SELECT 'q', 'k' || lpad(i::text, 5, '0'), i FROM generate_series(0, 9999) i`); err != nil {
		t.Fatal(err)
	}
	st := pgstore.Statements(s)
	if _, err := c.Exec(ctx, `PREPARE kb(text, text, text, int, int, text[]) AS `+st["keybatch"]); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Exec(ctx, `PREPARE kbu(text, text, text, int, int, text[]) AS `+st["keybatchupto"]); err != nil {
		t.Fatal(err)
	}
	for _, mode := range []string{"force_generic_plan", "force_custom_plan"} {
		// From the front (the hot key first), after a cursor, and the
		// wrapped walk's reads up to a cursor: one before every key (the
		// hot key's backlog lies past it), one past the hot key.
		for _, tc := range []struct {
			after any
			upTo  string
		}{{nil, ""}, {"k00100", ""}, {"", "h"}, {"", "k00005"}} {
			after, stmt := tc.after, "kb($1, $2, $3, $4, $5, $6)"
			if tc.upTo != "" {
				after, stmt = fmt.Sprintf("%v up to %s", tc.after, tc.upTo), "kbu($1, $2, $3, $4, $5, $6)"
			}
			plan := explainMode(t, c, st["claimplan"], mode, "ANALYZE, COSTS OFF, BUFFERS", stmt,
				"q", tc.after, tc.upTo, 8, 4, []string{"k"})
			checkKeyPlan(t, fmt.Sprintf("%s after %v", mode, after), plan, 400)
		}
	}
}

// keyBacklog fills keyed queue q of s with 100,000 available jobs, half
// of them of the key "hot" and the rest of 10,000 keys that each hold a
// slot, and hot with hot slots (none if 0); the jobs table analyzed, the
// keys' tables not, as the Store's own vacuum leaves them (it does not
// ANALYZE).
func keyBacklog(t *testing.T, s *pgstore.Store, c *pgx.Conn, hot int) {
	t.Helper()
	ctx := t.Context()
	jobs := s.Schema() + `.jobs`
	if _, err := c.Exec(ctx, `INSERT INTO `+jobs+` (state, queue, kind, priority, run_at, created_at, max_attempts, flow_key)
		SELECT 'available', 'q', 'k', 0, $1, $1, 3, CASE WHEN i % 2 = 0 THEN 'hot' ELSE 'k' || lpad((i % 10000)::text, 5, '0') END
		FROM generate_series(1, 100000) i`, t0); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Exec(ctx, `INSERT INTO `+s.Schema()+`.queue_keys (queue, key, running, updated_at)
		SELECT 'q', 'k' || lpad(i::text, 5, '0'), 1, $1::timestamptz FROM generate_series(0, 9999) i
		UNION ALL SELECT 'q', 'hot', $2, $1::timestamptz WHERE $2 > 0`, t0, hot); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Exec(ctx, `ANALYZE `+jobs); err != nil {
		t.Fatal(err)
	}
}

// checkKeyPlan fails t unless plan (what) reads its keys through jobs_key,
// neither through jobs_claim, a bitmap or a sequential scan of the jobs,
// nor every key row of the queue, in at most pages pages.
func checkKeyPlan(t *testing.T, what, plan string, pages int) {
	t.Helper()
	if strings.Contains(plan, "Seq Scan on jobs") || strings.Contains(plan, "jobs_claim") || strings.Contains(plan, "Bitmap") ||
		!strings.Contains(plan, "jobs_key") {
		t.Errorf("%s: the keys are not read through jobs_key:\n%s", what, plan)
	}
	if whole := regexp.MustCompile(`Index Cond: \(queue = [^)]*\)\n`); whole.MatchString(plan) {
		t.Errorf("%s: every row of the queue's keys is read:\n%s", what, plan)
	}
	if n := planPages(plan); n > pages {
		t.Errorf("%s: %d pages read for 8 keys:\n%s", what, n, plan)
	}
	t.Logf("%s:\n%s", what, plan)
}

// TestPlanKeyedOf: the list of the keyed queues that every claim reads
// (sqlKeyedOf) finds the keys paused or held through the partial index
// queue_keys_held (migration 20), whatever the number of keys running:
// here 10,000 key rows hold a slot and one key is held, in another queue.
func TestPlanKeyedOf(t *testing.T) {
	t.Parallel()
	s := openStore(t, pgstore.Options{})
	ctx := t.Context()
	c := conn(t)
	if _, err := c.Exec(ctx, `INSERT INTO `+s.Schema()+`.queue_keys (queue, key, running, updated_at)
		SELECT 'q', 'k' || lpad(i::text, 5, '0'), 1, $1 FROM generate_series(0, 9999) i`, t0); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Exec(ctx, `INSERT INTO `+s.Schema()+`.queue_keys (queue, key, running, held_until, updated_at)
		VALUES ('r', 'x', 0, $1, $1)`, t0.Add(time.Hour)); err != nil {
		t.Fatal(err)
	}
	st := pgstore.Statements(s)
	if _, err := c.Exec(ctx, `PREPARE ko(text[]) AS `+st["keyedof"]); err != nil {
		t.Fatal(err)
	}
	for _, mode := range []string{"force_generic_plan", "force_custom_plan"} {
		for _, queues := range [][]string{nil, {"q", "r"}} {
			plan := explainMode(t, c, st["claimplan"], mode, "ANALYZE, COSTS OFF, BUFFERS", "ko($1)", queues)
			if !strings.Contains(plan, "queue_keys_held") || strings.Contains(plan, "Seq Scan on queue_keys") {
				t.Errorf("%s, queues %v: the held keys are not found through queue_keys_held:\n%s", mode, queues, plan)
			}
			if pages := planPages(plan); pages > 10 {
				t.Errorf("%s, queues %v: %d pages read to find one held key:\n%s", mode, queues, pages, plan)
			}
			t.Logf("%s, queues %v:\n%s", mode, queues, plan)
		}
	}
	var got []string
	rows, err := c.Query(ctx, st["keyedof"], nil)
	if err != nil {
		t.Fatal(err)
	}
	if got, err = pgx.CollectRows(rows, pgx.RowTo[string]); err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(got, []string{"r"}) {
		t.Errorf("keyed queues %v, want [r] (the queue with a held key)", got)
	}
}

// planPages returns the shared pages an EXPLAIN (ANALYZE, BUFFERS) plan's
// top node hit or read.
func planPages(plan string) int {
	for _, line := range strings.Split(plan, "\n") {
		_, rest, ok := strings.Cut(line, "Buffers: shared")
		if !ok {
			continue
		}
		n := 0
		for _, f := range strings.Fields(rest) {
			if k, v, ok := strings.Cut(f, "="); ok && (k == "hit" || k == "read") {
				x, _ := strconv.Atoi(strings.TrimSuffix(v, ","))
				n += x
			}
		}
		return n
	}
	return -1
}
