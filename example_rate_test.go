package hopper_test

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"time"

	"github.com/hopperq/hopper"
)

// A queue throttled to 2 starts a second, with a burst of 2: the step API
// obeys the throttle, so a test steps through it by the times it passes.
// The excess waits, available, and says until when.
func ExampleClient_SetQueueRate() {
	ctx := context.Background()
	ws := hopper.NewWorkers()
	hopper.RegisterRaw(ws, "call", func(ctx context.Context, args json.RawMessage) (any, error) { return nil, nil }, nil)
	c, err := hopper.NewClient(hopper.Config{Workers: ws, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		panic(err)
	}
	defer c.Stop(ctx)
	if err := c.SetQueueRate(ctx, "api", hopper.Rate{N: 2, Period: time.Second, Burst: 2}); err != nil {
		panic(err)
	}
	var last hopper.ID
	for range 5 {
		res, err := c.Enqueue(ctx, "call", nil, &hopper.EnqueueOptions{Queue: "api"})
		if err != nil {
			panic(err)
		}
		last = res.ID
	}
	now := time.Date(2100, time.January, 1, 12, 0, 0, 0, time.UTC)
	for _, after := range []time.Duration{0, 250 * time.Millisecond, 500 * time.Millisecond, time.Second} {
		ran, err := c.RunReady(ctx, now.Add(after))
		if err != nil {
			panic(err)
		}
		j, _ := c.Get(ctx, last)
		why, _ := c.WaitReason(ctx, j)
		fmt.Printf("+%v: ran %d; %s\n", after, len(ran), why)
	}
	// Output:
	// +0s: ran 2; queue api throttled until 12:00:00.500
	// +250ms: ran 0; queue api throttled until 12:00:00.500
	// +500ms: ran 1; queue api throttled until 12:00:01
	// +1s: ran 1; queue api throttled until 12:00:01.500
}

// A queue that drops its excess: what the rate does not let start when a
// worker would take it is cancelled with the reason, never run.
func ExampleClient_SetQueueRate_drop() {
	ctx := context.Background()
	ws := hopper.NewWorkers()
	hopper.RegisterRaw(ws, "ping", func(ctx context.Context, args json.RawMessage) (any, error) { return nil, nil }, nil)
	c, err := hopper.NewClient(hopper.Config{Workers: ws, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		panic(err)
	}
	defer c.Stop(ctx)
	if err := c.SetQueueRate(ctx, "pings", hopper.Rate{N: 1, Period: time.Minute, Drop: true}); err != nil {
		panic(err)
	}
	var ids []hopper.ID
	for range 3 {
		res, err := c.Enqueue(ctx, "ping", nil, &hopper.EnqueueOptions{Queue: "pings"})
		if err != nil {
			panic(err)
		}
		ids = append(ids, res.ID)
	}
	ran, err := c.RunReady(ctx, time.Date(2100, time.January, 1, 12, 0, 0, 0, time.UTC))
	if err != nil {
		panic(err)
	}
	fmt.Println("ran:", len(ran))
	for _, id := range ids {
		j, _ := c.Get(ctx, id)
		if j.LastError == "" {
			fmt.Println(j.State)
		} else {
			fmt.Printf("%s: %s\n", j.State, j.LastError)
		}
	}
	// Output:
	// ran: 1
	// completed
	// cancelled: dropped: queue pings over its rate 1/1m
	// cancelled: dropped: queue pings over its rate 1/1m
}

// A queue throttled per key: each tenant may start 2 jobs a second, with
// a burst of 2. A busy tenant's excess waits and says until when; another
// tenant is not slowed. The step API obeys it, so a test steps through it
// by the times it passes.
func ExampleClient_SetQueueKeyRate() {
	ctx := context.Background()
	ws := hopper.NewWorkers()
	hopper.RegisterRaw(ws, "sync", func(ctx context.Context, args json.RawMessage) (any, error) { return nil, nil }, nil)
	c, err := hopper.NewClient(hopper.Config{Workers: ws, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		panic(err)
	}
	defer c.Stop(ctx)
	if err := c.SetQueueKeyRate(ctx, "api", hopper.Rate{N: 2, Period: time.Second, Burst: 2}); err != nil {
		panic(err)
	}
	enqueue := func(tenant string) hopper.ID {
		res, err := c.Enqueue(ctx, "sync", nil, &hopper.EnqueueOptions{Queue: "api", Key: "tenant=" + tenant})
		if err != nil {
			panic(err)
		}
		return res.ID
	}
	var last hopper.ID
	for range 4 {
		last = enqueue("42")
	}
	enqueue("7")
	now := time.Date(2100, time.January, 1, 12, 0, 0, 0, time.UTC)
	for _, after := range []time.Duration{0, 250 * time.Millisecond, 500 * time.Millisecond, time.Second} {
		ran, err := c.RunReady(ctx, now.Add(after))
		if err != nil {
			panic(err)
		}
		j, _ := c.Get(ctx, last)
		why, _ := c.WaitReason(ctx, j)
		if why == "" {
			why = j.State.String()
		}
		fmt.Printf("+%v: ran %d; %s\n", after, len(ran), why)
	}
	// Output:
	// +0s: ran 3; key tenant=42 throttled until 12:00:00.500
	// +250ms: ran 0; key tenant=42 throttled until 12:00:00.500
	// +500ms: ran 1; key tenant=42 throttled until 12:00:01
	// +1s: ran 1; completed
}

// A queue that drops each key's excess: a tenant's job that its rate does
// not let start when a worker would take it is cancelled with the reason,
// never run; another tenant is not touched.
func ExampleClient_SetQueueKeyRate_drop() {
	ctx := context.Background()
	ws := hopper.NewWorkers()
	hopper.RegisterRaw(ws, "sync", func(ctx context.Context, args json.RawMessage) (any, error) { return nil, nil }, nil)
	c, err := hopper.NewClient(hopper.Config{Workers: ws, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		panic(err)
	}
	defer c.Stop(ctx)
	if err := c.SetQueueKeyRate(ctx, "api", hopper.Rate{N: 1, Period: time.Minute, Drop: true}); err != nil {
		panic(err)
	}
	var ids []hopper.ID
	for _, tenant := range []string{"42", "42", "42", "7"} {
		res, err := c.Enqueue(ctx, "sync", nil, &hopper.EnqueueOptions{Queue: "api", Key: "tenant=" + tenant})
		if err != nil {
			panic(err)
		}
		ids = append(ids, res.ID)
	}
	ran, err := c.RunReady(ctx, time.Date(2100, time.January, 1, 12, 0, 0, 0, time.UTC))
	if err != nil {
		panic(err)
	}
	fmt.Println("ran:", len(ran))
	for _, id := range ids {
		j, _ := c.Get(ctx, id)
		if j.LastError == "" {
			fmt.Printf("%s: %s\n", j.Key, j.State)
		} else {
			fmt.Printf("%s: %s: %s\n", j.Key, j.State, j.LastError)
		}
	}
	// Output:
	// ran: 2
	// tenant=42: completed
	// tenant=42: cancelled: dropped: key tenant=42 of queue api over its rate 1/1m
	// tenant=42: cancelled: dropped: key tenant=42 of queue api over its rate 1/1m
	// tenant=7: completed
}
