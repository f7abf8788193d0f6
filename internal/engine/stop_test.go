package engine

import (
	"context"
	"log/slog"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/hopperq/hopper/job"
	"github.com/hopperq/hopper/store"
	"github.com/hopperq/hopper/store/memstore"
)

// gatedClaims is a store whose first claim waits for gate to close.
type gatedClaims struct {
	store.Store
	gate  chan struct{}
	calls atomic.Int64
}

func (s *gatedClaims) Claim(ctx context.Context, p store.ClaimParams) (store.ClaimResult, error) {
	if s.calls.Add(1) == 1 {
		<-s.gate
	}
	return s.Store.Claim(ctx, p)
}

// TestJobsClaimedAfterStopAreReleased: jobs whose claim was in flight when
// Stop began reach the workers after it; they are given back without
// running, waiting again with the attempt not counted.
func TestJobsClaimedAfterStopAreReleased(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		st := &gatedClaims{Store: memstore.New(), gate: make(chan struct{})}
		now := time.Now()
		jobs := make([]*job.Job, 2)
		for i := range jobs {
			jobs[i] = &job.Job{Kind: "k", Queue: job.DefaultQueue, MaxAttempts: 3, RunAt: now}
			if err := jobs[i].Validate(now); err != nil {
				t.Fatal(err)
			}
		}
		res, err := st.Enqueue(context.Background(), store.EnqueueParams{Now: now, Jobs: jobs})
		if err != nil {
			t.Fatal(err)
		}
		var ran atomic.Int64
		e := New(Config{Store: st, Workers: 2, Kinds: []string{"k"}, LeaseDuration: time.Minute,
			Now: time.Now, Logger: slog.New(slog.DiscardHandler),
			Resolve: func(*job.Job) (Handler, Settings, error) {
				return func(context.Context, *job.Job) ([]byte, error) { ran.Add(1); return nil, nil }, Settings{}, nil
			}})
		e.Start()
		synctest.Wait() // the dispatcher's claim waits at the gate
		stopped := make(chan struct{})
		go func() {
			e.Stop(context.Background())
			close(stopped)
		}()
		synctest.Wait() // Stop has begun: no more claims
		close(st.gate)  // the claim in flight takes both jobs
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
