package memstore

import (
	"context"
	"math/rand/v2"
	"runtime"
	"testing"
	"time"

	"github.com/hopperq/hopper/job"
	"github.com/hopperq/hopper/store"
	"github.com/hopperq/hopper/store/storetest"
)

var t0 = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

// fill enqueues n waiting jobs (no args) in batches, spread over the next
// hour so both heaps are exercised.
func fill(b *testing.B, s *Store, n int) {
	b.Helper()
	ctx := context.Background()
	batch := make([]*job.Job, 0, 1000)
	for i := range n {
		j := &job.Job{Kind: "email", Queue: job.DefaultQueue, MaxAttempts: 25, RunAt: t0.Add(time.Duration(i%3600) * time.Second)}
		if err := j.Validate(t0); err != nil {
			b.Fatal(err)
		}
		batch = append(batch, j)
		if len(batch) == cap(batch) || i == n-1 {
			if _, err := s.Enqueue(ctx, store.EnqueueParams{Now: t0, Jobs: batch}); err != nil {
				b.Fatal(err)
			}
			batch = batch[:0]
		}
	}
}

func heapInUse() uint64 {
	runtime.GC()
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.HeapAlloc
}

// BenchmarkMemoryPerWaitingJob reports the heap bytes one waiting job costs
// (args excluded: these jobs have none) with 1M jobs waiting.
func BenchmarkMemoryPerWaitingJob(b *testing.B) {
	const n = 1_000_000
	for range b.N {
		before := heapInUse()
		s := New()
		fill(b, s, n)
		after := heapInUse()
		b.ReportMetric(float64(after-before)/n, "bytes/job")
		runtime.KeepAlive(s)
	}
}

// BenchmarkMemoryPerCompletedJob reports the heap bytes one completed job
// costs while retention keeps it: 1M jobs (no args, no result) claimed and
// completed at their first attempt, as a worker pool records them.
func BenchmarkMemoryPerCompletedJob(b *testing.B) {
	const n = 1_000_000
	ctx := context.Background()
	for range b.N {
		base := heapInUse()
		s := New()
		fill(b, s, n)
		at := t0.Add(time.Hour)
		for {
			res, err := s.Claim(ctx, store.ClaimParams{Now: at, Limit: 1000, Worker: "w", LeaseUntil: at.Add(time.Minute)})
			if err != nil {
				b.Fatal(err)
			}
			if len(res.Jobs) == 0 {
				break
			}
			outs := make([]store.Outcome, len(res.Jobs))
			for i, j := range res.Jobs {
				outs[i] = store.Outcome{ID: j.ID, Attempt: j.Attempt, Claim: j.Claims, State: job.StateCompleted,
					Record: job.Attempt{Attempt: j.Attempt, StartedAt: j.StartedAt, Duration: time.Millisecond, Worker: j.Worker, Outcome: "completed"}}
			}
			if _, err := s.Finish(ctx, store.FinishParams{Now: at, Outcomes: outs}); err != nil {
				b.Fatal(err)
			}
		}
		after := heapInUse()
		b.ReportMetric(float64(after-base)/n, "bytes/job")
		runtime.KeepAlive(s)
	}
}

// BenchmarkCancel1M cancels random jobs out of 1M waiting ones.
func BenchmarkCancel1M(b *testing.B) {
	const n = 1_000_000
	s := New()
	fill(b, s, n)
	ids := rand.Perm(n)
	ctx := context.Background()
	b.ResetTimer()
	for i := range b.N {
		if i == n {
			b.StopTimer()
			s = New()
			fill(b, s, n)
			b.StartTimer()
		}
		if _, err := s.Cancel(ctx, store.CancelParams{Now: t0, ID: job.ID(ids[i%n] + 1)}); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkReschedule1M moves random jobs among 1M waiting ones to a new
// time and priority.
func BenchmarkReschedule1M(b *testing.B) {
	const n = 1_000_000
	s := New()
	fill(b, s, n)
	ctx := context.Background()
	rng := rand.New(rand.NewPCG(1, 2))
	b.ResetTimer()
	for range b.N {
		p := rng.IntN(100) - 50
		_, err := s.Reschedule(ctx, store.RescheduleParams{
			Now: t0, ID: job.ID(rng.IntN(n) + 1),
			RunAt: t0.Add(time.Duration(rng.IntN(7200)) * time.Second), Priority: &p,
		})
		if err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkEnqueueClaimFinish is the store's share of one job's life, in
// batches of 100.
func BenchmarkEnqueueClaimFinish(b *testing.B) {
	s := New()
	ctx := context.Background()
	const batch = 100
	jobs := make([]*job.Job, batch)
	outs := make([]store.Outcome, batch)
	b.ReportAllocs()
	for i := 0; i < b.N; i += batch {
		for k := range jobs {
			jobs[k] = &job.Job{Kind: "k", Queue: "default", MaxAttempts: 1, RunAt: t0, CreatedAt: t0, State: job.StateAvailable}
		}
		s.Enqueue(ctx, store.EnqueueParams{Now: t0, Jobs: jobs})
		res, _ := s.Claim(ctx, store.ClaimParams{Now: t0, Limit: batch, Worker: "w", LeaseUntil: t0.Add(time.Minute)})
		for k, j := range res.Jobs {
			outs[k] = store.Outcome{ID: j.ID, Attempt: j.Attempt, Claim: j.Claims, State: job.StateCompleted}
		}
		s.Finish(ctx, store.FinishParams{Now: t0, Outcomes: outs[:len(res.Jobs)]})
	}
}

// BenchmarkBacklog is the store's share of draining a backlog: b.N jobs
// enqueued in batches of 1,000, then all claimed and finished in batches
// of 100 (run with -benchtime 1000000x for a backlog of a million).
func BenchmarkBacklog(b *testing.B) {
	s := New()
	ctx := context.Background()
	jobs := make([]*job.Job, 1000)
	outs := make([]store.Outcome, 100)
	b.ReportAllocs()
	for i := 0; i < b.N; i += len(jobs) {
		n := min(len(jobs), b.N-i)
		for k := range n {
			jobs[k] = &job.Job{Kind: "k", Queue: "default", MaxAttempts: 1, RunAt: t0, CreatedAt: t0, State: job.StateAvailable}
		}
		if _, err := s.Enqueue(ctx, store.EnqueueParams{Now: t0, Jobs: jobs[:n]}); err != nil {
			b.Fatal(err)
		}
	}
	for done := 0; done < b.N; {
		res, err := s.Claim(ctx, store.ClaimParams{Now: t0, Limit: len(outs), Worker: "w", LeaseUntil: t0.Add(time.Minute)})
		if err != nil || len(res.Jobs) == 0 {
			b.Fatalf("claim after %d of %d: %v", done, b.N, err)
		}
		for k, j := range res.Jobs {
			outs[k] = store.Outcome{ID: j.ID, Attempt: j.Attempt, Claim: j.Claims, State: job.StateCompleted}
		}
		if _, err := s.Finish(ctx, store.FinishParams{Now: t0, Outcomes: outs[:len(res.Jobs)]}); err != nil {
			b.Fatal(err)
		}
		done += len(res.Jobs)
	}
}

// BenchmarkKeyBacklog: claims of a keyed queue with and without 100,000
// jobs blocked behind a key at its limit of 1 (storetest.BenchKeyBacklog):
//
//	go test -run '^$' -bench KeyBacklog ./store/memstore/
func BenchmarkKeyBacklog(b *testing.B) {
	storetest.BenchKeyBacklog(b, 100_000, func(b *testing.B) store.Store { return New() })
}
