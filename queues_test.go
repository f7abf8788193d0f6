package hopper_test

import (
	"context"
	"encoding/json"
	"errors"
	"testing"
	"testing/synctest"
	"time"

	"github.com/hopperq/hopper"
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
