package pgstore_test

import (
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/hopperq/hopper/job"
	"github.com/hopperq/hopper/store"
	"github.com/hopperq/hopper/store/pgstore"
)

// TestManyStoresNeverClaimTwice: Stores on one schema (as processes would
// be) claiming concurrently, with queue filters, queue limits and kinds,
// never get the same job, and together get every job.
func TestManyStoresNeverClaimTwice(t *testing.T) {
	t.Parallel()
	schema := freshSchema(t)
	stores := make([]*pgstore.Store, 3)
	for i := range stores {
		stores[i] = openIn(t, schema, pgstore.Options{PoolSize: 3, Worker: fmt.Sprintf("store-%d", i)})
	}
	const n = 3000
	queues := []string{"a", "b", "c"}
	var js []*job.Job
	for i := range n {
		j := &job.Job{Kind: []string{"x", "y"}[i%2], Queue: queues[i%3], MaxAttempts: 1, Priority: i % 4}
		if err := j.Validate(t0); err != nil {
			t.Fatal(err)
		}
		js = append(js, j)
	}
	for i := 0; i < n; i += 1000 {
		enqueue(t, stores[0], js[i:i+1000]...)
	}
	var (
		mu      sync.Mutex
		claimed = make(map[job.ID]string)
		wg      sync.WaitGroup
	)
	for g := range 9 {
		wg.Go(func() {
			s := stores[g%3]
			p := store.ClaimParams{Now: t0, Limit: 1 + g%7, Worker: fmt.Sprintf("%s/%d", s.WorkerID(), g), LeaseUntil: t0.Add(time.Hour)}
			switch g % 3 {
			case 1:
				p.Queues = queues
				p.QueueLimits = map[string]int{"a": 2}
			case 2:
				p.Kinds = []string{"x", "y"}
			}
			for {
				res, err := s.Claim(t.Context(), p)
				if err != nil {
					t.Error(err)
					return
				}
				if len(res.Jobs) == 0 {
					return
				}
				if len(res.Jobs) > p.Limit {
					t.Errorf("Claim with limit %d: got %d jobs", p.Limit, len(res.Jobs))
				}
				mu.Lock()
				for _, j := range res.Jobs {
					if prev, dup := claimed[j.ID]; dup {
						t.Errorf("job %d claimed by %s and again by %s", j.ID, prev, p.Worker)
					}
					claimed[j.ID] = p.Worker
				}
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	if len(claimed) != n {
		t.Errorf("claimed %d distinct jobs, want %d", len(claimed), n)
	}
	if c, err := stores[1].Count(t.Context(), store.ListParams{States: []job.State{job.StateRunning}}); err != nil || c != n {
		t.Errorf("running jobs: %d, %v, want %d", c, err, n)
	}
}
