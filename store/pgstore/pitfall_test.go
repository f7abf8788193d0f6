package pgstore_test

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	mrand "math/rand/v2"
	"net/url"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hopperq/hopper"
	"github.com/hopperq/hopper/internal/pgtest"
	"github.com/hopperq/hopper/job"
	"github.com/hopperq/hopper/store"
	"github.com/hopperq/hopper/store/pgstore"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

// Pitfall tests: the ways a job queue on PostgreSQL is known to go wrong,
// each provoked against the test server — a long transaction holding back
// the xmin horizon, a crowd of single-row inserters (with and without
// LISTEN/NOTIFY), maintenance racing workers and bulk actions for row
// locks, and a fleet of idle workers polling an empty queue. The command is
// in docs/postgres.md ("Pitfalls"), the figures of its runs in
// docs/measurements/postgres-log.md:
//
//	HOPPER_TEST_POSTGRES=postgres://postgres@127.0.0.1:5432/postgres?sslmode=disable \
//	  go test -race -count=1 -run TestPitfall -v ./store/pgstore
//
// Three of them run in a database of their own (freshDatabase), because
// what they measure is database-wide: the xmin horizon VACUUM honours
// (only the backends of the vacuumed table's database hold it back), and
// pg_stat_database's transaction and deadlock counters. The other tests
// of the package, and anything else on the server, would blur them.

// freshDatabase creates a database no other test uses and returns its URL
// and name; the database is dropped (its connections terminated) when the
// test ends. It is created from template0, which nobody can be connected
// to (CREATE DATABASE fails while the template has sessions).
func freshDatabase(t testing.TB) (string, string) {
	t.Helper()
	base := testURL(t)
	var b [6]byte
	rand.Read(b[:])
	name := "hopper_pitfall_" + hex.EncodeToString(b[:])
	dbURL, err := withDatabase(base, name)
	if err != nil {
		t.Fatal(err)
	}
	c := conn(t)
	if _, err := c.Exec(context.Background(), `CREATE DATABASE `+pgx.Identifier{name}.Sanitize()+` TEMPLATE template0`); err != nil {
		var pe *pgconn.PgError
		if errors.As(err, &pe) && pe.Code == "42501" {
			t.Skipf("this test needs a database of its own and the role of %s may not create one: %v", pgtest.EnvURL, err)
		}
		t.Fatalf("create database %s: %v", name, err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		c, err := pgx.Connect(ctx, base)
		if err != nil {
			t.Errorf("drop database %s: %v", name, err)
			return
		}
		defer c.Close(ctx)
		if _, err := c.Exec(ctx, `DROP DATABASE IF EXISTS `+pgx.Identifier{name}.Sanitize()+` WITH (FORCE)`); err != nil {
			t.Errorf("drop database %s: %v", name, err)
		}
	})
	return dbURL, name
}

// withDatabase returns the connection string u (a URL or key=value
// pairs) naming database name instead.
func withDatabase(u, name string) (string, error) {
	if strings.HasPrefix(u, "postgres://") || strings.HasPrefix(u, "postgresql://") {
		p, err := url.Parse(u)
		if err != nil {
			return "", fmt.Errorf("%s: %w", pgtest.EnvURL, err)
		}
		p.Path, p.RawPath = "/"+name, ""
		return p.String(), nil
	}
	return u + " dbname=" + name, nil
}

// pitfallSchema is the schema of the stores opened in a fresh database.
const pitfallSchema = "hopper"

// openDB opens a Store on dbURL (in pitfallSchema unless opts names one),
// closed when the test ends. Unlike openIn it returns its error, so that
// goroutines may call it.
func openDB(t testing.TB, dbURL string, opts pgstore.Options) (*pgstore.Store, error) {
	if opts.Schema == "" {
		opts.Schema = pitfallSchema
	}
	if opts.PoolSize == 0 {
		opts.PoolSize = testPoolSize
	}
	s, err := pgstore.Open(context.Background(), dbURL, opts)
	if err != nil {
		return nil, fmt.Errorf("Open: %w", err)
	}
	t.Cleanup(func() { s.Close() })
	return s, nil
}

