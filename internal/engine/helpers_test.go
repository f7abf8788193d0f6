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
