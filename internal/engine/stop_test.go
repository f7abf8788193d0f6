package engine

import (
	"context"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/hopperq/hopper/job"
	"github.com/hopperq/hopper/store/memstore"
)

// TestJobsClaimedAfterStopAreReleased: jobs whose claim was in flight when
// Stop began reach the workers after it; they are given back without
// running, waiting again with the attempt not counted.
func TestJobsClaimedAfterStopAreReleased(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		st := &gatedStore{Store: memstore.New(), claimGate: make(chan struct{})}
		res := enqueueK(t, st, time.Now(), 2, 3)
		var ran atomic.Int64
		e := countingEngine(st, 2, &ran)
		e.Start()
		synctest.Wait() // the dispatcher's claim waits at the gate
		stopped := make(chan struct{})
		go func() {
			e.Stop(context.Background())
			close(stopped)
		}()
		synctest.Wait()     // Stop has begun: no more claims
		close(st.claimGate) // the claim in flight takes both jobs
		<-stopped
		if n := ran.Load(); n != 0 {
			t.Fatalf("%d jobs ran after Stop began, want 0", n)
		}
		for _, r := range res {
			j, err := st.Get(context.Background(), r.ID)
			if err != nil {
				t.Fatal(err)
			}
			if j.State != job.StateAvailable || j.Attempt != 0 {
				t.Errorf("job %d: %s, attempt %d; want available, attempt 0 (given back)", j.ID, j.State, j.Attempt)
			}
		}
	})
}
