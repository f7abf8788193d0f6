package sqlitestore

// Performance benchmarks; docs/sqlite.md records the figures. Run with
//
//	go test -run '^$' -bench . -benchtime 3s ./store/sqlitestore/
//
// BenchmarkScale builds a 1M-job file once per process (about a minute),
// and a 10M-job file (≈ 2.6 GB, 1–2.5 minutes) only when the -bench
// pattern names rows=10000k.

import (
	"context"
	"flag"
	"fmt"
	"go.uber.org/goleak"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hopperq/hopper/internal/cputime"
	"github.com/hopperq/hopper/job"
	"github.com/hopperq/hopper/store"
	"github.com/hopperq/hopper/store/storetest"
)

var bt0 = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

func bOpen(b testing.TB, path string, opts Options) *Store {
	b.Helper()
	s, err := Open(context.Background(), path, opts)
	if err != nil {
		b.Fatal(err)
	}
	return s
}

func bJobs(n int, queue string) []*job.Job {
	js := make([]*job.Job, n)
	for i := range js {
		j := &job.Job{Kind: "send_email", Queue: queue, Priority: i % 3, MaxAttempts: 25,
			Args: []byte(`{"to":"someone@example.com","template":"welcome","n":12345}`)}
		if err := j.Validate(bt0); err != nil {
			panic(err)
		}
		js[i] = j
	}
	return js
}

func bEnqueue(b testing.TB, s *Store, js []*job.Job) {
	if _, err := s.Enqueue(context.Background(), store.EnqueueParams{Now: bt0, Jobs: js}); err != nil {
		b.Fatal(err)
	}
}

func bClaim(b testing.TB, s *Store, n int, queues ...string) []*job.Job {
	res, err := s.Claim(context.Background(), store.ClaimParams{Now: bt0, Limit: n, Queues: queues,
		Worker: s.WorkerID(), LeaseUntil: bt0.Add(time.Hour)})
	if err != nil {
		b.Fatal(err)
	}
	if len(res.Jobs) != n {
		b.Fatalf("claimed %d jobs, want %d", len(res.Jobs), n)
	}
	return res.Jobs
}

func bFinish(b testing.TB, s *Store, js []*job.Job, st job.State) {
	outs := make([]store.Outcome, len(js))
	for i, j := range js {
		outs[i] = store.Outcome{ID: j.ID, Attempt: j.Attempt, Claim: j.Claims, State: st,
			Record: job.Attempt{Attempt: j.Attempt, StartedAt: j.StartedAt, Duration: time.Millisecond, Worker: j.Worker, Outcome: st.String()}}
		if st == job.StateCompleted {
			outs[i].Result = []byte(`{"ok":true}`)
		}
	}
	ok, err := s.Finish(context.Background(), store.FinishParams{Now: bt0, Outcomes: outs})
	if err != nil {
		b.Fatal(err)
	}
	for _, reached := range ok {
		if reached == 0 {
			b.Fatal("outcome not applied")
		}
	}
}

func perSec(b *testing.B, perOp float64, unit string) {
	b.ReportMetric(float64(b.N)*perOp/b.Elapsed().Seconds(), unit)
}

// cpuPerOp reports the process's CPU time per operation since start: on a
// shared machine it varies much less than the wall time.
func cpuPerOp(b *testing.B, start time.Duration) {
	b.ReportMetric(float64(cputime.Process()-start)/float64(b.N), "cpu-ns/op")
}

// BenchmarkBulk runs the bulk actions on 300,000 matching jobs (see
// storetest.BenchBulk; docs/performance.md records the figures):
//
//	go test -run '^$' -bench Bulk -benchtime 1x ./store/sqlitestore/
func BenchmarkBulk(b *testing.B) {
	storetest.BenchBulk(b, bulkN(), func(b *testing.B) store.Store {
		s := bOpen(b, filepath.Join(b.TempDir(), "b.db"), Options{})
		b.Cleanup(func() { s.Close() })
		return s
	})
}

// BenchmarkEnqueueBatch: one Enqueue of 1,000 jobs (one transaction).
func BenchmarkEnqueueBatch(b *testing.B) {
	s := bOpen(b, filepath.Join(b.TempDir(), "b.db"), Options{})
	defer s.Close()
	js := bJobs(1000, "default")
	b.ResetTimer()
	cpu := cputime.Process()
	for range b.N {
		bEnqueue(b, s, js)
	}
	perSec(b, 1000, "jobs/s")
	cpuPerOp(b, cpu)
}

