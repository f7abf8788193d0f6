package hopper_test

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/hopperq/hopper"
)

// TestKeyConcurrencyDurable is issue 21's per-key acceptance at reduced
// scale: three clients sharing one SQLite file or one PostgreSQL schema,
// 8 workers each, a queue limited to 2 jobs per key; 400 jobs over 50
// keys of which one hot key holds half. Counted in the handlers, no key
// ever has more than 2 running; every job completes; no key slot is left
// held; and a cold key's job enqueued behind the hot key's backlog starts
// while that backlog still waits.
func TestKeyConcurrencyDurable(t *testing.T) {
	t.Parallel()
	for _, st := range []string{"sqlite", "postgres"} {
		t.Run(st, func(t *testing.T) {
			t.Parallel()
			url := sharedStoreURL(t, st)
			const limit, jobs, keys = 2, 400, 50
			var mu sync.Mutex
			running, peak := map[string]int{}, map[string]int{}
			hotDone := 0
			coldStartedWithHotLeft := -1
			ws := hopper.NewWorkers()
			hopper.RegisterRaw(ws, "work", func(ctx context.Context, args json.RawMessage) (any, error) {
				var a struct{ Key string }
				if err := json.Unmarshal(args, &a); err != nil {
					return nil, err
				}
				mu.Lock()
				running[a.Key]++
				peak[a.Key] = max(peak[a.Key], running[a.Key])
				if a.Key == "cold" {
					coldStartedWithHotLeft = jobs/2 - hotDone
				}
				mu.Unlock()
				time.Sleep(2 * time.Millisecond) // the job's work
				mu.Lock()
				running[a.Key]--
				if a.Key == "hot" {
					hotDone++
				}
				mu.Unlock()
				return nil, nil
			}, nil)
			ctx := context.Background()
			clients := openClients(t, url, 3, ws)
			if err := clients[0].SetQueueKeyConcurrency(ctx, "tenants", limit); err != nil {
				t.Fatal(err)
			}
			reqs := make([]hopper.EnqueueRequest, 0, jobs+1)
			for i := range jobs {
				key := "hot"
				if i%2 == 1 {
					key = fmt.Sprintf("tenant=%d", i%keys)
				}
				reqs = append(reqs, hopper.EnqueueRequest{Kind: "work", Args: map[string]string{"Key": key},
					Options: &hopper.EnqueueOptions{Queue: "tenants", Key: key}})
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
			// The cold key's job, behind the hot key's backlog.
			cold, err := clients[1].Enqueue(ctx, "work", map[string]string{"Key": "cold"},
				&hopper.EnqueueOptions{Queue: "tenants", Key: "cold"})
			if err != nil {
				t.Fatal(err)
			}
			wctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
			defer cancel()
			for _, id := range append([]hopper.ID{cold.ID}, idsOf(res)...) {
				j, err := clients[0].Wait(wctx, id)
				if err != nil || j.State != hopper.StateCompleted {
					t.Fatalf("job %d: %v, %v", id, j, err)
				}
			}
			mu.Lock()
			defer mu.Unlock()
			for k, p := range peak {
				if p > limit {
					t.Errorf("key %s: peak %d running across 3 clients, limit %d", k, p, limit)
				}
			}
			if peak["hot"] != limit {
				// Whether two of the hot key's jobs ever overlap depends on
				// the scheduler (a loaded machine may run them one at a
				// time); the limit's bound above is the property tested.
				t.Logf("hot key: peak %d, limit %d (never reached in this run)", peak["hot"], limit)
			}
			if coldStartedWithHotLeft < jobs/4 {
				t.Errorf("the cold key's job started with %d of the hot key's %d jobs left, want it to start while most wait",
					coldStartedWithHotLeft, jobs/2)
			}
			ks, err := clients[2].Keys(ctx, "")
			if err != nil || len(ks) != 0 {
				t.Errorf("Keys after the run: %+v, %v; want none: every slot given back and collected", ks, err)
			}
		})
	}
}

func idsOf(rs []hopper.EnqueueResult) []hopper.ID {
	out := make([]hopper.ID, len(rs))
	for i, r := range rs {
		out[i] = r.ID
	}
	return out
}
