package hopper_test

import (
	"context"
	"encoding/json"
	"errors"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/hopperq/hopper"
	"github.com/hopperq/hopper/store/memstore"
)

// TestPauseQueue: a pause lets the running job finish and starts nothing
// of the queue, while another queue runs; the resume starts the held jobs
// at once, without waiting for a poll.
func TestPauseQueue(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		ws := hopper.NewWorkers()
		started := make(chan string, 10)
		release := make(chan struct{})
		hopper.RegisterRaw(ws, "block", func(ctx context.Context, _ json.RawMessage) (any, error) {
			started <- "block"
			<-release
			return nil, nil
		}, nil)
		hopper.RegisterRaw(ws, "ok", func(ctx context.Context, args json.RawMessage) (any, error) {
			var s string
			_ = json.Unmarshal(args, &s)
			started <- s
			return nil, nil
		}, nil)
		c := newClient(t, hopper.Config{Workers: ws, Concurrency: 4})
		ctx := context.Background()
		running := enqueue(t, c, "block", nil, &hopper.EnqueueOptions{Queue: "mail"})
		if got := <-started; got != "block" {
			t.Fatalf("started %q, want block", got)
		}
		if err := c.PauseQueue(ctx, "mail"); err != nil {
			t.Fatal(err)
		}
		held := enqueue(t, c, "ok", "held", &hopper.EnqueueOptions{Queue: "mail"})
		enqueue(t, c, "ok", "other", &hopper.EnqueueOptions{Queue: "other"})
		if got := <-started; got != "other" {
			t.Fatalf("started %q, want the other queue's job", got)
		}
		close(release)
		waitDone(t, c, running)
		time.Sleep(time.Hour) // fake time: every poll and wake-up has had its chance
		synctest.Wait()
		select {
		case s := <-started:
			t.Fatalf("job %q of the paused queue started", s)
		default:
		}
		j, err := c.Get(ctx, held)
		if err != nil {
			t.Fatal(err)
		}
		if j.State != hopper.StateAvailable {
			t.Fatalf("held job is %s, want available", j.State)
		}
		if why, err := c.WaitReason(ctx, j); err != nil || why != "queue mail paused" {
			t.Errorf("WaitReason: %q, %v; want %q", why, err, "queue mail paused")
		}
		qs, err := c.Queues(ctx)
		if err != nil {
			t.Fatal(err)
		}
		var mail hopper.QueueInfo
		for _, q := range qs {
			if q.Name == "mail" {
				mail = q
			}
		}
		if !mail.Paused || mail.Held != 1 || mail.Counts[hopper.StateCompleted] != 1 {
			t.Errorf("Queues: mail is %+v, want paused with 1 held and 1 completed", mail)
		}
		begin := time.Now()
		if err := c.ResumeQueue(ctx, "mail"); err != nil {
			t.Fatal(err)
		}
		if got := <-started; got != "held" {
			t.Fatalf("started %q after the resume, want held", got)
		}
		if d := time.Since(begin); d > 0 {
			t.Errorf("the held job started %v after the resume, want at once", d)
		}
		waitDone(t, c, held)
		if why, _ := c.WaitReason(ctx, j); why != "" {
			t.Errorf("WaitReason after the resume: %q, want none", why)
		}
		stopGracefully(t, c)
	})
}

// TestPauseQueueStep: the step API obeys a pause, as the claim does.
func TestPauseQueueStep(t *testing.T) {
	t.Parallel()
	ws := hopper.NewWorkers()
	hopper.RegisterRaw(ws, "ok", func(ctx context.Context, _ json.RawMessage) (any, error) { return nil, nil }, nil)
	c := silentClient(t, hopper.Config{Workers: ws})
	ctx := context.Background()
	id := enqueue(t, c, "ok", nil, &hopper.EnqueueOptions{Queue: "q"})
	if err := c.PauseQueue(ctx, "q"); err != nil {
		t.Fatal(err)
	}
	if j, ok, err := c.ProcessNext(ctx, farFuture); err != nil || ok {
		t.Fatalf("ProcessNext with the queue paused: %v, %v, %v; want nothing", j, ok, err)
	}
	if err := c.ResumeQueue(ctx, "q"); err != nil {
		t.Fatal(err)
	}
	if j, ok, err := c.ProcessNext(ctx, farFuture); err != nil || !ok || j.ID != id {
		t.Fatalf("ProcessNext after the resume: %v, %v, %v; want job %d", j, ok, err, id)
	}
}

// TestPauseQueueBadName: a bad name is a *FieldError naming it.
func TestPauseQueueBadName(t *testing.T) {
	t.Parallel()
	c := silentClient(t, hopper.Config{})
	var fe *hopper.FieldError
	if err := c.PauseQueue(context.Background(), " "); !errors.As(err, &fe) || fe.Field != "name" {
		t.Errorf("PauseQueue(\" \"): %v, want a *FieldError on name", err)
	}
}

// TestQueueConcurrency: a queue limited to 2 across two clients sharing a
// store (two processes), each with 8 workers, never runs more than 2 of
// its jobs at once, measured by the handlers; a held job says why it
// waits; each freed slot starts the next job without a poll.
func TestQueueConcurrency(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		var mu sync.Mutex
		running, peak, ran := 0, 0, 0
		var lastEnd time.Time
		ws := hopper.NewWorkers()
		hopper.RegisterRaw(ws, "work", func(ctx context.Context, _ json.RawMessage) (any, error) {
			mu.Lock()
			running++
			peak = max(peak, running)
			mu.Unlock()
			time.Sleep(10 * time.Millisecond)
			mu.Lock()
			running--
			ran++
			lastEnd = time.Now()
			mu.Unlock()
			return nil, nil
		}, nil)
		ms := memstore.New()
		a := newClient(t, hopper.Config{Store: ms, Workers: ws, Concurrency: 8})
		b := newClient(t, hopper.Config{Store: ms, Workers: ws, Concurrency: 8})
		ctx := context.Background()
		if err := a.SetQueueConcurrency(ctx, "api", 2); err != nil {
			t.Fatal(err)
		}
		var last hopper.ID
		for range 20 {
			last = enqueue(t, a, "work", nil, &hopper.EnqueueOptions{Queue: "api"})
		}
		synctest.Wait()
		j, err := a.Get(ctx, last)
		if err != nil {
			t.Fatal(err)
		}
		if why, err := b.WaitReason(ctx, j); err != nil || why != "queue api at its limit of 2" {
			t.Errorf("WaitReason of a held job: %q, %v", why, err)
		}
		qs, err := b.QueueStates(ctx)
		if err != nil || len(qs) != 1 || qs[0].Concurrency != 2 || qs[0].Slots != 2 || !qs[0].AtLimit() {
			t.Errorf("QueueStates: %+v, %v; want api at its limit of 2", qs, err)
		}
		begin := time.Now()
		time.Sleep(time.Second)
		synctest.Wait()
		// 20 jobs of 10ms, 2 at a time: 100ms of fake time, no poll.
		if d := lastEnd.Sub(begin); d > 100*time.Millisecond {
			t.Errorf("20 jobs of 10ms, 2 at a time, took %v, want 100ms: a freed slot waited", d)
		}
		mu.Lock()
		defer mu.Unlock()
		if peak != 2 || ran != 20 {
			t.Errorf("peak concurrency %d over %d jobs, want 2 over 20", peak, ran)
		}
		stopGracefully(t, a)
		stopGracefully(t, b)
	})
}