// BenchmarkEnqueueConcurrent8: 8 goroutines each enqueueing one job per
// call; group commit shares fsyncs among them.
func BenchmarkEnqueueConcurrent8(b *testing.B) {
	for _, d := range []Durability{DurabilityFull, DurabilityNormal} {
		b.Run(d.String(), func(b *testing.B) { benchConcurrent(b, d, 8) })
	}
}

// BenchmarkEnqueueConcurrent: the same with more callers, in Full
// durability: the more concurrent callers, the bigger the transactions.
func BenchmarkEnqueueConcurrent(b *testing.B) {
	for _, n := range []int{2, 8, 32, 128} {
		b.Run(fmt.Sprintf("goroutines=%d", n), func(b *testing.B) { benchConcurrent(b, DurabilityFull, n) })
	}
}

func benchConcurrent(b *testing.B, d Durability, goroutines int) {
	s := bOpen(b, filepath.Join(b.TempDir(), "b.db"), Options{Durability: d})
	defer s.Close()
	procs := runtime.GOMAXPROCS(0)
	b.SetParallelism((goroutines + procs - 1) / procs)
	b.ResetTimer()
	before := s.commits.Load()
	b.RunParallel(func(pb *testing.PB) {
		js := bJobs(1, "default")
		for pb.Next() {
			bEnqueue(b, s, js)
		}
	})
	perSec(b, 1, "jobs/s")
	b.ReportMetric(float64(b.N)/float64(max(1, s.commits.Load()-before)), "jobs/txn")
}

// BenchmarkClaimFinish: claim 100 jobs, then complete them (two calls).
func BenchmarkClaimFinish(b *testing.B) {
	s := bOpen(b, filepath.Join(b.TempDir(), "b.db"), Options{})
	defer s.Close()
	js := bJobs(1000, "default")
	b.ResetTimer()
	var setup time.Duration
	cpu := cputime.Process()
	for i := range b.N {
		if i%10 == 0 {
			b.StopTimer()
			c := cputime.Process()
			bEnqueue(b, s, js)
			setup += cputime.Process() - c
			b.StartTimer()
		}
		bFinish(b, s, bClaim(b, s, 100), job.StateCompleted)
	}
	perSec(b, 100, "jobs/s")
	cpuPerOp(b, cpu+setup)
}

// BenchmarkClaimFinishFiltered: as ClaimFinish, claiming with a queue
// filter, and with a queue and a kind filter (the lanes' path).
func BenchmarkClaimFinishFiltered(b *testing.B) {
	for _, f := range []struct {
		name          string
		queues, kinds []string
	}{
		{"queue", []string{"default"}, nil},
		{"queue+kind", []string{"default"}, []string{"send_email"}},
	} {
		b.Run(f.name, func(b *testing.B) {
			s := bOpen(b, filepath.Join(b.TempDir(), "b.db"), Options{})
			defer s.Close()
			js := bJobs(1000, "default")
			b.ResetTimer()
			var setup time.Duration
			cpu := cputime.Process()
			for i := range b.N {
				if i%10 == 0 {
					b.StopTimer()
					c := cputime.Process()
					bEnqueue(b, s, js)
					setup += cputime.Process() - c
					b.StartTimer()
				}
				res, err := s.Claim(context.Background(), store.ClaimParams{Now: bt0, Limit: 100, Queues: f.queues, Kinds: f.kinds,
					Worker: s.WorkerID(), LeaseUntil: bt0.Add(time.Hour)})
				if err != nil || len(res.Jobs) != 100 {
					b.Fatalf("claimed %d jobs, %v", len(res.Jobs), err)
				}
				bFinish(b, s, res.Jobs, job.StateCompleted)
			}
			perSec(b, 100, "jobs/s")
			cpuPerOp(b, cpu+setup)
		})
	}
}

// scaleFiles are database files of n jobs, built once per process (by
// scaleFile through the store's API, by scaleFileDirect with SQL) in a
// temporary directory that TestMain removes.
var scaleFiles struct {
	sync.Mutex
	dir   string
	paths map[scaleKey]string
}

type scaleKey struct {
	n      int
	direct bool
}

// scaleCached returns the path of a scale file: the one built earlier in
// this process, or the one build writes (to the path it is given).
func scaleCached(tb testing.TB, k scaleKey, build func(path string)) string {
	scaleFiles.Lock()
	defer scaleFiles.Unlock()
	if p := scaleFiles.paths[k]; p != "" {
		return p
	}
	if scaleFiles.dir == "" {
		dir, err := os.MkdirTemp("", "hopper-sqlitestore-bench-")
		if err != nil {
			tb.Fatal(err)
		}
		scaleFiles.dir, scaleFiles.paths = dir, make(map[scaleKey]string)
	}
	how := "api"
	if k.direct {
		how = "direct"
	}
	path := filepath.Join(scaleFiles.dir, fmt.Sprintf("scale-%d-%s.db", k.n, how))
	start := time.Now()
	build(path)
	fi, err := os.Stat(path)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Logf("built %s (%s): %d jobs, %d MB, in %s", path, how, k.n, fi.Size()>>20, time.Since(start).Round(time.Millisecond))
	scaleFiles.paths[k] = path
	return path
}

