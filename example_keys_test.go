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
	var mu sync.Mutex
	running, peak := map[string]int{}, map[string]int{}
	var order []string
	ws := hopper.NewWorkers()
	hopper.RegisterRaw(ws, "sync", func(ctx context.Context, args json.RawMessage) (any, error) {
		var a struct{ Tenant string }
		if err := json.Unmarshal(args, &a); err != nil {
			return nil, err
		}
		mu.Lock()
		running[a.Tenant]++
		peak[a.Tenant] = max(peak[a.Tenant], running[a.Tenant])
		order = append(order, a.Tenant)
		mu.Unlock()
		time.Sleep(time.Millisecond)
		mu.Lock()
		running[a.Tenant]--
		mu.Unlock()
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
	for _, id := range ids {
		if _, err := c.Wait(ctx, id); err != nil {
			panic(err)
		}
	}
	if err := c.Stop(ctx); err != nil {
		panic(err)
	}
	cold := 0
	for i, t := range order {
		if t == "cold" {
			cold = i
		}
	}
	fmt.Println("most of one tenant running at once:", peak["hot"])
	fmt.Println("the cold tenant started among the first three:", cold < 3)
	// Output:
	// most of one tenant running at once: 2
	// the cold tenant started among the first three: true
}
