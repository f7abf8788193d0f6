package pgstore_test

import (
	"context"
	"fmt"
	"os"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hopperq/hopper/job"
	"github.com/hopperq/hopper/store"
	"github.com/hopperq/hopper/store/pgstore"
	"github.com/hopperq/hopper/store/storetest"
)

// Benchmarks of the store operations on the hot paths. They need
// HOPPER_TEST_POSTGRES like the tests; figures and commands are in
// docs/postgres.md.
//
//	HOPPER_TEST_POSTGRES=postgres://postgres@127.0.0.1:5432/test?sslmode=disable \
//	  go test -run '^$' -bench . -benchtime 3s ./store/pgstore/

// benchJobs returns n validated jobs of kind "k" in the default queue.
func benchJobs(b *testing.B, n int) []*job.Job {
	b.Helper()
	js := make([]*job.Job, n)
	for i := range js {
		js[i] = &job.Job{Kind: "k", Queue: job.DefaultQueue, MaxAttempts: 3, Args: []byte(`{"n":1}`)}
		if err := js[i].Validate(t0); err != nil {
			b.Fatal(err)
		}
	}
	return js
}

// fill enqueues n jobs, 1,000 per call.
func fill(b *testing.B, s store.Store, n int) {
	b.Helper()
	for n > 0 {
		k := min(n, 1000)
		if _, err := s.Enqueue(context.Background(), store.EnqueueParams{Now: t0, Jobs: benchJobs(b, k)}); err != nil {
			b.Fatal(err)
		}
		n -= k
	}
}

// claimFinish claims up to batch jobs as the engine does (its queues and
// kinds) and completes them; it returns how many.
func claimFinish(b *testing.B, s store.Store, worker string, batch int) int {
	res, err := s.Claim(context.Background(), store.ClaimParams{Now: t0, Limit: batch, Worker: worker,
		LeaseUntil: t0.Add(time.Minute), Queues: []string{job.DefaultQueue}, Kinds: []string{"func", "k"}})
	if err != nil {
		b.Fatal(err)
	}
	if len(res.Jobs) == 0 {
		return 0
	}
	outs := make([]store.Outcome, len(res.Jobs))
	for i, j := range res.Jobs {
		outs[i] = store.Outcome{ID: j.ID, Attempt: j.Attempt, Claim: j.Claims, State: job.StateCompleted, Result: []byte(`{"ok":true}`),
			Record: job.Attempt{Attempt: j.Attempt, StartedAt: j.StartedAt, Duration: time.Millisecond, Worker: worker, Outcome: "completed"}}
	}
	if _, err := s.Finish(context.Background(), store.FinishParams{Now: t0, Outcomes: outs}); err != nil {
		b.Fatal(err)
	}
	return len(res.Jobs)
}

// BenchmarkClaimFinish works a pre-filled queue: each op claims a batch
// and completes it (two round trips). The parallel forms run several
// workers at once, as several processes or a client's completer and
// dispatcher overlapping would.
func BenchmarkClaimFinish(b *testing.B) {
	for _, batch := range []int{100, 1000} {
		for _, workers := range []int{1, 4} {
			b.Run(fmt.Sprintf("batch=%d/workers=%d", batch, workers), func(b *testing.B) {
				s := openStore(b, pgstore.Options{PoolSize: workers * 2})
				fill(b, s, b.N*batch)
				b.ResetTimer()
				var done atomic.Int64
				var next atomic.Int64
				var wg sync.WaitGroup
				for w := range workers {
					wg.Go(func() {
						for next.Add(1) <= int64(b.N) {
							done.Add(int64(claimFinish(b, s, "w"+strconv.Itoa(w), batch)))
						}
					})
				}
				wg.Wait()
				b.StopTimer()
				b.ReportMetric(float64(done.Load())/b.Elapsed().Seconds(), "jobs/s")
			})
		}
	}
}

// BenchmarkEnqueueBatch inserts 1,000 jobs per call, from 1 and from 2
// goroutines (b.N calls in all).
func BenchmarkEnqueueBatch(b *testing.B) {
	for _, callers := range []int{1, 2} {
		b.Run(fmt.Sprintf("callers=%d", callers), func(b *testing.B) {
			s := openStore(b, pgstore.Options{})
			js := benchJobs(b, 1000)
			var next atomic.Int64
			b.ResetTimer()
			var wg sync.WaitGroup
			for range callers {
				wg.Go(func() {
					for next.Add(1) <= int64(b.N) {
						if _, err := s.Enqueue(context.Background(), store.EnqueueParams{Now: t0, Jobs: js}); err != nil {
							b.Error(err)
							return
						}
					}
				})
			}
			wg.Wait()
			b.ReportMetric(float64(b.N*len(js))/b.Elapsed().Seconds(), "jobs/s")
		})
	}
}