// scaleQueues are the queues of the scale files, one per 1,000-job batch
// in turn.
var scaleQueues = []string{"default", "email", "reports", "webhooks"}

// scaleFile returns a closed database file holding n jobs, built through
// the store's API: 60% completed (history), 30% available in 4 queues,
// 10% scheduled in the future.
func scaleFile(tb testing.TB, n int) string {
	return scaleCached(tb, scaleKey{n: n}, func(path string) {
		s := bOpen(tb, path, Options{Durability: DurabilityNormal})
		const batch = 1000
		for i := 0; i < n; i += batch {
			queue := scaleQueues[(i/batch)%len(scaleQueues)]
			js := bJobs(min(batch, n-i), queue)
			for k, j := range js {
				if (i+k)%10 == 9 {
					j.RunAt, j.State = bt0.Add(time.Duration(1+k)*time.Hour), job.StateScheduled
				}
			}
			bEnqueue(tb, s, js)
			// Complete 60%: claim and finish 600 of the batch's 900
			// available jobs, in claim order those of priority 0 and 1
			// (see scaleFileDirect).
			for left := len(js) * 6 / 10; left > 0; left -= min(left, 100) {
				bFinish(tb, s, bClaim(tb, s, min(left, 100), queue), job.StateCompleted)
			}
		}
		if err := s.Close(); err != nil {
			tb.Fatal(err)
		}
	})
}

// BenchmarkScale: the same operations on a file of 10k, of 1M and of 10M
// jobs, the sizes of one operation one after the other. The 10M-job file
// (≈ 2.6 GB) is built with SQL (scaleFileDirect), the others through the
// API; it is built, once per process, only when the -bench pattern names
// it (rows=10000k), e.g.
//
//	go test -run '^$' -bench 'Scale/rows=(10k|10000k)/(Claim100|Enqueue100)' -benchtime 2000x ./store/sqlitestore/
func BenchmarkScale(b *testing.B) {
	sizes := []int{10_000, 1_000_000, 10_000_000}
	file := func(b *testing.B, n int) string {
		if n < 10_000_000 {
			return scaleFile(b, n)
		}
		if !strings.Contains(benchPattern(), "10000k") {
			b.Skip("the 10M-job file (≈ 2.6 GB, minutes to build) is built only when -bench names rows=10000k")
		}
		return scaleFileDirect(b, n)
	}
	name := func(n int) string { return fmt.Sprintf("rows=%dk", n/1000) }
	for _, n := range sizes {
		b.Run(name(n)+"/Claim100", func(b *testing.B) {
			s := bOpen(b, file(b, n), Options{})
			defer s.Close()
			b.ResetTimer()
			var setup time.Duration
			cpu := cputime.Process()
			for range b.N {
				claimed := bClaim(b, s, 100)
				b.StopTimer()
				c := cputime.Process()
				bUnclaim(b, s, claimed) // the file stays the same
				setup += cputime.Process() - c
				b.StartTimer()
			}
			cpuPerOp(b, cpu+setup)
		})
	}
	for _, since := range []bool{false, true} {
		for _, n := range sizes {
			b.Run(fmt.Sprintf("%s/Stats/finishedSince=%v", name(n), since), func(b *testing.B) {
				s := bOpen(b, file(b, n), Options{})
				defer s.Close()
				p := store.StatsParams{Now: bt0}
				if since { // counts all 60% finished jobs
					p.FinishedSince = bt0
				}
				b.ResetTimer()
				for range b.N {
					if _, err := s.Stats(context.Background(), p); err != nil {
						b.Fatal(err)
					}
				}
			})
		}
	}
	for _, n := range sizes {
		b.Run(name(n)+"/Enqueue100", func(b *testing.B) {
			s := bOpen(b, file(b, n), Options{})
			defer s.Close()
			var first job.ID
			js := bJobs(100, "default")
			b.ResetTimer()
			var setup time.Duration
			cpu := cputime.Process()
			for i := range b.N {
				res, err := s.Enqueue(context.Background(), store.EnqueueParams{Now: bt0, Jobs: js})
				if err != nil {
					b.Fatal(err)
				}
				if first == 0 {
					first = res[0].ID
				}
				if i%100 == 99 { // keep the size: drop what we added
					b.StopTimer()
					c := cputime.Process()
					bDeleteFrom(b, s, first)
					setup += cputime.Process() - c
					b.StartTimer()
				}
			}
			cpuPerOp(b, cpu+setup)
			b.StopTimer()
			bDeleteFrom(b, s, first)
		})
	}
}

