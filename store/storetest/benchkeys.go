package storetest

import (
	"context"
	"fmt"
	"os"
	"slices"
	"strconv"
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
// cost (issue 21's "no head-of-line cliff"). Each case gets a fresh store
// from newStore, filled untimed. Besides claims/s (claim and complete),
// it reports the median and the 99th percentile of the claims alone
// (p50-ms, p99-ms).
//
// The environment variable HOPPER_KEY_BACKLOG, if set, replaces backlog
// (e.g. HOPPER_KEY_BACKLOG=1000000, issue 21's full size).
func BenchKeyBacklog(b *testing.B, backlog int, newStore func(b *testing.B) store.Store) {
	backlog = keyBacklog(b, backlog)
	for _, n := range []int{0, backlog} {
		b.Run(fmt.Sprintf("blocked=%d", n), func(b *testing.B) {
			ctx := context.Background()
			s := newStore(b)
			qc := s.(store.QueueControl)
			one := 1
			if _, err := qc.SetQueue(ctx, store.SetQueueParams{Now: t0, Name: "q", KeyConcurrency: &one}); err != nil {
				b.Fatal(err)
			}
			fill := func(count int, key func(i int) string) { fillKeyed(b, s, count, key) }
			if n > 0 {
				fill(n+1, func(int) string { return "hot" })
				// The hot key's one slot is taken: its backlog is blocked.
				res, err := s.Claim(ctx, store.ClaimParams{Now: t0, Limit: 1, Worker: worker1, LeaseUntil: t0.Add(time.Hour),
					Queues: []string{"q"}})
				if err != nil || len(res.Jobs) != 1 || res.Jobs[0].Key != "hot" {
					b.Fatalf("Claim of the hot key: %v, %v", res.Jobs, err)
				}
			}
			fill(b.N, func(i int) string { return fmt.Sprintf("k%09d", i) })
			claimRounds(b, s, claimQ(b, s, 1), func(i int, got []*job.Job) {
				if len(got) != 1 || got[0].Key == "hot" {
					b.Fatalf("Claim %d: %v", i, got)
				}
			})
		})
	}
}

// keyBacklog is backlog, or HOPPER_KEY_BACKLOG if set.
func keyBacklog(b *testing.B, backlog int) int {
	if v := os.Getenv("HOPPER_KEY_BACKLOG"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 0 {
			b.Fatalf("HOPPER_KEY_BACKLOG=%q: not a count of jobs", v)
		}
		return n
	}
	return backlog
}

// fillKeyed enqueues count jobs of queue "q" into s, job i of key key(i),
// a thousand a call.
func fillKeyed(b *testing.B, s store.Store, count int, key func(i int) string) {
	for i := 0; i < count; i += 1000 {
		jobs := make([]*job.Job, 0, 1000)
		for k := i; k < min(count, i+1000); k++ {
			j := &job.Job{Kind: "k", Queue: "q", MaxAttempts: maxAttempts, Key: key(k)}
			if err := j.Validate(t0); err != nil {
				b.Fatal(err)
			}
			jobs = append(jobs, j)
		}
		if _, err := s.Enqueue(context.Background(), store.EnqueueParams{Now: t0, Jobs: jobs}); err != nil {
			b.Fatal(err)
		}
	}
}

// reportClaims reports b.N ops since start as claims/s, and the median
// and 99th percentile of the claims' latencies lat (p50-ms, p99-ms).
func reportClaims(b *testing.B, start time.Time, lat []time.Duration) {
	b.ReportMetric(float64(b.N)/time.Since(start).Seconds(), "claims/s")
	slices.Sort(lat)
	ms := func(q float64) float64 { return float64(lat[int(q*float64(b.N-1))]) / float64(time.Millisecond) }
	b.ReportMetric(ms(0.50), "p50-ms")
	b.ReportMetric(ms(0.99), "p99-ms")
}

// BenchKeyBacklogWrap measures the claim of a keyed queue (a limit of 1 per
// key) whose walk wraps around at every claim: a hot key at its limit
// holds backlog available jobs (HOPPER_KEY_BACKLOG replaces it), 3 cold
// keys one job each a claim, and each op claims up to 10 jobs — the 3 —
// and completes them. No job is keyless: the walk visits "" at every
// claim and finds none (decision 105). It reports what BenchKeyBacklog
// does.
func BenchKeyBacklogWrap(b *testing.B, backlog int, s store.Store) {
	backlog = keyBacklog(b, backlog)
	ctx := context.Background()
	one := 1
	if _, err := s.(store.QueueControl).SetQueue(ctx, store.SetQueueParams{Now: t0, Name: "q", KeyConcurrency: &one}); err != nil {
		b.Fatal(err)
	}
	fillKeyed(b, s, backlog+1, func(int) string { return "hot" })
	claim := claimQ(b, s, 10)
	if got := claim(t0); len(got) != 1 || got[0].Key != "hot" {
		b.Fatalf("the claim of the hot key: %v", got)
	}
	fillKeyed(b, s, 3*b.N, func(i int) string { return fmt.Sprintf("c%d", i%3) })
	claimRounds(b, s, claim, func(i int, got []*job.Job) {
		if len(got) != 3 {
			b.Fatalf("claim %d: %d jobs, want the 3 cold keys'", i, len(got))
		}
	})
}

// claimQ returns a claim of up to limit jobs of queue "q" from s, at its
// now, for worker1 with a lease of an hour.
func claimQ(b *testing.B, s store.Store, limit int) func(now time.Time) []*job.Job {
	return func(now time.Time) []*job.Job {
		res, err := s.Claim(context.Background(), store.ClaimParams{Now: now, Limit: limit, Worker: worker1,
			LeaseUntil: now.Add(time.Hour), Queues: []string{"q"}})
		if err != nil {
			b.Fatal(err)
		}
		return res.Jobs
	}
}

// claimRounds runs b.N ops on s, op i at now = t0 + (i+1) µs: claim, timed,
// check of the jobs it took, and a Finish that completes them; then it
// reports them (reportClaims).
func claimRounds(b *testing.B, s store.Store, claim func(now time.Time) []*job.Job, check func(i int, got []*job.Job)) {
	lat := make([]time.Duration, b.N)
	b.ResetTimer()
	start := time.Now()
	for i := range b.N {
		now := t0.Add(time.Duration(i+1) * time.Microsecond)
		began := time.Now()
		got := claim(now)
		lat[i] = time.Since(began)
		check(i, got)
		out := make([]store.Outcome, len(got))
		for k, j := range got {
			out[k] = store.Outcome{ID: j.ID, Attempt: j.Attempt, Claim: j.Claims, State: job.StateCompleted,
				Record: job.Attempt{Attempt: j.Attempt, StartedAt: now, Outcome: "completed"}}
		}
		if _, err := s.Finish(context.Background(), store.FinishParams{Now: now, Outcomes: out}); err != nil {
			b.Fatal(err)
		}
	}
	reportClaims(b, start, lat)
}