// enqueueSingly enqueues b.N jobs in all, one per call, from one goroutine
// per job of js, each enqueueing its own job again and again.
func enqueueSingly(b *testing.B, s *pgstore.Store, js []*job.Job) {
	var next atomic.Int64
	var wg sync.WaitGroup
	for g := range js {
		wg.Go(func() {
			p := store.EnqueueParams{Now: t0, Jobs: js[g : g+1]}
			for next.Add(1) <= int64(b.N) {
				if _, err := s.Enqueue(context.Background(), p); err != nil {
					b.Error(err)
					return
				}
			}
		})
	}
	wg.Wait()
}

// BenchmarkEnqueueConcurrent8: 8 goroutines each enqueue one job per call
// (b.N jobs in all); the group writer merges what arrives together.
func BenchmarkEnqueueConcurrent8(b *testing.B) {
	s := openStore(b, pgstore.Options{})
	js := benchJobs(b, 8)
	before := pgstore.InsertStatements(s)
	b.ResetTimer()
	enqueueSingly(b, s, js)
	b.StopTimer()
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "jobs/s")
	b.ReportMetric(float64(b.N)/float64(pgstore.InsertStatements(s)-before), "jobs/stmt")
}

// BenchmarkEnqueueToStart measures, on an idle store, the time from an
// Enqueue by one Store to the job's claim by another, woken by
// LISTEN/NOTIFY (its poll interval is an hour): p50 and p99.
func BenchmarkEnqueueToStart(b *testing.B) {
	schema := freshSchema(b)
	producer := openIn(b, schema, pgstore.Options{})
	worker := openIn(b, schema, pgstore.Options{PollInterval: time.Hour})
	<-pgstore.ListenUp(worker)
	j := benchJobs(b, 1)
	lat := make([]time.Duration, 0, b.N)
	b.ResetTimer()
	for range b.N {
		select { // drain
		case <-worker.Wake():
		default:
		}
		start := time.Now()
		if _, err := producer.Enqueue(context.Background(), store.EnqueueParams{Now: t0, Jobs: j}); err != nil {
			b.Fatal(err)
		}
		<-worker.Wake()
		res, err := worker.Claim(context.Background(), store.ClaimParams{Now: t0, Limit: 1, Worker: "w", LeaseUntil: t0.Add(time.Minute),
			Queues: []string{job.DefaultQueue}, Kinds: []string{"k"}})
		if err != nil || len(res.Jobs) != 1 {
			b.Fatalf("Claim: %d jobs, %v", len(res.Jobs), err)
		}
		lat = append(lat, time.Since(start))
	}
	b.StopTimer()
	slices.Sort(lat)
	b.ReportMetric(float64(lat[len(lat)/2].Microseconds()), "p50-µs")
	b.ReportMetric(float64(lat[len(lat)*99/100].Microseconds()), "p99-µs")
}

// scaleRows is the number of finished jobs BenchmarkClaimScale puts in
// the table (HOPPER_BENCH_ROWS, default 10,000,000). The table is built
// once, in the schema hopper_bench_<rows>, and kept for the next runs
// (drop it by hand).
func scaleRows() int {
	if n, err := strconv.Atoi(os.Getenv("HOPPER_BENCH_ROWS")); err == nil && n >= 0 {
		return n
	}
	return 10_000_000
}

// BenchmarkClaimScale claims and completes 100 jobs at a time on a table
// that is empty but for them, and on one that also holds many finished
// jobs (and dead tuples from the runs before): the claim path reads only
// partial indexes, so the two should cost the same.
func BenchmarkClaimScale(b *testing.B) {
	for _, rows := range []int{0, scaleRows()} {
		b.Run(fmt.Sprintf("finished=%d", rows), func(b *testing.B) {
			var s *pgstore.Store
			if rows == 0 {
				s = openStore(b, pgstore.Options{})
			} else {
				s = openIn(b, bigSchema(b, rows), pgstore.Options{})
			}
			fill(b, s, b.N*100)
			b.ResetTimer()
			n := 0
			for range b.N {
				n += claimFinish(b, s, "w", 100)
			}
			b.StopTimer()
			b.ReportMetric(float64(n)/b.Elapsed().Seconds(), "jobs/s")
		})
	}
}

