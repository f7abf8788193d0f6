package hopper_test

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/hopperq/hopper"
)

// A queue limited to 2 jobs per key: the hot tenant's backlog runs 2 at a
// time, and the cold tenant's job, enqueued behind it, does not wait for
// it. A handler that meets the tenant's rate limit holds the key with
// hopper.HoldKey(d).
func ExampleClient_SetQueueKeyConcurrency() {
	ctx := context.Background()
	ws := hopper.NewWorkers()
	var (
		mu            sync.Mutex
		running, peak int // the hot tenant's jobs in their handler
	)
	hopper.RegisterRaw(ws, "sync", func(ctx context.Context, args json.RawMessage) (any, error) {
		var a struct{ Tenant string }
		if err := json.Unmarshal(args, &a); err != nil {
			return nil, err
		}
		if a.Tenant == "hot" {
			mu.Lock()
			running++
			peak = max(peak, running)
			mu.Unlock()
			defer func() {
				mu.Lock()
				running--
				mu.Unlock()
			}()
		}
		time.Sleep(5 * time.Millisecond) // the tenant's API call
		return nil, nil
	}, nil)
	c, err := hopper.NewClient(hopper.Config{Workers: ws, Concurrency: 4, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		panic(err)
	}
	if err := c.SetQueueKeyConcurrency(ctx, "api", 2); err != nil {
		panic(err)
	}
	var ids []hopper.ID
	enqueue := func(tenant string) {
		res, err := c.Enqueue(ctx, "sync", map[string]string{"Tenant": tenant},
			&hopper.EnqueueOptions{Queue: "api", Key: "tenant=" + tenant})
		if err != nil {
			panic(err)
		}
		ids = append(ids, res.ID)
	}
	for range 20 {
		enqueue("hot")
	}
	enqueue("cold")
	if err := c.Start(); err != nil {
		panic(err)
	}
	var hot []*hopper.Job
	var cold *hopper.Job
	for _, id := range ids {
		j, err := c.Wait(ctx, id)
		if err != nil {
			panic(err)
		}
		if j.Key == "tenant=cold" {
			cold = j
		} else {
			hot = append(hot, j)
		}
	}
	if err := c.Stop(ctx); err != nil {
		panic(err)
	}
	// The jobs' records say when each was claimed: how many hot ones
	// started before the cold one.
	before := 0
	for _, a := range hot {
		if a.StartedAt.Before(cold.StartedAt) {
			before++
		}
	}
	fmt.Println("most of one tenant running at once:", peak)
	fmt.Println("the cold tenant started among the first three:", before < 3)
	// Output:
	// most of one tenant running at once: 2
	// the cold tenant started among the first three: true
}
