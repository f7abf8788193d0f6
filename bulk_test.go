package hopper_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/hopperq/hopper"
	"github.com/hopperq/hopper/job"
)

// TestCancelMatching: every waiting job of the queue is cancelled and the
// running one told to stop, in batches, each transition reported as an
// event; a job enqueued after the action started is left alone, and so
// are the jobs of another queue.
func TestCancelMatching(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		ws := hopper.NewWorkers()
		started := make(chan struct{})
		hopper.RegisterRaw(ws, "block", func(ctx context.Context, _ json.RawMessage) (any, error) {
			close(started)
			<-ctx.Done()
			return nil, context.Cause(ctx)
		}, nil)
		hopper.RegisterRaw(ws, "ok", func(ctx context.Context, _ json.RawMessage) (any, error) { return nil, nil }, nil)
		c := newClient(t, hopper.Config{Workers: ws, Concurrency: 1})
		ctx := context.Background()
		running := enqueue(t, c, "block", nil, &hopper.EnqueueOptions{Queue: "bulk"})
		<-started
		const waiting = 2*hopper.BulkBatch + 500
		var reqs []hopper.EnqueueRequest
		for range waiting {
			reqs = append(reqs, hopper.EnqueueRequest{Kind: "ok", Options: &hopper.EnqueueOptions{Queue: "bulk", Delay: time.Hour}})
		}
		if _, err := c.EnqueueMany(ctx, reqs); err != nil {
			t.Fatal(err)
		}
		other := enqueue(t, c, "ok", nil, &hopper.EnqueueOptions{Queue: "other", Delay: time.Hour})
		sub := c.Subscribe(job.EventCancelled, job.EventCancelRequested)
		defer sub.Unsubscribe()

		var progress []hopper.BulkResult
		var late hopper.ID
		res, err := c.CancelMatching(ctx, hopper.BulkOptions{Queue: "bulk", Progress: func(r hopper.BulkResult) {
			progress = append(progress, r)
			if late == 0 {
				late = enqueue(t, c, "ok", nil, &hopper.EnqueueOptions{Queue: "bulk", Delay: time.Hour})
			}
		}})
		if err != nil {
			t.Fatal(err)
		}
		want := hopper.BulkResult{Total: waiting + 1, Done: waiting + 1, Requested: 1, UpTo: other - 1}
		if res != want {
			t.Errorf("CancelMatching: got %+v, want %+v", res, want)
		}
		if len(progress) != 3 || progress[0].Done != hopper.BulkBatch || progress[1].Done != 2*hopper.BulkBatch || progress[2] != res {
			t.Errorf("progress: %+v, want three batches up to %+v", progress, res)
		}
		counts := map[hopper.EventType]int{}
		for range waiting + 1 {
			ev := <-sub.C
			counts[ev.Type]++
			if ev.Type == job.EventCancelRequested && ev.Job.ID != running {
				t.Errorf("cancel requested for job %d, want %d", ev.Job.ID, running)
			}
		}
		if counts[job.EventCancelled] != waiting || counts[job.EventCancelRequested] != 1 {
			t.Errorf("events: %v", counts)
		}
		if j := wait(t, c, running); j.State != hopper.StateCancelled {
			t.Errorf("the running job ended %s, want cancelled", j.State)
		}
		for _, id := range []hopper.ID{late, other} {
			if st, _ := c.Status(ctx, id); st != hopper.StateScheduled {
				t.Errorf("job %d outside the selection: %s", id, st)
			}
		}
		if n, _ := c.Count(ctx, hopper.ListOptions{Queue: "bulk", States: []hopper.State{hopper.StateCancelled}}); n != waiting+1 {
			t.Errorf("%d jobs cancelled, want %d", n, waiting+1)
		}
	})
}

