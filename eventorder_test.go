package hopper_test

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"
	"testing"

	"github.com/hopperq/hopper"
	"github.com/hopperq/hopper/job"
)

// TestEventsInOrderPerJob: observers see each job's EventEnqueued before
// its EventStarted, although the dispatcher may claim a job the moment the
// store has it, before the enqueuing call reports it. Many callers enqueue
// one job at a time while busy workers claim each as soon as they free up,
// which is when the two race. The test observes through Config.OnEvent,
// which never drops an event (a subscription drops what its buffer cannot
// hold, which made an earlier form of this test fail falsely); OnEvent
// and subscriptions are fed in the same order, by the same call.
func TestEventsInOrderPerJob(t *testing.T) {
	t.Parallel()
	ws := hopper.NewWorkers()
	hopper.RegisterRaw(ws, "noop", func(context.Context, json.RawMessage) (any, error) { return nil, nil }, nil)
	var (
		mu       sync.Mutex
		enqueued = map[hopper.ID]bool{}
		started  int
		bad      hopper.ID // a job started before it was enqueued
	)
	onEvent := func(ev hopper.Event) {
		mu.Lock()
		defer mu.Unlock()
		switch ev.Type {
		case job.EventEnqueued:
			enqueued[ev.Job.ID] = true
		case job.EventStarted:
			started++
			if !enqueued[ev.Job.ID] && bad == 0 {
				bad = ev.Job.ID
			}
		}
	}
	c, err := hopper.NewClient(hopper.Config{Workers: ws, Concurrency: 4, Logger: quiet, OnEvent: onEvent})
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Start(); err != nil {
		t.Fatal(err)
	}
	const callers, each = 8, 300
	ids := make(chan hopper.ID, callers*each)
	var wg sync.WaitGroup
	for range callers {
		wg.Go(func() {
			for range each {
				res, err := c.Enqueue(context.Background(), "noop", nil, nil)
				if err != nil {
					t.Error(err)
					return
				}
				ids <- res.ID
			}
		})
	}
	wg.Wait()
	close(ids)
	for id := range ids {
		if _, err := c.Wait(context.Background(), id); err != nil {
			t.Fatal(err)
		}
	}
	if err := c.Stop(context.Background()); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	if bad != 0 {
		t.Fatalf("job %d: EventStarted before its EventEnqueued", bad)
	}
	if started != callers*each {
		t.Fatalf("%d EventStarted, want %d", started, callers*each)
	}
}

// TestEventsKeepTheirJob: the pool reuses a job's copy for the next claim
// once its attempt is recorded, so the jobs that events carry must be
// copies of their own. Every EventStarted and EventCompleted, read after
// all 500 jobs ran on 4 workers, still names its job and its args.
func TestEventsKeepTheirJob(t *testing.T) {
	t.Parallel()
	const n = 500
	ws := hopper.NewWorkers()
	hopper.RegisterRaw(ws, "echo", func(ctx context.Context, args json.RawMessage) (any, error) {
		if j := hopper.JobFromContext(ctx); string(j.Args) != string(args) {
			return nil, fmt.Errorf("job %d: JobFromContext has args %s, the handler %s", j.ID, j.Args, args)
		}
		return args, nil
	}, nil)
	c, err := hopper.NewClient(hopper.Config{Workers: ws, Concurrency: 4, Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	sub := c.Subscribe(job.EventStarted, job.EventCompleted)
	if err := c.Start(); err != nil {
		t.Fatal(err)
	}
	defer c.StopNow()
	reqs := make([]hopper.EnqueueRequest, n)
	for i := range reqs {
		reqs[i] = hopper.EnqueueRequest{Kind: "echo", Args: json.RawMessage(fmt.Sprintf(`{"n":%d}`, i))}
	}
	res, err := c.EnqueueMany(context.Background(), reqs)
	if err != nil {
		t.Fatal(err)
	}
	want := make(map[job.ID]string, n)
	for i, r := range res {
		want[r.ID] = string(reqs[i].Args.(json.RawMessage))
	}
	var evs []hopper.Event
	for completed := 0; completed < n; {
		ev := <-sub.C
		if ev.Type == job.EventCompleted {
			completed++
		}
		evs = append(evs, ev)
	}
	seen := make(map[job.EventType]map[job.ID]bool)
	for _, ev := range evs {
		j := ev.Job
		if seen[ev.Type] == nil {
			seen[ev.Type] = make(map[job.ID]bool)
		}
		if seen[ev.Type][j.ID] {
			t.Errorf("two %s events for job %d", ev.Type, j.ID)
		}
		seen[ev.Type][j.ID] = true
		if string(j.Args) != want[j.ID] {
			t.Errorf("%s event of job %d: args %s, want %s", ev.Type, j.ID, j.Args, want[j.ID])
		}
		if ev.Type == job.EventCompleted && string(j.Result) != want[j.ID] {
			t.Errorf("completed job %d: result %s, want %s", j.ID, j.Result, want[j.ID])
		}
	}
	if len(seen[job.EventStarted]) != n {
		t.Errorf("%d jobs started, want %d", len(seen[job.EventStarted]), n)
	}
}
