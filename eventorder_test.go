package hopper_test

import (
	"context"
	"encoding/json"
	"sync"
	"testing"

	"github.com/hopperq/hopper"
	"github.com/hopperq/hopper/job"
)

// TestEventsInOrderPerJob: a subscriber sees each job's EventEnqueued
// before its EventStarted, although the dispatcher may claim a job the
// moment the store has it, before the enqueuing call reports it. Many
// callers enqueue one job at a time while busy workers claim each as soon
// as they free up, which is when the two race.
func TestEventsInOrderPerJob(t *testing.T) {
	t.Parallel()
	ws := hopper.NewWorkers()
	hopper.RegisterRaw(ws, "noop", func(context.Context, json.RawMessage) (any, error) { return nil, nil }, nil)
	c, err := hopper.NewClient(hopper.Config{Workers: ws, Concurrency: 4, Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	sub := c.Subscribe(job.EventEnqueued, job.EventStarted)
	if err := c.Start(); err != nil {
		t.Fatal(err)
	}
	const callers, each = 8, 300
	var wg sync.WaitGroup
	for range callers {
		wg.Go(func() {
			for range each {
				if _, err := c.Enqueue(context.Background(), "noop", nil, nil); err != nil {
					t.Error(err)
					return
				}
			}
		})
	}
	wg.Wait()
	enqueued := map[hopper.ID]bool{}
	started := 0
	for started < callers*each {
		ev := <-sub.C
		switch ev.Type {
		case job.EventEnqueued:
			enqueued[ev.Job.ID] = true
		case job.EventStarted:
			started++
			if !enqueued[ev.Job.ID] {
				t.Fatalf("job %d: EventStarted before its EventEnqueued", ev.Job.ID)
			}
		}
	}
	if err := c.Stop(context.Background()); err != nil {
		t.Fatal(err)
	}
	if n := sub.Dropped(); n != 0 {
		t.Fatalf("%d events dropped", n)
	}
}
