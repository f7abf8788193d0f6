package engine

import (
	"context"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/hopperq/hopper/store/memstore"
)

// TestSlotsFreedBeforeFinish: with a durable store, a worker whose outcome
// is being written takes the next job meanwhile: the dispatcher's claim
// does not wait for the Finish.
func TestSlotsFreedBeforeFinish(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		// Claims take a millisecond, as a durable store's commit (the
		// completer leaves them to the dispatcher); the first Finish waits.
		st := &gatedStore{Store: memstore.New(), claimDelay: time.Millisecond, finishGate: make(chan struct{})}
		enqueueK(t, st, time.Now(), 2, 1)
		var ran atomic.Int64
		e := countingEngine(st, 1, &ran)
		e.Start()
		defer e.Stop(context.Background())
		defer close(st.finishGate) // before Stop, which waits for the Finish
		time.Sleep(10 * time.Millisecond)
		synctest.Wait()
		if n, f := ran.Load(), st.finishes.Load(); n != 2 || f < 1 {
			t.Fatalf("while the first outcome's Finish waits: %d jobs run, %d Finish calls; want 2 run", n, f)
		}
	})
}