// TestRetryAndDeleteMatching: the dead jobs of a kind are retried (each
// reported), then every finished job is deleted.
func TestRetryAndDeleteMatching(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	ws := hopper.NewWorkers()
	hopper.RegisterRaw(ws, "flaky", func(ctx context.Context, _ json.RawMessage) (any, error) {
		if j := hopper.JobFromContext(ctx); len(j.Attempts) == 0 {
			return nil, hopper.Permanent(errors.New("first time"))
		}
		return nil, nil
	}, nil)
	hopper.RegisterRaw(ws, "fail", func(ctx context.Context, _ json.RawMessage) (any, error) {
		return nil, hopper.Permanent(errors.New("no"))
	}, nil)
	c, err := hopper.NewClient(hopper.Config{Workers: ws, Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	defer c.StopNow()
	for range 5 {
		enqueue(t, c, "flaky", nil, nil)
	}
	failed := enqueue(t, c, "fail", nil, nil)
	if jobs, _ := c.RunReady(ctx, time.Now()); len(jobs) != 6 {
		t.Fatalf("ran %d jobs, want 6", len(jobs))
	}
	sub := c.Subscribe(job.EventRetried)
	res, err := c.RetryMatching(ctx, hopper.BulkOptions{Kind: "flaky"})
	sub.Unsubscribe()
	if err != nil || res.Done != 5 || res.Total != 5 {
		t.Fatalf("RetryMatching: %+v, %v; want 5 retried", res, err)
	}
	n := 0
	for ev := range sub.C {
		if ev.Job.Kind != "flaky" || ev.Job.State != hopper.StateAvailable {
			t.Errorf("retried event of job %d: %s %s", ev.Job.ID, ev.Job.Kind, ev.Job.State)
		}
		n++
	}
	if n != 5 {
		t.Errorf("%d retried events, want 5", n)
	}
	if jobs, _ := c.RunReady(ctx, time.Now()); len(jobs) != 5 {
		t.Fatalf("ran %d retried jobs, want 5", len(jobs))
	}
	res, err = c.DeleteMatching(ctx, hopper.BulkOptions{All: true})
	if err != nil || res.Done != 6 {
		t.Fatalf("DeleteMatching: %+v, %v; want 6 deleted", res, err)
	}
	if _, err := c.Get(ctx, failed); !errors.Is(err, hopper.ErrNotFound) {
		t.Errorf("the dead job: %v, want deleted", err)
	}
	if res, err := c.DeleteMatching(ctx, hopper.BulkOptions{All: true}); err != nil || res != (hopper.BulkResult{}) {
		t.Errorf("DeleteMatching with nothing to delete: %+v, %v", res, err)
	}
}

// TestBulkOptionsRefused: an empty filter never means all, and bad
// options name their field; nothing changes.
func TestBulkOptionsRefused(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	c, err := hopper.NewClient(hopper.Config{Logger: quiet, ExternalKinds: []string{"k"}})
	if err != nil {
		t.Fatal(err)
	}
	defer c.StopNow()
	id := enqueue(t, c, "k", nil, nil)
	for _, c2 := range []struct {
		o     hopper.BulkOptions
		field string
	}{
		{hopper.BulkOptions{}, "all"},
		{hopper.BulkOptions{All: true, Queue: "default"}, "all"},
		{hopper.BulkOptions{Queue: "default", UpTo: -1}, "up_to"},
		{hopper.BulkOptions{States: []hopper.State{42}}, "states"},
	} {
		for name, op := range map[string]func(context.Context, hopper.BulkOptions) (hopper.BulkResult, error){
			"cancel": c.CancelMatching, "retry": c.RetryMatching, "delete": c.DeleteMatching,
		} {
			var fe *hopper.FieldError
			if _, err := op(ctx, c2.o); !errors.As(err, &fe) || fe.Field != c2.field {
				t.Errorf("%s %+v: got %v, want a *FieldError on %s", name, c2.o, err, c2.field)
			}
		}
	}
	if st, _ := c.Status(ctx, id); st != hopper.StateAvailable {
		t.Errorf("job %d: %s, want available", id, st)
	}
}

// BenchmarkCancelMatching: a bulk cancel of 300,000 waiting jobs on the
// memory store, with nobody listening and with a subscriber and the
// metrics' OnEvent hook (every job reported); it measures the client's
// part of a bulk action, the events included (docs/performance.md).
func BenchmarkCancelMatching(b *testing.B) {
	const n = 300_000
	for _, listen := range []bool{false, true} {
		b.Run(fmt.Sprintf("events=%v", listen), func(b *testing.B) {
			var seen atomic.Int64
			cfg := hopper.Config{Logger: quiet, ExternalKinds: []string{"k"}}
			if listen {
				cfg.OnEvent = func(hopper.Event) { seen.Add(1) }
			}
			var took time.Duration
			for range b.N {
				b.StopTimer()
				c, err := hopper.NewClient(cfg)
				if err != nil {
					b.Fatal(err)
				}
				reqs := make([]hopper.EnqueueRequest, 1000)
				for i := range reqs {
					reqs[i] = hopper.EnqueueRequest{Kind: "k", Options: &hopper.EnqueueOptions{Queue: "q", Delay: time.Hour}}
				}
				for range n / len(reqs) {
					if _, err := c.EnqueueMany(context.Background(), reqs); err != nil {
						b.Fatal(err)
					}
				}
				var sub *hopper.Subscription
				drained := make(chan int)
				if listen {
					sub = c.Subscribe()
					go func() {
						k := 0
						for range sub.C {
							k++
						}
						drained <- k
					}()
				}
				seen.Store(0) // the enqueues' events
				b.StartTimer()
				start := time.Now()
				res, err := c.CancelMatching(context.Background(), hopper.BulkOptions{Queue: "q"})
				took += time.Since(start)
				b.StopTimer()
				if err != nil || res.Done != n {
					b.Fatalf("CancelMatching: %+v, %v", res, err)
				}
				c.StopNow()
				if listen {
					b.ReportMetric(float64(n-<-drained), "dropped/op")
					if got := seen.Swap(0); got != n {
						b.Fatalf("OnEvent saw %d events, want %d", got, n)
					}
				}
			}
			b.ReportMetric(float64(n*b.N)/took.Seconds(), "jobs/s")
		})
	}
}
