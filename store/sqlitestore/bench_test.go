package sqlitestore

// Performance benchmarks; docs/sqlite.md records the figures. Run with
//
//	go test -run '^$' -bench . -benchtime 3s ./store/sqlitestore/
//
// BenchmarkScale builds a 1M-job file once per process (about a minute).

import (
	"context"
	"fmt"
	"go.uber.org/goleak"
	"os"
	"path/filepath"
	"runtime"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/hopperq/hopper/job"
	"github.com/hopperq/hopper/store"
)

var bt0 = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

func bOpen(b *testing.B, path string, opts Options) *Store {
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

func bEnqueue(b *testing.B, s *Store, js []*job.Job) {
	if _, err := s.Enqueue(context.Background(), store.EnqueueParams{Now: bt0, Jobs: js}); err != nil {
		b.Fatal(err)
	}
}

func bClaim(b *testing.B, s *Store, n int, queues ...string) []*job.Job {
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

func bFinish(b *testing.B, s *Store, js []*job.Job, st job.State) {
	outs := make([]store.Outcome, len(js))
	for i, j := range js {
		outs[i] = store.Outcome{ID: j.ID, Attempt: j.Attempt, State: st,
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

// cpuTime is the CPU time (user + system) the process has used so far.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// cpuPerOp reports the process's CPU time per operation since start: on a
// shared machine it varies much less than the wall time.
func cpuPerOp(b *testing.B, start time.Duration) {
	b.ReportMetric(float64(cpuTime()-start)/float64(b.N), "cpu-ns/op")
}

// BenchmarkEnqueueBatch: one Enqueue of 1,000 jobs (one transaction).
func BenchmarkEnqueueBatch(b *testing.B) {
	s := bOpen(b, filepath.Join(b.TempDir(), "b.db"), Options{})
	defer s.Close()
	js := bJobs(1000, "default")
	b.ResetTimer()
	cpu := cpuTime()
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
	cpu := cpuTime()
	for i := range b.N {
		if i%10 == 0 {
			b.StopTimer()
			c := cpuTime()
			bEnqueue(b, s, js)
			setup += cpuTime() - c
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
			cpu := cpuTime()
			for i := range b.N {
				if i%10 == 0 {
					b.StopTimer()
					c := cpuTime()
					bEnqueue(b, s, js)
					setup += cpuTime() - c
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

// scaleFiles are database files of n jobs, built once per process.
var scaleFiles struct {
	sync.Mutex
	dir   string
	paths map[int]string
}

// scaleFile returns a closed database file holding n jobs: 60% completed
// (history), 30% available in 4 queues, 10% scheduled in the future.
func scaleFile(b *testing.B, n int) string {
	scaleFiles.Lock()
	defer scaleFiles.Unlock()
	if p := scaleFiles.paths[n]; p != "" {
		return p
	}
	if scaleFiles.dir == "" {
		dir, err := os.MkdirTemp("", "hopper-sqlitestore-bench-")
		if err != nil {
			b.Fatal(err)
		}
		scaleFiles.dir, scaleFiles.paths = dir, make(map[int]string)
	}
	start := time.Now()
	path := filepath.Join(scaleFiles.dir, fmt.Sprintf("scale-%d.db", n))
	s := bOpen(b, path, Options{Durability: DurabilityNormal})
	const batch = 1000
	queues := []string{"default", "email", "reports", "webhooks"}
	for i := 0; i < n; i += batch {
		js := bJobs(min(batch, n-i), queues[(i/batch)%len(queues)])
		for k, j := range js {
			switch r := (i + k) % 10; {
			case r < 6: // becomes completed below
			case r < 9:
			default:
				j.RunAt, j.State = bt0.Add(time.Duration(1+k)*time.Hour), job.StateScheduled
			}
		}
		bEnqueue(b, s, js)
		// Complete the first 60%: claim and finish them.
		for left := len(js) * 6 / 10; left > 0; left -= min(left, 100) {
			bFinish(b, s, bClaim(b, s, min(left, 100), queues[(i/batch)%len(queues)]), job.StateCompleted)
		}
	}
	if err := s.Close(); err != nil {
		b.Fatal(err)
	}
	fi, _ := os.Stat(path)
	b.Logf("built %s: %d jobs, %d MB, in %s", path, n, fi.Size()>>20, time.Since(start).Round(time.Millisecond))
	scaleFiles.paths[n] = path
	return path
}

// BenchmarkScale: the same operations on a file of 10k and of 1M jobs.
func BenchmarkScale(b *testing.B) {
	for _, n := range []int{10_000, 1_000_000} {
		name := fmt.Sprintf("rows=%dk", n/1000)
		b.Run(name+"/Claim100", func(b *testing.B) {
			s := bOpen(b, scaleFile(b, n), Options{})
			defer s.Close()
			b.ResetTimer()
			for range b.N {
				claimed := bClaim(b, s, 100)
				b.StopTimer()
				bUnclaim(b, s, claimed) // the file stays the same
				b.StartTimer()
			}
		})
		for _, since := range []bool{false, true} {
			b.Run(fmt.Sprintf("%s/Stats/finishedSince=%v", name, since), func(b *testing.B) {
				s := bOpen(b, scaleFile(b, n), Options{})
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
		b.Run(name+"/Enqueue100", func(b *testing.B) {
			s := bOpen(b, scaleFile(b, n), Options{})
			defer s.Close()
			var first job.ID
			js := bJobs(100, "default")
			b.ResetTimer()
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
					bDeleteFrom(b, s, first)
					b.StartTimer()
				}
			}
			b.StopTimer()
			bDeleteFrom(b, s, first)
		})
	}
}

// bUnclaim puts claimed jobs back as they were before the claim.
func bUnclaim(b *testing.B, s *Store, js []*job.Job) {
	ids := make([]job.ID, len(js))
	for i, j := range js {
		ids[i] = j.ID
	}
	err := s.write(context.Background(), func(w *writer) error {
		_, err := w.exec(`UPDATE jobs SET state = 'available', attempt = 0, started_at = 0, worker = NULL,
			claimed_by = NULL, lease_until = 0 WHERE id IN (SELECT value FROM json_each(?))`, idList(ids))
		return err
	})
	if err != nil {
		b.Fatal(err)
	}
}

func bDeleteFrom(b *testing.B, s *Store, id job.ID) {
	err := s.write(context.Background(), func(w *writer) error {
		_, err := w.exec(`DELETE FROM jobs WHERE id >= ?`, int64(id))
		return err
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
