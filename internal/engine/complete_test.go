package engine

import (
	"context"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/hopperq/hopper/job"
	"github.com/hopperq/hopper/store"
	"github.com/hopperq/hopper/store/memstore"
)

// slowStore is a store whose claims take a millisecond (a durable store's
// commit: the completer leaves them to the dispatcher) and whose first
// Finish waits for gate to close.
type slowStore struct {
	store.Store
	gate     chan struct{}
	finishes atomic.Int64
}

func (s *slowStore) Claim(ctx context.Context, p store.ClaimParams) (store.ClaimResult, error) {
	time.Sleep(time.Millisecond)
	return s.Store.Claim(ctx, p)
}

func (s *slowStore) Finish(ctx context.Context, p store.FinishParams) ([]job.State, error) {
	if s.finishes.Add(1) == 1 {
		<-s.gate
	}
	return s.Store.Finish(ctx, p)
}

// TestSlotsFreedBeforeFinish: with a durable store, a worker whose outcome
// is being written takes the next job meanwhile: the dispatcher's claim
// does not wait for the Finish.
func TestSlotsFreedBeforeFinish(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		st := &slowStore{Store: memstore.New(), gate: make(chan struct{})}
		enqueueK(t, st, time.Now(), 2, 1)
		var ran atomic.Int64
		e := countingEngine(st, 1, &ran)
		e.Start()
		defer e.Stop(context.Background())
		defer close(st.gate) // before Stop, which waits for the Finish
		time.Sleep(10 * time.Millisecond)
		synctest.Wait()
		if n, f := ran.Load(), st.finishes.Load(); n != 2 || f < 1 {
			t.Fatalf("while the first outcome's Finish waits: %d jobs run, %d Finish calls; want 2 run", n, f)
		}
	})
}
