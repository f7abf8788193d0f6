package engine

import (
	"context"
	"log/slog"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hopperq/hopper/job"
	"github.com/hopperq/hopper/store"
)

// enqueueK enqueues n jobs of kind "k" due at now, in one call.
func enqueueK(t *testing.T, st store.Store, now time.Time, n, maxAttempts int) []store.EnqueueResult {
	t.Helper()
	jobs := make([]*job.Job, n)
	for i := range jobs {
		jobs[i] = &job.Job{Kind: "k", Queue: job.DefaultQueue, MaxAttempts: maxAttempts, RunAt: now}
		if err := jobs[i].Validate(now); err != nil {
			t.Fatal(err)
		}
	}
	res, err := st.Enqueue(context.Background(), store.EnqueueParams{Now: now, Jobs: jobs})
	if err != nil {
		t.Fatal(err)
	}
	return res
}

// countingEngine returns an engine on st running kind "k" with a no-op
// handler that counts its runs in ran.
func countingEngine(st store.Store, workers int, ran *atomic.Int64) *Engine {
	return New(Config{Store: st, Workers: workers, Kinds: []string{"k"}, LeaseDuration: time.Minute,
		Now: time.Now, Logger: slog.New(slog.DiscardHandler),
		Resolve: func(*job.Job) (Handler, Settings, error) {
			return func(context.Context, *job.Job) ([]byte, error) { ran.Add(1); return nil, nil }, Settings{}, nil
		}})
}

// gatedStore wraps a store for tests of the engine's timing: its first
// Claim waits for claimGate to close and its first Finish for finishGate
// (a nil gate: none), and every Claim takes claimDelay.
type gatedStore struct {
	store.Store
	claimGate, finishGate chan struct{}
	claimDelay            time.Duration
	claims, finishes      atomic.Int64
}

func (s *gatedStore) Claim(ctx context.Context, p store.ClaimParams) (store.ClaimResult, error) {
	if s.claims.Add(1) == 1 && s.claimGate != nil {
		<-s.claimGate
	}
	if s.claimDelay > 0 {
		time.Sleep(s.claimDelay)
	}
	return s.Store.Claim(ctx, p)
}

func (s *gatedStore) Finish(ctx context.Context, p store.FinishParams) ([]job.State, error) {
	if s.finishes.Add(1) == 1 && s.finishGate != nil {
		<-s.finishGate
	}
	return s.Store.Finish(ctx, p)
}