// bigSchema returns a schema holding rows finished jobs, creating it the
// first time.
func bigSchema(b *testing.B, rows int) string {
	b.Helper()
	schema := "hopper_bench_" + strconv.Itoa(rows)
	c := conn(b)
	ctx := context.Background()
	var n int64
	err := c.QueryRow(ctx, `SELECT coalesce((SELECT reltuples::bigint FROM pg_class c JOIN pg_namespace s ON s.oid = c.relnamespace
		WHERE s.nspname = $1 AND c.relname = 'jobs'), -1)`, schema).Scan(&n)
	if err != nil {
		b.Fatal(err)
	}
	if n >= int64(rows)*9/10 {
		return schema
	}
	b.Logf("building %d finished jobs in schema %s (once)", rows, schema)
	if _, err := pgstore.Migrate(ctx, schemaURL(b, schema)); err != nil {
		b.Fatal(err)
	}
	q := `INSERT INTO ` + schema + `.jobs (state, queue, kind, priority, run_at, created_at, started_at, finished_at,
			max_attempts, attempt, args, result, attempts)
		SELECT 'completed', 'q' || (i % 4), 'k' || (i % 10), 0, ts, ts, ts, ts + interval '1 second', 3, 1,
			'{"n":1}', '{"ok":true}',
			'[{"attempt":1,"started_at":"2026-03-01T12:00:00Z","duration":1000000,"worker":"w","outcome":"completed"}]'
		FROM generate_series(1, $1::bigint) i, LATERAL (SELECT timestamptz '2026-01-01' + i * interval '1 ms' AS ts) t`
	for done := 0; done < rows; done += 1_000_000 {
		if _, err := c.Exec(ctx, q, min(1_000_000, rows-done)); err != nil {
			b.Fatal(err)
		}
	}
	if _, err := c.Exec(ctx, `VACUUM ANALYZE `+schema+`.jobs`); err != nil {
		b.Fatal(err)
	}
	return schema
}

// BenchmarkBulk runs the bulk actions on 300,000 matching jobs (see
// storetest.BenchBulk; docs/performance.md records the figures):
//
//	go test -run '^$' -bench Bulk -benchtime 1x ./store/pgstore/
func BenchmarkBulk(b *testing.B) {
	storetest.BenchBulk(b, bulkN(), func(b *testing.B) store.Store { return openStore(b, pgstore.Options{}) })
}

func bulkN() int {
	if n, err := strconv.Atoi(os.Getenv("HOPPER_BENCH_BULK")); err == nil {
		return n
	}
	return 300_000
}

// BenchmarkTags lists and counts by tag among 1,000,000 jobs
// (storetest.BenchTags; HOPPER_BENCH_TAGS sets another size):
//
//	go test -run '^$' -bench Tags ./store/pgstore/
func BenchmarkTags(b *testing.B) {
	s := openStore(b, pgstore.Options{})
	storetest.BenchTags(b, tagsN(), s)
}

func tagsN() int {
	if n, err := strconv.Atoi(os.Getenv("HOPPER_BENCH_TAGS")); err == nil {
		return n
	}
	return 1_000_000
}

// BenchmarkKeyBacklog: claims of a keyed queue with and without 100,000
// jobs blocked behind a key at its limit of 1 (storetest.BenchKeyBacklog),
// or as many as HOPPER_KEY_BACKLOG says (1000000: issue 21's full size):
//
//	go test -run '^$' -bench KeyBacklog ./store/pgstore/
//	HOPPER_KEY_BACKLOG=1000000 go test -run '^$' -bench KeyBacklog -benchtime 2000x -timeout 30m ./store/pgstore/
func BenchmarkKeyBacklog(b *testing.B) {
	storetest.BenchKeyBacklog(b, 100_000, func(b *testing.B) store.Store { return openStore(b, pgstore.Options{}) })
}

// BenchmarkKeyBacklogWrap: claims of a keyed queue whose walk wraps
// around at every claim past a hot key's 20,000 blocked jobs
// (storetest.BenchKeyBacklogWrap; decision 105):
//
//	go test -run '^$' -bench KeyBacklogWrap -benchtime 300x ./store/pgstore/
func BenchmarkKeyBacklogWrap(b *testing.B) {
	storetest.BenchKeyBacklogWrap(b, 20_000, openStore(b, pgstore.Options{}))
}
