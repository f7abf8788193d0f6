package hopper_test

import (
	"context"
	"encoding/json"
	"sync"
	"testing"
	"time"

	"github.com/hopperq/hopper"
)

// TestQueueConcurrencyDurable: three clients on one SQLite file, and
// three on one PostgreSQL schema (three processes' stores), 8 workers
// each, work a queue limited to 3: the handlers, counting themselves in
// and out, never see more than 3 at once, and every job completes.
func TestQueueConcurrencyDurable(t *testing.T) {
	t.Parallel()
	for _, st := range []string{"sqlite", "postgres"} {
		t.Run(st, func(t *testing.T) {
			t.Parallel()
			url := sharedStoreURL(t, st)
			const limit, jobs = 3, 60
			var mu sync.Mutex
			running, peak := 0, 0
			ws := hopper.NewWorkers()
			hopper.RegisterRaw(ws, "work", func(ctx context.Context, _ json.RawMessage) (any, error) {
				mu.Lock()
				running++
				peak = max(peak, running)
				mu.Unlock()
				time.Sleep(2 * time.Millisecond) // the job's work
				mu.Lock()
				running--
				mu.Unlock()
				return nil, nil
			}, nil)
			ctx := context.Background()
			clients := openClients(t, url, 3, ws)
			if err := clients[0].SetQueueConcurrency(ctx, "limited", limit); err != nil {
				t.Fatal(err)
			}
			reqs := make([]hopper.EnqueueRequest, jobs)
			for i := range reqs {
				reqs[i] = hopper.EnqueueRequest{Kind: "work", Options: &hopper.EnqueueOptions{Queue: "limited"}}
			}
			res, err := clients[0].EnqueueMany(ctx, reqs)
			if err != nil {
				t.Fatal(err)
			}
			for _, c := range clients {
				if err := c.Start(); err != nil {
					t.Fatal(err)
				}
			}
			wctx, cancel := context.WithTimeout(ctx, time.Minute)
			defer cancel()
			for _, r := range res {
				j, err := clients[0].Wait(wctx, r.ID)
				if err != nil || j.State != hopper.StateCompleted {
					t.Fatalf("job %d: %v, %v", r.ID, j, err)
				}
			}
			mu.Lock()
			defer mu.Unlock()
			if peak > limit {
				t.Errorf("peak concurrency %d across 3 clients, limit %d", peak, limit)
			}
			qs, err := clients[1].QueueStates(ctx)
			if err != nil || len(qs) != 1 || qs[0].Slots != 0 {
				t.Errorf("QueueStates after the run: %+v, %v; want no slot held", qs, err)
			}
		})
	}
}
