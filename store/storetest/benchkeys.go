package storetest

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/hopperq/hopper/job"
	"github.com/hopperq/hopper/store"
)

// BenchKeyBacklog measures the claim of a keyed queue (a limit of 1 per
// key) behind a blocked backlog: backlog jobs of one hot key wait while
// its one slot is held, and each op claims (Limit 1) and completes one job
// of another key, each key with one job. Case "blocked=0" has no backlog,
// "blocked=N" the backlog; the ratio of their claims/s is the head-of-line
// cost (issue 21's "no head-of-line cliff"); claim-µs-p50 and -p99 are
// the Claim calls' own times, without the Finish. Each case gets a fresh
// store from newStore, filled untimed.
func BenchKeyBacklog(b *testing.B, backlog int, newStore func(b *testing.B) store.Store) {
	for _, n := range []int{0, backlog} {
		b.Run(fmt.Sprintf("blocked=%d", n), func(b *testing.B) {
			s := newStore(b)
			keyBacklog(b, s, n, b.N, func(i int) string { return fmt.Sprintf("k%09d", i) })
			b.ResetTimer()
			took, total := keyOps(b, s, b.N)
			b.ReportMetric(float64(b.N)/total.Seconds(), "claims/s")
			b.ReportMetric(float64(took[len(took)/2].Microseconds()), "claim-µs-p50")
			b.ReportMetric(float64(took[len(took)*99/100].Microseconds()), "claim-µs-p99")
		})
	}
}

// keyBacklog fills s for the key-backlog measures: queue "q" limited to 1
// per key, blocked jobs of the key "hot" waiting behind its one running
// job (none if blocked is 0), and then others jobs, the i-th of key(i).
func keyBacklog(tb testing.TB, s store.Store, blocked, others int, key func(i int) string) {
	tb.Helper()
	ctx := context.Background()
	one := 1
	if _, err := s.(store.QueueControl).SetQueue(ctx, store.SetQueueParams{Now: t0, Name: "q", KeyConcurrency: &one}); err != nil {
		tb.Fatal(err)
	}
	fill := func(count int, key func(i int) string) {
		for i := 0; i < count; i += 1000 {
			jobs := make([]*job.Job, 0, 1000)
			for k := i; k < min(count, i+1000); k++ {
				j := &job.Job{Kind: "k", Queue: "q", MaxAttempts: maxAttempts, Key: key(k)}
				if err := j.Validate(t0); err != nil {
					tb.Fatal(err)
				}
				jobs = append(jobs, j)
			}
			if _, err := s.Enqueue(ctx, store.EnqueueParams{Now: t0, Jobs: jobs}); err != nil {
				tb.Fatal(err)
			}
		}
	}
	if blocked > 0 {
		fill(blocked+1, func(int) string { return "hot" })
		// The hot key's one slot is taken: its backlog is blocked.
		res, err := s.Claim(ctx, store.ClaimParams{Now: t0, Limit: 1, Worker: worker1, LeaseUntil: t0.Add(time.Hour),
			Queues: []string{"q"}})
		if err != nil || len(res.Jobs) != 1 || res.Jobs[0].Key != "hot" {
			tb.Fatalf("Claim of the hot key: %v, %v", res.Jobs, err)
		}
	}
	fill(others, key)
}

// keyOps runs n ops on s as keyBacklog filled it: each claims one job of
// queue "q" (Limit 1; never one of the hot key) and completes it. It
// returns the Claim calls' times, sorted, and the ops' whole time.
func keyOps(tb testing.TB, s store.Store, n int) (took []time.Duration, total time.Duration) {
	tb.Helper()
	ctx := context.Background()
	took = make([]time.Duration, 0, n)
	start := time.Now()
	for i := range n {
		now := t0.Add(time.Duration(i+1) * time.Microsecond)
		began := time.Now()
		res, err := s.Claim(ctx, store.ClaimParams{Now: now, Limit: 1, Worker: worker1, LeaseUntil: now.Add(time.Hour),
			Queues: []string{"q"}})
		took = append(took, time.Since(began))
		if err != nil || len(res.Jobs) != 1 || res.Jobs[0].Key == "hot" {
			tb.Fatalf("Claim %d: %v, %v", i, res.Jobs, err)
		}
		j := res.Jobs[0]
		if _, err := s.Finish(ctx, store.FinishParams{Now: now, Outcomes: []store.Outcome{{ID: j.ID, Attempt: j.Attempt,
			State: job.StateCompleted, Record: job.Attempt{Attempt: j.Attempt, StartedAt: now, Outcome: "completed"}}}}); err != nil {
			tb.Fatal(err)
		}
	}
	total = time.Since(start)
	slices.Sort(took)
	return took, total
}

// HeadOfLine is issue 21's acceptance 5 ("no head-of-line cliff"): on a
// store from newStore, 1,000,000 jobs of one key blocked behind its limit
// of 1, then others jobs enqueued after them — every other one of a key
// of its own, the rest without a key (a keyed queue's keyless jobs) —
// each claimed (Limit 1, the queue named) and completed in turn; and the
// same on a store without the blocked jobs. settle, if not nil, runs once
// a store is filled (a VACUUM ANALYZE: the database's upkeep of the fill
// is not measured). It logs the claims per second of Claim time (the
// Claim calls alone), the ops per second (a Claim and a Finish each) and
// the Claim calls' p50 and p99, and fails unless the blocked run's claim
// rate is ≥ 90% of the other's and its p99 ≤ 2× the other's.
func HeadOfLine(t *testing.T, others int, newStore func(t testing.TB) store.Store, settle func(store.Store)) {
	t.Helper()
	run := func(blocked int) (claims, ops float64, p50, p99 time.Duration) {
		s := newStore(t)
		keyBacklog(t, s, blocked, others, func(i int) string {
			if i%2 == 0 {
				return fmt.Sprintf("k%09d", i)
			}
			return ""
		})
		if settle != nil {
			settle(s)
		}
		took, total := keyOps(t, s, others)
		var claiming time.Duration
		for _, d := range took {
			claiming += d
		}
		return float64(others) / claiming.Seconds(), float64(others) / total.Seconds(), took[len(took)/2], took[len(took)*99/100]
	}
	rate0, ops0, m0, p0 := run(0)
	rate1, ops1, m1, p1 := run(1_000_000)
	t.Logf("head of line: empty %.0f claims/s of Claim time (%.0f ops/s), p50 %v, p99 %v; "+
		"1,000,000 blocked %.0f claims/s (%.0f%%; %.0f ops/s), p50 %v, p99 %v (%.2f×)",
		rate0, ops0, m0, p0, rate1, 100*rate1/rate0, ops1, m1, p1, float64(p1)/float64(p0))
	if rate1 < 0.9*rate0 || p1 > 2*p0 {
		t.Errorf("behind 1,000,000 blocked jobs: %.0f%% of the claim rate (want ≥ 90%%), p99 %.2f× (want ≤ 2×)",
			100*rate1/rate0, float64(p1)/float64(p0))
	}
}