// benchPattern is the -bench flag's value.
func benchPattern() string {
	if f := flag.Lookup("test.bench"); f != nil {
		return f.Value.String()
	}
	return ""
}

// bUnclaim puts claimed jobs back as they were before the claim, counts
// included.
func bUnclaim(b testing.TB, s *Store, js []*job.Job) {
	ids := make([]job.ID, len(js))
	for i, j := range js {
		ids[i] = j.ID
	}
	err := s.write(context.Background(), func(w *writer) error {
		_, err := w.exec(`UPDATE jobs SET state = 'available', attempt = 0, started_at = 0, worker = NULL,
			claimed_by = NULL, lease_until = 0 WHERE id IN (SELECT value FROM json_each(?))`, idList(ids))
		for _, j := range js {
			w.req.move(job.StateRunning, job.StateAvailable, j.Queue, j.Kind, 1)
		}
		return err
	})
	if err != nil {
		b.Fatal(err)
	}
}

// bDeleteFrom deletes the jobs from ID id on, counts included.
func bDeleteFrom(b testing.TB, s *Store, id job.ID) {
	err := s.write(context.Background(), func(w *writer) error {
		rows, err := w.query(`DELETE FROM jobs WHERE id >= ? RETURNING state, queue, kind`, int64(id))
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			var name, queue, kind string
			if err := rows.Scan(&name, &queue, &kind); err != nil {
				return err
			}
			st, err := parseState(name)
			if err != nil {
				return err
			}
			w.req.move(st, 0, queue, kind, 1)
		}
		return rows.Err()
	})
	if err != nil {
		b.Fatal(err)
	}
}

// BenchmarkReopen1M: Open a file of 1M jobs (300k of them available) and
// claim from it.
func BenchmarkReopen1M(b *testing.B) {
	path := scaleFile(b, 1_000_000)
	b.ResetTimer()
	for range b.N {
		s := bOpen(b, path, Options{})
		claimed := bClaim(b, s, 100)
		b.StopTimer()
		bUnclaim(b, s, claimed)
		s.Close()
		b.StartTimer()
	}
}

// TestMain fails the package if a test leaves a goroutine behind (the
// writer and the watcher of every Store must end with Close), and removes
// the benchmarks' scale files.
func TestMain(m *testing.M) {
	code := m.Run()
	if code == 0 {
		if err := goleak.Find(); err != nil {
			fmt.Fprintln(os.Stderr, "goleak:", err)
			code = 1
		}
	}
	if scaleFiles.dir != "" {
		os.RemoveAll(scaleFiles.dir)
	}
	os.Exit(code)
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
//	go test -run '^$' -bench Tags ./store/sqlitestore/
func BenchmarkTags(b *testing.B) {
	s := bOpen(b, filepath.Join(b.TempDir(), "b.db"), Options{})
	defer s.Close()
	storetest.BenchTags(b, tagsN(), s)
}

func tagsN() int {
	if n, err := strconv.Atoi(os.Getenv("HOPPER_BENCH_TAGS")); err == nil {
		return n
	}
	return 1_000_000
}

// BenchmarkKeyBacklog: claims of a keyed queue with and without 100,000
// jobs blocked behind a key at its limit of 1 (storetest.BenchKeyBacklog):
//
//	go test -run '^$' -bench KeyBacklog ./store/sqlitestore/
func BenchmarkKeyBacklog(b *testing.B) {
	storetest.BenchKeyBacklog(b, 100_000, func(b *testing.B) store.Store {
		s := bOpen(b, filepath.Join(b.TempDir(), "b.db"), Options{})
		b.Cleanup(func() { s.Close() })
		return s
	})
}

// BenchmarkKeyBacklogWrap: claims of a keyed queue whose walk wraps
// around at every claim past a hot key's 20,000 blocked jobs
// (storetest.BenchKeyBacklogWrap): SQLite reads the keyless jobs at every
// such claim (no hint: flow-control.md, Keys).
//
//	go test -run '^$' -bench KeyBacklogWrap -benchtime 300x ./store/sqlitestore/
func BenchmarkKeyBacklogWrap(b *testing.B) {
	s := bOpen(b, filepath.Join(b.TempDir(), "b.db"), Options{})
	b.Cleanup(func() { s.Close() })
	storetest.BenchKeyBacklogWrap(b, 20_000, s)
}
