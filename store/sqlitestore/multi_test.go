package sqlitestore_test

import (
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/hopperq/hopper/job"
	"github.com/hopperq/hopper/store"
	"github.com/hopperq/hopper/store/sqlitestore"
)

// TestTwoStoresNeverClaimTwice: Stores on the same file (as two processes
// would be) claiming concurrently never get the same job.
func TestTwoStoresNeverClaimTwice(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "hopper.db")
	stores := []*sqlitestore.Store{open(t, path, sqlitestore.Options{}), open(t, path, sqlitestore.Options{})}
	const n = 600
	js := make([]*job.Job, n)
	for i := range js {
		js[i] = newJob(t, "k")
	}
	enqueue(t, stores[0], js...)

	var (
		mu      sync.Mutex
		claimed = make(map[job.ID]string)
		wg      sync.WaitGroup
	)
	for g := range 6 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			s := stores[g%2]
			for {
				res, err := s.Claim(t.Context(), store.ClaimParams{Now: t0, Limit: 7, Worker: s.WorkerID(), LeaseUntil: t0.Add(time.Hour)})
				if err != nil {
					t.Error(err)
					return
				}
				if len(res.Jobs) == 0 {
					return
				}
				mu.Lock()
				for _, j := range res.Jobs {
					if prev, dup := claimed[j.ID]; dup {
						t.Errorf("job %d claimed by %s and again by %s", j.ID, prev, s.WorkerID())
					}
					claimed[j.ID] = s.WorkerID()
				}
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	if len(claimed) != n {
		t.Errorf("claimed %d distinct jobs, want %d", len(claimed), n)
	}
	perStore := map[string]int{}
	for _, w := range claimed {
		perStore[w]++
	}
	t.Logf("claims per store: %v", perStore)
}
