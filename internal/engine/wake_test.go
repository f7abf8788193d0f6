package engine

import (
	"context"
	"log/slog"
	"testing"
	"testing/synctest"
	"time"

	"github.com/hopperq/hopper/job"
	"github.com/hopperq/hopper/store/memstore"
)

// TestDispatchCoalescesWakeups: an enqueue wakes the dispatcher twice, by
// the client's Notify and by the store's notification of its commit. Both
// arrive while a claim runs that takes the job; the dispatcher then claims
// once more, not once per wake-up (with PostgreSQL each claim is a round
// trip, and the empty ones were a third to two thirds of all under
// steady single enqueues, issue 19).
func TestDispatchCoalescesWakeups(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		now := time.Now()
		st := &gatedStore{Store: memstore.New(), claimGate: make(chan struct{})}
		wake := make(chan struct{}, 1)
		hold := make(chan struct{})
		e := New(Config{Store: st, Workers: 4, Kinds: []string{"k"}, LeaseDuration: time.Minute,
			Now: time.Now, Logger: slog.New(slog.DiscardHandler), Wake: wake,
			Resolve: func(*job.Job) (Handler, Settings, error) {
				return func(context.Context, *job.Job) ([]byte, error) { <-hold; return nil, nil }, Settings{}, nil
			}})
		e.Start()
		synctest.Wait() // the first claim waits at the gate
		enqueueK(t, st, now, 1, 1)
		e.Notify()
		wake <- struct{}{}
		close(st.claimGate) // the claim takes the job
		synctest.Wait()
		if got := st.claims.Load(); got != 2 {
			t.Errorf("%d claims, want 2: the one that took the job, and one for both wake-ups that came during it", got)
		}
		close(hold)
		e.Stop(context.Background())
	})
}
