package storetest

import (
	"context"
	"testing"
	"time"

	"github.com/hopperq/hopper/job"
	"github.com/hopperq/hopper/store"
)

// BenchBulk measures the bulk actions on n matching jobs of queue "bulk"
// (one job in eleven is of queue "other", left alone), each action run
// batch after batch of store.DefaultMatchLimit until the selection is
// exhausted: CancelMatching of available jobs, the same returning the
// jobs it changed (as a client with event subscribers calls it), and
// DeleteMatching of the cancelled jobs. Each iteration gets a fresh store
// from newStore and fills it untimed. It reports jobs/s, the seconds
// the whole action took (s/action) and the CPU time this process spent
// meanwhile (cpu-s/action: on a shared machine it varies much less than
// the wall time; a database server's own is not in it); run it with
// -benchtime 1x for large n.
func BenchBulk(b *testing.B, n int, newStore func(b *testing.B) store.Store) {
	for _, c := range []struct {
		name    string
		prepare bool // cancel the jobs first, untimed
		run     func(s store.Store, p store.MatchParams) (store.MatchResult, error)
		jobs    bool
		want    job.State // of the bulk jobs afterwards; 0: deleted
	}{
		{"cancel", false, func(s store.Store, p store.MatchParams) (store.MatchResult, error) {
			return s.CancelMatching(context.Background(), p)
		}, false, job.StateCancelled},
		{"cancel+jobs", false, func(s store.Store, p store.MatchParams) (store.MatchResult, error) {
			return s.CancelMatching(context.Background(), p)
		}, true, job.StateCancelled},
		{"delete", true, func(s store.Store, p store.MatchParams) (store.MatchResult, error) {
			return s.DeleteMatching(context.Background(), p)
		}, false, 0},
	} {
		b.Run(c.name, func(b *testing.B) {
			var took, cpu time.Duration
			for range b.N {
				b.StopTimer()
				s := newStore(b)
				upto := benchFill(b, s, n)
				p := store.MatchParams{Now: t0, Queue: "bulk", UpTo: upto, ReturnJobs: c.jobs}
				if c.prepare {
					benchMatch(b, s, p, func(s store.Store, p store.MatchParams) (store.MatchResult, error) {
						return s.CancelMatching(context.Background(), p)
					})
				}
				b.StartTimer()
				start, startCPU := time.Now(), cpuTime()
				changed := benchMatch(b, s, p, c.run)
				took, cpu = took+time.Since(start), cpu+cpuTime()-startCPU
				b.StopTimer()
				if changed != n {
					b.Fatalf("%s: changed %d jobs, want %d", c.name, changed, n)
				}
				left, err := s.Count(context.Background(), store.ListParams{Queue: "bulk"})
				if err != nil {
					b.Fatal(err)
				}
				if c.want == 0 && left != 0 {
					b.Fatalf("%s: %d jobs left", c.name, left)
				}
				if c.want != 0 {
					if m, _ := s.Count(context.Background(), store.ListParams{Queue: "bulk", States: []job.State{c.want}}); m != n {
						b.Fatalf("%s: %d jobs %s, want %d", c.name, m, c.want, n)
					}
				}
				if err := s.Close(); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(n*b.N)/took.Seconds(), "jobs/s")
			b.ReportMetric(took.Seconds()/float64(b.N), "s/action")
			b.ReportMetric(cpu.Seconds()/float64(b.N), "cpu-s/action")
		})
	}
}

// benchFill enqueues n available jobs of queue "bulk" and one of queue
// "other" after every ten, in calls of 1,000 jobs, and returns the
// highest ID.
func benchFill(b *testing.B, s store.Store, n int) job.ID {
	b.Helper()
	var last job.ID
	for done := 0; done < n; {
		batch := make([]*job.Job, 0, 1000)
		for len(batch) < cap(batch) && done < n {
			q := "bulk"
			if len(batch)%11 == 10 {
				q = "other"
			} else {
				done++
			}
			j := &job.Job{Kind: "send_email", Queue: q, MaxAttempts: 25, Args: []byte(`{"to":"someone@example.com","n":12345}`)}
			if err := j.Validate(t0); err != nil {
				b.Fatal(err)
			}
			batch = append(batch, j)
		}
		res, err := s.Enqueue(context.Background(), store.EnqueueParams{Now: t0, Jobs: batch})
		if err != nil {
			b.Fatal(err)
		}
		last = res[len(res)-1].ID
	}
	return last
}

// benchMatch runs a bulk action to its end and returns how many jobs it
// changed.
func benchMatch(b *testing.B, s store.Store, p store.MatchParams, run func(store.Store, store.MatchParams) (store.MatchResult, error)) int {
	b.Helper()
	changed := 0
	for {
		res, err := run(s, p)
		if err != nil {
			b.Fatal(err)
		}
		changed += res.Changed
		if p.ReturnJobs && len(res.Jobs) != res.Changed {
			b.Fatalf("%d jobs returned, %d changed", len(res.Jobs), res.Changed)
		}
		if res.Next == 0 {
			return changed
		}
		p.AfterID = res.Next
	}
}
