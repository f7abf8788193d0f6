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

// TestLeaderAcrossStores: Stores on the same file (as processes would be)
// asking to lead at the same moment elect exactly one of them; once it
// resigns, another takes over in the next term.
func TestLeaderAcrossStores(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "hopper.db")
	stores := []*sqlitestore.Store{open(t, path, sqlitestore.Options{}), open(t, path, sqlitestore.Options{}), open(t, path, sqlitestore.Options{})}
	results := make([]store.LeadResult, len(stores))
	var wg sync.WaitGroup
	for i, s := range stores {
		wg.Go(func() {
			res, err := s.Lead(t.Context(), store.LeadParams{Now: t0, Name: "maintenance", Holder: s.WorkerID(), TTL: 10 * time.Second})
			if err != nil {
				t.Errorf("Lead by Store %d: %v", i, err)
			}
			results[i] = res
		})
	}
	wg.Wait()
	var leader *sqlitestore.Store
	for i, res := range results {
		if res.Term != 1 || !res.Until.Equal(t0.Add(10*time.Second)) || res.Leader != (res.Holder == stores[i].WorkerID()) {
			t.Errorf("Store %d: %+v, want term 1 until %v", i, res, t0.Add(10*time.Second))
		}
		if res.Leader {
			if leader != nil {
				t.Fatalf("two leaders: %s and %s", leader.WorkerID(), stores[i].WorkerID())
			}
			leader = stores[i]
		}
	}
	if leader == nil {
		t.Fatalf("no leader: %+v", results)
	}
	for i, res := range results {
		if res.Holder != leader.WorkerID() {
			t.Errorf("Store %d sees holder %s, want %s", i, res.Holder, leader.WorkerID())
		}
	}

	if err := leader.Resign(t.Context(), store.LeadParams{Now: t0.Add(time.Second), Name: "maintenance", Holder: leader.WorkerID(), Term: 1}); err != nil {
		t.Fatal(err)
	}
	next := stores[0]
	if next == leader {
		next = stores[1]
	}
	res, err := next.Lead(t.Context(), store.LeadParams{Now: t0.Add(2 * time.Second), Name: "maintenance", Holder: next.WorkerID(), TTL: 10 * time.Second})
	if err != nil || !res.Leader || res.Term != 2 {
		t.Errorf("Lead after the leader resigned: %+v, %v; want %s leading in term 2", res, err, next.WorkerID())
	}
}