func mustOpenDB(t testing.TB, dbURL string, opts pgstore.Options) *pgstore.Store {
	t.Helper()
	s, err := openDB(t, dbURL, opts)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// connTo returns a connection of its own to dbURL, closed when the test
// ends.
func connTo(t testing.TB, dbURL string) *pgx.Conn {
	t.Helper()
	c, err := pgx.Connect(context.Background(), dbURL)
	if err != nil {
		t.Fatalf("connect: %v", err)
	}
	t.Cleanup(func() { c.Close(context.Background()) })
	return c
}

var discardLog = slog.New(slog.DiscardHandler)

// startClient starts a client on cfg, stopped when the test ends (before
// its store closes, the store having been opened first).
func startClient(t testing.TB, cfg hopper.Config) *hopper.Client {
	t.Helper()
	if cfg.Logger == nil {
		cfg.Logger = discardLog
	}
	c, err := hopper.NewClient(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { stopClient(t, c) })
	return c
}

func stopClient(t testing.TB, c *hopper.Client) {
	ctx, cancel := context.WithTimeout(context.Background(), deadline)
	defer cancel()
	if err := c.Stop(ctx); err != nil {
		t.Errorf("Stop: %v", err)
	}
}

// percentiles returns the p50, p99 and maximum of ds (sorted in place).
func percentiles(ds []time.Duration) (p50, p99, top time.Duration) {
	if len(ds) == 0 {
		return 0, 0, 0
	}
	slices.Sort(ds)
	return ds[len(ds)/2], ds[min(len(ds)-1, len(ds)*99/100)], ds[len(ds)-1]
}

// vacuumStats are the figures VACUUM (VERBOSE) reports for a table.
type vacuumStats struct {
	removed, remain, notRemovable int
}

var vacuumTuples = regexp.MustCompile(`tuples: (\d+) removed, (\d+) remain, (\d+) are dead but not yet removable`)

// vacuumVerbose runs VACUUM (VERBOSE) on schema.table in the database of
// dbURL and returns what it says about the table's tuples: how many dead
// ones it removed, and how many are dead but not yet removable — dead to
// every transaction since committed, not to some older snapshot still
// open.
func vacuumVerbose(t *testing.T, dbURL, schema, table string) vacuumStats {
	t.Helper()
	cfg, err := pgx.ParseConfig(dbURL)
	if err != nil {
		t.Fatal(err)
	}
	var (
		mu   sync.Mutex
		msgs []string
	)
	cfg.OnNotice = func(_ *pgconn.PgConn, n *pgconn.Notice) {
		mu.Lock()
		defer mu.Unlock()
		msgs = append(msgs, n.Message)
	}
	ctx := t.Context()
	c, err := pgx.ConnectConfig(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close(context.Background())
	if _, err := c.Exec(ctx, `VACUUM (VERBOSE) `+pgx.Identifier{schema, table}.Sanitize()); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	suffix := fmt.Sprintf(".%s.%s\"", schema, table)
	for _, m := range msgs {
		first, _, _ := strings.Cut(m, "\n")
		if !strings.HasPrefix(first, "finished vacuuming") || !strings.Contains(first, suffix) {
			continue
		}
		if g := vacuumTuples.FindStringSubmatch(m); g != nil {
			var v vacuumStats
			v.removed, _ = strconv.Atoi(g[1])
			v.remain, _ = strconv.Atoi(g[2])
			v.notRemovable, _ = strconv.Atoi(g[3])
			return v
		}
	}
	t.Fatalf("VACUUM (VERBOSE) %s.%s: no tuple counts in its messages %q", schema, table, msgs)
	return vacuumStats{}
}

// TestPitfallLongTransaction: a transaction left open on a side
// connection (REPEATABLE READ, with a transaction ID: `BEGIN ISOLATION
// LEVEL REPEATABLE READ; SELECT txid_current();`, then idle) holds back
// the horizon below which VACUUM may remove dead row versions. Every job
// leaves two (its claim's and its finish's), and the claim index keeps
// entries for all of them that no claim may skip for good. Jobs must keep
// flowing all the same — SKIP LOCKED claims do not wait for the open
// transaction, which locks nothing — and once it ends the dead versions
// must become removable and jobs keep flowing. Progress is asserted by
// counting completions; the claim latencies of each phase are logged.
func TestPitfallLongTransaction(t *testing.T) {
	t.Parallel()
	dbURL, _ := freshDatabase(t)
	ctx := t.Context()
	// No self-vacuum, and no autovacuum of the table (CI's server may run
	// it): the test's own VACUUMs are the only ones.
	s := mustOpenDB(t, dbURL, pgstore.Options{NoVacuum: true})
	if _, err := connTo(t, dbURL).Exec(ctx, `ALTER TABLE hopper.jobs SET (autovacuum_enabled = false)`); err != nil {
		t.Fatal(err)
	}

	var (
		mu        sync.Mutex
		phase     string
		claims    = map[string][]time.Duration{}
		storeErrs []string
	)
	ws := hopper.NewWorkers()
	hopper.RegisterRaw(ws, "flow", func(context.Context, json.RawMessage) (any, error) { return nil, nil }, nil)
	c := startClient(t, hopper.Config{Store: s, Workers: ws, Concurrency: 100,
		OnStoreCall: func(op string, took time.Duration, err error) {
			mu.Lock()
			defer mu.Unlock()
			if op == "claim" {
				claims[phase] = append(claims[phase], took)
			}
			if err != nil && !errors.Is(err, context.Canceled) {
				storeErrs = append(storeErrs, op+": "+err.Error())
			}
		}})
	completed := c.Subscribe(job.EventCompleted)

	// flow enqueues n jobs, 100 per call, and waits for n completions.
	flow := func(name string, n int) {
		t.Helper()
		mu.Lock()
		phase = name
		mu.Unlock()
		errc := make(chan error, 1)
		go func() {
			reqs := make([]hopper.EnqueueRequest, 100)
			for i := range reqs {
				reqs[i] = hopper.EnqueueRequest{Kind: "flow"}
			}
			for k := 0; k < n; k += len(reqs) {
				if _, err := c.EnqueueMany(ctx, reqs[:min(len(reqs), n-k)]); err != nil {
					errc <- err
					return
				}
			}
			errc <- nil
		}()
		fail := time.After(deadline)
		for got := 0; got < n; {
			select {
			case _, ok := <-completed.C:
				if !ok {
					t.Fatalf("%s: the subscription closed", name)
				}
				got++
			case err := <-errc:
				if err != nil {
					t.Fatalf("%s: EnqueueMany: %v", name, err)
				}
				errc = nil
			case <-fail:
				t.Fatalf("%s: %d of %d jobs completed", name, got, n)
			}
		}
	}

	const n = 2000
	flow("before", n)

	side := connTo(t, dbURL)
	tx, err := side.BeginTx(ctx, pgx.TxOptions{IsoLevel: pgx.RepeatableRead})
	if err != nil {
		t.Fatal(err)
	}
	var xid int64
	var seen int
	if err := tx.QueryRow(ctx, `SELECT txid_current(), (SELECT count(*) FROM hopper.jobs)`).Scan(&xid, &seen); err != nil {
		t.Fatal(err)
	}

	flow("held", n) // with the transaction open: claims go on

	var xid2 int64
	var seen2 int
	if err := tx.QueryRow(ctx, `SELECT txid_current(), (SELECT count(*) FROM hopper.jobs)`).Scan(&xid2, &seen2); err != nil {
		t.Fatal(err)
	}
	if xid2 != xid || seen2 != seen {
		t.Fatalf("the side transaction moved on: xid %d → %d, snapshot count %d → %d", xid, xid2, seen, seen2)
	}
	held := vacuumVerbose(t, dbURL, pitfallSchema, "jobs")
	t.Logf("transaction %d open (its snapshot sees %d jobs): VACUUM removed %d dead row versions, %d dead but not yet removable",
		xid, seen, held.removed, held.notRemovable)
	if held.notRemovable < n {
		t.Errorf("with the transaction open, VACUUM left %d dead row versions, want at least %d (one per job of the phase): "+
			"the test did not hold the horizon back", held.notRemovable, n)
	}
	if err := tx.Commit(ctx); err != nil {
		t.Fatal(err)
	}

	flow("after", n) // recovery: jobs keep flowing

	stopClient(t, c) // nothing else runs: only the horizon matters now
	after := vacuumVerbose(t, dbURL, pitfallSchema, "jobs")
	t.Logf("transaction ended: VACUUM removed %d dead row versions (claims prune pages too), %d dead but not yet removable, %d rows remain",
		after.removed, after.notRemovable, after.remain)
	if after.notRemovable != 0 {
		t.Errorf("after the transaction ended, VACUUM could not remove %d dead row versions, want 0", after.notRemovable)
	}
	mu.Lock()
	defer mu.Unlock()
	for _, p := range []string{"before", "held", "after"} {
		p50, p99, mx := percentiles(claims[p])
		t.Logf("claims %-6s (%d jobs): %4d claims, p50 %v, p99 %v, max %v", p, n, len(claims[p]), p50, p99, mx)
	}
	if len(storeErrs) > 0 {
		t.Errorf("store errors: %q", storeErrs)
	}
}

// TestPitfallSingleInserters64: 64 goroutines, each enqueueing one job per
// call, with wake-ups on (LISTEN/NOTIFY) and off (PgBouncer mode, which
// polls): every acknowledged insert exists exactly once, nothing fails —
// no connection slot runs out (the group writer sends them all on one
// connection), no deadlock or serialization failure surfaces — and each
// INSERT sends one notification for all the jobs it carries, not one per
// job, so the notifications stay far below the inserts (counted by a side
// connection LISTENing on the channel).
func TestPitfallSingleInserters64(t *testing.T) {
	t.Parallel()
	testURL(t) // skip here, not in each subtest
	for _, wake := range []bool{true, false} {
		t.Run("wake="+onOff(wake), func(t *testing.T) {
			s := openStore(t, pgstore.Options{PgBouncer: !wake})
			if wake {
				select {
				case <-pgstore.ListenUp(s):
				case <-time.After(deadline):
					t.Fatal("the listener did not LISTEN")
				}
			} else if s.Listening() {
				t.Fatal("a Store in PgBouncer mode LISTENs")
			}
			side := listenSide(t, s.Channel())
			const inserters, each = 64, 40
			jobs := make([][]*job.Job, inserters)
			for g := range jobs {
				jobs[g] = make([]*job.Job, each)
				for i := range each {
					j := &job.Job{Kind: "k", Queue: job.DefaultQueue, MaxAttempts: 3, Args: fmt.Appendf(nil, `{"g":%d,"i":%d}`, g, i)}
					if err := j.Validate(t0); err != nil {
						t.Fatal(err)
					}
					jobs[g][i] = j
				}
			}
			stmts0, notes0 := pgstore.InsertStatements(s), pgstore.Notifications(s)
			acked := make([][]job.ID, inserters)
			errs := make([][]error, inserters)
			start := make(chan struct{})
			var wg sync.WaitGroup
			for g := range inserters {
				wg.Go(func() {
					<-start
					for _, j := range jobs[g] {
						res, err := s.Enqueue(context.Background(), store.EnqueueParams{Now: t0, Jobs: []*job.Job{j}})
						switch {
						case err != nil:
							errs[g] = append(errs[g], err)
						case len(res) != 1 || res[0].Duplicate:
							errs[g] = append(errs[g], fmt.Errorf("Enqueue of one job returned %+v", res))
						default:
							acked[g] = append(acked[g], res[0].ID)
						}
					}
				})
			}
			began := time.Now()
			close(start)
			wg.Wait()
			took := time.Since(began)
			for g := range errs {
				for _, err := range errs[g] {
					t.Errorf("inserter %d: %v (deadlock or serialization failure: %v, no connection slot: %v)",
						g, err, errors.Is(err, job.ErrConflict), errors.Is(err, pgstore.ErrTooManyConnections))
				}
			}
			// Every acknowledged job exists exactly once, with its own
			// args, and nothing else does.
			want := map[job.ID]string{}
			for g := range acked {
				for i, id := range acked[g] {
					if prev, dup := want[id]; dup {
						t.Fatalf("ID %d acknowledged twice (%s and g=%d i=%d)", id, prev, g, i)
					}
					want[id] = fmt.Sprintf("%d/%d", g, i)
				}
			}
			rows, err := conn(t).Query(t.Context(), `SELECT id, coalesce((args->>'g') || '/' || (args->>'i'), '') FROM `+
				pgx.Identifier{s.Schema(), "jobs"}.Sanitize())
			if err != nil {
				t.Fatal(err)
			}
			got := map[job.ID]string{}
			for rows.Next() {
				var id int64
				var gi string
				if err := rows.Scan(&id, &gi); err != nil {
					t.Fatal(err)
				}
				got[job.ID(id)] = gi
			}
			if err := rows.Err(); err != nil {
				t.Fatal(err)
			}
			if len(want) != inserters*each || len(got) != len(want) {
				t.Errorf("%d jobs acknowledged, %d in the table, want %d and %d", len(want), len(got), inserters*each, inserters*each)
			}
			for id, gi := range want {
				if got[id] != gi {
					t.Errorf("job %d: acknowledged for %s, the table has %q", id, gi, got[id])
				}
			}
			stmts := pgstore.InsertStatements(s) - stmts0
			notes := pgstore.Notifications(s) - notes0
			heard := len(notificationsUntilMark(t, side, s.Channel()))
			st := s.Pool().Stat()
			t.Logf("wake=%s: %d inserters × %d jobs in %v (%.0f jobs/s): %d INSERT statements (%.1f jobs each), %d notifications sent, %d heard; "+
				"pool: %d connections of %d, %d acquires waited",
				onOff(wake), inserters, each, took.Round(time.Millisecond), float64(inserters*each)/took.Seconds(), stmts,
				float64(inserters*each)/float64(stmts), notes, heard, st.TotalConns(), st.MaxConns(), st.EmptyAcquireCount())
			if int64(heard) != notes || notes > stmts {
				t.Errorf("%d notifications heard, %d sent, for %d INSERT transactions: want one per transaction", heard, notes, stmts)
			}
			if heard*4 > inserters*each {
				t.Errorf("%d notifications for %d inserts: want far fewer (one per INSERT of a merged group)", heard, inserters*each)
			}
		})
	}
}

func onOff(b bool) string {
	if b {
		return "on"
	}
	return "off"
}

// BenchmarkSingleInserters64: 64 goroutines each enqueue one job per call
// (b.N jobs in all), with wake-ups on (LISTEN/NOTIFY) and off (PgBouncer
// mode: polling, statements without prepared statements).
func BenchmarkSingleInserters64(b *testing.B) {
	for _, wake := range []bool{true, false} {
		b.Run("wake="+onOff(wake), func(b *testing.B) {
			s := openStore(b, pgstore.Options{PgBouncer: !wake})
			js := benchJobs(b, 64)
			stmts0, notes0 := pgstore.InsertStatements(s), pgstore.Notifications(s)
			b.ResetTimer()
			enqueueSingly(b, s, js)
			b.StopTimer()
			stmts := pgstore.InsertStatements(s) - stmts0
			b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "jobs/s")
			b.ReportMetric(float64(b.N)/float64(stmts), "jobs/stmt")
			b.ReportMetric(float64(pgstore.Notifications(s)-notes0)/float64(b.N), "notify/job")
		})
	}
}

// TestPitfallMaintenanceNoDeadlock: the maintenance work — retention
// deleting finished jobs, trimming and deleting from the dead-letter
// queue, rescuing expired leases — runs while completers claim,
// heartbeat and finish batches (in shuffled order) and several goroutines
// retry overlapping, shuffled sets of dead jobs (and all of them), all on
// the same rows, from two Stores (two processes), with explicit times.
// No call may fail, and the server's deadlock counter for the database
// (its own: nothing else runs there) must not move. deadlock_timeout
// (1s by default) is how long a deadlock goes unnoticed: a deadlock
// would show up as an error, and in the counter, after it.
func TestPitfallMaintenanceNoDeadlock(t *testing.T) {
	t.Parallel()
	dbURL, db := freshDatabase(t)
	ctx := t.Context()
	admin := conn(t) // on the test database: reads the fresh one's counters
	deadlocks := func() int64 {
		t.Helper()
		var n int64
		if _, err := admin.Exec(ctx, `SELECT pg_stat_clear_snapshot()`); err != nil {
			t.Fatal(err)
		}
		if err := admin.QueryRow(ctx, `SELECT deadlocks FROM pg_stat_database WHERE datname = $1`, db).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}
	before := deadlocks()
	var stores [2]*pgstore.Store
	for i := range stores {
		stores[i] = mustOpenDB(t, dbURL, pgstore.Options{PoolSize: 6, NoVacuum: true, Worker: "p" + strconv.Itoa(i)})
	}

	at := t0.Add(time.Minute) // the time of every operation but the crashed claims' leases
	// 3,000 jobs, one in three with a unique key; the first two thousand
	// die at once, so the dead-letter queue starts with 2,000 jobs, 700
	// of them sharing their key with another dead job (a unique key
	// binds unfinished jobs only) — the second thousand's keys in the
	// opposite order of their IDs, so that retries of sets of both take
	// the keys in opposite orders.
	const n, keys = 3000, 350
	var ids []job.ID
	for round := range n / 1000 {
		js := make([]*job.Job, 1000)
		for i := range js {
			js[i] = &job.Job{Kind: "k", Queue: job.DefaultQueue, MaxAttempts: 1000}
			if i%3 == 0 && i/3 < keys {
				k := i / 3
				if round == 1 {
					k = keys - 1 - k // in the other order: retries cross
				}
				js[i].UniqueKey = "key-" + strconv.Itoa(k)
			}
			if err := js[i].Validate(t0); err != nil {
				t.Fatal(err)
			}
		}
		ids = append(ids, enqueue(t, stores[0], js...)...)
		if round == n/1000-1 {
			break
		}
		res, err := stores[0].Claim(ctx, store.ClaimParams{Now: at, Limit: 1000, Worker: "setup", LeaseUntil: at.Add(time.Hour)})
		if err != nil || len(res.Jobs) != 1000 {
			t.Fatalf("Claim: %d jobs, %v", len(res.Jobs), err)
		}
		outs := make([]store.Outcome, len(res.Jobs))
		for i, j := range res.Jobs {
			outs[i] = store.Outcome{ID: j.ID, Attempt: j.Attempt, Claim: j.Claims, State: job.StateDead, Error: "boom"}
		}
		if _, err := stores[0].Finish(ctx, store.FinishParams{Now: at, Outcomes: outs}); err != nil {
			t.Fatal(err)
		}
	}

	type opStats struct {
		n, rows   int
		total, mx time.Duration
	}
	var (
		mu   sync.Mutex
		errs []string
		ops  = map[string]*opStats{}
		done atomic.Bool // the completers and the crasher are through
	)
	// record records a call that began at began and reported rows jobs
	// (claimed, moved, deleted).
	record := func(op string, began time.Time, rows int, err error) {
		took := time.Since(began)
		mu.Lock()
		defer mu.Unlock()
		o := ops[op]
		if o == nil {
			o = &opStats{}
			ops[op] = o
		}
		o.n++
		o.rows += rows
		o.total += took
		o.mx = max(o.mx, took)
		if err != nil {
			errs = append(errs, op+": "+err.Error())
		}
	}
	// loop runs f until the completers are done, at least 3 times.
	loop := func(f func(i int)) {
		for i := 0; i < 3 || !done.Load(); i++ {
			if ctx.Err() != nil {
				return
			}
			f(i)
		}
	}
	var workers, others sync.WaitGroup
	// Completers: claim, renew the leases, finish in shuffled order —
	// completed, dead, retrying (due at once) or released.
	for w := range 3 {
		workers.Go(func() {
			s := stores[w%2]
			worker := fmt.Sprintf("completer-%d", w)
			for range 30 {
				began := time.Now()
				res, err := s.Claim(ctx, store.ClaimParams{Now: at, Limit: 60, Worker: worker, LeaseUntil: at.Add(time.Hour)})
				record("claim", began, len(res.Jobs), err)
				if err != nil || len(res.Jobs) == 0 {
					continue
				}
				mrand.Shuffle(len(res.Jobs), func(i, k int) { res.Jobs[i], res.Jobs[k] = res.Jobs[k], res.Jobs[i] })
				leases := make([]store.Lease, len(res.Jobs))
				for i, j := range res.Jobs {
					leases[i] = store.Lease{ID: j.ID, Claim: j.Claims}
				}
				began = time.Now()
				_, err = s.Heartbeat(ctx, store.HeartbeatParams{Now: at, Worker: worker, Jobs: leases, LeaseUntil: at.Add(2 * time.Hour)})
				record("heartbeat", began, len(leases), err)
				outs := make([]store.Outcome, len(leases))
				for i, j := range res.Jobs {
					o := store.Outcome{ID: j.ID, Attempt: j.Attempt, Claim: j.Claims, Record: job.Attempt{Attempt: j.Attempt, StartedAt: at, Worker: worker}}
					switch i % 4 {
					case 0:
						o.State, o.Record.Outcome = job.StateCompleted, "completed"
					case 1:
						o.State, o.Error, o.Record.Outcome = job.StateDead, "boom", "dead"
					case 2:
						o.State, o.RunAt, o.Error, o.Record.Outcome = job.StateRetrying, t0, "again", "retrying"
					case 3:
						o.State, o.Record.Outcome = job.StateAvailable, "released"
					}
					outs[i] = o
				}
				began = time.Now()
				_, err = s.Finish(ctx, store.FinishParams{Now: at, Outcomes: outs})
				record("finish", began, len(outs), err)
			}
		})
	}
	// A crashing worker: its claims' leases have expired already.
	workers.Go(func() {
		for i := range 30 {
			began := time.Now()
			res, err := stores[i%2].Claim(ctx, store.ClaimParams{Now: at, Limit: 20, Worker: "crasher", LeaseUntil: t0})
			record("claim/crash", began, len(res.Jobs), err)
		}
	})
	// The rescuer.
	others.Go(func() {
		loop(func(i int) {
			began := time.Now()
			js, err := stores[i%2].Rescue(ctx, store.RescueParams{Now: at, MaxCrashes: 5})
			record("rescue", began, len(js), err)
		})
	})
	// Retention: finished jobs past their time, the dead-letter queue
	// trimmed to its newest 300, and deletes of dead jobs by ID (a DLQ
	// purge from the dashboard) overlapping the retries.
	others.Go(func() {
		loop(func(i int) {
			s := stores[(i+1)%2]
			began := time.Now()
			k, err := s.Purge(ctx, store.PurgeParams{States: []job.State{job.StateCompleted}, Before: at.Add(time.Second)})
			record("purge/retention", began, k, err)
			began = time.Now()
			k, err = s.Purge(ctx, store.PurgeParams{States: []job.State{job.StateDead}, KeepNewest: 300})
			record("purge/trim", began, k, err)
			began = time.Now()
			k, err = s.Purge(ctx, store.PurgeParams{States: []job.State{job.StateDead}, IDs: pick(ids, 50)})
			record("purge/ids", began, k, err)
		})
	})
	// Bulk retries of overlapping, shuffled ID sets (dead or not), and
	// every fifth time of all dead jobs.
	for r := range 4 {
		others.Go(func() {
			loop(func(i int) {
				s := stores[(r+i)%2]
				var (
					k   int
					err error
				)
				began := time.Now()
				if i%5 == 4 {
					k, err = s.RetryDead(ctx, store.RetryDeadParams{Now: at, All: true})
				} else {
					k, err = s.RetryDead(ctx, store.RetryDeadParams{Now: at, IDs: pick(ids, 300)})
				}
				record("retry_dead", began, k, err)
			})
		})
	}
	workers.Wait()
	done.Store(true)
	others.Wait()
	// No job lost or duplicated: those left and those purged are those
	// enqueued.
	left, err := stores[0].Count(ctx, store.ListParams{})
	if err != nil {
		t.Fatal(err)
	}
	purged := 0
	for _, op := range []string{"purge/retention", "purge/trim", "purge/ids"} {
		if o := ops[op]; o != nil {
			purged += o.rows
		}
	}
	if left+purged != n {
		t.Errorf("%d jobs left and %d purged, want %d in all", left, purged, n)
	}

	// The counter: each backend reports its statistics at most once a
	// second, and for good when it exits. Close the stores and wait for
	// their backends to be gone from the server.
	for _, s := range stores {
		s.Close()
	}
	fail := time.Now().Add(deadline)
	for {
		var left int
		if err := admin.QueryRow(ctx, `SELECT count(*) FROM pg_stat_activity WHERE datname = $1`, db).Scan(&left); err != nil {
			t.Fatal(err)
		}
		if left == 0 {
			break
		}
		if time.Now().After(fail) {
			t.Fatalf("%d backends still connected to %s", left, db)
		}
	}
	after := deadlocks()
	mu.Lock()
	defer mu.Unlock()
	for _, op := range slices.Sorted(maps.Keys(ops)) {
		o := ops[op]
		t.Logf("%-16s %4d calls, %5d jobs, mean %v, max %v", op, o.n, o.rows, (o.total / time.Duration(o.n)).Round(time.Microsecond), o.mx.Round(time.Microsecond))
	}
	t.Logf("deadlocks counted by the server for the database: %d before, %d after", before, after)
	if after != before {
		t.Errorf("pg_stat_database.deadlocks went from %d to %d", before, after)
	}
	for _, e := range errs {
		t.Errorf("%s (deadlock: %v)", e, strings.Contains(e, "deadlock") || strings.Contains(e, "40P01"))
	}
}

// pick returns k of ids at random, shuffled, some of them twice, from a
// random window of 2k: the sets of concurrent callers overlap.
func pick(ids []job.ID, k int) []job.ID {
	w := min(len(ids), 2*k)
	start := mrand.IntN(len(ids) - w + 1)
	out := make([]job.ID, 0, k+k/10)
	for range k {
		out = append(out, ids[start+mrand.IntN(w)])
	}
	out = append(out, out[:k/10]...)
	mrand.Shuffle(len(out), func(i, j int) { out[i], out[j] = out[j], out[i] })
	return out
}

// TestPitfallIdleWorkers: 20 worker processes (20 clients, each on its
// own Store and pool) polling an empty queue keep the server nearly idle —
// a claim per poll interval each, and the maintenance the leader runs —
// and the one job then enqueued is run by exactly one of them, woken by
// NOTIFY, not by the next poll.
func TestPitfallIdleWorkers(t *testing.T) {
	t.Parallel()
	dbURL, db := freshDatabase(t)
	ctx := t.Context()
	const (
		procs = 20
		poll  = 250 * time.Millisecond
	)
	// Pools of one connection: 20 processes × (1 + the LISTEN connection)
	// stay well within the server's max_connections, which the other
	// tests share. An idle process uses one at a time anyway.
	stores := make([]*pgstore.Store, procs)
	openErrs := make([]error, procs)
	var wg sync.WaitGroup
	for i := range procs {
		wg.Go(func() {
			stores[i], openErrs[i] = openDB(t, dbURL, pgstore.Options{PoolSize: 1, PollInterval: poll, Worker: fmt.Sprintf("idle-%02d", i)})
		})
	}
	wg.Wait()
	if err := errors.Join(openErrs...); err != nil {
		t.Fatal(err)
	}
	type start struct {
		proc int
		at   time.Time
	}
	var calls atomic.Int64
	started := make(chan start, procs)
	completed := make(chan job.ID, procs)
	clients := make([]*hopper.Client, procs)
	for i, s := range stores {
		ws := hopper.NewWorkers()
		hopper.RegisterRaw(ws, "idle", func(context.Context, json.RawMessage) (any, error) {
			calls.Add(1)
			started <- start{i, time.Now()}
			return nil, nil
		}, nil)
		clients[i] = startClient(t, hopper.Config{Store: s, Workers: ws, Concurrency: 10,
			OnEvent: func(ev hopper.Event) {
				if ev.Type == job.EventCompleted {
					select { // never blocks: OnEvent must not
					case completed <- ev.Job.ID:
					default:
					}
				}
			}})
	}
	for i, s := range stores {
		select {
		case <-pgstore.ListenUp(s):
		case <-time.After(deadline):
			t.Fatalf("store %d did not LISTEN", i)
		}
	}

	// The measurement. A backend sends its counts to pg_stat_database at
	// most once a second (PGSTAT_MIN_INTERVAL), so the window starts
	// after the start-up's transactions (migration checks, clock samples,
	// the first election, the leader's first rescue and purges) have been
	// reported, and is long enough (3s, 12 poll intervals) for the second
	// of lag at each end to matter little.
	admin := conn(t)
	xacts := func() (int64, time.Time) {
		t.Helper()
		var n int64
		if _, err := admin.Exec(ctx, `SELECT pg_stat_clear_snapshot()`); err != nil {
			t.Fatal(err)
		}
		if err := admin.QueryRow(ctx, `SELECT xact_commit + xact_rollback FROM pg_stat_database WHERE datname = $1`, db).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n, time.Now()
	}
	const settle, window = 1500 * time.Millisecond, 3 * time.Second
	time.Sleep(settle) // a measurement window, not a wait for an event
	measure := func() (int64, time.Duration) {
		x0, t1 := xacts()
		time.Sleep(window)
		x1, t2 := xacts()
		return x1 - x0, t2.Sub(t1)
	}
	got, w := measure()
	var backends int
	if err := admin.QueryRow(ctx, `SELECT count(*) FROM pg_stat_activity WHERE datname = $1`, db).Scan(&backends); err != nil {
		t.Fatal(err)
	}
	// The bound, per process over the window w, with one more second for
	// the statistics' lag (transactions done before the window, reported
	// in it):
	//   - the dispatcher claims once per Wake: (w+1s)/poll + 1;
	//   - the elector renews or asks for the lease every leaderTTL/3
	//     (10s/3): (w+1s)/3.3s + 1;
	//   - the clock refresh (3 samples) and the self-vacuum check, each
	//     every 30s: at most once in the window, 4;
	//   - pgxpool pings a connection idle over 1s before handing it out
	//     (an empty query is a transaction too): at most one per
	//     operation above other than the claims, which keep theirs warm.
	// and for the leader alone: its scheduler lists the schedules every
	// second, (w+1s)/1s + 1, rescue and the four purges of retention at
	// most once each, 5, doubled for pings too. A busy loop — a dispatcher
	// claiming without waiting for Wake — would be thousands a second.
	perProc := float64(w+time.Second)/float64(poll) + 1 +
		2*(float64(w+time.Second)/float64(10*time.Second/3)+1+4)
	leader := 2 * (float64(w+time.Second)/float64(time.Second) + 1 + 5)
	bound := int64(procs*perProc + leader)
	t.Logf("%d idle processes (poll %v, %d backends): %d transactions in %v (%.0f/s; %.1f per process per poll interval), bound %d",
		procs, poll, backends, got, w.Round(time.Millisecond), float64(got)/w.Seconds(),
		float64(got)/procs/(float64(w)/float64(poll)), bound)
	if got > bound {
		// On a loaded machine (the package's other tests beside this one)
		// the 20 start-ups can still be running, or be reported late, in
		// the first window: measure a second one. A busy loop would fill
		// both.
		first := got
		if got, w = measure(); got > bound {
			t.Errorf("%d idle processes: %d then %d transactions in two windows of %v, want at most %d",
				procs, first, got, w.Round(time.Millisecond), bound)
		} else {
			t.Logf("the first window had %d transactions (start-up), the second %d", first, got)
		}
	}

	// One job, enqueued by another process: one of them runs it, once.
	producer := mustOpenDB(t, dbURL, pgstore.Options{PoolSize: 2})
	pc, err := hopper.NewClient(hopper.Config{Store: producer, Logger: discardLog})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { stopClient(t, pc) })
	enqueued := time.Now()
	r, err := pc.Enqueue(ctx, "idle", nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	acked := time.Now()
	var first start
	select {
	case first = <-started:
	case <-time.After(deadline):
		t.Fatal("no process started the job")
	}
	select {
	case id := <-completed:
		if id != r.ID {
			t.Fatalf("completed job %d, enqueued %d", id, r.ID)
		}
	case <-time.After(deadline):
		t.Fatal("the job did not complete")
	}
	j, err := producer.Get(ctx, r.ID)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("job %d enqueued → started by process %d in %v: the Enqueue call took %v (the producer's first), the start came %v after it returned (poll interval %v)",
		r.ID, first.proc, first.at.Sub(enqueued).Round(time.Microsecond), acked.Sub(enqueued).Round(time.Microsecond),
		first.at.Sub(acked).Round(time.Microsecond), poll)
	if j.State != job.StateCompleted || j.Attempt != 1 || len(j.Attempts) != 1 {
		t.Errorf("job: %s, attempt %d, %d attempt records; want completed at the first and only attempt", j.State, j.Attempt, len(j.Attempts))
	}
	for _, c := range clients {
		wg.Go(func() { stopClient(t, c) }) // every handler has returned
	}
	wg.Wait()
	if n := calls.Load(); n != 1 {
		t.Errorf("the handler ran %d times, want once", n)
	}
}
