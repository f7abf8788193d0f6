package storetest

import (
	"sync"
	"testing"

	"github.com/hopperq/hopper/job"
	"github.com/hopperq/hopper/store"
)

const goroutines = 8

func concurrencyCases() []testCase {
	return []testCase{
		{"NoDoubleDeliveryUnderConcurrentClaims", func(t *testing.T, e *env) {
			const n = 2000
			var want []job.ID
			for b := 0; b < n; b += 500 {
				batch := make([]*job.Job, 500)
				for i := range batch {
					batch[i] = &job.Job{Kind: "k", Priority: (b + i) % 3, RunAt: at(-(b + i) % 7)}
				}
				for _, r := range e.enqueue(t0, batch...) {
					want = append(want, r.ID)
				}
			}
			claimed := make([][]job.ID, goroutines)
			var wg sync.WaitGroup
			for g := range goroutines {
				wg.Go(func() {
					for i := 0; ; i++ {
						limit := 1 + (g*5+i*3)%16
						res, err := e.s.Claim(e.ctx, store.ClaimParams{Now: t0, Limit: limit, Worker: "w", LeaseUntil: at(60000)})
						if err != nil {
							t.Errorf("goroutine %d: Claim: %v", g, err)
							return
						}
						if len(res.Jobs) > limit {
							t.Errorf("goroutine %d: Claim with limit %d: got %d jobs", g, limit, len(res.Jobs))
						}
						if len(res.Jobs) == 0 {
							return
						}
						for _, j := range res.Jobs {
							if j.State != job.StateRunning || j.Attempt != 1 {
								t.Errorf("goroutine %d: claimed job %d in state %s attempt %d, want running 1", g, j.ID, j.State, j.Attempt)
							}
							claimed[g] = append(claimed[g], j.ID)
						}
					}
				})
			}
			wg.Wait()
			count := make(map[job.ID]int, n)
			for _, ids := range claimed {
				for _, id := range ids {
					count[id]++
				}
			}
			for _, id := range want {
				if count[id] != 1 {
					t.Errorf("job %d: claimed %d times, want 1", id, count[id])
				}
				delete(count, id)
			}
			for id, c := range count {
				t.Errorf("job %d: claimed %d times but never enqueued", id, c)
			}
			if st := e.stats(store.StatsParams{Now: t0}); st.ByQueue[job.DefaultQueue][job.StateRunning] != n {
				t.Errorf("Stats: got %d running, want %d", st.ByQueue[job.DefaultQueue][job.StateRunning], n)
			}
		}},
		{"ConcurrentFireScheduleFiresOnce", func(t *testing.T, e *env) {
			s := newSchedule("s", at(60000))
			e.addSchedule(s)
			params := make([]store.FireScheduleParams, goroutines)
			for g := range params {
				params[g] = fireParams(t, s, at(60000), at(60000), at(120000))
			}
			results := make([]store.FireResult, goroutines)
			var wg sync.WaitGroup
			for g := range goroutines {
				wg.Go(func() {
					r, err := e.s.FireSchedule(e.ctx, params[g])
					if err != nil {
						t.Errorf("goroutine %d: FireSchedule: %v", g, err)
					}
					results[g] = r
				})
			}
			wg.Wait()
			var fired []job.ID
			for _, r := range results {
				if r.Fired {
					fired = append(fired, r.ID)
				}
			}
			if len(fired) != 1 {
				t.Fatalf("FireSchedule from %d goroutines: got %d fired %v, want exactly 1", goroutines, len(fired), fired)
			}
			e.wantIDs("after concurrent FireSchedule", fired[0])
			e.wantSchedule("s", at(120000), at(60000), fired[0])
		}},
		{"ConcurrentEnqueueOfOneUniqueKeyInsertsOne", func(t *testing.T, e *env) {
			params := make([]store.EnqueueParams, goroutines)
			for g := range params {
				params[g] = store.EnqueueParams{Now: t0, Jobs: []*job.Job{validated(t, t0, &job.Job{Kind: "k", UniqueKey: "key"})}}
			}
			results := make([]store.EnqueueResult, goroutines)
			var wg sync.WaitGroup
			for g := range goroutines {
				wg.Go(func() {
					res, err := e.s.Enqueue(e.ctx, params[g])
					if err != nil || len(res) != 1 {
						t.Errorf("goroutine %d: Enqueue: got %v, %v, want one result", g, res, err)
						return
					}
					results[g] = res[0]
				})
			}
			wg.Wait()
			var inserted []job.ID
			for _, r := range results {
				if !r.Duplicate {
					inserted = append(inserted, r.ID)
				}
			}
			if len(inserted) != 1 {
				t.Fatalf("Enqueue from %d goroutines: got %d inserted %v, want exactly 1", goroutines, len(inserted), inserted)
			}
			for g, r := range results {
				if r.Duplicate && r.ID != inserted[0] {
					t.Errorf("goroutine %d: got a duplicate of job %d, want of job %d", g, r.ID, inserted[0])
				}
			}
			e.wantIDs("after concurrent Enqueue", inserted[0])
		}},
	}
}
